"""wbsim.gait.gait_summary: planned switches against sensed ones, touch-downs, slips and slides."""

from __future__ import annotations

import pytest

from wbsim.gait import gait_summary

FEET = ("left_foot", "right_foot")
BOTH = {"left_foot", "right_foot"}


def _switch(foot, change, t):
    return {
        "kind": "mode_switch",
        "t": t,
        "where": foot,
        "detail": {"source": "simulated", "change": change},
    }


def _slip(point, t, used, speed):
    detail = {"source": "simulated", "friction_used": used, "slip_velocity": speed}
    return {"kind": "planar_complementarity", "t": t, "where": point, "detail": detail}


def test_switches_touchdowns_slips_and_slides():
    """The left foot steps (planned break at 1.0 s, make at 1.4 s; sensed 5 ms late and 10 ms
    late); the right foot's planned break at 2.0 s is never sensed but a contact mismatch covers
    it. Slips: one at the left touch-down at the cone (a slide at an impact), two on the right
    stance foot away from impacts (creep at half the cone, 3 mm/s, and a slide at 2 mm/s)."""
    planned = [
        (1.0, BOTH, {"right_foot"}),
        (1.4, {"right_foot"}, BOTH),
        (2.0, BOTH, {"left_foot"}),
        (9.0, {"left_foot"}, BOTH),  # after the horizon: not counted
    ]
    events = [
        _switch("left_foot", "break", 1.005),
        _switch("left_foot", "make", 1.41),
        {"kind": "contact_mismatch", "t": 1.99, "end_t": 2.1, "where": "right_foot", "detail": {}},
        _slip("left_foot_heel", 1.43, 1.0, 0.05),
        _slip("right_foot_toe", 1.2, 0.5, 0.003),
        _slip("right_foot_heel", 1.25, 1.0, 0.002),
    ]
    g = gait_summary(planned, events, FEET, horizon=3.0)
    assert g["planned_switches"] == 3 and g["sensed_within_window"] == 2
    assert g["max_abs_delay_s"] == pytest.approx(0.01)
    (late,) = g["late_or_missing"]
    assert (late["foot"], late["change"], late["delay_s"], late["logged_as_mismatch"]) == (
        "right_foot",
        "break",
        None,
        True,
    )
    assert g["touchdowns"] == {"left_foot": 1, "right_foot": 0, "total": 1}
    assert (g["slips_at_impacts"], g["slips_elsewhere"]) == (1, 2)
    assert g["slip_speed_max_elsewhere"] == pytest.approx(0.003)
    assert (g["slides_at_impacts"], g["slides_elsewhere"]) == (1, 1)
    stricter = gait_summary(planned, events, FEET, horizon=3.0, slide=1.01)
    assert (stricter["slides_at_impacts"], stricter["slides_elsewhere"]) == (0, 0)
