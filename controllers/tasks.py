"""Acceleration-level tasks and their weighted least-squares stack (for
:mod:`~wbsim.controllers.contact_projected_id`).

Owns the per-step model snapshot that tasks read (:func:`compute_snapshot`: one
``pinocchio.computeAllTerms`` pass), the task classes (:class:`ComTask`, :class:`FramePositionTask`,
:class:`FrameOrientationTask`, :class:`PostureTask`, :class:`CentroidalAngularMomentumTask`),
their PD law (:meth:`Task.desired_acceleration`,
the only place it is written: ``a = xddot_ref + kp e + kd (xdot_ref - J v)``) and the stack, built
(:func:`build_task_stack`) then solved (:func:`solve_task_stack`) into one desired generalised
acceleration ``qdd_des``. Frames: "world" is Pinocchio's world frame (z up); Jacobians and drifts
``Jdot v`` are LOCAL_WORLD_ALIGNED; ``v`` follows Pinocchio (base twist in the base frame).
Formulas: docs/controllers.md, "Tasks".
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin
from scipy.linalg.lapack import dpotrf, dpotrs

from wbsim.errors import WbsimError, is_real

__all__ = [
    "CentroidalAngularMomentumTask",
    "ComTask",
    "DynamicsSnapshot",
    "FrameKinematics",
    "FrameOrientationTask",
    "FramePositionTask",
    "PostureTask",
    "Task",
    "TaskGains",
    "TaskLeastSquares",
    "TaskRows",
    "build_task_stack",
    "check_cholesky",
    "cholesky",
    "cholesky_solve",
    "compute_snapshot",
    "solve_task_stack",
]

_LWA = pin.LOCAL_WORLD_ALIGNED


def cholesky(A: np.ndarray, what: str = "matrix", pivot_rtol: float | None = 1e-13) -> np.ndarray:
    """Lower Cholesky factor of the SPD matrix ``A (n, n)`` (LAPACK ``dpotrf`` through
    ``scipy.linalg.lapack``; only the lower triangle of ``A`` is read).

    Raises:
        WbsimError: ``A`` is not (numerically) positive definite: ``dpotrf`` fails, or (unless
            ``pivot_rtol`` is ``None``) a pivot ``L_ii^2`` is below ``pivot_rtol`` times the largest
            diagonal entry of ``A`` (a rank-deficient ``A`` that rounding made barely positive).
    """
    L, info = dpotrf(A, lower=1, clean=0)
    check_cholesky(L, A, info, what, pivot_rtol)
    return L


def check_cholesky(
    L: np.ndarray, A: np.ndarray, info: int, what: str = "matrix", pivot_rtol: float | None = 1e-13
) -> None:
    """The checks of :func:`cholesky` on a factor ``L (n, n)`` of ``A`` that LAPACK returned with
    ``info`` (``dpotrf``, or ``dposv`` that also solved): the tests a factorisation must pass
    wherever it is made.

    Raises:
        WbsimError: as :func:`cholesky`.
    """
    if info != 0:
        raise WbsimError(f"{what} is not symmetric positive definite (dpotrf info={info})")
    if pivot_rtol is None:
        return
    d = L.diagonal()
    if d.size and d.min() ** 2 <= pivot_rtol * A.diagonal().max():
        raise WbsimError(
            f"{what} is (numerically) singular: smallest Cholesky pivot {d.min() ** 2:.3g}"
        )


def cholesky_solve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A^-1 B`` from the lower Cholesky factor ``L`` of ``A`` (LAPACK ``dpotrs``); ``B (n,)`` or
    ``(n, k)``."""
    X, info = dpotrs(L, B, lower=1)
    if info != 0:
        raise WbsimError(f"dpotrs failed (info={info})")
    return X


# ------------------------------------------------------------------------------------------------
# gains
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskGains:
    """PD gains and weight of one task.

    Attributes:
        frequency_hz: natural frequency ``f`` of the task-space error dynamics, Hz (> 0).
        damping_ratio: ``zeta`` (1 = critical damping, >= 0).
        weight: weight ``w`` of the task in the least-squares stack (>= 0).
    """

    frequency_hz: float
    damping_ratio: float = 1.0
    weight: float = 1.0

    def __post_init__(self):
        for f in fields(self):
            if not is_real(getattr(self, f.name)):
                raise WbsimError(
                    f"TaskGains: {f.name} must be a real number, got {getattr(self, f.name)!r}"
                )
        if not (np.isfinite(self.frequency_hz) and self.frequency_hz > 0):
            raise WbsimError(f"TaskGains: frequency_hz must be > 0, got {self.frequency_hz!r}")
        if not (np.isfinite(self.damping_ratio) and self.damping_ratio >= 0):
            raise WbsimError(f"TaskGains: damping_ratio must be >= 0, got {self.damping_ratio!r}")
        if not (np.isfinite(self.weight) and self.weight >= 0):
            raise WbsimError(f"TaskGains: weight must be >= 0, got {self.weight!r}")

    @cached_property
    def kp(self) -> float:
        """Stiffness ``(2 pi f)^2``, 1/s^2 (computed once: the gains are frozen)."""
        w = 2.0 * np.pi * self.frequency_hz
        return w * w

    @cached_property
    def kd(self) -> float:
        """Damping ``2 zeta (2 pi f)``, 1/s (computed once)."""
        return 2.0 * self.damping_ratio * (2.0 * np.pi * self.frequency_hz)

    @classmethod
    def from_value(cls, value: Any) -> TaskGains:
        """A :class:`TaskGains` from itself, a mapping of its fields (unknown keys raise
        :class:`WbsimError`) or a tuple ``(frequency_hz[, damping_ratio[, weight]])``."""
        if isinstance(value, TaskGains):
            return value
        if isinstance(value, dict):
            known = {f.name for f in fields(cls)}
            unknown = set(value) - known
            if unknown:
                raise WbsimError(
                    f"TaskGains: unknown keys {sorted(unknown)}; known: {sorted(known)}"
                )
            return cls(**value)
        if isinstance(value, (tuple, list)) and 1 <= len(value) <= 3:
            return cls(*(float(x) if is_real(x) else x for x in value))
        raise WbsimError(
            f"TaskGains: cannot build gains from {value!r}; expected [frequency_hz, "
            "damping_ratio, weight] (1 to 3 numbers) or a mapping of those fields"
        )


# ------------------------------------------------------------------------------------------------
# snapshot of the model at (q, v)
# ------------------------------------------------------------------------------------------------
@dataclass
class FrameKinematics:
    """Kinematics of one Pinocchio frame at ``(q, v)``.

    Attributes:
        position: ``(3,)`` frame origin in the world, m.
        rotation: ``(3, 3)`` frame orientation (frame to world).
        jacobian: ``(6, nv)`` LOCAL_WORLD_ALIGNED Jacobian, rows ``[linear (m/s), angular
            (rad/s)]`` (``pin.getFrameJacobian``).
        drift: ``(6,)`` ``Jdot v``: classical acceleration of the frame at zero ``qdd``,
            LOCAL_WORLD_ALIGNED, ``[linear (m/s^2), angular (rad/s^2)]``
            (``pin.getFrameClassicalAcceleration``).
        velocity: ``(6,)`` ``J v``, LOCAL_WORLD_ALIGNED ``[linear (m/s), angular (rad/s)]``.
    """

    position: np.ndarray
    rotation: np.ndarray
    jacobian: np.ndarray
    drift: np.ndarray
    velocity: np.ndarray


@dataclass
class DynamicsSnapshot:
    """Everything the controller reads from Pinocchio at one state (:func:`compute_snapshot`).

    Attributes:
        model, data: the Pinocchio model and the data the pass filled (``computeAllTerms``).
        q: ``(nq,)`` configuration; v: ``(nv,)`` velocity (Pinocchio convention).
        M: ``(nv, nv)`` joint-space inertia matrix (symmetric, armature included), kg·m² / kg.
        h: ``(nv,)`` nonlinear effects ``C(q, v) v + g(q)`` (``data.nle``), N·m / N.
        g: ``(nv,)`` generalised gravity (``data.g``), N·m / N.
        com: ``(3,)`` CoM in the world, m; com_velocity: ``(3,)`` m/s.
        com_jacobian: ``(3, nv)`` ``jacobianCenterOfMass`` (world frame).
        com_drift: ``(3,)`` CoM acceleration at zero ``qdd`` (``Jcom_dot v``), m/s^2.

    Every array is the snapshot's own (copies of ``data``'s); :meth:`frame` reads ``data``, so it
    is valid until the next pass on ``data``.
    """

    model: pin.Model
    data: pin.Data
    q: np.ndarray
    v: np.ndarray
    M: np.ndarray
    h: np.ndarray
    g: np.ndarray
    com: np.ndarray
    com_velocity: np.ndarray
    com_jacobian: np.ndarray
    com_drift: np.ndarray
    _frames: dict[int, FrameKinematics] = field(default_factory=dict, repr=False)

    @property
    def nv(self) -> int:
        return self.model.nv

    def frame(self, frame_id: int) -> FrameKinematics:
        """:class:`FrameKinematics` of Pinocchio frame ``frame_id`` (computed once, then cached)."""
        fk = self._frames.get(frame_id)
        if fk is None:
            model, data = self.model, self.data
            H = pin.updateFramePlacement(model, data, frame_id).homogeneous
            J = pin.getFrameJacobian(model, data, frame_id, _LWA)
            drift = pin.getFrameClassicalAcceleration(model, data, frame_id, _LWA).vector.copy()
            fk = FrameKinematics(H[0:3, 3], H[0:3, 0:3], J, drift, J @ self.v)
            self._frames[frame_id] = fk
        return fk


def compute_snapshot(
    model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray
) -> DynamicsSnapshot:
    """One dynamics pass at ``(q (nq,), v (nv,))``: ``pin.computeAllTerms`` (``M`` (its upper
    triangle, mirrored here), ``nle``, ``g``, the joint Jacobians, the CoM and its Jacobian; it
    leaves in ``data.a`` the spatial accelerations at zero ``qdd``, which the drifts read), then
    ``pin.centerOfMass(..., ACCELERATION)`` for the CoM drift.

    Raises:
        WbsimError: wrong shapes of ``q`` or ``v``.
    """
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    if q.shape != (model.nq,) or v.shape != (model.nv,):
        raise WbsimError(
            f"state shapes must be q ({model.nq},), v ({model.nv},); got {q.shape}, {v.shape}"
        )
    pin.computeAllTerms(model, data, q, v)
    M = np.triu(data.M) + np.triu(data.M, 1).T  # crba fills the upper triangle
    com, com_velocity = data.com[0].copy(), data.vcom[0].copy()
    pin.centerOfMass(model, data, pin.KinematicLevel.ACCELERATION, False)
    return DynamicsSnapshot(
        model=model,
        data=data,
        q=q,
        v=v,
        M=M,
        h=data.nle.copy(),
        g=data.g.copy(),
        com=com,
        com_velocity=com_velocity,
        com_jacobian=data.Jcom.copy(),
        com_drift=data.acom[0].copy(),
    )


# ------------------------------------------------------------------------------------------------
# tasks
# ------------------------------------------------------------------------------------------------
class TaskRows(NamedTuple):
    """One task evaluated at a snapshot: ``J qdd + drift ~= acceleration`` with weight ``weight``.

    Attributes:
        name: the task's name.
        jacobian: ``(k, nv)``; drift: ``(k,)``; acceleration: ``(k,)`` desired task acceleration
            (the PD law); error: ``(k,)`` current error; weight: scalar.
    """

    name: str
    jacobian: np.ndarray
    drift: np.ndarray
    acceleration: np.ndarray
    error: np.ndarray
    weight: float


class Task(ABC):
    """An acceleration-level task with a PD law (docs/controllers.md, "Tasks").

    A task gives, at a snapshot ``s``: its error ``e`` (target minus current value, world frame),
    Jacobian ``J (k, nv)``, drift ``Jdot v (k,)`` (task acceleration at zero ``qdd``), velocity
    ``J v``; its targets give a reference velocity and acceleration (default 0).

    Args:
        name: label used in logs.
        gains: :class:`TaskGains` (or anything :meth:`TaskGains.from_value` accepts).
    """

    #: Number of rows ``k``.
    dim: int = 3

    def __init__(self, name: str, gains: TaskGains | Any):
        self.name = name
        self.gains = TaskGains.from_value(gains)

    @abstractmethod
    def error(self, s: DynamicsSnapshot) -> np.ndarray:
        """``(k,)`` target minus current value (task units, world frame)."""

    @abstractmethod
    def jacobian(self, s: DynamicsSnapshot) -> np.ndarray:
        """``(k, nv)`` task Jacobian."""

    @abstractmethod
    def drift(self, s: DynamicsSnapshot) -> np.ndarray:
        """``(k,)`` ``Jdot v``: task acceleration at zero ``qdd``."""

    def velocity(self, s: DynamicsSnapshot) -> np.ndarray:
        """``(k,)`` task velocity ``J v``."""
        return self.jacobian(s) @ s.v

    def reference_velocity(self) -> np.ndarray | float:
        """Feed-forward task velocity (default 0)."""
        return 0.0

    def reference_acceleration(self) -> np.ndarray | float:
        """Feed-forward task acceleration (default 0)."""
        return 0.0

    def desired_acceleration(
        self, s: DynamicsSnapshot, error: np.ndarray | None = None
    ) -> np.ndarray:
        """The PD law, ``(k,)``: ``xddot_ref + kp e + kd (xdot_ref - J v)`` (``error``: ``e`` if
        already known)."""
        g = self.gains
        e = self.error(s) if error is None else error
        return (
            self.reference_acceleration()
            + g.kp * e
            + g.kd * (self.reference_velocity() - self.velocity(s))
        )

    def rows(self, s: DynamicsSnapshot) -> TaskRows:
        """The task evaluated at ``s`` (see :class:`TaskRows`)."""
        e = self.error(s)
        return TaskRows(
            self.name,
            self.jacobian(s),
            self.drift(s),
            self.desired_acceleration(s, e),
            e,
            self.gains.weight,
        )


def _vec3(value, what: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise WbsimError(f"{what} must be a finite (3,) array, got {value!r}")
    return arr.copy()


class ComTask(Task):
    """Centre of mass position, world frame: error ``c_target - c`` (m), Jacobian
    ``pin.jacobianCenterOfMass`` ``(3, nv)``, drift ``data.acom[0]`` at zero ``qdd`` (m/s^2).

    Args:
        target: ``(3,)`` world CoM target, m.
        gains: PD gains and weight.
        target_velocity: ``(3,)`` world CoM velocity feed-forward, m/s (default 0).
        target_acceleration: ``(3,)`` world CoM acceleration feed-forward, m/s^2 (default 0).
    """

    def __init__(
        self,
        target: np.ndarray,
        gains,
        target_velocity: np.ndarray | None = None,
        name: str = "com",
        target_acceleration: np.ndarray | None = None,
    ):
        super().__init__(name, gains)
        self.set_target(target, target_velocity, target_acceleration)

    def set_target(
        self,
        target: np.ndarray,
        target_velocity: np.ndarray | None = None,
        target_acceleration: np.ndarray | None = None,
    ) -> None:
        """Set the ``(3,)`` world target (m) and optional velocity (m/s) and acceleration
        (m/s^2)."""
        self.target = _vec3(target, "CoM target")
        self.target_velocity = (
            np.zeros(3)
            if target_velocity is None
            else _vec3(target_velocity, "CoM target velocity")
        )
        self.target_acceleration = (
            np.zeros(3)
            if target_acceleration is None
            else _vec3(target_acceleration, "CoM target acceleration")
        )

    def error(self, s):
        return self.target - s.com

    def jacobian(self, s):
        return s.com_jacobian

    def drift(self, s):
        return s.com_drift

    def velocity(self, s):
        return s.com_velocity

    def reference_velocity(self):
        return self.target_velocity

    def reference_acceleration(self):
        return self.target_acceleration


class FramePositionTask(Task):
    """Position of a frame origin, world frame: error ``p_target - p`` (m), Jacobian the linear
    rows of the LOCAL_WORLD_ALIGNED frame Jacobian, drift its classical linear acceleration at
    zero ``qdd``.

    Args:
        frame_id: Pinocchio frame id.
        target: ``(3,)`` world position target, m.
        gains: PD gains and weight.
    """

    def __init__(self, frame_id: int, target: np.ndarray, gains, name: str = "frame_position"):
        super().__init__(name, gains)
        self.frame_id = int(frame_id)
        self.set_target(target)

    def set_target(
        self,
        target: np.ndarray,
        target_velocity: np.ndarray | None = None,
        target_acceleration: np.ndarray | None = None,
    ) -> None:
        """Set the ``(3,)`` world target (m) and optional velocity (m/s) and acceleration
        (m/s^2)."""
        self.target = _vec3(target, f"{self.name} target")
        self.target_velocity = (
            np.zeros(3)
            if target_velocity is None
            else _vec3(target_velocity, f"{self.name} target velocity")
        )
        self.target_acceleration = (
            np.zeros(3)
            if target_acceleration is None
            else _vec3(target_acceleration, f"{self.name} target acceleration")
        )

    def error(self, s):
        return self.target - s.frame(self.frame_id).position

    def jacobian(self, s):
        return s.frame(self.frame_id).jacobian[0:3]

    def drift(self, s):
        return s.frame(self.frame_id).drift[0:3]

    def velocity(self, s):
        return s.frame(self.frame_id).velocity[0:3]

    def reference_velocity(self):
        return self.target_velocity

    def reference_acceleration(self):
        return self.target_acceleration


class FrameOrientationTask(Task):
    """Orientation of a frame, world frame: error ``log3(R_target R^T)`` (rad, the rotation vector
    that takes the current orientation to the target), Jacobian the angular rows of the
    LOCAL_WORLD_ALIGNED frame Jacobian, drift its angular acceleration at zero ``qdd`` (rad/s^2).
    For small errors ``d/dt e = -omega``, so the PD law ``kp e - kd omega`` is consistent.

    Args:
        frame_id: Pinocchio frame id.
        target_rotation: ``(3, 3)`` target orientation (frame to world).
        gains: PD gains and weight.
    """

    def __init__(
        self, frame_id: int, target_rotation: np.ndarray, gains, name: str = "frame_orientation"
    ):
        super().__init__(name, gains)
        self.frame_id = int(frame_id)
        self.set_target(target_rotation)

    def set_target(self, target_rotation: np.ndarray) -> None:
        """Set the ``(3, 3)`` target rotation (frame to world); it must be a rotation matrix."""
        R = np.asarray(target_rotation, dtype=float)
        if (
            R.shape != (3, 3)
            or not np.all(np.isfinite(R))
            or not np.allclose(R.T @ R, np.eye(3), atol=1e-6)
        ):
            raise WbsimError(f"{self.name}: target_rotation must be a (3, 3) rotation matrix")
        self.target = R.copy()

    def error(self, s):
        return pin.log3(self.target @ s.frame(self.frame_id).rotation.T)

    def jacobian(self, s):
        return s.frame(self.frame_id).jacobian[3:6]

    def drift(self, s):
        return s.frame(self.frame_id).drift[3:6]

    def velocity(self, s):
        return s.frame(self.frame_id).velocity[3:6]


class PostureTask(Task):
    """Actuated joint positions: error ``q_ref - q_joints`` (rad, ``(n_joints,)`` in the order of
    ``q_index``), Jacobian the rows of the identity at ``v_index`` (``(n_joints, nv)``), drift 0.

    Args:
        q_index: ``(n_joints,)`` indices of the joints in Pinocchio's ``q``.
        v_index: ``(n_joints,)`` indices of the same joints in Pinocchio's ``v``.
        target: ``(n_joints,)`` reference joint angles, rad.
        gains: PD gains and weight.
        nv: dimension of ``v``.
    """

    def __init__(
        self,
        q_index: np.ndarray,
        v_index: np.ndarray,
        target: np.ndarray,
        gains,
        nv: int,
        name: str = "posture",
    ):
        super().__init__(name, gains)
        self.q_index = np.asarray(q_index, dtype=int)
        self.v_index = np.asarray(v_index, dtype=int)
        self.dim = len(self.v_index)
        self._J = np.zeros((self.dim, nv))
        self._J[np.arange(self.dim), self.v_index] = 1.0
        self.set_target(target)

    def set_target(self, target: np.ndarray) -> None:
        """Set the ``(n_joints,)`` reference angles, rad."""
        t = np.asarray(target, dtype=float)
        if t.shape != self.q_index.shape or not np.all(np.isfinite(t)):
            raise WbsimError(f"posture target must be a finite {self.q_index.shape} array")
        self.target = t.copy()

    def error(self, s):
        return self.target - s.q[self.q_index]

    def jacobian(self, s):
        return self._J

    def drift(self, s):
        return np.zeros(self.dim)

    def velocity(self, s):
        return s.v[self.v_index]


class CentroidalAngularMomentumTask(Task):
    """Rate of the centroidal angular momentum ``L`` (about the CoM, world axes, N·m·s): the
    angular rows of the centroidal momentum equation ``h_G' = A_G qdd + A_G' v`` (Orin, Goswami
    and Lee 2013; seed "dynamic-complementarity-conditions", centroidal momentum). Jacobian
    ``A_G[3:6]`` ``(3, nv)``, drift ``(A_G' v)[3:6]`` (N·m), velocity ``L = A_G[3:6] v``, all
    from ``pin.computeCentroidalMapTimeVariation`` on the task's own Pinocchio data (it does not
    touch the snapshot's).

    ``L`` has no position, so the law is first order: ``L'_des = L'_ref + kd (L_ref - L)``
    (N·m; ``kd = 4 pi zeta f`` of the gains, ``kp`` unused); the error is ``L_ref - L``.

    Args:
        model: the Pinocchio model.
        gains: PD gains and weight.
        target: ``(3,)`` ``L_ref``, N·m·s (default 0: the momentum held at zero).
        target_rate: ``(3,)`` ``L'_ref`` feed-forward, N·m (default 0).
    """

    def __init__(
        self,
        model: pin.Model,
        gains,
        target: np.ndarray | None = None,
        target_rate: np.ndarray | None = None,
        name: str = "angular_momentum",
    ):
        super().__init__(name, gains)
        self.model, self._data = model, model.createData()
        self._at: DynamicsSnapshot | None = None  # the snapshot the data's terms are of
        self.set_target(target, target_rate)

    def set_target(
        self, target: np.ndarray | None = None, target_rate: np.ndarray | None = None
    ) -> None:
        """Set ``L_ref`` ``(3,)`` N·m·s and ``L'_ref`` ``(3,)`` N·m (``None``: 0)."""
        self.target = np.zeros(3) if target is None else _vec3(target, f"{self.name} target")
        self.target_rate = (
            np.zeros(3) if target_rate is None else _vec3(target_rate, f"{self.name} target rate")
        )

    def _terms(self, s: DynamicsSnapshot) -> pin.Data:
        if self._at is not s:  # once per snapshot (held, so its id cannot be reused)
            pin.computeCentroidalMapTimeVariation(self.model, self._data, s.q, s.v)
            self._at = s
        return self._data

    def error(self, s):
        return self.target - self.velocity(s)

    def jacobian(self, s):
        return self._terms(s).Ag[3:6]

    def drift(self, s):
        return self._terms(s).dAg[3:6] @ s.v

    def velocity(self, s):
        return self._terms(s).Ag[3:6] @ s.v

    def reference_velocity(self):
        return self.target

    def reference_acceleration(self):
        return self.target_rate

    def desired_acceleration(self, s, error=None):
        """``L'_des = L'_ref + kd (L_ref - L)`` ``(3,)`` N·m: the PD law with ``kp e`` left out
        (the momentum has no position)."""
        g = self.gains
        return self.target_rate + g.kd * (self.target - self.velocity(s))


# ------------------------------------------------------------------------------------------------
# the stack
# ------------------------------------------------------------------------------------------------
class TaskLeastSquares(NamedTuple):
    """A built task stack: ``min_z ||A z - b||^2 + regularization ||z||^2`` and
    ``qdd = offset + basis z`` (``basis``, ``offset`` ``None``: ``qdd = z``).

    Attributes:
        A: ``(k, nz)``; b: ``(k,)``; regularization: > 0; basis: ``(nv, nz)`` or ``None``;
        offset: ``(nv,)`` or ``None``.
    """

    A: np.ndarray
    b: np.ndarray
    regularization: float
    basis: np.ndarray | None = None
    offset: np.ndarray | None = None


def build_task_stack(
    rows: Sequence[TaskRows],
    nv: int,
    regularization: float = 1e-6,
    nullspace: tuple[np.ndarray, np.ndarray] | None = None,
) -> TaskLeastSquares:
    """The weighted least-squares problem of the task rows (pure function).

    Without ``nullspace``: ``min_qdd sum_i w_i ||J_i qdd + drift_i - a_i||^2 + reg ||qdd||^2``.
    With ``nullspace = (N, qdd_p)`` (``N (nv, nv)`` a projector onto the contact-consistent
    directions, ``qdd_p (nv,)`` a contact-consistent particular acceleration): the same cost over
    ``qdd = qdd_p + N z`` with ``reg ||z||^2``, so the contacts come first and the tasks share the
    rest by weight (docs/controllers.md, "Task stack").
    """
    if rows:
        A = np.vstack([math.sqrt(r.weight) * r.jacobian for r in rows])
        b = np.concatenate([math.sqrt(r.weight) * (r.acceleration - r.drift) for r in rows])
    else:
        A, b = np.zeros((0, nv)), np.zeros(0)
    if nullspace is None:
        return TaskLeastSquares(A, b, float(regularization))
    N, qdd_p = nullspace
    return TaskLeastSquares(A @ N, b - A @ qdd_p, float(regularization), N, qdd_p)


def solve_task_stack(problem: TaskLeastSquares) -> np.ndarray:
    """``qdd_des (nv,)`` of a built task stack: the regularised normal equations
    ``(A^T A + reg I) z = A^T b`` by Cholesky (LAPACK through :func:`cholesky`), then
    ``qdd = offset + basis z``.

    Raises:
        WbsimError: non-finite rows, or ``regularization <= 0`` with too few rows.
    """
    A, b, reg, basis, offset = problem
    H = A.T @ A + reg * np.eye(A.shape[1])
    rhs = A.T @ b
    if not (np.isfinite(H).all() and np.isfinite(rhs).all()):
        raise WbsimError("non-finite task Jacobian or acceleration in the task stack")
    z = cholesky_solve(cholesky(H, "task-stack normal matrix", None), rhs)
    return z if basis is None else offset + basis @ z
