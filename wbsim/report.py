"""``wbsim report``: one table row per episode folder and plots per episode (and with ``--html`` a
page: :mod:`wbsim.html_report`).

Reads only what :mod:`wbsim.episode_log` wrote. The plot (matplotlib, PNG, written as
``RUN_DIR/normal_forces.png``) shows the normal force per foot against time, commanded (dashed) and
simulated (solid), with contact-mode switches as vertical lines and violations as red markers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wbsim.diagnostics import VIOLATION_KINDS as DIAGNOSED_VIOLATIONS
from wbsim.episode_log import RunData, load_run

__all__ = ["VIOLATION_KINDS", "foot_normal_force", "format_table", "plot_run", "report_rows"]

#: Event kinds counted as violations, in the table's column order (the diagnostics' own list).
VIOLATION_KINDS = DIAGNOSED_VIOLATIONS
FEET = ("left_foot", "right_foot")
_SLIP = VIOLATION_KINDS.index("planar_complementarity") + 1
_COLUMNS = (*VIOLATION_KINDS[:_SLIP], "slides", *VIOLATION_KINDS[_SLIP:])  # slides after slips


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
    ``planar_complementarity`` events at MuJoCo's cone), tracking, fell. A count that a log's
    summary does not hold (a log older than that kind) is ``None``."""
    rows = []
    for run in runs:
        s, events = run.summary, s_events(run)
        missing = None if "events" in s else 0  # counted from events.jsonl: absent means none
        rows.append(
            {
                "run": run.dir.name,
                "controller": s.get("controller", run.config.get("controller", "?")),
                "env": s.get("env", run.config.get("env", "?")),
                "seconds": float(s.get("seconds", run["t"][-1] if len(run.steps) else 0.0)),
                "switches": int(events.get("mode_switch", 0)),
                **{k: int(events[k]) if k in events else missing for k in VIOLATION_KINDS},
                "slides": s.get("diagnostics", {}).get("slides", _slides_of_events(run)),
                "max_joint_error_rad": s.get("max_joint_error_rad", float("nan")),
                "com_tracking_rms_m": s.get("com_tracking_rms_m", float("nan")),
                "fell": bool(s.get("fell", False)),
                "status": s.get("status", "no summary (killed?)"),
            }
        )
    return rows


def _slides_of_events(run: RunData) -> int | None:
    """The slides of a run without a summary (killed): its ``planar_complementarity`` events
    whose ``friction_used`` reaches the run's ``slide`` tolerance (config.json; the default for a
    log without it); ``None`` when the summary has events (a log older than slides) or an event
    lacks ``friction_used``."""
    if "events" in run.summary:
        return None
    from wbsim.diagnostics import Tolerances

    slide = float(run.config.get("tolerances", {}).get("slide", Tolerances().slide))
    used = [
        e.get("detail", {}).get("friction_used")
        for e in run.events
        if e.get("kind") == "planar_complementarity"
    ]
    if any(u is None for u in used):
        return None
    return sum(u >= slide for u in used)


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
            "yes" if r["fell"] else "no",
            r["status"],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    legend = ", ".join(
        f"{v} = {k}" if k != "slides" else "slide = of the slips, those at MuJoCo's friction cone"
        for k, v in short.items()
    )
    return (
        "\n".join(lines) + f"\n\nviolation columns: {legend}; switch = mode_switch events; "
        "- = not in that log"
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


def report(run_dirs: Sequence[str | Path], html: bool = False) -> tuple[str, list[Path]]:
    """Load the runs, return the table text and the written files: per run the normal-force plot,
    the overview plot (:func:`wbsim.plots.plot_overview`) and, with ``html``, the self-contained
    page (:func:`wbsim.html_report.write_html`). A folder that is not a run but holds runs
    (``runs/``) stands for every run in it."""
    from wbsim.episode_log import COLUMNS_FILE

    expanded: list[Path] = []
    for d in map(Path, run_dirs):
        if not (d / COLUMNS_FILE).is_file() and d.is_dir():
            children = sorted(c for c in d.iterdir() if (c / COLUMNS_FILE).is_file())
            if children:
                expanded += children
                continue
        expanded.append(d)
    runs = [load_run(d) for d in expanded]
    if html:  # its page holds both plots
        from wbsim.html_report import write_html

        return format_table(report_rows(runs)), [write_html(r.dir) for r in runs]
    from wbsim.plots import plot_overview

    return format_table(report_rows(runs)), [
        p for r in runs for p in (plot_run(r), plot_overview(r))
    ]
