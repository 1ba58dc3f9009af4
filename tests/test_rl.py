"""RL: stable-baselines3 accepts every env and action mode; the PPO example trains 2048 steps, saves a
policy that reloads, and records a video."""

import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import wbsim  # noqa: F401
from wbsim.envs import ENV_IDS

sb3 = pytest.importorskip("stable_baselines3", reason="the [rl] extra is not installed")


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
@pytest.mark.parametrize("mode", ["torque", "joint_position", "residual"])
def test_sb3_check_env(env_id, mode):
    from stable_baselines3.common.env_checker import check_env

    env = gym.make(env_id, action_mode=mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env, warn=False)
    env.close()


@pytest.mark.slow
def test_ppo_example_trains_saves_and_reloads(tmp_path):
    from stable_baselines3 import PPO

    from wbsim.examples.train_ppo import train

    out = train(steps=2048, out=tmp_path, video_seconds=0.5, n_steps=1024)
    model = PPO.load(out / "model.zip", device="cpu")
    env = gym.make("wbsim/G1Stand-v0", action_mode="residual", residual_scale=0.05)
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, deterministic=True)
    assert action.shape == (29,) and np.all(np.isfinite(action))
    import imageio.v2 as imageio

    frames = [f for f in imageio.get_reader(str(out / "policy.mp4"))]
    assert len(frames) == 15 and frames[0].mean() > 20  # 0.5 s at 30 fps, by simulated time
    # a second run into the same folder is refused before training, as are 0 steps
    from wbsim.errors import WbsimError

    with pytest.raises(WbsimError, match="model.zip exists"):
        train(steps=64, out=tmp_path)
    with pytest.raises(WbsimError, match="steps must be"):
        train(steps=0, out=tmp_path / "new")


def test_ppo_example_splits_a_short_rollout_into_whole_minibatches(tmp_path):
    """``--steps 100``: a rollout of 100 steps in mini-batches of 64 left one of 36 every epoch,
    and stable-baselines3 warned so. The mini-batch divides the rollout; at the default 1024 steps
    it stays 64."""
    from wbsim.examples.train_ppo import minibatch_size, train

    assert minibatch_size(1024) == 64 and minibatch_size(100) == 50
    for rollout in range(2, 1025):
        size = minibatch_size(rollout)
        assert 1 < size <= rollout and rollout % size == 0, rollout
        if rollout % 64 == 0:
            assert size == 64, rollout
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(steps=100, out=tmp_path, video_seconds=0.02)
    said = [str(w.message) for w in caught if "mini-batch" in str(w.message)]
    assert not said, said


def test_ppo_example_refuses_one_step_before_training(tmp_path):
    """``--steps 1`` passed the example's check (>= 1), built the env, then failed inside
    stable-baselines3 with an AssertionError traceback (its rollout buffer needs 2 steps)."""
    from wbsim.errors import WbsimError
    from wbsim.examples.train_ppo import main, train

    with pytest.raises(WbsimError, match=r"steps must be an integer >= 2.*got 1"):
        train(steps=1, out=tmp_path / "one")
    with pytest.raises(SystemExit) as exit_:
        main(["--steps", "1", "--out", str(tmp_path / "one")])
    assert exit_.value.code == 2 and not (tmp_path / "one").exists()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_steps": 1}, r"n_steps must be an integer >= 2.*got 1"),
        ({"n_steps": 64.0}, r"n_steps must be an integer >= 2.*got 64\.0"),
        ({"seed": -1}, r"seed must be an integer from 0 to 2\*\*32 - 1.*got -1"),
        ({"seed": 2**32}, r"seed must be an integer from 0 .*got 4294967296"),
        ({"video_seconds": float("nan")}, r"video_seconds must be a finite number > 0.*nan"),
        ({"video_seconds": 0}, r"video_seconds must be a finite number > 0.*got 0"),
    ],
)
def test_ppo_example_checks_train_s_arguments_before_training(tmp_path, kwargs, message):
    """``train(n_steps=1)`` (the Python API; the command line has no such option) built the env
    and failed inside stable-baselines3 with an AssertionError (its mini-batch needs 2 steps);
    a negative seed failed in NumPy's seeding, a NaN ``video_seconds`` after the training. Each
    is refused before anything is made."""
    from wbsim.errors import WbsimError
    from wbsim.examples.train_ppo import train

    with pytest.raises(WbsimError, match=message):
        train(steps=64, out=tmp_path / "bad", **kwargs)
    assert not (tmp_path / "bad").exists()


def test_ppo_example_s_command_line_refuses_a_negative_seed(tmp_path, capsys):
    """``--seed -1`` ended in NumPy's ValueError traceback; now one line and status 2."""
    from wbsim.examples.train_ppo import main

    with pytest.raises(SystemExit) as exit_:
        main(["--seed", "-1", "--out", str(tmp_path / "bad")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith("train_ppo: error: seed must be"), err


def test_ppo_example_s_ctrl_c_says_in_one_line_what_was_saved(tmp_path, monkeypatch, capsys):
    """A Ctrl-C while PPO learns, or while the video is recorded, ended in a traceback from
    stable-baselines3 or the renderer; now one line saying what was saved, status 130."""
    from wbsim import render
    from wbsim.examples.train_ppo import main

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    args = ["--steps", "64", "--no-progress"]
    monkeypatch.setattr(sb3.PPO, "learn", ctrl_c)
    assert main([*args, "--out", str(tmp_path / "learning")]) == 130
    err = capsys.readouterr().err
    assert err == "train_ppo: interrupted (Ctrl-C); nothing was saved\n", err
    assert not (tmp_path / "learning").exists()
    monkeypatch.undo()

    append = render.VideoWriter.append

    def ctrl_c_at_the_third_frame(self, frame):
        if self.n_frames == 2:
            raise KeyboardInterrupt
        append(self, frame)

    monkeypatch.setattr(render.VideoWriter, "append", ctrl_c_at_the_third_frame)
    out = tmp_path / "recording"
    assert main([*args, "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert err == (
        f"train_ppo: interrupted (Ctrl-C); saved {out / 'model.zip'} and the video up to the "
        f"Ctrl-C, {out / 'policy.mp4'}\n"
    ), err
    assert sb3.PPO.load(out / "model.zip") is not None
    assert (out / "policy.mp4").stat().st_size > 0  # the writer closed it: two frames


def test_ppo_example_usage_keeps_its_line_continuations(capsys):
    """The docstring's two-line example ends its first line with a backslash: in a plain
    docstring Python read it as a line continuation, so ``help()`` showed one long line with the
    backslash gone. ``--help`` shows the examples as written."""
    from wbsim.examples import train_ppo

    example = "--controller projected_id \\\n        --steps 200000 --out runs/ppo_g1_walk"
    assert example in train_ppo.__doc__
    with pytest.raises(SystemExit) as exit_:
        train_ppo.main(["--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and example in out, out


def test_ppo_example_takes_the_env_and_the_controller(monkeypatch, capsys):
    """``--env`` and ``--controller`` reach ``train`` (G1Walk-v0 needs projected_id in the loop);
    unknown names fail before training with the known ones listed."""
    from wbsim.examples import train_ppo

    seen = {}

    def fake_train(steps, out, seed, **kw):
        seen.update(kw, steps=steps)
        return Path(out)

    monkeypatch.setattr(train_ppo, "train", fake_train)
    assert (
        train_ppo.main(
            ["--env", "wbsim/G1Walk-v0", "--controller", "projected_id", "--steps", "16"]
        )
        == 0
    )
    assert seen["env_id"] == "wbsim/G1Walk-v0" and seen["controller"] == "projected_id"
    assert seen["steps"] == 16
    monkeypatch.undo()
    from wbsim.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="G1Walk-v0"):
        train_ppo.train(steps=1, env_id="wbsim/G1Wlak-v0")
    with pytest.raises(UnknownNameError, match="projected_id"):
        train_ppo.train(steps=1, env_id="wbsim/G1Walk-v0", controller="projected")


@pytest.mark.slow
def test_ppo_example_trains_on_walking_in_residual_mode(tmp_path):
    """A few PPO updates on G1Walk-v0 with projected_id in the loop: the policy saves and acts."""
    from stable_baselines3 import PPO

    from wbsim.examples.train_ppo import train

    out = train(
        steps=256,
        out=tmp_path,
        env_id="wbsim/G1Walk-v0",
        controller="projected_id",
        video_seconds=0.2,
        n_steps=128,
    )
    model = PPO.load(out / "model.zip", device="cpu")
    env = gym.make("wbsim/G1Walk-v0", action_mode="residual", controller="projected_id")
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, deterministic=True)
    assert action.shape == (29,) and np.all(np.isfinite(action))
    env.close()


def test_ppo_example_on_a_full_disk_keeps_the_old_model_and_says_one_line(tmp_path):
    """A file-size limit (as a full disk) hit when saving: one error line naming model.zip, no
    traceback, the previous model.zip (replaced with --overwrite) untouched, no temporary file;
    the progress lines came before."""
    import resource
    import subprocess
    import sys

    try:
        resource.getrlimit(resource.RLIMIT_FSIZE)
    except (AttributeError, ValueError):
        pytest.skip("no RLIMIT_FSIZE here")
    (tmp_path / "model.zip").write_bytes(b"the previous model")
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000)); "
        "from wbsim.examples.train_ppo import main; sys.exit(main(sys.argv[1:]))"
    )

    def train(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", code, "--steps", "64", *args],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )

    p = train("--out", str(tmp_path), "--overwrite")
    err = p.stderr.strip()
    assert p.returncode == 2 and err.count("\n") == 0, (p.returncode, err)
    assert "model.zip: could not be written (File too large)" in err
    assert (tmp_path / "model.zip").read_bytes() == b"the previous model"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["model.zip"]
    assert "train_ppo: 64/64 steps" in p.stdout
    # into folders of its own: the folders it made are not left behind, empty
    fresh = tmp_path / "fresh" / "run"
    p = train("--out", str(fresh), "--no-progress")
    assert p.returncode == 2 and "could not be written (File too large)" in p.stderr, p.stderr
    assert not (tmp_path / "fresh").exists()


def test_ppo_example_checks_its_options_before_creating_the_folder(tmp_path, capsys):
    from wbsim.examples import train_ppo

    out = tmp_path / "new"
    with pytest.raises(SystemExit) as exit_:
        train_ppo.main(["--residual-scale", "-1", "--out", str(out), "--steps", "64"])
    assert exit_.value.code == 2 and "residual_scale" in capsys.readouterr().err
    assert not out.exists()
