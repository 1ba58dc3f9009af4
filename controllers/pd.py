"""Joint PD around a posture, with gains scaled by the joint-space inertia.

Owns :class:`JointPD` (the PD law ``kp (q_ref - q) - kd qdot``, as the :class:`~wbsim.types.JointTargets`
a controller hands to the loop, which applies it at every physics step), its gains
(:func:`inertia_scaled_gains`: ``kp_i = Lambda_ii (2 pi f)^2``, ``kd_i = 2 zeta Lambda_ii (2 pi f)``
with ``Lambda = (S M^-1 S^T)^-1``; docs/controllers.md, "Joint PD") and the two baseline
controllers ``pd`` (the PD alone) and ``zero``. Arrays are ``(n_joints,)`` in
``robot.joint_names`` order; ``q``, ``v`` in Pinocchio's convention.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.linalg import cho_factor, cho_solve

from wbsim.controllers.base import _as_slice
from wbsim.errors import WbsimError, is_real
from wbsim.types import Command, ContactSchedule, JointTargets, RobotState

__all__ = [
    "JointPD",
    "PDController",
    "PDGains",
    "ZeroController",
    "inertia_scaled_gains",
    "joint_space_inertia",
]


@dataclass(frozen=True)
class PDGains:
    """Natural frequency ``frequency_hz`` (Hz) and damping ratio ``damping_ratio`` (1 = critical)."""

    frequency_hz: float = 3.0
    damping_ratio: float = 1.0

    def __post_init__(self):
        if not (
            is_real(self.frequency_hz) and np.isfinite(self.frequency_hz) and self.frequency_hz > 0
        ):
            raise WbsimError(f"frequency_hz must be a finite number > 0, got {self.frequency_hz!r}")
        if not (
            is_real(self.damping_ratio)
            and np.isfinite(self.damping_ratio)
            and self.damping_ratio >= 0
        ):
            raise WbsimError(
                f"damping_ratio must be a finite number >= 0, got {self.damping_ratio!r}"
            )


def joint_space_inertia(robot, q: np.ndarray) -> np.ndarray:
    """Diagonal ``(n_joints,)`` of the joint-space inertia ``(S M^-1 S^T)^-1`` (kg·m² or kg), in
    ``robot.joint_names`` order, at Pinocchio configuration ``q`` (see the module docstring)."""
    M = pin.crba(robot.pin_model, robot.pin_model.createData(), q)
    M = np.triu(M) + np.triu(M, 1).T  # crba fills the upper triangle
    idx = robot.converter.pin_vidx
    if not robot.converter.floating:
        return np.diag(M)[idx].copy()
    selector = np.zeros((M.shape[0], len(idx)))
    selector[idx, np.arange(len(idx))] = 1.0
    minv_joints = selector.T @ cho_solve(cho_factor(M), selector)  # S M^-1 S^T
    return np.diag(np.linalg.inv(minv_joints)).copy()


def inertia_scaled_gains(robot, q: np.ndarray, gains: PDGains) -> tuple[np.ndarray, np.ndarray]:
    """``(kp, kd)``, each ``(n_joints,)`` in ``robot.joint_names`` order (N·m/rad, N·m·s/rad), scaled
    by :func:`joint_space_inertia` at ``q`` (Pinocchio configuration)."""
    m_ii = joint_space_inertia(robot, q)
    w = 2.0 * np.pi * gains.frequency_hz
    return m_ii * w * w, 2.0 * gains.damping_ratio * m_ii * w


def _frozen(a: np.ndarray) -> np.ndarray:
    """``a`` as a read-only float array (a copy): shared by every command, written by none."""
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


class JointPD:
    """``tau = kp (q_ref - q) - kd qdot`` on the actuated joints (``(n_joints,)``, N·m).

    The law itself is :meth:`wbsim.types.JointTargets.torque` with ``v = 0``
    (``kd (0 - qdot)`` is ``-(kd qdot)`` exactly): :attr:`targets` is what a controller returns
    in ``Command.joint_targets`` so that the loop applies the PD at every physics step.

    Attributes:
        q_ref: ``(n_joints,)`` reference joint angles, rad (settable).
        kp, kd: ``(n_joints,)`` gains, N·m/rad and N·m·s/rad (:func:`inertia_scaled_gains`).
    """

    def __init__(self, robot, gains: PDGains = PDGains()):
        self.robot = robot
        self.gains = gains
        conv = robot.converter
        self._qsel, self._vsel = _as_slice(conv.pin_qidx), _as_slice(conv.pin_vidx)
        self._zero = _frozen(np.zeros(robot.n_joints))
        q_ref = (
            conv.joint_values_pin(robot.pose_q("stand"))
            if robot.has_feet
            else np.zeros(robot.n_joints)
        )
        kp, kd = inertia_scaled_gains(robot, robot.configuration(), gains)
        self.targets = JointTargets(_frozen(q_ref), self._zero, _frozen(kp), _frozen(kd))

    @property
    def q_ref(self) -> np.ndarray:
        return self.targets.q

    @q_ref.setter
    def q_ref(self, value: np.ndarray) -> None:
        t = self.targets
        self.targets = JointTargets(_frozen(value), t.v, t.kp, t.kd)

    @property
    def kp(self) -> np.ndarray:
        return self.targets.kp

    @property
    def kd(self) -> np.ndarray:
        return self.targets.kd

    def reset(self, q_ref_full: np.ndarray) -> None:
        """Take the joints of ``q_ref_full`` (Pinocchio ``q``) as reference and rescale the gains."""
        kp, kd = inertia_scaled_gains(self.robot, q_ref_full, self.gains)
        self.targets = JointTargets(
            _frozen(self.robot.converter.joint_values_pin(q_ref_full)),
            self._zero,
            _frozen(kp),
            _frozen(kd),
        )

    def __call__(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``(n_joints,)`` PD torques, N·m, at Pinocchio ``q`` ``(nq,)`` and ``v`` ``(nv,)``."""
        return self.targets.torque(q[self._qsel], v[self._vsel])


class PDController:
    """The PD alone (no model-based term): the baseline that shows what compensation adds.

    ``compute`` returns ``tau = 0`` and the PD as ``Command.joint_targets`` (applied by the loop
    at every physics step).

    Args:
        robot: a :class:`wbsim.Robot`.
        frequency_hz, damping_ratio: see :class:`PDGains`.
    """

    name = "pd"

    def __init__(self, robot, frequency_hz: float = 3.0, damping_ratio: float = 1.0):
        self.robot = robot
        self.pd = JointPD(robot, PDGains(frequency_hz, damping_ratio))

    def reset(self, state: RobotState) -> None:
        self.pd.reset(state.q)

    def compute(self, state: RobotState, schedule: ContactSchedule) -> Command:
        t0 = time.perf_counter()
        targets = self.pd.targets
        return Command(
            tau=np.zeros(self.robot.n_joints),
            joint_targets=targets,
            info={"compute_time": time.perf_counter() - t0, "solve_time": 0.0, "solver": ""},
        )


class ZeroController:
    """Zero torque on every joint (the robot falls): the lower bound of every baseline."""

    name = "zero"

    def __init__(self, robot):
        self.robot = robot

    def reset(self, state: RobotState) -> None:
        pass

    def compute(self, state: RobotState, schedule: ContactSchedule) -> Command:
        return Command(
            tau=np.zeros(self.robot.n_joints),
            info={"compute_time": 0.0, "solve_time": 0.0, "solver": ""},
        )
