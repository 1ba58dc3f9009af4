"""Baselines: the model-based controllers keep the G1 up on G1Stand-v0 under seeded reset noise; zero
torque lets it fall every time. (The README's table has the 20-episode figures; this is the same
measurement, shorter.)"""

import pytest

from wbsim.baseline import run_baseline


@pytest.mark.slow
@pytest.mark.parametrize("controller", ["gravity_qp", "projected_id"])
def test_model_based_controllers_survive(controller):
    out = run_baseline("wbsim/G1Stand-v0", controller, episodes=3, seconds=2.0, progress=False)
    assert out["success_rate"] == 1.0 and out["fell"] == 0
    assert out["length_mean"] == pytest.approx(1000)


def test_zero_torque_falls_every_time():
    out = run_baseline("wbsim/G1Stand-v0", "zero", episodes=3, seconds=2.0, progress=False)
    assert out["success_rate"] == 0.0 and out["fell"] == 3
    assert out["return_std"] > 0  # seeded noise: the episodes differ


def test_a_ctrl_c_keeps_the_episodes_already_run(tmp_path, monkeypatch, capsys):
    """Ctrl-C in the third episode: the JSON holds the first two, marked ``interrupted``, and
    ``wbsim baseline`` ends with one line and status 130."""
    import json

    from wbsim import baseline
    from wbsim.cli import main

    real, calls = baseline._episode, []

    def episode(cfg):
        calls.append(cfg.seed)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(cfg)

    monkeypatch.setattr(baseline, "_episode", episode)
    out = tmp_path / "b.json"
    args = ["baseline", "--controller", "zero", "--episodes", "5", "--seconds", "0.05"]
    assert main([*args, "--json", str(out), "--no-progress"]) == 130
    assert "interrupted (Ctrl-C)" in capsys.readouterr().err
    kept = json.loads(out.read_text())
    assert kept["episodes"] == 2 and [p["seed"] for p in kept["per_episode"]] == [0, 1]
    assert kept["interrupted"] == "Ctrl-C after 2 of 5 episodes"
