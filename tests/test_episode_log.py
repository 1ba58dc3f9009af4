"""The episode folder: loads with numpy alone, survives exceptions and kill -INT."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from wbsim.episode_log import EpisodeLog, load_run
from wbsim.errors import WbsimError


def test_round_trip_numpy_only(tmp_path):
    cols = ["t", "a", "b"]
    with EpisodeLog(tmp_path, cols, {"t": "s"}, {"who": "test"}) as log:
        log.add_rows(np.array([[i * 0.1, i, -i] for i in range(4)]))
        for i in range(4, 10):
            log.add_row([i * 0.1, i, -i])
        log.add_event(
            {"kind": "x", "t": 0.3, "step": 3, "where": "p", "magnitude": np.float64(2.0)}
        )
        log.write_summary({"events": {"x": 1}, "inf": float("inf")})
    # numpy and json alone, as the README says
    schema = json.loads((tmp_path / "columns.json").read_text())
    raw = np.fromfile(tmp_path / "steps.f64", dtype=schema["dtype"]).reshape(
        -1, len(schema["columns"])
    )
    assert raw.shape == (10, 3) and raw[7, 1] == 7 and raw[7, 2] == -7
    run = load_run(tmp_path)
    assert np.array_equal(run["a"], np.arange(10))
    assert "a" in run and "z" not in run and 0 not in run
    assert run.events == [{"kind": "x", "t": 0.3, "step": 3, "where": "p", "magnitude": 2.0}]
    assert run.summary["inf"] == "inf" and run.config == {"who": "test"}


def test_partial_row_and_cut_event_line_are_dropped(tmp_path):
    with EpisodeLog(tmp_path, ["t", "a"]) as log:
        log.add_row([0.0, 1.0])
        log.add_event({"kind": "x"})
    with open(tmp_path / "steps.f64", "ab") as f:
        f.write(np.float64(5.0).tobytes())  # half a row, as after a kill
    with open(tmp_path / "events.jsonl", "a") as f:
        f.write('{"kind": "y", "t"')
    with pytest.warns(UserWarning, match=r"events.jsonl: line 2 not a JSON event"):
        run = load_run(tmp_path)
    assert run.steps.shape == (1, 2) and [e["kind"] for e in run.events] == ["x"]


def test_a_garbage_event_line_is_skipped_with_a_warning_naming_it(tmp_path):
    """A damaged line in the middle of events.jsonl: the events after it still load, and a
    warning names the file and the line (it used to drop the rest silently)."""
    with EpisodeLog(tmp_path, ["t", "a"]) as log:
        for kind in ("a", "b", "c"):
            log.add_event({"kind": kind})
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    lines[1:1] = ["not json", "[1, 2]"]  # lines 2 and 3: garbage, valid JSON but not an event
    (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning) as caught:
        run = load_run(tmp_path)
    assert [e["kind"] for e in run.events] == ["a", "b", "c"]
    (message,) = [str(w.message) for w in caught]
    assert str(tmp_path / "events.jsonl") in message and "lines 2, 3 " in message


@pytest.mark.parametrize("name", ["columns.json", "config.json", "summary.json"])
def test_a_damaged_json_file_is_named(tmp_path, name, capsys):
    """A log whose JSON file was cut or overwritten: loading it (``load_run``, ``wbsim report``)
    gives one line naming the file, not a JSON traceback."""
    from wbsim.cli import main

    with EpisodeLog(tmp_path / "run", ["t", "a"], {}, {"who": "test"}) as log:
        log.add_row([0.0, 1.0])
        log.write_summary({"events": {}})
    (tmp_path / "run" / name).write_text('{"columns": ["t", ')
    with pytest.raises(WbsimError, match=f"{name}: cannot be read as JSON"):
        load_run(tmp_path / "run")
    assert main(["report", str(tmp_path / "run")]) != 0
    err = capsys.readouterr().err
    assert f"{name}: cannot be read as JSON" in err and "Traceback" not in err


def test_the_log_writes_its_json_files_whole(tmp_path, monkeypatch):
    """config.json, columns.json and summary.json are written to a temporary file renamed over
    the target: a write that fails (a full disk) leaves no half file and names the file."""
    from pathlib import Path

    real = Path.write_text

    def full_disk(self, text, *a, **k):
        if self.name == "summary.json.tmp":
            real(self, text[:5])
            raise OSError(28, "No space left on device")
        return real(self, text, *a, **k)

    with EpisodeLog(tmp_path / "run", ["t", "a"], {}, {"who": "test"}) as log:
        log.add_row([0.0, 1.0])
        log.write_summary({"events": {"x": 1}})
        monkeypatch.setattr(Path, "write_text", full_disk)
        with pytest.raises(WbsimError, match=r"summary.json: could not be written \(No space"):
            log.write_summary({"events": {"x": 2}})
        monkeypatch.undo()
    assert load_run(tmp_path / "run").summary == {"events": {"x": 1}}
    assert sorted(p.name for p in (tmp_path / "run").iterdir() if p.name.endswith(".tmp")) == []


def test_not_a_run_folder(tmp_path):
    with pytest.raises(WbsimError, match="not a wbsim run folder"):
        load_run(tmp_path)


def test_exception_leaves_a_loadable_log(tmp_path):
    with pytest.raises(RuntimeError), EpisodeLog(tmp_path, ["t"]) as log:
        for i in range(5):
            log.add_row([i])
        raise RuntimeError("boom")
    assert load_run(tmp_path).steps.shape == (5, 1)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_kill_during_a_run_leaves_log_and_video_readable(tmp_path, sig):
    """A real `wbsim run` interrupted with SIGINT (Ctrl-C) or SIGTERM (`timeout`): the rows logged so
    far load, the summary says so, and the MP4 decodes."""
    run_dir, video = tmp_path / "run", tmp_path / "v.mp4"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wbsim.cli",
            "run",
            "--controller",
            "gravity_qp",
            "--seconds",
            "30",
            "--log",
            str(run_dir),
            "--video",
            str(video),
            "--no-progress",
            "--width",
            "160",
            "--height",
            "120",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "MUJOCO_GL": "egl"},
    )
    deadline = time.time() + 120
    while time.time() < deadline:  # wait until rows are on disk
        if (run_dir / "steps.f64").exists() and (run_dir / "steps.f64").stat().st_size > 0:
            break
        time.sleep(0.2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    # the shell's codes: 128 + the signal (130 Ctrl-C, 143 SIGTERM), each said as such
    said = b"interrupted" if sig == signal.SIGINT else b"terminated (SIGTERM)"
    assert proc.returncode == 128 + sig and said in err, err
    run = load_run(run_dir)
    assert run.steps.shape[0] > 0
    assert run.summary["status"] == "interrupted" and run.summary["steps"] == run.steps.shape[0]
    assert run.summary["stopped_reason"] == (
        "KeyboardInterrupt" if sig == signal.SIGINT else "SIGTERM"
    )
    import imageio.v2 as imageio

    frames = [f for f in imageio.get_reader(str(video))]
    assert len(frames) >= 1 and frames[0].shape == (120, 160, 3)


def test_a_signal_while_a_chunk_is_processed_keeps_log_and_summary_equal(
    tmp_path, monkeypatch, ctrl_c_raises
):
    """Ctrl-C arriving while recorded steps are turned into metrics and log rows (here: between
    the two) is raised after that work: the summary counts exactly the rows the log holds."""
    from wbsim.episode_log import StepTable
    from wbsim.rollout import EpisodeConfig, run_episode

    rows = StepTable.rows
    calls = []

    def rows_then_ctrl_c(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # the second chunk: its metrics are counted, its rows not yet logged
            os.kill(os.getpid(), signal.SIGINT)
        return rows(self, *args, **kwargs)

    monkeypatch.setattr(StepTable, "rows", rows_then_ctrl_c)
    monkeypatch.setattr("wbsim.rollout.CHUNK", 20)
    with pytest.raises(KeyboardInterrupt):
        run_episode(
            EpisodeConfig(env="wbsim/G1Stand-v0", seconds=1.0, log=tmp_path / "run", progress=False)
        )
    run = load_run(tmp_path / "run")
    assert run.summary["status"] == "interrupted"
    assert run.summary["steps"] == run.steps.shape[0] == 40


def test_a_second_ctrl_c_while_closing_is_held_until_the_log_is_closed(
    tmp_path, monkeypatch, capsys, ctrl_c_raises
):
    """An impatient user's second Ctrl-C lands while the log and the video are being closed: it
    is held (a note says so) and raised after them, so the summary and steps.parquet exist."""
    import imageio

    from wbsim import rollout
    from wbsim.recorder import StepRecorder
    from wbsim.rollout import EpisodeConfig, run_episode

    record, close = StepRecorder.record, rollout._close
    n = []

    def record_then_ctrl_c(self, *args, **kwargs):
        n.append(1)
        if len(n) == 30:  # the first Ctrl-C, in the loop, before the 30th step is recorded
            os.kill(os.getpid(), signal.SIGINT)
        return record(self, *args, **kwargs)

    def ctrl_c_then_close(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # the second, while closing
        return close(*args, **kwargs)

    monkeypatch.setattr(StepRecorder, "record", record_then_ctrl_c)
    monkeypatch.setattr(rollout, "_close", ctrl_c_then_close)
    with pytest.raises(KeyboardInterrupt) as raised:
        run_episode(
            EpisodeConfig(
                env="wbsim/G1Stand-v0",
                seconds=1.0,
                log=tmp_path / "run",
                video=tmp_path / "run.mp4",
                width=160,
                height=120,
                progress=False,
            )
        )
    assert "closing the log and the video first" in capsys.readouterr().err
    assert (tmp_path / "run" / "steps.parquet").is_file()
    run = load_run(tmp_path / "run")
    assert run.summary["status"] == "interrupted"
    assert run.summary["steps"] == run.steps.shape[0] == 29  # the 30th step was cut short
    assert len(imageio.get_reader(str(tmp_path / "run.mp4")).get_data(0)) == 120
    # the interrupt that comes out (the held second one) carries the summary, as a first one does
    assert raised.value.summary == run.summary


def test_rows_of_the_wrong_width_are_refused(tmp_path):
    """A block of rows of the wrong width is a clear error and stores nothing."""
    with EpisodeLog(tmp_path, ["a", "b", "c"]) as log:
        log.add_rows(np.ones((2, 3)))
        for bad in (np.ones((2, 4)), np.ones(3)):
            with pytest.raises(WbsimError, match="3 columns"):
                log.add_rows(bad)
        assert log.n_rows == 2
    assert load_run(tmp_path).steps.shape == (2, 3)


def test_a_used_folder_is_refused_without_overwrite(tmp_path):
    """A logged run is never replaced silently: EpisodeLog and run_episode refuse a folder that holds
    files (nothing in it is touched), accept it with overwrite, and refuse a file as the folder."""
    from wbsim.episode_log import check_run_dir
    from wbsim.rollout import EpisodeConfig, run_episode

    run = tmp_path / "run"
    run.mkdir()
    (run / "mine.txt").write_text("keep")
    with pytest.raises(WbsimError, match="not empty"):
        EpisodeLog(run, ["t"])
    with pytest.raises(WbsimError, match="overwrite"):
        run_episode(EpisodeConfig(seconds=0.01, log=run, progress=False))
    assert sorted(p.name for p in run.iterdir()) == ["mine.txt"]
    assert (run / "mine.txt").read_text() == "keep"
    summary = run_episode(EpisodeConfig(seconds=0.01, log=run, progress=False, overwrite=True))
    assert summary["status"] == "completed" and (run / "summary.json").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(WbsimError, match="not a folder"):
        check_run_dir(tmp_path / "file", overwrite=True)
    assert check_run_dir(tmp_path / "new") == tmp_path / "new"  # new: fine, not created
    assert not (tmp_path / "new").exists()
