"""Every registered env is a well-behaved Gymnasium citizen."""

import pickle
import warnings

import gymnasium as gym
import mujoco
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import wbsim  # registers the envs
from wbsim.envs import ENV_IDS
from wbsim.errors import UnknownNameError, WbsimError

MODES = ("torque", "joint_position", "residual")
#: the parts of the observation, in order (envs/humanoid.py's docstring)
OBSERVATION_PARTS = [
    "base_height",
    "base_quaternion_wxyz",
    "base_twist",
    "joint_positions",
    "joint_velocities",
    "com_minus_support_centre",
    "sole_contact_flags",
    "planned_contacts",
    "phase_progress",
]


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
@pytest.mark.parametrize("mode", MODES)
def test_check_env(env_id, mode):
    env = gym.make(env_id, action_mode=mode)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*infinity.*")  # unbounded Box, as Humanoid-v5
        warnings.filterwarnings("ignore", message=".*different from the unwrapped.*")  # residual
        check_env(env if mode == "residual" else env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and env.observation_space.contains(obs)
    assert env.unwrapped.metadata["render_fps"] == round(1 / env.unwrapped.dt)
    # as Gymnasium's MuJoCo envs, the unwrapped env names its observation's parts, which add up
    sizes = env.unwrapped.observation_structure
    assert list(sizes) == OBSERVATION_PARTS and sum(sizes.values()) == obs.shape[0]
    assert {"phase", "phase_index", "phase_time"} <= info.keys()  # the same keys in every env
    env.close()


def _rollout(env_id, seed, n, actions, **kwargs):
    env = gym.make(env_id, **kwargs)
    obs, _ = env.reset(seed=seed)
    out, rewards = [obs], []
    for a in actions[:n]:
        obs, r, term, trunc, _ = env.step(a)
        out.append(obs)
        rewards.append(r)
        if term or trunc:
            obs, _ = env.reset()
    return np.array(out), np.array(rewards), env


def test_same_seed_same_actions_identical():
    rng = np.random.default_rng(0)
    actions = rng.uniform(-0.05, 0.05, size=(1000, 29)).astype(np.float32)
    o1, r1, _ = _rollout("wbsim/G1Push-v0", 3, 1000, actions)
    o2, r2, _ = _rollout("wbsim/G1Push-v0", 3, 1000, actions)
    assert np.array_equal(o1, o2) and np.array_equal(r1, r2)


def test_different_seeds_different_pushes():
    pushes = []
    for seed in (1, 2):
        env = gym.make("wbsim/G1Push-v0", action_mode="residual", push_interval=0.5)
        env.reset(seed=seed)
        for _ in range(300):
            env.step(np.zeros(29, np.float32))
        pushes.append(env.unwrapped.pushes)
    assert len(pushes[0]) == len(pushes[1]) == 1
    assert not np.allclose(pushes[0][0][1], pushes[1][0][1])
    assert np.linalg.norm(pushes[0][0][1]) == pytest.approx(40.0)


def test_reset_restores_everything():
    """A replay after reset with the same seed and actions is bit-identical, even after the first
    episode changed the state."""
    env = gym.make("wbsim/G1Stand-v0")
    rng = np.random.default_rng(1)
    actions = rng.uniform(-0.3, 0.3, size=(200, 29)).astype(np.float32)
    runs = []
    for _ in range(2):
        obs, _ = env.reset(seed=7)
        seq = [obs]
        for a in actions:
            seq.append(env.step(a)[0])
        runs.append(np.array(seq))
        assert not np.array_equal(runs[-1][0], runs[-1][-1])
    assert np.array_equal(runs[0], runs[1])


def test_reset_refuses_options_it_would_ignore():
    env = gym.make("wbsim/G1Stand-v0")
    env.reset(seed=0, options={})  # nothing asked: fine (vector envs pass {} or None)
    with pytest.raises(WbsimError, match=r"reset takes no options, got \['pose'\]"):
        env.reset(seed=0, options={"pose": "one_leg"})


def test_pickle_round_trip_keeps_state():
    env = gym.make("wbsim/G1Push-v0").unwrapped
    env.reset(seed=0)
    for _ in range(50):
        env.step(np.zeros(29, np.float32))
    clone = pickle.loads(pickle.dumps(env))
    a = np.full(29, 0.01, np.float32)
    assert np.array_equal(env.step(a)[0], clone.step(a)[0])


def test_renderer_created_only_when_asked():
    env = gym.make("wbsim/G1Stand-v0", render_mode="rgb_array", width=64, height=48)
    env.reset(seed=0)
    env.step(np.zeros(29, np.float32))
    assert env.unwrapped._frame_renderer is None
    frame = env.render()
    assert frame.shape == (48, 64, 3) and env.unwrapped._frame_renderer is not None
    env.close()


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_async_vector_env(context):
    envs = gym.make_vec(
        "wbsim/G1Stand-v0",
        num_envs=2,
        vectorization_mode="async",
        vector_kwargs={"context": context},
    )
    envs.reset(seed=0)
    for _ in range(1000):
        obs, *_ = envs.step(np.zeros((2, 29), np.float32))
    assert obs.shape == (2, envs.single_observation_space.shape[0])
    envs.close()


def test_bad_actions_raise_clear_errors():
    env = gym.make("wbsim/G1Stand-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"wbsim/G1Stand-v0.*shape \(3,\).*Box"):
        env.unwrapped.step(np.zeros(3))
    bad = np.zeros(29)
    bad[4] = np.nan
    with pytest.raises(ValueError, match="NaN.*left_ankle_pitch_joint"):
        env.unwrapped.step(bad)
    # not real numbers: named with the env and the space (they were numpy's bare "could not convert
    # string to float", a TypeError, or complex values cut to their real part with a warning)
    for action, dtype in [
        (np.full(29, 0.1 + 0.5j), "complex128"),
        (["0.1"] * 29, "<U3"),
        ([0.1] * 28 + [None], "object"),
    ]:
        with pytest.raises(ValueError, match=rf"wbsim/G1Stand-v0: action of dtype {dtype}.*Box"):
            env.unwrapped.step(action)
    assert env.unwrapped.sim.data.time == 0.0  # no refused action stepped
    # out of range is clipped: 5.0 acts as 1.0
    e1, e2 = gym.make("wbsim/G1Stand-v0").unwrapped, gym.make("wbsim/G1Stand-v0").unwrapped
    e1.reset(seed=0)
    e2.reset(seed=0)
    big, one = np.zeros(29), np.zeros(29)
    big[0], one[0] = 5.0, 1.0
    assert np.array_equal(e1.step(big)[0], e2.step(one)[0])


def test_step_before_reset_is_refused():
    """The env without Gymnasium's wrappers (``make_humanoid``, what ``wbsim run`` drives) stepped
    before its first reset raised nothing and stepped MuJoCo's default state (the base at the
    origin, the legs through the floor: reward -392); it now says to reset, also in a copy."""
    from wbsim.envs import make_humanoid

    env = make_humanoid("wbsim/G1Stand-v0")
    zero = np.zeros(29, np.float32)
    with pytest.raises(gym.error.ResetNeeded, match=r"wbsim/G1Stand-v0: call reset\(\)"):
        env.step(zero)
    with pytest.raises(gym.error.ResetNeeded):
        pickle.loads(pickle.dumps(env)).step(zero)
    assert env.sim.data.time == 0.0  # nothing stepped
    env.reset(seed=0)
    assert pickle.loads(pickle.dumps(env)).step(zero)[1] > 0.9  # standing: alive, upright
    env.close()


def test_unknown_names():
    from wbsim.envs import make

    with pytest.raises(UnknownNameError, match="wbsim/G1Stand-v0"):
        make("wbsim/G1Sit-v0")
    with pytest.raises(wbsim.WbsimError, match="action_mode"):
        gym.make("wbsim/G1Stand-v0", action_mode="velocity")


@pytest.mark.parametrize("mode", ["torque", "residual"])
def test_gymnasium_make_names_an_unknown_option_and_lists_the_known(mode):
    """``gymnasium.make(id, spede=0.3)`` (a typo) raises the error that ``wbsim run -e`` and
    ``wbsim.envs.make`` give, listing the env's options with its plan's (``speed``) and the
    residual mode's; it was Python's "unexpected keyword argument 'spede'"."""
    with pytest.raises(UnknownNameError, match="'spede' of env 'wbsim/G1Walk-v0'") as info:
        gym.make("wbsim/G1Walk-v0", action_mode=mode, spede=0.3)
    for name in ("speed", "frame_skip", "residual_scale"):
        assert name in info.value.known


@pytest.mark.parametrize(
    "env_id, option, needle",
    [
        ("wbsim/G1Walk-v0", {"speed": 0.9}, "speed must be a number in [-0.4, 0.4] m/s"),
        ("wbsim/G1Walk-v0", {"speed": "fast"}, "got 'fast'"),
        ("wbsim/G1StepInPlace-v0", {"single_support": -1.0}, "single_support must be > 0 s"),
        ("wbsim/G1PlanReplay-v0", {"plan_file": "nope"}, "plan_file 'nope'"),
    ],
)
def test_a_plan_option_error_names_the_env(env_id, option, needle):
    """A plan's option out of range (``-e speed=0.9``) names the env, as the env's own option
    errors do (``wbsim/G1Walk-v0: frame_skip must be ...``); it said ``speed = 0.9 m/s: ...``
    alone. Through every door: ``gymnasium.make`` (each action mode) and ``make_humanoid``."""
    from wbsim.envs import make_humanoid

    for make in (
        lambda: gym.make(env_id, **option),
        lambda: gym.make(env_id, action_mode="residual", **option),
        lambda: make_humanoid(env_id, **option),
    ):
        with pytest.raises(WbsimError) as info:
            make()
        message = str(info.value)
        assert message.startswith(f"{env_id}: ") and needle in message, message
        assert message.count(env_id) == 1, message


def test_a_plan_file_that_is_not_a_plan_names_the_env_at_reset(tmp_path):
    """A plan file is read at reset (the plan's ``set_context``): its error names the env too."""
    bad = tmp_path / "bad.npz"
    bad.write_text("not a plan")
    env = gym.make("wbsim/G1PlanReplay-v0", plan_file=str(bad))
    with pytest.raises(WbsimError, match=r"^wbsim/G1PlanReplay-v0: .*bad\.npz: not a plan file"):
        env.reset(seed=0)
    env.close()


def test_human_render_without_display_says_how(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    env = gym.make("wbsim/G1Stand-v0", render_mode="human")
    with pytest.raises(wbsim.WbsimError, match="xvfb-run"):
        env.reset(seed=0)  # the viewer is drawn at reset
    with pytest.raises(wbsim.WbsimError, match="xvfb-run"):
        env.render()


def test_human_render_mode_draws_at_every_reset_and_step(monkeypatch):
    """As in Gymnasium's MuJoCo envs, ``render_mode="human"`` shows the viewer by itself: a loop of
    ``reset`` and ``step`` without ``render()`` calls drew nothing before (the window never came)."""
    import wbsim.viewer

    synced = []

    class FakeViewer:
        is_running = True

        def __init__(self, model, data):
            self.data = data

        def sync(self, overlay=None):
            synced.append(self.data.time)

        def close(self):
            pass

    monkeypatch.setattr(wbsim.viewer, "Viewer", FakeViewer)
    env = gym.make("wbsim/G1Stand-v0", render_mode="human", frame_skip=2)
    env.reset(seed=0)
    for _ in range(3):
        env.step(np.zeros(29, np.float32))
    assert synced == pytest.approx([0.0, 0.004, 0.008, 0.012])
    env.close()


# -- the per-step fast paths (observation, reward, schedule, info) against slow references ---------
def _reference_plan_schedule(plan, t):
    """``ReferencePlan.at`` the obvious way: a linear scan over the phases, ``np.interp`` on every
    column, scipy's ``Slerp`` on the rotations."""
    from scipy.spatial.transform import Rotation, Slerp

    from wbsim.types import ContactSchedule

    ref = plan.reference
    k = 0
    for i, ph in enumerate(ref.phases):
        if ph.start <= t:
            k = i
    phase = ref.phases[k]
    nxt = ref.phases[min(k + 1, len(ref.phases) - 1)]
    duration = nxt.start - phase.start if k + 1 < len(ref.phases) else float("inf")

    def interp(a):
        flat = a.reshape(len(ref.times), -1)
        return np.array([np.interp(t, ref.times, col) for col in flat.T]).reshape(a.shape[1:])

    def slerp(R):
        tt = min(max(t, ref.times[0]), ref.times[-1])
        return Slerp(ref.times, Rotation.from_matrix(R))([tt]).as_matrix()[0]

    targets = {
        "com": interp(ref.com),
        "com_velocity": interp(ref.com_velocity),
        "com_acceleration": interp(ref.com_acceleration),
        "base_orientation": slerp(ref.base_rotation),
        "base_angular_velocity": interp(ref.base_angular_velocity),
    }
    for j, f in enumerate(ref.foot_names):
        targets[f] = interp(ref.foot_position[:, j])
        targets[f"{f}_velocity"] = interp(ref.foot_velocity[:, j])
        targets[f"{f}_acceleration"] = interp(ref.foot_acceleration[:, j])
        targets[f"{f}_orientation"] = slerp(ref.foot_rotation[:, j])
        if ref.foot_wrench is not None:
            targets[f"{f}_wrench"] = interp(ref.foot_wrench[:, j])
    for name in ("zmp", "dcm", "angular_momentum", "angular_momentum_rate"):
        if getattr(ref, name) is not None:
            targets[name] = interp(getattr(ref, name))
    later = [s for s in ref.footsteps if s.land_time > t]
    if later:
        step = min(later, key=lambda s: s.land_time)
        targets[f"{step.foot}_landing"] = step.position
        targets["landing_time"] = np.array([step.land_time])
    return ContactSchedule(
        contact_set=phase.contact_set,
        next_contact_set=nxt.contact_set,
        phase=phase.name,
        phase_index=k,
        phase_time=t - phase.start,
        phase_duration=duration,
        targets=targets,
    )


def _reference_schedule(plan, t):
    """``PhasePlan.at`` the obvious way: a linear scan over the phases, numpy on everything."""
    from wbsim.envs.schedules import ReferencePlan
    from wbsim.types import ContactSchedule

    if isinstance(plan, ReferencePlan):
        return _reference_plan_schedule(plan, t)
    phases = plan.phases
    total = float(np.sum([p.duration for p in phases]))
    for _ in range(2):  # PhasePlan wraps t once for the phase time and again for the index
        if plan.periodic and np.isfinite(total) and t >= total:
            t0 = float(np.sum([p.duration for p in phases[: plan.repeat_from]]))
            t = t0 + (t - t0) % (total - t0)
        if _ == 0:
            t_phase = t
    start, i = 0.0, 0
    for i, p in enumerate(phases):
        if i == len(phases) - 1 or t < start + p.duration:
            break
        start += p.duration
    phase = phases[i]
    start = float(np.sum([p.duration for p in phases[:i]]))
    t_in = t_phase - start
    finite = np.isfinite(phase.duration)
    s = float(np.clip(t_in / phase.duration, 0.0, 1.0)) if finite else 0.0
    targets = {k: fn(s, plan.context) for k, fn in phase.targets.items()}
    if finite:
        lo, hi = max(s - 1e-4, 0.0), min(s + 1e-4, 1.0)
        for k, fn in phase.targets.items():
            targets[f"{k}_velocity"] = (fn(hi, plan.context) - fn(lo, plan.context)) / (
                (hi - lo) * phase.duration
            )
    if i + 1 < len(phases):
        nxt = phases[i + 1]
    else:
        nxt = phases[plan.repeat_from] if plan.periodic else phase
    return ContactSchedule(
        contact_set=phase.contact_set,
        next_contact_set=nxt.contact_set,
        phase=phase.name,
        phase_index=i,
        phase_time=t_in,
        phase_duration=phase.duration,
        targets=targets,
    )


def _assert_schedules_equal(a, b, what):
    assert (a.contact_set, a.next_contact_set, a.phase, a.phase_index, a.phase_duration) == (
        b.contact_set,
        b.next_contact_set,
        b.phase,
        b.phase_index,
        b.phase_duration,
    ), what
    assert type(a.phase_time) is float and a.phase_time == pytest.approx(b.phase_time, abs=1e-12), (
        what
    )
    assert a.targets.keys() == b.targets.keys(), what
    for k in a.targets:
        np.testing.assert_allclose(a.targets[k], b.targets[k], rtol=0, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("plan_name", ["standing_plan", "one_leg_plan", "step_in_place_plan"])
def test_schedule_matches_reference(plan_name):
    """The bisect-and-cached-floats ``PhasePlan.at`` equals the linear-scan reference at every phase,
    on the phase boundaries and across the periodic wrap."""
    from wbsim.envs import schedules

    plan = getattr(schedules, plan_name)()
    plan.set_context(
        com=[0.01, 0.02, 0.7],
        left_foot=[0.0, 0.1, 0.05],
        right_foot=[0.0, -0.1, 0.05],
        left_sole_centre=[0.02, 0.1, 0.0],
        right_sole_centre=[0.02, -0.1, 0.0],
    )
    bounds = np.cumsum([p.duration for p in plan.phases])
    bounds = bounds[np.isfinite(bounds)]
    times = np.concatenate(
        [
            np.linspace(0.0, 19.0, 401),
            bounds,
            bounds + 1e-12,
            bounds - 1e-12,
            bounds + 2 * bounds[-1:] if bounds.size else [],
        ]
    )
    seen = set()
    for t in times:
        fast = plan.at(float(t))
        _assert_schedules_equal(fast, _reference_schedule(plan, float(t)), f"{plan_name} t={t}")
        seen.add(fast.phase_index)
    assert seen == set(range(len(plan.phases)))


def _reference_step(env, action, sched):
    """Observation, reward terms and the info's state, recomputed from MjData by name and with
    Pinocchio's quaternion (the definitions in wbsim.envs.humanoid's docstring)."""
    import pinocchio as pin

    u = env.unwrapped
    d, m, robot = u.data, u.model, u.robot
    qadr = [m.jnt_qposadr[m.joint(n).id] for n in robot.joint_names]
    vadr = [m.jnt_dofadr[m.joint(n).id] for n in robot.joint_names]
    pin_qidx = [
        robot.pin_model.joints[robot.pin_model.getJointId(n)].idx_q for n in robot.joint_names
    ]
    pin_vidx = [
        robot.pin_model.joints[robot.pin_model.getJointId(n)].idx_v for n in robot.joint_names
    ]
    w, x, y, z = d.qpos[3:7]
    R = pin.Quaternion(np.array([x, y, z, w])).normalized().toRotationMatrix()
    sensing = u.sensing
    planned = sched.contact_set or {"left_foot", "right_foot"}
    centre = np.mean(
        [p for p, f in zip(sensing.position_world, sensing.point_foot) if f in planned], axis=0
    )
    com = d.subtree_com[1]
    progress = sched.phase_time / sched.phase_duration if np.isfinite(sched.phase_duration) else 0.0
    obs = np.concatenate(
        [
            [d.qpos[2]],
            d.qpos[3:7],
            R.T @ d.qvel[0:3],
            d.qvel[3:6],
            d.qpos[qadr],
            d.qvel[vadr],
            [com[0] - centre[0], com[1] - centre[1], com[2]],
            [f in sensing.feet_in_contact for f in ("left_foot", "right_foot")],
            [f in sched.contact_set for f in ("left_foot", "right_foot")],
            [progress],
        ]
    )
    wts = u.reward_weights
    fell = (
        bool(d.qpos[2] < u.fall_height * u._base_height0)
        or bool(sensing.non_sole_contacts)
        or bool(np.arccos(np.clip(R[2, 2], -1.0, 1.0)) > u.fall_tilt)
    )
    terms = {
        "alive": 0.0 if fell else wts["alive"],
        "upright": -wts["upright"] * np.arccos(np.clip(R[2, 2], -1.0, 1.0)) ** 2,
        "posture": -wts["posture"] * np.mean((d.qpos[qadr] - u._q_ref[pin_qidx]) ** 2),
        "torque": -wts["torque"] * np.mean(np.clip(action, -1.0, 1.0) ** 2),
        "base_velocity": -wts["base_velocity"] * np.sum(d.qvel[0:3] ** 2),
    }
    q = np.empty(robot.pin_model.nq)
    q[0:3], q[3:7], q[pin_qidx] = d.qpos[0:3], [x, y, z, w], d.qpos[qadr]
    v = np.empty(robot.pin_model.nv)
    v[0:3], v[3:6], v[pin_vidx] = R.T @ d.qvel[0:3], d.qvel[3:6], d.qvel[vadr]
    return obs.astype(np.float32), terms, fell, q, v


@pytest.mark.parametrize(
    "env_id, kwargs, n, scale",
    [
        ("wbsim/G1Stand-v0", {}, 200, 0.6),  # falls (step 153): termination, reset
        ("wbsim/G1Push-v0", {"push_interval": 0.1, "frame_skip": 5}, 60, 0.02),
        ("wbsim/TalosStand-v0", {"frame_skip": 2}, 60, 0.05),
        ("wbsim/G1OneLeg-v0", {"frame_skip": 20}, 30, 0.02),
        ("wbsim/G1StepInPlace-v0", {"frame_skip": 20, "action_mode": "joint_position"}, 40, 0.1),
    ],
)
def test_step_matches_reference(env_id, kwargs, n, scale):
    """Every observation, reward, termination and info field equals the slow reference; the
    plans' later phases are reached by starting episodes at later times."""
    from wbsim.types import RobotState

    env = gym.make(env_id, **kwargs)
    u = env.unwrapped
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    falls = 0
    replay = mujoco.MjData(u.model)
    for i in range(n):
        a = rng.uniform(-scale, scale, env.action_space.shape).astype(np.float32)
        mujoco.mj_copyData(replay, u.model, u.data)
        obs, reward, term, trunc, info = env.step(a)
        assert u.data.time == pytest.approx(replay.time + u.dt, abs=1e-12)
        if u.action_mode == "torque" and u.sim.pushes.magnitude <= 0:
            # the env's MuJoCo steps are frame_skip plain mj_steps with these torques
            replay.ctrl[:] = np.clip(np.asarray(a, float), -1, 1) * u.effort
            for _ in range(u.frame_skip):
                mujoco.mj_step(u.model, replay)
            assert np.array_equal(replay.qpos, u.data.qpos) and np.array_equal(
                replay.qvel, u.data.qvel
            )
        sched = _reference_schedule(u.plan, float(u.data.time))
        ref_obs, terms, fell, q, v = _reference_step(env, np.asarray(a, float), sched)
        if u.action_mode == "joint_position":
            terms["torque"] = -u.reward_weights["torque"] * np.mean((u.tau / u.effort) ** 2)
        np.testing.assert_allclose(obs, ref_obs, rtol=1e-6, atol=1e-6)
        assert reward == pytest.approx(sum(terms.values()), abs=1e-12)
        assert info["reward_terms"].keys() == terms.keys()
        for k in terms:
            assert info["reward_terms"][k] == pytest.approx(terms[k], abs=1e-12), k
        assert term is fell is info["fell"]
        state = info["state"]
        assert isinstance(state, RobotState) and state.t == info["t"] == u.data.time
        np.testing.assert_allclose(state.q, q, rtol=0, atol=1e-14)
        np.testing.assert_allclose(state.v, v, rtol=0, atol=1e-12)
        assert state.sensed_contacts == info["sensed_contacts"] == info["contacts"].feet_in_contact
        _assert_schedules_equal(info["schedule"], sched, f"step {i}")
        assert info["non_sole_contacts"] == sorted(info["contacts"].non_sole_contacts)
        # the push acting in the env step's last MuJoCo step (started before it began)
        t_last = u.data.time - u.sim.timestep
        pushing = (
            bool(u.pushes)
            and t_last + 1e-9 >= u.pushes[-1][0]
            and (t_last < u.pushes[-1][0] + u.sim.pushes.duration)
        )
        np.testing.assert_array_equal(
            info["push_force"], u.pushes[-1][1] if pushing else np.zeros(3)
        )
        if term or trunc:
            falls += 1
            env.reset()
        if i % 10 == 9 and (
            not hasattr(u.plan, "phases") or np.isfinite(u.plan.phases[0].duration)
        ):
            # jump ahead in the plan: the next steps see its later phases
            u.data.time += 0.7
    if env_id == "wbsim/G1Stand-v0":
        assert falls > 0
    env.close()


def test_lean_info_same_steps():
    """``info_mode="lean"``: the same observations, rewards and terminations as ``"full"``; its
    info is the full info's numbers."""
    rng = np.random.default_rng(2)
    actions = rng.uniform(-0.4, 0.4, size=(120, 29)).astype(np.float32)
    full = gym.make("wbsim/G1Push-v0", push_interval=0.05)
    lean = gym.make("wbsim/G1Push-v0", push_interval=0.05, info_mode="lean")
    for env in (full, lean):
        env.reset(seed=4)
    for a in actions:
        of, rf, tf, uf, inf = full.step(a)
        ol, rl, tl, ul, inl = lean.step(a)
        assert np.array_equal(of, ol) and rf == rl and tf == tl and uf == ul
        assert list(inl) == ["t", "fell", "reward_terms", "phase", "phase_index", "phase_time"]
        for key in inl:
            assert inl[key] == inf[key], key
        if tf or uf:
            assert np.array_equal(full.reset(seed=1)[0], lean.reset(seed=1)[0])
    with pytest.raises(wbsim.WbsimError, match="info_mode"):
        gym.make("wbsim/G1Stand-v0", info_mode="small")


def test_residual_with_lean_info_same_steps():
    """The residual wrapper takes the controller's inputs from the env when the info is lean."""
    envs = [
        gym.make("wbsim/G1Stand-v0", action_mode="residual", info_mode=m) for m in ("full", "lean")
    ]
    for env in envs:
        env.reset(seed=0)
    a = np.full(29, 0.2, np.float32)
    for _ in range(20):
        (of, rf, *_, inf), (ol, rl, *_, inl) = (env.step(a) for env in envs)
        assert np.array_equal(of, ol) and rf == rl
        assert "command" in inf and "command" not in inl
        assert inf["command"] == envs[1].get_wrapper_attr("command")


def test_residual_pickle_keeps_controller_options():
    env = gym.make(
        "wbsim/G1Stand-v0", action_mode="residual", controller_options={"contact_model": "wrench"}
    )
    env.reset(seed=0)
    env.step(np.zeros(29, np.float32))
    wrapper = env
    while not hasattr(wrapper, "controller_options"):
        wrapper = wrapper.env
    clone = pickle.loads(pickle.dumps(wrapper))
    assert clone.controller_options == {"contact_model": "wrench"}
    assert clone.controller.contact_model == "wrench"
    np.testing.assert_array_equal(clone.unwrapped.data.qpos, wrapper.unwrapped.data.qpos)
    assert np.all(np.isfinite(clone.step(np.full(29, 0.1, np.float32))[0]))


def test_async_vector_env_lean_info():
    envs = gym.make_vec(
        "wbsim/G1Stand-v0",
        num_envs=2,
        vectorization_mode="async",
        info_mode="lean",
        vector_kwargs={"context": "fork"},
    )
    envs.reset(seed=0)
    for _ in range(20):
        info = envs.step(np.zeros((2, 29), np.float32))[4]
    keys = ("t", "fell", "reward_terms", "phase", "phase_index", "phase_time")
    assert set(info) == {*keys, *(f"_{k}" for k in keys)}
    assert list(info["phase"]) == ["stand", "stand"] and list(info["phase_index"]) == [0, 0]
    assert info["t"].shape == (2,) and np.all(info["t"] > 0)
    envs.close()


def test_action_check_edges():
    """Huge finite actions clip (the one-call finiteness check overflows, then looks closer);
    +-inf raises."""
    e1, e2 = gym.make("wbsim/G1Stand-v0").unwrapped, gym.make("wbsim/G1Stand-v0").unwrapped
    e1.reset(seed=0)
    e2.reset(seed=0)
    huge, one = np.zeros(29), np.zeros(29)
    huge[[0, 3]], one[[0, 3]] = [1e200, -1e300], [1.0, -1.0]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="overflow", category=RuntimeWarning)
        assert np.array_equal(e1.step(huge)[0], e2.step(one)[0])
        np.testing.assert_array_equal(e1.check_action(huge), one)
    bad = np.zeros(29)
    bad[2] = -np.inf
    with pytest.raises(ValueError, match=r"NaN/inf at 1 joint\(s\): left_hip_yaw_joint;"):
        e1.step(bad)
    # many bad entries: the first five by name, and how many more
    with pytest.raises(
        ValueError,
        match=r"NaN/inf at 29 joint\(s\): left_hip_pitch_joint, .* "
        r"and 24 more; expected",
    ):
        e1.step(np.full(29, np.nan))


def test_check_action_is_a_clipped_float_copy():
    """``check_action`` (astype copy; clipping skipped when the sum of squares is <= 1) gives exactly
    ``np.clip(np.array(action, dtype=float), -1, 1)`` (signs of zeros included), as a fresh float64
    array, for every input type and for entries just beyond and exactly at +-1."""
    env = gym.make("wbsim/G1Stand-v0").unwrapped
    rng = np.random.default_rng(5)
    above, below = np.nextafter(1.0, 2.0), np.nextafter(-1.0, -2.0)
    cases = [rng.uniform(-s, s, 29) for s in (0.01, 0.1, 0.18, 0.5, 1.0, 3.0)]
    for value in (above, below, 1.0, -1.0, np.nextafter(1.0, 0.0), -0.0, 1.0 + 1e-9):
        a = np.zeros(29)
        a[7] = value
        cases.append(a)
    cases.append(np.full(29, 1.0 / np.sqrt(29)))  # sum of squares ~1
    inputs = []
    for a in cases:
        inputs += [
            a,
            a.astype(np.float32),
            a.tolist(),
            np.asfortranarray(a),
            a[::-1].copy()[::-1],
            np.round(a).astype(np.int64),
        ]
    for x in inputs:
        out = env.check_action(x)
        ref = np.clip(np.array(x, dtype=float), -1.0, 1.0)
        assert out.dtype == np.float64 and out.shape == (29,)
        assert np.array_equal(out, ref) and np.array_equal(np.signbit(out), np.signbit(ref))
        if isinstance(x, np.ndarray):
            assert not np.shares_memory(out, x)
    a = np.zeros(29)
    a[3] = above
    assert env.check_action(a)[3] == 1.0 and a[3] == above  # clipped, input untouched
    env.close()


@pytest.mark.parametrize("env_id", ["wbsim/G1Walk-v0", "wbsim/TalosStand-v0"])
def test_observation_structure_names_the_observation(env_id):
    """``observation_structure``'s parts, cut from the observation in order, are what MuJoCo's
    state and the env's sensing and plan say (read here from MuJoCo and the info, not from the
    env's own observation code)."""
    env = gym.make(env_id)
    u = env.unwrapped
    env.reset(seed=0)
    obs, *_, info = env.step(np.zeros(env.action_space.shape, np.float32))
    sizes = u.observation_structure
    assert sum(sizes.values()) == env.observation_space.shape[0]
    parts, k = {}, 0
    for name, size in sizes.items():
        parts[name], k = obs[k : k + size], k + size
    d, n = u.data, u.robot.n_joints
    assert sizes["joint_positions"] == sizes["joint_velocities"] == n
    assert parts["base_height"][0] == np.float32(d.qpos[2])
    np.testing.assert_allclose(parts["base_quaternion_wxyz"], d.qpos[3:7], atol=1e-6)
    R = d.xmat[1].reshape(3, 3)  # MuJoCo's free joint: linear velocity in the world, angular in
    twist = np.concatenate((R.T @ d.qvel[0:3], d.qvel[3:6]))  # the base frame
    np.testing.assert_allclose(parts["base_twist"], twist, atol=1e-5)
    qadr, vadr = u.robot.converter.mj_qadr, u.robot.converter.mj_vadr
    np.testing.assert_allclose(parts["joint_positions"], d.qpos[qadr], atol=1e-6)
    np.testing.assert_allclose(parts["joint_velocities"], d.qvel[vadr], atol=1e-5)
    assert parts["com_minus_support_centre"][2] == np.float32(d.subtree_com[1][2])
    sensed = info["sensed_contacts"]
    assert list(parts["sole_contact_flags"]) == [f in sensed for f in ("left_foot", "right_foot")]
    planned = info["schedule"].contact_set
    assert list(parts["planned_contacts"]) == [f in planned for f in ("left_foot", "right_foot")]
    assert 0.0 <= parts["phase_progress"][0] <= 1.0
    env.close()


@pytest.mark.parametrize("env_id", ["wbsim/G1OneLeg-v0", "wbsim/G1HandWall-v0"])
@pytest.mark.parametrize("info_mode", ["full", "lean"])
def test_info_gives_the_phase_the_observation_cannot(env_id, info_mode):
    """The observation has the phase's progress but not which phase (OneLeg's lift, hold and
    lower all stand on the left foot; HandWall's last phase is open-ended, its progress 0):
    ``info`` names it (``phase``, ``phase_index``) and gives its time (``phase_time``, s), in
    both info modes. The expected phase is worked out here from the plan's durations; the
    episode jumps in time (one step after each jump), so the robot need not stay up."""
    env = gym.make(env_id, info_mode=info_mode)
    u = env.unwrapped
    _, info = u.reset(seed=0)
    assert (info["phase"], info["phase_index"], info["phase_time"]) == ("stand", 0, 0.0)
    names = [p.name for p in u.plan.phases]
    ends = np.cumsum([p.duration for p in u.plan.phases])
    zero = np.zeros(u.action_space.shape, np.float32)
    seen = set()
    for t in np.arange(0.3, min(u.max_seconds, ends[-2] + 1.0), 0.35):
        u.data.time = t
        info = u.step(zero)[4]
        t_after = info["t"]
        i = int(np.searchsorted(ends, t_after, side="right"))
        start = ends[i - 1] if i else 0.0
        assert (info["phase"], info["phase_index"]) == (names[i], i), t_after
        assert info["phase_time"] == pytest.approx(t_after - start, abs=1e-9)
        seen.add(i)
    assert seen == set(range(len(names))), seen  # every phase met
    env.close()
