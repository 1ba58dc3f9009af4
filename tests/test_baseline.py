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


def test_episodes_the_loop_stopped_are_counted_and_named(tmp_path, monkeypatch, capsys):
    """A controller that returns NaN in the second episode: that episode is no success and no
    fall; the JSON counts it under ``stopped`` with its status and reason, and ``wbsim baseline``
    says which seed stopped and why (it said "success rate 0.50 (fell 0)", and nothing else)."""
    import dataclasses
    import json

    import numpy as np

    from wbsim.cli import main
    from wbsim.controllers import controller_class

    cls = controller_class("gravity_qp")
    compute = cls.compute

    def nan_in_the_second_episode(self, state, schedule):
        cmd = compute(self, state, schedule)
        if self.seed_marker and state.t >= 0.1:
            tau = cmd.tau.copy()
            tau[0] = np.nan
            return dataclasses.replace(cmd, tau=tau)
        return cmd

    reset, resets = cls.reset, []

    def reset_and_count(self, state):
        resets.append(1)
        self.seed_marker = len(resets) == 2
        return reset(self, state)

    monkeypatch.setattr(cls, "compute", nan_in_the_second_episode)
    monkeypatch.setattr(cls, "reset", reset_and_count)
    path = tmp_path / "b.json"
    args = ["baseline", "--episodes", "2", "--seconds", "0.2", "--no-progress"]
    assert main([*args, "--json", str(path)]) == 0
    out = json.loads(path.read_text())
    assert out["success_rate"] == 0.5 and out["fell"] == 0 and out["stopped"] == 1
    first, second = out["per_episode"]
    assert first["status"] == "completed" and "stopped_reason" not in first
    reason = (
        "controller returned a non-finite torque at step 50 (t = 0.100 s) on left_hip_pitch_joint"
    )
    assert second["status"] == "stopped" and second["stopped_reason"] == reason
    assert f"success rate  0.50  (fell 0, stopped 1; seed 1: {reason})" in capsys.readouterr().out


def test_compare_prints_the_readme_table_rows_of_the_shipped_baselines(
    tmp_path, capsys, monkeypatch
):
    """``wbsim baseline --compare`` puts a user's JSON beside the shipped ones in the README's
    table form, without running an episode: the shipped rows come out as the README prints them;
    a stopped episode shows under success; rows measured differently get a note; a file that is
    not a baseline JSON is a one-line error naming it."""
    import json
    from pathlib import Path

    from wbsim import baseline
    from wbsim.cli import main

    root = Path(__file__).resolve().parents[1]
    shipped = [root / "docs" / "baselines" / f"G1Stand-v0_{c}.json" for c in ("gravity_qp", "zero")]
    mine = json.loads(shipped[0].read_text())
    mine.update(
        controller="my_controllers:PostureGravityPD",
        controller_options={"kp": 800},
        episodes=4,
        seconds=3.0,
        success_rate=0.75,
        stopped=1,
    )
    (tmp_path / "mine.json").write_text(json.dumps(mine))

    def no_episodes(*args, **kwargs):
        raise AssertionError("--compare ran episodes")

    monkeypatch.setattr(baseline, "run_baseline", no_episodes)
    assert main(["baseline", "--compare", *map(str, shipped), str(tmp_path / "mine.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    readme = (root / "README.md").read_text().splitlines()
    assert lines[0].startswith("| env | controller | episodes | return (mean ± std) | success")
    assert lines[2] in readme and lines[2].startswith("| G1Stand-v0 | `gravity_qp` | 20 x 10 s")
    assert lines[3] in readme and lines[3].startswith("| G1Stand-v0 | `zero` |")
    assert lines[4].startswith(
        "| G1Stand-v0 | `my_controllers:PostureGravityPD` (kp=800) | 4 x 3 s | 4997.3 ± 1.8 | "
        "75 % (1 stopped) |"
    )
    assert lines[5:] == [
        (
            "note: the rows differ in episode lengths (s): returns, lengths and event counts grow "
            "with them: 3.0, 10.0"
        ),
        (
            "note: the rows differ in episode counts: mode switches and events are sums over a "
            "row's episodes: 4, 20"
        ),
    ]
    (tmp_path / "summary.json").write_text(json.dumps({"env": "wbsim/G1Stand-v0"}))
    for bad, why in (("summary.json", "is not a baseline JSON"), ("none.json", "not found")):
        assert main(["baseline", "--compare", str(tmp_path / bad)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and bad in err and why in err, err


def test_a_ctrl_c_with_workers_keeps_the_ray_tasks_finished(tmp_path, monkeypatch, capsys):
    """Ctrl-C while the episodes run as Ray tasks: the episodes whose task had finished (here
    seeds 0 and 2, as Ray finishes them out of order) are written, in seed order, marked
    ``interrupted`` with their seeds (they were all lost: only the sequential run kept them)."""
    import json

    from wbsim import baseline, scaleout
    from wbsim.cli import main

    def interrupted_map(fn, calls, workers, address, progress):
        exc = KeyboardInterrupt()
        exc.done = {2: fn(**calls[2]), 0: fn(**calls[0])}
        raise exc

    monkeypatch.setattr(scaleout, "map_calls", interrupted_map)
    out = tmp_path / "b.json"
    args = ["baseline", "--controller", "zero", "--episodes", "5", "--seconds", "0.05"]
    assert main([*args, "--workers", "2", "--json", str(out), "--no-progress"]) == 130
    assert "interrupted (Ctrl-C)" in capsys.readouterr().err
    kept = json.loads(out.read_text())
    assert kept["episodes"] == 2 and [p["seed"] for p in kept["per_episode"]] == [0, 2]
    assert kept["interrupted"] == "Ctrl-C after 2 of 5 episodes (seeds 0, 2)"
    from wbsim.rollout import EpisodeConfig

    assert kept["per_episode"][0] == baseline._episode(
        EpisodeConfig(
            controller="zero",
            seconds=0.05,
            seed=0,
            env_options={"reset_noise_scale": 0.02},
            progress=False,
        )
    )
