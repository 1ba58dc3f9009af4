"""Gravity compensation of a standing humanoid: the joint torques ``tau`` and the contact forces
``f`` of the floating-base statics, by four methods, plus a joint PD (after the project's seed text
"gravity-compensation-humanoid", not shipped with the package; every formula here is derived and
tested on its own).

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
  (``"daqp"``, ``"proxqp"`` or ``"osqp"``, see :data:`SOLVER_OPTIONS` for the tolerances), or, for
  DAQP on the condensed form below (the default), by DAQP called directly (see "Speed").

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
for every solver), fewer variables (24 instead of 53 for G1's points model), faster. It is the
default for the solvers it was checked against the full QP with on random and recorded stand
states of G1 and Talos (:data:`CONDENSED_SOLVERS`: DAQP, ProxQP; forces within 1e-4 N, the
internal ones included); OSQP (and any other backend) keeps the full QP by default: condensed, OSQP
declared one extreme Talos state infeasible that the full QP solves.

Speed (the default, DAQP on the condensed QP): DAQP is called directly, not through qpsolvers, on
arrays laid out once per support set and filled in place (no qpsolvers conversions, a
``daqp.Model`` whose workspace is allocated once, every solve started cold so the answer does not
depend on earlier calls); the forces are solved for in the sole frame, where the friction and
unilaterality rows are constant (the same QP under a rotation of each foot's forces: same
minimiser); the 4 sole-point Jacobians come from one ``getFrameJacobian`` per foot by the
rigid-body transport ``J_p = J_lin - [p]x J_ang`` (foot frame, ``p`` the point there). ``compute``
goes further when nothing needs reporting (no bound within tolerance;
:meth:`GravityCompensationQP._compute_fast`): one function, ``g(q) = -M J_com^T g_0`` and the joint
Jacobians from one ``pinocchio.jacobianCenterOfMass`` pass, and the full QP restricted to the joints
the contacts reach (the legs; every other joint has ``tau = g``), whose Hessian
``diag(eps, 1)`` is constant. Every other solver and the full QP go through
``qpsolvers.solve_problem`` with world-frame forces, as before; ``tests/test_gravity_qp.py`` checks
that the paths give the same answer.

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

try:  # DAQP called directly on the condensed QP (qpsolvers lists it when installed)
    import daqp
except ImportError:  # pragma: no cover - then qpsolvers does not offer "daqp" either
    daqp = None

from wbsim.controllers.base import scatter_rows
from wbsim.errors import is_real
from wbsim.types import Command, CommandStatus, ContactSchedule, RobotState
from wbsim.controllers.pd import JointPD, PDGains
from wbsim.errors import UnknownNameError, WbsimError

__all__ = [
    "CONDENSED_SOLVERS",
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
#: Default QP solver: the fastest on the G1 points-model double-support problem at the stand pose
#: (full QP: 53 variables, 35 equalities, 40 inequalities; condensed: 24 variables, 6 equalities).
#: Time per call on the shared 2-core test machine (figures move by +-50% with its load): full QP
#: through ``qpsolvers.solve_problem``: daqp 84-137 us, proxqp 300-630 us, osqp 1.0-2.2 ms;
#: condensed, DAQP called directly (``daqp.Model``): ~20 us. The whole default ``compute`` takes
#: ~1.6-1.7 raw ``mj_step`` of the G1 stand scene on its fast path (~64 us when ``mj_step``
#: takes 39 us; ``daqp.Model.update`` ~11 us of it, a cost that grows with the size of ``A``).
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
#: Solvers that solve the condensed QP by default (``condensed=None``): checked against the full
#: QP (module docstring). Others (OSQP, other qpsolvers backends) solve the full QP by default.
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
#: float64, the dtype the fast path takes ``q`` in (an identity test first: numpy's builtin
#: dtypes are singletons)
_F64 = np.dtype(np.float64)
#: the largest entry of a 1-D array (NaN if any is NaN): ``ndarray.max`` without its wrapper
_max = np.maximum.reduce


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
    are filled in place each call (:meth:`fill`).

    On the DAQP fast path (``local``) the unknowns are the contact forces in their sole frame,
    ``f_loc`` (``f = R_foot f_loc``, world): the friction, unilaterality and CoP rows ``G_f`` are
    then constant and the Jacobians are ``LOCAL`` ones (``J_loc^T f_loc = J^T f``, the same
    statics); norms are unchanged by the rotation, so the QP and the closed forms have the same
    minimiser as in world coordinates. Every other path keeps world-frame unknowns (``G_f``
    rotated each call): the problems qpsolvers' backends get are the ones they were checked on
    (ProxQP, on degenerate states, can declare the sole-frame problem infeasible).
    :meth:`world_forces` gives the answer as world-frame forces either way.

    ``JT`` is ``J^T`` of the unknowns (``(nv, m)``, Pinocchio's velocity order), ``Jt_u`` its 6
    base rows and ``Jt_a`` its actuated rows in ``robot.joint_names`` order. Full QP (``condensed=False``):
    ``A``, ``b``, ``P``, ``c``, ``G`` on ``x = [tau; f_loc]``, with ``Jt_u``, ``Jt_a``, ``g_u``,
    ``g_a``, ``G_f`` views into them. Condensed QP: one array ``stack`` holds, in this order, its
    inequality rows ``G_f`` (contacts) and ``-(J^T)_a[r]``, ``(J^T)_a[r]`` (``r``: joints with a
    torque limit), then ``J^T`` (whose first 6 rows ``(J^T)_u`` are the equality rows) and, when the
    actuated joints follow Pinocchio's order, ``sqrt(eps) I`` below ``(J^T)_a``. ``Aq`` (the rows
    down to ``(J^T)_u``) with upper bounds ``bu = [h; lim - g_a[r]; lim + g_a[r]; g_u]``, lower
    bounds ``bl = -1e30`` and ``sense`` (5 on the equality rows) are the arrays qpsolvers' DAQP
    interface builds from ``(G, h, A, b)``; ``stack @ f`` gives every inequality's ``G f`` and
    ``J^T f`` at once; ``X = [(J^T)_a; sqrt(eps) I]`` gives ``H = X^T X``.
    """

    def __init__(self, owner: GravityCompensationQP, feet: tuple[str, ...]):
        robot, model = owner.robot, owner.model
        n, nv = owner.n, owner.nv
        self.feet = feet
        self.support = frozenset(feet)
        self.condensed = owner.condensed
        #: unknowns in the sole frame (the DAQP fast path) or in the world frame
        self.local = owner._daqp_direct
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
        nf = len(feet)
        #: foot index of each contact (a foot's points share its orientation)
        self.contact_foot = np.repeat(np.arange(nf), counts)
        first_contact = np.cumsum([0, *counts[:-1]])
        nc, d = len(self.names), self.dim
        self.nc = nc
        self.m = m = nc * d
        self.nx = nx = n + m
        self.slices = tuple(slice(i * d, (i + 1) * d) for i in range(nc))
        #: one frame per foot whose orientation is the sole's (the foot frame or its first point)
        sole_frames = [self.frame_ids[int(i)] for i in first_contact]
        #: per foot: the joint that carries the sole, and the sole frame's rotation on it
        self.sole_joints = tuple(int(model.frames[f].parentJoint) for f in sole_frames)
        self.sole_rel = tuple(model.frames[f].placement.rotation.copy() for f in sole_frames)
        self.sole_rel_identity = all(np.array_equal(r, np.eye(3)) for r in self.sole_rel)
        self._sole_rel_stack = np.stack(self.sole_rel)  # (n_feet, 3, 3), for fill
        self.rot_f = np.empty((nf, 3, 3))                      # sole rotations, filled each call
        self._per_foot = d == 3 and len(set(counts)) == 1       # world_forces by foot
        self._f_shape = (nf, counts[0], 3) if self._per_foot else (nc, d // 3, 3)
        # inequalities in the sole frame, per contact: G_loc (nc, k, d) acts on f_loc
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
        self.ineq_names = tuple(row_names)
        self.nin = nin = nc * k
        # torque limits: bounds on tau (full QP) or rows on f (condensed QP)
        lim = np.where(np.isfinite(owner.effort), owner.effort, _BIG)
        self.lb = np.concatenate([-lim, np.full(m, -_BIG)]) if owner.torque_limits else None
        self.ub = np.concatenate([lim, np.full(m, _BIG)]) if owner.torque_limits else None
        self.lim_rows = (np.flatnonzero(np.isfinite(owner.effort)) if owner.torque_limits
                         else np.zeros(0, dtype=int))
        #: actuated rows of J^T: a slice (views) when robot.joint_names follow Pinocchio's order
        self.vsel = vsel = owner.vsel
        if self.condensed:
            nl = self.lim_rows.size
            self.na = na = nin + 2 * nl + 6                 # rows of the QP's constraint matrix
            tail = isinstance(vsel, slice) and vsel.stop == nv   # (J^T)_a ends J^T: X in stack
            self.stack = np.zeros((na - 6 + nv + (m if tail else 0), m))
            self.Aq = self.stack[:na]
            self.JT = self.stack[na - 6:na - 6 + nv]
            self.stack_rows = self.stack[:na - 6 + nv]      # [G_f; limit rows; J^T]
            self.bu = np.zeros(na)
            self.bl = np.full(na, -1e30)                    # as qpsolvers' DAQP interface
            self.sense = np.zeros(na, dtype=np.intc)
            self.sense[-6:] = 5                             # DAQP: equality (active, immutable)
            self.G_f, self.h = self.Aq[:nin], self.bu[:nin]
            self.Gq, self.hq = self.Aq[:-6], self.bu[:-6]   # inequalities incl. torque limits
            self.G_lo, self.G_hi = self.Aq[nin:nin + nl], self.Aq[nin + nl:nin + 2 * nl]
            self.h_lo, self.h_hi = self.bu[nin:nin + nl], self.bu[nin + nl:nin + 2 * nl]
            self.lim = owner.effort[self.lim_rows]
            self.Jt_u, self.g_u = self.JT[:6], self.bu[-6:]
            #: (J^T)_a is a view of J^T (no copy per call) when it is its last rows
            self.copy_jt_a = not tail
            self._vidx = owner.vidx
            if tail:
                self.Jt_a = self.JT[vsel]
                self.X = self.stack[na - 6 + vsel.start:]
            else:
                self.X = np.zeros((n + m, m))
                self.Jt_a = self.X[:n]
            self.X[n:] = math.sqrt(owner.eps) * np.eye(m)
            self.g_a = np.zeros(n)                          # rebound to g[vsel] each call
            self.H = np.empty((m, m))
            self.cq = np.empty(m)
            self.daqp_model = None                          # daqp.Model, set up on first use
        else:
            self.JT = np.zeros((nv, m))
            self.copy_jt_a = True
            # the statics as an equality on x = [tau; f]: rows [base (6); joints, joint_names order]
            self.A = np.zeros((6 + n, nx))
            self.A[6:, :n] = np.eye(n)
            self.Jt_u = self.A[:6, n:]          # views, filled each call
            self.Jt_a = self.A[6:, n:]
            self.b = np.zeros(6 + n)
            self.g_u = self.b[:6]
            self.g_a = self.b[6:]
            self.P = np.diag(np.concatenate([np.ones(n), np.full(m, owner.eps)]))
            self.c = np.zeros(nx)
            self.G = np.zeros((nin, nx))                             # acts on x = [tau; f]
            self.G_f = self.G[:, n:]                                 # view: acts on f
            self.h = np.zeros(nin)
        self.h[::k] = -owner.f_min
        self.h_zero = not np.any(self.h)
        # the contact blocks of G_f: one strided (nc, k, d) view of its block diagonal
        row, col = self.G_f.strides
        self._g_blocks = np.lib.stride_tricks.as_strided(
            self.G_f, shape=(nc, k, d), strides=(k * row + d * col, row, col), writeable=True)
        if self.local:
            self._g_blocks[:] = self.G_loc                           # constant: sole frame
        #: 3-vector blocks of f: the foot of each (rotations of world <-> sole frame)
        self._block_foot = np.repeat(self.contact_foot, d // 3)
        self._transport_setup(model, feet_objs, counts, nv)
        if not self.transport:
            self.J = np.zeros((m, nv))
        elif not self.local:
            self.JT_loc = np.zeros((nv, m))
        #: :meth:`GravityCompensationQP._compute_fast` applies: DAQP direct, sole-frame forces,
        #: transported Jacobians, actuated joints in Pinocchio's order, no torque-limit rows,
        #: f_min = 0, and the joints the contacts reach first (:meth:`_fast_setup`)
        self.fast = (self.local and self.transport and not self.copy_jt_a
                     and not self.lim_rows.size and self.sole_rel_identity and self.h_zero
                     and self._fast_setup(owner))

    def _fast_setup(self, owner: GravityCompensationQP) -> bool:
        """The QP of the fast path: the full QP restricted to the joints that the contact forces
        reach (those on the chains from the base to the soles, ``nl`` of them; every other joint
        has ``tau = g`` whatever ``f`` is, a row of its own that the minimum leaves at that
        value), in the unknowns ``x = [f (sole frame); tau_L]``: minimise
        ``1/2 x^T diag(eps, 1) x`` subject to ``G_f f <= 0``, ``(J^T)_u f = g_u`` and
        ``tau_L + (J^T)_L f = g_L``. Same minimiser as the full and the condensed QP, and its
        Hessian is constant and diagonal, which DAQP factors for nothing: per call only the
        Jacobian rows and ``g`` change. Needs those joints to be Pinocchio's velocity rows
        ``6 .. 6 + nl`` (G1: the legs); ``False`` otherwise."""
        model, n, m, nin = owner.model, owner.n, self.m, self.nin
        reached = set()
        for j in self.sole_joints:
            for i in model.supports[j]:
                jm = model.joints[i]
                if i > 1:                                            # not the universe, base
                    reached.update(range(jm.idx_v, jm.idx_v + jm.nv))
        nl = len(reached)
        if not nl or sorted(reached) != list(range(6, 6 + nl)) or self.vsel != slice(6, 6 + n):
            return False
        rows = nin + 6 + nl
        self.fast_A = np.zeros((rows, m + nl))
        self.fast_A[:nin, :m] = self.G_f
        self.fast_A[nin + 6:, m:] = np.eye(nl)
        self.fast_JT = self.fast_A[nin:, :m]        # J^T rows base + reached joints (a view)
        self.fast_H = np.diag(np.concatenate([np.full(m, owner.eps), np.ones(nl)]))
        self.fast_c = np.zeros(m + nl)
        # bu = [0 (inequalities); g_u; g_L] is the head of [0; g(q)] (nin + nv): one product
        # writes g(q) in place, the other joints' g (their tau) is its tail
        self.fast_bu_g = np.zeros(nin + owner.nv)
        self.fast_bu = self.fast_bu_g[:rows]
        self.fast_g = self.fast_bu[nin:]            # g of the base and reached joints
        self.fast_gq = self.fast_bu_g[nin:]         # g(q), (nv,)
        self.fast_g_rest = self.fast_bu_g[rows:]    # g of the joints the contacts do not reach
        # constant views of the per-call buffers (no view built per call)
        self.fast_y = np.zeros(rows)                # A x: [G_f f (slack); statics rows]
        self.fast_y_in = self.fast_y[:nin]
        self.fast_y_eq = self.fast_y[nin:]          # = fast_g at the solution
        self.fast_JfT = self.J_feet[:, :6 + nl].T   # J_feet^T, base + reached columns
        self.fast_TT = np.ascontiguousarray(self.T.T)
        self.fast_bl = np.full(rows, -1e30)
        self.fast_sense = np.zeros(rows, dtype=np.intc)
        self.fast_sense[nin:] = 5
        self.fast_model = None                      # daqp.Model, set up on first use
        # world forces as one product: f = W f_loc, W block-diagonal with R_foot per point
        self.fast_W = np.zeros((m, m))
        row, col = self.fast_W.strides
        npf = self.nc // len(self.feet)
        self.fast_Wb = np.lib.stride_tricks.as_strided(
            self.fast_W, shape=(len(self.feet), npf, 3, 3),
            strides=(npf * 3 * (row + col), 3 * (row + col), row, col), writeable=True)
        # the sole rotations as views of ``owner.data.oMi[j].rotation``: Pinocchio's joint
        # placements live in ``data`` (a vector that never moves), so the views follow every
        # kinematics pass without a Python call per rotation; kept only where they do alias
        data = owner.data
        views = tuple(data.oMi[j].rotation for j in self.sole_joints)
        if not all(np.shares_memory(v, data.oMi[j].rotation)
                   for v, j in zip(views, self.sole_joints)):
            return False
        #: (W block of foot k, R_foot view) pairs: W[k] = R_foot per call
        self.fast_rot_pairs = tuple(zip(self.fast_Wb, views))
        self.fast_data = data
        return True

    def _transport_setup(self, model, feet_objs, counts, nv) -> None:
        """Points model: the sole points of a foot are fixed on the foot link, so their
        Jacobians follow from the foot frame's by the rigid-body velocity transport
        ``v_p = v + w x p``; in the foot (``LOCAL``) frame, with ``p`` the point's constant
        position there: ``J_p = J_lin - [p]x J_ang``. One ``getFrameJacobian`` per foot instead of
        one per point: ``J = T J_feet`` with the constant ``T = [I, -[p]x]`` per point. Used when
        every foot has as many points, on its foot frame's joint and with its orientation (so the
        foot frame is the sole frame; G1, Talos); else each contact frame's world-aligned
        Jacobian is taken from Pinocchio and turned into the sole frame."""
        self.transport = False
        if self.dim != 3 or len(set(counts)) != 1:
            return
        offsets = []
        for foot in feet_objs:
            frame = model.frames[int(foot.pin_frame_id)]
            for pid in foot.pin_point_frame_ids:
                point = model.frames[int(pid)]
                rel = frame.placement.actInv(point.placement)
                if (point.parentJoint != frame.parentJoint
                        or np.abs(rel.rotation - np.eye(3)).max() > 1e-12):
                    return
                offsets.append(rel.translation.copy())
        self.transport = True
        nf, nc = len(feet_objs), len(offsets)
        self.foot_link_ids = tuple(int(f.pin_frame_id) for f in feet_objs)
        self.J_feet = np.zeros((6 * nf, nv))
        self.T = np.zeros((3 * nc, 6 * nf))
        for c, p in enumerate(offsets):
            kf = int(self.contact_foot[c])
            self.T[3 * c:3 * c + 3, 6 * kf:6 * kf + 3] = np.eye(3)
            self.T[3 * c:3 * c + 3, 6 * kf + 3:6 * kf + 6] = -pin.skew(p)

    def fill(self, model, data, q: np.ndarray, g: np.ndarray) -> None:
        """Fill the per-call buffers at ``q`` (``g = g(q)``, a fresh array): ``J^T`` of the
        contacts (sole frame if ``local``, else world-aligned), the sole rotations ``rot_f``,
        ``(J^T)_u``, ``(J^T)_a``, ``g_u``, ``g_a`` (plus the torque-limit rows of the condensed
        QP, and ``G_f`` if not ``local``)."""
        pin.computeJointJacobians(model, data, q)
        oMi, rot_f, local = data.oMi, self.rot_f, self.local
        for k, j in enumerate(self.sole_joints):
            rot_f[k] = oMi[j].rotation
        if not self.sole_rel_identity:
            np.matmul(rot_f, self._sole_rel_stack, out=rot_f)
        gfj = pin.getFrameJacobian
        if self.transport:
            JT_loc = self.JT if local else self.JT_loc
            np.concatenate([gfj(model, data, fid, pin.LOCAL) for fid in self.foot_link_ids],
                           out=self.J_feet)
            np.dot(self.J_feet.T, self.T.T, out=JT_loc)         # J^T = J_feet^T T^T
            if not local:                                       # J^T R^T, block by block
                nv, nb = JT_loc.shape[0], self.m // 3
                blocks = np.matmul(JT_loc.reshape(nv, nb, 3).transpose(1, 0, 2),
                                   rot_f[self._block_foot].transpose(0, 2, 1))
                self.JT[:] = blocks.transpose(1, 0, 2).reshape(nv, self.m)
        else:
            J, lwa = self.J, pin.LOCAL_WORLD_ALIGNED
            for c, (sl, fid) in enumerate(zip(self.slices, self.frame_ids)):
                jc = gfj(model, data, fid, lwa)[:self.dim]
                if local:                                       # R^T J: sole frame
                    rt = rot_f[self.contact_foot[c]].T
                    J[sl.start:sl.start + 3] = rt @ jc[:3]
                    if self.dim == 6:
                        J[sl.start + 3:sl.stop] = rt @ jc[3:]
                else:
                    J[sl] = jc
            self.JT[:] = J.T
        vsel = self.vsel
        self.g_u[:] = g[:6]
        if self.condensed:
            self.g_a = g[vsel]
            if self.copy_jt_a:
                np.take(self.JT, self._vidx, axis=0, out=self.Jt_a)
            if self.lim_rows.size:
                r_lim = self.lim_rows
                np.negative(self.Jt_a[r_lim], out=self.G_lo)             # tau <= lim
                self.G_hi[:] = self.Jt_a[r_lim]                          # -tau <= lim
                np.subtract(self.lim, self.g_a[r_lim], out=self.h_lo)
                np.add(self.lim, self.g_a[r_lim], out=self.h_hi)
        else:
            self.g_a[:] = g[vsel]
            self.Jt_u[:] = self.JT[:6]
            self.Jt_a[:] = self.JT[vsel]
        if not local:
            self.update_inequalities()

    @property
    def rot_c(self) -> np.ndarray:
        """Sole rotation of each contact, ``(nc, 3, 3)``."""
        return self.rot_f[self.contact_foot]

    def update_inequalities(self) -> None:
        """World-frame unknowns: ``G_f``'s blocks are the sole-frame rows ``G_loc`` applied to
        ``R_c^T f_c`` for each contact ``c`` (written in place)."""
        rt = self.rot_c.transpose(0, 2, 1)
        if self.dim == 3:
            np.matmul(self.G_loc, rt, out=self._g_blocks)
        else:
            np.matmul(self.G_loc_f, rt, out=self._g_blocks[:, :, :3])
            np.matmul(self.G_loc_m, rt, out=self._g_blocks[:, :, 3:])

    def sole_forces(self, f: np.ndarray) -> np.ndarray:
        """``(nc, d)`` sole-frame forces (and torques) of the unknowns ``f``."""
        if self.local:
            return f.reshape(self.nc, self.dim)
        fb = f.reshape(self.m // 3, 1, 3) @ self.rot_f[self._block_foot]    # (R^T f)^T
        return fb.reshape(self.nc, self.dim)

    def world_forces(self, f: np.ndarray) -> np.ndarray:
        """``(nc, d)`` world-frame forces (and torques) of the unknowns ``f`` (a fresh array):
        ``R_foot`` applied to each 3-vector when they are in the sole frame."""
        if not self.local:
            return f.reshape(self.nc, self.dim)
        fw = np.matmul(f.reshape(self._f_shape),
                       self.rot_f.transpose(0, 2, 1) if self._per_foot
                       else self.rot_f[self.contact_foot].transpose(0, 2, 1))
        return fw.reshape(self.nc, self.dim)

    def condensed_cost(self) -> None:
        """``H = (J^T)_a^T (J^T)_a + eps I`` (as ``X^T X``, ``X = [(J^T)_a; sqrt(eps) I]``) and
        ``cq = -(J^T)_a^T g_a`` of the condensed QP (``||g_a - (J^T)_a f||^2 + eps ||f||^2``,
        halved, constant dropped)."""
        X, cq = self.X, self.cq
        np.dot(X.T, X, out=self.H)
        np.dot(self.g_a, self.Jt_a, out=cq)
        np.negative(cq, out=cq)


def _statics_info(solve_time: float, total_time: float, residual: float, active: tuple,
                  solver: str, method: str, contact_model: str, possible: bool,
                  reasons: tuple) -> dict[str, Any]:
    """``Command.info`` of :class:`GravityCompensationQP` (the :class:`StaticsResult` fields it
    carries): times in s, the statics residual (N·m, N), the active constraints, the solver, the
    method, the contact model, and whether the result is physically possible (with reasons)."""
    return {"solve_time": solve_time, "compute_time": total_time, "residual": residual,
            "active_constraints": active, "solver": solver, "method": method,
            "contact_model": contact_model, "physically_possible": possible, "reasons": reasons}


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
            minimiser, 24 instead of 53 variables for G1's points model, DAQP 2-5x faster);
            ``False`` solves the seed's ``x = [tau; f]``; ``None`` (default): condensed for the
            solvers in :data:`CONDENSED_SOLVERS` (DAQP, ProxQP), full for the others.
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
                 condensed: bool | None = None, feasibility_tol: float = 1e-6,
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
        for label, value, expected in (("eps", eps, "> 0"), ("mu", mu, "> 0"),
                                       ("f_min", f_min, ">= 0"),
                                       ("frequency_hz", frequency_hz, "> 0"),
                                       ("damping_ratio", damping_ratio, ">= 0"),
                                       ("feasibility_tol", feasibility_tol, ">= 0"),
                                       ("residual_tol", residual_tol, ">= 0")):
            if not (is_real(value) and np.isfinite(value)
                    and (value > 0 if expected == "> 0" else value >= 0)):
                raise GravityCompensationError(f"{label} = {value!r}: expected a finite number "
                                               f"{expected}")
        self.robot = robot
        self.contact_model = contact_model
        self.method = method
        self.solver = solver
        self.solver_options = dict(SOLVER_OPTIONS.get(solver, {}))
        self.eps = float(eps)
        self.mu = float(mu)
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
        #: actuated columns of Pinocchio's velocity: a slice when they are in joint_names order
        v0 = int(self.vidx[0]) if self.n else 0
        self.vsel = (slice(v0, v0 + self.n)
                     if np.array_equal(self.vidx, np.arange(v0, v0 + self.n)) else self.vidx)
        #: the condensed QP with DAQP goes to DAQP directly (:meth:`_solve_daqp`); every other
        #: solver and the full QP go through qpsolvers
        self._daqp_direct = (solver == "daqp" and self.condensed and daqp is not None)
        self.effort = np.asarray(robot.effort_limits, dtype=float)
        self.floating = (self.model.njoints > 1
                         and self.model.joints[1].shortname() == "JointModelFreeFlyer")
        #: compute() tries :meth:`_compute_fast` first
        self._fast = (self._daqp_direct and self.floating and method == "qp"
                      and not self.torque_limits)
        #: -M g_0 (total mass times the model's gravity at construction, N): the fast path
        #: takes g(q) = J_com^T of it
        self._mg = -pin.computeTotalMass(self.model) * np.array(self.model.gravity.linear)
        self._soles: dict[str, tuple] = {}        # wrench model: CoP polygon per foot
        if self.floating and contact_model == "wrench":
            for fname, foot in robot.feet.items():
                corners = tuple(p[len(fname) + 1:] for p in foot.point_names)
                self._soles[fname] = _sole_polygon(foot.points_in_foot, corners, fname)
        self._problems: dict[tuple[str, ...], _SupportProblem] = {}
        self._support_cache: dict[Any, tuple[str, ...]] = {}
        self.pd = JointPD(robot, PDGains(frequency_hz, damping_ratio))
        #: the last feasible statics of the episode: (t, support, tau, forces), the forces a
        #: dict (general path) or (names, read-only (nc, 3) world forces) (fast path)
        self._last: tuple[float, frozenset, np.ndarray, Any] | None = None
        #: contact set (frozenset) -> its support problem, where _compute_fast applies
        self._fast_probs: dict[frozenset, _SupportProblem] = {}
        self._qshape = (self.nq,)

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
        q, feet = self._inputs(q, support)
        return self._solve(q, feet, self.method, t_start)

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
                f"method 'single' needs exactly one foot in support, got {sorted(feet) or 'none'}")
        return q, feet

    def _solve(self, q: np.ndarray, feet: tuple[str, ...], method: str,
               t_start: float) -> StaticsResult:
        label = method if self.floating else "fixed_base"
        return self._result(*self._statics(q, feet, method), label, feet, t_start)

    def _statics(self, q: np.ndarray, feet: tuple[str, ...], method: str) -> tuple:
        """The solve itself: ``(tau, f, prob, residual, active, solver, status, solve_time,
        feasible, physically_possible, reasons)`` (:meth:`_result` makes it a
        :class:`StaticsResult`; :meth:`compute` reads it directly)."""
        model, data = self.model, self.data
        g = pin.computeGeneralizedGravity(model, data, q)
        if not self.floating:
            return (g[self.vidx], None, None, 0.0, (), "pinocchio",
                    "solved (fixed base: tau = g(q))", 0.0, True, True, ())
        if not feet:
            return (np.full(self.n, np.nan), None, None, math.nan, (), "none",
                    "infeasible: no foot in support, nothing holds the floating base", 0.0, False,
                    None, ("no contact: gravity on the base cannot be balanced",))
        prob = self._problem(feet)
        prob.fill(model, data, q, g)   # J^T, sole rotations, (J^T)_u, (J^T)_a, g_u, g_a, G_f
        if method == "qp":
            tau, f, solve_time, status, ok = self._solve_qp(prob)
            solver = self.solver
        else:
            t0 = time.perf_counter()
            tau, f, status, ok = self._closed_form(prob, method)
            solve_time = time.perf_counter() - t0
            solver = "numpy.linalg"
        if not ok:
            return (tau, f, prob, math.nan, (), solver, status, solve_time, False, None,
                    (status,))
        # statics residual g - [0; tau] - J^T f (Pinocchio's velocity order) and the slack
        # G_f f - h of the contact inequalities (f: the sole-frame forces)
        if prob.condensed:
            y = np.dot(prob.stack_rows, f)          # [G_f f; (limit rows) f; J^T f] at once
            slack = y[:prob.nin]
            rJ = y[prob.na - 6:]
        else:
            slack = np.dot(prob.G_f, f)
            rJ = np.dot(prob.JT, f)
        vsel = self.vsel
        if tau is None:
            # condensed QP: tau = g_a - (J^T)_a f, so the joint rows of the residual are zero
            # by construction and the base rows (the QP's equality) are all there is to check
            tau = g[vsel] - rJ[vsel]
            r = g[:6] - rJ[:6]
        else:
            r = g - rJ
            r[vsel] -= tau
        residual = math.sqrt(r.dot(r))
        if not prob.h_zero:
            slack -= prob.h
        slack_max = slack.max()
        active = ([prob.ineq_names[i] for i in np.flatnonzero(slack >= -_ACTIVE_TOL)]
                  if slack_max >= -_ACTIVE_TOL else [])
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
        if limits_hit or not slack_max <= 0.5 * self.feasibility_tol:
            reasons = self._check(prob, tau, f)
        else:
            reasons = []
        possible = not reasons
        if not residual <= self.residual_tol:
            reasons.append(f"statics residual {residual:.3g} N·m > {self.residual_tol:g} N·m")
        feasible = not reasons
        if not feasible:
            status = "infeasible: " + "; ".join(reasons)
        return (tau, prob.world_forces(f), prob, residual, tuple(active), solver, status,
                solve_time, feasible, possible, tuple(reasons))

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

    def _solve_qp(self, prob: _SupportProblem):
        """The QP, full (x = [tau; f]) or condensed (x = f); DAQP on the condensed QP is called
        directly (:meth:`_solve_daqp`), every other case through ``qpsolvers.solve_problem``.
        Returns ``(tau, f, solve_time, status, ok)``; ``tau`` is ``None`` for the condensed QP
        (:meth:`_statics` takes ``tau = g_a - (J^T)_a f`` from the residual's ``J^T f``)."""
        n = self.n
        if self.condensed:
            prob.condensed_cost()
            if self._daqp_direct:
                return self._solve_daqp(prob)
            P, c, G, h, A, b = prob.H, prob.cq, prob.Gq, prob.hq, prob.Jt_u, prob.g_u
            lb = ub = None
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
            return None, x, dt, "solved", True      # tau = g_a - (J^T)_a f, in _statics
        return x[:n], x[n:], dt, "solved", True

    def _daqp_setup(self, H, c, A, bu, bl, sense) -> tuple[daqp.Model, int]:
        """A ``daqp.Model`` with this controller's solver options, set up on the given arrays
        (which it keeps by reference: later calls refill them in place and ``update``); returns it
        and the setup flag, 0 for success, < 0 for a failure."""
        model = daqp.Model()
        if self.solver_options:
            model.settings = dict(self.solver_options)
        return model, min(0, model.setup(H, c, A, bu, bl, sense)[0])  # setup: >= 0 is success

    def _solve_daqp(self, prob: _SupportProblem):
        """The condensed QP by DAQP called directly: a ``daqp.Model`` per support set (its
        workspace allocated once, by ``setup``) takes the arrays ``prob.H, prob.cq, prob.Aq,
        prob.bu, prob.bl, prob.sense`` prepared in place, the very arrays qpsolvers' DAQP
        interface would build from ``(P, q, G, h, A, b)``; ``update`` is given ``sense`` each call,
        so every solve starts cold, as ``daqp.solve`` does: the answer does not depend on earlier
        calls, and agrees with qpsolvers' (``tests/test_gravity_qp.py``). No qpsolvers
        conversions, no per-call allocation of the solver's workspace. Returns ``(None, f,
        solve_time, status, ok)`` (``tau`` follows in :meth:`_statics`)."""
        t0 = time.perf_counter()
        try:
            model = prob.daqp_model
            if model is None:
                model, flag = self._daqp_setup(prob.H, prob.cq, prob.Aq, prob.bu, prob.bl,
                                               prob.sense)
                prob.daqp_model = model
            else:
                flag = model.update(H=prob.H, f=prob.cq, A=prob.Aq, bupper=prob.bu,
                                    sense=prob.sense)
            if flag < 0:       # the update was refused: solving would return the last answer
                exitflag = flag
            else:
                x, _, exitflag, _ = model.solve()
        except Exception as exc:  # noqa: BLE001  a solver may raise on a degenerate problem
            prob.daqp_model = None
            return (np.full(self.n, np.nan), np.full(prob.m, np.nan), time.perf_counter() - t0,
                    f"failed: daqp raised {type(exc).__name__}: {exc}", False)
        dt = time.perf_counter() - t0
        if exitflag <= 0 or not (math.isfinite(x.dot(x)) or np.isfinite(x).all()):
            prob.daqp_model = None          # set up afresh next time
            return (np.full(self.n, np.nan), np.full(prob.m, np.nan), dt,
                    "infeasible or failed: daqp found no solution", False)
        return None, x, dt, "solved", True

    def _check(self, prob: _SupportProblem, tau, f) -> list[str]:
        """Reasons (empty if none) why ``(tau, f)`` (``f``: sole-frame forces) is not physically
        possible: unilaterality, Coulomb's cone, CoP in the sole (wrench model), torque limits
        (if enabled)."""
        tol, mu = self.feasibility_tol, self.mu
        w_loc = prob.sole_forces(f)
        force_loc = w_loc[:, :3]
        fn = force_loc[:, 2]
        ft = np.hypot(force_loc[:, 0], force_loc[:, 1])
        bad_n = fn < self.f_min - tol
        bad_t = (ft > mu * fn + tol) & ~bad_n          # friction is moot where the contact pulls
        if prob.dim == 6:
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

    @staticmethod
    def _forces(prob, f) -> dict[str, np.ndarray]:
        """Contact name -> read-only row of ``f`` (``(3,)`` or ``(6,)``); ``f`` is a fresh array
        (the solver's ``x`` or computed), never one of the reused buffers."""
        if prob is None or f is None:
            return {}
        fc = np.asarray(f, dtype=float).reshape(prob.nc, prob.dim)
        fc.flags.writeable = False
        return dict(zip(prob.names, fc))

    def _result(self, tau, f, prob, residual, active, solver, status, solve_time, feasible,
                possible, reasons, method, feet, t_start) -> StaticsResult:
        # tau is a fresh array, never one of the reused buffers
        tau = np.asarray(tau, dtype=float)
        tau.flags.writeable = False
        return StaticsResult(
            tau=dict(zip(self.joint_names, tau.tolist())), tau_array=tau,
            contact_forces=self._forces(prob, f), residual=float(residual),
            active_constraints=tuple(active), solver=solver, status=status,
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
        holds ``solve_time``, ``compute_time`` (s), ``residual`` (N·m), ``active_constraints``,
        ``solver``, ``method``, ``contact_model``, ``physically_possible``, ``reasons`` (the
        fields of :meth:`solve`'s result, which a feasible step does not build).

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
        pd_tau = self.pd(state.q, state.v)
        if self._fast:
            cmd = self._compute_fast(state, schedule, pd_tau)
            if cmd is not None:
                return cmd
        wanted = schedule.contact_set if self.floating else ()
        t_start = time.perf_counter()
        try:
            q, feet = self._inputs(state.q, wanted)
            out = self._statics(q, feet, self.method)
            error = None
        except (WbsimError, np.linalg.LinAlgError, ValueError) as exc:  # e.g. a non-finite state
            out, error = None, f"error: {type(exc).__name__}: {exc}"
        if out is not None and out[8]:                     # feasible: no StaticsResult needed
            tau, f, prob, residual, active, solver, status, solve_time, _, possible, reasons = out
            info = _statics_info(float(solve_time), time.perf_counter() - t_start, float(residual),
                                 active, solver, self.method if self.floating else "fixed_base",
                                 self.contact_model, possible, reasons)
            tau.flags.writeable = False
            forces = self._forces(prob, f)
            support = prob.support if prob is not None else frozenset()
            self._last = (float(state.t), support, tau, forces)
            return self._command(tau + pd_tau, support, tuple(forces), tuple(forces.values()),
                                 info)
        res = (self._result(*out, self.method, feet, t_start) if out is not None else None)
        # (a floating base here: a fixed base's statics are always feasible)
        status = error if res is None else res.status
        info = (self._info(res) if res is not None
                else {"method": self.method, "solver": self.solver, "error": error,
                      "solve_time": 0.0, "compute_time": time.perf_counter() - t_start})
        try:
            feet = self._support(wanted) if self.floating else ()
        except WbsimError:
            feet = ()
        support = frozenset(feet)
        code = (CommandStatus.INFEASIBLE if str(status).startswith("infeasible")
                else CommandStatus.SOLVER_FAILED)
        failed = {"status": code, "message": str(status)}
        # 1. the last feasible statics, same support, recent
        if self._last is not None:
            t_last, sup_last, tau_last, f_last = self._last
            if sup_last == support and 0.0 <= float(state.t) - t_last <= FALLBACK_HOLD_S:
                names, values = ((tuple(f_last), tuple(f_last.values()))
                                 if isinstance(f_last, dict) else f_last)
                return self._command(tau_last + pd_tau, support, names, values, info,
                                     fallback=FALLBACKS[0], **failed)
        # 2. least torque of the statics equality alone
        if feet and np.isfinite(state.q).all():
            try:
                unc = self._solve(np.asarray(state.q, dtype=float), feet, "min_torque",
                                  time.perf_counter())
            except (WbsimError, np.linalg.LinAlgError, ValueError):
                unc = None
            if (unc is not None and unc.residual <= self.residual_tol
                    and np.all(np.isfinite(unc.tau_array))):
                return self._command(unc.tau_array + pd_tau, support,
                                     tuple(unc.contact_forces),
                                     tuple(unc.contact_forces.values()), info,
                                     fallback=FALLBACKS[1], **failed)
        # 3. joint gravity: no contact forces are known
        g = pin.computeGeneralizedGravity(self.model, self.data, np.asarray(state.q, dtype=float))
        return self._command(g[self.vidx] + pd_tau, support, (), (), info,
                             fallback=FALLBACKS[2], **failed)

    def _command(self, tau: np.ndarray, support: frozenset[str], names: tuple[str, ...],
                 values, info: dict[str, Any], fallback: str = "",
                 status: CommandStatus = CommandStatus.SOLVED, message: str = "") -> Command:
        """The :class:`~wbsim.types.Command` of one step: the forces of ``names`` (contact points
        with ``(3,)`` forces, or feet with ``(6,)`` wrenches, by the contact model) scattered into
        the robot's order; NaN everywhere when a fallback knows no forces."""
        robot = self.robot
        if not robot.has_feet:  # a fixed-base robot: no contacts
            return Command(tau=tau, contact_set=support, status=status, fallback=fallback,
                           message=message, info=info)
        if self.contact_model == "wrench":
            wrenches = scatter_rows(robot.foot_names, names, values, 6, nan=not names and bool(
                fallback))
            return Command(tau=tau, contact_set=support, foot_wrenches=wrenches, status=status,
                           fallback=fallback, message=message, info=info)
        forces = scatter_rows(robot.contact_point_names, names, values, 3,
                              nan=not names and bool(fallback))
        return Command(tau=tau, contact_set=support, point_forces=forces, status=status,
                       fallback=fallback, message=message, info=info)

    def _compute_fast(self, state: RobotState, schedule: ContactSchedule,
                      pd_tau: np.ndarray) -> Command | None:
        """:meth:`compute` in the plain case, in one function, for a support set already solved
        once (``prob.fast``): the same Pinocchio calls and sole-frame unknowns as the general
        path (:meth:`_SupportProblem.fill`), then the QP of :meth:`_SupportProblem._fast_setup`
        (the full QP on the joints the contacts reach; constant diagonal Hessian) by DAQP.
        ``None`` (nothing changed but buffers that every call refills) as soon as anything is
        not plain: an unseen support, an input to check, a solver failure, a bound within
        tolerance (active or violated), a residual too large; the general path then does the
        whole step. ``tests/test_gravity_qp.py`` checks that it returns what :meth:`solve`
        does (to 1e-8 N·m, N)."""
        q, wanted = state.q, schedule.contact_set
        prob = self._fast_probs.get(wanted) if type(wanted) is frozenset else None
        if prob is None:
            prob = self._fast_problem(wanted)
        if (prob is None or type(q) is not np.ndarray
                or (q.dtype is not _F64 and q.dtype != _F64)
                or q.shape != self._qshape or not math.isfinite(q.dot(q))
                or prob.fast_data is not self.data):
            return None
        t_start = time.perf_counter()
        model, data = self.model, self.data
        # one pass for the CoM Jacobian and every joint Jacobian (Pinocchio documents that
        # jacobianCenterOfMass computes the latter as computeJointJacobians does), and
        # g(q) = -M J_com^T g_0 (the generalised gravity is the gradient of -M g_0^T c(q)),
        # written into the QP's upper bounds [0; g_u; g_L] (prob.fast_bu) and g_rest
        np.dot(self._mg, pin.jacobianCenterOfMass(model, data, q, False), out=prob.fast_gq)
        for Wk, rot in prob.fast_rot_pairs:            # R_foot (a view of data.oMi[j].rotation,
            Wk[...] = rot                              # updated) for each of the foot's points
        gfj, local, ids = pin.getFrameJacobian, pin.LOCAL, prob.foot_link_ids
        if len(ids) == 2:
            np.concatenate((gfj(model, data, ids[0], local), gfj(model, data, ids[1], local)),
                           out=prob.J_feet)
        else:
            np.concatenate([gfj(model, data, fid, local) for fid in ids], out=prob.J_feet)
        np.matmul(prob.fast_JfT, prob.fast_TT, out=prob.fast_JT)    # J^T = J_feet^T T^T
        A, bu, sense = prob.fast_A, prob.fast_bu, prob.fast_sense
        t0 = time.perf_counter()
        solver = prob.fast_model
        if solver is None:
            solver, flag = self._daqp_setup(prob.fast_H, prob.fast_c, A, bu, prob.fast_bl, sense)
            if flag < 0:
                return None
            prob.fast_model = solver
        elif solver.update(A=A, bupper=bu, sense=sense) < 0:    # sense: a cold start
            return None
        x, _, exitflag, _ = solver.solve()
        solve_time = time.perf_counter() - t0
        if exitflag <= 0 or not math.isfinite(x.dot(x)):
            return None
        # every inequality strictly inactive (G_f f < -tol; NaN fails) and the statics residual
        # ||[g_u; g_L] - [(J^T)_u f; tau_L + (J^T)_L f]|| within tolerance
        np.dot(A, x, out=prob.fast_y)
        if not _max(prob.fast_y_in) < -_ACTIVE_TOL:
            return None
        r = prob.fast_y_eq
        np.subtract(prob.fast_g, r, out=r)
        residual = math.sqrt(r.dot(r))
        if not residual <= self.residual_tol:
            return None
        m = prob.m
        tau = np.concatenate((x[m:], prob.fast_g_rest))   # the other joints: tau = g
        fw = np.dot(prob.fast_W, x[:m]).reshape(prob.nc, 3)     # world frame
        fw.flags.writeable = False
        names, support = prob.names, prob.support
        self._last = (float(state.t), support, tau, (names, fw))
        info = _statics_info(solve_time, time.perf_counter() - t_start, residual, (), "daqp", "qp",
                             self.contact_model, True, ())
        return self._command(tau + pd_tau, support, names, fw, info)

    def _fast_problem(self, wanted) -> _SupportProblem | None:
        """The support problem of ``wanted`` (a frozenset already seen by the general path)
        if :meth:`_compute_fast` applies to it, remembered per contact set; else ``None``."""
        if type(wanted) is not frozenset:
            return None
        feet = self._support_cache.get(wanted)
        prob = self._problems.get(feet) if feet is not None else None
        if prob is None or not prob.fast:
            return None
        self._fast_probs[wanted] = prob
        return prob

    @staticmethod
    def _info(res: StaticsResult) -> dict[str, Any]:
        return _statics_info(res.solve_time, res.total_time, res.residual, res.active_constraints,
                             res.solver, res.method, res.contact_model, res.physically_possible,
                             res.reasons)
