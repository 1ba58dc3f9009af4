"""Joint PD around a posture, with gains scaled by the joint-space inertia.

For joint ``i`` with joint-space inertia ``Lambda_ii`` (kg·m²), natural frequency ``f`` (Hz) and damping
ratio ``zeta``:

    kp_i = Lambda_ii (2 pi f)^2          (N·m/rad)
    kd_i = 2 zeta Lambda_ii (2 pi f)     (N·m·s/rad)

so one frequency and one damping ratio set every gain, from the hip to the wrist.

Which inertia. For a floating-base robot ``Lambda = (S M^-1 S^T)^-1`` (``M`` from ``pinocchio.crba`` at
the reference posture, armature included; ``S`` selects the actuated joints): the inertia a joint
torque meets when the base is free to move, its diagonal taken. It is the smallest inertia the joint
can meet (contacts only add to it), which makes the explicit PD stable at any step for which
``2 zeta (2 pi f) dt << 2`` whatever the contacts. The diagonal of ``M`` itself (inertia with the
base and every other joint locked) overestimates it for the hips and waist (whose torque mostly spins
the base) and makes the 3 Hz PD oscillate step-to-step at 2 ms on the standing G1; the inertia with a
foot welded to the floor gives ankle gains of ~5000 N·m/rad that no 35 N·m ankle can follow. For a
fixed-base robot ``Lambda = M``'s diagonal.

With these gains the PD alone is soft at the ankles (the G1 falls without gravity compensation), and
with the gravity-compensation QP it holds the stand pose (tests/test_main_job.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.linalg import cho_factor, cho_solve

from wbsim.controllers.base import _as_slice
from wbsim.errors import is_real
from wbsim.types import Command, ContactSchedule, RobotState
from wbsim.errors import WbsimError

__all__ = ["JointPD", "PDController", "PDGains", "ZeroController", "inertia_scaled_gains",
           "joint_space_inertia"]


@dataclass(frozen=True)
class PDGains:
    """Natural frequency ``frequency_hz`` (Hz) and damping ratio ``damping_ratio`` (1 = critical)."""

    frequency_hz: float = 3.0
    damping_ratio: float = 1.0

    def __post_init__(self):
        if not (is_real(self.frequency_hz) and np.isfinite(self.frequency_hz)
                and self.frequency_hz > 0):
            raise WbsimError(f"frequency_hz must be a finite number > 0, got {self.frequency_hz!r}")
        if not (is_real(self.damping_ratio) and np.isfinite(self.damping_ratio)
                and self.damping_ratio >= 0):
            raise WbsimError(f"damping_ratio must be a finite number >= 0, got "
                             f"{self.damping_ratio!r}")


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


class JointPD:
    """``tau = kp (q_ref - q) - kd qdot`` on the actuated joints (``(n_joints,)``, N·m)."""

    def __init__(self, robot, gains: PDGains = PDGains()):
        self.robot = robot
        self.gains = gains
        conv = robot.converter
        self._qsel, self._vsel = _as_slice(conv.pin_qidx), _as_slice(conv.pin_vidx)
        self.q_ref = robot.converter.joint_values_pin(robot.pose_q("stand")) if robot.has_feet else (
            np.zeros(robot.n_joints))
        self.kp, self.kd = inertia_scaled_gains(robot, robot.configuration(), gains)

    def reset(self, q_ref_full: np.ndarray) -> None:
        """Take the joints of ``q_ref_full`` (Pinocchio ``q``) as reference and rescale the gains."""
        self.q_ref = self.robot.converter.joint_values_pin(q_ref_full).copy()
        self.kp, self.kd = inertia_scaled_gains(self.robot, q_ref_full, self.gains)

    def __call__(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``(n_joints,)`` PD torques, N·m, at Pinocchio ``q`` ``(nq,)`` and ``v`` ``(nv,)``."""
        return self.kp * (self.q_ref - q[self._qsel]) - self.kd * v[self._vsel]


class PDController:
    """The PD alone (no model-based term): the baseline that shows what compensation adds.

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
        tau = self.pd(state.q, state.v)
        return Command(tau=tau, info={"compute_time": time.perf_counter() - t0,
                                      "solve_time": 0.0, "solver": ""})


class ZeroController:
    """Zero torque on every joint (the robot falls): the lower bound of every baseline."""

    name = "zero"

    def __init__(self, robot):
        self.robot = robot

    def reset(self, state: RobotState) -> None:
        pass

    def compute(self, state: RobotState, schedule: ContactSchedule) -> Command:
        return Command(tau=np.zeros(self.robot.n_joints),
                       info={"compute_time": 0.0, "solve_time": 0.0, "solver": ""})
