"""Sole contact points, the support polygon, and contact sensing from MuJoCo.

Owns: where the sole points are in the simulation, the support polygon of a contact set, and what the
simulation says about each sole point every step (:class:`ContactSensor` -> :class:`ContactSensing`):
gap to the floor, contact force on the robot, slip velocity and contact mode. It never decides what is
a violation; that belongs to :mod:`wbsim.diagnostics`.

MuJoCo facts this module relies on (verified against the installed MuJoCo 4.x in
``tests/test_contacts.py``):

* ``mujoco.mj_contactForce(m, d, i, out)`` returns the 6D force of contact ``i`` in its contact frame,
  normal first; ``d.contact.frame[i]`` holds the frame's axes as ROWS, the first row being the normal,
  which points from ``geom1`` to ``geom2``. Rotated to the world (``frame.T @ out[:3]``) it is the force
  that ``geom1`` exerts on ``geom2``; the force on ``geom1`` is its negative. MuJoCo orders a pair by geom
  type (a plane is always ``geom1``, a sphere comes before a box), so either geom can be the robot's.
* In MuJoCo 4.x a geom pair is listed in ``d.contact`` when ``dist < margin + gap`` and is active (has
  constraint rows, ``efc_address >= 0``) only when ``dist < margin``; a listed, inactive pair
  (``exclude == 1``, "in gap") carries no force.
* After ``mj_step`` every derived quantity (``site_xpos``, ``cvel``, ``contact``, ``efc_force``,
  ``qacc``) belongs to the state BEFORE the integration, i.e. the state the controller saw; sensing
  read right after ``mj_step`` is therefore consistent with the command of that step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import mujoco
import numpy as np

from wbsim.errors import WbsimError

__all__ = [
    "convex_hull",
    "sole_points_in_world",
    "support_polygon",
    "point_in_polygon",
    "OPEN",
    "STICKING",
    "SLIDING",
    "MODE_NAMES",
    "SensingThresholds",
    "ContactSensing",
    "PointContactSensor",
    "ContactSensor",
    "sense_point_contacts",
]


def _cross2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """z component of the cross product of planar vectors ``(..., 2)``."""
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def convex_hull(points_xy: np.ndarray) -> np.ndarray:
    """Convex hull of planar points, counter-clockwise, no repeated end point.

    Args:
        points_xy: ``(n, 2)`` points, m.

    Returns:
        ``(k, 2)`` hull vertices (Andrew's monotone chain; collinear points dropped).
    """
    pts = np.unique(np.asarray(points_xy, dtype=float).reshape(-1, 2), axis=0)
    if len(pts) <= 2:
        return pts

    def half(seq):
        out: list[np.ndarray] = []
        for p in seq:
            while len(out) >= 2 and _cross2(out[-1] - out[-2], p - out[-2]) <= 0:
                out.pop()
            out.append(p)
        return out

    lower, upper = half(pts), half(pts[::-1])
    return np.array(lower[:-1] + upper[:-1])


def point_in_polygon(polygon_ccw: np.ndarray, p: np.ndarray, margin: float = 0.0) -> bool:
    """Whether ``p (2,)`` lies inside the convex counter-clockwise polygon ``(k, 2)`` by at least
    ``margin`` metres from every edge."""
    poly = np.asarray(polygon_ccw)
    if len(poly) < 3:
        return False
    edges = np.roll(poly, -1, axis=0) - poly
    rel = np.asarray(p)[None, :] - poly
    dist = _cross2(edges, rel) / np.linalg.norm(edges, axis=1)
    return bool(np.all(dist > margin))


def sole_points_in_world(robot, data: mujoco.MjData, feet: Iterable[str] | None = None) -> np.ndarray:
    """World positions ``(4 * n_feet, 3)`` of the sole points of ``feet`` (default: both), m,
    read from MuJoCo's sites (``mj_kinematics`` must have run)."""
    names = robot.feet if feet is None else feet
    return np.array([data.site_xpos[s] for f in names for s in robot.foot(f).mj_site_ids])


def support_polygon(robot, data: mujoco.MjData, feet: Iterable[str] | None = None) -> np.ndarray:
    """Support polygon ``(k, 2)``, world x-y, counter-clockwise: the convex hull of the sole points of
    the feet in contact."""
    return convex_hull(sole_points_in_world(robot, data, feet)[:, :2])
