"""The RLlib PPO example (wbsim.examples.rllib_ppo): one training iteration on a local Ray of 2 CPUs,
the env registered through ``ray.tune.register_env`` and made as ``"wbsim:wbsim/G1Stand-v0"`` in the
env runner's process. RLlib pins its own Gymnasium (1.2.2 for Ray 2.60), so ``.ci/rllib`` runs this
file in a venv of its own; where RLlib is not installed it skips."""

import pytest

from wbsim.errors import WbsimError


@pytest.fixture(scope="module")
def ray_home(tmp_path_factory):
    """One HOME for this file's local Rays, not the user's: Ray reads its token
    (``~/.ray/auth_token``) once per process, and a second start under another HOME writes
    another token, with which its GCS does not come up (``Timed out waiting for file``)."""
    return tmp_path_factory.mktemp("home")


def test_one_ppo_iteration_trains_and_saves(tmp_path, monkeypatch, ray_home):
    pytest.importorskip("ray.rllib")
    monkeypatch.setenv("HOME", str(ray_home))
    import ray

    from wbsim.examples.rllib_ppo import train

    history = train(
        iterations=1,
        out=tmp_path / "algo",
        seconds=1.0,
        train_batch_size=200,
        minibatch_size=100,
        num_epochs=1,
    )
    assert [h["iteration"] for h in history] == [1]
    h = history[0]
    assert h["env_steps"] >= 200
    assert h["episode_len_mean"] == 50  # 1 s at 50 Hz: the QP keeps the robot up, no fall
    assert 40 < h["episode_return_mean"] <= 50  # alive 1 per step, small penalties
    assert any((tmp_path / "algo").iterdir())
    assert not ray.is_initialized()  # the local Ray started for the run was stopped


def test_a_ctrl_c_while_training_is_one_line_and_stops_ray(tmp_path, monkeypatch, capsys, ray_home):
    """A Ctrl-C in the second iteration ended in a traceback from RLlib; now one line saying
    after how many iterations and that nothing was saved, status 130, the local Ray stopped."""
    pytest.importorskip("ray.rllib")
    monkeypatch.setenv("HOME", str(ray_home))
    import ray
    from ray.rllib.algorithms.algorithm import Algorithm

    from wbsim.examples.rllib_ppo import main

    train = Algorithm.train

    def ctrl_c_in_the_second_iteration(self):
        if self.iteration >= 1:
            raise KeyboardInterrupt
        return train(self)

    monkeypatch.setattr(Algorithm, "train", ctrl_c_in_the_second_iteration)
    out = tmp_path / "algo"
    args = ["--iterations", "3", "--train-batch-size", "200", "--seconds", "1", "--out", str(out)]
    assert main(args) == 130
    err = capsys.readouterr().err
    assert err.endswith(
        "rllib_ppo: interrupted (Ctrl-C); after 1 of 3 iterations; nothing was saved\n"
    ), err
    assert not out.exists() and not ray.is_initialized()


@pytest.mark.parametrize(
    "kwargs,message",
    [({"iterations": 0}, "iterations must be"), ({"env_runners": 1.5}, "env_runners must be")],
)
def test_bad_input_is_refused_before_ray_starts(kwargs, message):
    from wbsim.examples.rllib_ppo import train

    with pytest.raises(WbsimError, match=message):
        train(**kwargs)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"train_batch_size": 0}, "train_batch_size must be"),
        ({"train_batch_size": 100}, r"minibatch_size \(250\) must not exceed"),
        ({"residual_scale": -1.0}, "residual_scale"),
        ({"seconds": 0.0}, "max_seconds"),
    ],
)
def test_bad_options_are_refused_before_ray_starts(kwargs, message, monkeypatch):
    """Options RLlib or the env would refuse inside a worker are refused here, before Ray starts
    (Ray's start is made to fail: reaching it fails the test)."""
    import wbsim.scaleout
    from wbsim.examples.rllib_ppo import train

    def no_ray(*a, **k):
        raise AssertionError("Ray started")

    monkeypatch.setattr(wbsim.scaleout, "start_ray", no_ray)
    with pytest.raises(WbsimError, match=message):
        train(**kwargs)


def test_a_non_empty_out_folder_needs_overwrite(tmp_path, monkeypatch):
    import wbsim.scaleout
    from wbsim.examples.rllib_ppo import train

    monkeypatch.setattr(wbsim.scaleout, "start_ray", lambda *a, **k: 1 / 0)
    (tmp_path / "algo").mkdir()
    (tmp_path / "algo" / "old").write_text("a previous checkpoint")
    with pytest.raises(WbsimError, match=r"algo is not empty; pick another --out, or --overwrite"):
        train(out=tmp_path / "algo")
    (tmp_path / "file").write_text("x")
    with pytest.raises(WbsimError, match=r"file: not a folder"):
        train(out=tmp_path / "file")
    assert (tmp_path / "algo" / "old").read_text() == "a previous checkpoint"


def test_rllib_missing_is_one_message(monkeypatch):
    """Ray without RLlib's dependencies (``ray.rllib`` fails to import): a WbsimError saying how to
    install it, before Ray starts."""
    import builtins

    import wbsim.scaleout
    from wbsim.examples.rllib_ppo import train

    real = builtins.__import__

    def no_rllib(name, *a, **k):
        if name.startswith("ray.rllib"):
            raise ModuleNotFoundError("No module named 'tree'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_rllib)
    monkeypatch.setattr(wbsim.scaleout, "start_ray", lambda *a, **k: 1 / 0)
    with pytest.raises(WbsimError, match=r"RLlib is not installed \(No module named 'tree'\)"):
        train()


def test_help_shows_the_usage_and_examples(capsys):
    """``--help`` showed only the docstring's first line; now also its examples, as
    ``train_ppo --help`` (each option with what it is)."""
    from wbsim.examples.rllib_ppo import main

    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert "examples:\n\n    python -m wbsim.examples.rllib_ppo --iterations 20 --out runs/" in out
    assert "--address auto --env-runners 8   # on a running cluster" in out
    assert "(``Algorithm.from_checkpoint``) if given" in out
    assert "PPO training iterations" in out
