"""``wbsim report``: the overview plot (CoM, joint errors, torques against limits, contact modes,
events, pushes) and the self-contained HTML page."""

import base64
import html
import json
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from wbsim.cli import main
from wbsim.episode_log import load_run
from wbsim.plots import plot_overview, push_spans
from wbsim.rollout import EpisodeConfig, run_episode


@pytest.fixture(scope="module")
def pushed(tmp_path_factory):
    """0.5 s of the G1 standing, pushed every 0.15 s for 0.1 s, with its video."""
    d = tmp_path_factory.mktemp("report")
    summary = run_episode(
        EpisodeConfig(
            seconds=0.5,
            log=d / "run",
            video=d / "run.mp4",
            width=160,
            height=120,
            progress=False,
            env_options={"push_magnitude": 40.0, "push_interval": 0.15},
        )
    )
    return d, summary


class _Sources(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href"):
                self.tags.append((tag, value))


def test_push_spans_are_the_pushes_of_the_summary(pushed):
    d, summary = pushed
    spans = push_spans(load_run(d / "run"))
    assert [round(a, 6) for a, _ in spans] == [round(p["t"], 6) for p in summary["pushes"]]
    assert len(spans) == 3
    # 0.1 s each, the last one cut by the end of the run at 0.5 s
    np.testing.assert_allclose([b - a for a, b in spans], [0.1, 0.1, 0.05], atol=1e-9)
    # the summary: the scheduled durations, the impulses that acted (40 N)
    assert [p["duration"] for p in summary["pushes"]] == [0.1] * 3
    np.testing.assert_allclose([p["impulse"] for p in summary["pushes"]], [4.0, 4.0, 2.0])


def test_report_writes_the_normal_force_and_overview_plots(pushed, capsys):
    from PIL import Image

    d, _ = pushed
    assert main(["report", str(d / "run")]) == 0
    out = capsys.readouterr().out
    for name in ("normal_forces.png", "overview.png"):
        assert f"plot: {d / 'run' / name}" in out
    w, h = Image.open(d / "run" / "overview.png").size
    assert (w, h) == (990, 1350)


def test_overview_without_limits_or_events_still_draws(pushed, tmp_path):
    d, _ = pushed
    run = load_run(d / "run")
    run.config.pop("joints")  # a log from before the limits were recorded
    run.events.clear()
    assert plot_overview(run, tmp_path / "o.png").stat().st_size > 10_000


def test_html_page_is_one_self_contained_file(pushed, capsys):
    d, _ = pushed
    assert main(["report", str(d / "run"), "--html"]) == 0
    page_path = d / "run" / "report.html"
    assert f"page: {page_path}" in capsys.readouterr().out
    page = page_path.read_text()
    sources = _Sources()
    sources.feed(page)
    assert [t for t, _ in sources.tags] == ["video", "img", "img"]
    assert all(v.startswith("data:") for _, v in sources.tags)  # nothing to fetch
    video = next(v for t, v in sources.tags if t == "video")
    assert base64.b64decode(video.split(",", 1)[1]) == (d / "run.mp4").read_bytes()
    assert "completed" in page and "did not fall" in page and "wbsim/G1Stand-v0" in page
    assert page.count("<tr>") > 15  # key figures, events, setup
    slides = json.loads((d / "run" / "summary.json").read_text())["diagnostics"]["slides"]
    key = html.escape("slides (slips at MuJoCo's friction cone, f_t / (mu f_n) >= 0.99)")
    assert f"<th>{key}</th><td>{slides}</td>" in page


def test_html_page_without_a_video_says_how_to_make_one(pushed, tmp_path):
    import shutil

    from wbsim.html_report import write_html

    d, _ = pushed
    shutil.copytree(d / "run", tmp_path / "run")
    cfg = tmp_path / "run" / "config.json"
    cfg.write_text(cfg.read_text().replace(str(d / "run.mp4"), str(tmp_path / "gone.mp4")))
    page = html.unescape(write_html(tmp_path / "run").read_text())
    assert "<video" not in page
    # both commands whole, to be pasted as they are
    assert f"wbsim replay {tmp_path / 'run'}</code>" in page
    assert f"wbsim report {tmp_path / 'run'} --html</code>" in page


@pytest.mark.parametrize(
    "logged",
    [
        {"name": "icub", "description": "icub_description/robots/icub_reduced.urdf", "feet": {}},
        "RobotConfig(name='icub', description='icub_description/robots/icub_reduced.urdf', ...)",
    ],
    ids=["fields", "older_repr"],
)
def test_html_setup_names_a_robot_logged_as_a_config(pushed, tmp_path, logged):
    """A robot given as a config (wbsim run --robot FILE) is logged as its fields (older wbsim:
    its repr); the page's env options name it and its description instead of dumping it."""
    import shutil

    from wbsim.html_report import write_html

    d, _ = pushed
    shutil.copytree(d / "run", tmp_path / "run")
    cfg_path = tmp_path / "run" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["env_options"] = {"robot": logged, "push_magnitude": 40.0}
    cfg["robot"] = "icub"
    cfg_path.write_text(json.dumps(cfg))
    page = html.unescape(write_html(tmp_path / "run").read_text())
    row = page[page.index("<th>env options</th>") :].split("</tr>")[0]
    assert "icub" in row and "push_magnitude" in row
    assert "RobotConfig(" not in row and "feet" not in row


def test_overview_title_names_pushes_only_when_there_are_some(pushed, tmp_path, monkeypatch):
    import matplotlib.figure

    titles = []
    real = matplotlib.figure.Figure.suptitle

    def keep(self, text, *a, **k):
        titles.append(text)
        return real(self, text, *a, **k)

    monkeypatch.setattr(matplotlib.figure.Figure, "suptitle", keep)
    d, _ = pushed
    run = load_run(d / "run")
    plot_overview(run, tmp_path / "pushed.png")
    for axis in "xyz":  # the same run without its pushes
        run.steps[:, run.columns.index(f"push_{axis}")] = 0.0
    plot_overview(run, tmp_path / "quiet.png")
    assert "pushes shaded red" in titles[0]
    assert "pushes" not in titles[1]


def test_overview_com_titles_name_a_reference_only_when_one_is_drawn(pushed, tmp_path):
    """A stand run's schedule has no CoM reference (NaN): the CoM panels' titles say so, and
    name the schedule's reference only where one is drawn."""
    import matplotlib.pyplot as plt

    d, _ = pushed
    run = load_run(d / "run")
    assert np.isnan(run["com_ref_x"]).all()  # standing: no reference
    titles = []
    real = plt.close

    def keep(fig):
        titles.append([ax.get_title(loc="left") for ax in fig.axes[:2]])
        real(fig)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plt, "close", keep)
        plot_overview(run, tmp_path / "stand.png")
        for axis in "xyz":  # a reference on every axis
            run.steps[:, run.columns.index(f"com_ref_{axis}")] = 0.0
        plot_overview(run, tmp_path / "ref.png")
    assert titles[0] == [
        "centre of mass (world) (the schedule gives no reference)",
        "CoM height (the schedule gives no reference)",
    ]
    assert titles[1] == [
        "centre of mass (world) and the schedule's reference",
        "CoM height and the schedule's reference",
    ]


def test_a_page_that_cannot_be_written_keeps_the_old_one(pushed, tmp_path, monkeypatch):
    """The page goes through a temporary file renamed over it: a full disk names the page and
    leaves the previous one whole."""
    from wbsim.errors import WbsimError
    from wbsim.html_report import write_html

    d, _ = pushed
    run = d / "run"
    (tmp_path / "pages").mkdir()
    (tmp_path / "plots").mkdir()
    out = tmp_path / "pages" / "page.html"
    write_html(run, out, plots_dir=tmp_path / "plots")
    before = out.read_text()
    real = Path.write_text

    def full_disk(self, text, *a, **k):
        real(self, text[:100])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(WbsimError, match=r"page.html: could not be written \(No space left"):
        write_html(run, out, plots_dir=tmp_path / "plots")
    monkeypatch.undo()
    assert out.read_text() == before
    assert [p.name for p in (tmp_path / "pages").iterdir()] == ["page.html"]


def test_html_page_and_plots_go_into_folders_made_for_them(pushed, tmp_path):
    """``--plots`` and the page's folder may not exist yet: they are made, as a log folder is; a
    folder that cannot be made is named in a WbsimError."""
    from wbsim.errors import WbsimError
    from wbsim.html_report import write_html

    d, _ = pushed
    out = write_html(d / "run", tmp_path / "new" / "page.html", plots_dir=tmp_path / "p" / "q")
    assert out.is_file()
    assert sorted(p.name for p in (tmp_path / "p" / "q").iterdir()) == [
        "normal_forces.png",
        "overview.png",
    ]
    (tmp_path / "blocker").write_text("a file, not a folder")
    with pytest.raises(WbsimError, match=r"blocker/plots: could not be created"):
        write_html(d / "run", tmp_path / "page2.html", plots_dir=tmp_path / "blocker" / "plots")


def test_html_page_finds_a_relative_video_from_any_folder(tmp_path, monkeypatch):
    """``wbsim run --video videos/x.mp4`` names the video relative to the folder it ran in: the
    log records where that is, so a report made from another folder embeds that video, and not
    a file of the same relative name there (another run's)."""
    from wbsim.html_report import find_video

    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    run_episode(
        EpisodeConfig(
            seconds=0.02,
            log=Path("runs/stand"),
            video=Path("videos/stand.mp4"),
            width=64,
            height=48,
            progress=False,
        )
    )
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "videos").mkdir(parents=True)
    (elsewhere / "videos" / "stand.mp4").write_bytes(b"another run's video")
    monkeypatch.chdir(elsewhere)
    assert find_video(load_run(tmp_path / "here" / "runs" / "stand")) == (
        tmp_path / "here" / "videos" / "stand.mp4"
    )


def test_html_page_of_a_killed_run_shows_what_its_table_holds(pushed, tmp_path):
    """A run killed before its summary: the page gives the time and steps its step table holds
    and the summary's metrics its columns give (joint error, base drift, tilt, momentum residual,
    return), a dash, not ``None``, for the figures only a summary holds, and, no fall being in
    its events, says neutrally that none was logged before it was killed."""
    import shutil

    from wbsim.html_report import write_html
    from wbsim.report import format_table, report_rows

    d, summary = pushed
    shutil.copytree(d / "run", tmp_path / "run")
    (tmp_path / "run" / "summary.json").unlink()
    run = load_run(tmp_path / "run")
    page = html.unescape(write_html(tmp_path / "run").read_text())
    figures = page[page.index("<h2>Key figures</h2>") : page.index("<h2>Events</h2>")]
    # the time of the state after its last step, as a summary's seconds (not that step's start)
    assert run["t_after"][-1] == pytest.approx(summary["seconds"]) and run["t"][-1] < 0.499
    assert f"<th>simulated time, s</th><td>{summary['seconds']:.6g}</td>" in figures
    assert f"<th>steps</th><td>{len(run.steps)}</td>" in figures
    assert "<th>real-time factor</th><td>-</td>" in figures
    assert "None" not in figures
    # the metrics from the step table: the summary's (maxima to the bit, the return's sum to
    # rounding: the summary sums it chunk by chunk)
    row = report_rows([run])[0]
    for key, label in (
        ("base_drift_m", "base drift, m"),
        ("max_base_tilt_deg", "max base tilt, deg"),
        ("momentum_residual_max", "momentum residual max (/ m g)"),
        ("return", "return"),
    ):
        assert summary[key] > 0 and row[key] == pytest.approx(summary[key], rel=1e-12, abs=0)
        assert f"<th>{label} (from the step table)</th><td>{row[key]:.6g}</td>" in figures
    assert row["base_drift_m"] == summary["base_drift_m"]
    head = page[page.index("<p>Status") : page.index("<h2>Key figures")]
    assert "<span class='neutral'>no fall logged before it was killed (the log reaches " in head
    assert "class='bad'" not in head
    # the largest joint error, from the qerr/* columns: the summary's to the bit
    qerr = summary["max_joint_error_rad"]
    assert qerr > 0 and report_rows([run])[0]["max_joint_error_rad"] == qerr
    assert f"<th>max joint error, rad (from the step table)</th><td>{qerr:.6g}</td>" in figures
    assert f"| {qerr:.4f} |" in format_table(report_rows([run]))


def test_html_page_of_a_killed_run_that_logged_a_fall_says_it_fell(pushed, tmp_path):
    """A killed run whose events.jsonl holds a fall fell (the report's row too), in red."""
    import shutil

    from wbsim.html_report import write_html
    from wbsim.report import report_rows

    d, _ = pushed
    shutil.copytree(d / "run", tmp_path / "run")
    (tmp_path / "run" / "summary.json").unlink()
    fall = {"kind": "fall", "t": 0.498, "step": 249, "where": "", "detail": {"t_after": 0.5}}
    (tmp_path / "run" / "events.jsonl").write_text(json.dumps(fall) + "\n")
    assert report_rows([load_run(tmp_path / "run")])[0]["fell"] is True
    page = html.unescape(write_html(tmp_path / "run").read_text())
    head = page[page.index("<p>Status") : page.index("<h2>Key figures")]
    assert "<span class='bad'>fell</span>: the state after step 249 (t = 0.500 s" in head


@pytest.mark.parametrize("summary", [True, False], ids=["fell", "killed"])
def test_html_events_give_when_each_kind_first_happened(pushed, tmp_path, summary):
    """The events table's first time: the summary's, else (a ``fall``, which the summary does
    not time, or a killed run, which has no summary) the earliest in events.jsonl."""
    import shutil

    from wbsim.html_report import write_html

    d, _ = pushed
    shutil.copytree(d / "run", tmp_path / "run")
    events = [
        {"kind": "planar_complementarity", "t": 0.25, "step": 125, "where": "left_foot"},
        {"kind": "planar_complementarity", "t": 0.125, "step": 62, "where": "right_foot"},
        {"kind": "fall", "t": 0.375, "step": 187, "where": ""},
    ]
    (tmp_path / "run" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    path = tmp_path / "run" / "summary.json"
    if summary:
        s = json.loads(path.read_text())
        s["events"].update(planar_complementarity=2, fall=1)
        s["diagnostics"]["first_t"]["planar_complementarity"] = 0.125
        s["diagnostics"]["worst"]["planar_complementarity"] = 0.25
        path.write_text(json.dumps(s))
    else:
        path.unlink()
    page = write_html(tmp_path / "run").read_text()
    rows = page[page.index("<h2>Events</h2>") : page.index("<h2>Pushes")]
    assert "<td>planar_complementarity</td><td class=num>2</td><td class=num>0.125</td>" in rows
    assert "<td>fall</td><td class=num>1</td><td class=num>0.375</td>" in rows
    if summary:  # the worst slip with its unit and what it measures: slip speed x force, W
        assert (
            "<td class=num>0.25 W</td><td>slip speed times tangential force, v_t f_t</td>" in rows
        )


def test_html_worst_magnitudes_carry_their_units(pushed, tmp_path):
    """Each kind's worst magnitude in the events table is given in the unit of that kind
    (:data:`wbsim.diagnostics.MAGNITUDES`: N, N·m, W or s)."""
    import shutil

    from wbsim.diagnostics import EVENT_KINDS, MAGNITUDES
    from wbsim.html_report import write_html

    assert set(MAGNITUDES) == set(EVENT_KINDS)
    d, _ = pushed
    shutil.copytree(d / "run", tmp_path / "run")
    path = tmp_path / "run" / "summary.json"
    s = json.loads(path.read_text())
    s["events"] = dict.fromkeys(EVENT_KINDS, 1)
    s["diagnostics"]["worst"] = dict.fromkeys(EVENT_KINDS, 1.5)
    path.write_text(json.dumps(s))
    page = html.unescape(write_html(tmp_path / "run").read_text())
    units = {"torque_limit": "N·m", "complementarity": "N·m", "planar_complementarity": "W"}
    units.update(dict.fromkeys(("contact_mismatch", "fallback", "solver_failure"), "s"))
    for kind in EVENT_KINDS:
        assert f"<td>{kind}</td>" in page
        row = page[page.index(f"<td>{kind}</td>") :].split("</tr>")[0]
        assert f"<td class=num>1.5 {units.get(kind, 'N')}</td>" in row, row


def test_html_page_of_a_fall_says_when_it_was_judged(pushed, tmp_path):
    """The fall event is stamped with its step's start (as every event), the run's length is the
    state after that step, in which the fall was judged: the page says both, and which is which."""
    import shutil

    from wbsim.html_report import write_html

    d, _ = pushed
    shutil.copytree(d / "run", tmp_path / "run")
    fall = {"kind": "fall", "t": 0.498, "step": 249, "where": "", "duration": 0.002}
    for detail in ({"t_after": 0.5}, {}):  # {}: a log from before t_after was recorded
        line = json.dumps({**fall, "detail": detail})
        (tmp_path / "run" / "events.jsonl").write_text(line + "\n")
        path = tmp_path / "run" / "summary.json"
        s = json.loads(path.read_text())
        s.update(fell=True, status="fell", stopped_reason="fell at t = 0.500 s")
        s["events"]["fall"] = 1
        path.write_text(json.dumps(s))
        page = html.unescape(write_html(tmp_path / "run").read_text())
        head = page[page.index("<p>Status") : page.index("<h2>Key figures")]
        assert "<span class='bad'>fell</span>: the state after step 249 (t = 0.500 s, " in head
        assert "times the fall at that step's start, 0.498 s" in head


def test_html_page_of_an_interrupted_run_says_when_it_stopped(pushed, tmp_path):
    """An interrupted run did not fall *by the time it stopped*: the page says when that was, in
    a neutral colour (not the green of a run that went its whole length), and which stretch of
    the run its video shows."""
    import shutil

    from wbsim.html_report import write_html

    d, _ = pushed
    assert "did not fall</span>" in write_html(d / "run").read_text()  # completed: green
    shutil.copytree(d / "run", tmp_path / "run")
    path = tmp_path / "run" / "summary.json"
    s = json.loads(path.read_text())
    s.update(status="interrupted", stopped_reason="KeyboardInterrupt", video_frames=10)
    path.write_text(json.dumps(s))
    page = html.unescape(write_html(tmp_path / "run").read_text())
    assert "did not fall" not in page and "class='ok'" not in page
    assert (
        "<span class='neutral'>interrupted at t = 0.500 s after 250 steps; it had not fallen "
        "by then</span>" in page
    )
    # 10 frames at 30 fps: the states at 0, 1/30, ..., 9/30 s (the first at or after each)
    assert "run.mp4 (embedded): t = 0.000 to 0.300 s of the run (10 frames at 30 fps; " in page


def test_html_video_note_gives_the_window_of_the_whole_run(pushed, tmp_path):
    """A completed run's video: from its first to its last state, with the summary's frame count;
    a killed run's (no summary): the frames counted in the file."""
    import shutil

    from wbsim.html_report import write_html

    d, summary = pushed
    assert summary["video_frames"] == 16  # 0, 1/30, ..., 14/30 s, and the end state at 0.5 s
    note = "run.mp4 (embedded): t = 0.000 to 0.500 s of the run (16 frames at 30 fps; "
    assert note + "the run ended at 0.500 s)" in html.unescape(write_html(d / "run").read_text())
    shutil.copytree(d / "run", tmp_path / "run")
    (tmp_path / "run" / "summary.json").unlink()
    assert note + "the log reaches 0.500 s)" in html.unescape(
        write_html(tmp_path / "run").read_text()
    )


def test_html_page_of_a_run_without_a_step_offers_no_replay(pushed, tmp_path):
    """A run stopped before its first step has nothing to replay: the page does not send the
    reader to ``wbsim replay``, which refuses it."""
    import shutil

    from wbsim.html_report import write_html

    d, _ = pushed
    shutil.copytree(d / "run", tmp_path / "run")
    (tmp_path / "run" / "steps.f64").write_bytes(b"")
    (tmp_path / "run" / "steps.parquet").unlink()
    cfg = tmp_path / "run" / "config.json"
    cfg.write_text(cfg.read_text().replace(str(d / "run.mp4"), str(tmp_path / "gone.mp4")))
    path = tmp_path / "run" / "summary.json"
    s = json.loads(path.read_text())
    s.update(steps=0, seconds=0.0, logged_rows=0, video="", video_frames=0)
    path.write_text(json.dumps(s))
    page = write_html(tmp_path / "run").read_text()
    assert "<video" not in page and "wbsim replay" not in page
    assert "No video: no step was logged" in page
