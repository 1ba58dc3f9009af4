"""Joint PD around a posture, with gains scaled by the joint-space inertia.

For joint ``i`` with diagonal joint-space inertia ``M_ii`` (kg·m², armature included, from
``pinocchio.crba`` at the reference posture), natural frequency ``f`` (Hz) and damping ratio ``zeta``:

    kp_i = M_ii (2 pi f)^2          (N·m/rad)
    kd_i = 2 zeta M_ii (2 pi f)     (N·m·s/rad)

so each joint, seen as a decoupled inertia ``M_ii``, responds as a second-order system with the same
``f`` and ``zeta``. One frequency and one damping ratio set every gain, from the 0.6 kg·m² hip to the
0.01 kg·m² wrist.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from wbsim.controllers.base import Command, ContactSchedule, RobotState

__all__ = ["JointPD", "PDController", "PDGains", "inertia_scaled_gains"]


@dataclass(frozen=True)
class PDGains:
    """Natural frequency ``frequency_hz`` (Hz) and damping ratio ``damping_ratio`` (1 = critical)."""

    frequency_hz: float = 3.0
    damping_ratio: float = 1.0


def inertia_scaled_gains(robot, q: np.ndarray, gains: PDGains) -> tuple[np.ndarray, np.ndarray]:
    """``(kp, kd)``, each ``(n_joints,)`` in ``robot.joint_names`` order, scaled by ``diag(M)`` at ``q``
    (Pinocchio configuration)."""
    M = pin.crba(robot.pin_model, robot.pin_model.createData(), q)
    m_ii = np.diag(M)[robot.converter.pin_vidx]
    w = 2.0 * np.pi * gains.frequency_hz
    return m_ii * w * w, 2.0 * gains.damping_ratio * m_ii * w


class JointPD:
    """``tau = kp (q_ref - q) - kd qdot`` on the actuated joints (``(n_joints,)``, N·m)."""

    def __init__(self, robot, gains: PDGains = PDGains()):
        self.robot = robot
        self.gains = gains
        self.q_ref = robot.converter.joint_values_pin(robot.pose_q("stand")) if robot.has_feet else (
            np.zeros(robot.n_joints))
        self.kp, self.kd = inertia_scaled_gains(robot, robot.configuration(), gains)

    def reset(self, q_ref_full: np.ndarray) -> None:
        """Take the joints of ``q_ref_full`` (Pinocchio ``q``) as reference and rescale the gains."""
        self.q_ref = self.robot.converter.joint_values_pin(q_ref_full).copy()
        self.kp, self.kd = inertia_scaled_gains(self.robot, q_ref_full, self.gains)

    def __call__(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        conv = self.robot.converter
        return self.kp * (self.q_ref - q[conv.pin_qidx]) - self.kd * v[conv.pin_vidx]


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
        return Command(tau=self.pd(state.q, state.v))


class ZeroController:
    """Zero torque on every joint (the robot falls): the lower bound of every baseline."""

    name = "zero"

    def __init__(self, robot):
        self.robot = robot

    def reset(self, state: RobotState) -> None:
        pass

    def compute(self, state: RobotState, schedule: ContactSchedule) -> Command:
        return Command(tau=np.zeros(self.robot.n_joints))
