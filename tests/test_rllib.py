"""The RLlib PPO example (wbsim.examples.rllib_ppo): one training iteration on a local Ray of 2 CPUs,
the env registered through ``ray.tune.register_env`` and made as ``"wbsim:wbsim/G1Stand-v0"`` in the
env runner's process. RLlib pins its own Gymnasium (1.2.2 for Ray 2.60), so ``.ci/rllib`` runs this
file in a venv of its own; where RLlib is not installed it skips."""

import pytest

from wbsim.errors import WbsimError


def test_one_ppo_iteration_trains_and_saves(tmp_path, monkeypatch):
    pytest.importorskip("ray.rllib")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # Ray's token, not in the user's home
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


@pytest.mark.parametrize(
    "kwargs,message",
    [({"iterations": 0}, "iterations must be"), ({"env_runners": 1.5}, "env_runners must be")],
)
def test_bad_input_is_refused_before_ray_starts(kwargs, message):
    from wbsim.examples.rllib_ppo import train

    with pytest.raises(WbsimError, match=message):
        train(**kwargs)
