"""`wbsim report` on the folders a fresh user had: a cut or empty step table, a bad folder among
good ones, plots that cannot be written, event kinds without a column, a killed run."""

import json
import os

import numpy as np
import pytest

from wbsim.cli import main
from wbsim.episode_log import EpisodeLog


def _log(
    run_dir,
    rows=10,
    summary=True,
    events=None,
    cols=("t", "com_x", "com_y", "com_z", "com_ref_x", "com_ref_y", "com_ref_z"),
):
    """A small run folder written by :class:`EpisodeLog` (no simulation): ``rows`` steps of 2 ms
    and, with ``summary``, a summary as ``wbsim run`` writes it (``logged_rows`` = ``rows``)."""
    events = events or {}
    with EpisodeLog(run_dir, cols, {"t": "s"}, {"env": "E", "controller": "C"}) as log:
        t = 0.002 * np.arange(rows)
        log.add_rows(np.column_stack([t, *[np.sin(t + k) for k in range(len(cols) - 1)]]))
        for kind, n in events.items():
            for _ in range(n):
                log.add_event({"kind": kind, "t": 0.0, "step": 0})
        if summary:
            log.write_summary(
                {
                    "env": "E",
                    "controller": "C",
                    "seconds": 0.002 * rows,
                    "events": events,
                    "fell": "fall" in events,
                    "status": "fell" if "fall" in events else "completed",
                    "logged_rows": rows,
                }
            )
    return run_dir


def _table(out):
    lines = [line for line in out.splitlines() if line.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip() for c in line.strip("|").split("|")))) for line in lines[2:]]


def test_a_cut_or_empty_step_table_is_named_in_the_row_and_on_stderr(tmp_path, capsys):
    cut, empty = _log(tmp_path / "cut", rows=100), _log(tmp_path / "empty", rows=100)
    whole = _log(tmp_path / "whole", rows=100)
    none = _log(tmp_path / "none", rows=0)  # stopped before its first step: nothing is missing
    killed = _log(tmp_path / "killed", rows=0, summary=False)
    os.truncate(cut / "steps.f64", 8 * 7 * 40 + 3)  # 40 rows and part of one, as truncate -s
    os.truncate(empty / "steps.f64", 0)
    dirs = [str(d) for d in (cut, empty, whole, none, killed)]
    assert main(["report", *dirs]) == 0
    out, err = capsys.readouterr()
    rows = {r["run"]: r for r in _table(out)}
    assert rows["cut"]["status"] == "completed; table cut: 40 of 100 rows"
    assert rows["empty"]["status"] == "completed; table cut: 0 of 100 rows"
    assert rows["whole"]["status"] == "completed"
    assert rows["none"]["status"] == "completed; no step logged"
    assert rows["killed"]["status"] == "no summary (killed?); table empty"
    assert f"{cut / 'steps.f64'}: table cut: 40 of 100 rows" in err
    assert f"{empty / 'steps.f64'}: table cut: 0 of 100 rows" in err
    assert f"{killed / 'steps.f64'}: table empty;" in err
    assert len(err.strip().splitlines()) == 3, err  # none for whole and none
    assert "No artists" not in err  # no matplotlib legend note
    assert (empty / "overview.png").stat().st_size > 0


def test_one_bad_folder_does_not_stop_the_others(tmp_path, capsys):
    """GOOD BAD GOOD, and a folder of runs holding a PPO output: every good run is reported and
    plotted, each bad folder named with its reason on stderr, exit status 2 at the end."""
    good1, good2 = _log(tmp_path / "runs" / "g1"), _log(tmp_path / "runs" / "g2")
    ppo = tmp_path / "runs" / "ppo"
    ppo.mkdir()
    (ppo / "model.zip").write_bytes(b"PK")
    missing = tmp_path / "nope"
    assert main(["report", str(good1), str(missing), str(good2), str(ppo)]) == 2
    out, err = capsys.readouterr()
    assert [r["run"] for r in _table(out)] == ["g1", "g2"]
    assert (good2 / "overview.png").is_file() and f"plot: {good2 / 'overview.png'}" in out
    errors = err.strip().splitlines()
    assert len(errors) == 2, err
    assert errors[0].count(str(missing)) == 1 and "does not exist" in errors[0]
    assert errors[1].count(str(ppo)) == 1 and "not a wbsim run folder" in errors[1]
    # runs/: the runs in it; the PPO folder is not a run and is left out
    assert main(["report", str(tmp_path / "runs")]) == 0
    assert [r["run"] for r in _table(capsys.readouterr().out)] == ["g1", "g2"]


def test_plots_that_cannot_be_written_are_named_once_after_the_table(tmp_path, capsys):
    """A run folder where the plots cannot be written (here a folder in the way of the PNG; a
    read-only folder fails alike): the table is printed, the failure named once for that run,
    status 2; ``--plots DIR`` writes them elsewhere."""
    blocked, fine = _log(tmp_path / "blocked"), _log(tmp_path / "fine")
    (blocked / "normal_forces.png").mkdir()
    assert main(["report", str(blocked), str(fine)]) == 2
    out, err = capsys.readouterr()
    assert [r["run"] for r in _table(out)] == ["blocked", "fine"]
    (line,) = err.strip().splitlines()
    assert str(blocked) in line and "plots not written" in line and "--plots DIR" in line
    assert (fine / "overview.png").is_file()
    assert main(["report", str(blocked), "--plots", str(tmp_path / "plots")]) == 0
    assert (tmp_path / "plots" / "blocked" / "overview.png").is_file()
    assert (tmp_path / "plots" / "blocked" / "normal_forces.png").is_file()
    assert main(["report", "--html", str(blocked), "--plots", str(tmp_path / "p2")]) == 0
    assert (tmp_path / "p2" / "blocked" / "report.html").is_file()


def test_every_event_kind_is_shown_and_a_killed_run_logged_no_fall(tmp_path, capsys):
    events = {"mode_switch": 2, "fall": 1, "simulator_warning": 3, "force_sign": 1}
    fell = _log(tmp_path / "fell", events=events)
    killed = _log(tmp_path / "killed", summary=False, events={"invalid_command": 2})
    quiet = _log(tmp_path / "quiet")
    assert main(["report", str(fell), str(killed), str(quiet)]) == 0
    rows = {r["run"]: r for r in _table(capsys.readouterr().out)}
    assert rows["fell"]["other events"] == "fall=1 simulator_warning=3"
    assert (rows["fell"]["switch"], rows["fell"]["f<0"], rows["fell"]["fell"]) == ("2", "1", "yes")
    assert rows["killed"]["other events"] == "invalid_command=2"
    assert rows["killed"]["fell"] == "? (killed)" and rows["quiet"]["fell"] == "no"
    assert rows["quiet"]["other events"] == "none"
    page = main(["report", "--html", str(killed)])
    assert page == 0
    assert "no fall logged before it was killed" in (killed / "report.html").read_text()


def test_a_garbage_event_line_is_a_note_naming_the_file_and_line(tmp_path, capsys):
    run = _log(tmp_path / "run", events={"fall": 2})
    lines = (run / "events.jsonl").read_text().splitlines()
    (run / "events.jsonl").write_text("\n".join([lines[0], "not json", lines[1]]) + "\n")
    assert main(["report", str(run)]) == 0
    err = capsys.readouterr().err
    assert f"{run / 'events.jsonl'}: line 2 not a JSON event" in err


@pytest.mark.parametrize("flag", ["--plots"])
def test_report_refuses_an_empty_plots_path(tmp_path, capsys, flag):
    assert main(["report", str(_log(tmp_path / "run")), flag, ""]) == 2
    assert "empty path" in capsys.readouterr().err


def test_a_summary_without_logged_rows_is_not_called_cut(tmp_path):
    from wbsim.episode_log import load_run
    from wbsim.report import report_rows

    run = _log(tmp_path / "run")
    summary = json.loads((run / "summary.json").read_text())
    del summary["logged_rows"]  # an older log
    (run / "summary.json").write_text(json.dumps(summary))
    (row,) = report_rows([load_run(run)])
    assert row["table"] is None and row["rows"] == 10
