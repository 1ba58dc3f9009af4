"""Sole contact points and the support polygon.

Owns: where the sole points are in the simulation, the support polygon of a contact set. (Sensing of
gaps, forces, slip and modes from MuJoCo is added by the diagnostics work; deciding what is a violation
belongs to ``wbsim.diagnostics``.)
"""

from __future__ import annotations

from collections.abc import Iterable

import mujoco
import numpy as np

__all__ = ["convex_hull", "sole_points_in_world", "support_polygon", "point_in_polygon"]


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
