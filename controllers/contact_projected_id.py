"""Contact-projected inverse dynamics (controller ``"projected_id"``): tasks -> ``qdd_des`` ->
projection onto the contact manifold -> ``qdd*`` -> inverse dynamics for ``tau`` and the forces.

Owns the contact layout and kinematics of a contact set (feet, and hands on a surface of the scene:
``J_c`` stacked over them, ``Jcdot_c v``, the grasp map ``G`` of their points), the dynamically consistent projection (:func:`contact_projection`; seed
"contact-consistent-control", Sections 2-3), the two inverse dynamics (:func:`inverse_dynamics_pinv`;
the QP built by :func:`build_contact_qp` as a ``qpsolvers.Problem``) and :class:`ContactProjectedID`.
Conventions: Jacobians LOCAL_WORLD_ALIGNED; foot wrenches ``[force (N); moment (N·m)]`` at the foot
frame origin, world-aligned; point forces world frame, N; ``tau`` in ``robot.joint_names`` order;
``h`` includes the joints' viscous damping; friction rows from :mod:`~wbsim.controllers.friction`
in each contact's frame (the floor's is the world's; a wall's normal is horizontal). With ``fast=True`` (default) a step runs in
:mod:`~wbsim.controllers._projected_id_fast`. Derivations: docs/controllers.md.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin
import qpsolvers

from wbsim.contacts import convex_hull, point_in_polygon
from wbsim.controllers._projected_id_fast import KernelError, ProjectedIDKernel, TaskSpec
from wbsim.controllers.base import _as_slice, scatter_rows, solve_qp
from wbsim.controllers.friction import (
    FRICTION_MARGIN,
    ContactFriction,
    StepFriction,
    check_friction_option,
    model_friction,
    simulator_friction,
    stacked_cone_rows,
)
from wbsim.controllers.tasks import (
    CentroidalAngularMomentumTask,
    ComTask,
    DynamicsSnapshot,
    FrameOrientationTask,
    FramePositionTask,
    PostureTask,
    Task,
    TaskGains,
    build_task_stack,
    cholesky,
    cholesky_solve,
    compute_snapshot,
    solve_task_stack,
)
from wbsim.errors import UnknownNameError, WbsimError, is_real
from wbsim.types import Command, CommandStatus, ContactSchedule, RobotState

_LWA = pin.LOCAL_WORLD_ALIGNED

__all__ = [
    "PINV_FORCES",
    "REFERENCE_MOMENTUM_GAINS",
    "VARIANTS",
    "ContactKinematics",
    "ContactLayout",
    "ContactProjectedID",
    "ContactProjection",
    "IDResult",
    "ProjectedIDGains",
    "build_contact_layout",
    "build_contact_qp",
    "contact_kinematics",
    "contact_projection",
    "contact_qp_result",
    "distribute_wrench",
    "inverse_dynamics_pinv",
]

#: Inverse-dynamics variants of :class:`ContactProjectedID`.
VARIANTS = ("qp", "pinv")
#: Contact-set sources of :class:`ContactProjectedID`.
CONTACT_SOURCES = ("schedule", "sensed")
#: Task-stack modes: tasks solved in the contact null space, or free then projected.
TASK_SPACES = ("nullspace", "free")
#: QP solvers tried in this order when ``solver=None`` (the first one installed is used).
PREFERRED_SOLVERS = ("daqp", "proxqp", "quadprog", "osqp")
#: What :func:`inverse_dynamics_pinv` takes the least norm of.
PINV_FORCES = ("points", "wrench")


# ------------------------------------------------------------------------------------------------
# contacts
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ContactLayout:
    """The structure of a contact set (rebuilt only when the set changes). A contact is a foot or
    a hand (:attr:`wbsim.Robot.contacts`); "foot" below means either.

    Attributes:
        feet: contacts in the set, in ``robot.contacts`` order (the feet, then the hands).
        frame_ids: Pinocchio frame id of each contact's link.
        point_names: the contact point names of those contacts, 4 per contact.
        points_in_foot: ``(n_feet, 4, 3)`` contact points in their link frame, m.
        friction: ``(5 n_points, 3 n_points)`` and friction_rhs ``(5 n_points,)``: the cone rows
            ``C f <= d`` of the point forces (world-frame forces; each point's cone in the frame
            of its contact's surface, :attr:`wbsim.robot.Contact.surface_rotation`;
            :func:`~wbsim.controllers.friction.stacked_cone_rows`).
        distribution: ``(n_feet, 12, 6)`` least-norm map from a foot wrench to its 4 point forces,
            both in the foot frame (``np.linalg.pinv`` of the grasp map in that frame).
    """

    feet: tuple[str, ...]
    frame_ids: tuple[int, ...]
    point_names: tuple[str, ...]
    points_in_foot: np.ndarray
    friction: np.ndarray
    friction_rhs: np.ndarray
    distribution: np.ndarray

    @functools.cached_property
    def feet_set(self) -> frozenset[str]:
        """The feet in contact, as a set."""
        return frozenset(self.feet)

    @property
    def n_rows(self) -> int:
        """Rows of ``J_c``: 6 per foot."""
        return 6 * len(self.feet)

    @property
    def n_points(self) -> int:
        return len(self.point_names)


def _grasp_foot(rel: np.ndarray) -> np.ndarray:
    """``(6, 3 n)`` grasp map of ``n`` points at offsets ``rel (n, 3)`` from the wrench origin:
    columns ``[I; [r_i]x]``, so that ``G f = [sum f_i; sum r_i x f_i]``."""
    return np.vstack([np.hstack([np.eye(3)] * len(rel)), np.hstack([pin.skew(r) for r in rel])])


def build_contact_layout(
    robot,
    contact_set: Iterable[str],
    friction: ContactFriction | None = None,
    min_normal_force: float | Mapping[str, float] = 0.0,
) -> ContactLayout:
    """:class:`ContactLayout` of ``contact_set`` (contact names: feet and hands), its friction
    rows in each contact's frame (the floor's is the world's) with each contact's ``mu`` and the
    cone type of ``friction`` (default: the robot's MuJoCo model,
    :func:`~wbsim.controllers.friction.model_friction`, times
    :data:`~wbsim.controllers.friction.FRICTION_MARGIN`), each point's normal force at least
    ``min_normal_force`` (N; one value, or one per contact name, 0 for a contact not named).

    Raises:
        UnknownNameError: a name that is not a contact of ``robot``.
    """
    contact_set = frozenset(contact_set)
    for name in contact_set:
        robot.contact(name)  # raises UnknownNameError / NoFeetError
    feet = tuple(f for f in robot.contacts if f in contact_set)
    objs = [robot.contacts[f] for f in feet]
    if friction is None:
        friction = simulator_friction(None, None, feet, model_friction(robot))
    per = [len(f.point_names) for f in objs]
    mu = np.repeat([friction.mu[f] for f in feet], per)
    rot = (
        None
        if all(np.array_equal(f.surface_rotation, np.eye(3)) for f in objs)
        else np.repeat(np.array([f.surface_rotation for f in objs]), per, axis=0)
    )
    C, d = stacked_cone_rows(len(mu), mu, rot, 0.0, friction.cone)
    if isinstance(min_normal_force, Mapping):
        d[0::5] = -np.repeat([float(min_normal_force.get(f, 0.0)) for f in feet], per)
    else:
        d[0::5] = -float(min_normal_force)
    return ContactLayout(
        feet=feet,
        frame_ids=tuple(f.pin_frame_id for f in objs),
        point_names=tuple(n for f in objs for n in f.point_names),
        points_in_foot=(
            np.array([f.points_in_foot for f in objs]) if feet else np.zeros((0, 4, 3))
        ),
        friction=C,
        friction_rhs=d,
        distribution=(
            np.array([np.linalg.pinv(_grasp_foot(f.points_in_foot)) for f in objs])
            if feet
            else np.zeros((0, 12, 6))
        ),
    )


@dataclass
class ContactKinematics:
    """Contact quantities of a layout at one state.

    Attributes:
        Jc: ``(6 n_feet, nv)`` stacked LOCAL_WORLD_ALIGNED foot Jacobians.
        Jc_dot_v: ``(6 n_feet,)`` stacked ``Jcdot v`` (classical foot accelerations at zero
            ``qdd``).
        foot_positions: ``(n_feet, 3)`` foot frame origins, world, m.
        point_positions: ``(n_points, 3)`` sole points, world, m.
        grasp: ``(6 n_feet, 3 n_points)`` block-diagonal map ``G`` from point forces to foot
            wrenches (``[I; [p_i - o]x]`` per point).
        foot_rotations: ``(n_feet, 3, 3)`` foot frame orientations (frame to world).
    """

    Jc: np.ndarray
    Jc_dot_v: np.ndarray
    foot_positions: np.ndarray
    point_positions: np.ndarray
    grasp: np.ndarray
    foot_rotations: np.ndarray


def contact_kinematics(s: DynamicsSnapshot, layout: ContactLayout) -> ContactKinematics:
    """Contact Jacobian, drift, sole points and grasp map of ``layout`` at snapshot ``s``
    (:meth:`~wbsim.controllers.tasks.DynamicsSnapshot.frame` of each foot; the sole points are
    ``o + R p^foot``)."""
    nf = len(layout.feet)
    frames = [s.frame(f) for f in layout.frame_ids]
    Jc = np.vstack([fk.jacobian for fk in frames]) if nf else np.zeros((0, s.nv))
    Jc_dot_v = np.concatenate([fk.drift for fk in frames]) if nf else np.zeros(0)
    pos = np.array([fk.position for fk in frames]).reshape(nf, 3)
    rot = np.array([fk.rotation for fk in frames]).reshape(nf, 3, 3)
    rel = np.matmul(layout.points_in_foot, rot.transpose(0, 2, 1))  # (nf, 4, 3) world axes
    G = np.zeros((6 * nf, 12 * nf))
    for k in range(nf):
        G[6 * k : 6 * k + 6, 12 * k : 12 * k + 12] = _grasp_foot(rel[k])
    return ContactKinematics(Jc, Jc_dot_v, pos, (rel + pos[:, None, :]).reshape(-1, 3), G, rot)


# ------------------------------------------------------------------------------------------------
# projection
# ------------------------------------------------------------------------------------------------
@dataclass
class ContactProjection:
    """The dynamically consistent contact projection at one state.

    Attributes:
        Jc: ``(nc, nv)``; Jc_dot_v: ``(nc,)``.
        Jc_pinv: ``(nv, nc)`` ``J_c^#W = W^-1 J_c^T (J_c W^-1 J_c^T)^-1``.
        Nc: ``(nv, nv)`` ``I - J_c^#W J_c``.
        particular: ``(nv,)`` ``-J_c^#W Jcdot_c v`` (the contact-consistent acceleration closest
            to 0 in the metric ``W``).
    """

    Jc: np.ndarray
    Jc_dot_v: np.ndarray
    Jc_pinv: np.ndarray
    Nc: np.ndarray
    particular: np.ndarray

    def project(self, qdd_des: np.ndarray) -> np.ndarray:
        """``qdd* = N_c qdd_des - J_c^#W Jcdot_c v`` (``(nv,)``, seed Section 3)."""
        return self.Nc @ qdd_des + self.particular


_JWJ = "J_c W^-1 J_c^T (contact Jacobian rank-deficient?)"


def contact_projection(
    Jc: np.ndarray,
    Jc_dot_v: np.ndarray,
    W: np.ndarray | None = None,
    W_cholesky: np.ndarray | None = None,
) -> ContactProjection:
    """:class:`ContactProjection` for the contact Jacobian ``Jc (nc, nv)`` (full row rank) with
    drift ``Jc_dot_v (nc,)`` and the SPD weight ``W (nv, nv)``, or its lower Cholesky factor
    ``W_cholesky`` (:func:`~wbsim.controllers.tasks.cholesky`). Two Cholesky solves, no explicit
    inverse; ``nc = 0`` gives ``N_c = I``.

    Raises:
        WbsimError: ``W`` not SPD, ``J_c`` rank-deficient (``J_c W^-1 J_c^T`` not SPD), or neither
            ``W`` nor ``W_cholesky`` given.
    """
    if W_cholesky is None:
        if W is None:
            raise WbsimError("contact_projection needs W or W_cholesky")
        W_cholesky = cholesky(np.asarray(W, dtype=float), "W")
    nc, nv = Jc.shape
    if nc == 0:
        return ContactProjection(Jc, Jc_dot_v, np.zeros((nv, 0)), np.eye(nv), np.zeros(nv))
    Winv_JcT = cholesky_solve(W_cholesky, Jc.T)  # W^-1 J_c^T
    JWJ = Jc @ Winv_JcT
    Jc_pinv = cholesky_solve(cholesky(JWJ, _JWJ), Winv_JcT.T).T  # (nv, nc)
    return ContactProjection(
        Jc, Jc_dot_v, Jc_pinv, np.eye(nv) - Jc_pinv @ Jc, -(Jc_pinv @ Jc_dot_v)
    )


# ------------------------------------------------------------------------------------------------
# inverse dynamics
# ------------------------------------------------------------------------------------------------
@dataclass
class IDResult:
    """An inverse-dynamics solution.

    Attributes:
        found: whether the (variant's) problem had a solution.
        qdd: ``(nv,)`` acceleration the torques realise (``qdd*``, or the relaxed one).
        tau: ``(n_joints,)`` N·m, ``robot.joint_names`` order.
        lam: ``(6 n_feet,)`` foot wrenches ``[force N, moment N·m]`` at the foot frame origins,
            world-aligned (the multiplier of ``J_c``).
        point_forces: ``(n_points, 3)`` forces at the sole points, world frame, N.
        status: solver or variant status text.
        relaxed: ``True`` when ``qdd`` differs from ``qdd*`` (relaxed QP).
        solve_time: seconds spent in the solver / least squares.
    """

    found: bool
    qdd: np.ndarray
    tau: np.ndarray
    lam: np.ndarray
    point_forces: np.ndarray
    status: str = "ok"
    relaxed: bool = False
    solve_time: float = 0.0


def _unactuated(nv: int, actuated_v: np.ndarray | slice) -> np.ndarray | slice:
    """The unactuated rows of ``v`` (a slice when they are contiguous, as for a free-flyer root)."""
    mask = np.ones(nv, dtype=bool)
    mask[actuated_v] = False
    return _as_slice(np.flatnonzero(mask))


def distribute_wrench(
    wrench: np.ndarray, rotation: np.ndarray, distribution: np.ndarray
) -> np.ndarray:
    """Least-norm point forces ``(4, 3)`` (world frame, N) of one foot with ``G f = wrench``.

    Args:
        wrench: ``(6,)`` ``[force N, moment N·m]`` at the foot frame origin, world-aligned.
        rotation: ``(3, 3)`` foot frame orientation (frame to world).
        distribution: ``(12, 6)`` ``pinv(G_local)`` of the foot (:attr:`ContactLayout.distribution`).

    Norms are rotation invariant, so the least-norm solution in the foot frame, rotated to the
    world, is the least-norm solution of the world-frame ``G f = wrench``.
    """
    local = np.concatenate([rotation.T @ wrench[0:3], rotation.T @ wrench[3:6]])
    return (distribution @ local).reshape(4, 3) @ rotation.T


def _least_norm(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least-norm ``x`` of ``A (6, k) x = b``: ``A^T (A A^T)^-1 b`` by Cholesky when ``A`` has full
    row rank, else ``np.linalg.lstsq``."""
    try:
        return A.T @ cholesky_solve(cholesky(A @ A.T, "A A^T"), b)
    except WbsimError:
        return np.linalg.lstsq(A, b, rcond=None)[0]


def inverse_dynamics_pinv(
    M: np.ndarray,
    h: np.ndarray,
    qdd: np.ndarray,
    Jc: np.ndarray,
    actuated_v: np.ndarray | slice,
    grasp: np.ndarray | None = None,
    point_report: tuple[np.ndarray, np.ndarray] | None = None,
    forces: str = "points",
    residual_tol: float = 1e-6,
) -> IDResult:
    """``tau, lambda`` from ``M qdd + h = S^T tau + J_c^T lambda`` with least-norm contact forces.

    The unactuated (floating-base) rows fix the contact forces up to their null space; the least-norm
    solution is taken of

    * ``forces="points"`` (needs ``grasp``): the sole-point forces ``f``,
      ``(J_c^T G)_u f = (M qdd + h)_u``, ``lambda = G f``. Forces spread over the points of both feet
      like a linear pressure distribution, so in double support the foot nearer the CoM carries more;
    * ``forces="wrench"``: the foot wrenches themselves, ``J_c,u^T lambda = (M qdd + h)_u`` (N and
      N·m mixed in one norm, as in the seed); each wrench is then spread over its 4 points by
      :func:`distribute_wrench` for the report (needs ``point_report``). In double support the two
      feet get equal shares of the weight wherever the CoM is, balanced by large foot torques.

    Then ``tau = (M qdd + h - J_c^T lambda)_a``. No inequality: a foot may be commanded to pull.

    Args:
        M: ``(nv, nv)``; h: ``(nv,)``; qdd: ``(nv,)``; Jc: ``(nc, nv)`` (6 rows per foot,
            LOCAL_WORLD_ALIGNED).
        actuated_v: ``(n_joints,)`` indices of the actuated joints in ``v`` (the other rows are the
            unactuated floating-base rows).
        grasp: ``(nc, 2 nc)`` block-diagonal grasp map ``G`` (:class:`ContactKinematics`).
        point_report: ``(foot_rotations (n_feet, 3, 3), distribution (n_feet, 12, 6))``.
        forces: ``"points"`` or ``"wrench"`` (see above).
        residual_tol: relative tolerance on the unactuated rows; above it ``found`` is ``False``
            (e.g. no contact while the base needs support).

    Raises:
        UnknownNameError: unknown ``forces``. WbsimError: the input ``forces`` needs is missing.
    """
    if forces not in PINV_FORCES:
        raise UnknownNameError("pinv force model", forces, PINV_FORCES)
    t0 = time.perf_counter()
    nv = M.shape[0]
    unact = _unactuated(nv, actuated_v)
    b = M @ qdd + h
    nf = Jc.shape[0] // 6
    pf = np.zeros((4 * nf, 3))
    if Jc.shape[0] == 0:
        lam, gen = np.zeros(0), b
    elif forces == "points":
        if grasp is None:
            raise WbsimError("inverse_dynamics_pinv(forces='points') needs the grasp map")
        A = Jc.T @ grasp
        f = _least_norm(A[unact], b[unact])
        lam = grasp @ f
        gen = b - A @ f
        pf = f.reshape(-1, 3)
    else:
        if point_report is None:
            raise WbsimError("inverse_dynamics_pinv(forces='wrench') needs point_report")
        lam = _least_norm(Jc[:, unact].T, b[unact])
        gen = b - Jc.T @ lam
        rotations, distribution = point_report
        for k in range(nf):
            pf[4 * k : 4 * k + 4] = distribute_wrench(
                lam[6 * k : 6 * k + 6], rotations[k], distribution[k]
            )
    r = gen[unact]
    residual = float(np.sqrt(r @ r))
    found = residual <= residual_tol * (1.0 + float(np.sqrt(b @ b)))
    tau = gen[actuated_v]
    status = "ok" if found else f"unactuated rows unbalanced (residual {residual:.3g})"
    return IDResult(
        found,
        np.asarray(qdd, dtype=float).copy(),
        tau,
        lam,
        pf,
        status,
        False,
        time.perf_counter() - t0,
    )


def build_contact_qp(
    M: np.ndarray,
    h: np.ndarray,
    qdd_star: np.ndarray,
    Jc: np.ndarray,
    Jc_dot_v: np.ndarray,
    grasp: np.ndarray,
    friction: np.ndarray,
    friction_rhs: np.ndarray,
    actuated_v: np.ndarray | slice,
    tau_limit: np.ndarray,
    force_weight: float = 1e-5,
    relax_weight: float | None = None,
    W: np.ndarray | None = None,
    force_limits: tuple[np.ndarray, np.ndarray] | None = None,
    force_reference: np.ndarray | None = None,
) -> qpsolvers.Problem:
    """The inverse-dynamics QP of the ``"qp"`` variant (pure function; docs/controllers.md,
    "The contact QP"). ``A_f = J_c^T G`` is the generalised force of the point forces ``f``,
    ``a`` / ``u`` the actuated / unactuated rows.

    Exact problem (``relax_weight=None``), unknowns ``x = f (3 n_points,)``::

        min ||tau||^2 + eps ||f - f_ref||^2,   tau = (M qdd* + h - A_f f)_a
        s.t. (A_f f)_u = (M qdd* + h)_u,   C f <= d,   |tau| <= tau_limit,   G_f f <= h_f

    Relaxed problem (``relax_weight = w > 0``), unknowns ``x = [qdd (nv,), f]``::

        min w (qdd - qdd*)^T W (qdd - qdd*) + ||tau||^2 + eps ||f - f_ref||^2,
            tau = (M qdd + h - A_f f)_a
        s.t. (M qdd + h - A_f f)_u = 0,   J_c qdd + Jcdot_c v = 0,   C f <= d,   |tau| <= tau_limit

    (the QP's objective ``1/2 x^T P x + q^T x`` is half the cost, up to a constant.)

    Args:
        M: ``(nv, nv)``; h: ``(nv,)`` (joint damping included); qdd_star: ``(nv,)``;
            Jc: ``(6 n_feet, nv)``; Jc_dot_v: ``(6 n_feet,)``; grasp: ``(6 n_feet, 3 n_points)``
            (:class:`ContactKinematics`).
        friction, friction_rhs: ``C``, ``d`` (:attr:`ContactLayout.friction`).
        actuated_v: the actuated rows of ``v`` (``robot.joint_names`` order).
        tau_limit: ``(n_joints,)`` N·m (``inf`` = none); force_weight: ``eps``.
        W: SPD ``(nv, nv)`` weight of the relaxation (default ``M``).
        force_limits: optional extra rows ``(G_f (k, 3 n_points), h_f (k,))`` on the point forces
            (e.g. a cap on the load of a foot being unloaded).
        force_reference: ``f_ref (3 n_points,)`` feed-forward point forces, world frame, N
            (``None``: 0).

    Returns:
        The ``qpsolvers.Problem``; read its solution with :func:`contact_qp_result`.
    """
    nv = M.shape[0]
    unact = _unactuated(nv, actuated_v)
    A_f = Jc.T @ grasp
    Aa, Au = A_f[actuated_v], A_f[unact]
    npf = A_f.shape[1]
    lim = np.isfinite(tau_limit)
    if relax_weight is None:
        b = M @ qdd_star + h
        ba, bu = b[actuated_v], b[unact]
        P = Aa.T @ Aa + force_weight * np.eye(npf)
        q = -(Aa.T @ ba)
        if force_reference is not None:
            q -= force_weight * np.asarray(force_reference, dtype=float)
        # tau <= lim: -Aa f <= lim - ba; -tau <= lim: Aa f <= lim + ba
        Gs = [friction, -Aa[lim], Aa[lim]]
        hs = [friction_rhs, (tau_limit - ba)[lim], (tau_limit + ba)[lim]]
        if force_limits is not None:
            Gs.append(force_limits[0])
            hs.append(force_limits[1])
        return qpsolvers.Problem(P, q, np.vstack(Gs), np.concatenate(hs), Au, bu)
    Wd = M if W is None else W
    ha, hu = h[actuated_v], h[unact]
    Ct = np.hstack([M[actuated_v], -Aa])  # tau = Ct x + ha
    P = Ct.T @ Ct
    P[:nv, :nv] += relax_weight * Wd
    P[nv:, nv:] += force_weight * np.eye(npf)
    q = Ct.T @ ha
    q[:nv] -= relax_weight * (Wd @ qdd_star)
    if force_reference is not None:
        q[nv:] -= force_weight * np.asarray(force_reference, dtype=float)
    A = np.vstack([np.hstack([M[unact], -Au]), np.hstack([Jc, np.zeros((Jc.shape[0], npf))])])
    b = np.concatenate([-hu, -Jc_dot_v])
    on_f = [np.hstack([np.zeros((friction.shape[0], nv)), friction])]
    hs = [friction_rhs]
    on_f += [Ct[lim], -Ct[lim]]  # tau <= lim, -tau <= lim
    hs += [(tau_limit - ha)[lim], (tau_limit + ha)[lim]]
    if force_limits is not None:
        on_f.append(np.hstack([np.zeros((force_limits[0].shape[0], nv)), force_limits[0]]))
        hs.append(force_limits[1])
    return qpsolvers.Problem(P, q, np.vstack(on_f), np.concatenate(hs), A, b)


def contact_qp_result(
    x: np.ndarray | None,
    M: np.ndarray,
    h: np.ndarray,
    qdd_star: np.ndarray,
    Jc: np.ndarray,
    grasp: np.ndarray,
    actuated_v: np.ndarray | slice,
    relaxed: bool,
    status: str = "ok",
    solve_time: float = 0.0,
) -> IDResult:
    """The :class:`IDResult` of a solution ``x`` of :func:`build_contact_qp` (``None``: no
    solution; then ``found=False``, NaN torques and forces): ``f``, ``qdd`` (``qdd*`` or the
    relaxed one), ``tau = (M qdd + h - J_c^T G f)_a``, ``lambda = G f``."""
    nv, n_tau = M.shape[0], len(np.arange(M.shape[0])[actuated_v])
    if x is None:
        return IDResult(
            False,
            np.array(qdd_star, dtype=float),
            np.full(n_tau, np.nan),
            np.full(grasp.shape[0], np.nan),
            np.full((grasp.shape[1] // 3, 3), np.nan),
            status,
            relaxed,
            solve_time,
        )
    f = x[nv:] if relaxed else x
    qdd = x[:nv].copy() if relaxed else np.array(qdd_star, dtype=float)
    tau = (M @ qdd + h - Jc.T @ (grasp @ f))[actuated_v]
    return IDResult(True, qdd, tau, grasp @ f, f.reshape(-1, 3).copy(), status, relaxed, solve_time)


def _solve_contact_qp(
    problem: qpsolvers.Problem, solver: str, args: tuple[Any, ...], relaxed: bool
) -> IDResult:
    """Solve a built contact QP (:func:`~wbsim.controllers.base.solve_qp`) and read it."""
    sol = solve_qp(problem, solver)
    if sol.x is None:
        status = (
            f"{solver} error: {sol.error}"
            if sol.error is not None
            else f"{solver}: no solution (infeasible)"
        )
    else:
        status = "ok"
    M, h, qdd_star, Jc, grasp, actuated_v = args
    return contact_qp_result(
        sol.x, M, h, qdd_star, Jc, grasp, actuated_v, relaxed, status, sol.seconds
    )


# ------------------------------------------------------------------------------------------------
# the controller
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProjectedIDGains:
    """Gains and weights of the tasks of :class:`ContactProjectedID` (each a :class:`TaskGains`:
    natural frequency Hz, damping ratio, weight). Build from a mapping with :meth:`from_value`
    (unknown keys raise :class:`WbsimError`)."""

    com: TaskGains = field(default_factory=lambda: TaskGains(2.0, 1.0, 100.0))
    base_orientation: TaskGains = field(default_factory=lambda: TaskGains(2.0, 1.0, 10.0))
    #: the torso link's (``robot.config.torso``) orientation, kept at its reset orientation
    #: relative to the base's target; weight 0, or a robot whose torso is the base: no task.
    torso_orientation: TaskGains = field(default_factory=lambda: TaskGains(2.0, 1.0, 10.0))
    swing_foot_position: TaskGains = field(default_factory=lambda: TaskGains(3.0, 1.0, 100.0))
    swing_foot_orientation: TaskGains = field(default_factory=lambda: TaskGains(3.0, 1.0, 10.0))
    posture: TaskGains = field(default_factory=lambda: TaskGains(2.0, 1.0, 0.01))
    #: the centroidal angular momentum ``L`` (:class:`CentroidalAngularMomentumTask`; first
    #: order, ``L'_des = L'_ref + kd (L_ref - L)``, ``kd = 4 pi zeta f``). ``None`` (default):
    #: the task joins the stack, with :data:`REFERENCE_MOMENTUM_GAINS`, from the first step whose
    #: reference gives ``"angular_momentum"`` (the walking pattern generator's: 0, the LIPM's)
    #: until the next reset; a reference without it (standing) leaves ``L`` to the other tasks.
    #: Given: the task is in the stack at every step (``L_ref`` 0 until a reference gives it),
    #: or never with weight 0.
    angular_momentum: TaskGains | None = None

    @classmethod
    def from_value(cls, value: ProjectedIDGains | Mapping[str, Any] | None) -> ProjectedIDGains:
        if value is None:
            return cls()
        if isinstance(value, ProjectedIDGains):
            return value
        if not isinstance(value, Mapping):  # e.g. text that was not JSON: -c 'gains={com: 2}'
            raise WbsimError(
                f"ProjectedIDGains: expected a mapping task -> [frequency_hz, damping_ratio, "
                f"weight], got {type(value).__name__} {value!r} (on the command line a JSON "
                """object: -c 'gains={"com": [2, 1, 100]}')"""
            )
        known = {f.name for f in fields(cls)}
        unknown = set(value) - known
        if unknown:
            raise WbsimError(
                f"ProjectedIDGains: unknown keys {sorted(unknown)}; known: {sorted(known)}"
            )
        return cls(**{k: TaskGains.from_value(v) for k, v in value.items()})


#: The angular-momentum task's gains when a reference asks for it and ``gains`` leaves
#: ``angular_momentum`` unset: 2 Hz, critically damped, weight 0.3. Measured on ``G1Walk-v0``
#: (docs/locomotion.md): it removes the mid-step slides of the stance sole; weight 3 at 2 Hz and
#: weight 10 at 4 Hz fell.
REFERENCE_MOMENTUM_GAINS = TaskGains(2.0, 1.0, 0.3)


_ZERO3 = np.zeros(3)
_ZERO3.setflags(write=False)  # shared "no feed-forward" value: never written to
_BUILT_KEPT = 8  # contact layouts and kernels a controller keeps (ContactProjectedID._built)


def _target3(value: Any, key: str) -> np.ndarray:
    try:
        arr = np.array(value, dtype=float)  # a copy
    except (TypeError, ValueError):
        arr = None
    # math.isfinite on 3 floats: a few times cheaper than np.isfinite + all (runs every step)
    if arr is None or arr.shape != (3,) or not all(map(math.isfinite, arr.tolist())):
        raise WbsimError(f"schedule target {key!r} must be a finite (3,) array, got {value!r}")
    return arr


def _rotation(value: Any, key: str) -> np.ndarray:
    """A schedule's ``(3, 3)`` rotation target, checked (finite, orthonormal to 1e-6, det > 0)."""
    try:
        R = np.array(value, dtype=float)
    except (TypeError, ValueError):
        R = None
    if (
        R is None
        or R.shape != (3, 3)
        or not np.all(np.isfinite(R))
        or (np.abs(R.T @ R - np.eye(3)).max() > 1e-6)
        or np.linalg.det(R) <= 0
    ):
        raise WbsimError(f"schedule target {key!r} must be a (3, 3) rotation matrix, got {value!r}")
    return R


def _level_rotation(R: np.ndarray) -> np.ndarray:
    """The yaw-only rotation with the heading of ``R`` (a level sole)."""
    yaw = np.arctan2(R[1, 0], R[0, 0])
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


class ContactProjectedID:
    """Contact-projected inverse-dynamics controller (``"projected_id"``).

    Each step: one Pinocchio pass (:func:`~wbsim.controllers.tasks.compute_snapshot`); the contact
    Jacobian of the feet in contact; the projection ``N_c``, ``J_c^#W``; the task stack (CoM, base
    orientation, torso orientation, centroidal angular momentum (see
    :attr:`ProjectedIDGains.angular_momentum`), swing-foot position and level orientation, posture) ->
    ``qdd_des``;
    ``qdd* = N_c qdd_des - J_c^#W Jcdot_c v``; inverse dynamics (``variant``) -> ``tau`` and forces.

    Args:
        robot: a :class:`wbsim.Robot` with feet.
        variant: ``"qp"`` (unilateral, friction, torque limits) or ``"pinv"`` (least-norm forces, no
            inequality).
        W: projection weight: ``None`` or ``"M"`` (mass matrix, dynamically consistent), ``"identity"``,
            or an SPD ``(nv, nv)`` array.
        contact_source: ``"schedule"`` (``schedule.contact_set``; see ``early_touchdown``) or
            ``"sensed"`` (``state.sensed_contacts``; a state without them raises
            :class:`WbsimError`).
        early_touchdown: s. With ``contact_source="schedule"``: a foot planned to land at the end of
            the phase (in ``schedule.next_contact_set``) that the state senses in contact within
            this time of the planned landing is taken into the contact set at once, as a real
            stack's touch-down detection does (a foot that lands early is not lifted off again:
            it stays in contact, pressed lightly, ``4 transition_force``, until the planned
            switch, then takes load as a planned touch-down does). 0: the schedule alone.
        mu: ``None`` (default): the simulator's friction coefficient, foot by foot
            (``RobotState.friction``, or the robot's MuJoCo model for a state without it), times
            ``friction_margin``; a number: a lower cap on it (``"qp"``; at most ``friction_margin``
            times the model's). The rows linearise the simulator's cone
            (:func:`~wbsim.controllers.friction.simulator_friction`).
        friction_margin: the fraction (0 < margin <= 1) of the simulator's ``mu`` used.
        solver: qpsolvers solver name; ``None`` picks the first installed of
            :data:`PREFERRED_SOLVERS`.
        gains: :class:`ProjectedIDGains` or a mapping of its fields.
        force_weight: ``eps`` of the ``eps ||f||^2`` term (N·m)² / N². Set it to the
            gravity-compensation QP's ``eps`` to get its solution in static double support. The
            default 1.0 is far larger than that QP's 1e-5 on purpose. With a small ``eps`` the
            least-torque optimum, as soon as the CoM leaves the middle, puts each foot's centre of
            pressure on a sole edge (zero force on the other edge's points) and uses friction up to
            the pyramid to push the feet apart; in MuJoCo the unloaded edge then lifts (the foot
            rolls), the stance foot rocks after lift-off and the lateral forces make the soft
            contacts creep. On the G1 one-leg scenario with 1e-2: 2.8 s of infeasible exact QP,
            ~190 complementarity and ~250 slip events; with 1.0: none. In quiet standing the torques
            differ from the least-torque ones by < 0.2 N·m.
        relax_weight: weight of ``(qdd - qdd*)^T W (qdd - qdd*)`` in the relaxed QP (against
            ``||tau||^2``).
        min_normal_force: lower bound of each point's normal force, N (``"qp"``; a foot released by
            a planned lift goes below it, to 0, at the switch).
        torque_limits: ``(n_joints,)`` N·m; default ``robot.effort_limits``.
        task_space: ``"nullspace"`` (tasks solved among contact-consistent accelerations, then
            projected; the projection is then the identity up to rounding) or ``"free"`` (tasks solved
            freely, then projected: the seed's literal pipeline).
        regularization: Tikhonov term of the task stack.
        check_targets: clamp out-of-reach targets (CoM outside the support polygon shrunk by
            ``com_margin`` m, unless the schedule gives a ``"com_acceleration"``: a dynamic
            reference's CoM leaves the support by design, its ZMP is the planner's to keep inside;
            swing-foot target beyond the leg's length) and report them.
        base_frame: Pinocchio frame of the base orientation task (default: the body frame of the root
            joint, ``"pelvis"`` on the G1).
        pinv_forces: ``"points"`` (least-norm sole-point forces) or ``"wrench"`` (least-norm foot
            wrenches, the seed's form) for the ``"pinv"`` variant; see :func:`inverse_dynamics_pinv`.
        transition_time: s, the load ramps of the contact transitions (:meth:`_force_bounds`; 0:
            none); in a phase shorter than ``2 transition_time`` (a walking gait's double
            support) half the phase's duration.
        transition_force: N per sole point, the load a transitioning foot keeps (4 N: 8x the 0.5 N
            at which :class:`wbsim.contacts.SensingThresholds` counts a point as loaded; with 2 N
            the lightly pressed foot slipped at the G1's touch-down). Each point of a hand in
            contact keeps it too (at least ``min_normal_force``): nothing else loads a hand
            when the statics do not need it, and an unloaded hand's contact opens (G1HandWall's
            hand came off the wall for 0.86 s while the CoM moved away from it).
        release_time: s, the final release of a lifting foot's last ``4 transition_force`` N. The
            sensed lift-off (every point below 0.5 N) comes ``release_time * 0.5 /
            transition_force`` before the planned switch: 2.5 ms with the defaults.
        joint_damping: viscous joint damping ``D`` (N·m·s/rad, scalar or ``(n_joints,)``) that the
            inverse dynamics compensates (``tau`` gains ``D qdot``). ``"model"`` (default): the
            robot's own, ``robot.config.dynamics_of(joint).damping`` (what the MuJoCo model gets;
            Pinocchio's ``model.damping`` if the robot has no config). The G1's 0.5 N·m·s/rad,
            left uncompensated, lags the swing foot ~1.5 mm and pitches it ~0.02 rad while it moves,
            enough to land it heel first and bounce it. 0 turns it off.
        fast: run each step in :class:`~wbsim.controllers._projected_id_fast.ProjectedIDKernel`
            (the readable path's quantities on preallocated arrays, DAQP called directly for the
            exact QP when ``solver`` is DAQP); ``False``: the readable path (snapshot, the tasks'
            rows, ``build_task_stack``, :func:`contact_projection`, :func:`build_contact_qp`
            through qpsolvers). Decided here, once.
        force_feedforward: use the schedule's ``"<foot>_wrench"`` targets as the reference of the
            QP's force term, ``eps ||f - f_ref||^2`` (``f_ref``: each wrench spread over its sole
            points by :func:`distribute_wrench`); ``False``: ``eps ||f||^2``.

    Targets (``schedule.targets``, world frame; the keys of :data:`wbsim.reference.TARGET_KEYS`):
    ``"com"`` ``(3,)`` CoM (m), ``"com_velocity"`` (m/s), ``"com_acceleration"`` (m/s^2, feed-forward
    of the PD law); ``"base_orientation"`` ``(3, 3)``; ``"left_foot"`` / ``"right_foot"`` (or
    ``"swing_foot"`` when one foot swings) ``(3,)`` position of the foot link frame (m) of a swing
    foot, with optional ``"<foot>_velocity"``, ``"<foot>_acceleration"``, ``"<foot>_orientation"``
    ``(3, 3)`` (else the swing sole is kept level with its heading at lift-off); ``"posture"``
    ``(n_joints,)`` rad in ``robot.joint_names`` order; ``"<foot>_wrench"`` ``(6,)`` feed-forward
    ``[force; moment]`` at the foot frame origin of a foot in contact (``force_feedforward``);
    ``"angular_momentum"`` ``(3,)`` ``L_ref`` (N·m·s, about the CoM, world axes) and
    ``"angular_momentum_rate"`` ``(3,)`` ``L'_ref`` (N·m) of the angular-momentum task (initially
    0; with ``gains.angular_momentum`` unset, the first step that gives them adds the task). An
    absent target holds the last one given: initially the values stored by :meth:`reset` (CoM, base
    orientation, posture); a foot that leaves contact holds its placement at lift-off; an absent
    velocity or acceleration is 0 when its position is given.

    Safe commands (``Command.fallback``), tried in this order when the problem has no solution:

    * ``"clamped_target"``: a target was out of reach; the command is computed for the clamped target.
    * ``"relaxed_qp"`` (qp): the exact QP (``qdd = qdd*``) is infeasible; least deviation from ``qdd*``.
    * ``"clipped"`` (pinv): the torques exceed the limits; they are clipped.
    * ``"gravity_pinv"``: the static problem (``qdd = 0, v = 0``) by the pinv variant on the current
      contact set, torques clipped to the limits.
    * ``"last_feasible"`` (no contact at all): the last feasible torques, or ``"joint_gravity"``
      (``tau = g_a``) if there are none.

    ``Command.info``: ``qdd_des``, ``qdd_star``, ``qdd`` (realised by ``tau``), ``lambda`` (foot
    wrenches), ``tau_id`` (inverse-dynamics torques before any clipping, joint damping compensation
    included: ``M qdd + h + S^T D qdot = S^T tau_id + J_c^T lambda``), ``solve_time``,
    ``compute_time`` (s), ``task_errors`` (name -> norm), ``event`` (when not ok), ``mode_switch``
    (``{"from": [...], "to": [...]}`` when the contact set changed), ``pulling`` (pinv).

    After :meth:`compute`, :attr:`projection` (:class:`ContactProjection`) and :attr:`contact`
    (:class:`ContactKinematics`) hold this step's ``J_c``, ``N_c``, ... (for logging and tests).
    """

    name = "projected_id"

    def __init__(
        self,
        robot,
        variant: str = "qp",
        W: np.ndarray | str | None = None,
        contact_source: str = "schedule",
        mu: float | None = None,
        friction_margin: float = FRICTION_MARGIN,
        solver: str | None = None,
        gains: ProjectedIDGains | Mapping[str, Any] | None = None,
        force_weight: float = 1.0,
        relax_weight: float = 1e5,
        min_normal_force: float = 0.0,
        torque_limits: np.ndarray | None = None,
        task_space: str = "nullspace",
        regularization: float = 1e-6,
        check_targets: bool = True,
        com_margin: float = 0.01,
        base_frame: str | None = None,
        pinv_forces: str = "points",
        transition_time: float = 0.3,
        transition_force: float = 4.0,
        release_time: float = 0.02,
        joint_damping: float | np.ndarray | str = "model",
        fast: bool = True,
        force_feedforward: bool = True,
        early_touchdown: float = 0.04,
    ):
        if variant not in VARIANTS:
            raise UnknownNameError("variant", variant, VARIANTS)
        if contact_source not in CONTACT_SOURCES:
            raise UnknownNameError("contact source", contact_source, CONTACT_SOURCES)
        if task_space not in TASK_SPACES:
            raise UnknownNameError("task space", task_space, TASK_SPACES)
        if pinv_forces not in PINV_FORCES:
            raise UnknownNameError("pinv force model", pinv_forces, PINV_FORCES)
        mu_value = 1.0 if mu is None else mu
        for name, value in (
            ("mu", mu_value),
            ("force_weight", force_weight),
            ("relax_weight", relax_weight),
            ("regularization", regularization),
            ("transition_time", transition_time),
            ("transition_force", transition_force),
            ("release_time", release_time),
            ("min_normal_force", min_normal_force),
            ("com_margin", com_margin),
            ("early_touchdown", early_touchdown),
        ):
            if not is_real(value):
                raise WbsimError(f"{name} must be a real number, got {value!r}")
        for name, value in (
            ("mu", mu_value),
            ("force_weight", force_weight),
            ("relax_weight", relax_weight),
            ("regularization", regularization),
        ):
            if not (0 < value < math.inf):
                raise WbsimError(f"{name} must be a finite number > 0, got {value!r}")
        for name, value in (
            ("transition_time", transition_time),
            ("transition_force", transition_force),
            ("release_time", release_time),
            ("min_normal_force", min_normal_force),
            ("early_touchdown", early_touchdown),
        ):
            if not (np.isfinite(value) and value >= 0):
                raise WbsimError(f"{name} must be finite and >= 0, got {value!r}")
        self.robot = robot
        self.model: pin.Model = robot.pin_model
        self.data: pin.Data = self.model.createData()
        self.nv = self.model.nv
        _ = robot.feet  # raises NoFeetError for a robot without feet
        self.variant = variant
        self.contact_source = contact_source
        self.mu = None if mu is None else float(mu)
        self.friction_margin = friction_margin
        #: the simulator's friction where a state gives none: the robot's MuJoCo model, now
        self.model_friction = model_friction(robot)
        check_friction_option(mu, friction_margin, self.model_friction)
        self._friction = simulator_friction(
            None, None, robot.contact_names, self.model_friction, self.mu, friction_margin
        )
        self.force_weight = float(force_weight)
        self.relax_weight = float(relax_weight)
        #: ``(nv, nv)`` positive semi-definite, or ``None``: added to the relaxed QP's weight ``W``
        #: for the solves while it is set (a controller built on this one sets it per step: e.g.
        #: ``push_step`` adds ``w m J_com^T J_com`` so that the CoM acceleration gives last)
        self.relaxation_extra_weight: np.ndarray | None = None
        self.min_normal_force = float(min_normal_force)
        self.transition_time = float(transition_time)
        self.transition_force = float(transition_force)
        self.release_time = min(float(release_time), self.transition_time)
        self._weight = float(robot.total_mass) * float(np.linalg.norm(self.model.gravity.linear))
        self.task_space = task_space
        self.pinv_forces = pinv_forces
        self.regularization = float(regularization)
        self.check_targets = bool(check_targets)
        self.com_margin = float(com_margin)
        self.gains = ProjectedIDGains.from_value(gains)
        self.solver = self._pick_solver(solver)
        self.tau_limit = (
            np.asarray(robot.effort_limits, dtype=float).copy()
            if torque_limits is None
            else np.asarray(torque_limits, dtype=float).copy()
        )
        if self.tau_limit.shape != (robot.n_joints,) or np.any(self.tau_limit < 0):
            raise WbsimError(f"torque_limits must be a non-negative ({robot.n_joints},) array")
        self.qidx = robot.converter.pin_qidx
        self.vidx = robot.converter.pin_vidx
        self._act = _as_slice(np.asarray(self.vidx))  # a slice for a free-flyer root
        self._unact = _unactuated(self.nv, self._act)
        self.joint_damping = self._parse_damping(joint_damping)
        self._damped = bool(np.any(self.joint_damping > 0))
        self._damping_v = np.zeros(self.nv)  # (nv,): joint_damping on the actuated rows of v
        self._damping_v[self._act] = self.joint_damping
        self._W_mode, self._W_factor, self._W = self._parse_W(W)
        self.base_frame_id = self._base_frame(base_frame)
        self.torso_frame_id = self._torso_frame()
        self._leg_reach = {f: self._leg_chain(f) for f in robot.feet}
        self._reset_done = False
        self._contact_set: frozenset[str] | None = None
        self._layout: ContactLayout = build_contact_layout(robot, ())
        self._step_friction = StepFriction(self.friction)
        self._built_for: dict[tuple, Any] = {}  # layouts and kernels by contact set (_built)
        self._wrench_keys: tuple[str, ...] = ()  # "<foot>_wrench" of the feet in contact
        self._hull_cache: tuple | None = None
        self._last_feasible_tau: np.ndarray | None = None
        self.fast = bool(fast)
        self.force_feedforward = bool(force_feedforward)
        self.early_touchdown = float(early_touchdown)
        self._terms: _Terms | ProjectedIDKernel | None = None  # this step's M, h, Jc, ...
        self._projected: tuple | None = None
        self._kernel: ProjectedIDKernel | None = None
        self._all_points = False

    # -- configuration helpers --------------------------------------------------------------------
    @staticmethod
    def _pick_solver(solver: str | None) -> str:
        available = qpsolvers.available_solvers
        if solver is None:
            for name in PREFERRED_SOLVERS:
                if name in available:
                    return name
            raise WbsimError(f"no QP solver installed among {PREFERRED_SOLVERS}")
        if solver not in available:
            raise UnknownNameError("QP solver", solver, available)
        return solver

    def _parse_damping(self, value) -> np.ndarray:
        """``(n_joints,)`` viscous joint damping, N·m·s/rad (see the class docstring)."""
        robot = self.robot
        if isinstance(value, str):
            if value != "model":
                raise UnknownNameError("joint damping", value, ("model",))
            config = getattr(robot, "config", None)
            if config is not None and hasattr(config, "dynamics_of"):
                value = [float(config.dynamics_of(n).damping) for n in robot.joint_names]
            else:
                value = np.asarray(self.model.damping)[self.vidx]
        try:
            d = np.broadcast_to(np.asarray(value, dtype=float), (robot.n_joints,)).copy()
        except ValueError:
            raise WbsimError(
                f"joint_damping must be a scalar or a ({robot.n_joints},) array"
            ) from None
        if not (np.all(np.isfinite(d)) and np.all(d >= 0)):
            raise WbsimError("joint_damping must be finite and >= 0")
        return d

    def _parse_W(self, W):
        if W is None or (isinstance(W, str) and W == "M"):
            return "M", None, None
        if isinstance(W, str):
            if W == "identity":
                return "fixed", np.eye(self.nv), np.eye(self.nv)
            raise UnknownNameError("projection weight", W, ("M", "identity"))
        W = np.asarray(W, dtype=float)
        if W.shape != (self.nv, self.nv) or not np.all(np.isfinite(W)) or not np.allclose(W, W.T):
            raise WbsimError(f"W must be a finite symmetric ({self.nv}, {self.nv}) array")
        return "fixed", cholesky(W, "W"), W.copy()

    def _base_frame(self, base_frame: str | None) -> int:
        if base_frame is not None:
            if not self.model.existFrame(base_frame):
                raise UnknownNameError("frame", base_frame, [f.name for f in self.model.frames])
            return self.model.getFrameId(base_frame)
        for i, f in enumerate(self.model.frames):
            if f.parentJoint == 1 and f.type == pin.FrameType.BODY:
                return i
        raise WbsimError("no body frame on the root joint; pass base_frame")

    def _torso_frame(self) -> int | None:
        """The frame of the torso orientation task: ``robot.config.torso``'s body frame, or
        ``None`` (no config torso, the torso is the base, or the task's weight is 0)."""
        config = getattr(self.robot, "config", None)
        name = getattr(config, "torso", "") or ""
        if not name or self.gains.torso_orientation.weight == 0 or not self.model.existFrame(name):
            return None
        fid = self.model.getFrameId(name)
        if self.model.frames[fid].parentJoint == self.model.frames[self.base_frame_id].parentJoint:
            return None
        return fid

    def _leg_chain(self, foot: str) -> tuple[int, float]:
        """(hip joint id, upper bound of the hip-to-foot-frame distance in m)."""
        fid = self.robot.feet[foot].pin_frame_id
        frame = self.model.frames[fid]
        chain = list(self.model.supports[frame.parentJoint])  # universe, root, hip, ..., ankle
        hip = chain[2]
        reach = sum(np.linalg.norm(self.model.jointPlacements[j].translation) for j in chain[3:])
        reach += np.linalg.norm(frame.placement.translation)
        return hip, float(reach)

    # -- protocol ---------------------------------------------------------------------------------
    def reset(self, state: RobotState) -> None:
        """Store the reference posture, CoM, base orientation and foot placements of ``state``."""
        s = compute_snapshot(self.model, self.data, state.q, state.v)
        self._com0 = s.com.copy()
        self._base_R0 = s.frame(self.base_frame_id).rotation.copy()
        self._posture0 = np.asarray(state.q)[self.qidx].copy()
        self._feet0 = {
            f: (s.frame(ft.pin_frame_id).position.copy(), s.frame(ft.pin_frame_id).rotation.copy())
            for f, ft in self.robot.feet.items()
        }
        g = self.gains
        self.com_task = ComTask(self._com0, g.com)
        self.base_task = FrameOrientationTask(
            self.base_frame_id, self._base_R0, g.base_orientation, name="base_orientation"
        )
        self.torso_task = None
        if self.torso_frame_id is not None:
            R = s.frame(self.torso_frame_id).rotation
            self._torso_in_base0 = self._base_R0.T @ R  # follows the base's target
            self.torso_task = FrameOrientationTask(
                self.torso_frame_id, R, g.torso_orientation, name="torso_orientation"
            )
        self.posture_task = PostureTask(self.qidx, self.vidx, self._posture0, g.posture, self.nv)
        # the angular-momentum task: always in the stack (gains given, weight > 0), never
        # (weight 0), or from the first step whose reference gives L (gains unset)
        am = g.angular_momentum
        self.momentum_task = (
            CentroidalAngularMomentumTask(
                self.model, REFERENCE_MOMENTUM_GAINS if am is None else am
            )
            if am is None or am.weight > 0
            else None
        )
        self._momentum_in_stack = am is not None and am.weight > 0
        self.foot_position_tasks = {
            f: FramePositionTask(
                ft.pin_frame_id, self._feet0[f][0], g.swing_foot_position, name=f"{f}_position"
            )
            for f, ft in self.robot.feet.items()
        }
        self.foot_orientation_tasks = {
            f: FrameOrientationTask(
                ft.pin_frame_id,
                _level_rotation(self._feet0[f][1]),
                g.swing_foot_orientation,
                name=f"{f}_orientation",
            )
            for f, ft in self.robot.feet.items()
        }
        self._com_given, self._com_velocity_given = self._com0.copy(), _ZERO3
        self._com_acceleration_given = _ZERO3
        self._foot_given = {f: (p.copy(), _ZERO3, _ZERO3) for f, (p, _) in self._feet0.items()}
        self._force_reference: np.ndarray | None = None
        self._contact_set = None
        self._layout = build_contact_layout(self.robot, ())
        self._last_feasible_tau = None
        self._made_at: dict[str, float] = {}  # time a foot entered the contact set (not at reset)
        self._landing_at: dict[str, float] = {}  # planned landing of a foot that landed early
        self._entered_at: dict[str, float] = {}  # time a foot entered the contact set
        self._unload_from: dict[
            str, float
        ] = {}  # normal load (N) of a foot when its unloading began
        self._foot_load: dict[str, float] = {}  # commanded normal load (N) per foot, last step
        self._loads_from: tuple | None = None  # (feet, load rows, point forces) not yet summed
        self._reset_done = True

    def friction(self, state: RobotState | None = None) -> ContactFriction:
        """The ``mu`` per foot and the cone type the QP uses at ``state`` (its ``friction`` and
        ``cone``; the robot's model where it has none, or for ``None``): ``mu`` if given (a cap),
        else the simulator's times ``friction_margin``
        (:func:`~wbsim.controllers.friction.simulator_friction`)."""
        return simulator_friction(
            None if state is None else state.friction,
            None if state is None else state.cone,
            self.robot.contact_names,
            self.model_friction,
            self.mu,
            self.friction_margin,
        )

    def _contact_set_of(self, state: RobotState, schedule: ContactSchedule) -> frozenset[str]:
        if self.contact_source == "sensed":
            if state.sensed_contacts is None:
                raise WbsimError("contact_source='sensed' but the state carries no sensed_contacts")
            return frozenset(state.sensed_contacts)
        planned = frozenset(schedule.contact_set)
        sensed, nxt = state.sensed_contacts, schedule.next_contact_set
        if not (nxt and self.early_touchdown > 0.0):
            return planned
        left = schedule.phase_duration - schedule.phase_time
        landing = float(state.t) + left
        # a foot that landed early stays in contact until its planned landing (a bounce does not
        # lift it off the contact set again)
        early = [
            f
            for f in nxt - planned
            if left <= self.early_touchdown
            and (f in (sensed or ()) or self._landing_at.get(f, -1.0) == landing)
        ]
        if not early:
            return planned
        for f in early:  # its load ramp starts at the planned touch-down (_force_bounds)
            self._landing_at.setdefault(f, landing)
        return planned | frozenset(early)

    def _switch_mode(
        self, contact_set: frozenset[str], s: DynamicsSnapshot, info: dict, t: float
    ) -> None:
        """Rebuild the contact structures for a new contact set (seed, Problem 5) at the snapshot
        ``s`` of this step."""
        preload = max(self.min_normal_force, self.transition_force)  # a hand is kept pressed
        friction = self._friction
        # the layout and the kernel are functions of these (and of the controller's options):
        # kept for the next switch to the same set (a gait's few sets; a reset keeps them)
        key = (
            contact_set,
            tuple(sorted(friction.mu.items())),
            friction.cone,
            preload,
            self.min_normal_force,
        )
        layout = self._built(
            ("layout", key),
            lambda: build_contact_layout(
                self.robot,
                contact_set,
                friction,
                {
                    f: preload if f in self.robot.hands else self.min_normal_force
                    for f in self.robot.contacts
                },
            ),
        )
        if self._contact_set is not None and contact_set != self._contact_set:
            info["mode_switch"] = {"from": sorted(self._contact_set), "to": sorted(contact_set)}
            for f in contact_set - self._contact_set:
                self._made_at[f] = self._landing_at.get(f, t)
                self._entered_at[f] = t
            loads = self._foot_loads()
            for f in self._contact_set - contact_set:
                self._made_at.pop(f, None)
                self._landing_at.pop(f, None)
                loads.pop(f, None)
            self._unload_from.clear()
            for f in self.robot.feet:  # a foot that leaves contact holds its lift-off placement
                if f in self._contact_set and f not in contact_set:
                    fk = s.frame(self.robot.feet[f].pin_frame_id)
                    self._foot_given[f] = (fk.position.copy(), _ZERO3, _ZERO3)
                    self.foot_orientation_tasks[f].set_target(_level_rotation(fk.rotation))
        self._contact_set = contact_set
        self._layout = layout
        self._wrench_keys = tuple(f"{f}_wrench" for f in layout.feet)
        self._all_points = layout.point_names == tuple(self.robot.contact_point_names)
        self._hull_cache = None
        n = layout.n_points
        self._load_rows = np.zeros((len(layout.feet), 3 * n))  # row k: sum of foot k's f_z
        for k in range(len(layout.feet)):
            self._load_rows[k, 12 * k + 2 : 12 * k + 12 : 3] = 1.0
        self._swing = tuple(f for f in self.robot.feet if f not in contact_set)
        self._stack_tasks = tuple(self._tasks())
        self._task_names = tuple(t.name for t in self._stack_tasks)
        self._kernel = None
        if self.fast:
            # the joints a contact force reaches: non-zero columns of J_c (structural: the legs in
            # contact), the rows of (J_c^T G)_a that are not zero
            reached = (contact_kinematics(s, layout).Jc != 0.0).any(axis=0)[self._act]
            specs = tuple(_task_spec(task) for task in self._stack_tasks)
            qp = self.variant == "qp" and self.solver == "daqp"
            self._kernel = self._built(
                (
                    "kernel",
                    key,
                    self._momentum_in_stack,
                    reached.tobytes(),
                    self.tau_limit.tobytes(),
                    self.regularization,
                    self.task_space,
                    qp,
                ),
                lambda: ProjectedIDKernel(
                    self.model,
                    layout.frame_ids,
                    layout.points_in_foot,
                    specs,
                    self._act,
                    self._W_factor,
                    self.task_space == "nullspace",
                    self.regularization,
                    self._damping_v if self._damped else None,
                    layout.friction if qp else None,
                    reached,
                    self.tau_limit,
                ),
            )

    def _built(self, key: tuple, build: Callable[[], Any]) -> Any:
        """``build()``, or what it returned for ``key`` at an earlier mode switch (the last
        :data:`_BUILT_KEPT` kept: a gait switches between a few contact sets; a state whose
        friction changes every step would otherwise grow the store)."""
        built = self._built_for.get(key)
        if built is None:
            if len(self._built_for) >= _BUILT_KEPT:
                del self._built_for[next(iter(self._built_for))]
            built = self._built_for[key] = build()
        return built

    def _task_targets(self) -> list[tuple]:
        """Per task of the stack, what the kernel reads each step: ``(kp, kd, weight, target,
        target_velocity or None, target_acceleration or None)``."""
        out: list[tuple] = []
        for task in self._stack_tasks:
            g = task.gains
            if isinstance(task, CentroidalAngularMomentumTask):  # first order: L_ref, L'_ref
                out.append((0.0, g.kd, g.weight, None, task.target, task.target_rate))
                continue
            out.append(
                (
                    g.kp,
                    g.kd,
                    g.weight,
                    getattr(task, "target", None),
                    getattr(task, "target_velocity", None),
                    getattr(task, "target_acceleration", None),
                )
            )
        return out

    def _tasks(self) -> list[Task]:
        tasks: list[Task] = [self.com_task, self.base_task]
        if self.torso_task is not None:
            tasks.append(self.torso_task)
        if self._momentum_in_stack:
            tasks.append(self.momentum_task)  # type: ignore[arg-type]
        for f in self._swing:
            tasks += [self.foot_position_tasks[f], self.foot_orientation_tasks[f]]
        tasks.append(self.posture_task)
        return tasks

    # -- targets ----------------------------------------------------------------------------------
    def _apply_targets(
        self,
        targets: Mapping[str, Any],
        points: np.ndarray,
        data: pin.Data,
        events: list[str],
        foot_rotations: np.ndarray,
    ) -> None:
        """Update the given targets from ``targets``, clamp out-of-reach ones into the task
        targets (``points``: the sole points in contact, world, ``(n, 3)``; ``data``: Pinocchio
        data of this step, for the hip positions; ``foot_rotations``: ``(n_feet, 3, 3)`` of the
        feet in contact, for the wrench feed-forward)."""
        if "com" in targets:
            self._com_given = _target3(targets["com"], "com")
        if "com_velocity" in targets:
            self._com_velocity_given = _target3(targets["com_velocity"], "com_velocity")
        elif "com" in targets:
            self._com_velocity_given = _ZERO3
        dynamic = "com_acceleration" in targets
        if dynamic:
            self._com_acceleration_given = _target3(targets["com_acceleration"], "com_acceleration")
        elif "com" in targets:
            self._com_acceleration_given = _ZERO3
        if "base_orientation" in targets:
            self.base_task.target = _rotation(targets["base_orientation"], "base_orientation")
            if self.torso_task is not None:
                self.torso_task.target = self.base_task.target @ self._torso_in_base0
        if "posture" in targets:
            posture = np.asarray(targets["posture"], dtype=float)
            if posture.shape != self.posture_task.target.shape or not np.all(np.isfinite(posture)):
                raise WbsimError(
                    f"schedule target 'posture' must be a finite "
                    f"({self.robot.n_joints},) array (rad, robot.joint_names order), "
                    f"got shape {posture.shape}"
                )
            self.posture_task.target = posture
        mt = self.momentum_task
        if (
            mt is not None
            and self._momentum_in_stack
            and ("angular_momentum" in targets or "angular_momentum_rate" in targets)
        ):
            mt.set_target(
                targets.get("angular_momentum", mt.target),
                targets.get("angular_momentum_rate", mt.target_rate),
            )
        for f in self._swing:
            key = (
                f
                if f in targets
                else ("swing_foot" if len(self._swing) == 1 and "swing_foot" in targets else None)
            )
            if key is not None:
                vel = targets.get(f"{key}_velocity")
                acc = targets.get(f"{key}_acceleration")
                self._foot_given[f] = (
                    _target3(targets[key], key),
                    _ZERO3 if vel is None else _target3(vel, f"{key}_velocity"),
                    _ZERO3 if acc is None else _target3(acc, f"{key}_acceleration"),
                )
                rot = targets.get(f"{key}_orientation")
                if rot is not None:
                    self.foot_orientation_tasks[f].target = _rotation(rot, f"{key}_orientation")
        self._force_reference = (
            self._wrench_reference(targets, foot_rotations) if self.force_feedforward else None
        )
        com = self._com_given
        if self.check_targets and points.shape[0] and not dynamic:
            com = self._clamp_com(com, points[:, :2], events)
        task = self.com_task
        task.target, task.target_velocity = com, self._com_velocity_given
        task.target_acceleration = self._com_acceleration_given
        for f in self._swing:
            pos, vel, acc = self._foot_given[f]
            if self.check_targets:
                hip, reach = self._leg_reach[f]
                hip_pos = data.oMi[hip].translation
                d = pos - hip_pos
                dist = float(np.linalg.norm(d))
                if dist > reach:
                    pos = hip_pos + d * (reach / dist)
                    events.append(f"{f}_target_out_of_reach")
            ftask = self.foot_position_tasks[f]
            ftask.target, ftask.target_velocity = pos, vel  # validated by _target3
            ftask.target_acceleration = acc

    def _wrench_reference(
        self, targets: Mapping[str, Any], foot_rotations: np.ndarray
    ) -> np.ndarray | None:
        """``f_ref (3 n_points,)`` of the feet in contact from their ``"<foot>_wrench"`` targets
        (least-norm over each foot's sole points, :func:`distribute_wrench`), or ``None`` when no
        foot in contact has one (a foot without one gets 0)."""
        layout = self._layout
        if not targets or not any(key in targets for key in self._wrench_keys):
            return None
        out = np.zeros((layout.n_points, 3))
        for k, f in enumerate(layout.feet):
            w = targets.get(f"{f}_wrench")
            if w is None:
                continue
            w = np.asarray(w, dtype=float)
            if w.shape != (6,) or not np.all(np.isfinite(w)):
                raise WbsimError(
                    f"schedule target '{f}_wrench' must be a finite (6,) array "
                    f"[force N; moment N·m], got {targets[f'{f}_wrench']!r}"
                )
            out[4 * k : 4 * k + 4] = distribute_wrench(w, foot_rotations[k], layout.distribution[k])
        return out.reshape(-1)

    def _clamp_com(self, com: np.ndarray, points_xy: np.ndarray, events: list[str]) -> np.ndarray:
        """``com`` if its x-y lies ``com_margin`` inside the support polygon of ``points_xy``; else the
        point of the segment from the polygon's vertex centroid to ``com`` that is last inside it.
        The polygon is recomputed when a sole point moved by more than 1 mm."""
        # runs every step: the cache check and the inside test on Python floats (a few small-array
        # numpy calls cost more than the arithmetic)
        cached = self._hull_cache
        pts = points_xy.ravel().tolist()
        if (
            cached is None
            or len(cached[0]) != len(pts)
            or max(map(abs, map(float.__sub__, cached[0], pts))) > 1e-3
        ):
            hull = convex_hull(points_xy)
            edges = np.roll(hull, -1, axis=0) - hull
            normals = np.stack([-edges[:, 1], edges[:, 0]], axis=1)  # inward (counter-clockwise)
            normals /= np.linalg.norm(normals, axis=1, keepdims=True)
            offsets = np.einsum("ij,ij->i", normals, hull)
            planes = tuple(zip(normals[:, 0].tolist(), normals[:, 1].tolist(), offsets.tolist()))
            cached = self._hull_cache = (pts, hull, planes)
        poly, planes = cached[1], cached[2]
        x, y = float(com[0]), float(com[1])
        margin = self.com_margin
        if len(poly) >= 3 and all(nx * x + ny * y - o > margin for nx, ny, o in planes):
            return com
        events.append("com_target_outside_support")
        centre = poly.mean(axis=0)
        lo, hi = 0.0, 1.0
        if point_in_polygon(poly, centre, self.com_margin):
            for _ in range(30):
                mid = 0.5 * (lo + hi)
                if point_in_polygon(poly, centre + mid * (com[:2] - centre), self.com_margin):
                    lo = mid
                else:
                    hi = mid
        out = com.copy()
        out[:2] = centre + lo * (com[:2] - centre)
        return out

    # -- step -------------------------------------------------------------------------------------
    def compute(self, state: RobotState, schedule: ContactSchedule) -> Command:
        """Torques for ``state`` under the contact set of ``schedule`` (or the sensed one).

        Raises :class:`WbsimError` only for malformed input (state shapes, unknown foot names,
        non-finite or wrongly shaped targets, sensed contacts missing); infeasible problems are
        reported in the returned :class:`Command`.
        """
        t0 = time.perf_counter()
        if not self._reset_done:
            self.reset(state)
        contact_set = self._contact_set_of(state, schedule)
        info: dict[str, Any] = {"variant": self.variant}
        friction = self._step_friction(state)
        targets = schedule.targets or {}
        rebuild = False
        if (
            not self._momentum_in_stack
            and self.momentum_task is not None
            and ("angular_momentum" in targets or "angular_momentum_rate" in targets)
        ):  # the reference asks for L: the task joins the stack (gains.angular_momentum)
            self._momentum_in_stack = rebuild = True
        if rebuild or contact_set != self._contact_set or friction != self._friction:
            self._friction = friction
            self._switch_mode(
                contact_set,
                compute_snapshot(self.model, self.data, state.q, state.v),
                info,
                float(state.t),
            )
        events: list[str] = []
        kernel = self._kernel
        terms: _Terms | ProjectedIDKernel
        if kernel is not None:
            q, v = _state_arrays(self.model, state)
            kernel.kinematics(q, v)
            self._apply_targets(targets, kernel.points, kernel.data, events, kernel.foot_rotations)
            terms = self._terms = kernel  # its M, h, g, Jc, ... (the fields of _Terms)
            try:
                kernel.accelerations(self._task_targets())
            except KernelError as exc:
                if not exc.projection:
                    raise WbsimError(str(exc)) from None
                self._projected = None
                return self._fallback(terms, info, events + ["projection_failed"], str(exc), t0)
            self._projected = (kernel.Jc_pinv, kernel.Nc, kernel.particular)
            qdd_des, qdd_star = kernel.qdd_des, kernel.qdd_star
            norms = kernel.error_norms
        else:
            s = compute_snapshot(self.model, self.data, state.q, state.v)
            ck = contact_kinematics(s, self._layout)
            self._apply_targets(targets, ck.point_positions, s.data, events, ck.foot_rotations)
            h = s.h + self._damping_v * s.v if self._damped else s.h
            terms = self._terms = _Terms(
                s.M,
                h,
                s.g,
                ck.Jc,
                ck.Jc_dot_v,
                ck.grasp,
                ck.foot_rotations,
                ck.foot_positions,
                ck.point_positions,
            )
            try:
                proj = (
                    contact_projection(ck.Jc, ck.Jc_dot_v, W=s.M)
                    if self._W_mode == "M"
                    else contact_projection(ck.Jc, ck.Jc_dot_v, W_cholesky=self._W_factor)
                )
            except WbsimError as exc:
                self._projected = None
                return self._fallback(terms, info, events + ["projection_failed"], str(exc), t0)
            self._projected = (proj.Jc_pinv, proj.Nc, proj.particular)
            rows = [task.rows(s) for task in self._stack_tasks]
            nullspace = (proj.Nc, proj.particular) if self.task_space == "nullspace" else None
            qdd_des = solve_task_stack(
                build_task_stack(rows, self.nv, self.regularization, nullspace)
            )
            qdd_star = proj.project(qdd_des)
            norms = [math.sqrt(float(r.error @ r.error)) for r in rows]
        clamped = bool(events)
        info.update(
            qdd_des=qdd_des, qdd_star=qdd_star, task_errors=dict(zip(self._task_names, norms))
        )

        fallback = "clamped_target" if clamped else ""
        layout = self._layout
        if self.variant == "pinv":
            res = inverse_dynamics_pinv(
                terms.M,
                terms.h,
                qdd_star,
                terms.Jc,
                self._act,
                terms.grasp,
                (terms.foot_rotations, layout.distribution),
                self.pinv_forces,
            )
            if not res.found:
                return self._fallback(terms, info, events + ["pinv_unbalanced"], res.status, t0)
            tau = res.tau
            if np.any(np.abs(tau) > self.tau_limit):
                tau = np.clip(tau, -self.tau_limit, self.tau_limit)
                events.append("torque_limit")
                fallback = fallback or "clipped"
            if res.point_forces.size and res.point_forces[:, 2].min() < 0.0:
                info["pulling"] = True
        else:
            bounds = self._force_bounds(schedule, float(state.t))
            solved = self._solve_qp(terms, qdd_star, bounds)
            if solved is None:
                return self._fallback(
                    terms,
                    info,
                    events + ["no_contact"],
                    "no contact: the base cannot be supported",
                    t0,
                )
            res = solved
            if not res.found:
                return self._fallback(terms, info, events + ["qp_infeasible"], res.status, t0)
            if res.relaxed:
                events.append("exact_qp_infeasible")
                fallback = fallback or "relaxed_qp"
            tau = res.tau
            if layout.feet:  # the per-foot loads are summed only when a transition needs them
                self._loads_from = (layout.feet, self._load_rows, res.point_forces)
        feasible = not fallback
        if feasible:
            self._last_feasible_tau = tau.copy()
        info.update(
            qdd=res.qdd,
            **{"lambda": res.lam},
            tau_id=res.tau,
            solve_time=res.solve_time,
            compute_time=time.perf_counter() - t0,
        )
        if events:
            info["event"] = ",".join(events)
        info["solver"] = self.solver if self.variant == "qp" else "numpy.linalg"
        if self._all_points:  # the layout's points are the robot's, in its order
            point_forces = np.array(res.point_forces, dtype=float)
        else:
            point_forces = scatter_rows(
                self.robot.contact_point_names, layout.point_names, res.point_forces, 3
            )
        return Command(
            tau=np.asarray(tau, dtype=float),
            contact_set=contact_set,
            point_forces=point_forces,
            status=CommandStatus.SOLVED if feasible else CommandStatus.INFEASIBLE,
            fallback=fallback,
            message="" if feasible else ("; ".join(events) or res.status),
            info=info,
        )

    @property
    def contact(self) -> ContactKinematics | None:
        """This step's :class:`ContactKinematics` (copies; for logging and tests)."""
        t = self._terms
        if t is None:
            return None
        return ContactKinematics(
            t.Jc.copy(),
            t.Jc_dot_v.copy(),
            np.array(t.foot_positions),
            np.array(t.points),
            t.grasp.copy(),
            np.array(t.foot_rotations),
        )

    @property
    def projection(self) -> ContactProjection | None:
        """This step's :class:`ContactProjection` (copies; ``None`` when it failed)."""
        p = self._projected
        if p is None or self._terms is None:
            return None
        t = self._terms
        return ContactProjection(t.Jc.copy(), t.Jc_dot_v.copy(), *(np.array(a) for a in p))

    def _foot_loads(self) -> dict[str, float]:
        """Commanded normal load (N) per foot in contact at the last solved QP step."""
        src = self._loads_from
        if src is not None:
            feet, load_rows, forces = src  # forces: the QP's own (n_points, 3), never handed out
            self._foot_load = dict(zip(feet, (load_rows[:, 2::3] @ forces[:, 2]).tolist()))
            self._loads_from = None
        return self._foot_load

    def _force_bounds(
        self, schedule: ContactSchedule, t: float
    ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
        """Normal-force bounds of the feet in contact for this step: ``(friction_rhs, force_limits)``
        for :func:`build_contact_qp`. ``T = transition_time``, ``T_r = release_time``,
        ``f_k = transition_force`` (N per sole point), ``f_min = min_normal_force``, ``m g`` the
        robot's weight.

        In a phase shorter than ``2 T`` (a walking gait's double support), ``T`` is half the
        phase's duration (and ``T_r`` at most that): the load a landing foot may take and the cap
        of the foot about to lift always add up to the weight.

        * Every point: ``f_z >= f_min``.
        * A foot planned to leave contact at the end of the phase (in ``schedule.contact_set``, not
          in ``schedule.next_contact_set``), ``tau`` seconds before the switch:

          - every point keeps ``f_z >= max(f_min, f_k)`` while ``tau >= T_r``, then
            ``f_k tau / T_r``: the foot stays clearly loaded during the whole phase, so its sensed
            contact cannot flicker while the rest of its load is taken off, and lets go in the last
            ``T_r`` seconds;
          - in the last ``T`` seconds its total load is capped,
            ``sum f_z <= 4 f_k min(tau / T_r, 1) + (F_0 - 4 f_k)^+ r``,
            ``r = clip((tau - T_r) / (T - T_r), 0, 1)``, ``F_0`` the foot's commanded load when the
            cap began: the load goes linearly to ``4 f_k``, then to 0 at the planned switch (the
            contact-removal ramp of TSID's ``removeRigidContact(name, transition_duration)``, here
            as a QP bound).
        * A foot that entered the contact set ``dt`` seconds ago (a touch-down, not the contacts at
          reset): ``f_min`` is scaled by ``min(dt / T, 1)``; if it touched down in the current phase
          every point keeps ``f_z >= f_k min(dt / T_r, 1)`` until the phase ends (pressed within
          ``T_r``; pressing at once drove a foot still in the air into the floor, so
          the fresh contact does not bounce open, and kept pressed while the CoM moves over it);
          while ``dt < T`` in that phase its total load is capped at ``max(m g dt / T, 4 f_k)``
          (not in a later phase: after a short double support the foot is the stance foot and
          carries everything): it takes over
          load gradually, not in one step, yet may keep from the first step the small load a foot
          that touched a few milliseconds before the planned switch already carries (a cap of 0
          there pulled such a foot off the floor again: a bounce).

        With ``T = 0`` only ``f_min`` applies. Cost: a few microseconds; no bound at all (the
        layout's own arrays) in steady contact.
        """
        layout = self._layout
        rhs = layout.friction_rhs
        T, Tr, fk = self.transition_time, self.release_time, self.transition_force
        if T <= 0.0 or not layout.feet:
            return rhs, None
        if 2.0 * T > schedule.phase_duration:  # a short phase (double support): half of it
            T = 0.5 * schedule.phase_duration
            Tr = min(Tr, T)
        nxt = schedule.next_contact_set
        if not self._made_at and (nxt is None or layout.feet_set <= nxt):
            return rhs, None  # steady contact (the usual step): no transition bound
        phase_start = t - schedule.phase_time - 1e-9
        left = float("inf")
        if nxt is not None and np.isfinite(schedule.phase_duration):
            left = max(schedule.phase_duration - schedule.phase_time, 0.0)
        caps: list[tuple[int, float]] = []
        lows: list[tuple[int, float]] = []
        for k, f in enumerate(layout.feet):
            lo, cap = self.min_normal_force, None
            made = self._made_at.get(f)
            if made is not None:
                dt = max(t - made, 0.0)
                if dt < T:
                    lo *= dt / T
                if made >= phase_start:  # touched down in this phase: keep it pressed
                    pressed = max(t - self._entered_at.get(f, made), 0.0)  # (early: sensed)
                    lo = max(lo, fk * (min(pressed / Tr, 1.0) if Tr > 0 else 1.0))
                    if dt < T:  # (a later phase may be shorter: the ramp ends with the phase)
                        cap = max(dt / T * self._weight, 4.0 * max(lo, fk))
            if nxt is not None and f not in nxt:
                r_keep = min(left / Tr, 1.0) if Tr > 0 else float(left > 0)
                lo = max(lo, fk * r_keep) if r_keep >= 1.0 else fk * r_keep
                if left < T:
                    f0 = self._unload_from.get(f)
                    if f0 is None:
                        f0 = self._unload_from[f] = self._foot_loads().get(
                            f, self._weight / len(layout.feet)
                        )
                    r = min(max((left - Tr) / (T - Tr), 0.0), 1.0) if T > Tr else 0.0
                    c = 4.0 * fk * r_keep + max(f0 - 4.0 * fk, 0.0) * r
                    cap = c if cap is None else min(cap, c)
                    lo = min(lo, 0.25 * cap)
            if lo != self.min_normal_force:
                lows.append((k, lo))
            if cap is not None:
                caps.append((k, cap))
        if lows:
            rhs = rhs.copy()
            for k, lo in lows:
                rhs[20 * k : 20 * k + 20 : 5] = -lo
        limits = None
        if caps:
            ks = [k for k, _ in caps]
            limits = (self._load_rows[ks], np.array([c for _, c in caps]))
        return rhs, limits

    def _solve_qp(
        self,
        terms: _Terms | ProjectedIDKernel,
        qdd_star: np.ndarray,
        bounds: tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None],
    ) -> IDResult | None:
        """The exact QP (``qdd = qdd*``), then the relaxed one if it has no solution; ``None``
        when no foot is in contact and the base rows do not balance."""
        layout = self._layout
        rhs, limits = bounds
        kernel = self._kernel
        if layout.feet and kernel is not None and kernel.qp:
            t0 = time.perf_counter()
            found, f, tau, status = kernel.solve_qp(
                rhs, self.force_weight, limits, self._force_reference
            )
            dt = time.perf_counter() - t0
            if found:
                return IDResult(
                    True,
                    qdd_star.copy(),
                    tau,
                    kernel.grasp.dot(f),
                    f.reshape(-1, 3),
                    status,
                    False,
                    dt,
                )
        M, h, Jc, grasp = terms.M, terms.h, terms.Jc, terms.grasp
        if not layout.feet:
            # exact problem without contact forces: feasible only if the base rows balance
            res = inverse_dynamics_pinv(M, h, qdd_star, Jc, self._act)
            if res.found and np.all(np.abs(res.tau) <= self.tau_limit):
                return res
            return None
        if kernel is not None and kernel.qp:
            res = contact_qp_result(None, M, h, qdd_star, Jc, grasp, self._act, False, status, dt)
        else:
            args = (M, h, qdd_star, Jc, grasp, self._act)
            problem = build_contact_qp(
                M,
                h,
                qdd_star,
                Jc,
                terms.Jc_dot_v,
                grasp,
                layout.friction,
                rhs,
                self._act,
                self.tau_limit,
                self.force_weight,
                force_limits=limits,
                force_reference=self._force_reference,
            )
            res = _solve_contact_qp(problem, self.solver, args, False)
            if res.found:
                return res
        W = M if self._W_mode == "M" else self._W
        if self.relaxation_extra_weight is not None:
            W = W + self.relaxation_extra_weight
        problem = build_contact_qp(
            M,
            h,
            qdd_star,
            Jc,
            terms.Jc_dot_v,
            grasp,
            layout.friction,
            rhs,
            self._act,
            self.tau_limit,
            self.force_weight,
            self.relax_weight,
            W,
            force_limits=limits,
            force_reference=self._force_reference,
        )
        res2 = _solve_contact_qp(problem, self.solver, (M, h, qdd_star, Jc, grasp, self._act), True)
        res2.solve_time += res.solve_time
        return res2

    def _fallback(
        self,
        terms: _Terms | ProjectedIDKernel,
        info: dict,
        events: list[str],
        status: str,
        t0: float,
    ) -> Command:
        layout = self._layout
        if layout.feet:
            res = inverse_dynamics_pinv(
                terms.M,
                terms.g,
                np.zeros(self.nv),
                terms.Jc,
                self._act,
                terms.grasp,
                (terms.foot_rotations, layout.distribution),
                self.pinv_forces,
            )
            name, tau, lam, pf = "gravity_pinv", res.tau, res.lam, res.point_forces
            forces = {n: pf[i].copy() for i, n in enumerate(layout.point_names)}
            info["lambda"] = lam
        elif self._last_feasible_tau is not None:
            name, tau, forces = "last_feasible", self._last_feasible_tau.copy(), {}
        else:
            name, tau, forces = "joint_gravity", terms.g[self.vidx].copy(), {}
        tau = np.clip(tau, -self.tau_limit, self.tau_limit)
        info.update(event=",".join(events), compute_time=time.perf_counter() - t0)
        info.setdefault("solve_time", 0.0)
        info["solver"] = self.solver if self.variant == "qp" else "numpy.linalg"
        failed = "projection_failed" in events
        return Command(
            tau=tau,
            contact_set=layout.feet_set,
            point_forces=scatter_rows(
                self.robot.contact_point_names,
                tuple(forces),
                tuple(forces.values()),
                3,
                nan=not forces,
            ),
            status=CommandStatus.SOLVER_FAILED if failed else CommandStatus.INFEASIBLE,
            fallback=name,
            message=status,
            info=info,
        )


class _Terms(NamedTuple):
    """The model and contact quantities of one step on the readable path: ``M``, ``h`` (damping
    included), ``g``, ``Jc``, ``Jc_dot_v``, ``grasp``, ``foot_rotations``, ``foot_positions``,
    ``points``. With the kernel, the kernel itself carries these attributes."""

    M: np.ndarray
    h: np.ndarray
    g: np.ndarray
    Jc: np.ndarray
    Jc_dot_v: np.ndarray
    grasp: np.ndarray
    foot_rotations: np.ndarray
    foot_positions: np.ndarray
    points: np.ndarray


def _state_arrays(model: pin.Model, state: RobotState) -> tuple[np.ndarray, np.ndarray]:
    """``(q, v)`` of ``state`` as float arrays of the model's shapes.

    Raises:
        WbsimError: wrong shapes.
    """
    q = np.asarray(state.q, dtype=float)
    v = np.asarray(state.v, dtype=float)
    if q.shape != (model.nq,) or v.shape != (model.nv,):
        raise WbsimError(
            f"state shapes must be q ({model.nq},), v ({model.nv},); got {q.shape}, {v.shape}"
        )
    return q, v


def _task_spec(task: Task) -> TaskSpec:
    """The kernel's description of a task of the stack."""
    if isinstance(task, ComTask):
        return TaskSpec("com")
    if isinstance(task, FramePositionTask):
        return TaskSpec("position", task.frame_id)
    if isinstance(task, FrameOrientationTask):
        return TaskSpec("orientation", task.frame_id)
    if isinstance(task, PostureTask):
        return TaskSpec("posture", -1, task.q_index, task.v_index)
    if isinstance(task, CentroidalAngularMomentumTask):
        return TaskSpec("momentum")
    raise WbsimError(f"the projected-ID kernel has no task of type {type(task).__name__}")
