"""Episode metrics for the summary, accumulated over chunks of recorded steps: base drift, tilt
and height drop, joint error, CoM tracking, swing-foot clearance, the momentum residual, the
return, and for a replayed DCC plan the simulation's complementarity accuracy next to the plan's."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from wbsim.contacts import ContactSensing
from wbsim.conventions import base_tilt
from wbsim.planning.plan_file import complementarity_accuracy
from wbsim.recorder import RecordedSteps

__all__ = ["EpisodeMetrics"]


class EpisodeMetrics:
    """Running maxima and sums of an episode.

    Args:
        robot: the :class:`wbsim.Robot`.
        qpos0: ``(nq,)`` MuJoCo's state at reset (the base's start and the joints' reference).
        dcc: a replayed DCC plan's ``dcc`` (:func:`wbsim.envs.schedules.dcc_plan`: ``horizon_s``,
            ``plan_Nm``, ...) or ``None``. With it, the steps that start before ``horizon_s``
            give the simulation's :func:`~wbsim.planning.plan_file.complementarity_accuracy`
            (``h`` the sole points' simulated gaps; ``f_n`` sensed, and commanded).
    """

    def __init__(self, robot, qpos0: np.ndarray, dcc: dict[str, Any] | None = None):
        self.base0 = np.array(qpos0[0:3], dtype=float)
        self.q_ref = np.array(qpos0[robot.converter.mj_qadr], dtype=float)
        self._qadr = robot.converter.mj_qadr
        self.feet = robot.contact_names  # the feet, then the hands
        self.steps = 0
        self.ret = 0.0
        self.tilt = self.drift = self.drop = self.momentum = 0.0
        self.joint_error = np.zeros(robot.n_joints)
        self.com_err_sq, self.com_err_n = 0.0, 0
        self.swing_max, self.hold_min = -math.inf, math.inf
        self.dcc = dict(dcc) if dcc else None
        self._hf_sums, self._hf_n = np.zeros(2), 0  # (sensed, commanded) sums of step values

    def joint_errors(self, qpos: np.ndarray) -> np.ndarray:
        """``(k, n)`` joint angles of MuJoCo states ``qpos (k, nq)`` minus the reset posture, rad."""
        return qpos[:, self._qadr] - self.q_ref

    def update(
        self,
        steps: RecordedSteps,
        sensing: ContactSensing,
        momentum_relative: np.ndarray,
        reward: np.ndarray,
    ) -> None:
        """Take in a chunk: the base and joints after each step, the sensed CoM and soles, the
        relative momentum residual ``(k,)`` and the reward ``(k,)``."""
        k = len(steps)
        if not k:
            return
        self.steps += k
        self.ret += float(reward.sum())
        base = steps.qpos[:, 0:3]
        tilt = np.degrees(base_tilt(*steps.qpos[:, 3:7].T))
        # running maxima; a NaN state (a diverged simulation) is skipped
        self.tilt = float(np.nanmax(tilt, initial=self.tilt))
        self.drift = float(np.nanmax(np.linalg.norm(base - self.base0, axis=1), initial=self.drift))
        self.drop = float(np.nanmax(self.base0[2] - base[:, 2], initial=self.drop))
        self.joint_error = np.fmax(
            self.joint_error, np.fmax.reduce(np.abs(self.joint_errors(steps.qpos)), axis=0)
        )
        self.momentum = float(np.nanmax(momentum_relative, initial=self.momentum))
        has_ref = ~np.isnan(steps.com_ref).any(axis=1)
        if has_ref.any():
            e = sensing.com[has_ref] - steps.com_ref[has_ref]
            self.com_err_sq += float(np.einsum("ij,ij", e, e))
            self.com_err_n += int(has_ref.sum())
        # the lowest sole point of each foot planned off the floor
        sole_z = self.sole_min_z(sensing)  # (k, m)
        swing = ~steps.planned
        if swing.any():
            self.swing_max = max(self.swing_max, float(sole_z[swing].max()))
            hold = swing & steps.hold[:, None]
            if hold.any():
                self.hold_min = min(self.hold_min, float(sole_z[hold].min()))
        if self.dcc is not None:
            during = steps.t < self.dcc["horizon_s"] - 1e-9  # (a step at the horizon: after)
            n = int(during.sum())
            if n:
                gap = sensing.gap[during]
                floor = np.asarray(sensing.floor_normal_world, dtype=float)
                commanded = steps.point_forces[during] @ floor  # (n, p), NaN: not commanded
                self._hf_sums += n * np.array(
                    [
                        complementarity_accuracy(gap, sensing.normal_force[during]),
                        complementarity_accuracy(gap, commanded),
                    ]
                )
                self._hf_n += n

    def sole_min_z(self, sensing: ContactSensing) -> np.ndarray:
        """``(k, m)`` height of the lowest point of each contact (a foot's sole, a hand), m."""
        z = sensing.position_world[..., 2]
        return np.stack([z[:, sensing.points_of_foot(f)].min(axis=1) for f in self.feet], axis=1)

    def summary(self) -> dict[str, Any]:
        """The summary's metrics: ``steps``, ``return``, ``max_base_tilt_deg``, ``base_drift_m``,
        ``base_height_drop_m``, ``max_joint_error_rad``, ``momentum_residual_max`` (relative to
        ``m g``), and where they apply ``com_tracking_rms_m``, ``swing_clearance_max_m``,
        ``swing_clearance_min_hold_m``, ``dcc_complementarity`` (the ``dcc`` given, with
        ``steps``, ``simulated_sensed_Nm`` and ``simulated_commanded_Nm``)."""
        out: dict[str, Any] = {
            "steps": self.steps,
            "return": self.ret,
            "max_base_tilt_deg": self.tilt,
            "base_drift_m": self.drift,
            "base_height_drop_m": self.drop,
            "max_joint_error_rad": float(self.joint_error.max()) if self.joint_error.size else 0.0,
            "momentum_residual_max": self.momentum,
        }
        if self.com_err_n:
            out["com_tracking_rms_m"] = math.sqrt(self.com_err_sq / self.com_err_n)
        if math.isfinite(self.swing_max):
            out["swing_clearance_max_m"] = self.swing_max
        if math.isfinite(self.hold_min):
            out["swing_clearance_min_hold_m"] = self.hold_min
        if self.dcc is not None:
            mean = self._hf_sums / self._hf_n if self._hf_n else np.full(2, np.nan)
            out["dcc_complementarity"] = {
                **self.dcc,
                "steps": self._hf_n,
                "simulated_sensed_Nm": float(mean[0]),
                "simulated_commanded_Nm": float(mean[1]),
            }
        return out
