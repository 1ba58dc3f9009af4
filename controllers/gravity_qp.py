"""Gravity compensation of a standing humanoid: the statics torques and contact forces, plus a
joint PD (controller ``"gravity_qp"``).

Owns the floating-base statics ``g(q) = [0_6; tau] + sum_i J_i^T f_i`` at ``v = 0`` (seed
"gravity-compensation-humanoid", eq. 3) over any number of contacts (feet, and hands on a surface
of the scene: :attr:`wbsim.Robot.contacts`) for two contact models (:data:`CONTACT_MODELS`: a force
per contact point, or a wrench per foot), solved by four methods (:data:`METHODS`: the QP, the unique
single-support wrench, least force, least torque); the pure builder of its QP
(:func:`build_statics_qp`), the physical checks of a solution, and :class:`GravityCompensationQP`.
Conventions: ``J_i`` are LOCAL_WORLD_ALIGNED (Pinocchio), forces are on the robot, world frame, N;
wrenches ``[force; moment]`` at the foot frame origin; ``tau`` in ``robot.joint_names`` order. The
friction rows are the simulator's cone in each contact's own frame (the floor's is the world's, a
wall's has its normal horizontal: :attr:`wbsim.robot.Contact.surface_rotation`,
:mod:`wbsim.controllers.friction`), the CoP rows live in the sole frame. With ``fast=True``
(default) the default QP is solved by :mod:`wbsim.controllers._gravity_qp_fast`. Derivations and
the choice of ``eps``: docs/controllers.md, "Gravity compensation".
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin
import qpsolvers

from wbsim.controllers._gravity_qp_fast import StaticsKernel, kernel_applies
from wbsim.controllers.base import scatter_rows, solve_qp
from wbsim.controllers.friction import (
    CONE_ROWS,
    FRICTION_MARGIN,
    ContactFriction,
    StepFriction,
    check_friction_option,
    cone_rows,
    model_friction,
    simulator_friction,
)
from wbsim.controllers.pd import JointPD, PDGains
from wbsim.errors import UnknownNameError, WbsimError, is_real
from wbsim.types import Command, CommandStatus, ContactSchedule, RobotState

__all__ = [
    "CONDENSED_SOLVERS",
    "CONTACT_MODELS",
    "DEFAULT_SOLVER",
    "FALLBACKS",
    "METHODS",
    "SOLVER_OPTIONS",
    "GravityCompensationError",
    "GravityCompensationQP",
    "StaticsResult",
    "build_statics_qp",
]

#: Contact models: a 3D force per sole corner point, or a 6D wrench per foot.
CONTACT_MODELS = ("points", "wrench")
#: Methods: the QP (default), the unique single-support wrench, least force, least torque.
METHODS = ("qp", "single", "pinv", "min_torque")
#: Default QP solver (the fastest on the G1's double-support problem; docs/controllers.md).
DEFAULT_SOLVER = "daqp"
#: Options passed to each solver: ProxQP and OSQP stop at ``eps_abs`` (1e-5 / 1e-3 by default,
#: residuals of ~1e-4 N·m), tightened to 1e-9; OSQP polishes its answer. DAQP needs none.
SOLVER_OPTIONS: Mapping[str, Mapping[str, Any]] = {
    "daqp": {},
    "proxqp": {"eps_abs": 1e-9, "eps_rel": 0.0, "max_iter": 10_000},
    "osqp": {
        "eps_abs": 1e-9,
        "eps_rel": 1e-9,
        "max_iter": 200_000,
        "polishing": True,
        "polish_refine_iter": 10,
    },
}
#: Solvers given the condensed QP by default (``condensed=None``; checked against the full QP,
#: docs/controllers.md). Others (OSQP, other qpsolvers backends) get the full QP.
CONDENSED_SOLVERS = ("daqp", "proxqp")
#: Fallbacks of :meth:`GravityCompensationQP.compute`, in the order they are tried.
FALLBACKS = ("last_feasible+pd", "unconstrained_min_torque+pd", "joint_gravity+pd")
#: How long (simulated s) the last feasible statics torque may stand in for an infeasible one.
FALLBACK_HOLD_S = 0.1
#: A bound this large stands for "no bound" in the QP (solvers differ in how they take ``inf``).
_BIG = 1e20
#: An inequality with ``G x - h >= -_ACTIVE_TOL`` (N or N·m) is reported as active.
_ACTIVE_TOL = 1e-6
#: Singular values below this times the scale of ``(J^T)_a`` count as zero in ``min_torque``.
_RANK_TOL = 1e-10


class GravityCompensationError(WbsimError):
    """Bad option or input for :class:`GravityCompensationQP` (wrong method / model combination,
    wrong support size for ``single``, wrong ``q`` shape, fixed base with contacts)."""


@dataclass(frozen=True)
class StaticsResult:
    """One statics solve.

    Attributes:
        tau: joint name -> torque, N·m.
        tau_array: ``(n_joints,)`` the same torques in ``robot.joint_names`` order (read-only).
        contact_forces: points model: contact point name -> ``(3,)`` force on the robot, world
            frame, N; wrench model: foot name -> ``(6,)`` ``[force (N), torque (N·m) about the foot
            frame origin]``, world-aligned.
        residual: ``||g(q) - [0; tau] - sum J_i^T f_i||``, N·m (``NaN`` if there is no solution).
        active_constraints: names of the inequality constraints that are tight (within 1e-6) or
            violated, e.g. ``"left_foot_front_left:normal"``, ``"right_foot:cop_back"``,
            ``"left_knee_joint:torque_max"``. For methods that do not impose them (single, pinv,
            min_torque) violated ones show which inequality the solution breaks.
        solver: the QP solver (``"daqp"``, ...) or ``"numpy.linalg"`` for the closed forms.
        status: ``"solved"`` or what went wrong.
        solve_time: time of the solver / linear algebra, s.
        total_time: time of the whole ``solve`` call (Pinocchio, assembly, checks), s.
        feasible: a solution exists and satisfies the statics and every physical constraint.
        method: ``"qp"``, ``"single"``, ``"pinv"``, ``"min_torque"`` (or ``"fixed_base"``).
        contact_model: ``"points"`` or ``"wrench"``.
        support: the feet assumed in contact.
        physically_possible: the forces satisfy unilaterality, friction (Coulomb cone), CoP inside
            the sole (wrench model) and the torque limits if enabled; ``None`` if there is no
            solution to check.
        reasons: why the solution is not feasible (empty when it is).
    """

    tau: dict[str, float]
    tau_array: np.ndarray
    contact_forces: dict[str, np.ndarray]
    residual: float
    active_constraints: tuple[str, ...]
    solver: str
    status: str
    solve_time: float
    feasible: bool
    method: str
    contact_model: str
    support: frozenset[str]
    physically_possible: bool | None = None
    reasons: tuple[str, ...] = ()
    total_time: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: ``tau`` (joint -> float, N·m), ``contact_forces`` (name -> list of 3 or
        6 floats, world frame, force first), ``feasible``, ``residual`` (N·m), ``method``, plus
        ``contact_model``, ``support``, ``solver``, ``status``, ``solve_time_s``, ``total_time_s``,
        ``active_constraints``, ``physically_possible``, ``reasons``, ``frame`` (``"world"``).
        ``NaN`` (no solution) becomes ``None``."""

        def num(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {
            "tau": {k: num(v) for k, v in self.tau.items()},
            "contact_forces": {
                k: [num(x) for x in np.asarray(v).tolist()] for k, v in self.contact_forces.items()
            },
            "feasible": bool(self.feasible),
            "residual": num(self.residual),
            "method": self.method,
            "contact_model": self.contact_model,
            "support": sorted(self.support),
            "solver": self.solver,
            "status": self.status,
            "solve_time_s": float(self.solve_time),
            "total_time_s": float(self.total_time),
            "active_constraints": list(self.active_constraints),
            "physically_possible": self.physically_possible,
            "reasons": list(self.reasons),
            "frame": "world",
        }


def _sole_polygon(points_in_foot: np.ndarray, corner_names: tuple[str, ...], foot: str):
    """Counter-clockwise sole polygon ``(4, 2)``, sole plane height ``z_s`` and edge names."""
    pts = np.asarray(points_in_foot, dtype=float)
    poly = pts[:, :2]
    edges = np.roll(poly, -1, axis=0) - poly
    nxt = np.roll(edges, -1, axis=0)
    turn = edges[:, 0] * nxt[:, 1] - edges[:, 1] * nxt[:, 0]
    if len(poly) < 3 or np.any(turn <= 0.0):
        raise GravityCompensationError(
            f"{foot}: the sole points {pts.tolist()} are not a convex counter-clockwise polygon "
            "(x-y in the foot frame); the wrench model needs one to bound the centre of pressure"
        )
    names = []
    for i in range(len(poly)):
        a, b = corner_names[i], corner_names[(i + 1) % len(poly)]
        common = [t for t in a.split("_") if t in b.split("_")]
        names.append(f"cop_{common[0]}" if len(common) == 1 else f"cop_{a}-{b}")
    return poly, float(np.mean(pts[:, 2])), names


def cop_rows(poly: np.ndarray, z_sole: float) -> np.ndarray:
    """``(n_edges, 6)`` rows ``D w <= 0`` that keep the centre of pressure of a sole-frame wrench
    ``w = [f; m]`` (about the foot origin) inside the counter-clockwise sole polygon ``poly``
    ``(n_edges, 2)`` on the plane ``z = z_sole``: "CoP left of edge ``p -> p + e``" times
    ``f_z > 0``, linear in ``w`` (docs/controllers.md, "Centre of pressure")."""
    rows = np.zeros((len(poly), 6))
    for k, (p, e) in enumerate(zip(poly, np.roll(poly, -1, axis=0) - poly)):
        # c_x f_z = z_s f_x - m_y, c_y f_z = m_x + z_s f_y:
        # -(e_x (m_x + z_s f_y - p_y f_z) - e_y (z_s f_x - m_y - p_x f_z)) <= 0
        rows[k] = (e[1] * z_sole, -e[0] * z_sole, e[0] * p[1] - e[1] * p[0], -e[0], -e[1], 0.0)
    return rows


def build_statics_qp(
    JT: np.ndarray,
    g: np.ndarray,
    actuated_v: np.ndarray,
    eps: float,
    G: np.ndarray,
    h: np.ndarray,
    effort: np.ndarray | None = None,
    condensed: bool = False,
) -> qpsolvers.Problem:
    """The statics QP (pure function): minimise ``||tau||^2 + eps ||f||^2`` (halved) subject to
    the statics ``g = [0; tau] + J^T f`` (seed eq. 3), the contact inequalities ``G f <= h`` and,
    with ``effort``, ``|tau| <= effort`` (docs/controllers.md, "The statics QP").

    Args:
        JT: ``(nv, m)`` ``J^T`` of the contact unknowns ``f`` (Pinocchio's velocity rows).
        g: ``(nv,)`` generalised gravity ``g(q)``, N and N·m.
        actuated_v: ``(n,)`` velocity row of each joint (``robot.joint_names`` order); the other
            rows are the unactuated (floating-base) ones.
        eps: weight of ``||f||^2`` (> 0).
        G, h: ``(k, m)``, ``(k,)`` contact inequalities on ``f`` (cone rows, CoP rows).
        effort: ``(n,)`` torque limits, N·m (``inf``: none), or ``None`` for no limit.
        condensed: ``False``: unknowns ``x = [tau; f]`` (the seed's form, torque limits as bounds);
            ``True``: unknowns ``x = f``, ``tau = g_a - (J^T)_a f`` substituted (same minimiser,
            fewer unknowns; torque limits as rows on ``f``).

    Returns:
        The ``qpsolvers.Problem``. Read its solution with :func:`statics_solution`.
    """
    nv, m = JT.shape
    act = np.asarray(actuated_v, dtype=np.intp)
    unact = _unactuated(nv, act)
    n = act.size
    JT_u, JT_a, g_u, g_a = JT[unact], JT[act], g[unact], g[act]
    if condensed:
        P = JT_a.T @ JT_a + eps * np.eye(m)
        c = -(JT_a.T @ g_a)
        Gs, hs = [G], [h]
        if effort is not None:
            r = np.flatnonzero(np.isfinite(effort))
            Gs += [-JT_a[r], JT_a[r]]  # tau <= lim, -tau <= lim
            hs += [effort[r] - g_a[r], effort[r] + g_a[r]]
        return qpsolvers.Problem(P, c, np.vstack(Gs), np.concatenate(hs), JT_u, g_u)
    P = np.diag(np.concatenate([np.ones(n), np.full(m, eps)]))
    A = np.block([[np.zeros((unact.size, n)), JT_u], [np.eye(n), JT_a]])
    b = np.concatenate([g_u, g_a])
    G_x = np.hstack([np.zeros((G.shape[0], n)), G])
    lb = ub = None
    if effort is not None:
        lim = np.where(np.isfinite(effort), effort, _BIG)
        ub = np.concatenate([lim, np.full(m, _BIG)])
        lb = -ub
    return qpsolvers.Problem(P, np.zeros(n + m), G_x, h, A, b, lb, ub)


def _unactuated(nv: int, actuated_v: np.ndarray) -> np.ndarray:
    """The velocity rows that are not in ``actuated_v`` (the floating base's)."""
    mask = np.ones(nv, dtype=bool)
    mask[actuated_v] = False
    return np.flatnonzero(mask)


def statics_solution(
    x: np.ndarray, JT: np.ndarray, g: np.ndarray, actuated_v: np.ndarray, condensed: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``(tau (n,), f (m,))`` from the solution ``x`` of :func:`build_statics_qp`."""
    n = len(actuated_v)
    if condensed:
        return g[actuated_v] - JT[actuated_v] @ x, x
    return x[:n], x[n:]


def _statics_info(
    solve_time: float,
    total_time: float,
    residual: float,
    active: tuple,
    solver: str,
    method: str,
    contact_model: str,
    possible: bool | None,
    reasons: tuple,
) -> dict[str, Any]:
    """``Command.info`` of :class:`GravityCompensationQP` (the :class:`StaticsResult` fields it
    carries): times in s, the statics residual (N·m, N), the active constraints, the solver, the
    method, the contact model, and whether the result is physically possible (with reasons)."""
    return {
        "solve_time": solve_time,
        "compute_time": total_time,
        "residual": residual,
        "active_constraints": active,
        "solver": solver,
        "method": method,
        "contact_model": contact_model,
        "physically_possible": possible,
        "reasons": reasons,
    }


class _Support:
    """The constant data of one support set (feet and hands) under one friction: its contacts
    (names, Pinocchio frames, the sole frame of each: the orientation of its foot's first contact
    frame, and the frame of the surface it touches, ``surface_rot (nc, 3, 3)``), their inequality
    rows ``G_loc (nc, k, d)`` (5 cone rows in the world frame: the cone of the surface's contact
    frame; then CoP rows in the sole frame for the wrench model) with ``h_loc`` and the rows'
    names, and each contact's ``mu``."""

    def __init__(
        self,
        robot,
        feet: tuple[str, ...],
        contact_model: str,
        friction: ContactFriction,
        f_min: float,
        soles: Mapping[str, tuple],
    ):
        model = robot.pin_model
        self.feet, self.support = feet, frozenset(feet)
        feet_objs = [robot.contacts[f] for f in feet]
        if contact_model == "points":
            self.dim = 3
            self.names = tuple(p for f in feet_objs for p in f.point_names)
            self.frame_ids = tuple(int(i) for f in feet_objs for i in f.pin_point_frame_ids)
            per_foot = [len(f.point_names) for f in feet_objs]
        else:
            self.dim = 6
            self.names = tuple(feet)
            self.frame_ids = tuple(int(f.pin_frame_id) for f in feet_objs)
            per_foot = [1] * len(feet)
        self.nc, self.m = len(self.names), len(self.names) * self.dim
        first = np.cumsum([0, *per_foot[:-1]])
        sole_frames = np.repeat([self.frame_ids[int(i)] for i in first], per_foot)
        self.sole_joints = tuple(int(model.frames[int(f)].parentJoint) for f in sole_frames)
        self.sole_rel = tuple(model.frames[int(f)].placement.rotation.copy() for f in sole_frames)
        self.cone = friction.cone
        self.mu = np.repeat([friction.mu[f] for f in feet], per_foot)
        self.surface_rot = np.repeat(
            np.array([f.surface_rotation for f in feet_objs]).reshape(-1, 3, 3), per_foot, axis=0
        )
        blocks, names = [], []
        for name, mu, R in zip(self.names, self.mu.tolist(), self.surface_rot):
            # the floor's frame is the world's: its rows as they are (rotation None)
            C, d = cone_rows(
                mu, None if np.array_equal(R, np.eye(3)) else R, f_min, friction.cone, dim=self.dim
            )
            rows, row_names = [C], list(CONE_ROWS)
            if self.dim == 6:
                poly, zs, edge_names = soles[name]
                rows.append(cop_rows(poly, zs))
                row_names += edge_names
            blocks.append(np.vstack(rows))
            names += [f"{name}:{r}" for r in row_names]
        self.k = blocks[0].shape[0] if blocks else 0
        self.G_loc = np.array(blocks).reshape(self.nc, self.k, self.dim)
        self.h_loc = np.concatenate([d, np.zeros(self.k - 5)])
        self.h = np.tile(self.h_loc, self.nc)
        self.ineq_names = tuple(names)

    def terms(self, model, data, q: np.ndarray):
        """``g(q) (nv,)``, ``J^T (nv, m)`` (world-aligned) and the sole rotations ``(nc, 3, 3)``
        at ``q`` (``computeGeneralizedGravity``, ``computeJointJacobians``,
        ``getFrameJacobian(..., LOCAL_WORLD_ALIGNED)``)."""
        g = pin.computeGeneralizedGravity(model, data, q).copy()
        pin.computeJointJacobians(model, data, q)
        J = np.vstack(
            [
                pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)[: self.dim]
                for fid in self.frame_ids
            ]
        )
        R = np.array(
            [data.oMi[j].rotation @ rel for j, rel in zip(self.sole_joints, self.sole_rel)]
        )
        return g, J.T, R.reshape(self.nc, 3, 3)

    def world_rows(self, R: np.ndarray) -> np.ndarray:
        """``G (nc k, m)``: the rows applied to world-frame unknowns, block-diagonal: the cone
        rows as they are, the sole-frame CoP rows as ``G_loc R^T`` on each force and moment."""
        nc, k, d = self.nc, self.k, self.dim
        cop = self.G_loc[:, 5:].reshape(nc, k - 5, d // 3, 3) @ R.transpose(0, 2, 1)[:, None]
        blocks = np.concatenate([self.G_loc[:, :5], cop.reshape(nc, k - 5, d)], axis=1)
        G = np.zeros((nc * k, self.m))
        c = np.arange(nc)[:, None, None]
        G[c * k + np.arange(k)[None, :, None], c * d + np.arange(d)[None, None, :]] = (
            blocks.reshape(nc, k, d)
        )
        return G

    def sole_forces(self, f: np.ndarray, R: np.ndarray) -> np.ndarray:
        """``(nc, d)`` sole-frame forces (and moments) of the world-frame unknowns ``f``."""
        fb = f.reshape(self.nc, self.dim // 3, 1, 3) @ R[:, None]  # (R^T f)^T per 3-vector
        return fb.reshape(self.nc, self.dim)


class _Statics(NamedTuple):
    """One statics solve (the fields of :class:`StaticsResult` before it is built)."""

    tau: np.ndarray
    forces: np.ndarray | None  # (nc, d) world frame, read-only
    names: tuple[str, ...]
    residual: float
    active: tuple[str, ...]
    solver: str
    status: str
    solve_time: float
    feasible: bool
    possible: bool | None
    reasons: tuple[str, ...]


class GravityCompensationQP:
    """Gravity compensation from the floating-base statics, plus a joint PD (``"gravity_qp"``);
    the module docstring and docs/controllers.md give the equations, contact models, methods,
    inequalities and feasibility rules.

    ``compute`` returns the statics torque as ``Command.tau`` (the feed-forward) and the joint PD
    as ``Command.joint_targets`` (applied by the loop at every physics step); :meth:`solve` gives
    the statics alone as a :class:`StaticsResult`.

    Args:
        robot: a :class:`wbsim.Robot` (free-flyer root, feet configured), or a fixed-base robot
            (its ``pin_model`` has no free-flyer; then ``tau = g(q)`` and no contacts).
        contact_model: ``"points"`` (3D force at each sole corner, default) or ``"wrench"`` (6D
            wrench per foot at the foot frame origin, world-aligned).
        method: ``"qp"`` (default), ``"single"``, ``"pinv"`` or ``"min_torque"``.
        solver: QP solver for ``method="qp"``: ``"daqp"``, ``"proxqp"``, ``"osqp"`` (or another
            installed qpsolvers backend, with its default options); ``None`` ->
            :data:`DEFAULT_SOLVER`.
        eps: weight of ``||f||^2`` against ``||tau||^2`` in the QP (> 0).
        mu: ``None`` (default): the simulator's friction coefficient, foot by foot
            (``RobotState.friction``, or the robot's MuJoCo model for a state without it), times
            ``friction_margin``; a number: a lower cap on it for every contact (at most
            ``friction_margin`` times the model's). The QP linearises the simulator's cone
            (:func:`~wbsim.controllers.friction.simulator_friction`).
        friction_margin: the fraction (0 < margin <= 1) of the simulator's ``mu`` the QP uses.
        f_min: lower bound on each contact's normal force, N (per point, or per foot for the wrench
            model), >= 0.
        torque_limits: bound ``|tau| <= robot.effort_limits`` in the QP and check it for every
            method.
        frequency_hz, damping_ratio: the joint PD's natural frequency (Hz) and damping ratio
            (:class:`wbsim.controllers.pd.JointPD`).
        condensed: the form of the QP given to qpsolvers (:func:`build_statics_qp`); ``None``
            (default): condensed for :data:`CONDENSED_SOLVERS`, full for the others.
        feasibility_tol: tolerance of the physical checks (N, N·m).
        residual_tol: largest statics residual (N·m) of a feasible solution.
        fast: solve the QP with :class:`~wbsim.controllers._gravity_qp_fast.StaticsKernel` where it
            applies (method ``"qp"``, points model, DAQP, sole points on their foot link; the
            kernel keeps the torque limits itself); else, and with ``False``, :func:`build_statics_qp` and qpsolvers. Decided
            here, once; :attr:`uses_kernel` says which.

    Raises:
        UnknownNameError: unknown ``contact_model``, ``method`` or ``solver``.
        GravityCompensationError: ``method="single"`` with the points model, out-of-range numbers,
            a sole that is not a convex polygon.
    """

    name = "gravity_qp"

    def __init__(
        self,
        robot,
        contact_model: str = "points",
        method: str = "qp",
        solver: str | None = None,
        eps: float = 1e-5,
        mu: float | None = None,
        friction_margin: float = FRICTION_MARGIN,
        f_min: float = 0.0,
        torque_limits: bool = True,
        frequency_hz: float = 3.0,
        damping_ratio: float = 1.0,
        condensed: bool | None = None,
        feasibility_tol: float = 1e-6,
        residual_tol: float = 1e-6,
        fast: bool = True,
    ):
        if contact_model not in CONTACT_MODELS:
            raise UnknownNameError("contact model", contact_model, CONTACT_MODELS)
        if method not in METHODS:
            raise UnknownNameError("method", method, METHODS)
        solver = DEFAULT_SOLVER if solver is None else solver
        if solver not in qpsolvers.available_solvers:
            raise UnknownNameError("QP solver", solver, qpsolvers.available_solvers)
        if method == "single" and contact_model != "wrench":
            raise GravityCompensationError(
                "method 'single' needs contact_model='wrench': with 4 point forces per foot the "
                "single-support forces are not unique (12 unknowns, 6 equations)"
            )
        for label, value, expected in (
            ("eps", eps, "> 0"),
            ("mu", 1.0 if mu is None else mu, "> 0"),
            ("f_min", f_min, ">= 0"),
            ("frequency_hz", frequency_hz, "> 0"),
            ("damping_ratio", damping_ratio, ">= 0"),
            ("feasibility_tol", feasibility_tol, ">= 0"),
            ("residual_tol", residual_tol, ">= 0"),
        ):
            if not (
                is_real(value)
                and np.isfinite(value)
                and (value > 0 if expected == "> 0" else value >= 0)
            ):
                raise GravityCompensationError(
                    f"{label} = {value!r}: expected a finite number {expected}"
                )
        self.robot = robot
        self.contact_model = contact_model
        self.method = method
        self.solver = solver
        self.solver_options = dict(SOLVER_OPTIONS.get(solver, {}))
        self.eps = float(eps)
        self.mu = None if mu is None else float(mu)
        self.friction_margin = float(friction_margin)
        self.f_min = float(f_min)
        self.torque_limits = bool(torque_limits)
        self.condensed = (solver in CONDENSED_SOLVERS) if condensed is None else bool(condensed)
        self.feasibility_tol = float(feasibility_tol)
        self.residual_tol = float(residual_tol)
        self.model = robot.pin_model
        self.data = self.model.createData()
        self.nv = self.model.nv
        self.nq = self.model.nq
        self.joint_names = tuple(robot.joint_names)
        self.n = len(self.joint_names)
        self.vidx = np.asarray(robot.converter.pin_vidx, dtype=int)
        self.effort = np.asarray(robot.effort_limits, dtype=float)
        self._effort_active = self.effort - _ACTIVE_TOL  # a limit counts as active from here
        self.floating = (
            self.model.njoints > 1 and self.model.joints[1].shortname() == "JointModelFreeFlyer"
        )
        #: the simulator's friction where a state gives none: the robot's MuJoCo model, now
        self.model_friction = (
            model_friction(robot) if self.floating else ContactFriction({}, "pyramidal")
        )
        try:
            check_friction_option(mu, friction_margin, self.model_friction)
        except WbsimError as exc:
            raise GravityCompensationError(str(exc)) from None
        self._soles: dict[str, tuple] = {}  # wrench model: CoP polygon per foot
        if self.floating and contact_model == "wrench":
            for fname, foot in robot.feet.items():
                corners = tuple(p[len(fname) + 1 :] for p in foot.point_names)
                self._soles[fname] = _sole_polygon(foot.points_in_foot, corners, fname)
        #: the QP is solved by the statics kernel (see ``fast``)
        self.uses_kernel = bool(
            fast
            and self.floating
            and method == "qp"
            and contact_model == "points"
            and solver == "daqp"
            and kernel_applies(self.model, robot.contacts.values())
        )
        self._supports: dict[tuple, _Support] = {}
        # the last state's (friction, cone) and the ContactFriction derived from them
        self._step_friction = StepFriction(self.friction)
        self._last_support: tuple[tuple[str, ...], ContactFriction, _Support] | None = None
        self._kernels: dict[tuple, StaticsKernel] = {}
        self._support_cache: dict[Any, tuple[str, ...]] = {}
        self.pd = JointPD(robot, PDGains(frequency_hz, damping_ratio))
        #: the last feasible statics of the episode: (t, support, tau, names, forces)
        self._last: tuple[float, frozenset, np.ndarray, tuple, np.ndarray | None] | None = None

    # -- statics -----------------------------------------------------------------------------------
    def _support(self, support: Iterable[str]) -> tuple[str, ...]:
        """Support feet in ``robot.feet`` order (validated; cached for hashable inputs)."""
        try:
            return self._support_cache[support]
        except (KeyError, TypeError):
            pass
        items = (support,) if isinstance(support, str) else tuple(support)
        wanted = set(items)
        if not self.floating:
            if wanted:
                raise GravityCompensationError(
                    "a fixed-base robot is held by its base: pass an empty support (tau = g(q))"
                )
            feet: tuple[str, ...] = ()
        else:
            known = self.robot.contacts
            for f in wanted:
                if f not in known:
                    raise UnknownNameError("contact", f, known)
            feet = tuple(f for f in known if f in wanted)
            if self.contact_model == "wrench" and any(f not in self.robot.feet for f in feet):
                raise GravityCompensationError(
                    f"the wrench model bounds a foot's centre of pressure in its sole: a hand "
                    f"({', '.join(f for f in feet if f not in self.robot.feet)}) needs "
                    "contact_model='points'"
                )
        if isinstance(support, (frozenset, tuple, str)):
            self._support_cache[support] = feet
        return feet

    def friction(self, state: RobotState | None = None) -> ContactFriction:
        """The ``mu`` per foot and the cone type the QP uses at ``state`` (its ``friction`` and
        ``cone``; the robot's model where it has none, or for ``None``): ``mu`` if given, else
        the simulator's times ``friction_margin``
        (:func:`~wbsim.controllers.friction.simulator_friction`)."""
        if not self.floating:
            return self.model_friction
        return simulator_friction(
            None if state is None else state.friction,
            None if state is None else state.cone,
            self.robot.contact_names,
            self.model_friction,
            self.mu,
            self.friction_margin,
        )

    def _contacts(self, feet: tuple[str, ...], friction: ContactFriction) -> _Support:
        last = self._last_support
        if last is not None and last[0] == feet and last[1] is friction:  # as the last call
            return last[2]
        key = (feet, tuple(friction.mu[f] for f in feet), friction.cone)
        sup = self._supports.get(key)
        if sup is None:
            sup = self._supports[key] = _Support(
                self.robot, feet, self.contact_model, friction, self.f_min, self._soles
            )
        self._last_support = (feet, friction, sup)
        return sup

    def _kernel(self, feet: tuple[str, ...], sup: _Support) -> StaticsKernel:
        key = (feet, tuple(sup.mu.tolist()), sup.cone)
        kernel = self._kernels.get(key)
        if kernel is None:
            objs = [self.robot.contacts[f] for f in feet]
            offsets = np.array(
                [
                    [
                        self.model.frames[int(f.pin_frame_id)]
                        .placement.actInv(self.model.frames[int(p)].placement)
                        .translation
                        for p in f.pin_point_frame_ids
                    ]
                    for f in objs
                ]
            )
            first = np.cumsum([0] + [len(f.point_names) for f in objs[:-1]])
            kernel = self._kernels[key] = StaticsKernel(
                self.model,
                tuple(int(f.pin_frame_id) for f in objs),
                offsets,
                sup.G_loc[first],
                sup.h_loc,
                self.eps,
                self.vidx,
                self.effort if self.torque_limits else None,
            )
        return kernel

    def solve(
        self, q: np.ndarray, support: Iterable[str], friction: ContactFriction | None = None
    ) -> StaticsResult:
        """Torques and contact forces that hold the robot still at ``q`` on the feet ``support``.

        Args:
            q: ``(nq,)`` Pinocchio configuration (``v`` is taken as 0).
            support: contacts (:attr:`wbsim.Robot.contacts`: ``"left_foot"``, ``"right_foot"``,
                and hands such as ``"right_hand"``); order does not matter.
            friction: ``mu`` per foot and cone type; ``None``: :meth:`friction` of the robot's
                model.

        Returns:
            A :class:`StaticsResult`; ``feasible`` is ``False`` (with ``status`` and ``reasons``)
            when there is no physically possible solution. Never raises for infeasibility.

        Raises:
            GravityCompensationError: ``q`` has the wrong shape or non-finite entries;
                ``method="single"`` without exactly one foot; contacts on a fixed-base robot.
            UnknownNameError: a foot name that the robot does not have.
        """
        t_start = time.perf_counter()
        q, feet = self._inputs(q, support)
        st = self._statics(q, feet, self.method, friction or self.friction())
        if not st.feasible and st.possible is None:  # no solution: say why when it is plain
            why = self._com_outside_support(q, feet)
            if why is not None:
                st = st._replace(
                    status=f"infeasible: {why}", possible=False, reasons=(why, *st.reasons)
                )
        tau = np.array(st.tau, dtype=float)
        tau.flags.writeable = False
        return StaticsResult(
            tau=dict(zip(self.joint_names, tau.tolist())),
            tau_array=tau,
            contact_forces=self._forces(st.names, st.forces),
            residual=float(st.residual),
            active_constraints=st.active,
            solver=st.solver,
            status=st.status,
            solve_time=float(st.solve_time),
            feasible=st.feasible,
            method=self.method if self.floating else "fixed_base",
            contact_model=self.contact_model,
            support=frozenset(feet),
            physically_possible=st.possible,
            reasons=st.reasons,
            total_time=time.perf_counter() - t_start,
        )

    def _com_outside_support(self, q: np.ndarray, feet: tuple[str, ...]) -> str | None:
        """Why no static balance exists at ``q`` on ``feet`` when the reason is the plainest one:
        the CoM's ground projection outside the support polygon (the convex hull of the feet's
        contact points, :func:`wbsim.contacts.convex_hull`); ``None`` otherwise, or when a
        contact is not on the floor (a hand on a wall can hold the CoM outside it)."""
        from wbsim.contacts import convex_hull, point_in_polygon

        objs = [self.robot.contacts[f] for f in feet]
        if not objs or any(not np.array_equal(c.surface_rotation, np.eye(3)) for c in objs):
            return None
        com = pin.centerOfMass(self.model, self.data, q)
        pin.updateFramePlacements(self.model, self.data)
        points = np.array(
            [self.data.oMf[int(i)].translation[:2] for c in objs for i in c.pin_point_frame_ids]
        )
        polygon = convex_hull(points)
        if point_in_polygon(polygon, com[:2]):
            return None
        return (
            f"the CoM's ground projection ({com[0]:.3f}, {com[1]:.3f}) m is outside the support "
            f"polygon of {', '.join(feet)}: no static balance on this support"
        )

    def _inputs(self, q: np.ndarray, support: Iterable[str]) -> tuple[np.ndarray, tuple[str, ...]]:
        """``q`` as a float array and the support feet, validated (see :meth:`solve`)."""
        q = np.asarray(q, dtype=float)
        if q.shape != (self.nq,):
            raise GravityCompensationError(f"q must have shape ({self.nq},), got {q.shape}")
        # one dot product is finite iff every entry is (or it overflowed: then look closer)
        if not math.isfinite(q @ q) and not np.isfinite(q).all():
            raise GravityCompensationError("q has non-finite entries")
        feet = self._support(support)
        if self.method == "single" and len(feet) != 1:
            raise GravityCompensationError(
                f"method 'single' needs exactly one foot in support, got {sorted(feet) or 'none'}"
            )
        return q, feet

    def _statics(
        self, q: np.ndarray, feet: tuple[str, ...], method: str, friction: ContactFriction
    ) -> _Statics:
        """The statics at ``q`` on ``feet`` by ``method`` under ``friction``, checked (module
        docstring)."""
        if not self.floating:
            g = pin.computeGeneralizedGravity(self.model, self.data, q)
            return _Statics(
                g[self.vidx],
                None,
                (),
                0.0,
                (),
                "pinocchio",
                "solved (fixed base: tau = g(q))",
                0.0,
                True,
                True,
                (),
            )
        if not feet:
            return _Statics(
                np.full(self.n, np.nan),
                None,
                (),
                math.nan,
                (),
                "none",
                "infeasible: no foot in support, nothing holds the floating base",
                0.0,
                False,
                None,
                ("no contact: gravity on the base cannot be balanced",),
            )
        sup = self._contacts(feet, friction)
        if method == "qp" and self.uses_kernel:
            kernel = self._kernel(feet, sup)
            failed = kernel.solve(q)
            if failed:
                return self._failed(sup, self.solver, failed, kernel.solve_time)
            return self._checked(
                sup,
                kernel.tau,
                kernel.forces,
                kernel.sole_forces,
                kernel.slack,
                kernel.residual,
                self.solver,
                "solved",
                kernel.solve_time,
            )
        g, JT, R = sup.terms(self.model, self.data, q)
        G = sup.world_rows(R)
        if method == "qp":
            effort = self.effort if self.torque_limits else None
            problem = build_statics_qp(JT, g, self.vidx, self.eps, G, sup.h, effort, self.condensed)
            sol = solve_qp(problem, self.solver, **self.solver_options)
            if sol.x is None:
                if sol.error is not None:
                    why = f"failed: {self.solver} raised {type(sol.error).__name__}: {sol.error}"
                else:
                    detail = f" ({sol.detail})" if sol.detail else ""
                    why = f"infeasible or failed: {self.solver} found no solution{detail}"
                return self._failed(sup, self.solver, why, sol.seconds)
            tau, f = statics_solution(sol.x, JT, g, self.vidx, self.condensed)
            solver, solve_time, status = self.solver, sol.seconds, "solved"
        else:
            t0 = time.perf_counter()
            tau, f, status = self._closed_form(JT, g, method)
            solve_time, solver = time.perf_counter() - t0, "numpy.linalg"
            if not np.isfinite(tau).all():
                return self._failed(sup, solver, status, solve_time)
        r = g - JT @ f
        r[self.vidx] -= tau
        residual = math.sqrt(r.dot(r))
        forces = f.reshape(sup.nc, sup.dim).copy()
        forces.flags.writeable = False
        return self._checked(
            sup,
            tau,
            forces,
            sup.sole_forces(f, R),
            G @ f - sup.h,
            residual,
            solver,
            status,
            solve_time,
        )

    def _failed(self, sup: _Support, solver: str, status: str, solve_time: float) -> _Statics:
        """No solution: NaN torques and forces, never zeros."""
        nan = np.full((sup.nc, sup.dim), np.nan)
        nan.flags.writeable = False
        return _Statics(
            np.full(self.n, np.nan),
            nan,
            sup.names,
            math.nan,
            (),
            solver,
            status,
            solve_time,
            False,
            None,
            (status,),
        )

    def _checked(
        self,
        sup: _Support,
        tau: np.ndarray,
        forces: np.ndarray,
        sole: np.ndarray,
        slack: np.ndarray,
        residual: float,
        solver: str,
        status: str,
        solve_time: float,
    ) -> _Statics:
        """A solution with its active constraints and its physical checks (statics residual,
        unilaterality, Coulomb's cone, CoP, torque limits)."""
        slack_max = slack.max()
        active = (
            [sup.ineq_names[i] for i in np.flatnonzero(slack >= -_ACTIVE_TOL)]
            if slack_max >= -_ACTIVE_TOL
            else []
        )
        limits_hit = False
        # a torque within _ACTIVE_TOL of its limit (one comparison in the common case: none)
        if self.torque_limits and (np.abs(tau) >= self._effort_active).any():
            hi = np.flatnonzero(tau >= self._effort_active)
            lo = np.flatnonzero(tau <= -self._effort_active)
            active += [f"{self.joint_names[i]}:torque_max" for i in hi]
            active += [f"{self.joint_names[i]}:torque_min" for i in lo]
            limits_hit = True
        # every inequality strictly holds: the pyramid lies inside the cone, so every physical
        # condition holds too; otherwise check them one by one
        if limits_hit or not slack_max <= 0.5 * self.feasibility_tol:
            reasons = self._check(sup, tau, forces, sole)
        else:
            reasons = []
        possible = not reasons
        if not residual <= self.residual_tol:
            reasons.append(f"statics residual {residual:.3g} N·m > {self.residual_tol:g} N·m")
        feasible = not reasons
        if not feasible:
            status = "infeasible: " + "; ".join(reasons)
        return _Statics(
            tau,
            forces,
            sup.names,
            residual,
            tuple(active),
            solver,
            status,
            solve_time,
            feasible,
            possible,
            tuple(reasons),
        )

    def _closed_form(self, JT: np.ndarray, g: np.ndarray, method: str):
        """single / pinv / min_torque (docs/controllers.md, "Closed forms"): ``(tau, f,
        status)``, NaN when ``single`` meets a singular ``(J^T)_u``."""
        unact = _unactuated(self.nv, self.vidx)
        Jt_u, Jt_a, g_u, g_a = JT[unact], JT[self.vidx], g[unact], g[self.vidx]
        if method == "single":
            try:
                f = np.linalg.solve(Jt_u, g_u)
            except np.linalg.LinAlgError:
                return (
                    np.full(self.n, np.nan),
                    np.full(JT.shape[1], np.nan),
                    "failed: (J^T)_u is singular",
                )
        else:
            f = np.linalg.lstsq(Jt_u, g_u, rcond=None)[0]  # least ||f||
            if method == "min_torque":
                _, s, vt = np.linalg.svd(Jt_u)
                rank = int(np.sum(s > s[0] * 1e-12))
                N = vt[rank:].T  # null space of (J^T)_u
                if N.shape[1]:
                    M = Jt_a @ N
                    # Directions of N that move no joint (forces internal to one sole) give
                    # singular values of M at round-off level; cut them against the scale of
                    # (J^T)_a, not of M (which may be all round-off, e.g. one foot of 4 points).
                    cut = _RANK_TOL * max(float(np.abs(Jt_a).max()), 1.0)
                    s_max = float(np.linalg.norm(M, 2))
                    if s_max > cut:
                        z = np.linalg.lstsq(M, g_a - Jt_a @ f, rcond=cut / s_max)[0]
                        f = f + N @ z
        return g_a - Jt_a @ f, f, "solved"

    def _check(
        self, sup: _Support, tau: np.ndarray, forces: np.ndarray, sole: np.ndarray
    ) -> list[str]:
        """Reasons (empty if none) why ``(tau, world-frame forces (nc, d), the same in the sole
        frame)`` is not physically possible: unilaterality, the simulator's friction cone with the
        ``mu`` assumed (pyramidal: ``|f_x| + |f_y| <= mu f_z``, elliptic: ``|f_t| <= mu f_z``, in
        each contact's frame: the floor's, a wall's), CoP in the sole (wrench model), torque
        limits (if enabled)."""
        tol, mu = self.feasibility_tol, sup.mu
        local = np.einsum("cj,cji->ci", forces[:, :3], sup.surface_rot)  # R^T f per contact
        fn = local[:, 2]
        ft = (
            np.abs(local[:, 0]) + np.abs(local[:, 1])
            if sup.cone == "pyramidal"
            else np.hypot(local[:, 0], local[:, 1])
        )
        bad_n = fn < self.f_min - tol
        bad_t = (ft > mu * fn + tol) & ~bad_n  # friction is moot where the contact pulls
        if sup.dim == 6:
            bad_cop = np.any(np.einsum("cke,ce->ck", sup.G_loc[:, 5:], sole) > tol, axis=1)
        else:
            bad_cop = np.zeros(sup.nc, dtype=bool)
        bad_tau = np.abs(tau) > self.effort + tol if self.torque_limits else np.zeros(1, dtype=bool)
        reasons: list[str] = []
        for i in np.flatnonzero(bad_n):
            reasons.append(
                f"{sup.names[i]}: normal force {fn[i]:.4g} N < f_min {self.f_min:g} N"
                + (" (the contact would pull)" if fn[i] < 0 else "")
            )
        for i in np.flatnonzero(bad_t):
            reasons.append(
                f"{sup.names[i]}: tangential force {ft[i]:.4g} N > mu f_n "
                f"{mu[i] * fn[i]:.4g} N (it would slip)"
            )
        for i in np.flatnonzero(bad_cop):
            _, zs, _ = self._soles[sup.names[i]]
            w = sole[i]
            if w[2] > 0:
                where = f"({(zs * w[0] - w[4]) / w[2]:.4f}, {(w[3] + zs * w[1]) / w[2]:.4f}) m"
            else:
                where = "(undefined: no normal force)"
            reasons.append(
                f"{sup.names[i]}: centre of pressure {where} in the foot frame is outside the sole"
            )
        for i in np.flatnonzero(bad_tau):
            reasons.append(
                f"{self.joint_names[i]}: |tau| {abs(tau[i]):.4g} N·m > limit {self.effort[i]:g} N·m"
            )
        return reasons

    @staticmethod
    def _forces(names: tuple[str, ...], forces: np.ndarray | None) -> dict[str, np.ndarray]:
        """Contact name -> read-only row of ``forces``."""
        if forces is None:
            return {}
        return dict(zip(names, forces))

    # -- controller protocol -----------------------------------------------------------------------
    def reset(self, state: RobotState) -> None:
        """Take ``state.q`` as the PD reference posture (:meth:`JointPD.reset`) and forget the last
        feasible statics solution."""
        self.pd.reset(state.q)
        self._last = None

    def compute(self, state: RobotState, schedule: ContactSchedule) -> Command:
        """The statics torque at ``state.q`` on ``schedule.contact_set`` as ``Command.tau`` (N·m,
        ``(n_joints,)``, ``robot.joint_names`` order, read-only) and the joint PD as
        ``Command.joint_targets``: the loop applies ``tau + kp (q_ref - q) - kd qdot``.

        ``Command.point_forces`` (points model) or ``foot_wrenches`` (wrench model) are the statics
        forces (world frame), ``Command.contact_set`` the support; ``Command.info`` holds
        ``solve_time``, ``compute_time`` (s), ``residual`` (N·m), ``active_constraints``,
        ``solver``, ``method``, ``contact_model``, ``physically_possible``, ``reasons`` (the
        fields of :meth:`solve`'s result).

        Never raises. When the statics are infeasible, fail, or raise (e.g. ``single`` asked for two
        feet, an unknown foot) the status is ``INFEASIBLE`` (a message starting with
        "infeasible") or ``SOLVER_FAILED``, with the first fallback that applies, named in
        ``Command.fallback`` (the PD is always in ``joint_targets``):

        1. ``"last_feasible+pd"``: the last feasible statics torques (and their forces) of this
           episode, if they were for the same support and at most :data:`FALLBACK_HOLD_S` s old;
        2. ``"unconstrained_min_torque+pd"``: the least-torque solution of the statics equality
           alone (its contact forces may pull) at ``state.q``;
        3. ``"joint_gravity+pd"``: ``g(q)`` on the joints (fixed-base gravity compensation); when
           no foot is in support (or the support is invalid).
        """
        t_start = time.perf_counter()
        wanted = schedule.contact_set if self.floating else ()
        try:
            q, feet = self._inputs(state.q, wanted)
            st = self._statics(q, feet, self.method, self._step_friction(state))
            error = None
        except (WbsimError, np.linalg.LinAlgError, ValueError) as exc:  # e.g. a non-finite state
            st, error = None, f"error: {type(exc).__name__}: {exc}"
        method = self.method if self.floating else "fixed_base"
        if st is not None:
            info = _statics_info(
                st.solve_time,
                time.perf_counter() - t_start,
                st.residual,
                st.active,
                st.solver,
                method,
                self.contact_model,
                st.possible,
                st.reasons,
            )
            support = frozenset(feet)
            if st.feasible:
                tau = st.tau
                tau.flags.writeable = False
                self._last = (float(state.t), support, tau, st.names, st.forces)
                return self._command(tau, support, st.names, st.forces, info)
            status = st.status
        else:
            info = {
                "method": self.method,
                "solver": self.solver,
                "error": error,
                "solve_time": 0.0,
                "compute_time": time.perf_counter() - t_start,
            }
            status = str(error)
            try:
                feet = self._support(wanted) if self.floating else ()
            except WbsimError:
                feet = ()
            support = frozenset(feet)
        code = (
            CommandStatus.INFEASIBLE
            if status.startswith("infeasible")
            else CommandStatus.SOLVER_FAILED
        )
        # 1. the last feasible statics, same support, recent
        if self._last is not None:
            t_last, sup_last, tau_last, names, forces = self._last
            if sup_last == support and 0.0 <= float(state.t) - t_last <= FALLBACK_HOLD_S:
                return self._command(
                    tau_last, support, names, forces, info, FALLBACKS[0], code, status
                )
        # 2. least torque of the statics equality alone
        if feet and np.isfinite(state.q).all():
            try:
                unc = self._statics(
                    np.asarray(state.q, dtype=float), feet, "min_torque", self.friction(state)
                )
            except (WbsimError, np.linalg.LinAlgError, ValueError):
                unc = None
            if (
                unc is not None
                and unc.residual <= self.residual_tol
                and np.all(np.isfinite(unc.tau))
            ):
                return self._command(
                    unc.tau, support, unc.names, unc.forces, info, FALLBACKS[1], code, status
                )
        # 3. joint gravity: no contact forces are known
        g = pin.computeGeneralizedGravity(self.model, self.data, np.asarray(state.q, dtype=float))
        return self._command(g[self.vidx], support, (), None, info, FALLBACKS[2], code, status)

    def _command(
        self,
        tau: np.ndarray,
        support: frozenset[str],
        names: tuple[str, ...],
        forces: np.ndarray | None,
        info: dict[str, Any],
        fallback: str = "",
        status: CommandStatus = CommandStatus.SOLVED,
        message: str = "",
    ) -> Command:
        """The :class:`~wbsim.types.Command` of one step: the forces of ``names`` (contact points
        with ``(3,)`` forces, or feet with ``(6,)`` wrenches, by the contact model) scattered into
        the robot's order; NaN everywhere when a fallback knows no forces."""
        robot = self.robot
        common: dict[str, Any] = {
            "tau": tau,
            "contact_set": support,
            "joint_targets": self.pd.targets,
            "status": status,
            "fallback": fallback,
            "message": message,
            "info": info,
        }
        if not robot.has_feet:  # a fixed-base robot: no contacts
            return Command(**common)
        unknown = forces is None and bool(fallback)
        values = () if forces is None else forces
        if self.contact_model == "wrench":
            return Command(
                foot_wrenches=scatter_rows(robot.foot_names, names, values, 6, nan=unknown),
                **common,
            )
        return Command(
            point_forces=scatter_rows(robot.contact_point_names, names, values, 3, nan=unknown),
            **common,
        )

    @staticmethod
    def _info(res: StaticsResult) -> dict[str, Any]:
        return _statics_info(
            res.solve_time,
            res.total_time,
            res.residual,
            res.active_constraints,
            res.solver,
            res.method,
            res.contact_model,
            res.physically_possible,
            res.reasons,
        )
