"""Gravity compensation of a standing humanoid: the joint torques ``tau`` and the contact forces
``f`` of the floating-base statics, by four methods, plus a joint PD (seed:
``/work/shared/seeds/gravity-compensation-humanoid.md``).

Statics
-------
With ``v = 0`` and no acceleration, the equations of motion reduce to (seed eq. 3)::

    g(q) = [0_6; tau] + sum_i J_i^T f_i

in Pinocchio's velocity ordering (6 base dofs first, then the joints in Pinocchio's order; every
``tau`` here is in ``robot.joint_names`` order, mapped with ``robot.converter.pin_vidx``). ``g(q)``
(``(nv,)``, N and N·m) comes from ``pinocchio.computeGeneralizedGravity``, the Jacobians ``J_i``
from ``pinocchio.getFrameJacobian(..., pinocchio.LOCAL_WORLD_ALIGNED)``, so every force is in the
WORLD frame. Split into the unactuated rows ``u`` (the base, 6) and the actuated rows ``a`` (the
joints)::

    g_u = (J^T)_u f            (6 equations: the contacts must hold the whole robot)
    g_a = tau + (J^T)_a f      (tau follows from f)

A fixed-base robot (no free-flyer) reduces to ``tau = g(q)`` (seed, "static robot"); it is supported
and takes no contacts.

Contact models (``contact_model=``)
-----------------------------------
* ``"points"`` (default): a 3D force at each of the 4 sole corner points of each support foot
  (``robot.feet[f].pin_point_frame_ids``); ``f_i`` is ``(3,)``, world frame, N.
* ``"wrench"``: a 6D wrench per support foot at the foot link frame origin, world-aligned:
  ``[force (N), torque about the frame origin (N·m)]`` (the seed's formulation).

Contact frame and inequalities
------------------------------
The contact surface is the sole: its normal is the foot link's z axis and the sole polygon is the
convex quadrilateral of ``robot.feet[f].points_in_foot`` (x-y in the foot frame, plane at their mean
z). On a flat floor with flat feet the normal is the world vertical. In that sole frame (forces
rotated by ``R_foot^T``), each contact (a point, or a foot for the wrench model) gets:

* ``<contact>:normal``: ``f_n >= f_min`` (unilateral contact);
* ``<contact>:friction_x+`` / ``friction_x-`` / ``friction_y+`` / ``friction_y-``: the linearised
  friction pyramid ``|f_x|, |f_y| <= (mu / sqrt(2)) f_n``, the pyramid inscribed in Coulomb's cone
  ``|f_t| <= mu f_n`` (so any force it allows is inside the cone);
* wrench model only, ``<foot>:cop_<side>`` (``cop_left``, ``cop_back``, ``cop_right``,
  ``cop_front``): the centre of pressure lies in the sole polygon. With ``w = [f; m]`` in the sole
  frame about the foot origin and the sole plane at ``z_s``, the CoP on that plane is
  ``c_x = (z_s f_x - m_y) / f_z``, ``c_y = (m_x + z_s f_y) / f_z``; "``c`` left of edge
  ``p_i -> p_{i+1}``" times ``f_z > 0`` is linear in ``w``, so the wrench is one the 4 sole points
  could produce as far as its net force and CoP go (the yaw torque is not bounded).

Methods (``method=``)
---------------------
* ``"single"`` (wrench model, exactly one foot): ``(J^T)_u`` is 6x6 and invertible, so the wrench is
  unique, ``f = (J^T)_u^{-1} g_u`` (``numpy.linalg.solve``), and ``tau = g_a - (J^T)_a f``. The
  result says whether that wrench is physically possible (normal force >= f_min, CoP inside the
  sole, ``|f_t| <= mu f_n``) in ``physically_possible`` and ``reasons``.
* ``"pinv"``: the least contact force ``f = (J^T)_u^+ g_u`` (Moore-Penrose, ``numpy.linalg.lstsq``);
  with the wrench model that norm mixes N and N·m, as in the seed.
* ``"min_torque"``: the least joint torque. The seed derives it for two feet with square leg blocks
  (``f_l = A f_r + B``, ``f_r = C tau_l + D = E tau_r + F``, ``[tau_l; tau_r] = [C, -E]^+ (F - D)``,
  where ``C = -K^{-1}``, ``D = K^{-1}(g_l - (J_l^T)_l B)``, ``K = (J_l^T)_l A``,
  ``E = -((J_r^T)_r)^{-1}``, ``F = ((J_r^T)_r)^{-1} g_r``; the seed's eq. for ``g_r`` writes
  ``tau_l`` for ``tau_r``, and its eq. (7) loses the ``+`` between ``C tau_l`` and ``D``). That
  route needs ``(J_l^T)_l`` square, i.e. exactly 6 joints between the base and each foot, and two
  feet. Here the same optimum is computed generically, for any support set, either contact model and
  any number of joints: minimise ``||tau||^2`` over the whole actuated vector subject to the
  statics. With ``f = f_0 + N z`` (``f_0 = (J^T)_u^+ g_u``, ``N`` an orthonormal basis of the null
  space of ``(J^T)_u``, from its SVD), ``tau = (g_a - (J^T)_a f_0) - (J^T)_a N z`` is linear in
  ``z``, and the minimum-norm least-squares ``z`` (``numpy.linalg.lstsq``) gives the least
  ``||tau||``; when several ``f`` give that ``tau`` (e.g. internal forces between the 4 points of
  one sole, which move no joint) it picks the least ``||f||``: exactly the ``eps -> 0`` limit of the
  QP below. Joints that no contact Jacobian reaches (arms, waist, head) get ``tau = g`` whatever
  ``f`` is, so when both legs have 6 joints this is the seed's solution
  (``tests/test_gravity_qp.py`` checks it against the corrected seed formula).
* ``"qp"`` (default): ``x = [tau; f]``, minimise ``1/2 x^T P x`` with
  ``P = diag(1 on tau, eps on f)`` subject to the statics (``A x = g`` with
  ``A = [[0, (J^T)_u], [I, (J^T)_a]]``), the inequalities above, and with ``torque_limits=True`` the
  bounds ``|tau| <= robot.effort_limits``. Solved by ``qpsolvers.solve_problem`` with ``solver=``
  (``"daqp"``, ``"proxqp"`` or ``"osqp"``, see :data:`SOLVER_OPTIONS` for the tolerances).

How ``eps`` moves the answer: the objective is ``||tau||^2 + eps ||f||^2`` ((N·m)² against N²). As
``eps -> 0`` the answer tends to the least-torque solution (``min_torque``, when no inequality is
active); a larger ``eps`` trades torque for smaller contact forces (``eps -> inf`` tends to the
least-force solution within the inequalities: ``pinv`` when none is active). The torques move away
from the least-torque ones linearly in ``eps``. Forces that move no joint (internal forces between
the 4 points of one sole) are set by the ``eps`` term alone, at their least norm, for any
``eps > 0``. The default ``eps = 1e-5`` (a force of 100 N weighs like 0.3 N·m of torque) keeps the
torques within 1e-4 N·m (G1) and 8e-4 N·m (Talos) of the least-torque ones standing, while every
solver still resolves the internal forces: at ``eps <= 1e-7`` OSQP and ProxQP leave them off by up
to 1e-2 N.

``condensed=True`` solves the same QP with ``tau`` eliminated (``tau = g_a - (J^T)_a f``): minimise
``1/2 f^T ((J^T)_a^T (J^T)_a + eps I) f - g_a^T (J^T)_a f`` subject to ``(J^T)_u f = g_u`` and the
inequalities (torque limits become rows on ``f``). Same minimiser (the tests check it to 1e-5 N·m
for every solver), fewer variables (24 instead of 53 for G1's points model), faster.

Which methods apply: ``single`` needs the wrench model (raises :class:`GravityCompensationError` at
construction otherwise) and exactly one foot (``solve`` raises otherwise); the others take any
non-empty support set and either model.

Feasibility
-----------
Every solution is checked against the same physics, whatever the method: statics residual
``||g - [0; tau] - J^T f||`` <= ``residual_tol``, normal force >= ``f_min``, Coulomb's cone
``|f_t| <= mu f_n``, CoP inside the sole (wrench model) and, with ``torque_limits=True``, the torque
limits, each with the tolerance ``feasibility_tol``. A solution that fails any of them is returned
with ``feasible=False`` and the reasons; pinv / min_torque / single thus report a CoM outside the
support polygon (a foot that would have to pull) as infeasible. A QP the solver cannot solve, or an
empty support, gives ``feasible=False`` with ``NaN`` torques and forces (never zeros).

Controller
----------
:class:`GravityCompensationQP` is also a controller (``name = "gravity_qp"``): ``compute`` returns
``tau = tau_statics(state.q, schedule.contact_set) + JointPD(state.q, state.v)``. When the statics
are infeasible or fail it never raises; it returns ``feasible=False``, the status and a fallback
(see :meth:`GravityCompensationQP.compute`).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin
import qpsolvers
import scipy.sparse as spa

from wbsim.controllers.base import Command, ContactSchedule, RobotState
from wbsim.controllers.pd import JointPD, PDGains
from wbsim.errors import UnknownNameError, WbsimError

__all__ = [
    "CONTACT_MODELS",
    "DEFAULT_SOLVER",
    "FALLBACKS",
    "GravityCompensationError",
    "GravityCompensationQP",
    "METHODS",
    "SOLVER_OPTIONS",
    "StaticsResult",
]

#: Contact models: a 3D force per sole corner point, or a 6D wrench per foot.
CONTACT_MODELS = ("points", "wrench")
#: Methods: the QP (default), the unique single-support wrench, least force, least torque.
METHODS = ("qp", "single", "pinv", "min_torque")
#: Default QP solver: the faster of DAQP and ProxQP on the G1 points-model double-support problem
#: at the stand pose (53 variables, 35 equalities, 40 inequalities). Median time of
#: ``qpsolvers.solve_problem`` per call on the shared 2-core test machine (figures move by +-50%
#: with its load): daqp 84-137 us, proxqp 300-630 us, osqp 1.0-2.2 ms; the whole ``solve`` call
#: (Pinocchio, assembly, checks) adds ~120 us to each.
DEFAULT_SOLVER = "daqp"
#: Options passed to each solver. DAQP (dual active set) solves the equalities exactly and needs
#: none. ProxQP and OSQP stop at ``eps_abs`` (default 1e-5 / 1e-3) which would leave residuals of
#: ~1e-4 N·m; they are tightened to 1e-9, and OSQP polishes its answer (active-set refinement).
SOLVER_OPTIONS: Mapping[str, Mapping[str, Any]] = {
    "daqp": {},
    "proxqp": {"eps_abs": 1e-9, "eps_rel": 0.0, "max_iter": 10_000},
    "osqp": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iter": 200_000, "polishing": True,
             "polish_refine_iter": 10},
}
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
            "contact_forces": {k: [num(x) for x in np.asarray(v).tolist()]
                               for k, v in self.contact_forces.items()},
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


class _SupportProblem:
    """Everything about one support set that does not change between calls, and the buffers that
    are filled in place each call."""

    def __init__(self, owner: GravityCompensationQP, feet: tuple[str, ...]):
        robot = owner.robot
        n = owner.n
        self.feet = feet
        self.support = frozenset(feet)
        feet_objs = [robot.feet[f] for f in feet]
        if owner.contact_model == "points":
            self.dim = 3
            self.names = tuple(p for f in feet_objs for p in f.point_names)
            self.frame_ids = tuple(int(i) for f in feet_objs for i in f.pin_point_frame_ids)
            counts = [len(f.point_names) for f in feet_objs]
        else:
            self.dim = 6
            self.names = tuple(feet)
            self.frame_ids = tuple(int(f.pin_frame_id) for f in feet_objs)
            counts = [1] * len(feet)
        #: foot index of each contact (a foot's points share its orientation)
        self.contact_foot = np.repeat(np.arange(len(feet)), counts)
        first_contact = np.cumsum([0, *counts[:-1]])
        #: one frame per foot whose orientation is the sole's (the foot frame or its first point)
        self.foot_frame_ids = tuple(self.frame_ids[int(i)] for i in first_contact)
        self.rot_f = np.empty((len(feet), 3, 3))                  # filled each call
        nc, d = len(self.names), self.dim
        self.nc = nc
        self.m = m = nc * d
        self.nx = nx = n + m
        self.slices = tuple(slice(i * d, (i + 1) * d) for i in range(nc))
        self.J = np.zeros((m, owner.nv))
        # the statics as an equality on x = [tau; f]: rows [base (6); joints in joint_names order]
        self.A = np.zeros((6 + n, nx))
        self.A[6:, :n] = np.eye(n)
        self.Jt_u = self.A[:6, n:]          # views, filled each call
        self.Jt_a = self.A[6:, n:]
        self.b = np.zeros(6 + n)
        self.g_u = self.b[:6]
        self.g_a = self.b[6:]
        self.P = np.diag(np.concatenate([np.ones(n), np.full(m, owner.eps)]))
        self.c = np.zeros(nx)
        self.eps_eye = owner.eps * np.eye(m)   # condensed Hessian's force term
        # inequalities in the sole frame, per contact: G_loc (nc, k, d) acts on the local force
        mu_l = owner.mu / math.sqrt(2.0)
        base_rows = np.zeros((5, d))
        base_rows[0, 2] = -1.0                                  # -f_n <= -f_min
        base_rows[1, [0, 2]] = (1.0, -mu_l)                     # f_x - mu' f_n <= 0
        base_rows[2, [0, 2]] = (-1.0, -mu_l)                    # -f_x - mu' f_n <= 0
        base_rows[3, [1, 2]] = (1.0, -mu_l)
        base_rows[4, [1, 2]] = (-1.0, -mu_l)
        base_names = ("normal", "friction_x+", "friction_x-", "friction_y+", "friction_y-")
        blocks, row_names, cop_rows = [], [], []
        for name in self.names:
            rows, names = [base_rows], list(base_names)
            if d == 6:
                poly, zs, edge_names = owner._soles[name]
                cop = np.zeros((len(poly), 6))
                for k, (p, e) in enumerate(zip(poly, np.roll(poly, -1, axis=0) - poly)):
                    # CoP c left of the edge p -> p + e, times f_n > 0, with
                    # c_x f_n = z_s f_x - m_y and c_y f_n = m_x + z_s f_y:
                    # -(e_x (m_x + z_s f_y - p_y f_n) - e_y (z_s f_x - m_y - p_x f_n)) <= 0
                    cop[k] = (e[1] * zs, -e[0] * zs, e[0] * p[1] - e[1] * p[0], -e[0], -e[1], 0.0)
                rows.append(cop)
                names += edge_names
                cop_rows.append(cop)
            blocks.append(np.vstack(rows))
            row_names += [f"{name}:{r}" for r in names]
        self.k = k = blocks[0].shape[0]
        self.G_loc = np.stack(blocks)                                # (nc, k, d)
        if d == 6:
            self.G_loc_f = np.ascontiguousarray(self.G_loc[:, :, :3])
            self.G_loc_m = np.ascontiguousarray(self.G_loc[:, :, 3:])
        self.cop_loc = np.stack(cop_rows) if cop_rows else None     # (nfeet, n_edges, 6)
        self.G = np.zeros((nc * k, nx))                              # acts on x = [tau; f]
        self.G_f = self.G[:, n:]                                     # view: acts on f
        self.h = np.zeros(nc * k)
        self.h[::k] = -owner.f_min
        self.ineq_names = tuple(row_names)
        ri = np.arange(nc * k).reshape(nc, k)
        cj = n + np.arange(m).reshape(nc, d)
        self._g_flat = (ri[:, :, None] * nx + cj[:, None, :]).ravel()  # G.flat positions of blocks
        # torque limits: bounds on tau (full QP) or rows on f (condensed QP)
        lim = np.where(np.isfinite(owner.effort), owner.effort, _BIG)
        self.lb = np.concatenate([-lim, np.full(m, -_BIG)]) if owner.torque_limits else None
        self.ub = np.concatenate([lim, np.full(m, _BIG)]) if owner.torque_limits else None
        self.lim_rows = np.flatnonzero(np.isfinite(owner.effort)) if owner.torque_limits else None

    def update_inequalities(self, rot_c: np.ndarray) -> None:
        """``G``: the sole-frame rows ``G_loc`` applied to ``R_c^T f_c`` for each contact ``c``."""
        rt = rot_c.transpose(0, 2, 1)
        if self.dim == 3:
            blocks = self.G_loc @ rt
        else:
            blocks = np.concatenate([self.G_loc_f @ rt, self.G_loc_m @ rt], axis=2)
        self.G.flat[self._g_flat] = blocks.ravel()


class GravityCompensationQP:
    """Gravity compensation from the floating-base statics, plus a joint PD; see the module
    docstring for the equations, contact models, methods, inequalities and feasibility rules.

    Args:
        robot: a :class:`wbsim.Robot` (free-flyer root, feet configured), or a fixed-base robot
            (its ``pin_model`` has no free-flyer; then ``tau = g(q)`` and no contacts).
        contact_model: ``"points"`` (3D force at each sole corner, default) or ``"wrench"`` (6D
            wrench per foot at the foot frame origin, world-aligned).
        method: ``"qp"`` (default), ``"single"``, ``"pinv"`` or ``"min_torque"``.
        solver: QP solver for ``method="qp"``: ``"daqp"``, ``"proxqp"``, ``"osqp"`` (or another
            installed qpsolvers backend, with its default options); ``None`` ->
            :data:`DEFAULT_SOLVER`.
        eps: weight of ``||f||^2`` against ``||tau||^2`` in the QP (> 0); see the module docstring.
        mu: Coulomb friction coefficient (> 0); the QP uses the inscribed pyramid ``mu / sqrt(2)``.
        f_min: lower bound on each contact's normal force, N (per point, or per foot for the wrench
            model), >= 0.
        torque_limits: bound ``|tau| <= robot.effort_limits`` in the QP and check it for every
            method.
        condensed: solve the QP in ``f`` alone, ``tau = g_a - (J^T)_a f`` substituted (same
            minimiser, 24 instead of 53 variables for G1's points model, DAQP 1.5-3x faster);
            ``False`` (default) solves the seed's ``x = [tau; f]``.
        frequency_hz, damping_ratio: the joint PD's natural frequency (Hz) and damping ratio
            (:class:`wbsim.controllers.pd.JointPD`).
        feasibility_tol: tolerance of the physical checks (N, N·m).
        residual_tol: largest statics residual (N·m) of a feasible solution.

    Raises:
        UnknownNameError: unknown ``contact_model``, ``method`` or ``solver``.
        GravityCompensationError: ``method="single"`` with the points model, out-of-range numbers,
            a sole that is not a convex polygon.
    """

    name = "gravity_qp"

    def __init__(self, robot, contact_model: str = "points", method: str = "qp",
                 solver: str | None = None, eps: float = 1e-5, mu: float = 0.7, f_min: float = 0.0,
                 torque_limits: bool = False, frequency_hz: float = 3.0, damping_ratio: float = 1.0,
                 condensed: bool = False, feasibility_tol: float = 1e-6,
                 residual_tol: float = 1e-6):
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
        for label, value, ok in (("eps", eps, eps > 0), ("mu", mu, mu > 0),
                                 ("f_min", f_min, f_min >= 0),
                                 ("frequency_hz", frequency_hz, frequency_hz > 0),
                                 ("damping_ratio", damping_ratio, damping_ratio >= 0),
                                 ("feasibility_tol", feasibility_tol, feasibility_tol >= 0),
                                 ("residual_tol", residual_tol, residual_tol >= 0)):
            if not (np.isfinite(value) and ok):
                raise GravityCompensationError(f"{label} = {value!r} is out of range")
        self.robot = robot
        self.contact_model = contact_model
        self.method = method
        self.solver = solver
        self.solver_options = dict(SOLVER_OPTIONS.get(solver, {}))
        self.eps = float(eps)
        self.mu = float(mu)
        self.f_min = float(f_min)
        self.torque_limits = bool(torque_limits)
        self.condensed = bool(condensed)
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
        self.floating = (self.model.njoints > 1
                         and self.model.joints[1].shortname() == "JointModelFreeFlyer")
        self._soles: dict[str, tuple] = {}        # wrench model: CoP polygon per foot
        if self.floating and contact_model == "wrench":
            for fname, foot in robot.feet.items():
                corners = tuple(p[len(fname) + 1:] for p in foot.point_names)
                self._soles[fname] = _sole_polygon(foot.points_in_foot, corners, fname)
        self._problems: dict[tuple[str, ...], _SupportProblem] = {}
        self._support_cache: dict[Any, tuple[str, ...]] = {}
        self.pd = JointPD(robot, PDGains(frequency_hz, damping_ratio))
        self._last: tuple[float, frozenset, np.ndarray, dict] | None = None

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
                    "a fixed-base robot is held by its base: pass an empty support (tau = g(q))")
            feet: tuple[str, ...] = ()
        else:
            known = self.robot.feet
            for f in wanted:
                if f not in known:
                    raise UnknownNameError("foot", f, known)
            feet = tuple(f for f in known if f in wanted)
        if isinstance(support, (frozenset, tuple, str)):
            self._support_cache[support] = feet
        return feet

    def _problem(self, feet: tuple[str, ...]) -> _SupportProblem:
        prob = self._problems.get(feet)
        if prob is None:
            prob = self._problems[feet] = _SupportProblem(self, feet)
        return prob

    def _frozen(self, feet: tuple[str, ...]) -> frozenset[str]:
        prob = self._problems.get(feet)
        return prob.support if prob is not None else frozenset(feet)

    def solve(self, q: np.ndarray, support: Iterable[str]) -> StaticsResult:
        """Torques and contact forces that hold the robot still at ``q`` on the feet ``support``.

        Args:
            q: ``(nq,)`` Pinocchio configuration (``v`` is taken as 0).
            support: feet in contact (``"left_foot"``, ``"right_foot"``); order does not matter.

        Returns:
            A :class:`StaticsResult`; ``feasible`` is ``False`` (with ``status`` and ``reasons``)
            when there is no physically possible solution. Never raises for infeasibility.

        Raises:
            GravityCompensationError: ``q`` has the wrong shape or non-finite entries;
                ``method="single"`` without exactly one foot; contacts on a fixed-base robot.
            UnknownNameError: a foot name that the robot does not have.
        """
        t_start = time.perf_counter()
        q = np.asarray(q, dtype=float)
        if q.shape != (self.nq,):
            raise GravityCompensationError(f"q must have shape ({self.nq},), got {q.shape}")
        if not np.isfinite(q).all():
            raise GravityCompensationError("q has non-finite entries")
        feet = self._support(support)
        if self.method == "single" and len(feet) != 1:
            raise GravityCompensationError(
                f"method 'single' needs exactly one foot in support, got {sorted(feet) or 'none'}")
        return self._solve(q, feet, self.method, t_start)

    def _solve(self, q: np.ndarray, feet: tuple[str, ...], method: str,
               t_start: float) -> StaticsResult:
        model, data = self.model, self.data
        g = pin.computeGeneralizedGravity(model, data, q)
        if not self.floating:
            tau = g[self.vidx]
            return self._result(tau, None, None, 0.0, (), "pinocchio",
                                "solved (fixed base: tau = g(q))", 0.0, True, "fixed_base", (),
                                True, (), t_start)
        if not feet:
            return self._result(np.full(self.n, np.nan), None, None, math.nan, (), "none",
                                "infeasible: no foot in support, nothing holds the floating base",
                                0.0, False, method, (), None,
                                ("no contact: gravity on the base cannot be balanced",), t_start)
        prob = self._problem(feet)
        # Jacobians (world-aligned) of every contact frame, and the sole rotations
        pin.computeJointJacobians(model, data, q)
        J, d, lwa = prob.J, prob.dim, pin.LOCAL_WORLD_ALIGNED
        for sl, fid in zip(prob.slices, prob.frame_ids):
            J[sl] = pin.getFrameJacobian(model, data, fid, lwa)[:d]
        rot_f, oMf = prob.rot_f, data.oMf
        for k, fid in enumerate(prob.foot_frame_ids):
            rot_f[k] = oMf[fid].rotation
        rot_c = rot_f[prob.contact_foot] if d == 3 else rot_f
        Jv = J[:, self.vidx]                      # ((J^T)_a)^T, (m, n)
        prob.Jt_u[:] = J[:, :6].T
        prob.Jt_a[:] = Jv.T
        prob.g_u[:] = g[:6]
        prob.g_a[:] = g[self.vidx]
        prob.update_inequalities(rot_c)
        if method == "qp":
            tau, f, solve_time, status, ok = self._solve_qp(prob, Jv)
            solver = self.solver
        else:
            t0 = time.perf_counter()
            tau, f, status, ok = self._closed_form(prob, method)
            solve_time = time.perf_counter() - t0
            solver = "numpy.linalg"
        if not ok:
            return self._result(tau, f, prob, math.nan, (), solver, status, solve_time, False,
                                method, feet, None, (status,), t_start)
        r = prob.A @ np.concatenate((tau, f))
        r -= prob.b
        residual = math.sqrt(float(r @ r))
        slack = prob.G_f @ f - prob.h
        active = [prob.ineq_names[i] for i in np.flatnonzero(slack >= -_ACTIVE_TOL)]
        limits_hit = False
        if self.torque_limits:
            lim = self.effort
            hi = np.flatnonzero(tau >= lim - _ACTIVE_TOL)
            lo = np.flatnonzero(tau <= _ACTIVE_TOL - lim)
            active += [f"{self.joint_names[i]}:torque_max" for i in hi]
            active += [f"{self.joint_names[i]}:torque_min" for i in lo]
            limits_hit = bool(hi.size or lo.size)
        # Fast path: every QP inequality holds (the pyramid lies inside the cone), so does every
        # physical condition; otherwise check them one by one.
        if limits_hit or not slack.max() <= 0.5 * self.feasibility_tol:
            reasons = self._check(prob, tau, f, rot_f, rot_c)
        else:
            reasons = []
        possible = not reasons
        if not residual <= self.residual_tol:
            reasons.append(f"statics residual {residual:.3g} N·m > {self.residual_tol:g} N·m")
        feasible = not reasons
        if not feasible:
            status = "infeasible: " + "; ".join(reasons)
        return self._result(tau, f, prob, residual, tuple(active), solver, status, solve_time,
                            feasible, method, feet, possible, tuple(reasons), t_start)

    def _closed_form(self, prob: _SupportProblem, method: str):
        """single / pinv / min_torque (module docstring)."""
        Jt_u, Jt_a, g_u, g_a = prob.Jt_u, prob.Jt_a, prob.g_u, prob.g_a
        if method == "single":
            try:
                f = np.linalg.solve(Jt_u, g_u)
            except np.linalg.LinAlgError:
                return (np.full(self.n, np.nan), np.full(prob.m, np.nan),
                        "failed: (J^T)_u is singular", False)
        else:
            f = np.linalg.lstsq(Jt_u, g_u, rcond=None)[0]        # least ||f||
            if method == "min_torque":
                _, s, vt = np.linalg.svd(Jt_u)
                rank = int(np.sum(s > s[0] * 1e-12))
                N = vt[rank:].T                                    # null space of (J^T)_u
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
        return g_a - Jt_a @ f, f, "solved", True

    def _solve_qp(self, prob: _SupportProblem, Jv: np.ndarray):
        """The QP, full (x = [tau; f]) or condensed (x = f)."""
        n = self.n
        if self.condensed:
            P = Jv @ Jv.T + prob.eps_eye         # ||g_a - Jt_a f||^2 + eps ||f||^2, halved
            c = -(Jv @ prob.g_a)
            G, h = prob.G_f, prob.h
            if self.torque_limits and prob.lim_rows.size:
                r = prob.lim_rows
                lim = self.effort[r]
                G = np.vstack([G, -Jv[:, r].T, Jv[:, r].T])        # tau <= lim, -tau <= lim
                h = np.concatenate([h, lim - prob.g_a[r], lim + prob.g_a[r]])
            A, b, lb, ub = prob.Jt_u, prob.g_u, None, None
        else:
            P, c, G, h, A, b = prob.P, prob.c, prob.G, prob.h, prob.A, prob.b
            lb, ub = prob.lb, prob.ub
        solver, options = self.solver, self.solver_options
        if solver == "osqp":
            P, G, A = spa.csc_matrix(P), spa.csc_matrix(G), spa.csc_matrix(A)
        problem = qpsolvers.Problem(P, c, G, h, A, b, lb, ub)
        t0 = time.perf_counter()
        try:
            if solver == "osqp":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # OSQP warns on failure; the status says it
                    sol = qpsolvers.solve_problem(problem, solver=solver, **options)
            else:
                sol = qpsolvers.solve_problem(problem, solver=solver, **options)
        except Exception as exc:  # noqa: BLE001  a solver may raise on a degenerate problem
            return (np.full(n, np.nan), np.full(prob.m, np.nan), time.perf_counter() - t0,
                    f"failed: {self.solver} raised {type(exc).__name__}: {exc}", False)
        dt = time.perf_counter() - t0
        x = sol.x
        if not sol.found or x is None or not np.all(np.isfinite(x)):
            info = (sol.extras or {}).get("info")
            detail = f" ({getattr(info, 'status', info)})" if info is not None else ""
            return (np.full(n, np.nan), np.full(prob.m, np.nan), dt,
                    f"infeasible or failed: {self.solver} found no solution{detail}", False)
        if self.condensed:
            return prob.g_a - Jv.T @ x, x, dt, "solved", True
        return x[:n], x[n:], dt, "solved", True

    def _check(self, prob: _SupportProblem, tau, f, rot_f, rot_c) -> list[str]:
        """Reasons (empty if none) why ``(tau, f)`` is not physically possible: unilaterality,
        Coulomb's cone, CoP in the sole (wrench model), torque limits (if enabled)."""
        tol, mu = self.feasibility_tol, self.mu
        fc = f.reshape(prob.nc, prob.dim)
        force_loc = np.einsum("cji,cj->ci", rot_c, fc[:, :3])       # R_c^T f_c
        fn = force_loc[:, 2]
        ft = np.hypot(force_loc[:, 0], force_loc[:, 1])
        bad_n = fn < self.f_min - tol
        bad_t = (ft > mu * fn + tol) & ~bad_n          # friction is moot where the contact pulls
        if prob.dim == 6:
            w_loc = np.concatenate([force_loc, np.einsum("cji,cj->ci", rot_f, fc[:, 3:])], axis=1)
            bad_cop = np.any(np.einsum("cke,ce->ck", prob.cop_loc, w_loc) > tol, axis=1)
        else:
            bad_cop = np.zeros(prob.nc, dtype=bool)
        if self.torque_limits:
            bad_tau = np.abs(tau) > self.effort + tol
        else:
            bad_tau = np.zeros(1, dtype=bool)
        if not (bad_n.any() or bad_t.any() or bad_cop.any() or bad_tau.any()):
            return []
        reasons: list[str] = []
        for i in np.flatnonzero(bad_n):
            reasons.append(f"{prob.names[i]}: normal force {fn[i]:.4g} N < f_min {self.f_min:g} N"
                           + (" (the contact would pull)" if fn[i] < 0 else ""))
        for i in np.flatnonzero(bad_t):
            reasons.append(f"{prob.names[i]}: tangential force {ft[i]:.4g} N > mu f_n "
                           f"{mu * fn[i]:.4g} N (it would slip)")
        for i in np.flatnonzero(bad_cop):
            _, zs, _ = self._soles[prob.names[i]]
            w = w_loc[i]
            if w[2] > 0:
                where = f"({(zs * w[0] - w[4]) / w[2]:.4f}, {(w[3] + zs * w[1]) / w[2]:.4f}) m"
            else:
                where = "(undefined: no normal force)"
            reasons.append(f"{prob.names[i]}: centre of pressure {where} in the foot frame is "
                           "outside the sole")
        if self.torque_limits:
            for i in np.flatnonzero(bad_tau):
                reasons.append(f"{self.joint_names[i]}: |tau| {abs(tau[i]):.4g} N·m > limit "
                               f"{self.effort[i]:g} N·m")
        return reasons

    def _result(self, tau, f, prob, residual, active, solver, status, solve_time, feasible, method,
                feet, possible, reasons, t_start) -> StaticsResult:
        # tau and f are fresh arrays (or views of the solver's fresh x), never the reused buffers
        tau = np.asarray(tau, dtype=float)
        tau.flags.writeable = False
        forces: dict[str, np.ndarray] = {}
        if prob is not None and f is not None:
            fc = np.asarray(f, dtype=float).reshape(prob.nc, prob.dim)
            fc.flags.writeable = False
            forces = dict(zip(prob.names, fc))
        return StaticsResult(
            tau=dict(zip(self.joint_names, tau.tolist())), tau_array=tau, contact_forces=forces,
            residual=float(residual), active_constraints=tuple(active), solver=solver,
            status=status,
            solve_time=float(solve_time), feasible=bool(feasible), method=method,
            contact_model=self.contact_model, support=self._frozen(feet),
            physically_possible=possible, reasons=tuple(reasons),
            total_time=time.perf_counter() - t_start,
        )

    # -- controller protocol -----------------------------------------------------------------------
    def reset(self, state: RobotState) -> None:
        """Take ``state.q`` as the PD reference posture (:meth:`JointPD.reset`) and forget the last
        feasible statics solution."""
        self.pd.reset(state.q)
        self._last = None

    def compute(self, state: RobotState, schedule: ContactSchedule) -> Command:
        """``tau = tau_statics(state.q, schedule.contact_set) + JointPD(state.q, state.v)``, N·m,
        ``(n_joints,)`` in ``robot.joint_names`` order.

        ``Command.contact_forces`` are the statics forces (world frame; see
        :attr:`StaticsResult.contact_forces`), ``Command.contact_set`` the support, ``Command.info``
        holds ``solve_time_s``, ``total_time_s``, ``residual`` (N·m), ``active_constraints``,
        ``solver``, ``method``, ``contact_model``, ``physically_possible``, ``reasons``.

        Never raises. When the statics are infeasible, fail, or raise (e.g. ``single`` asked for two
        feet, an unknown foot) the command has ``feasible=False``, the status text, and the first
        fallback that applies, named in ``Command.fallback``:

        1. ``"last_feasible+pd"``: the last feasible statics torques (and their forces) of this
           episode, if they were for the same support and at most :data:`FALLBACK_HOLD_S` s old,
           plus the PD;
        2. ``"unconstrained_min_torque+pd"``: the least-torque solution of the statics equality
           alone (its contact forces may pull) at ``state.q``, plus the PD;
        3. ``"joint_gravity+pd"``: ``g(q)`` on the joints (fixed-base gravity compensation), plus
           the PD; when no foot is in support (or the support is invalid).
        """
        wanted = schedule.contact_set if self.floating else ()
        pd_tau = self.pd(state.q, state.v)
        try:
            res = self.solve(state.q, wanted)
            error = None
        except (WbsimError, np.linalg.LinAlgError, ValueError) as exc:  # e.g. a non-finite state
            res, error = None, f"error: {type(exc).__name__}: {exc}"
        if res is not None and res.feasible:
            self._last = (float(state.t), res.support, res.tau_array, res.contact_forces)
            return Command(tau=res.tau_array + pd_tau, contact_set=res.support,
                           contact_forces=dict(res.contact_forces), feasible=True, fallback="",
                           status=res.status, info=self._info(res))
        status = error if res is None else res.status
        info = (self._info(res) if res is not None
                else {"method": self.method, "solver": self.solver, "error": error})
        try:
            feet = self._support(wanted) if self.floating else ()
        except WbsimError:
            feet = ()
        support = frozenset(feet)
        # 1. the last feasible statics, same support, recent
        if self._last is not None:
            t_last, sup_last, tau_last, f_last = self._last
            if sup_last == support and 0.0 <= float(state.t) - t_last <= FALLBACK_HOLD_S:
                return Command(tau=tau_last + pd_tau, contact_set=support,
                               contact_forces=dict(f_last), feasible=False,
                               fallback=FALLBACKS[0], status=status, info=info)
        # 2. least torque of the statics equality alone
        if feet and np.isfinite(state.q).all():
            try:
                unc = self._solve(np.asarray(state.q, dtype=float), feet, "min_torque",
                                  time.perf_counter())
            except (WbsimError, np.linalg.LinAlgError, ValueError):
                unc = None
            if (unc is not None and unc.residual <= self.residual_tol
                    and np.all(np.isfinite(unc.tau_array))):
                return Command(tau=unc.tau_array + pd_tau, contact_set=support,
                               contact_forces=dict(unc.contact_forces), feasible=False,
                               fallback=FALLBACKS[1], status=status, info=info)
        # 3. joint gravity
        g = pin.computeGeneralizedGravity(self.model, self.data, np.asarray(state.q, dtype=float))
        return Command(tau=g[self.vidx] + pd_tau, contact_set=support, contact_forces={},
                       feasible=False, fallback=FALLBACKS[2], status=status, info=info)

    @staticmethod
    def _info(res: StaticsResult) -> dict[str, Any]:
        return {
            "solve_time_s": res.solve_time,
            "total_time_s": res.total_time,
            "residual": res.residual,
            "active_constraints": res.active_constraints,
            "solver": res.solver,
            "method": res.method,
            "contact_model": res.contact_model,
            "physically_possible": res.physically_possible,
            "reasons": res.reasons,
        }
