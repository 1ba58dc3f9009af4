"""``wbsim report``: one table row per episode folder and plots per episode (and with ``--html`` a
page: :mod:`wbsim.html_report`).

Reads only what :mod:`wbsim.episode_log` wrote. The plot (matplotlib, PNG, written as
``RUN_DIR/normal_forces.png``) shows the normal force per foot against time, commanded (dashed) and
simulated (solid), with contact-mode switches as vertical lines and violations as red markers.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wbsim.diagnostics import VIOLATION_KINDS as DIAGNOSED_VIOLATIONS
from wbsim.episode_log import COLUMNS_FILE, STEPS_FILE, RunData, load_run
from wbsim.errors import WbsimError

__all__ = [
    "TABLE_METRICS",
    "VIOLATION_KINDS",
    "Report",
    "foot_normal_force",
    "format_table",
    "plot_run",
    "report",
    "report_rows",
    "table_max_joint_error",
    "table_metrics",
    "table_note",
]

#: Event kinds counted as violations, in the table's column order (the diagnostics' own list).
VIOLATION_KINDS = DIAGNOSED_VIOLATIONS
FEET = ("left_foot", "right_foot")
_SLIP = VIOLATION_KINDS.index("planar_complementarity") + 1
_COLUMNS = (*VIOLATION_KINDS[:_SLIP], "slides", *VIOLATION_KINDS[_SLIP:])  # slides after slips
_COUNTED = {*VIOLATION_KINDS, "mode_switch"}  # the kinds with a column of their own


def foot_normal_force(run, foot: str, kind: str) -> np.ndarray | None:
    """``(n,)`` normal force on ``foot`` per logged step, N: the sum of its sole points' z forces
    (``kind`` ``"f_sim"`` or ``"f_cmd"``). For a foot commanded as a wrench (wrench contact model:
    its points' ``f_cmd`` are NaN) the wrench's ``fz`` (``w_cmd/<foot>/fz``). ``None`` when the log
    has no such columns."""
    names, block = run.prefixed(f"{kind}/{foot}_")
    cols = [i for i, n in enumerate(names) if n.endswith("/z")]
    if not cols:
        return None
    fz = block[:, cols].sum(axis=1)
    if kind == "f_cmd" and f"w_cmd/{foot}/fz" in run.columns:
        wz = run[f"w_cmd/{foot}/fz"]
        fz = np.where(np.isnan(fz) & ~np.isnan(wz), wz, fz)
    return fz


def report_rows(runs: Sequence[RunData]) -> list[dict[str, Any]]:
    """One dict per run: controller, env, duration, switches, violations by kind, ``slides`` (the
    ``planar_complementarity`` events at MuJoCo's cone; ``"N+"``: at least N), tracking, ``other`` (every other event
    kind that occurred -> its count, e.g. ``fall``, ``simulator_warning``), ``fell`` (without a
    summary: ``True`` if events.jsonl holds a fall, else ``None``, unknown), status, ``rows`` (rows in ``steps.f64``), ``logged_rows`` (rows the
    summary says were logged; ``None`` without one) and ``table`` (:func:`table_note`). A count
    that a log's summary does not hold (a log older than that kind) is ``None``. The metrics of
    :func:`table_metrics` (``max_joint_error_rad``, ``base_drift_m``, ...) are the summary's, or
    for a run without one (killed) the step table's."""
    rows = []
    for run in runs:
        s, events = run.summary, s_events(run)
        missing = None if "events" in s else 0  # counted from events.jsonl: absent means none
        from_table = table_metrics(run, skip=s)  # what the summary lacks (a killed run: all)
        rows.append(
            {
                "run": run.dir.name,
                "controller": s.get("controller", run.config.get("controller", "?")),
                "env": s.get("env", run.config.get("env", "?")),
                "seconds": float(s.get("seconds", _table_seconds(run))),
                "switches": int(events.get("mode_switch", 0)),
                **{k: int(events[k]) if k in events else missing for k in VIOLATION_KINDS},
                "slides": s.get("diagnostics", {}).get("slides", _slides_of_events(run)),
                **{k: s[k] if k in s else from_table[k] for k in TABLE_METRICS},
                "com_tracking_rms_m": s.get("com_tracking_rms_m", float("nan")),
                "other": {k: int(n) for k, n in events.items() if k not in _COUNTED and n},
                "fell": bool(s["fell"]) if "fell" in s else (True if "fall" in events else None),
                "status": s.get("status", "no summary (killed?)"),
                "rows": len(run.steps),
                "logged_rows": s.get("logged_rows"),
            }
        )
        rows[-1]["table"] = table_note(rows[-1])
    return rows


def _table_seconds(run: RunData) -> float:
    """The simulated time a run's step table reaches, s: the time of the state after its last
    step (as a summary's ``seconds``), 0 without a row."""
    if not len(run.steps):
        return 0.0
    from wbsim.replay import state_times

    return float(state_times(run)[-1])


def table_max_joint_error(run: RunData) -> float:
    """The largest ``|qerr/*|`` in the step table, rad: the summary's ``max_joint_error_rad``
    (:class:`wbsim.metrics.EpisodeMetrics`, 0 at the reset posture, NaN rows skipped) for a run
    without a summary (killed). NaN without a row or a ``qerr/*`` column."""
    _, qerr = run.prefixed("qerr/")
    if not qerr.size:
        return float("nan")
    return float(np.fmax.reduce(np.abs(qerr), axis=None, initial=0.0))


#: The summary's metrics (:class:`wbsim.metrics.EpisodeMetrics`) that :func:`table_metrics` takes
#: from the step table.
TABLE_METRICS = (
    "max_joint_error_rad",
    "base_drift_m",
    "max_base_tilt_deg",
    "momentum_residual_max",
    "return",
)


def table_metrics(run: RunData, skip: Container[str] = ()) -> dict[str, float]:
    """The summary's metrics of :data:`TABLE_METRICS`, from the step table, for a run without a
    summary (killed); those named in ``skip`` (e.g. a summary's keys) are left out:
    ``max_joint_error_rad`` (:func:`table_max_joint_error`), ``base_drift_m`` (largest distance of
    ``base_x, base_y, base_z`` from the reset's, ``config.json``'s ``reset_qpos``, m),
    ``max_base_tilt_deg`` (largest ``base_tilt_deg``), ``momentum_residual_max`` (largest
    ``momentum_residual``, relative to ``m g``) and ``return`` (the sum of ``reward``). Maxima
    skip NaN rows and start at 0, as the summary's do. NaN for one the table (no row, or no such
    column) or the config (no ``reset_qpos``: an older log) cannot give."""
    nan = float("nan")
    rows = len(run.steps)

    def column(name: str) -> np.ndarray | None:
        return run[name] if rows and name in run.columns else None

    def largest(x: np.ndarray | None) -> float:
        return nan if x is None else float(np.fmax.reduce(x, axis=None, initial=0.0))

    reset = run.config.get("reset_qpos")
    base = [b for b in (column(f"base_{a}") for a in "xyz") if b is not None]
    drift = (
        np.linalg.norm(np.stack(base, axis=1) - np.asarray(reset[0:3], dtype=float), axis=1)
        if reset is not None and len(base) == 3
        else None
    )
    reward = column("reward")
    out = {
        "max_joint_error_rad": table_max_joint_error(run),
        "base_drift_m": largest(drift),
        "max_base_tilt_deg": largest(column("base_tilt_deg")),
        "momentum_residual_max": largest(column("momentum_residual")),
        "return": nan if reward is None else float(reward.sum()),
    }
    return {k: v for k, v in out.items() if k not in skip}


def table_note(row: dict[str, Any]) -> str | None:
    """What is wrong with a row's step table: ``"table cut: R of L rows"`` when ``steps.f64`` holds
    fewer rows than the summary's ``logged_rows``; ``"table empty"`` when it holds none and there
    is no summary (killed) to say how many were logged; ``"no step logged"`` when the summary says
    none was (a run stopped before its first step); ``None`` when it is whole (or a killed run's
    is not empty)."""
    logged = row.get("logged_rows")
    if isinstance(logged, int) and row["rows"] < logged:
        return f"table cut: {row['rows']} of {logged} rows"
    if row["rows"] == 0:
        return "no step logged" if logged == 0 else "table empty"
    return None


def _slides_of_events(run: RunData) -> int | str | None:
    """The slides of a run without a summary (killed): its ``planar_complementarity`` events
    whose ``friction_used`` reaches the run's ``slide`` tolerance (config.json; the default for a
    log without it); ``"N+"`` (at least N) when an event below it was still going when written
    (events.jsonl holds them as they started), so it may have reached the cone later; ``None``
    when the summary has events (a log older than slides) or an event lacks ``friction_used``."""
    if "events" in run.summary:
        return None
    from wbsim.diagnostics import Tolerances

    slide = float(run.config.get("tolerances", {}).get("slide", Tolerances().slide))
    slips = [e for e in run.events if e.get("kind") == "planar_complementarity"]
    used = [e.get("detail", {}).get("friction_used") for e in slips]
    if any(u is None for u in used):
        return None
    count = sum(u >= slide for u in used)
    open_below = any(e.get("ongoing") and not u >= slide for e, u in zip(slips, used))
    return f"{count}+" if open_below else count


def s_events(run: RunData) -> dict[str, int]:
    """Event counts: from the summary, or counted from events.jsonl when the summary is missing."""
    if "events" in run.summary:
        return dict(run.summary["events"])
    counts: dict[str, int] = {}
    for e in run.events:
        counts[e.get("kind", "?")] = counts.get(e.get("kind", "?"), 0) + 1
    return counts


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """A plain-text table of :func:`report_rows` (Markdown-compatible)."""
    short = {
        "force_sign": "f<0",
        "friction_cone": "cone",
        "complementarity": "compl",
        "planar_complementarity": "slip",
        "slides": "slide",  # the slips at MuJoCo's friction cone
        "contact_mismatch": "mism",
        "non_sole_contact": "body",
        "fallback": "fallb",
        "solver_failure": "fail",
        "torque_limit": "lim",
    }
    head = [
        "run",
        "controller",
        "env",
        "s",
        "switch",
        *[short[k] for k in _COLUMNS],
        "max qerr rad",
        "CoM rms mm",
        "other events",
        "fell",
        "status",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [
            r["run"],
            r["controller"],
            r["env"],
            f"{r['seconds']:.2f}",
            str(r["switches"]),
            *["-" if r.get(k) is None else str(r[k]) for k in _COLUMNS],
            _num(r["max_joint_error_rad"]),
            _num(r["com_tracking_rms_m"], 2, 1e3),
            " ".join(f"{k}={n}" for k, n in r.get("other", {}).items()) or "none",
            {True: "yes", False: "no"}.get(r["fell"], "? (killed)"),
            "; ".join(x for x in (r["status"], r.get("table")) if x),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    legend = ", ".join(
        f"{v} = {k}" if k != "slides" else "slide = of the slips, those at MuJoCo's friction cone"
        for k, v in short.items()
    )
    return (
        "\n".join(lines) + f"\n\nviolation columns: {legend}; switch = mode_switch events; "
        "other events = every other event kind that occurred, with its count; "
        "- = not in that log; N+ = at least N (a killed run's events as they started); "
        "fell ? = unknown (no summary: the run was killed)"
    )


def _num(x: float, digits: int = 4, scale: float = 1.0) -> str:
    """``scale * x`` with ``digits`` decimals; ``"-"`` for anything that is not a finite number
    (a summary stores NaN as the string ``"nan"``)."""
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x)
    return f"{scale * x:.{digits}f}" if ok else "-"


def plot_run(run: RunData, out: str | Path | None = None) -> Path:
    """Normal force per foot against time, with switches and violations; returns the PNG's path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out) if out else run.dir / "normal_forces.png"
    t = run["t"] if len(run.steps) else np.zeros(0)
    fig, ax = plt.subplots(figsize=(9, 4), dpi=100)
    colors = {"left_foot": "tab:blue", "right_foot": "tab:green"}
    for foot in FEET:
        for kind, style, label in (("f_sim", "-", "simulated"), ("f_cmd", "--", "commanded")):
            fz = foot_normal_force(run, foot, kind)
            if fz is not None and len(t):
                ax.plot(t, fz, style, color=colors[foot], lw=1.2, label=f"{foot} {label}")
    ymax = ax.get_ylim()[1] if ax.lines else 1.0
    first_switch = first_violation = True
    for e in run.events:
        if e.get("kind") == "mode_switch":
            ax.axvline(
                e["t"], color="0.3", lw=0.8, ls=":", label="mode switch" if first_switch else None
            )
            first_switch = False
        elif e.get("kind") in VIOLATION_KINDS:
            ax.plot(
                [e["t"]],
                [0.95 * ymax],
                "v",
                color="red",
                ms=6,
                label="violation" if first_violation else None,
            )
            first_violation = False
    s = run.summary
    ax.set_title(f"{s.get('env', '')}  {s.get('controller', '')}  ({run.dir.name})")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("normal force (N)")
    ax.grid(alpha=0.3)
    if ax.lines:
        ax.legend(loc="lower right", fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


@dataclass
class Report:
    """What :func:`report` made.

    Attributes:
        table: :func:`format_table` of the runs that loaded.
        runs: the folders of the runs that loaded (the table's rows).
        written: the files written (plots, pages).
        problems: ``(folder, reason)`` per folder that is not a loadable run, and per run whose
            plots or page could not be written (its row is in the table).
        notes: one line per run whose step table is cut, or empty without a summary
            (:func:`table_note`).
    """

    table: str
    runs: list[Path] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    problems: list[tuple[Path, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def expand_run_dirs(run_dirs: Sequence[str | Path]) -> list[Path]:
    """``run_dirs`` with each folder that is not a run but holds runs (``runs/``) replaced by the
    runs in it (sorted); the others as given (:func:`report` names what is wrong with them)."""
    expanded: list[Path] = []
    for d in map(Path, run_dirs):
        if not (d / COLUMNS_FILE).is_file() and d.is_dir():
            children = sorted(c for c in d.iterdir() if (c / COLUMNS_FILE).is_file())
            if children:
                expanded += children
                continue
        expanded.append(d)
    return expanded


def report(
    run_dirs: Sequence[str | Path], html: bool = False, plots_dir: str | Path | None = None
) -> Report:
    """Load the runs and write per run the normal-force plot, the overview plot
    (:func:`wbsim.plots.plot_overview`) and, with ``html``, the self-contained page
    (:func:`wbsim.html_report.write_html`, which holds both plots).

    Args:
        run_dirs: run folders; a folder that is not a run but holds runs (``runs/``) stands for
            every run in it (a folder in it that is not a run, e.g. a PPO output, is left out).
        html: write the pages.
        plots_dir: where the files go: ``plots_dir/RUN_NAME/`` (``RUN_NAME-2`` for a second run
            of that name); default each run's own folder.

    One bad folder does not stop the others: a folder that does not load, and a run whose files
    cannot be written (a read-only folder), is listed in :attr:`Report.problems` with the reason;
    its row is in the table if it loaded.
    """
    from wbsim.plots import plot_overview

    runs: list[RunData] = []
    problems: list[tuple[Path, str]] = []
    for d in expand_run_dirs(run_dirs):
        try:
            runs.append(load_run(d))
        except WbsimError as exc:
            problems.append((d, str(exc)))
    rows = report_rows(runs)
    notes = [
        f"{r.dir / STEPS_FILE}: {row['table']}"
        + (" (the summary's logged_rows)" if row["table"].startswith("table cut") else "")
        + "; the table and plots show what it holds"
        for r, row in zip(runs, rows)
        if row["table"] and row["table"] != "no step logged"
    ]
    written: list[Path] = []
    taken: set[str] = set()
    for r in runs:
        out = r.dir
        if plots_dir is not None:
            name, k = r.dir.name, 1
            while name in taken:
                k += 1
                name = f"{r.dir.name}-{k}"
            taken.add(name)
            out = Path(plots_dir) / name
        try:
            out.mkdir(parents=True, exist_ok=True)
            if html:
                from wbsim.html_report import write_html

                written.append(write_html(r.dir, out / "report.html", plots_dir=out))
            else:
                written.append(plot_run(r, out / "normal_forces.png"))
                written.append(plot_overview(r, out / "overview.png"))
        except (OSError, WbsimError) as exc:
            cause = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            hint = "; give another folder with --plots DIR" if plots_dir is None else ""
            problems.append(
                (r.dir, f"{'page' if html else 'plots'} not written to {out}: {cause}{hint}")
            )
    return Report(format_table(rows), [r.dir for r in runs], written, problems, notes)
