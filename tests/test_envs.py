"""Every registered env is a well-behaved Gymnasium citizen."""

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import wbsim  # noqa: F401  (registers the envs)
from wbsim.envs import ENV_IDS
from wbsim.errors import UnknownNameError

MODES = ("torque", "joint_position", "residual")


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
@pytest.mark.parametrize("mode", MODES)
def test_check_env(env_id, mode):
    env = gym.make(env_id, action_mode=mode)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*infinity.*")  # unbounded Box, as Humanoid-v5
        warnings.filterwarnings("ignore", message=".*different from the unwrapped.*")  # residual
        check_env(env if mode == "residual" else env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs.dtype == np.float32 and env.observation_space.contains(obs)
    assert env.unwrapped.metadata["render_fps"] == round(1 / env.unwrapped.dt)
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
    envs = gym.make_vec("wbsim/G1Stand-v0", num_envs=2, vectorization_mode="async",
                        vector_kwargs={"context": context})
    envs.reset(seed=0)
    for _ in range(1000):
        obs, rew, term, trunc, _ = envs.step(np.zeros((2, 29), np.float32))
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
    # out of range is clipped: 5.0 acts as 1.0
    e1, e2 = gym.make("wbsim/G1Stand-v0").unwrapped, gym.make("wbsim/G1Stand-v0").unwrapped
    e1.reset(seed=0)
    e2.reset(seed=0)
    big, one = np.zeros(29), np.zeros(29)
    big[0], one[0] = 5.0, 1.0
    assert np.array_equal(e1.step(big)[0], e2.step(one)[0])


def test_unknown_names():
    from wbsim.envs import make

    with pytest.raises(UnknownNameError, match="wbsim/G1Stand-v0"):
        make("wbsim/G1Sit-v0")
    with pytest.raises(wbsim.WbsimError, match="action_mode"):
        gym.make("wbsim/G1Stand-v0", action_mode="velocity")


def test_human_render_without_display_says_how(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    env = gym.make("wbsim/G1Stand-v0", render_mode="human")
    env.reset(seed=0)
    with pytest.raises(wbsim.WbsimError, match="xvfb-run"):
        env.render()
