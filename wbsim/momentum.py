"""The centroidal momentum balance of the simulated robot: a check that the sensed contact forces
and the pushes explain the simulated motion.

``dh_G/dt = [F + m g ; M_G]`` with ``F`` and ``M_G`` the external forces on the robot (every
contact, the push) and their moment about the CoM ``c``; joint torques, damping and armature are
internal and do not enter. ``dh_G/dt`` (linear N, angular N·m, world-aligned, about the CoM) comes
from ``pinocchio.computeCentroidalMomentumTimeVariation`` at MuJoCo's acceleration, converted
(:mod:`wbsim.conventions`); the contact wrench from MuJoCo's net contact sensor
(:mod:`wbsim.contacts`). The two are independent, so a force read wrongly (frame, sign) shows up.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from wbsim.contacts import ContactSensing

__all__ = ["MomentumBalance"]


class MomentumBalance:
    """Residuals of the centroidal momentum balance over recorded steps.

    Args:
        robot: a :class:`wbsim.Robot`.

    Attributes:
        weight: ``m |g|``, N (the scale of :meth:`relative`).
    """

    def __init__(self, robot):
        self.robot = robot
        self.model = robot.pin_model
        self.data = self.model.createData()
        self.gravity = np.array(robot.mj_model.opt.gravity, dtype=float)
        self.mass = float(robot.total_mass)
        self.weight = self.mass * float(np.linalg.norm(self.gravity))

    def residuals(
        self,
        qpos: np.ndarray,
        qvel: np.ndarray,
        qacc: np.ndarray,
        sensing: ContactSensing,
        push: np.ndarray | None = None,
        push_point: np.ndarray | None = None,
    ) -> np.ndarray:
        """The residuals ``(k, 6)`` ``[linear (N); angular (N·m)]``, world-aligned, about the CoM,
        of ``k`` states.

        Args:
            qpos, qvel: ``(k, nq)``, ``(k, nv)`` MuJoCo's states.
            qacc: ``(k, nv)`` MuJoCo's acceleration at each (``MjData.qacc`` after ``mj_forward``,
                or after ``mj_step``: then of the state the step started from).
            sensing: the contact sensors of the same states (``k`` rows).
            push: ``(k, 3)`` external force on the robot other than contacts (world, N), or
                ``None``.
            push_point: ``(k, 3)`` where it acts (world, m); required with ``push``.
        """
        q, v = self.robot.mj_to_pin(qpos, qvel)
        a = self.robot.converter.mj_acceleration_to_pin(q, v, qacc)
        k = len(q)
        dhg, com = np.empty((k, 6)), np.empty((k, 3))
        model, data, coms = self.model, self.data, self.data.com  # (coms: live, made once a call)
        rate_of_change = pin.computeCentroidalMomentumTimeVariation
        for i, (qi, vi, ai) in enumerate(zip(q, v, a)):
            dhg[i] = rate_of_change(model, data, qi, vi, ai).np  # [linear; angular]
            com[i] = coms[0]
        force = sensing.external_force_world + self.mass * self.gravity
        moment = sensing.external_moment_world - np.cross(com, sensing.external_force_world)
        if push is not None:
            if push_point is None:  # (was a bare TypeError from None - com)
                raise TypeError("MomentumBalance.residuals: a push needs its push_point")
            force = force + push
            moment = moment + np.cross(push_point - com, push)
        return dhg - np.concatenate([force, moment], axis=-1)

    def relative(self, residuals: np.ndarray) -> np.ndarray:
        """``|residual| / (m g)`` of each row (1 = the robot's weight)."""
        return np.linalg.norm(residuals, axis=-1) / self.weight
