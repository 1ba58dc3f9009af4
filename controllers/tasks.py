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
from scipy.linalg.lapack import dposv, dpotrf, dpotrs

from wbsim.controllers.base import _as_slice
from wbsim.errors import is_real
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
    "TaskStack",
    "check_cholesky",
    "cholesky",
    "cholesky_solve",
    "compute_snapshot",
    "solve_task_stack",
]


# ufunc reductions: ndarray.min / max / sum add a Python-level wrapper (these run every step)
_amin, _amax, _sum = np.minimum.reduce, np.maximum.reduce, np.add.reduce


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


def check_cholesky(L: np.ndarray, A: np.ndarray, info: int, what: str = "matrix",
                   pivot_rtol: float | None = 1e-13) -> None:
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
    # ufunc reductions: ndarray.min / max add a Python-level wrapper (this runs every step)
    if d.size and _amin(d) ** 2 <= pivot_rtol * _amax(A.diagonal()):
        raise WbsimError(f"{what} is (numerically) singular: smallest Cholesky pivot "
                         f"{d.min() ** 2:.3g}")


def _posv(A: np.ndarray, B: np.ndarray, what: str) -> np.ndarray:
    """``A^-1 B`` for the SPD ``A (n, n)`` (only its lower triangle is read) by LAPACK ``dposv``:
    ``dpotrf`` and ``dpotrs`` in one call, the same result as ``cholesky_solve(cholesky(A, what,
    None), B)``. Raises :class:`WbsimError` as :func:`cholesky` does when ``A`` is not SPD."""
    L, X, info = dposv(A, B, lower=1)
    check_cholesky(L, A, info, what, None)
    return X


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
                raise WbsimError(f"TaskGains: {f.name} must be a real number, got "
                                 f"{getattr(self, f.name)!r}")
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
            return cls(*(float(x) if is_real(x) else x for x in value))
        raise WbsimError(f"TaskGains: cannot build gains from {value!r}")


# ------------------------------------------------------------------------------------------------
# snapshot of the model at (q, v)
# ------------------------------------------------------------------------------------------------
class FrameKinematics:
    """Kinematics of one Pinocchio frame at ``(q, v)``.

    Attributes:
        position: ``(3,)`` frame origin in the world, m.
        rotation: ``(3, 3)`` frame orientation (frame to world).
        jacobian: ``(6, nv)`` LOCAL_WORLD_ALIGNED Jacobian, rows ``[linear (m/s), angular (rad/s)]``.
        drift: ``(6,)`` ``Jdot v``: classical acceleration of the frame at zero ``qdd``, LOCAL_WORLD_ALIGNED,
            ``[linear (m/s^2), angular (rad/s^2)]`` (``pin.getFrameClassicalAcceleration``).
        velocity: ``(6,)`` ``J v``, LOCAL_WORLD_ALIGNED ``[linear (m/s), angular (rad/s)]`` (computed on
            first access: the contact feet never need it).

    From :meth:`DynamicsSnapshot.frame`, ``position`` and ``rotation`` are views of one owned
    ``(4, 4)`` homogeneous placement (not copies of the data's placement).
    """

    __slots__ = ("_v", "_velocity", "drift", "jacobian", "position", "rotation")

    def __init__(self, position: np.ndarray, rotation: np.ndarray, jacobian: np.ndarray,
                 drift: np.ndarray, v: np.ndarray):
        self.position = position
        self.rotation = rotation
        self.jacobian = jacobian
        self.drift = drift
        self._v = v
        self._velocity: np.ndarray | None = None

    @property
    def velocity(self) -> np.ndarray:
        if self._velocity is None:
            self._velocity = self.jacobian @ self._v
        return self._velocity

    def __repr__(self) -> str:
        return f"FrameKinematics(position={self.position!r})"


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
            # one owned (4, 4) homogeneous matrix: position and rotation are views of it (no copy)
            H = pin.updateFramePlacement(model, data, frame_id).homogeneous
            J = pin.getFrameJacobian(model, data, frame_id, _LWA)
            drift = pin.getFrameClassicalAcceleration(model, data, frame_id, _LWA).vector
            fk = FrameKinematics(H[0:3, 3], H[0:3, 0:3], J, drift.copy(), self.v)
            self._frames[frame_id] = fk
        return fk


_LWA = pin.LOCAL_WORLD_ALIGNED
_MIRROR: dict[int, np.ndarray] = {}


def _mirror_indices(n: int) -> np.ndarray:
    """``(n * n,)`` flat indices, into the column-major (Fortran) storage of an ``(n, n)`` matrix, of
    the upper-triangle entry ``(min(i, j), max(i, j))`` for each entry ``(i, j)`` of a C-ordered
    ``(n, n)`` matrix: ``take`` with them gives the symmetric matrix of the upper triangle."""
    idx = _MIRROR.get(n)
    if idx is None:
        i, j = np.divmod(np.arange(n * n), n)
        idx = _MIRROR[n] = np.maximum(i, j) * n + np.minimum(i, j)
    return idx


def compute_snapshot(model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray,
                     out: DynamicsSnapshot | None = None) -> DynamicsSnapshot:
    """One dynamics pass at ``(q (nq,), v (nv,))``.

    Calls ``pin.computeAllTerms`` (M, nle, g, joint Jacobians, CoM and its Jacobian; it also leaves in
    ``data.a`` the spatial accelerations at zero ``qdd``, which is what the drift terms need, so no
    second ``forwardKinematics(q, v, 0 * v)`` pass is run) and
    ``pin.centerOfMass(model, data, ACCELERATION)`` for the CoM drift from those accelerations.
    ``tests/test_contact_projected_id.py`` checks the drifts against
    ``getFrameJacobianTimeVariation`` and finite differences.

    ``out``: a snapshot of the same ``model`` and ``data`` from an earlier call, refilled in place (its
    ``M`` buffer is reused, its frame cache cleared) and returned: a controller's per-step pass
    without allocating a new snapshot. Without it the result owns fresh arrays.
    """
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    if q.shape != (model.nq,) or v.shape != (model.nv,):
        raise WbsimError(f"state shapes must be q ({model.nq},), v ({model.nv},); got {q.shape}, {v.shape}")
    if out is not None and (out.model is not model or out.data is not data):
        raise WbsimError("compute_snapshot: out belongs to another model or data")
    pin.computeAllTerms(model, data, q, v)
    # crba fills (at least) the upper triangle: one flat take of the upper entries from Pinocchio's
    # column-major storage writes the symmetric matrix (a copy and the mirror at once)
    nv = model.nv
    M = np.empty((nv, nv)) if out is None else out.M
    np.take(data.M.ravel(order="F"), _mirror_indices(nv), out=M.reshape(-1))
    com = data.com[0].copy()
    com_velocity = data.vcom[0].copy()
    pin.centerOfMass(model, data, pin.KinematicLevel.ACCELERATION, False)
    if out is None:
        return DynamicsSnapshot(
            model=model, data=data, q=q, v=v, M=M, h=data.nle, g=data.g, com=com,
            com_velocity=com_velocity, com_jacobian=data.Jcom, com_drift=data.acom[0].copy(),
        )
    out.q, out.v, out.h, out.g = q, v, data.nle, data.g
    out.com, out.com_velocity, out.com_jacobian = com, com_velocity, data.Jcom
    out.com_drift = data.acom[0].copy()
    out._frames.clear()
    return out


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

    #: Number of rows ``k`` (3 for the point and orientation tasks).
    dim: int = 3
    #: ``True`` when :meth:`jacobian` does not depend on the state (:class:`TaskStack` then writes
    #: its rows only when the weight changes).
    constant_jacobian: bool = False
    #: ``v`` indices (a slice or an index array) when :meth:`jacobian` is the rows of the identity at
    #: them (the posture): :class:`TaskStack` then reads ``J N`` as rows of ``N`` instead of a product.
    selection: slice | np.ndarray | None = None

    def fill(self, s: DynamicsSnapshot, A: np.ndarray, b: np.ndarray, jacobian: bool = True
             ) -> np.ndarray:
        """Write this task's weighted rows of the stack in place and return its error ``e (k,)``.

        ``A (k, nv) = sqrt(w) J`` (skipped when ``jacobian`` is ``False``) and
        ``b (k,) = sqrt(w) (a - Jdot v)``, ``a`` the PD law of :meth:`desired_acceleration`: the
        rows :func:`solve_task_stack` builds from :meth:`rows`, with the same arithmetic.
        """
        g = self.gains
        sw = math.sqrt(g.weight)
        e = self.error(s)
        if jacobian:
            np.multiply(self.jacobian(s), sw, out=A)
        ra = self.reference_acceleration()
        kpe = g.kp * e
        if not (isinstance(ra, float) and ra == 0.0):
            kpe = ra + kpe
        np.subtract(kpe + g.kd * (self.reference_velocity() - self.velocity(s)), self.drift(s),
                    out=b)
        b *= sw
        return e


_ZEROS3 = (0.0, 0.0, 0.0)


def _write_pd(b: np.ndarray, sw: float, kp: float, kd: float, e: Sequence[float],
              ref_velocity: Sequence[float], velocity: Sequence[float], drift: Sequence[float]
              ) -> None:
    """``b (3,) = sw * (kp e + kd (ref_velocity - velocity) - drift)``: the PD rows of a 3-row task
    (:meth:`Task.fill`) on Python floats, the same IEEE operations in the same order as the numpy
    expression ``np.subtract(kp * e + kd * (ref_velocity - velocity), drift); b *= sw`` (bit for
    bit), without six numpy calls on 3-vectors."""
    e0, e1, e2 = e
    r0, r1, r2 = ref_velocity
    v0, v1, v2 = velocity
    d0, d1, d2 = drift
    b[0] = (kp * e0 + kd * (r0 - v0) - d0) * sw
    b[1] = (kp * e1 + kd * (r1 - v1) - d1) * sw
    b[2] = (kp * e2 + kd * (r2 - v2) - d2) * sw


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

    def fill(self, s, A, b, jacobian=True):
        """:meth:`Task.fill` with the snapshot's CoM terms read directly (same arithmetic)."""
        g = self.gains
        sw = math.sqrt(g.weight)
        e = self.target - s.com
        if jacobian:
            np.multiply(s.com_jacobian, sw, out=A)
        _write_pd(b, sw, g.kp, g.kd, e.tolist(), self.target_velocity.tolist(),
                  s.com_velocity.tolist(), s.com_drift.tolist())
        return e


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

    def fill(self, s, A, b, jacobian=True):
        """:meth:`Task.fill` reading the frame once (same arithmetic)."""
        g = self.gains
        sw = math.sqrt(g.weight)
        fk = s.frame(self.frame_id)
        e = self.target - fk.position
        if jacobian:
            np.multiply(fk.jacobian[0:3], sw, out=A)
        _write_pd(b, sw, g.kp, g.kd, e.tolist(), self.target_velocity.tolist(),
                  fk.velocity.tolist()[0:3], fk.drift.tolist()[0:3])
        return e


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

    def fill(self, s, A, b, jacobian=True):
        """:meth:`Task.fill` reading the frame once (same arithmetic; zero reference velocity)."""
        g = self.gains
        sw = math.sqrt(g.weight)
        fk = s.frame(self.frame_id)
        e = pin.log3(self.target @ fk.rotation.T)
        if jacobian:
            np.multiply(fk.jacobian[3:6], sw, out=A)
        _write_pd(b, sw, g.kp, g.kd, e.tolist(), _ZEROS3, fk.velocity.tolist()[3:6],
                  fk.drift.tolist()[3:6])
        return e


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

    constant_jacobian = True

    def __init__(self, q_index: np.ndarray, v_index: np.ndarray, target: np.ndarray, gains, nv: int,
                 name: str = "posture"):
        super().__init__(name, gains)
        self.q_index = np.asarray(q_index, dtype=int)
        self.v_index = np.asarray(v_index, dtype=int)
        # contiguous indices (a free-flyer root): slices give views, not fancy-indexed copies
        self._q_sel = _as_slice(self.q_index)
        self._v_sel = _as_slice(self.v_index)
        self.dim = len(self.v_index)
        self.selection = self._v_sel
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
        return self.target - s.q[self._q_sel]

    def jacobian(self, s):
        return self._J

    def drift(self, s):
        return self._drift

    def velocity(self, s):
        return s.v[self._v_sel]

    def fill(self, s, A, b, jacobian=True):
        """:meth:`Task.fill` without the zero drift (``a - 0 = a`` exactly)."""
        g = self.gains
        sw = math.sqrt(g.weight)
        e = self.target - s.q[self._q_sel]
        if jacobian:
            np.multiply(self._J, sw, out=A)
        np.multiply(g.kp * e + g.kd * (0.0 - s.v[self._v_sel]), sw, out=b)
        return e


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
    return _solve_stack(A, b, nv, regularization, nullspace)


def _solve_stack(A: np.ndarray, b: np.ndarray, nv: int, regularization: float,
                 nullspace: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """The regularised normal equations of the stacked weighted rows ``A (k, nv)``, ``b (k,)`` (see
    :func:`solve_task_stack`); ``A`` and ``b`` are not modified."""
    if nullspace is not None:
        N, qdd_p = nullspace
        b = b - A @ qdd_p
        A = A @ N
    H = A.T @ A
    H += _scaled_identity(nv, regularization)  # + reg I (x + 0.0 = x off the diagonal)
    rhs = A.T @ b
    # one finiteness test: a NaN or inf anywhere in H or rhs makes the sum non-finite
    if not math.isfinite(_sum(H, axis=None) + _sum(rhs)):
        raise WbsimError("non-finite task Jacobian or acceleration in the task stack")
    z = _posv(H, rhs, "task-stack normal matrix")  # SPD: reg > 0
    if nullspace is not None:
        return qdd_p + nullspace[0] @ z
    return z


_SCALED_IDENTITY: dict[tuple[int, float], np.ndarray] = {}


def _scaled_identity(n: int, scale: float) -> np.ndarray:
    """``scale * I (n, n)``, cached read-only (adding it beats a strided diagonal update)."""
    key = (n, scale)
    out = _SCALED_IDENTITY.get(key)
    if out is None:
        out = np.eye(n) * scale
        out.setflags(write=False)
        if len(_SCALED_IDENTITY) < 64:
            _SCALED_IDENTITY[key] = out
    return out


class TaskStack:
    """The weighted least-squares stack of a fixed list of tasks with preallocated rows: the per-step
    form of :func:`solve_task_stack` for a controller whose tasks change only with the contact set.

    :meth:`solve` writes each task's rows in place (:meth:`Task.fill`; a task with a constant
    Jacobian, the posture, only when its weight changed) and solves the same regularised normal
    equations as ``solve_task_stack([t.rows(s) for t in tasks], ...)`` (same result up to rounding;
    ``tests/test_contact_projected_id.py`` compares them). In the null space
    (``qdd = qdd_p + N z``) it works on ``[N | qdd_p]`` at once: ``A [N | qdd_p]`` in one product
    (the rows of a selection task, the posture, are rows of ``[N | qdd_p]``: no product), then
    ``[A N | b - A qdd_p]^T (A N)`` gives the normal matrix and its right-hand side together.

    Args:
        tasks: the tasks, in stack order.
        nv: dimension of ``qdd``.
        regularization: Tikhonov term (> 0).

    Attributes:
        errors: after :meth:`solve`, each task's error ``e_i (k_i,)``, in ``tasks`` order.
    """

    def __init__(self, tasks: Sequence[Task], nv: int, regularization: float = 1e-6):
        self.tasks = tuple(tasks)
        self.nv = int(nv)
        self.regularization = float(regularization)
        dims = [int(t.dim) for t in self.tasks]
        k = sum(dims)
        self.A = np.zeros((k, self.nv))
        self.b = np.zeros(k)
        ends = np.cumsum(dims).tolist()
        starts = [0] + ends[:-1]
        self._views = [(self.A[i:j], self.b[i:j]) for i, j in zip(starts, ends)]
        # [A N | A qdd_p] by blocks: runs of ordinary tasks (one product each), selection tasks
        self._ANb = np.empty((k, self.nv + 1))
        runs: list[list] = []  # [first row, end row, task or None]
        for task, i, j in zip(self.tasks, starts, ends):
            if task.selection is None and runs and runs[-1][2] is None:
                runs[-1][1] = j
            else:
                runs.append([i, j, None if task.selection is None else task])
        self._blocks = [(self._ANb[i:j], self.A[i:j] if task is None else task.selection, task)
                        for i, j, task in runs]
        self._written: list[float | None] = [None] * len(self.tasks)
        self.errors: list[np.ndarray | None] = [None] * len(self.tasks)

    def solve(self, s: DynamicsSnapshot, nullspace: tuple[np.ndarray, np.ndarray] | None = None,
              augmented: np.ndarray | None = None) -> np.ndarray:
        """``qdd_des (nv,)`` at snapshot ``s`` (see :func:`solve_task_stack` for ``nullspace`` and the
        errors raised). ``augmented``: ``[N | qdd_p]`` ``(nv, nv + 1)`` if the caller has it
        (:attr:`~wbsim.controllers.contact_projected_id.ContactProjection.augmented`); else it is
        stacked from ``nullspace``."""
        errors, written = self.errors, self._written
        for i, (task, (A, b)) in enumerate(zip(self.tasks, self._views)):
            if task.constant_jacobian:
                w = task.gains.weight
                errors[i] = task.fill(s, A, b, written[i] != w)
                written[i] = w
            else:
                errors[i] = task.fill(s, A, b)
        if nullspace is None:
            return _solve_stack(self.A, self.b, self.nv, self.regularization, None)
        nv = self.nv
        if augmented is None:
            augmented = np.column_stack(nullspace)
        ANb = self._ANb
        for out, rows, task in self._blocks:
            if task is None:
                np.matmul(rows, augmented, out=out)
            else:  # sqrt(w) S [N | qdd_p] = sqrt(w) [N | qdd_p][selection]
                np.multiply(augmented[rows], math.sqrt(task.gains.weight), out=out)
        col = ANb[:, nv]
        np.subtract(self.b, col, out=col)  # b - A qdd_p
        HrT = ANb.T @ ANb[:, :nv]  # (nv + 1, nv): [(A N)^T (A N); (b - A qdd_p)^T (A N)]
        H = HrT[:nv]
        H += _scaled_identity(nv, self.regularization)
        if not math.isfinite(_sum(HrT, axis=None)):
            raise WbsimError("non-finite task Jacobian or acceleration in the task stack")
        # H is symmetric: its transpose is the same matrix in Fortran order (no copy for LAPACK);
        # dposv = dpotrf + dpotrs in one call (the same LAPACK routines, the same result)
        z = _posv(H.T, HrT[nv], "task-stack normal matrix")
        return augmented[:, nv] + augmented[:, :nv] @ z

    def error_norms(self) -> dict[str, float]:
        """``{task name: ||e_i||}`` of the last :meth:`solve`."""
        return {t.name: math.sqrt(float(e @ e)) for t, e in zip(self.tasks, self.errors)}
