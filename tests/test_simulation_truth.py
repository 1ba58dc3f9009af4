"""The simulation is the truth: MuJoCo's warnings end a run that MuJoCo reset, noisy resets start
on the floor, and a fall is declared by height or tilt."""

import math

import gymnasium as gym
import mujoco
import numpy as np
import pytest

from wbsim.episode_log import load_run
from wbsim.rollout import EpisodeConfig, run_episode

N = 29


def test_a_state_mujoco_reset_ends_the_run_with_an_error(tmp_path):
    """A push of 1e12 N makes MuJoCo reset the state (mjWARN_BADQACC): the run ends as "error" at
    that step, named with MuJoCo's warning, with the steps before it logged and the time reached
    (not the reset's); the env terminates with the message."""
    s = run_episode(
        EpisodeConfig(
            env="wbsim/G1Push-v0",
            seconds=1.0,
            log=tmp_path / "run",
            progress=False,
            env_options={"push_magnitude": 1e12, "push_interval": 0.1},
        )
    )
    assert s["status"] == "error" and not s["fell"]
    assert "step 50" in s["stopped_reason"] and "mjWARN_BADQACC" in s["stopped_reason"]
    assert s["steps"] == s["logged_rows"] == 50 and s["seconds"] == pytest.approx(0.1)
    assert s["events"]["simulator_warning"] == 1
    run = load_run(tmp_path / "run")
    assert run.steps.shape[0] == 50 and np.all(np.diff(run["t"]) > 0)
    [warning] = [e for e in run.events if e["kind"] == "simulator_warning"]
    assert warning["where"] == "mjWARN_BADQACC" and warning["step"] == 50
    env = gym.make("wbsim/G1Push-v0", push_magnitude=1e12, push_interval=0.004).unwrapped
    env.reset(seed=0)
    for _ in range(3):
        _, _, terminated, _, info = env.step(np.zeros(N, np.float32))
        if terminated:
            break
    assert terminated and "mjWARN_BADQACC" in info["simulation_error"]


@pytest.mark.parametrize("env_id", ["wbsim/G1Stand-v0", "wbsim/TalosStand-v0"])
def test_noisy_resets_start_on_the_floor(env_id):
    """With 0.05 rad of joint noise, the lowest sole point (MuJoCo's site) is on the floor at every
    reset: no penetration (it used to start up to 7.6 mm deep), no gap."""
    env = gym.make(env_id, reset_noise_scale=0.05).unwrapped
    m, d = env.model, env.data
    sites = [s for f in env.robot.feet.values() for s in f.mj_site_ids]
    for seed in range(10):
        env.reset(seed=seed)
        mujoco.mj_kinematics(m, d)
        assert abs(d.site_xpos[sites, 2].min()) < 1e-12, seed


def test_a_fall_is_declared_by_tilt():
    """The base tilted 70 deg (above the 60 deg default) at a normal height is a fall; at 50 deg it
    is not; the threshold is an option."""
    env = gym.make("wbsim/G1Stand-v0").unwrapped
    for tilt_deg, fallen in ((70.0, True), (50.0, False)):
        env.reset(seed=0)
        a = math.radians(tilt_deg)
        env.data.qpos[3:7] = [math.cos(a / 2), math.sin(a / 2), 0.0, 0.0]
        mujoco.mj_forward(env.model, env.data)
        assert env.has_fallen() is fallen, tilt_deg
    assert gym.make("wbsim/G1Stand-v0", fall_tilt=1.5).unwrapped.fall_tilt == 1.5
    with pytest.raises(Exception, match="fall_tilt"):
        gym.make("wbsim/G1Stand-v0", fall_tilt=4.0)


@pytest.mark.parametrize(
    "options, needle",
    [
        ({"width": 4000}, "off-screen buffer holds up to 1920x1080"),
        ({"fps": 2000.0}, r"fps must be in \(0, 500\]"),
        ({"fps": 400.0, "env_options": {"frame_skip": 5}}, r"fps must be in \(0, 100\]"),
    ],
)
def test_options_the_renderer_cannot_honour_are_refused_before_any_file(tmp_path, options, needle):
    """A frame larger than MuJoCo's off-screen buffer, or more frames a second than control steps:
    a one-line error naming the option and its valid range; no log, no video."""
    from wbsim.errors import WbsimError

    with pytest.raises(WbsimError, match=needle):
        run_episode(
            EpisodeConfig(
                seconds=0.1,
                progress=False,
                log=tmp_path / "run",
                video=tmp_path / "v.mp4",
                **options,
            )
        )
    assert not (tmp_path / "run").exists() and not (tmp_path / "v.mp4").exists()


def test_a_killed_vector_env_worker_fails_the_next_step_at_once():
    """kill -9 of an async vector env's worker: the next step raises at once (no hang)."""
    import os
    import signal
    import time

    env = gym.make_vec("wbsim/G1Stand-v0", num_envs=2, vectorization_mode="async", info_mode="lean")
    env.reset(seed=0)
    actions = np.zeros((2, N), np.float32)
    env.step(actions)
    os.kill(env.processes[0].pid, signal.SIGKILL)
    env.processes[0].join(timeout=10)
    t0 = time.monotonic()
    with pytest.raises((BrokenPipeError, EOFError, ConnectionError)):
        env.step(actions)
    assert time.monotonic() - t0 < 5.0
    for p in env.processes:
        if p.is_alive():
            p.kill()


@pytest.mark.parametrize("frequency_hz", [5.0, 20.0, 50.0])
def test_the_joint_pd_is_stable_in_the_air(frequency_hz):
    """joint_position mode with the base free (no gravity, 1 m up, joints 0.2 rad off their
    targets): the PD brings every joint to its target. With the damping applied explicitly the
    coupled joint modes (17x the design stiffness on the G1) made the 5 Hz PD diverge into a limit
    cycle of saturated torques; the actuators' PD, whose damping MuJoCo integrates implicitly,
    converges at any gain."""
    env = gym.make(
        "wbsim/G1Stand-v0",
        action_mode="joint_position",
        pd_frequency_hz=frequency_hz,
        max_seconds=100.0,
    ).unwrapped
    env.model.opt.gravity[:] = 0.0
    env.reset(seed=0)
    env.data.qpos[2] += 1.0
    env.data.qpos[env.robot.converter.mj_qadr] += np.random.default_rng(1).uniform(-0.2, 0.2, N)
    mujoco.mj_forward(env.model, env.data)
    target = env.q_reference[env.robot.converter.pin_qidx]
    for _ in range(1500):  # 3 s
        env.step(np.zeros(N, np.float32))
    assert env.data.qpos[2] > 1.5  # still in the air
    assert np.abs(env.sim.joint_positions - target).max() < 1e-6
    assert np.abs(env.sim.joint_velocities).max() < 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("frame_skip", [2, 5])
def test_gravity_qp_stands_with_its_torque_late_by_a_control_period(frame_skip):
    """gravity_qp every 2 or 5 physics steps (4 or 10 ms) with its joint PD in the actuators stands
    10 s (held torques fell at 6.96 s and 0.86 s)."""
    s = run_episode(
        EpisodeConfig(seconds=10.0, progress=False, env_options={"frame_skip": frame_skip})
    )
    assert s["status"] == "completed" and s["base_drift_m"] < 1e-3, s["stopped_reason"]
    held = run_episode(
        EpisodeConfig(
            seconds=10.0, progress=False, low_level="hold", env_options={"frame_skip": frame_skip}
        )
    )
    assert held["fell"]


def test_friction_of_an_explicit_contact_pair_is_the_contact_s(tmp_path):
    """A scene with a ``<pair>`` between the floor and one sole point gives that contact its own
    friction (0.123), which no geom carries: the sensing reads it from ``d.contact.friction``,
    the other points keep the geoms' rule (the floor's 1.0)."""
    import dataclasses

    import wbsim
    from wbsim.assets import SCENE_XML
    from wbsim.contacts import ContactSensor
    from wbsim.robot_config import ROBOTS

    scene = tmp_path / "scene_pair.xml"
    scene.write_text(
        SCENE_XML.read_text().replace(
            "</worldbody>",
            '</worldbody>\n  <contact><pair geom1="floor" geom2="left_foot_front_left" '
            'friction="0.123 0.123 0.005 0.0001 0.0001"/></contact>',
        )
    )
    robot = wbsim.load_robot(dataclasses.replace(ROBOTS["g1"], scene=str(scene)))
    m, d = robot.mj_model, mujoco.MjData(robot.mj_model)
    d.qpos[:] = robot.pin_to_mj(robot.pose_q("stand"))[0]
    mujoco.mj_forward(m, d)
    rows = [
        i
        for i in range(d.ncon)
        if "left_foot_front_left" in {m.geom(g).name for g in d.contact.geom[i]}
    ]
    assert rows and d.contact.friction[rows[0], 0] == pytest.approx(0.123)
    mu = ContactSensor.for_robot(robot).read(d).friction
    names = list(robot.contact_point_names)
    assert mu[names.index("left_foot_front_left")] == pytest.approx(0.123)
    others = [mu[i] for i, n in enumerate(names) if n != "left_foot_front_left"]
    assert others == pytest.approx([1.0] * len(others))


def test_the_no_slip_option_stops_the_creep_of_sticking_feet():
    """MuJoCo's friction is soft: the G1 standing under a steady 8 N sideways push (far inside its
    friction cones) creeps, its loaded sole points slipping ~0.5 mm/s (median). With the env's
    ``noslip_iterations`` MuJoCo's no-slip pass runs (its option is set on the model) and they
    stop to ~1e-5 m/s. Bad values are refused with the option's name."""
    from wbsim.controllers import make_controller
    from wbsim.envs import make
    from wbsim.errors import WbsimError

    medians = {}
    for iterations in (0, 5):
        env = make(
            "wbsim/G1Stand-v0",
            noslip_iterations=iterations,
            push_script=[[0.0, [0.0, 8.0, 0.0], 2.0]],
        )
        u = env.unwrapped
        assert u.model.opt.noslip_iterations == iterations
        ctrl, conv = make_controller("gravity_qp", u.robot), u.robot.converter
        _, info = env.reset(seed=0)
        ctrl.reset(info["state"])
        slips = []
        for k in range(300):
            state = info["state"]
            tau = ctrl.compute(state, info["schedule"]).torque_at(
                state.q[conv.pin_qidx], state.v[conv.pin_vidx]
            )
            _, _, terminated, _, info = env.step(u.torque_to_action(tau))
            assert not terminated
            sensing = u.sim.sensing()
            if k >= 100:  # after the push's onset
                slips.append(sensing.slip_velocity[sensing.normal_force > 1.0])
        medians[iterations] = float(np.median(np.concatenate(slips)))
        env.close()
    assert medians[0] > 2e-4 and medians[5] < 5e-5, medians
    # the gait envs run it as registered (a loaded stance sole would creep all through each
    # stance), the others do not; an option overrides it
    for env_id, iterations in (
        ("wbsim/G1Walk-v0", 5),
        ("wbsim/G1StepInPlace-v0", 5),
        ("wbsim/G1PushStep-v0", 5),
        ("wbsim/G1Stand-v0", 0),
    ):
        assert make(env_id).unwrapped.model.opt.noslip_iterations == iterations
    assert make("wbsim/G1Walk-v0", noslip_iterations=0).unwrapped.model.opt.noslip_iterations == 0
    for bad in (-1, 1.5, "5", 2**31):
        with pytest.raises(
            WbsimError, match=r"noslip_iterations must be an integer in \[0, 1000\]"
        ):
            make("wbsim/G1Stand-v0", noslip_iterations=bad)


def test_envs_made_from_one_robot_share_no_model():
    """Two envs built on one ``wbsim.Robot``: each its own MuJoCo model. The no-slip setting of
    one stays its own, and a joint-position env's PD gains (written into its actuators) do not
    act in a torque env's steps (they did: the model was shared, so a zero torque action came out
    as ``-kp q - kd qdot``)."""
    import wbsim

    robot = wbsim.load_robot("g1")
    noslip = gym.make("wbsim/G1Stand-v0", robot=robot, noslip_iterations=5).unwrapped
    plain = gym.make("wbsim/G1Stand-v0", robot=robot).unwrapped
    assert noslip.model is not plain.model and noslip.model is noslip.robot.mj_model
    assert (noslip.model.opt.noslip_iterations, plain.model.opt.noslip_iterations) == (5, 0)
    assert robot.mj_model.opt.noslip_iterations == 0
    position = gym.make("wbsim/G1Stand-v0", robot=robot, action_mode="joint_position").unwrapped
    position.reset(seed=0)
    plain.reset(seed=0)
    position.step(np.full(position.action_space.shape, 0.2, dtype=np.float32))
    plain.step(np.zeros(plain.action_space.shape, dtype=np.float32))
    np.testing.assert_array_equal(plain.data.actuator_force, 0.0)
    assert np.abs(position.data.actuator_force).max() > 1.0  # its PD acts (0.1 rad off)
