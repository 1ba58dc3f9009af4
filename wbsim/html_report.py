"""``wbsim report RUN --html``: one self-contained HTML page per run.

The page holds the run's summary (what ran, how it ended, the key figures, events per kind,
pushes, versions), the plots (:func:`wbsim.report.plot_run`, :func:`wbsim.plots.plot_overview`)
and the video, all embedded in the file as base64 ``data:`` URIs: the page can be mailed or copied
alone, and opens in any browser without a server. (A 10 s 640x480 video adds about 1-2 MB.)
"""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path
from typing import Any

from wbsim.diagnostics import MAGNITUDES
from wbsim.episode_log import RunData, load_run
from wbsim.errors import WbsimError
from wbsim.jsonfile import write_file

__all__ = ["find_video", "write_html"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
th { background: #f2f2f2; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
img, video { max-width: 100%; border: 1px solid #ddd; }
.bad { color: #b00; font-weight: bold; } .ok { color: #070; font-weight: bold; }
.neutral { color: #444; font-weight: bold; }
code { background: #f5f5f5; padding: 0 3px; }
"""


def find_video(run: RunData) -> Path | None:
    """The run's video: the live one ``config.json`` names (an absolute path; a log older than
    that has it as given to ``wbsim run``, tried from the current folder), else one of that name
    in the run folder's parent (a run copied with its video), else ``RUN_DIR/replay.mp4``;
    ``None`` if none exists."""
    named = run.config.get("video") or run.summary.get("video") or ""
    candidates = [Path(named), run.dir.parent / Path(named).name] if named else []
    candidates.append(run.dir / "replay.mp4")
    return next((p for p in candidates if p.is_file()), None)


def _data_uri(path: Path, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _fmt(value: Any) -> str:
    if value is None:  # not in the log (a killed run has no summary)
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _table(rows: list[tuple[str, Any]]) -> str:
    cells = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(_fmt(v))}</td></tr>" for k, v in rows
    )
    return f"<table>{cells}</table>"


def write_html(
    run_dir: str | Path,
    out: str | Path | None = None,
    video: str | Path | None = None,
    plots_dir: str | Path | None = None,
) -> Path:
    """Write the run's HTML page (default ``RUN_DIR/report.html``); returns its path.

    Args:
        run_dir: the run folder.
        out: the page's path.
        plots_dir: where the PNG plots it embeds are written (default the run folder).
        video: the MP4 to embed (default :func:`find_video`; none found: the page says how to
            make one with ``wbsim replay``, or that there is nothing to replay).

    Raises:
        WbsimError: not a run folder; ``video`` given but not a file; the page, or a folder it or
            the plots go in (made when missing), cannot be written.
    """
    from wbsim.plots import plot_overview
    from wbsim.report import report_rows, s_events

    run = load_run(run_dir)
    if video is not None and not Path(video).is_file():
        raise WbsimError(f"video {video}: not a file")
    out = Path(out) if out else run.dir / "report.html"
    s, c = run.summary, run.config
    pdir = Path(plots_dir) if plots_dir is not None else run.dir
    for folder in (pdir, out.parent):  # asked-for folders are made, as the run's log folder is
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WbsimError(f"{folder}: could not be created ({exc.strerror or exc})") from None
    plots = [
        ("Normal forces per foot", _plot_normal_forces(run, pdir / "normal_forces.png")),
        ("Overview", plot_overview(run, pdir / "overview.png")),
    ]
    row = report_rows([run])[0]
    status = s.get("status", "no summary (the run was killed?)")
    reason = f" ({html.escape(s['stopped_reason'])})" if s.get("stopped_reason") else ""
    head = (
        f"<h1>{html.escape(str(row['env']))} &middot; {html.escape(str(row['controller']))}"
        f" &middot; {html.escape(run.dir.name)}</h1><p>Status <b>{html.escape(status)}</b>"
        f"{reason}; {_ending(run, row)}"
        + (f" {html.escape(row['table'])}." if row["table"] else "")
        + "</p>"
    )
    slide = c.get("tolerances", {}).get("slide", "-")
    figures = [
        # a killed run has no summary: its step table says how far it went
        ("simulated time, s", s.get("seconds", row["seconds"])),
        ("steps", s.get("steps", row["rows"])),
        ("robot", c.get("robot")),
        ("seed", c.get("seed")),
        _metric("base drift, m", "base_drift_m", s, row),
        _metric("max base tilt, deg", "max_base_tilt_deg", s, row),
        _metric("max joint error, rad", "max_joint_error_rad", s, row),
        ("CoM tracking RMS, m", s.get("com_tracking_rms_m", "-")),
        _metric("momentum residual max (/ m g)", "momentum_residual_max", s, row),
        (
            f"slides (slips at MuJoCo's friction cone, f_t / (mu f_n) >= {slide})",
            "-" if row["slides"] is None else row["slides"],
        ),
        _metric("return", "return", s, row),
        ("real-time factor", s.get("realtime_factor")),
    ]
    events = s_events(run)
    # the summary's first times; a kind it does not time (a fall) or a killed run's events:
    # the earliest start in events.jsonl
    first: dict[str, float] = {}
    for e in run.events:
        if isinstance(e.get("t"), (int, float)):
            first[e.get("kind", "?")] = min(e["t"], first.get(e.get("kind", "?"), math.inf))
    timed = s.get("diagnostics", {}).get("first_t", {})
    first.update({k: t for k, t in timed.items() if t is not None})
    worst = s.get("diagnostics", {}).get("worst", {})
    ev_rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td class=num>{n}</td>"
        f"<td class=num>{_fmt(first.get(k)) if first.get(k) is not None else '-'}</td>"
        f"<td class=num>{_worst(k, worst.get(k))}</td>"
        f"<td>{html.escape(MAGNITUDES[k][0]) if k in MAGNITUDES else ''}</td></tr>"
        for k, n in events.items()
        if n
    )
    ev_table = (
        "<table><tr><th>kind</th><th>count</th><th>first at, s (its step's start)</th>"
        f"<th>worst</th><th>worst of</th></tr>{ev_rows}</table>"
        if ev_rows
        else "<p>No event.</p>"
    )
    pushes = s.get("pushes", [])
    push_text = (
        (
            "<p>"
            + "; ".join(
                f"{p['t']:.3f} s: ({', '.join(f'{f:.1f}' for f in p['force'])}) N"
                + (
                    f" for {p['duration']:.3f} s ({p['impulse']:.2f} N s)"
                    if "duration" in p  # logs written before durations were recorded lack it
                    else ""
                )
                for p in pushes
            )
            + "</p>"
        )
        if pushes
        else "<p>None.</p>"
    )
    setup = [
        ("env", c.get("env")),
        ("controller", c.get("controller")),
        ("controller options", c.get("controller_options", {})),
        ("env options", _env_options_shown(c)),
        ("timestep, s", c.get("timestep")),
        ("frame_skip", c.get("frame_skip")),
        ("versions", c.get("versions", {})),
        ("git", c.get("git")),
    ]
    video_path = Path(video) if video else find_video(run)
    if video_path is not None:
        video_html = (
            f"<video controls muted src='{_data_uri(video_path, 'video/mp4')}'></video>"
            f"<p>{html.escape(video_path.name)} (embedded): {_video_window(run, video_path)}</p>"
        )
    elif not row["rows"]:  # nothing to replay: wbsim replay refuses such a run
        video_html = "<p>No video: no step was logged.</p>"
    else:
        video_html = (
            f"<p>No video: <code>wbsim replay {html.escape(str(run.dir))}</code> draws "
            f"one from the log (then run <code>wbsim report {html.escape(str(run.dir))} "
            "--html</code> again).</p>"
        )
    body = "".join(
        [
            head,
            "<h2>Key figures</h2>",
            _table(figures),
            "<h2>Events</h2>",
            ev_table,
            "<h2>Pushes (start, force in the world frame)</h2>",
            push_text,
            "<h2>Video</h2>",
            video_html,
            *(
                f"<h2>{html.escape(title)}</h2><img alt='{html.escape(title)}' "
                f"src='{_data_uri(path, 'image/png')}'>"
                for title, path in plots
            ),
            "<h2>Setup</h2>",
            _table(setup),
        ]
    )
    page = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>wbsim "
        f"{html.escape(run.dir.name)}</title><style>{_STYLE}</style></head><body>{body}"
        "</body></html>"
    )
    write_file(out, page)  # atomic: a full disk leaves no half page
    return out


def _metric(label: str, key: str, summary: dict[str, Any], row: dict[str, Any]) -> tuple[str, Any]:
    """A key figure of :data:`wbsim.report.TABLE_METRICS`: the summary's, or (a killed run) the
    step table's, so labelled; ``None`` (shown ``-``) where the table cannot give it."""
    value = row[key]
    if isinstance(value, float) and math.isnan(value):
        value = None
    return (label if key in summary else f"{label} (from the step table)"), value


def _worst(kind: str, value: Any) -> str:
    """A kind's worst magnitude with its unit (:data:`wbsim.diagnostics.MAGNITUDES`), or ``-``."""
    if value is None:
        return "-"
    unit = MAGNITUDES[kind][1] if kind in MAGNITUDES else ""
    return html.escape(f"{_fmt(value)} {unit}".strip())


def _ending(run: RunData, row: dict[str, Any]) -> str:
    """How the run ended, as the page's first line says it: a fall in red, with when it was
    judged (the state after the step the fall event is stamped with); a run that went its whole
    length without falling in green; one cut short (interrupted, stopped, an error) in a neutral
    colour, with the time and steps it reached; a killed run (no summary) by its events: a fall
    logged as a fall, else neutrally that none was logged before it was killed."""
    s = run.summary
    steps = s.get("steps", row["rows"])
    if row["fell"]:
        fall = next((e for e in run.events if e.get("kind") == "fall"), None)
        if fall is None or not isinstance(fall.get("t"), (int, float)):
            return "<span class='bad'>fell</span>."
        # t_after: logged since wbsim recorded it; before, the one-step event's end
        t_after = fall.get("detail", {}).get("t_after", fall["t"] + fall.get("duration", 0.0))
        return (
            f"<span class='bad'>fell</span>: the state after step {fall.get('step')} "
            f"(t = {t_after:.3f} s, where the run stops after {steps} steps) was judged fallen; "
            f"the events table times the fall at that step's start, {fall['t']:.3f} s, as "
            "every event."
        )
    if "fell" not in s:
        return (
            f"<span class='neutral'>no fall logged before it was killed (the log reaches "
            f"t = {row['seconds']:.3f} s after {steps} steps)</span>."
        )
    if s.get("status") == "completed":
        return "<span class='ok'>did not fall</span>."
    return (
        f"<span class='neutral'>{html.escape(str(s.get('status')))} at "
        f"t = {row['seconds']:.3f} s after {steps} steps; it had not fallen by then</span>."
    )


def _video_window(run: RunData, path: Path) -> str:
    """Which stretch of the run the video shows: the times of its first and last frames, from
    the frames the live loop draws (:func:`wbsim.replay.drawn_states`: the live video, and the
    default ``wbsim replay``), the video's frame count (the summary's, else counted in the file)
    and the run's fps; a video of another count (a replay with ``--start``/``--end`` or
    ``--fps``, or one that does not decode) is described by its frames alone."""
    from wbsim.replay import drawn_states, state_times

    fps = float(run.config.get("fps", 30.0))
    live = path.name == Path(run.config.get("video") or run.summary.get("video") or "").name
    n = run.summary.get("video_frames") if live else None
    if not isinstance(n, int):
        try:
            import imageio_ffmpeg

            n = int(imageio_ffmpeg.count_frames_and_secs(str(path))[0])
        except Exception:  # noqa: BLE001  (a cut or foreign file: say what is known)
            return "which stretch of the run it shows is not known (its frames do not decode)."
    if not len(run.steps):
        return f"{n} frames at {fps:g} fps."
    times = state_times(run)
    states = drawn_states(times, fps, run.summary.get("status"))
    end = (
        f"the run ended at {times[-1]:.3f} s"
        if run.summary.get("status") == "completed"
        else f"the log reaches {times[-1]:.3f} s"
    )
    # a live video cut short (a killed run's) holds the first frames the loop drew
    if 0 < n <= len(states) and (n == len(states) or live):
        shown = [times[states[0]], times[states[n - 1]]]
        return (
            f"t = {shown[0]:.3f} to {shown[1]:.3f} s of the run ({n} frames at {fps:g} fps; {end})."
        )
    return (
        f"{n} frames, not the {len(states)} the run's own video at {fps:g} fps holds (a replay "
        f"of part of it, or at another fps?); each frame's status line gives its time ({end})."
    )


def _env_options_shown(config: dict[str, Any]) -> dict[str, Any]:
    """The run's env options for the setup table: a robot logged as its config's fields (or, by
    an older wbsim, as the config's repr) shown by its name and description (the whole config is
    ``config.json``'s ``robot_config``)."""
    options = dict(config.get("env_options") or {})
    robot = options.get("robot")
    if isinstance(robot, dict):
        options["robot"] = f"{robot.get('name')} (config of {robot.get('description')})"
    elif isinstance(robot, str) and robot.startswith("RobotConfig("):
        options["robot"] = f"{config.get('robot')} (a config)"
    return options


def _plot_normal_forces(run: RunData, out: Path) -> Path:
    from wbsim.report import plot_run

    return plot_run(run, out)
