"""Gait figures of an episode, from its events and its plan: how each planned contact switch was
sensed, touch-downs, and whether the slips happened at impacts.

Owns :func:`gait_summary` (pure: event dicts in, a JSON-ready dict out) and its windows. It judges
nothing the diagnostics do not already log: it relates the ``mode_switch`` (``source
"simulated"``), ``contact_mismatch`` and ``planar_complementarity`` events of
:mod:`wbsim.diagnostics` to the plan's switch times (``plan.switch_times(horizon)``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from wbsim.diagnostics import Tolerances

__all__ = ["IMPACT_WINDOW", "SWITCH_WINDOW", "gait_summary"]

#: s: a planned switch is "sensed on time" when the simulation's switch of that foot in the same
#: direction comes within this of it (issue #16's bar: 20 ms).
SWITCH_WINDOW = 0.02
#: s: a slip is "at an impact" when it starts this long before (first) to this long after
#: (second) a sensed touch-down of its foot.
IMPACT_WINDOW = (0.02, 0.10)


def _foot_of(where: str, feet: Sequence[str]) -> str | None:
    for f in feet:
        if where == f or where.startswith(f + "_"):
            return f
    return None


def gait_summary(
    planned: Iterable[tuple[float, Iterable[str], Iterable[str]]],
    events: Iterable[Mapping[str, Any]],
    feet: Sequence[str],
    horizon: float,
    switch_window: float = SWITCH_WINDOW,
    impact_window: tuple[float, float] = IMPACT_WINDOW,
    slide: float = Tolerances.slide,
) -> dict[str, Any]:
    """Relate an episode's events to its planned switches.

    Args:
        planned: ``(time s, before, after)`` contact-set switches of the plan
            (:meth:`wbsim.envs.schedules.PhasePlan.switch_times`).
        events: the episode's events as dicts (:meth:`wbsim.diagnostics.Event.to_dict`).
        feet: the robot's foot names.
        horizon: the episode's end, s (later planned switches are not counted).
        switch_window: see :data:`SWITCH_WINDOW`.
        impact_window: see :data:`IMPACT_WINDOW`.
        slide: a slip whose ``detail["friction_used"]`` reached this is a slide
            (:attr:`wbsim.diagnostics.Tolerances.slide`), else creep.

    Returns:
        ``planned_switches`` (foot switches planned before ``horizon``, one per foot that
        changes), ``sensed_within_window`` (of them, sensed within ``switch_window``),
        ``max_abs_delay_s`` (largest ``|sensed - planned|`` over the matched ones; the nearest
        sensed switch of that foot and direction), ``late_or_missing`` (the others, each with its
        ``foot``, ``t``, ``change``, nearest ``delay_s`` or ``None``, and ``logged_as_mismatch``:
        a ``contact_mismatch`` of that foot covers it), ``touchdowns`` (sensed makes after the
        first planned switch, per foot and in all), ``slips_at_impacts`` and ``slips_elsewhere``
        (``planar_complementarity`` events of the simulation at the feet's points, a hand's
        not counted; at an impact when they start within ``impact_window`` of a sensed make of
        their foot), ``slip_speed_max_elsewhere`` (m/s, the fastest slip not at an impact, at
        its event's first step), and of those slips the ``slides_at_impacts`` and
        ``slides_elsewhere`` (at MuJoCo's friction cone; the rest is creep).
    """
    events = list(events)
    sensed: dict[tuple[str, str], list[float]] = {}
    mismatches: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        d = e.get("detail", {})
        if e["kind"] == "mode_switch" and d.get("source") == "simulated":
            sensed.setdefault((e["where"], d.get("change", "")), []).append(float(e["t"]))
        elif e["kind"] == "contact_mismatch":
            end = float(e.get("end_t", e["t"])) + 1e-9
            mismatches.setdefault(e["where"], []).append((float(e["t"]), end))
    n_planned, within, worst = 0, 0, 0.0
    missing = []
    first_switch = None
    for t, before, after in planned:
        if t > horizon:
            break
        first_switch = t if first_switch is None else first_switch
        before, after = set(before), set(after)
        for foot in sorted(before ^ after):
            change = "make" if foot in after else "break"
            n_planned += 1
            times = sensed.get((foot, change), [])
            delay = min((s - t for s in times), key=abs, default=None)
            if delay is not None and abs(delay) <= switch_window + 1e-9:
                within += 1
                worst = max(worst, abs(delay))
                continue
            covered = any(
                a - switch_window <= t <= b + switch_window for a, b in mismatches.get(foot, [])
            )
            missing.append(
                {
                    "foot": foot,
                    "t": t,
                    "change": change,
                    "delay_s": delay,
                    "logged_as_mismatch": covered,
                }
            )
    start = first_switch if first_switch is not None else 0.0
    touchdowns = {
        f: [t for t in sensed.get((f, "make"), []) if t >= start - switch_window] for f in feet
    }
    lo, hi = impact_window
    at_impacts, elsewhere = dict.fromkeys(feet, 0), dict.fromkeys(feet, 0)
    slides = {"at_impacts": 0, "elsewhere": 0}
    fastest = 0.0
    for e in events:
        d = e.get("detail", {})
        if e["kind"] != "planar_complementarity" or d.get("source") != "simulated":
            continue
        owner = _foot_of(e["where"], feet)
        if owner is None:
            continue
        t = float(e["t"])
        at_impact = any(td - lo <= t <= td + hi for td in sensed.get((owner, "make"), []))
        if at_impact:
            at_impacts[owner] += 1
        else:
            elsewhere[owner] += 1
            fastest = max(fastest, float(d.get("slip_velocity", 0.0)))
        if d.get("friction_used", 0.0) >= slide:
            slides["at_impacts" if at_impact else "elsewhere"] += 1
    return {
        "planned_switches": n_planned,
        "sensed_within_window": within,
        "switch_window_s": switch_window,
        "max_abs_delay_s": worst,
        "late_or_missing": missing,
        "touchdowns": {
            **{f: len(v) for f, v in touchdowns.items()},
            "total": sum(len(v) for v in touchdowns.values()),
        },
        "slips_at_impacts": sum(at_impacts.values()),
        "slips_elsewhere": sum(elsewhere.values()),
        "slip_speed_max_elsewhere": fastest,
        "slides_at_impacts": slides["at_impacts"],
        "slides_elsewhere": slides["elsewhere"],
    }
