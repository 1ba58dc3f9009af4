"""The plots of a logged run against time (matplotlib, PNG), from what :mod:`wbsim.episode_log`
wrote.

:func:`plot_overview` draws one figure whose panels share the time axis: the CoM and its
reference (horizontal, and height), the joint errors, the torques against their limits, each sole
point's contact mode, and the events; pushes are shaded on every panel. The normal-force plot is
:func:`wbsim.report.plot_run`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wbsim.episode_log import RunData
from wbsim.overlay import MODE_COLORS

__all__ = ["plot_overview", "push_spans"]

#: One marker colour per event kind (the loop's own kinds last).
_KIND_COLORS = {
    "mode_switch": "0.35",
    "force_sign": "tab:red",
    "friction_cone": "tab:orange",
    "complementarity": "tab:purple",
    "planar_complementarity": "tab:brown",
    "contact_mismatch": "tab:pink",
    "non_sole_contact": "tab:olive",
    "fallback": "tab:cyan",
    "solver_failure": "tab:blue",
    "torque_limit": "gold",
    "fall": "black",
    "invalid_command": "black",
    "simulator_warning": "black",
}


def push_spans(run: RunData) -> list[tuple[float, float]]:
    """``(start, end)`` times, s, of each push: the runs of logged steps with a non-zero
    ``push_x..z`` (end: the last such step's ``t_after``, or its ``t`` in older logs)."""
    if not len(run.steps) or "push_x" not in run.columns:
        return []
    on = np.linalg.norm(np.stack([run[f"push_{a}"] for a in "xyz"], axis=1), axis=1) > 0
    t = run["t"]
    t_end = run["t_after"] if "t_after" in run.columns else t
    edges = np.flatnonzero(np.diff(np.concatenate([[0], on.astype(int), [0]])))
    return [(float(t[a]), float(t_end[b - 1])) for a, b in zip(edges[::2], edges[1::2])]


def _limits(run: RunData, joints: list[str]) -> np.ndarray:
    """``(n,)`` effort limits, N·m, of ``joints`` from ``config.json`` (NaN where unknown)."""
    known = run.config.get("joints", {})
    return np.array([float(known.get(j, {}).get("effort_limit", np.nan)) for j in joints])


def plot_overview(run: RunData, out: str | Path | None = None, top: int = 3) -> Path:
    """Write the overview figure of ``run`` (PNG, ``RUN_DIR/overview.png`` by default); returns
    its path.

    Panels (time in s on the shared axis; pushes shaded light red on every panel):
      1. CoM x, y (world, m), solid, and the schedule's reference, dashed (NaN: none, and the
         title says so);
      2. CoM height z and its reference, m (likewise);
      3. joint errors ``qerr`` to the reset posture, rad: every joint thin, the ``top`` largest
         named;
      4. torques against their limits: ``|tau| / limit`` of the ``top`` joints nearest their
         limit, commanded (solid) and as MuJoCo applied them (dotted), the largest ratio over
         all joints in black; 1 = the limit;
      5. contact mode of each sole point (grey open, green sticking, orange sliding: the
         overlay's colours); white hatching where the point's foot is not planned in contact;
      6. events: one row per kind, a marker at the first step and a bar over the duration.

    Args:
        run: a loaded run (:func:`wbsim.episode_log.load_run`).
        out: the PNG path.
        top: joints named in panels 3 and 4.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    out = Path(out) if out else run.dir / "overview.png"
    t = run["t"] if len(run.steps) else np.zeros(0)
    fig, axes = plt.subplots(
        6,
        1,
        figsize=(11, 15),
        dpi=90,
        sharex=True,
        gridspec_kw={"height_ratios": [1.1, 0.8, 1.1, 1.1, 1.2, 1.0]},
    )
    ax_com, ax_z, ax_q, ax_tau, ax_mode, ax_ev = axes
    pushes = push_spans(run)
    for lo, hi in pushes:
        for ax in axes:
            ax.axvspan(lo, hi, color="tab:red", alpha=0.12, lw=0)
    # 1-2: CoM and reference
    for ax, axes_names in ((ax_com, "xy"), (ax_z, "z")):
        for a, color in zip(axes_names, ("tab:blue", "tab:green", "tab:purple")):
            if f"com_{a}" in run.columns and len(t):
                ax.plot(t, run[f"com_{a}"], color=color, lw=1.2, label=f"CoM {a}")
                ref = run[f"com_ref_{a}"]
                if np.isfinite(ref).any():
                    ax.plot(t, ref, "--", color=color, lw=1.0, label=f"reference {a}")
        ax.set_ylabel("m")
        if ax.lines:  # an empty table: no line, no legend (matplotlib would complain)
            ax.legend(loc="upper left", fontsize=7, ncol=4)
    for ax, what in ((ax_com, "centre of mass (world)"), (ax_z, "CoM height")):
        has_ref = any(line.get_label().startswith("reference") for line in ax.lines)
        said = "and the schedule's reference" if has_ref else "(the schedule gives no reference)"
        ax.set_title(f"{what} {said}", fontsize=9, loc="left")
    # 3: joint errors
    names, qerr = run.prefixed("qerr/")
    if names and len(t):
        ax_q.plot(t, qerr, color="0.75", lw=0.6)
        worst = np.argsort(np.nanmax(np.abs(qerr), axis=0))[::-1][:top]
        for i in worst:
            ax_q.plot(t, qerr[:, i], lw=1.2, label=names[i].split("/", 1)[1])
        ax_q.legend(loc="upper left", fontsize=7, ncol=top)
    ax_q.set_ylabel("rad")
    ax_q.set_title(
        f"joint errors to the reset posture (grey: all joints; the {top} largest named)",
        fontsize=9,
        loc="left",
    )
    # 4: torques against limits
    names, tau = run.prefixed("tau/")
    _, applied = run.prefixed("tau_applied/")
    joints = [n.split("/", 1)[1] for n in names]
    limits = _limits(run, joints)
    if joints and len(t) and np.isfinite(limits).any():
        ratio = np.abs(tau) / limits
        ratio_applied = np.abs(applied) / limits if applied.shape == tau.shape else None
        ax_tau.plot(t, np.nanmax(ratio, axis=1), color="black", lw=1.0, label="largest over joints")
        for i in np.argsort(np.nanmax(ratio, axis=0))[::-1][:top]:
            (line,) = ax_tau.plot(t, ratio[:, i], lw=1.1, label=joints[i])
            if ratio_applied is not None:
                ax_tau.plot(t, ratio_applied[:, i], ":", color=line.get_color(), lw=1.1)
        ax_tau.axhline(1.0, color="tab:red", lw=1.0, ls="--", label="limit")
        ax_tau.legend(loc="upper left", fontsize=7, ncol=top + 2)
    else:
        ax_tau.text(
            0.5,
            0.5,
            "no joint limits in config.json",
            ha="center",
            va="center",
            transform=ax_tau.transAxes,
        )
    ax_tau.set_ylabel("|tau| / limit")
    ax_tau.set_title(
        "torques against their limits (solid commanded, dotted applied by MuJoCo)",
        fontsize=9,
        loc="left",
    )
    # 5: contact modes
    names, modes = run.prefixed("mode/")
    if names and len(t):
        points = [n.split("/", 1)[1] for n in names]
        dt = float(t[1] - t[0]) if len(t) > 1 else 1.0
        extent = (float(t[0]), float(t[-1]) + dt, len(points) - 0.5, -0.5)
        ax_mode.imshow(
            modes.T,
            aspect="auto",
            interpolation="nearest",
            extent=extent,
            cmap=ListedColormap(MODE_COLORS[:, :3]),
            vmin=-0.5,
            vmax=2.5,
        )
        for k, p in enumerate(points):
            col = next(
                (
                    f"planned_{f}"
                    for f in ("left_foot", "right_foot")
                    if p.startswith(f) and f"planned_{f}" in run.columns
                ),
                None,
            )
            if col is not None:
                off = run[col] < 0.5
                ax_mode.fill_between(
                    t,
                    k - 0.5,
                    k + 0.5,
                    where=off,
                    facecolor="none",
                    edgecolor="white",
                    hatch="///",
                    lw=0,
                )
        ax_mode.set_yticks(range(len(points)), points, fontsize=6)
        handles = [
            matplotlib.patches.Patch(
                color="#{:02x}{:02x}{:02x}".format(*(round(255 * c) for c in MODE_COLORS[i, :3])),
                label=label,
            )
            for i, label in enumerate(("open", "sticking", "sliding"))
        ]
        ax_mode.legend(handles=handles, loc="upper right", fontsize=7, ncol=3)
    ax_mode.set_title(
        "contact mode per sole point (hatched: foot not planned in contact)", fontsize=9, loc="left"
    )
    # 6: events
    kinds = [k for k in _KIND_COLORS if any(e.get("kind") == k for e in run.events)]
    for row, kind in enumerate(kinds):
        mine = [e for e in run.events if e.get("kind") == kind]
        starts = np.array([e["t"] for e in mine], dtype=float)
        ends = np.array([e.get("end_t", e["t"]) for e in mine], dtype=float)
        color = _KIND_COLORS[kind]
        ax_ev.hlines(np.full(len(mine), row), starts, np.maximum(ends, starts), color=color, lw=4)
        ax_ev.plot(starts, np.full(len(mine), row), "|", color=color, ms=10, mew=1.5)
    ax_ev.set_yticks(
        range(len(kinds)),
        [f"{k} ({sum(e.get('kind') == k for e in run.events)})" for k in kinds],
        fontsize=7,
    )
    ax_ev.set_ylim(len(kinds) - 0.5 if kinds else 0.5, -0.5)
    ax_ev.set_title(
        "events (count; bar: duration)" + ("; no event" if not kinds else ""),
        fontsize=9,
        loc="left",
    )
    ax_ev.set_xlabel("time (s)")
    for ax in axes:
        ax.grid(alpha=0.3)
    if len(t):
        ax_ev.set_xlim(
            float(t[0]), float(run["t_after"][-1]) if "t_after" in run.columns else float(t[-1])
        )
    s = run.summary
    fig.suptitle(
        f"{s.get('env', run.config.get('env', ''))}  "
        f"{s.get('controller', run.config.get('controller', ''))}  ({run.dir.name}"
        + ("; pushes shaded red)" if pushes else ")"),
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out
