"""A DCC plan file as a whole-body reference a controller tracks in the simulation.

Owns :func:`reference_from_plan`: the plan's knots (``dt`` apart, 0.1 s for the G1 planner)
resampled on a fine grid, with the contact phases the plan implies, and a completion after its
last knot so that the reference ends at rest. Plans of ``wbsim dcc plan`` end at rest already
(:class:`~wbsim.planning.receding.Task`: the shipped ones with both feet down and the CoM still
at the feet's middle), and the completion then only holds; a plan made with ``--no-rest`` ends
wherever its horizon ends, mid-sway or with a foot in the air, and the completion lands that foot
and stops the CoM. Reads the plan with numpy only (:mod:`~wbsim.planning.plan_file`); no
CasADi, no MuJoCo.

Resampling (world frame, SI):

* CoM: cubic Hermite through the knots with the plan's CoM velocity (its centroidal linear momentum
  over the mass); acceleration from the plan's contact forces, ``sum f / m + g`` (linear between
  knots, as the planner's force rates make them), so the feed-forward is the plan's dynamics.
* Feet: the foot frame origin from the plan's sole points, ``p_i - R p_i^foot`` averaged over a
  foot's four corners (``R`` the plan's foot rotation, ``p_i^foot`` the corners of the robot's
  config); PCHIP (monotone between knots: no dip through the floor), its derivatives for velocity
  and acceleration; rotations along the geodesic between knots.
* Base rotation along the geodesic; posture: PCHIP of the joint angles (the plan's joint order).
* Foot wrenches: the plan's point forces summed per foot with their moments about the foot frame
  origin, linear between knots.
* Contact phases: a foot is planned in contact from the knot where the plan's ``foot_contact``
  becomes true (``h <= 1 mm`` and ``f_n >= 1 N`` at some point of it) to the knot where it becomes
  false: the switch times are the plan's ``switch_times`` per foot.

Completion after the last knot ``T``: a foot still in the air comes down to the floor in
``land_time`` s (a cubic from its planned height and speed, landing at ``touchdown_speed``; its
horizontal velocity brought to 0); the CoM follows the LIPM
(:class:`~wbsim.planning.walking.LipmTrajectory`) from the plan's CoM and DCM at ``T``: until the
landing the ZMP stays at the plan's own ZMP at ``T`` (``c - cdd / omega^2``, on the stance sole) and
the DCM runs forwards; the foot lands level with the DCM at that time (along the stance foot's
heading), as far beside the stance foot as the feet stood at the plan's start; then the ZMP goes from there through one free knot (solved so that the DCM
matches: position, velocity and acceleration continuous) to the middle of the soles in
``settle_shift`` s; the reference then stays at rest for ``hold`` s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from scipy.interpolate import CubicHermiteSpline, PchipInterpolator
from scipy.spatial import ConvexHull
from scipy.spatial.transform import Rotation, Slerp

from wbsim.errors import WbsimError
from wbsim.planning.plan_file import load_plan
from wbsim.planning.walking import LipmTrajectory, lipm_omega
from wbsim.reference import ContactPhase, WholeBodyReference

__all__ = ["reference_from_plan"]

_FEET = ("left_foot", "right_foot")


def _corners(robot: str, point_names: Sequence[str]) -> np.ndarray:
    """``(8, 3)`` the plan's sole points in their foot frames (the robot config's corners)."""
    from wbsim.robot_config import CORNER_NAMES, ROBOTS

    if robot not in ROBOTS:
        raise WbsimError(f"plan for robot {robot!r}: no config to read its sole corners")
    cfg = ROBOTS[robot]
    out = []
    names = list(point_names)
    for foot in _FEET:
        corners = cfg.feet[foot].corners
        if corners is None:
            raise WbsimError(f"plan for robot {robot!r}: its config gives no {foot} sole corners")
        for cname in CORNER_NAMES:
            if f"{foot}_{cname}" not in names:
                raise WbsimError(f"plan point names {names} lack {foot}_{cname}")
        out.append(
            [corners[CORNER_NAMES.index(n[len(foot) + 1 :])] for n in names if n.startswith(foot)]
        )
    return np.asarray(out, dtype=float).reshape(-1, 3)


def _slerp(times: np.ndarray, R: np.ndarray, grid: np.ndarray) -> np.ndarray:
    return Slerp(times, Rotation.from_matrix(R))(np.clip(grid, times[0], times[-1])).as_matrix()


def reference_from_plan(
    plan: Mapping[str, np.ndarray] | str | Path,
    sample_dt: float = 0.005,
    land_time: float = 0.4,
    touchdown_speed: float = 0.02,
    settle_shift: float = 0.8,
    hold: float = 1.5,
    offset: Sequence[float] | None = None,
    mass: float | None = None,
) -> WholeBodyReference:
    """The :class:`~wbsim.reference.WholeBodyReference` of a DCC plan (module docstring).

    Args:
        plan: a plan (:func:`~wbsim.planning.plan_file.load_plan`) or its path.
        sample_dt: the reference's sampling period, s.
        land_time: completion: time to bring a foot still in the air to the floor, s.
        touchdown_speed: its landing speed, m/s.
        settle_shift: completion: the ZMP's shift to the middle of the soles, s.
        hold: completion: rest at the end, s.
        offset: ``(3,)`` m added to every position (to replay the plan where the robot stands).
        mass: the robot's mass, kg (``None``: from the plan's first knot, at rest,
            ``sum f_z / g``).

    Raises:
        WbsimError: a plan that is not a G1 plan file (:func:`load_plan`), or without knots.
    """
    if not isinstance(plan, Mapping):
        plan = load_plan(plan)
    t = np.asarray(plan["times"], dtype=float)
    if t.size < 2:
        raise WbsimError("plan: at least two knots are needed")
    d = np.zeros(3) if offset is None else np.asarray(offset, dtype=float)
    robot = str(plan["robot"])
    P = np.asarray(plan["point_positions"], dtype=float) + d  # (T, 8, 3)
    F = np.asarray(plan["point_forces"], dtype=float)  # (T, 8, 3)
    R_feet = np.asarray(plan["foot_rotations"], dtype=float)  # (T, 2, 3, 3)
    corners = _corners(robot, [str(n) for n in plan["point_names"]])
    contact = np.asarray(plan["foot_contact"], dtype=bool)  # (T, 2)
    com = np.asarray(plan["com"], dtype=float) + d
    momentum = np.asarray(plan["momentum"], dtype=float)
    g = np.array([0.0, 0.0, -9.81])
    if mass is None:
        mass = float(F[0, :, 2].sum() / -g[2])
    T_end = float(t[-1])

    # -- feet at the knots: the frame origin from the corners ---------------------------------
    origin = np.empty((t.size, 2, 3))
    for k in range(2):
        pts = P[:, 4 * k : 4 * k + 4]  # (T, 4, 3)
        rel = np.einsum("tij,pj->tpi", R_feet[:, k], corners[4 * k : 4 * k + 4])
        origin[:, k] = (pts - rel).mean(axis=1)
    floor = float(np.min(P[0, :, 2]))  # the soles at rest

    # -- the plan's part, resampled -------------------------------------------------------------
    grid_plan = np.arange(0.0, T_end + 0.5 * sample_dt, sample_dt)
    grid_plan = grid_plan[grid_plan <= T_end + 1e-12]
    vel = momentum[:, :3] / mass
    cs = CubicHermiteSpline(t, com, vel, axis=0)
    acc_knots = F.sum(axis=1) / mass + g
    c_p, cd_p = cs(grid_plan), cs(grid_plan, 1)
    cdd_p = np.stack([np.interp(grid_plan, t, acc_knots[:, i]) for i in range(3)], axis=1)
    feet_p = PchipInterpolator(t, origin, axis=0)
    fpos_p, fvel_p, facc_p = feet_p(grid_plan), feet_p(grid_plan, 1), feet_p(grid_plan, 2)
    frot_p = np.stack([_slerp(t, R_feet[:, k], grid_plan) for k in range(2)], axis=1)
    q_wxyz = np.asarray(plan["base_quaternion_wxyz"], dtype=float)
    base_R = Rotation.from_quat(q_wxyz[:, [1, 2, 3, 0]]).as_matrix()
    brot_p = _slerp(t, base_R, grid_plan)
    post_p = PchipInterpolator(t, np.asarray(plan["joint_positions"], dtype=float), axis=0)(
        grid_plan
    )
    wr_knots = np.zeros((t.size, 2, 6))
    for k in range(2):
        f = F[:, 4 * k : 4 * k + 4]
        wr_knots[:, k, :3] = f.sum(axis=1)
        wr_knots[:, k, 3:] = np.cross(P[:, 4 * k : 4 * k + 4] - origin[:, k, None], f).sum(axis=1)
    wr_p = np.stack(
        [[np.interp(grid_plan, t, wr_knots[:, k, i]) for i in range(6)] for k in range(2)]
    ).transpose(2, 0, 1)

    # -- completion: land a foot in the air, bring the CoM to rest between the soles ------------
    in_air = [k for k in range(2) if not contact[-1, k]]
    z_c = float(com[-1, 2]) - floor
    w = lipm_omega(z_c, 9.81)
    c_end, cd_end, cdd_end = c_p[-1, :2], cd_p[-1, :2], cdd_p[-1, :2]
    sole_centre = [
        origin[-1, k, :2] + (R_feet[-1, k] @ corners[4 * k : 4 * k + 4].mean(axis=0))[:2]
        for k in range(2)
    ]
    middle = 0.5 * (sole_centre[0] + sole_centre[1])
    t_land = T_end + (land_time if in_air else 0.0)
    p_end = c_end - cdd_end / w**2
    xi_end = c_end + cd_end / w
    pieces = []  # (LipmTrajectory, start offset from T_end)
    t0 = 0.0
    if in_air:
        # the stance foot alone until the landing: the ZMP stays where the plan left it (on the
        # stance sole), the DCM runs forwards from the plan's
        swing = in_air[0]
        ss = LipmTrajectory([0.0, land_time], np.array([p_end, p_end]), w, c_end, dcm0=xi_end)
        pieces.append((ss, 0.0))
        c_end, xi_end = ss.knot_com[-1], ss.knot_dcm[-1]
        t0 = land_time
        # land the swing sole's centre level with the DCM at the landing along the stance foot's
        # heading, and the feet as far apart across it as at the plan's start
        sole_off = (R_feet[-1, swing] @ corners[4 * swing : 4 * swing + 4].mean(axis=0))[:2]
        stance_pos = origin[-1, 1 - swing, :2]
        yaw = math.atan2(R_feet[-1, 1 - swing][1, 0], R_feet[-1, 1 - swing][0, 0])
        fwd, left = (
            np.array([math.cos(yaw), math.sin(yaw)]),
            np.array([-math.sin(yaw), math.cos(yaw)]),
        )
        width = abs(float(np.dot(origin[0, 0, :2] - origin[0, 1, :2], left)))
        side = 1.0 if swing == 0 else -1.0
        landing = (
            stance_pos
            + float(np.dot(xi_end - sole_off - stance_pos, fwd)) * fwd
            + side * width * left
        )
        sole_centre[swing] = landing + sole_off
        middle = 0.5 * (sole_centre[0] + sole_centre[1])
    # both soles down: the ZMP from p_end through the free knot to the middle; the free knot's
    # time is the first of a few that keeps it inside the soles' hull (the latest ZMP is the
    # least demanding), else the one that leaves it the least
    hull = ConvexHull(
        np.vstack(
            [
                origin[-1, k, :2] + (R_feet[-1, k] @ corners[4 * k : 4 * k + 4].T)[:2].T
                for k in range(2)
                if k not in in_air
            ]
            + (
                [
                    np.array(
                        [
                            landing + (R_feet[-1, in_air[0]] @ c)[:2]
                            for c in corners[4 * in_air[0] : 4 * in_air[0] + 4]
                        ]
                    )
                ]
                if in_air
                else []
            )
        )
    )
    best = None
    for frac in (0.5, 0.35, 0.25, 0.15, 0.1):
        knots_t = np.array([0.0, frac * settle_shift, settle_shift])
        kp = np.array([p_end, np.zeros(2), middle])
        a = LipmTrajectory(knots_t, kp, w, c_end).knot_dcm[0]
        kp1 = kp.copy()
        kp1[1] = 1.0
        beta = float((LipmTrajectory(knots_t, kp1, w, c_end).knot_dcm[0] - a)[0])
        kp[1] = (xi_end - a) / beta
        outside = float(np.max(hull.equations @ np.append(kp[1], 1.0)))
        if best is None or outside < best[0]:
            best = (outside, knots_t, kp)
        if outside < -0.01:
            break
    if best is None:  # the loop above runs at least once
        raise AssertionError("no settle shift was tried")
    _, knots_t, kp = best
    pieces.append((LipmTrajectory(knots_t, kp, w, c_end), t0))
    lipm_end = t0 + settle_shift
    t_rest = lipm_end + hold
    tail = np.arange(sample_dt, t_rest + 0.5 * sample_dt, sample_dt)
    ev = {
        key: np.empty((tail.size, 2))
        for key in ("zmp", "dcm", "com", "com_velocity", "com_acceleration")
    }
    for k, (piece, start) in enumerate(pieces):
        end = pieces[k + 1][1] if k + 1 < len(pieces) else np.inf
        sel = (tail > start - 1e-12) & (tail < end - 1e-12) if k else tail < end - 1e-12
        part = piece.evaluate(tail[sel] - start)
        for key, value in ev.items():
            value[sel] = part[key]
    n = tail.size
    c_t = np.column_stack([ev["com"], np.full(n, com[-1, 2])])
    cd_t = np.column_stack([ev["com_velocity"], np.zeros(n)])
    cdd_t = np.column_stack([ev["com_acceleration"], np.zeros(n)])
    fpos_t = np.repeat(fpos_p[-1:], n, axis=0)
    fvel_t = np.zeros((n, 2, 3))
    facc_t = np.zeros((n, 2, 3))
    frot_t = np.repeat(frot_p[-1:], n, axis=0)
    for k in in_air:
        # vertical: a cubic from the plan's height and vertical speed to the floor at
        # touchdown_speed; horizontal: a cubic from the plan's position and velocity to where the
        # DCM will be at the landing (the capture point), at rest
        z0, v0 = fpos_p[-1, k, 2], fvel_p[-1, k, 2]
        z1 = float(origin[0, k, 2])  # the foot frame at rest
        L = land_time
        h = CubicHermiteSpline([0.0, L], [z0, z1], [v0, -touchdown_speed])
        tt = np.minimum(tail, L)
        fpos_t[:, k, 2] = h(tt)
        fvel_t[:, k, 2] = np.where(tail < L, h(tt, 1), 0.0)
        facc_t[:, k, 2] = np.where(tail < L, h(tt, 2), 0.0)
        for i in range(2):
            hx = CubicHermiteSpline(
                [0.0, L], [fpos_p[-1, k, i], landing[i]], [fvel_p[-1, k, i], 0.0]
            )
            fpos_t[:, k, i] = hx(tt)
            fvel_t[:, k, i] = np.where(tail < L, hx(tt, 1), 0.0)
            facc_t[:, k, i] = np.where(tail < L, hx(tt, 2), 0.0)
    brot_t = np.repeat(brot_p[-1:], n, axis=0)
    post_t = np.repeat(post_p[-1:], n, axis=0)
    force = mass * (cdd_t - g)
    wr_t = np.zeros((n, 2, 6))
    zmp_t = np.column_stack([ev["zmp"], np.full(n, floor)])
    for j in range(n):
        feet_down = [k for k in range(2) if k not in in_air or tail[j] >= land_time]
        share = _shares(zmp_t[j, :2], [sole_centre[k] for k in feet_down])
        for k, a_k in zip(feet_down, share):
            fk = a_k * force[j]
            r = np.array([*sole_centre[k], floor]) - fpos_t[j, k]
            wr_t[j, k, :3] = fk
            wr_t[j, k, 3:] = np.cross(r, fk)

    times = np.concatenate([grid_plan, T_end + tail])
    phases = _phases(t, contact)
    for k in in_air:
        phases.append(ContactPhase(t_land, frozenset(_FEET), "completion_landed"))
    zmp_p = np.column_stack([c_p[:, :2] - cdd_p[:, :2] / w**2, np.full(grid_plan.size, floor)])
    return WholeBodyReference(
        times=times,
        com=np.vstack([c_p, c_t]),
        com_velocity=np.vstack([cd_p, cd_t]),
        com_acceleration=np.vstack([cdd_p, cdd_t]),
        base_rotation=np.vstack([brot_p, brot_t]),
        foot_names=_FEET,
        foot_position=np.vstack([fpos_p, fpos_t]),
        foot_velocity=np.vstack([fvel_p, fvel_t]),
        foot_acceleration=np.vstack([facc_p, facc_t]),
        foot_rotation=np.vstack([frot_p, frot_t]),
        phases=tuple(phases),
        joint_names=tuple(str(j) for j in plan["joint_names"]),
        posture=np.vstack([post_p, post_t]),
        foot_wrench=np.vstack([wr_p, wr_t]),
        zmp=np.vstack([zmp_p, zmp_t]),
        source=(
            f"DCC plan ({plan['formulation']!s} {plan['params_json']!s}, {T_end:g} s, "
            f"{t.size} knots) + LIPM completion to rest ({t_rest:g} s)"
        ),
    )


def _shares(p: np.ndarray, centres: Sequence[np.ndarray]) -> list[float]:
    """Load shares of feet at ``centres`` whose mean, weighted, is nearest ``p``."""
    if len(centres) == 1:
        return [1.0]
    a, b = centres
    u = b - a
    alpha = float(np.clip(np.dot(p - a, u) / float(np.dot(u, u)), 0.0, 1.0))
    return [1.0 - alpha, alpha]


def _phases(t: np.ndarray, contact: np.ndarray) -> list[ContactPhase]:
    """Contact phases from the per-knot foot contacts (switch at the knot where it changes)."""
    out: list[ContactPhase] = []
    prev = None
    for k in range(t.size):
        cs = frozenset(f for i, f in enumerate(_FEET) if contact[k, i])
        if cs != prev:
            name = (
                "double_support"
                if len(cs) == 2
                else f"swing_{(set(_FEET) - cs).pop()}"
                if len(cs) == 1
                else "flight"
            )
            out.append(ContactPhase(0.0 if not out else float(t[k]), cs, name))
            prev = cs
    return out
