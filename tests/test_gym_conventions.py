"""Gymnasium's conventions for the registered ids: a time limit in the spec, seeds that start from
different states, the cameras, frame size and depth rendering of Gymnasium's MuJoCo envs, and the
``"wbsim:wbsim/G1Stand-v0"`` form for processes that have not imported wbsim."""

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import wbsim
from wbsim.envs import ENV_IDS, RESET_NOISE_SCALE, make, make_humanoid
from wbsim.errors import WbsimError


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_spec_time_limit_is_the_env_s_own(env_id):
    env = gym.make(env_id)
    base = env.unwrapped
    assert env.spec.max_episode_steps == round(base.max_seconds / base.dt)
    # the ids' time limits, written out: 10 s unless the id says otherwise, 2 ms steps
    seconds = {"wbsim/G1OneLeg-v0": 7.5, "wbsim/G1HandWall-v0": 8.5, "wbsim/G1PlanReplay-v0": 6.0}
    assert env.spec.max_episode_steps == round(seconds.get(env_id, 10.0) * 500)
    assert env.spec.kwargs["reset_noise_scale"] == RESET_NOISE_SCALE == 0.02
    env.close()


def test_make_matches_the_step_limit_to_max_seconds_and_frame_skip():
    assert make("wbsim/G1Stand-v0", max_seconds=20, frame_skip=4).spec.max_episode_steps == 2500
    assert make("wbsim/G1OneLeg-v0", frame_skip=4).spec.max_episode_steps == 938  # 7.5 s / 8 ms
    assert (
        make("wbsim/G1Stand-v0", max_seconds=20, max_episode_steps=7).spec.max_episode_steps == 7
    )  # as asked
    env = make("wbsim/G1Stand-v0", max_seconds=0.02, frame_skip=2, action_mode="residual")
    env.reset(seed=0)
    zero = np.zeros(env.action_space.shape, np.float32)
    flags = [env.step(zero)[3] for _ in range(5)]
    assert flags == [False] * 4 + [True]  # the env's own limit and the TimeLimit agree
    with pytest.raises(WbsimError, match="frame_skip must be an integer >= 1"):
        make("wbsim/G1Stand-v0", frame_skip=0)


def test_seeds_start_from_different_states_and_repeat():
    env = gym.make("wbsim/G1Stand-v0")
    base = env.unwrapped
    starts = {}
    for seed in (0, 1, 0):
        env.reset(seed=seed)
        q = base.robot_state().q[base.robot.converter.pin_qidx]
        starts.setdefault(seed, []).append(q)
    assert np.array_equal(starts[0][0], starts[0][1])
    assert not np.allclose(starts[0][0], starts[1][0])
    pose = base.robot.pose_q("stand")[base.robot.converter.pin_qidx]
    for q in (starts[0][0], starts[1][0]):
        assert 0.005 < np.abs(q - pose).max() <= RESET_NOISE_SCALE + 1e-9
    env.close()


def test_wbsim_run_s_env_starts_from_the_exact_pose():
    """make_humanoid (what wbsim run drives) keeps the class's default, no noise: a controller's
    run starts from the robot's pose whatever the seed."""
    env = make_humanoid("wbsim/G1Stand-v0")
    idx = env.robot.converter.pin_qidx
    env.reset(seed=3)
    assert np.array_equal(env.robot_state().q[idx], env.robot.pose_q("stand")[idx])


def _frame(**kwargs):
    env = gym.make(
        "wbsim/G1Stand-v0",
        render_mode=kwargs.pop("render_mode", "rgb_array"),
        width=64,
        height=48,
        **kwargs,
    )
    env.reset(seed=0)
    frame = env.render()
    env.close()
    return frame


def test_cameras_by_name_and_id_as_in_gymnasium():
    free, front, side = _frame(), _frame(camera_name="front"), _frame(camera_name="side")
    assert free.shape == front.shape == (48, 64, 3)
    assert not np.array_equal(free, front) and not np.array_equal(front, side)
    assert np.array_equal(_frame(camera_id=0), front)
    assert np.array_equal(_frame(camera_id=1), side)
    assert np.array_equal(_frame(camera_id=-1), free)


def test_default_camera_config_moves_the_free_camera():
    free = _frame()
    far = _frame(default_camera_config={"distance": 8.0})
    assert not np.array_equal(free, far)
    robot = np.abs(free.astype(int) - _frame(default_camera_config={"distance": 50.0})).sum(2) > 0
    assert robot.any()  # at 50 m the robot is a few pixels: frames differ where it stood
    assert np.array_equal(
        _frame(default_camera_config={"azimuth": 135.0, "elevation": -15.0}), free
    )  # the defaults


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"camera_name": "front", "camera_id": 0}, "cannot both be given"),
        ({"camera_name": "top"}, "unknown camera_name 'top'; known: track, front, side"),
        ({"camera_id": 2}, r"camera_id must be -1 \(the free camera\) or the id"),
        ({"camera_id": "0"}, "camera_id must be"),
        ({"default_camera_config": {"lookat": [0, 0, 1]}}, "unknown default_camera_config key"),
        ({"default_camera_config": {"trackbodyid": 10_000}}, r"must be a body id in 0\.\."),
        ({"default_camera_config": {"distance": "far"}}, "must be a number"),
        ({"default_camera_config": {"distance": -8}}, r"\['distance'\] must be > 0 m, got -8"),
        ({"default_camera_config": {"distance": 0}}, r"must be > 0 m, got 0"),
        ({"default_camera_config": {"elevation": 500}}, r"must be in -90\.\.90 deg, got 500"),
        ({"default_camera_config": 3.0}, "must be a mapping"),
        ({"render_mode": "rgb_array", "width": 4000}, "frame size 4000x480"),
        ({"render_mode": "depth_array", "height": 2000}, "frame size 640x2000"),
    ],
)
def test_bad_camera_options_are_refused_when_the_env_is_made(kwargs, message):
    with pytest.raises(WbsimError, match=message):
        gym.make("wbsim/G1Stand-v0", **kwargs)


def test_depth_array_is_metres_from_the_camera():
    depth = _frame(render_mode="depth_array")
    assert depth.shape == (48, 64) and depth.dtype == np.float32 and np.all(np.isfinite(depth))
    robot = depth[10:38, 28:36]  # the robot fills the centre of the free camera's frame
    assert 1.5 < robot.min() < 3.5  # m: the camera stands 3.3 base heights (2.6 m) away
    assert depth[0, 0] > 10 * robot.min()  # the sky above the horizon is far
    assert depth[-1].max() < depth[0].max()  # the floor at the bottom is nearer than the sky


def test_module_prefixed_id_registers_wbsim_in_a_fresh_process():
    """What a worker process (spawned vector env, Ray, RLlib) does: it has never imported wbsim."""
    code = (
        "import sys, gymnasium as gym\n"
        "assert 'wbsim' not in sys.modules\n"
        "env = gym.make('wbsim:wbsim/G1Stand-v0', frame_skip=10)\n"
        "obs, _ = env.reset(seed=0)\n"
        "print(env.spec.id, env.spec.max_episode_steps, obs.shape[0])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "MUJOCO_GL": "egl"},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        "wbsim/G1Stand-v0",
        "5000",
        str(1 + 4 + 6 + 2 * 29 + 3 + 2 + 2 + 1),
    ]
    assert wbsim  # (this process imported it; the child above had not)


def test_render_without_a_render_mode_warns():
    """As Gymnasium's MuJoCo envs: ``render()`` of an env made without ``render_mode`` returns
    None with a warning naming the option, not silently."""
    env = gym.make("wbsim/G1Stand-v0")
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="without a render_mode returns nothing"):
        assert env.render() is None
    env.close()


@pytest.mark.parametrize("mode", ["rgb_array", "depth_array"])
def test_list_render_modes_collect_the_frames_as_in_gymnasium(mode):
    """``render_mode="rgb_array_list"`` (Gymnasium's ``RenderCollection``, which ``gymnasium.make``
    applies when the entry point lists the base mode) gives the frames of the reset and of each
    step; it was refused as an unknown render mode."""
    env = gym.make("wbsim/G1Stand-v0", render_mode=f"{mode}_list", width=64, height=48)
    env.reset(seed=0)
    for _ in range(2):
        env.step(np.zeros(29, np.float32))
    frames = env.render()
    assert len(frames) == 3
    assert frames[0].shape == ((48, 64, 3) if mode == "rgb_array" else (48, 64))
    assert env.render() == []  # Gymnasium's RenderCollection pops them
    env.close()
