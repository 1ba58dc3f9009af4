"""The ``residual`` action mode (envs/wrappers.py ``ControllerInTheLoop``) and the env's per-substep
``torque_hook`` it runs through.

The reference for the residual env is the loop written out by hand on a torque-mode env with
``frame_skip=1``: the controller called on ``robot_state()`` / ``schedule()`` before every MuJoCo
step, the residual added to its feed-forward torque, and the command applied for that step. A residual env with
``frame_skip=k`` must be that loop sampled every ``k`` MuJoCo steps, bit for bit (with ``k=1`` it is
the wrapper's behaviour before the controller moved into the substeps: one call per env step, at the
state the step starts from).
"""

import pickle

import gymnasium as gym
import numpy as np
import pytest

import wbsim  # noqa: F401  (registers the envs)
from wbsim.controllers import make_controller
from wbsim.errors import WbsimError
from wbsim.types import Command

N = 29  # G1 joints


def _wrapper(env):
    while not hasattr(env, "controller_name"):
        env = env.env
    return env


def _reference(env_id, controller, frame_skip, actions, seed, scale=0.1, options=None, **env_kw):
    """The residual loop by hand on a torque env (frame_skip 1): per env step of the residual env,
    ``frame_skip`` MuJoCo steps with the controller called before each."""
    ref = gym.make(env_id, **env_kw).unwrapped
    ctrl = make_controller(controller, ref.robot, **(options or {}))
    ref.reset(seed=seed)
    ctrl.reset(ref.robot_state())
    out = []
    for a in actions:
        a = np.clip(np.asarray(a, dtype=float), -1.0, 1.0)
        for _ in range(frame_skip):
            cmd = ctrl.compute(ref.robot_state(), ref.schedule())
            # the controller's command with the residual on its feed-forward torque, for one
            # MuJoCo step (its joint PD in the actuators; MuJoCo clips the sum)
            command = Command(cmd.tau + scale * a * ref.effort, joint_targets=cmd.joint_targets)
            ref.torque_hook = lambda env, c=command: c
            obs, reward, term, _, _ = ref.step(np.zeros(N, np.float32))
        out.append(
            (obs, reward, term, ref.data.qpos.copy(), ref.data.qvel.copy(), cmd.tau, ref.tau.copy())
        )
        if term:
            break
    return out


@pytest.mark.parametrize(
    "env_id, controller, fs, env_kw",
    [
        ("wbsim/G1Stand-v0", "gravity_qp", 1, {}),
        ("wbsim/G1Stand-v0", "gravity_qp", 5, {}),
        ("wbsim/G1Push-v0", "gravity_qp", 3, {"push_interval": 0.113, "push_duration": 0.05}),
        ("wbsim/G1Stand-v0", "projected_id", 4, {}),
    ],
)
def test_controller_runs_every_mujoco_step(env_id, controller, fs, env_kw):
    """Observation, reward, termination, MuJoCo state, the last command and the applied torque of
    every env step equal the hand-written loop's, bit for bit."""
    rng = np.random.default_rng(3)
    actions = rng.uniform(-0.3, 0.3, size=(60, N)).astype(np.float32)
    ref = _reference(env_id, controller, fs, actions, seed=2, **env_kw)
    env = gym.make(env_id, action_mode="residual", controller=controller, frame_skip=fs, **env_kw)
    base = env.unwrapped
    env.reset(seed=2)
    for a, (obs_r, rew_r, term_r, qpos_r, qvel_r, cmd_tau_r, tau_r) in zip(actions, ref):
        obs, reward, term, _, info = env.step(a)
        assert np.array_equal(obs, obs_r) and reward == rew_r and term == term_r
        assert np.array_equal(base.data.qpos, qpos_r) and np.array_equal(base.data.qvel, qvel_r)
        # the command and torque of the last substep
        assert np.array_equal(info["command"].tau, cmd_tau_r)
        assert info["command"] is _wrapper(env).command is base.overlay_command
        assert np.array_equal(base.tau, tau_r)
    assert len(ref) == len(actions)  # no fall: every step was compared
    if env_id == "wbsim/G1Push-v0":
        assert base.pushes  # a push started within an env step (0.113 s is no multiple of dt)


@pytest.mark.parametrize(
    "env_id, fs",
    [
        ("wbsim/G1Stand-v0", 2),
        ("wbsim/G1Stand-v0", 5),
        ("wbsim/G1Stand-v0", 10),
        ("wbsim/TalosStand-v0", 5),
    ],
)
def test_zero_action_stands_at_any_frame_skip(env_id, fs):
    """Zero actions: the controller alone holds the robot (it fell at frame_skip >= 3 and sagged by
    0.3 rad at 2 while its torque was held over the substeps). From the exact pose (no reset noise),
    which the controller holds."""
    env = gym.make(env_id, action_mode="residual", frame_skip=fs, reset_noise_scale=0.0)
    base = env.unwrapped
    env.reset(seed=0)
    z0 = float(base.data.qpos[2])
    qidx = base.robot.converter.pin_qidx
    q_ref = base.robot_state().q[qidx]
    zero = np.zeros(env.action_space.shape, np.float32)
    worst = 0.0
    for _ in range(round(2.0 / base.dt)):
        _, _, term, trunc, _ = env.step(zero)
        assert not term and not trunc
        worst = max(worst, float(np.abs(base.robot_state().q[qidx] - q_ref).max()))
    assert abs(float(base.data.qpos[2]) - z0) < 0.005  # m
    assert worst < 0.01  # rad


def test_async_vector_env_residual_frame_skip():
    """The hook is installed in the subprocesses: 1.5 s of zero actions at frame_skip 5 (it fell at
    0.86 s), both envs as a single env does (all from the exact pose: no reset noise)."""
    envs = gym.make_vec(
        "wbsim/G1Stand-v0",
        num_envs=2,
        vectorization_mode="async",
        action_mode="residual",
        frame_skip=5,
        reset_noise_scale=0.0,
        vector_kwargs={"context": "fork"},
    )
    single = gym.make(
        "wbsim/G1Stand-v0", action_mode="residual", frame_skip=5, reset_noise_scale=0.0
    )
    try:
        envs.reset(seed=0)
        single.reset(seed=0)
        for _ in range(150):
            obs, _, term, _, _ = envs.step(np.zeros((2, N), np.float32))
            obs1 = single.step(np.zeros(N, np.float32))[0]
            assert not term.any()
        assert np.array_equal(obs[0], obs1) and np.array_equal(obs[1], obs1)
    finally:
        envs.close()


def test_hook_contract():
    """The hook runs before each MuJoCo step, after the push, with ``sensing`` of the last MuJoCo
    step: a torque env (frame_skip 1) applying the same torques sees the same times, pushes,
    sensing, and reaches the same state, bit for bit."""
    kw = {"push_interval": 0.013, "push_duration": 0.004, "push_magnitude": 60.0}
    env = gym.make("wbsim/G1Push-v0", frame_skip=4, **kw).unwrapped
    ref = gym.make("wbsim/G1Push-v0", **kw).unwrapped
    rng = np.random.default_rng(0)
    actions = rng.uniform(-0.2, 0.2, size=(40, N))
    torques = actions * env.effort  # what ref.step applies for these actions, exactly
    seen = []

    def hook(e):
        assert e is env
        seen.append(
            (
                e.data.time,
                e.data.xfrc_applied.copy(),
                e.sensing.force_world.copy(),
                e.robot_state().sensed_contacts,
            )
        )
        return torques[len(seen) - 1]

    env.torque_hook = hook
    assert env.torque_hook is hook
    env.reset(seed=1)
    ref.reset(seed=1)
    expected = []
    for k in range(40):
        ref.sim.apply_push()  # what each MuJoCo step does first; the hook sees the state after it
        expected.append(
            (
                ref.data.time,
                ref.data.xfrc_applied.copy(),
                ref.sensing.force_world.copy(),
                ref.robot_state().sensed_contacts,
            )
        )
        ref.step(actions[k])
        if k % 4 == 3:
            env.step(np.zeros(N))
            assert len(seen) == k + 1
            assert np.array_equal(env.tau, torques[k])
    for (t, x, f, s), (t_r, x_r, f_r, s_r) in zip(seen, expected):
        assert t == t_r and np.array_equal(x, x_r) and np.array_equal(f, f_r) and s == s_r
    assert any(np.any(x) for _, x, _, _ in seen)  # pushes were on at some hook calls
    assert np.array_equal(env.data.qpos, ref.data.qpos)
    assert np.array_equal(env.data.qvel, ref.data.qvel)
    assert np.array_equal(env.sensing.force_world, ref.sensing.force_world)
    # not pickled
    assert pickle.loads(pickle.dumps(env)).torque_hook is None


def test_hook_errors():
    env = gym.make("wbsim/G1Stand-v0").unwrapped
    with pytest.raises(WbsimError, match="torque_hook must be callable"):
        env.torque_hook = 3
    env.reset(seed=0)
    env.torque_hook = lambda e: np.zeros(3)
    with pytest.raises(
        WbsimError,
        match=r"torque_hook returned a torque of shape \(3,\); expected "
        r"\(29,\)",
    ):
        env.step(np.zeros(N))
    bad = np.zeros(N)
    bad[4] = np.nan
    env.torque_hook = lambda e: bad
    with pytest.raises(WbsimError, match="NaN/inf at left_ankle_pitch_joint"):
        env.step(np.zeros(N))
    env.torque_hook = None
    env.step(np.zeros(N))
    jp = gym.make("wbsim/G1Stand-v0", action_mode="joint_position").unwrapped
    with pytest.raises(WbsimError, match="needs action_mode 'torque'"):
        jp.torque_hook = lambda e: np.zeros(N)
    res = gym.make("wbsim/G1Stand-v0", action_mode="residual")
    from wbsim.envs.wrappers import ControllerInTheLoop

    with pytest.raises(WbsimError, match="already has a torque_hook"):
        ControllerInTheLoop(res.unwrapped)


# -- pickling mid-episode --------------------------------------------------------------------------
def _assert_same_continuation(env, clone, actions):
    for a in actions:
        o1, r1, t1, u1, i1 = env.step(a)
        o2, r2, t2, u2, i2 = clone.step(a)
        assert np.array_equal(o1, o2) and r1 == r2 and t1 == t2 and u1 == u2
        e, c = env.unwrapped.data, clone.unwrapped.data
        assert np.array_equal(e.qpos, c.qpos) and np.array_equal(e.qvel, c.qvel)
        if "command" in i1:
            assert np.array_equal(i1["command"].tau, i2["command"].tau)
        if "schedule" in i1:
            assert i1["schedule"].targets.keys() == i2["schedule"].targets.keys()
            for k in i1["schedule"].targets:
                assert np.array_equal(i1["schedule"].targets[k], i2["schedule"].targets[k]), k


@pytest.mark.parametrize("controller", ["gravity_qp", "projected_id"])
@pytest.mark.parametrize("fs", [1, 5])
def test_pickle_mid_episode_continues_identically(controller, fs):
    """Pickled after 100 steps, original and copy stepped with the same random actions for 100 steps
    stay bit-identical (the copy's controller is reset with the episode's reset state, not the
    current one, and has seen the current support)."""
    env = gym.make("wbsim/G1Stand-v0", action_mode="residual", controller=controller, frame_skip=fs)
    rng = np.random.default_rng(1)
    env.reset(seed=0)
    for _ in range(100):
        env.step(rng.uniform(-0.2, 0.2, N).astype(np.float32))
    clone = pickle.loads(pickle.dumps(env))
    u, c = env.unwrapped, clone.unwrapped
    assert c.torque_hook is not None and c.torque_hook.__self__ is _wrapper(clone)
    assert c.robot_state().sensed_contacts == u.robot_state().sensed_contacts
    assert np.array_equal(c.sensing.force_world, u.sensing.force_world)
    _assert_same_continuation(env, clone, rng.uniform(-0.2, 0.2, (100, N)).astype(np.float32))


def test_pickle_keeps_the_plans_reset_context():
    """G1OneLeg's targets are relative to the CoM and feet at reset: a copy pickled in the shift
    phase (1.5 s) has the same targets and, with projected_id (which follows them), the same
    steps."""
    env = gym.make(
        "wbsim/G1OneLeg-v0", action_mode="residual", controller="projected_id", frame_skip=5
    )
    rng = np.random.default_rng(4)
    env.reset(seed=0)
    for _ in range(150):
        env.step(rng.uniform(-0.02, 0.02, N).astype(np.float32))
    assert env.unwrapped.schedule().phase == "shift"
    clone = pickle.loads(pickle.dumps(env))
    _assert_same_continuation(env, clone, rng.uniform(-0.02, 0.02, (30, N)).astype(np.float32))


# -- residual-only options -------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [None, "torque", "joint_position"])
@pytest.mark.parametrize(
    "option",
    [
        {"controller": "foo"},
        {"residual_scale": 0.5},
        {"controller_options": {}},
        {"controller": "pd", "residual_scale": 0.1},
    ],
)
def test_residual_options_need_residual_mode(mode, option):
    kw = {} if mode is None else {"action_mode": mode}
    with pytest.raises(WbsimError) as exc:
        gym.make("wbsim/G1Stand-v0", **kw, **option)
    msg = str(exc.value)
    assert "\n" not in msg and 'need action_mode="residual"' in msg.replace("needs", "need")
    assert msg.startswith("wbsim/G1Stand-v0: " + ", ".join(option))


def test_residual_options_in_residual_mode():
    env = gym.make(
        "wbsim/G1Stand-v0",
        action_mode="residual",
        controller="pd",
        residual_scale=0.2,
        controller_options={"frequency_hz": 4},
    )
    w = _wrapper(env)
    assert (w.controller_name, w.residual_scale, w.controller_options) == (
        "pd",
        0.2,
        {"frequency_hz": 4},
    )
    w = _wrapper(gym.make("wbsim/G1Stand-v0", action_mode="residual"))
    assert (w.controller_name, w.residual_scale, w.controller_options) == ("gravity_qp", 0.1, {})
    with pytest.raises(WbsimError, match="unknown action_mode 'velocity'"):
        gym.make("wbsim/G1Stand-v0", action_mode="velocity", controller="pd")


def test_unwrapped_step_after_reset_uses_a_zero_residual():
    """The residual is zero from reset until the wrapper's first step: the unwrapped env's step
    (which ignores its action while the hook is set) equals a wrapper step with a zero action, also
    on a copy unpickled before its first step (it raised a TypeError on None)."""
    a = np.full(N, 0.7, np.float32)
    zero = np.zeros(N, np.float32)
    ref = gym.make("wbsim/G1Stand-v0", action_mode="residual")
    ref.reset(seed=1)
    obs_ref = ref.step(zero)[0]
    for make in (lambda e: e, lambda e: pickle.loads(pickle.dumps(e))):
        env = gym.make("wbsim/G1Stand-v0", action_mode="residual")
        env.reset(seed=1)
        env = make(env)
        assert np.array_equal(env.unwrapped.step(a)[0], obs_ref)
