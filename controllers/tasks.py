"""Acceleration-level tasks and their weighted least-squares stack (for :mod:`contact_projected_id`).

Owns: the per-step kinematic/dynamic snapshot that tasks read (:class:`DynamicsSnapshot`, built by one
``pinocchio.computeAllTerms`` pass), the task classes (CoM, frame position, frame orientation, posture)
and :func:`solve_task_stack`, which turns the tasks into one desired generalised acceleration
``qdd_des``.

Every task ``i`` has, at the current state ``(q, v)``:

* an error ``e_i`` (target minus current value, task frame),
* a Jacobian ``J_i (k_i, nv)`` with task velocity ``xdot_i = J_i v``,
* a drift ``(Jdot_i v) (k_i,)``: the task acceleration at zero ``qdd``, so that
  ``xddot_i = J_i qdd + Jdot_i v``. It comes from Pinocchio's classical accelerations at zero ``qdd``
  (``getFrameClassicalAcceleration(..., LOCAL_WORLD_ALIGNED)``; ``data.acom[0]`` for the CoM),
* a PD law giving the desired task acceleration
  ``a_i = xddot_ref + kp e_i + kd (xdot_ref - J_i v)``, with ``kp = (2 pi f)^2`` and
  ``kd = 2 zeta (2 pi f)`` (natural frequency ``f`` in Hz, damping ratio ``zeta``),
* a weight ``w_i``.

The stack minimises ``sum_i w_i ||J_i qdd + Jdot_i v - a_i||^2 + reg ||qdd||^2`` (weighted least
squares, solved through a Cholesky factorisation of the regularised normal equations; no explicit
inverse). Optionally the tasks are solved inside the affine set of contact-consistent accelerations
``qdd = qdd_p + N_c z`` (contacts as the top priority of a two-level stack).

Frames: "world" is Pinocchio's world frame (z up); Jacobians and drifts are LOCAL_WORLD_ALIGNED
(origin at the frame, axes of the world). Velocities ``v`` follow Pinocchio (base linear and angular
velocity in the base frame).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pinocchio as pin
from scipy.linalg.lapack import dpotrf, dpotrs

from wbsim.errors import WbsimError

__all__ = [
    "ComTask",
    "DynamicsSnapshot",
    "FrameKinematics",
    "FrameOrientationTask",
    "FramePositionTask",
    "PostureTask",
    "Task",
    "TaskGains",
    "TaskRows",
    "cholesky",
    "cholesky_solve",
    "compute_snapshot",
    "solve_task_stack",
]


def cholesky(A: np.ndarray, what: str = "matrix", pivot_rtol: float | None = 1e-13) -> np.ndarray:
    """Lower Cholesky factor of the SPD matrix ``A (n, n)`` (LAPACK ``dpotrf`` through
    ``scipy.linalg.lapack``; only the lower triangle of ``A`` is read).

    Raises:
        WbsimError: ``A`` is not (numerically) positive definite: ``dpotrf`` fails, or (unless
            ``pivot_rtol`` is ``None``) a pivot ``L_ii^2`` is below ``pivot_rtol`` times the largest
            diagonal entry of ``A`` (a rank-deficient ``A`` that rounding made barely positive).
    """
    L, info = dpotrf(A, lower=1, clean=0)
    if info != 0:
        raise WbsimError(f"{what} is not symmetric positive definite (dpotrf info={info})")
    if pivot_rtol is None:
        return L
    d = L.diagonal()
    if d.size and d.min() ** 2 <= pivot_rtol * A.diagonal().max():
        raise WbsimError(f"{what} is (numerically) singular: smallest Cholesky pivot "
                         f"{d.min() ** 2:.3g}")
    return L


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
        w = 2.0 * np.pi * self.frequency_hz
        object.__setattr__(self, "_kp", w * w)
        object.__setattr__(self, "_kd", 2.0 * self.damping_ratio * w)
        if not (np.isfinite(self.frequency_hz) and self.frequency_hz > 0):
            raise WbsimError(f"TaskGains: frequency_hz must be > 0, got {self.frequency_hz!r}")
        if not (np.isfinite(self.damping_ratio) and self.damping_ratio >= 0):
            raise WbsimError(f"TaskGains: damping_ratio must be >= 0, got {self.damping_ratio!r}")
        if not (np.isfinite(self.weight) and self.weight >= 0):
            raise WbsimError(f"TaskGains: weight must be >= 0, got {self.weight!r}")

    @property
    def kp(self) -> float:
        """Stiffness ``(2 pi f)^2``, 1/s^2."""
        return self._kp

    @property
    def kd(self) -> float:
        """Damping ``2 zeta (2 pi f)``, 1/s."""
        return self._kd

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
                raise WbsimError(f"TaskGains: unknown keys {sorted(unknown)}; known: {sorted(known)}")
            return cls(**value)
        if isinstance(value, (tuple, list)) and 1 <= len(value) <= 3:
            return cls(*(float(x) for x in value))
        raise WbsimError(f"TaskGains: cannot build gains from {value!r}")


# ------------------------------------------------------------------------------------------------
# snapshot of the model at (q, v)
# ------------------------------------------------------------------------------------------------
@dataclass
class FrameKinematics:
    """Kinematics of one Pinocchio frame at ``(q, v)``.

    Attributes:
        position: ``(3,)`` frame origin in the world, m.
        rotation: ``(3, 3)`` frame orientation (frame to world).
        jacobian: ``(6, nv)`` LOCAL_WORLD_ALIGNED Jacobian, rows ``[linear (m/s), angular (rad/s)]``.
        drift: ``(6,)`` ``Jdot v``: classical acceleration of the frame at zero ``qdd``, LOCAL_WORLD_ALIGNED,
            ``[linear (m/s^2), angular (rad/s^2)]`` (``pin.getFrameClassicalAcceleration``).
        velocity: ``(6,)`` ``J v``, LOCAL_WORLD_ALIGNED ``[linear (m/s), angular (rad/s)]``.
    """

    position: np.ndarray
    rotation: np.ndarray
    jacobian: np.ndarray
    drift: np.ndarray
    velocity: np.ndarray


@dataclass
class DynamicsSnapshot:
    """Everything the controller reads from Pinocchio at one state, computed once per step.

    Build it with :func:`compute_snapshot`.

    Attributes:
        model, data: the Pinocchio model and the data the pass filled (``computeAllTerms``).
        q: ``(nq,)`` configuration; v: ``(nv,)`` velocity (Pinocchio convention).
        M: ``(nv, nv)`` joint-space inertia matrix (symmetric, armature included), kg·m² / kg.
        h: ``(nv,)`` nonlinear effects ``C(q, v) v + g(q)`` (``data.nle``), N·m / N.
        g: ``(nv,)`` generalised gravity (``data.g``), N·m / N.
        com: ``(3,)`` CoM in the world, m; com_velocity: ``(3,)`` m/s.
        com_jacobian: ``(3, nv)`` ``jacobianCenterOfMass`` (world frame).
        com_drift: ``(3,)`` CoM acceleration at zero ``qdd`` (``Jcom_dot v``), m/s^2.

    ``h``, ``g`` and ``com_jacobian`` are views into ``data``: valid until the next pass on ``data``.
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
            placement = pin.updateFramePlacement(model, data, frame_id)
            J = pin.getFrameJacobian(model, data, frame_id, pin.LOCAL_WORLD_ALIGNED)
            drift = pin.getFrameClassicalAcceleration(
                model, data, frame_id, pin.LOCAL_WORLD_ALIGNED).vector
            fk = FrameKinematics(placement.translation.copy(), placement.rotation.copy(), J,
                                 drift.copy(), J @ self.v)
            self._frames[frame_id] = fk
        return fk


_LOWER: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _lower_indices(n: int) -> tuple[np.ndarray, np.ndarray]:
    idx = _LOWER.get(n)
    if idx is None:
        idx = _LOWER[n] = np.tril_indices(n, -1)
    return idx


def compute_snapshot(model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray) -> DynamicsSnapshot:
    """One dynamics pass at ``(q (nq,), v (nv,))``.

    Calls ``pin.computeAllTerms`` (M, nle, g, joint Jacobians, CoM and its Jacobian; it also leaves in
    ``data.a`` the spatial accelerations at zero ``qdd``, which is what the drift terms need, so no
    second ``forwardKinematics(q, v, 0 * v)`` pass is run) and
    ``pin.centerOfMass(model, data, ACCELERATION)`` for the CoM drift from those accelerations.
    ``tests/test_contact_projected_id.py`` checks the drifts against
    ``getFrameJacobianTimeVariation`` and finite differences.
    """
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    if q.shape != (model.nq,) or v.shape != (model.nv,):
        raise WbsimError(f"state shapes must be q ({model.nq},), v ({model.nv},); got {q.shape}, {v.shape}")
    pin.computeAllTerms(model, data, q, v)
    M = data.M.copy()  # crba fills (at least) the upper triangle: mirror it
    lower = _lower_indices(model.nv)
    M[lower] = M.T[lower]
    com = data.com[0].copy()
    com_velocity = data.vcom[0].copy()
    pin.centerOfMass(model, data, pin.KinematicLevel.ACCELERATION, False)
    return DynamicsSnapshot(
        model=model, data=data, q=q, v=v, M=M, h=data.nle, g=data.g, com=com,
        com_velocity=com_velocity, com_jacobian=data.Jcom, com_drift=data.acom[0].copy(),
    )


# ------------------------------------------------------------------------------------------------
# tasks
# ------------------------------------------------------------------------------------------------
@dataclass
class TaskRows:
    """One task evaluated at a snapshot: ``J qdd + drift ~= acceleration`` with weight ``weight``.

    Attributes:
        jacobian: ``(k, nv)``; drift: ``(k,)``; acceleration: ``(k,)`` desired task acceleration
            (PD law); error: ``(k,)`` current error; weight: scalar or ``(k,)``.
    """

    name: str
    jacobian: np.ndarray
    drift: np.ndarray
    acceleration: np.ndarray
    error: np.ndarray
    weight: float | np.ndarray


class Task(ABC):
    """An acceleration-level task with a PD law (see the module docstring for the formulas).

    Args:
        name: label used in logs.
        gains: :class:`TaskGains` (or anything :meth:`TaskGains.from_value` accepts).
    """

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

    def desired_acceleration(self, s: DynamicsSnapshot, error: np.ndarray | None = None) -> np.ndarray:
        """``(k,)`` ``xddot_ref + kp e + kd (xdot_ref - J v)`` (``error``: ``e`` if already known)."""
        g = self.gains
        e = self.error(s) if error is None else error
        return (self.reference_acceleration() + g.kp * e
                + g.kd * (self.reference_velocity() - self.velocity(s)))

    def rows(self, s: DynamicsSnapshot) -> TaskRows:
        """The task evaluated at ``s`` (see :class:`TaskRows`)."""
        e = self.error(s)
        return TaskRows(self.name, self.jacobian(s), self.drift(s), self.desired_acceleration(s, e),
                        e, self.gains.weight)


def _vec3(value, what: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise WbsimError(f"{what} must be a finite (3,) array, got {value!r}")
    return arr.copy()


class ComTask(Task):
    """Centre of mass position, world frame.

    Error ``c_target - c`` (m), Jacobian ``pin.jacobianCenterOfMass`` ``(3, nv)``, drift
    ``data.acom[0]`` at zero ``qdd`` (m/s^2).

    Args:
        target: ``(3,)`` world CoM target, m.
        gains: PD gains and weight.
        target_velocity: ``(3,)`` world CoM velocity feed-forward, m/s (default 0).
    """

    def __init__(self, target: np.ndarray, gains, target_velocity: np.ndarray | None = None,
                 name: str = "com"):
        super().__init__(name, gains)
        self.set_target(target, target_velocity)

    def set_target(self, target: np.ndarray, target_velocity: np.ndarray | None = None) -> None:
        """Set the ``(3,)`` world target (m) and optional velocity (m/s)."""
        self.target = _vec3(target, "CoM target")
        self.target_velocity = (np.zeros(3) if target_velocity is None
                                else _vec3(target_velocity, "CoM target velocity"))

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


class FramePositionTask(Task):
    """Position of a frame origin, world frame.

    Error ``p_target - p`` (m), Jacobian: the linear rows of the LOCAL_WORLD_ALIGNED frame Jacobian
    (``pin.getFrameJacobian``), drift: classical linear acceleration at zero ``qdd``.

    Args:
        frame_id: Pinocchio frame id.
        target: ``(3,)`` world position target, m.
        gains: PD gains and weight.
    """

    def __init__(self, frame_id: int, target: np.ndarray, gains, name: str = "frame_position"):
        super().__init__(name, gains)
        self.frame_id = int(frame_id)
        self.set_target(target)

    def set_target(self, target: np.ndarray, target_velocity: np.ndarray | None = None) -> None:
        """Set the ``(3,)`` world target (m) and optional velocity (m/s)."""
        self.target = _vec3(target, f"{self.name} target")
        self.target_velocity = (np.zeros(3) if target_velocity is None
                                else _vec3(target_velocity, f"{self.name} target velocity"))

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


class FrameOrientationTask(Task):
    """Orientation of a frame, world frame.

    Error ``log3(R_target R^T)`` (rad, rotation vector in the world frame: the rotation that takes the
    current orientation to the target), Jacobian: the angular rows of the LOCAL_WORLD_ALIGNED frame
    Jacobian, drift: angular acceleration at zero ``qdd`` (rad/s^2). For small errors ``d/dt e = -omega``,
    so the PD law ``kp e - kd omega`` is consistent.

    Args:
        frame_id: Pinocchio frame id.
        target_rotation: ``(3, 3)`` target orientation (frame to world).
        gains: PD gains and weight.
    """

    def __init__(self, frame_id: int, target_rotation: np.ndarray, gains,
                 name: str = "frame_orientation"):
        super().__init__(name, gains)
        self.frame_id = int(frame_id)
        self.set_target(target_rotation)

    def set_target(self, target_rotation: np.ndarray) -> None:
        """Set the ``(3, 3)`` target rotation (frame to world); it must be a rotation matrix."""
        R = np.asarray(target_rotation, dtype=float)
        if R.shape != (3, 3) or not np.all(np.isfinite(R)) or not np.allclose(R.T @ R, np.eye(3),
                                                                             atol=1e-6):
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
    """Actuated joint positions.

    Error ``q_ref - q_joints`` (rad, ``(n_joints,)`` in the order of ``q_index``), Jacobian: the rows of
    the identity at ``v_index`` (``(n_joints, nv)``), drift 0.

    Args:
        q_index: ``(n_joints,)`` indices of the joints in Pinocchio's ``q``.
        v_index: ``(n_joints,)`` indices of the same joints in Pinocchio's ``v``.
        target: ``(n_joints,)`` reference joint angles, rad.
        gains: PD gains and weight.
    """

    def __init__(self, q_index: np.ndarray, v_index: np.ndarray, target: np.ndarray, gains, nv: int,
                 name: str = "posture"):
        super().__init__(name, gains)
        self.q_index = np.asarray(q_index, dtype=int)
        self.v_index = np.asarray(v_index, dtype=int)
        self._J = np.zeros((len(self.v_index), nv))
        self._J[np.arange(len(self.v_index)), self.v_index] = 1.0
        self._drift = np.zeros(len(self.v_index))
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
        return self._drift

    def velocity(self, s):
        return s.v[self.v_index]


# ------------------------------------------------------------------------------------------------
# the stack
# ------------------------------------------------------------------------------------------------
def solve_task_stack(
    rows: Sequence[TaskRows],
    nv: int,
    regularization: float = 1e-6,
    nullspace: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Desired generalised acceleration ``qdd_des (nv,)`` from weighted task rows.

    Without ``nullspace``: ``argmin_qdd sum_i w_i ||J_i qdd + drift_i - a_i||^2 + reg ||qdd||^2``.

    With ``nullspace = (N, qdd_p)`` (``N (nv, nv)`` a projector onto the contact-consistent directions,
    ``qdd_p (nv,)`` a contact-consistent particular acceleration): the same cost over
    ``qdd = qdd_p + N z``, with ``reg ||z||^2``; the result is contact-consistent by construction
    (contacts are the top priority, the tasks share the rest by weight).

    Solved with a Cholesky factorisation of the regularised normal equations (LAPACK through
    ``scipy.linalg.lapack``), no explicit inverse.

    Raises:
        WbsimError: ``regularization <= 0`` with no rows, or non-finite task rows.
    """
    if rows:
        sw = [math.sqrt(r.weight) if isinstance(r.weight, (int, float)) else np.sqrt(r.weight)
              for r in rows]
        A = np.vstack([(w[:, None] if np.ndim(w) else w) * r.jacobian for w, r in zip(sw, rows)])
        b = np.concatenate([w * (r.acceleration - r.drift) for w, r in zip(sw, rows)])
    else:
        A, b = np.zeros((0, nv)), np.zeros(0)
    if nullspace is not None:
        N, qdd_p = nullspace
        b = b - A @ qdd_p
        A = A @ N
    H = A.T @ A
    H.flat[::nv + 1] += regularization
    rhs = A.T @ b
    if not (np.isfinite(H).all() and np.isfinite(rhs).all()):
        raise WbsimError("non-finite task Jacobian or acceleration in the task stack")
    z = cholesky_solve(cholesky(H, "task-stack normal matrix", None), rhs)  # SPD: reg > 0
    if nullspace is not None:
        return qdd_p + nullspace[0] @ z
    return z
