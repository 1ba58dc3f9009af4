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
    report = run_soak(n * 5, seconds=0.05, seed=7, progress=False)  # controllers, then env ones
    assert [c["episode"] for c in report["crashes"]] == list(range(4 * n, 5 * n))
    assert "boom" in report["crashes"][0]["error"] and report["crashes"][0]["seed"] == 7 + 4 * n
    assert len(report["nan_logs"]) == 4 * n and "base_z" in report["nan_logs"][0]["problem"]
