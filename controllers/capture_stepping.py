"""Stepping out of pushes (controller ``"stepping"``): the divergent component of motion (DCM)
measured each step moves the next footstep, and :class:`ContactProjectedID` tracks the result.

Owns :class:`CaptureStepping`: a layer between a footstep plan's schedule (a walking or stepping
reference, :mod:`wbsim.reference`: ``"dcm"``, ``"zmp"``, ``"com"``, ``"<foot>_landing"``,
``"landing_time"`` targets) and the whole-body controller. It changes only the schedule's targets
(never the contact timing): the horizontal CoM acceleration (DCM feedback) and where and how the
swing foot lands. Linear inverted pendulum (LIPM), ``omega = sqrt(g / z_c)``, horizontal
components, world frame:

* DCM ``xi = c + cd / omega`` from the measured CoM (Pinocchio, the controller's model).
* Reference: the plan's DCM and ZMP plus, for every footstep already moved by ``d``, the LIPM
  response to the ZMP it moves, ``dp(t)`` (0 until the moved foot lands, a ramp to ``d`` over the
  double support after it, ``d`` after): ``xi_ref = xi_plan + xi_d``, ``p_ref = p_plan + dp``,
  ``xi_d`` planned backwards in closed form (:class:`~wbsim.planning.walking.LipmTrajectory`).
* DCM feedback (Englsberger, Ott, Albu-Schaeffer 2015, eq. 16 with a CMP = ZMP): with
  ``xid = omega (xi - p)``, the ZMP ``p_d = p_ref + (1 + k / omega) (xi - xi_ref)`` makes the
  error decay as ``exp(-k t)``; ``p_d`` is kept ``zmp_margin`` inside the support polygon of the
  planned contacts, and the CoM task gets ``cdd = omega^2 (c - p_d)`` as its feed-forward with its
  position and velocity targets at the measured ones (the PD acts only in z).
* Step adjustment: in a single support, a DCM error the ankle cannot absorb grows as
  ``exp(omega t)``; the landing point of the swing foot moves by the error predicted at the
  landing, ``d = (xi - xi_ref) exp(omega (t_land - t))``, beyond a dead band ``step_deadband``
  (no adjustment in undisturbed walking), clipped to the kinematic box of the step relative to
  the stance foot (``max_step_length`` fore and aft, the lateral distance within
  ``[min_step_width, max_step_width]``), frozen ``freeze_time`` before the landing. The swing foot
  goes there on a minimum-jerk path re-planned from its current target state whenever the landing
  moves; every later footstep of the plan moves with it (the robot keeps stepping where the push
  took it).

Contact timing is the schedule's: the diagnostics' planned and assumed contacts stay the plan's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pinocchio as pin

from wbsim.controllers.contact_projected_id import ContactProjectedID
from wbsim.errors import WbsimError, is_real
from wbsim.planning.walking import LipmTrajectory
from wbsim.types import Command, ContactSchedule, RobotState

__all__ = ["CaptureStepping"]


def _quintic(
    x0: np.ndarray, v0: np.ndarray, a0: np.ndarray, x1: np.ndarray, T: float
) -> np.ndarray:
    """``(6, d)`` coefficients (in ``tau``, ascending) of the quintic from ``(x0, v0, a0)`` at
    ``tau = 0`` to ``(x1, 0, 0)`` at ``tau = T``."""
    V = np.array(
        [
            [1, 0, 0, 0, 0, 0],
            [0, 1, 0, 0, 0, 0],
            [0, 0, 2, 0, 0, 0],
            [1, T, T**2, T**3, T**4, T**5],
            [0, 1, 2 * T, 3 * T**2, 4 * T**3, 5 * T**4],
            [0, 0, 2, 6 * T, 12 * T**2, 20 * T**3],
        ],
        dtype=float,
    )
    rhs = np.vstack([x0, v0, a0, x1, np.zeros_like(x1), np.zeros_like(x1)])
    return np.linalg.solve(V, rhs)


def _eval_quintic(c: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p = np.array([1.0, tau, tau**2, tau**3, tau**4, tau**5])
    dp = np.array([0.0, 1.0, 2 * tau, 3 * tau**2, 4 * tau**3, 5 * tau**4])
    ddp = np.array([0.0, 0.0, 2.0, 6 * tau, 12 * tau**2, 20 * tau**3])
    return p @ c, dp @ c, ddp @ c


class CaptureStepping:
    """DCM feedback and footstep adjustment on top of :class:`ContactProjectedID` (module
    docstring).

    Args:
        robot: a :class:`wbsim.Robot` with feet ``left_foot`` and ``right_foot``.
        dcm_gain: ``k``, 1/s, the DCM error's decay rate.
        zmp_margin: m, the commanded ZMP stays this far inside the support polygon.
        step_deadband: m, DCM errors predicted at the landing below this move no footstep.
        max_step_length: m, fore-aft reach of a step from the stance foot (both ways).
        min_step_width, max_step_width: m, the lateral distance of the landing foot frame from the
            stance foot frame.
        freeze_time: s, the landing point is fixed this long before the planned landing.
        step_gain: the move is ``step_gain`` times the predicted DCM error (above 1: the foot
            lands beyond the DCM, which then comes back).
        adjust_steps: ``False``: DCM feedback only (no footstep moves).
        wbc_options: options of :class:`ContactProjectedID` (e.g. ``{"variant": "qp"}``).

    Raises:
        WbsimError: a value out of range; UnknownNameError: an unknown whole-body option.
    """

    name = "stepping"

    def __init__(
        self,
        robot,
        dcm_gain: float = 3.0,
        zmp_margin: float = 0.01,
        step_deadband: float = 0.02,
        max_step_length: float = 0.45,
        min_step_width: float = 0.16,
        max_step_width: float = 0.5,
        freeze_time: float = 0.08,
        adjust_steps: bool = True,
        step_gain: float = 1.3,
        wbc_options: Mapping[str, Any] | None = None,
    ):
        for name, value, ok in (
            ("dcm_gain", dcm_gain, dcm_gain >= 0),
            ("zmp_margin", zmp_margin, zmp_margin >= 0),
            ("step_deadband", step_deadband, step_deadband >= 0),
            ("max_step_length", max_step_length, max_step_length > 0),
            ("min_step_width", min_step_width, min_step_width > 0),
            ("max_step_width", max_step_width, max_step_width > min_step_width),
            ("freeze_time", freeze_time, freeze_time >= 0),
            ("step_gain", step_gain, step_gain >= 0),
        ):
            if not (is_real(value) and math.isfinite(value) and ok):
                raise WbsimError(f"stepping: {name} = {value!r} is out of range")
        from wbsim.controllers import check_options

        options = dict(wbc_options or {})
        check_options("of projected_id (wbc_options)", ContactProjectedID, options, skip=("robot",))
        self.robot = robot
        self.wbc = ContactProjectedID(robot, **options)
        self.model = robot.pin_model
        self.data = self.model.createData()
        self.g = float(np.linalg.norm(self.model.gravity.linear))
        self.dcm_gain, self.zmp_margin = float(dcm_gain), float(zmp_margin)
        self.step_deadband, self.max_step_length = float(step_deadband), float(max_step_length)
        self.min_step_width, self.max_step_width = float(min_step_width), float(max_step_width)
        self.freeze_time, self.adjust_steps = float(freeze_time), bool(adjust_steps)
        self.step_gain = float(step_gain)
        self.feet = tuple(robot.foot_names)
        self._frame = {f: robot.feet[f].pin_frame_id for f in self.feet}
        self._points = {f: np.asarray(robot.feet[f].points_in_foot, dtype=float) for f in self.feet}
        self.reset_done = False

    # -- protocol ---------------------------------------------------------------------------------
    def reset(self, state: RobotState) -> None:
        """Reset the whole-body controller and forget every moved footstep."""
        self.wbc.reset(state)
        self._moves: list[tuple[float, float, np.ndarray]] = []  # (land, ds end, d (2,))
        self._offset = np.zeros(2)  # sum of the moves of the steps already landed
        self._settled = np.zeros(2)  # the moves whose double support is over
        self._swing: dict[str, Any] | None = None
        self.reset_done = True

    def _measure(self, state: RobotState) -> tuple[np.ndarray, np.ndarray, dict]:
        """CoM, CoM velocity (world) and foot placements at ``state``."""
        model, data = self.model, self.data
        pin.forwardKinematics(model, data, state.q, state.v)
        pin.centerOfMass(model, data, state.q, state.v, False)
        pin.updateFramePlacements(model, data)
        feet = {f: data.oMf[i] for f, i in self._frame.items()}
        return data.com[0].copy(), data.vcom[0].copy(), feet

    def _perturbation(self, t: float, w: float) -> tuple[np.ndarray, np.ndarray]:
        """``(xi_d, dp)`` (2,) each at ``t``: the DCM and ZMP offsets of the moved footsteps."""
        while self._moves and self._moves[0][1] <= t:  # fully shifted: a constant from now on
            self._settled = self._settled + self._moves.pop(0)[2]
        xi = self._settled.copy()
        dp = self._settled.copy()
        for land, ds_end, d in self._moves:
            lipm = LipmTrajectory(
                [land - 10.0, land, ds_end], np.array([np.zeros(2), np.zeros(2), d]), w, np.zeros(2)
            )
            ev = lipm.evaluate([t])
            xi += ev["dcm"][0]
            dp += ev["zmp"][0]
        return xi, dp

    def compute(self, state: RobotState, schedule: ContactSchedule) -> Command:
        """The whole-body command for the schedule with the adjusted targets (module docstring);
        ``Command.info`` adds ``dcm_error`` (m, (2,)), ``zmp_command`` (m, (2,)),
        ``step_offset`` (m, (2,), the current landing's move) and ``stepping_time`` (s)."""
        t_start = time.perf_counter()
        if not self.reset_done:
            self.reset(state)
        tg = dict(schedule.targets or {})
        if not all(k in tg for k in ("dcm", "zmp", "com")):
            return self.wbc.compute(state, schedule)  # no LIPM reference: nothing to adjust
        t = float(state.t)
        c, cd, feet = self._measure(state)
        floor = float(np.asarray(tg["zmp"])[2])
        w = math.sqrt(self.g / max(float(np.asarray(tg["com"])[2]) - floor, 1e-3))
        xi_d, dp = self._perturbation(t, w)
        xi_ref = np.asarray(tg["dcm"], dtype=float)[:2] + xi_d
        p_ref = np.asarray(tg["zmp"], dtype=float)[:2] + dp
        xi = c[:2] + cd[:2] / w
        e = xi - xi_ref
        p_d = p_ref + (1.0 + self.dcm_gain / w) * e
        support = [f for f in self.feet if f in schedule.contact_set]
        p_cmd = self._clamp(p_d, [feet[f] for f in support], [self._points[f] for f in support])
        acc = np.array(
            [
                w * w * (c[0] - p_cmd[0]),
                w * w * (c[1] - p_cmd[1]),
                float(np.asarray(tg.get("com_acceleration", np.zeros(3)))[2]),
            ]
        )
        com_ref = np.asarray(tg["com"], dtype=float)
        tg["com"] = np.array([c[0], c[1], com_ref[2]])
        tg["com_velocity"] = np.array(
            [cd[0], cd[1], float(np.asarray(tg.get("com_velocity", np.zeros(3)))[2])]
        )
        tg["com_acceleration"] = acc
        move = np.zeros(2)
        swing = [f for f in self.feet if f not in schedule.contact_set]
        if len(swing) == 1 and f"{swing[0]}_landing" in tg and "landing_time" in tg:
            move = self._swing_targets(
                tg,
                swing[0],
                support[0] if support else None,
                feet,
                t,
                float(np.asarray(tg["landing_time"])[0]),
                e,
                w,
                schedule,
            )
        else:
            self._close_swing(t, schedule)
            for f in self.feet:  # a foot in contact: the plan's place, moved
                if f in tg:
                    tg[f] = np.asarray(tg[f], dtype=float) + np.append(self._offset, 0.0)
        for key in [k for k in tg if k.endswith("_wrench")]:
            del tg[key]  # the plan's force split no longer matches a moved footstep
        sched = ContactSchedule(
            schedule.contact_set,
            schedule.next_contact_set,
            schedule.phase,
            schedule.phase_index,
            schedule.phase_time,
            schedule.phase_duration,
            tg,
        )
        cmd = self.wbc.compute(state, sched)
        cmd.info.update(
            dcm_error=e,
            zmp_command=p_cmd,
            step_offset=move,
            stepping_time=time.perf_counter() - t_start,
        )
        return cmd

    # -- pieces -----------------------------------------------------------------------------------
    def _clamp(self, p: np.ndarray, placements: list, points: list) -> np.ndarray:
        """``p`` (2,) moved into the support polygon of the feet in contact, ``zmp_margin``
        inside (nearest point of the shrunk convex hull)."""
        if not placements:
            return p
        from wbsim.contacts import convex_hull

        pts = np.vstack([(M.rotation @ P.T).T + M.translation for M, P in zip(placements, points)])
        hull = convex_hull(pts[:, :2])
        if len(hull) < 3:
            return p
        edges = np.roll(hull, -1, axis=0) - hull
        normals = np.stack([-edges[:, 1], edges[:, 0]], axis=1)
        normals /= np.linalg.norm(normals, axis=1, keepdims=True)  # inward (ccw hull)
        offsets = np.einsum("ij,ij->i", normals, hull) + self.zmp_margin
        q = p.copy()
        for _ in range(8):  # project onto the violated half-planes (a few passes suffice)
            viol = normals @ q - offsets
            k = int(np.argmin(viol))
            if viol[k] >= -1e-12:
                break
            q = q - viol[k] * normals[k]
        return q

    def _close_swing(self, t: float, schedule: ContactSchedule) -> None:
        """After a landing: its move joins the offset of every later footstep."""
        sw = self._swing
        if sw is not None and t >= sw["land"] - 1e-9:
            if np.any(sw["move"] != 0.0):
                ds_end = sw["land"] + (
                    schedule.phase_duration if math.isfinite(schedule.phase_duration) else 0.3
                )
                self._moves.append((sw["land"], ds_end, sw["move"].copy()))
                self._offset = self._offset + sw["move"]
            self._swing = None

    def _swing_targets(
        self,
        tg: dict,
        foot: str,
        stance: str | None,
        feet: dict,
        t: float,
        land: float,
        e: np.ndarray,
        w: float,
        schedule: ContactSchedule,
    ) -> np.ndarray:
        """Set the swing foot's targets in ``tg`` (minimum-jerk to the moved landing); returns
        the move ``(2,)`` of this landing."""
        sw = self._swing
        if sw is None or sw["foot"] != foot or abs(sw["land"] - land) > 1e-6:
            pos0 = np.asarray(tg[foot], dtype=float)  # the plan's target now
            vel0 = np.asarray(tg.get(f"{foot}_velocity", np.zeros(3)), dtype=float)
            acc0 = np.asarray(tg.get(f"{foot}_acceleration", np.zeros(3)), dtype=float)
            start = pos0[:2] + self._offset
            sw = self._swing = {
                "foot": foot,
                "land": land,
                "move": np.zeros(2),
                "t0": t,
                "coef": _quintic(
                    start,
                    vel0[:2],
                    acc0[:2],
                    np.asarray(tg[f"{foot}_landing"])[:2] + self._offset,
                    max(land - t, 1e-3),
                ),
            }
        nominal = np.asarray(tg[f"{foot}_landing"], dtype=float)[:2] + self._offset
        remaining = land - t
        if self.adjust_steps and stance is not None and remaining > self.freeze_time:
            want = self.step_gain * e * math.exp(w * remaining)
            mag = float(np.linalg.norm(want))
            want = want * (max(mag - self.step_deadband, 0.0) / mag) if mag > 0 else want
            target = self._reachable(nominal + want, feet[stance], foot)
            move = target - nominal
            if float(np.linalg.norm(move - sw["move"])) > 0.005:
                x, v, a = _eval_quintic(sw["coef"], t - sw["t0"])
                sw["coef"] = _quintic(x, v, a, target, max(remaining, 1e-3))
                sw["t0"] = t
                sw["move"] = move
        x, v, a = _eval_quintic(sw["coef"], min(t - sw["t0"], max(land - sw["t0"], 0.0)))
        pos = np.asarray(tg[foot], dtype=float).copy()
        vel = np.asarray(tg.get(f"{foot}_velocity", np.zeros(3)), dtype=float).copy()
        acc = np.asarray(tg.get(f"{foot}_acceleration", np.zeros(3)), dtype=float).copy()
        pos[:2], vel[:2], acc[:2] = x, v, a
        tg[foot], tg[f"{foot}_velocity"], tg[f"{foot}_acceleration"] = pos, vel, acc
        tg[f"{foot}_landing"] = np.append(nominal + sw["move"], pos[2])
        return sw["move"]

    def _reachable(self, target: np.ndarray, stance, foot: str) -> np.ndarray:
        """``target`` (2,) clipped to the box of a step of ``foot`` from the ``stance``
        placement (along the stance foot's heading: ``+-max_step_length``; across it, on the
        swing foot's side, between ``min_step_width`` and ``max_step_width``)."""
        R = stance.rotation
        yaw = math.atan2(R[1, 0], R[0, 0])
        fwd = np.array([math.cos(yaw), math.sin(yaw)])
        left = np.array([-math.sin(yaw), math.cos(yaw)])
        rel = target - stance.translation[:2]
        x = float(np.clip(rel @ fwd, -self.max_step_length, self.max_step_length))
        side = 1.0 if foot.startswith("left") else -1.0
        y = side * float(np.clip(side * (rel @ left), self.min_step_width, self.max_step_width))
        return stance.translation[:2] + x * fwd + y * left
