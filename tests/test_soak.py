"""The short soak of CI: every registered env with every controller and action mode (random and
zero actions, joint noise at reset, the envs' pushes) once, 0.3 s each: no crash, no NaN, every
status true and every log loads (``wbsim soak --episodes 1000`` is the long one)."""

import pytest

from wbsim.envs import ENV_IDS
from wbsim.soak import KINDS, run_soak


@pytest.mark.slow
def test_every_env_kind_runs_clean(tmp_path):
    n = len(ENV_IDS) * len(KINDS)
    report = run_soak(n, seconds=0.3, json_path=tmp_path / "soak.json", progress=False)
    assert report["episodes"] == n and len(report["per_env_kind"]) == n
    assert report["crashes"] == [] and report["nan_logs"] == [] and report["bad"] == []
    assert set(report["statuses"]) <= {"completed", "fell", "error", "stopped"}
    assert (tmp_path / "soak.json").exists()


def test_a_crash_and_a_nan_are_reported(monkeypatch):
    """The soak reports what it looks for: an exception in an episode is a crash with its seed, a
    NaN in a log column is a NaN log (the run goes on)."""
    import numpy as np

    import wbsim.episode_log as L
    import wbsim.soak as S

    def crash(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(S, "_env_episode", crash)
    steps = L.StepTable.rows

    def nan_rows(self, *args):
        rows = steps(self, *args)
        rows[:, self.columns.index("base_z")] = np.nan
        return rows

    monkeypatch.setattr(L.StepTable, "rows", nan_rows)
    n = len(ENV_IDS)
    report = run_soak(n * len(KINDS), seconds=0.05, seed=7, progress=False)  # one cycle
    env_kinds = sum(k[0] == "env" for k in KINDS)
    labels = {f"{e} {' '.join(k[1:])}" for e in ENV_IDS for k in KINDS if k[0] == "env"}
    assert len(report["crashes"]) == env_kinds * n
    assert {c["what"] for c in report["crashes"]} == labels  # each env episode, once
    assert all("boom" in c["error"] and c["seed"] == 7 + c["episode"] for c in report["crashes"])
    assert len(report["nan_logs"]) == (len(KINDS) - env_kinds) * n
    assert "base_z" in report["nan_logs"][0]["problem"]


def _recorded(monkeypatch):
    """Episodes replaced by a recorder of what they would run (no simulation)."""
    import wbsim.soak as S

    ran = []

    def controller(env_id, name, seconds, seed, noise, log):
        ran.append((env_id, ("controller", name), seed))
        return "completed", []

    def env(env_id, mode, actions, seconds, seed, noise):
        ran.append((env_id, ("env", mode, actions), seed))
        return "completed", []

    monkeypatch.setattr(S, "_controller_episode", controller)
    monkeypatch.setattr(S, "_env_episode", env)
    return ran


def test_the_seed_changes_the_picks_and_a_cycle_covers_every_pair(monkeypatch):
    ran = _recorded(monkeypatch)
    cycle = len(ENV_IDS) * len(KINDS)
    run_soak(5, seconds=0.1, seed=1, progress=False)
    first, ran[:] = list(ran), []
    run_soak(5, seconds=0.1, seed=2, progress=False)
    second, ran[:] = list(ran), []
    run_soak(5, seconds=0.1, seed=1, progress=False)
    assert [r[:2] for r in first] != [r[:2] for r in second]  # another seed, other pairs
    assert ran == first  # the same seed, the same episodes
    assert [r[2] for r in second] == [2, 3, 4, 5, 6]
    ran[:] = []
    run_soak(cycle + 3, seconds=0.1, seed=3, progress=False)
    pairs = {(e, k) for e in ENV_IDS for k in KINDS}
    assert {r[:2] for r in ran[:cycle]} == pairs and len(ran) == cycle + 3


def test_soak_refuses_an_existing_json_before_any_episode(tmp_path, monkeypatch, capsys):
    from wbsim.cli import main

    ran = _recorded(monkeypatch)
    path = tmp_path / "soak.json"
    path.write_text("{}")
    assert main(["soak", "--episodes", "1", "--json", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "--overwrite" in err
    assert ran == [] and path.read_text() == "{}"  # no work, nothing replaced
    args = ["soak", "--episodes", "1", "--json", str(path), "--no-progress", "--overwrite"]
    assert main(args) == 0
    assert "wbsim soak: 1 episode in" in capsys.readouterr().out
    assert len(ran) == 1 and '"episodes": 1' in path.read_text()


def test_soak_options_have_help():
    from wbsim.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    helps = {a.dest: a.help for a in sub.choices["soak"]._actions}
    assert "episodes" in helps["episodes"] and "order" in helps["seed"]
