"""Stepping out of pushes from quiet standing (controller ``"push_step"``): stand in double
support, step only when the measured capture point leaves the support polygon, and land the foot
on the capture point predicted at touch-down.

Owns :class:`PushStepping`, a layer that makes its own contact schedule (the env's plan is only a
standing one) for :class:`ContactProjectedID`. Linear inverted pendulum (LIPM), ``omega =
sqrt(g / z_c)`` with ``z_c`` the CoM height over the floor at reset; horizontal components, world
frame:

* Capture point (DCM) ``xi = c + cd / omega`` from the measured CoM (Pinocchio).
* Balance (every phase): the ZMP ``p_d = xi + (k / omega) (xi - xi_home)`` (DCM feedback,
  Englsberger et al. 2015, with a constant reference ``xi_home``: the CoM over the feet as at
  reset) clamped ``zmp_margin`` inside the support polygon of the feet in contact; the CoM task
  gets ``cdd = omega^2 (c - p_cmd)`` (its xy targets are the measured ones; z is held).
  A clamped ZMP is the ankle strategy at its limit.
* Trigger: in double support, when ``xi`` is more than ``trigger_margin`` outside the support
  polygon (the ankles can no longer bring it back), a step begins: a weight shift of
  ``shift_time`` (the swing foot's load ramps off), then ``single_support`` s of swing.
* Stepping foot: the one on the side the capture point goes (its lateral offset from the feet's
  mid point, along the stance heading), so the legs never cross.
* Landing: the sole centre lands at the capture point predicted at touch-down, ``xi_T = p_s +
  (xi - p_s) exp(omega (t_land - t))`` (``p_s`` the commanded ZMP), plus ``land_offset`` m
  further along the step (the DCM then lies inside the new support polygon and the ZMP can pull
  it back; none after a diagonal push ahead, ``diagonal_land_offset``, where the ZMP may also
  come nearer the feet's edges, ``diagonal_zmp_margin``), clipped to the kinematic box of a step
  from the stance foot; re-planned every control step until ``freeze_time`` before the
  touch-down (minimum-jerk in xy, a ``step_height`` bump in z). After the touch-down the home
  moves over the new feet; a further step (the trailing foot, the stance the foot nearer the
  capture point) may follow after ``min_double_support`` s (at most ``max_steps``). A follow step:
  when the roll over the first step's foot lifts the other foot off the floor while the CoM goes
  over the new one, that foot steps in at once, to a ``follow_width`` stance.
* Crouch (``crouch``, only after a sideways push, ``cmp_cone``): when the first step's landing
  lies beyond the standing reach (``max_step_width``), the CoM height target drops ``crouch``
  and the step may land up to ``crouch_step_width`` across (the lower pelvis gives the reach).
* Centroidal angular momentum (``cmp_reach`` > 0, default 0.05 m; only after a sideways push,
  ``cmp_cone``): the part ``o`` of the desired ZMP that the support polygon clips is produced by
  a rate of the angular momentum about the CoM instead, ``L'_xy = m g (-o_y, o_x)``: the
  centroidal moment pivot (CMP) lies ``o`` outside the feet. With ``L'`` the LIPM reads ``cdd = omega^2 (c - p) + (e_z x L')_xy / (m z)``
  (``z`` the CoM height; from ``L' = sum (p_i - c) x f_i`` with ``f_z = m g``; checked with
  ``pinocchio.computeCentroidalMomentumTimeVariation``: ``L'_x < 0`` slows a CoM moving to
  ``+y``). The plan ``L_ref`` integrates that rate for at most ``momentum_time`` s (and not after
  the first touch-down), ``|L_ref| <= momentum_budget`` N·m·s, then returns to 0 over
  ``momentum_return`` s (a smooth ramp) while the ZMP, which has room then, makes up for it;
  about the axis ``e_z x o`` only (the roll axis in a sideways push), the pitch and yaw
  momentum (and all of it outside these phases) held at 0. The budget is an option, not yet
  derived from the waist and hip-roll limits.
  The whole-body controller's angular-momentum task (:class:`~wbsim.controllers.tasks.
  CentroidalAngularMomentumTask`) gets ``L_ref``, ``L'_ref``; the CoM task ``cdd`` above with
  ``L'_des = L'_ref + kd (L_ref - L)`` and the ZMP ``p_cmd`` clamped from ``p_d + (e_z x
  L'_des)_xy / (m g)``.
* Whole body: the torso and the posture are compliant during the recovery (their tasks see a
  fraction of their errors), and when the whole-body QP's exact problem is infeasible (it is,
  for most of a recovery) its relaxation is weighted to keep the commanded CoM acceleration.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pinocchio as pin

from wbsim.controllers.capture_stepping import _eval_quintic, _quintic
from wbsim.controllers.contact_projected_id import REFERENCE_MOMENTUM_GAINS, ContactProjectedID
from wbsim.controllers.tasks import TaskGains
from wbsim.errors import WbsimError, is_real
from wbsim.types import Command, ContactSchedule, RobotState

__all__ = ["PushStepping", "polygon_exit"]


def _hull_halfplanes(points: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Inward unit normals ``(m, 2)`` and offsets ``(m,)`` of the convex hull of ``points``
    (``n . x >= offset`` inside), or ``None`` for a degenerate hull."""
    from wbsim.contacts import convex_hull

    hull = convex_hull(points[:, :2])
    if len(hull) < 3:
        return None
    edges = np.roll(hull, -1, axis=0) - hull
    normals = np.stack([-edges[:, 1], edges[:, 0]], axis=1)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)  # inward (ccw hull)
    return normals, np.einsum("ij,ij->i", normals, hull)


def polygon_exit(p: np.ndarray, points: np.ndarray) -> float:
    """How far (m) the point ``p`` (2,) lies outside the convex hull of ``points`` (n, >= 2) along
    the most violated edge normal; negative inside (minus the distance to the nearest edge)."""
    hp = _hull_halfplanes(np.asarray(points, dtype=float))
    if hp is None:
        return float("inf")
    normals, offsets = hp
    return float(-np.min(normals @ np.asarray(p, dtype=float)[:2] - offsets))


def _clamp(p: np.ndarray, points: np.ndarray, margin: float) -> np.ndarray:
    """``p`` (2,) moved into the convex hull of ``points`` shrunk by ``margin`` (projections on
    the violated half-planes)."""
    hp = _hull_halfplanes(points)
    if hp is None:
        return p
    normals, offsets = hp
    offsets = offsets + margin
    q = np.asarray(p, dtype=float).copy()
    for _ in range(8):
        viol = normals @ q - offsets
        k = int(np.argmin(viol))
        if viol[k] >= -1e-12:
            break
        q = q - viol[k] * normals[k]
    return q


def _bump(s: float) -> tuple[float, float, float]:
    """``64 s^3 (1 - s)^3`` (1 at ``s = 1/2``, flat at both ends) and its first two derivatives."""
    s = min(max(s, 0.0), 1.0)
    return (
        64.0 * s**3 * (1.0 - s) ** 3,
        64.0 * (3 * s**2 - 12 * s**3 + 15 * s**4 - 6 * s**5),
        64.0 * (6 * s - 36 * s**2 + 60 * s**3 - 30 * s**4),
    )


class PushStepping:
    """Stand; step to the capture point when a push takes it out of the feet (module docstring).

    Args:
        robot: a :class:`wbsim.Robot` with feet ``left_foot`` and ``right_foot``.
        dcm_gain: ``k``, 1/s, of the DCM feedback.
        zmp_margin: m, the commanded ZMP stays this far inside the support polygon.
        trigger_margin: m, the first step begins when the capture point is this far outside the
            feet (negative: still inside, the step starts while the push acts).
        retrigger_margin: m, the same for a further step (after a touch-down).
        shift_time: s, the weight shift before the lift-off.
        single_support, next_single_support: s, the swing's duration (first, further steps).
        step_height, next_step_height: m, the swing's apex above the floor (a further step's
            0.03 instead of 0.06: on impulse grids around each direction's figure 29 / 48
            trials survived instead of 23, none of the directions worse).
        land_offset: m, the landing sole centre lies this far beyond the predicted capture point
            (along the line from the stance sole centre).
        land_offset_ahead: m, the same for a landing ahead of the stance foot (along its
            heading; ``None``: ``land_offset``). Grids (docs/locomotion.md, "A capturability
            bound"): ``land_offset`` 0 for every step recovered 45 / 315 deg pushes (13 / 16
            trials instead of 7) but lost backward ones.
        diagonal_cone, diagonal_land_offset, diagonal_zmp_margin: deg, m, m. A diagonal push
            ahead: at the first clipped ZMP the capture point has left its home within
            ``diagonal_cone`` of either 45 deg line ahead of the base's forward axis (25: 20-70
            deg from forward). For that episode a landing ahead of the stance foot lies
            ``diagonal_land_offset`` beyond the predicted capture point (instead of
            ``land_offset_ahead``) and the commanded ZMP may come ``diagonal_zmp_margin`` near
            the polygon's edge (instead of ``zmp_margin``); ``None``: no change. The wide
            diagonal step leaves the capture point on the front edge of the two feet's polygon
            (an offset along the step, mostly across, only widens the stance), and the ZMP's
            margin is then what holds it. The ladder at 45 / 315 deg (seed 0): 30.38 / 30.38 N s
            (twice standing projected_id; 24.05 before, 26.58 with ``land_offset_ahead`` 0
            alone); at 30.38 N s with ``land_offset_ahead`` 0 in every push, of 28 single
            option changes only ``zmp_margin`` 0, ``trigger_margin`` 0, ``lateral_offset`` 0.02
            and ``com_priority`` 20 kept both up. Only diagonal: ``zmp_margin`` 0 in every push
            lost the forward push (12.94 N s instead of 22.78) and 135 deg (20.25 instead of
            22.78).
        lateral_offset: m, and this far further out on the swing foot's side.
        max_step_length, max_step_back: m, forward / backward reach of a step from the stance foot.
        min_step_width, max_step_width: m, the lateral distance of the landing foot frame from the
            stance foot frame.
        freeze_time: s, the landing point is fixed this long before the touch-down.
        touchdown_wait: s the double support may wait past the planned touch-down for a sensed
            one (0: the planned time; a sensed touch-down after 90 % of the swing ends it early).
        min_double_support: s after a touch-down before another step may begin.
        max_steps: steps per episode at most.
        follow_height, follow_margin, follow_width: m. A follow step: after the first step's
            touch-down the other foot steps at once (no trigger, no ``min_double_support``)
            when it is not sensed in contact, its sole's lowest point is more than
            ``follow_height`` above the floor and the capture point is within ``follow_margin``
            of the new stance foot's sole. After a wide lateral step the CoM goes over the new
            foot and the roll lifts the other one; the whole-body QP still counts that foot as
            a contact, so no task puts it down (it drifted up to 0.37 m after a 21.5 N s
            sideways push, and the late step that followed failed). With the capture point
            further in, the body swings back and the foot comes down by itself; after later
            steps too (following there too cost a rung at 45 deg). The follow step lands at
            least ``follow_width`` across the stance foot's heading from it (instead of
            ``min_step_width``): the further the lifted leg swings in, the further out its
            momentum pushes the capture point. ``follow_height`` 0: no follow steps.
        crouch, crouch_step_width: m. In a sideways push (``cmp_cone``) whose first step's
            landing lies beyond ``max_step_width`` (the standing reach), the CoM height target
            drops by ``crouch`` over 0.3 s from then on (and stays there), and that step may
            land up to ``crouch_step_width`` across: the lower pelvis gives the leg the reach
            (docs/locomotion.md, "A capturability bound": a Pinocchio IK study gives 0.64 m at
            the standing height, 0.80 m with the pelvis 0.12 m lower). Crouching from the
            first trigger in every push, on impulse grids of 10 impulses 21-34.5 N s at 90 /
            270 deg 18 / 20 trials survived instead of 8 (``crouch`` 0.04 / 0.08 with the
            standing width 0.75: 7 / 3; 0.08 with 0.82: 13), but at 45 / 315 deg none of 16
            (7 without) and sideways 20.25 and 21 N s fell (the step, planned with the standing
            height's LIPM, landed short; the crouch's braking then hastened the capture point
            past the new foot): hence only sideways and only when the standing reach is short.
            0: no crouch.
        compliance: the fraction of the torso-orientation and posture errors their tasks see
            from a trigger until ``recovery_time`` s after the last touch-down (then a ramp back
            to 1 over ``recovery_time``): the torso's lean after a push is not fought.
        com_priority: ``w`` of the relaxation weight ``M + w m J_com^T J_com`` of the whole-body
            QP when its exact problem is infeasible (the relaxed QP otherwise
            gives up CoM acceleration first: measured, the realised CoM acceleration then
            differed from the commanded one in sign); 0: ``M``. In a swing too (double
            support only measured worse: 10 / 4 N s forward / backward instead of 18 / 12).
        passthrough: before the first trigger hand the env's schedule to
            :class:`ContactProjectedID` unchanged (plain standing; ``False``: the DCM feedback
            above from the start).
        cmp_reach: m, the CMP may lie this far outside the support polygon (module docstring,
            "Centroidal angular momentum"; 0: no momentum plan, no momentum task).
        momentum_budget: N·m·s, the most horizontal angular momentum the plan stores.
        momentum_time: s from the first clipped ZMP during which the plan may store momentum.
        momentum_return: s of the planned return of the stored momentum to 0.
        cmp_cone: deg; the layer acts only in an episode whose first clipped ZMP is clipped
            within this angle of the base's lateral axis (a sideways push); otherwise, and
            before that, the momentum task's weight is 0 and nothing changes (180: always).
        momentum_gains: ``(frequency_hz, damping_ratio, weight)`` of the whole-body
            controller's angular-momentum task when ``cmp_reach`` > 0 (unless
            ``wbc_options["gains"]`` sets ``angular_momentum``).
        wbc_options: options of :class:`ContactProjectedID` (``transition_time`` defaults to
            0.05 s here: a landing foot must take load at once; its ``torso_orientation`` task is
            off, weight 0, unless ``gains`` sets it: an upright torso fights the lean that
            ``compliance`` allows, and a 20 N s forward push then fells the robot; its
            ``swing_foot_position`` task is stiffer, 4.5 Hz instead of 3 Hz: with 3 Hz and
            these short swings a lateral step's foot landed up to 15 cm ahead of its target,
            the capture point behind the new foot's heel, and the robot fell backwards).

    Raises:
        WbsimError: a value out of range; UnknownNameError: an unknown whole-body option.
    """

    name = "push_step"

    def __init__(
        self,
        robot,
        dcm_gain: float = 1.5,
        zmp_margin: float = 0.03,
        trigger_margin: float = -0.02,
        shift_time: float = 0.02,
        single_support: float = 0.2,
        step_height: float = 0.04,
        land_offset: float = 0.03,
        land_offset_ahead: float | None = None,
        lateral_offset: float = 0.04,
        max_step_length: float = 0.5,
        min_step_width: float = 0.2,
        max_step_width: float = 0.75,
        freeze_time: float = 0.05,
        min_double_support: float = 0.15,
        max_steps: int = 6,
        follow_height: float = 0.02,
        follow_margin: float = 0.08,
        follow_width: float = 0.3,
        retrigger_margin: float = 0.0,
        crouch: float = 0.12,
        crouch_step_width: float = 0.85,
        compliance: float = 0.15,
        recovery_time: float = 1.0,
        next_single_support: float = 0.25,
        next_step_height: float = 0.03,
        max_step_back: float = 0.4,
        touchdown_wait: float = 0.0,
        passthrough: bool = False,
        com_priority: float = 10.0,
        cmp_reach: float = 0.05,
        momentum_budget: float = 5.0,
        momentum_time: float = 0.4,
        momentum_return: float = 0.5,
        momentum_gains: tuple = (2.0, 1.0, 0.2),
        cmp_cone: float = 30.0,
        diagonal_cone: float = 25.0,
        diagonal_land_offset: float | None = 0.0,
        diagonal_zmp_margin: float | None = 0.0,
        wbc_options: Mapping[str, Any] | None = None,
    ):
        checks = (
            ("dcm_gain", dcm_gain, dcm_gain >= 0),
            ("zmp_margin", zmp_margin, zmp_margin >= 0),
            ("trigger_margin", trigger_margin, True),
            ("shift_time", shift_time, shift_time > 0),
            ("single_support", single_support, single_support > 0),
            ("step_height", step_height, step_height >= 0),
            ("land_offset", land_offset, True),
            (
                "land_offset_ahead",
                land_offset if land_offset_ahead is None else land_offset_ahead,
                True,
            ),
            ("lateral_offset", lateral_offset, True),
            ("retrigger_margin", retrigger_margin, True),
            ("crouch", crouch, 0 <= crouch < 0.3),
            ("crouch_step_width", crouch_step_width, crouch_step_width > min_step_width),
            ("compliance", compliance, 0 <= compliance <= 1),
            ("recovery_time", recovery_time, recovery_time > 0),
            ("next_single_support", next_single_support, next_single_support > freeze_time),
            ("next_step_height", next_step_height, next_step_height >= 0),
            ("max_step_back", max_step_back, max_step_back > 0),
            ("touchdown_wait", touchdown_wait, touchdown_wait >= 0),
            ("com_priority", com_priority, com_priority >= 0),
            ("max_step_length", max_step_length, max_step_length > 0),
            ("min_step_width", min_step_width, min_step_width > 0),
            ("max_step_width", max_step_width, max_step_width > min_step_width),
            ("freeze_time", freeze_time, 0 <= freeze_time < single_support),
            ("min_double_support", min_double_support, min_double_support >= 0),
            ("max_steps", max_steps, max_steps >= 0),
            ("follow_height", follow_height, follow_height >= 0),
            ("follow_margin", follow_margin, True),
            ("follow_width", follow_width, 0 < follow_width < max_step_width),
            ("cmp_reach", cmp_reach, 0 <= cmp_reach < 0.5),
            ("momentum_budget", momentum_budget, momentum_budget >= 0),
            ("momentum_time", momentum_time, momentum_time >= 0),
            ("momentum_return", momentum_return, momentum_return > 0),
            ("cmp_cone", cmp_cone, 0 <= cmp_cone <= 180),
            ("diagonal_cone", diagonal_cone, 0 <= diagonal_cone <= 45),
            (
                "diagonal_zmp_margin",
                zmp_margin if diagonal_zmp_margin is None else diagonal_zmp_margin,
                (zmp_margin if diagonal_zmp_margin is None else diagonal_zmp_margin) >= 0,
            ),
            (
                "diagonal_land_offset",
                land_offset if diagonal_land_offset is None else diagonal_land_offset,
                True,
            ),
        )
        for name, value, ok in checks:
            if not (is_real(value) and math.isfinite(value) and ok):
                raise WbsimError(f"push_step: {name} = {value!r} is out of range")
        from wbsim.controllers import check_options

        options = {"transition_time": 0.05, **dict(wbc_options or {})}
        if options.get("gains") is None or isinstance(options["gains"], Mapping):
            # no upright-torso task: the recovery lets the upper body lean (``compliance``)
            options["gains"] = {
                "torso_orientation": (2.0, 1.0, 0.0),
                "swing_foot_position": (4.5, 1.0, 100.0),
                # cmp_reach 0: no momentum task, even where the env's plan gives L
                "angular_momentum": tuple(momentum_gains) if cmp_reach > 0 else (2.0, 1.0, 0.0),
                **dict(options.get("gains") or {}),
            }
        check_options("of projected_id (wbc_options)", ContactProjectedID, options, skip=("robot",))
        self.robot = robot
        self.wbc = ContactProjectedID(robot, **options)
        self.model = robot.pin_model
        self.data = self.model.createData()
        self.g = float(np.linalg.norm(self.model.gravity.linear))
        self.dcm_gain, self.zmp_margin = float(dcm_gain), float(zmp_margin)
        self.trigger_margin, self.shift_time = float(trigger_margin), float(shift_time)
        self.single_support, self.step_height = float(single_support), float(step_height)
        self.land_offset, self.max_step_length = float(land_offset), float(max_step_length)
        self.land_offset_ahead = (
            self.land_offset if land_offset_ahead is None else float(land_offset_ahead)
        )
        self.min_step_width, self.max_step_width = float(min_step_width), float(max_step_width)
        self.freeze_time, self.min_double_support = float(freeze_time), float(min_double_support)
        self.max_steps = int(max_steps)
        self.follow_height, self.follow_margin = float(follow_height), float(follow_margin)
        self.follow_width = float(follow_width)
        self.lateral_offset, self.retrigger_margin = float(lateral_offset), float(retrigger_margin)
        self.crouch, self.crouch_step_width = float(crouch), float(crouch_step_width)
        self.compliance, self.recovery_time = float(compliance), float(recovery_time)
        self.next_single_support = float(next_single_support)
        self.next_step_height = float(next_step_height)
        self.max_step_back, self.touchdown_wait = float(max_step_back), float(touchdown_wait)
        self.passthrough = bool(passthrough)
        self.com_priority = float(com_priority)
        self.cmp_reach, self.momentum_budget = float(cmp_reach), float(momentum_budget)
        self.momentum_time, self.momentum_return = float(momentum_time), float(momentum_return)
        self.cmp_cone = float(cmp_cone)
        self.diagonal_cone = float(diagonal_cone)
        self.diagonal_land_offset = (
            None if diagonal_land_offset is None else float(diagonal_land_offset)
        )
        self.diagonal_zmp_margin = (
            self.zmp_margin if diagonal_zmp_margin is None else float(diagonal_zmp_margin)
        )
        am = self.wbc.gains.angular_momentum
        self._momentum_gains = REFERENCE_MOMENTUM_GAINS if am is None else am
        if self.cmp_reach > 0 and self._momentum_gains.weight == 0:
            raise WbsimError("push_step: cmp_reach > 0 needs an angular_momentum task weight > 0")
        self._mass = float(sum(i.mass for i in self.model.inertias))
        self.feet = tuple(robot.foot_names)
        if set(self.feet) != {"left_foot", "right_foot"}:
            raise WbsimError(f"push_step: needs feet left_foot and right_foot, not {self.feet}")
        self._frame = {f: robot.feet[f].pin_frame_id for f in self.feet}
        self._points = {f: np.asarray(robot.feet[f].points_in_foot, dtype=float) for f in self.feet}
        self._sole = {f: p.mean(axis=0) for f, p in self._points.items()}
        self._base = self.wbc.base_frame_id
        self.reset_done = False

    # -- protocol ---------------------------------------------------------------------------------
    def reset(self, state: RobotState) -> None:
        """Reset the whole-body controller; stand on both feet, the home over them as now."""
        self.wbc.reset(state)
        c, _, feet = self._measure(state)
        mid = self._mid(feet)
        self._home_offset = c[:2] - mid
        self._home = c[:2].copy()
        self._z = float(c[2])
        self._R0 = self.data.oMf[self._base].rotation.copy()
        self._posture0 = np.asarray(state.q)[self.wbc.qidx].copy()
        self._floor = min(
            float(np.min((M.rotation @ self._points[f].T)[2] + M.translation[2]))
            for f, M in feet.items()
        )
        self._foot_z = {f: float(M.translation[2]) for f, M in feet.items()}
        self.omega = math.sqrt(self.g / max(self._z - self._floor, 1e-3))
        self.mode, self.t_mode = "stand", float(state.t) - 1e3
        self._T, self._h = self.single_support, self.step_height
        self.swing_foot: str | None = None
        self.steps: list[dict[str, Any]] = []
        self._swing: dict[str, Any] | None = None
        self._target = np.zeros(2)  # the swing foot frame's landing (x, y), m, world
        self._last_exit = -float("inf")
        # the angular-momentum plan: L_ref (3,) N·m·s, when storing began, its value then
        self._L_ref = np.zeros(3)
        self._L_peak: np.ndarray | None = None
        self._L_since: float | None = None
        self._L_return_at: float | None = None
        self._t_prev = float(state.t)
        self._sideways: bool | None = None  # decided at the first clipped ZMP (cmp_cone)
        self._diagonal = False  # decided with _sideways (diagonal_cone)
        self._crouch_at: float | None = None  # when the crouch began (``crouch``)
        task = self.wbc.momentum_task
        if task is not None:  # weight 0 until the layer switches on
            g = self._momentum_gains
            task.gains = TaskGains(g.frequency_hz, g.damping_ratio, 0.0)
        self.reset_done = True

    def _measure(self, state: RobotState) -> tuple[np.ndarray, np.ndarray, dict]:
        model, data = self.model, self.data
        pin.forwardKinematics(model, data, state.q, state.v)
        pin.centerOfMass(model, data, state.q, state.v, False)
        pin.updateFramePlacements(model, data)
        feet = {f: data.oMf[i] for f, i in self._frame.items()}
        return data.com[0].copy(), data.vcom[0].copy(), feet

    def _sole_points(self, feet: dict, names) -> np.ndarray:
        return np.vstack(
            [(feet[f].rotation @ self._points[f].T).T + feet[f].translation for f in names]
        )

    def _mid(self, feet: dict) -> np.ndarray:
        return (
            0.5 * sum(feet[f].rotation @ self._sole[f] + feet[f].translation for f in self.feet)[:2]
        )

    def compute(self, state: RobotState, schedule: ContactSchedule) -> Command:
        """The whole-body command of this step (module docstring); ``Command.info`` adds
        ``capture_point`` (2,), ``zmp_command`` (2,), ``push_step_mode`` and ``stepping_time``."""
        t_start = time.perf_counter()
        if not self.reset_done:
            self.reset(state)
        t = float(state.t)
        c, cd, feet = self._measure(state)
        w = self.omega
        xi = c[:2] + cd[:2] / w
        both = frozenset(self.feet)
        if self.mode == "stand":
            exit_ = polygon_exit(xi, self._sole_points(feet, self.feet))
            margin = self.retrigger_margin if self.steps else self.trigger_margin
            lifted = self._lifted(state, xi, feet)
            if lifted is not None and len(self.steps) < self.max_steps:
                self._begin_step(t, xi, feet, lifted)
            elif (
                exit_ > margin
                and exit_ > self._last_exit
                and len(self.steps) < self.max_steps
                and t - self.t_mode >= self.min_double_support
            ):
                self._begin_step(t, xi, feet)
            self._last_exit = exit_
        if self.mode == "shift" and t - self.t_mode >= self.shift_time:
            self.mode, self.t_mode = "swing", self.t_mode + self.shift_time
            M = feet[self.swing_foot]
            p0 = M.translation.copy()
            self._swing = {
                "p0": p0,
                "t0": t,
                "coef": _quintic(p0[:2], np.zeros(2), np.zeros(2), self._target, self._T),
                "target": self._target.copy(),
            }
        if self.mode == "swing":
            sensed = state.sensed_contacts or frozenset()
            landed = t - self.t_mode >= self._T + self.touchdown_wait - 1e-9 or (
                self.swing_foot in sensed and t - self.t_mode > 0.9 * self._T
            )
            if landed:
                self.mode, self.t_mode = "stand", t
                self._home = self._mid(feet) + self._home_offset
                self.steps[-1]["landed_at"] = t
                self.steps[-1]["landed"] = feet[self.swing_foot].translation[:2].copy()
                self.steps[-1]["yaw"] = {
                    f: math.atan2(M.rotation[1, 0], M.rotation[0, 0]) for f, M in feet.items()
                }
                self.swing_foot = None
        if not self.steps and self.passthrough:  # no push to step out of: plain standing
            cmd = self.wbc.compute(state, schedule)
            cmd.info.update(
                capture_point=xi,
                zmp_command=xi,
                push_step_mode=self.mode,
                stepping_time=time.perf_counter() - t_start,
            )
            return cmd
        stance = (
            both if self.swing_foot is None or self.mode == "shift" else (both - {self.swing_foot})
        )
        p_d = xi + (self.dcm_gain / w) * (xi - self._home)
        support = self._sole_points(feet, stance)
        margin = self.diagonal_zmp_margin if self._diagonal else self.zmp_margin
        p_cmd = _clamp(p_d, support, margin)
        if self._sideways is None:
            self._classify(p_d - p_cmd, xi)
            if self._diagonal:  # the diagonal margin from this control step on
                margin = self.diagonal_zmp_margin
                p_cmd = _clamp(p_d, support, margin)
        Ld = None
        if self.cmp_reach > 0:
            L_rate, Ld = self._momentum_plan(t, state, p_d, p_cmd)
            shift = np.array([-Ld[1], Ld[0]]) / self._mass  # (e_z x L'_des)_xy / m
            p_cmd = _clamp(p_d + shift / self.g, support, margin)
        tg: dict[str, Any] = dict(schedule.targets or {})
        for key in [k for k in tg if k.endswith("_wrench")]:
            del tg[key]
        z, zd, zdd = self._height(t)
        tg["com"] = np.array([c[0], c[1], z])
        tg["com_velocity"] = np.array([cd[0], cd[1], zd])
        tg["com_acceleration"] = np.array(
            [w * w * (c[0] - p_cmd[0]), w * w * (c[1] - p_cmd[1]), zdd]
        )
        if Ld is not None:  # cdd = omega^2 (c - p) + (e_z x L')_xy / (m z)
            tg["com_acceleration"][:2] += shift / (self._z - self._floor)
            tg["angular_momentum"], tg["angular_momentum_rate"] = self._L_ref.copy(), L_rate
        alpha = self._stiffness(t)
        if alpha < 1.0:  # upper body compliant: the torso's lean helps, do not fight it
            R = self.data.oMf[self._base].rotation
            tg["base_orientation"] = R @ pin.exp3(alpha * pin.log3(R.T @ self._R0))
            q = np.asarray(state.q)[self.wbc.qidx]
            tg["posture"] = q + alpha * (self._posture0 - q)
        if self.mode == "shift":
            self._target = self._landing(t, xi, p_cmd, feet)
            sched = ContactSchedule(
                both, both - {self.swing_foot}, "shift", 1, t - self.t_mode, self.shift_time, tg
            )
        elif self.mode == "swing":
            self._swing_targets(tg, t, xi, p_cmd, feet)
            sched = ContactSchedule(stance, both, "swing", 2, t - self.t_mode, self._T, tg)
        else:
            sched = ContactSchedule(both, both, "stand", 0, t - self.t_mode, float("inf"), tg)
        if self.com_priority > 0:  # the relaxed QP keeps the CoM acceleration (docstring)
            Jc = pin.jacobianCenterOfMass(self.model, self.data, state.q, False)
            self.wbc.relaxation_extra_weight = self.com_priority * self._mass * (Jc.T @ Jc)
        try:
            cmd = self.wbc.compute(state, sched)
        finally:
            self.wbc.relaxation_extra_weight = None
        cmd.info.update(
            capture_point=xi,
            zmp_command=p_cmd,
            push_step_mode=self.mode,
            stepping_time=time.perf_counter() - t_start,
        )
        return cmd

    # -- pieces -----------------------------------------------------------------------------------
    def _momentum_plan(
        self, t: float, state: RobotState, p_d: np.ndarray, p_cmd: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The angular-momentum plan of this step (module docstring): ``(L'_ref, L'_des)``, each
        ``(3,)`` N·m, world axes about the CoM: the planned rate and the rate the task asks for,
        ``L'_ref + kd (L_ref - L)`` with the measured ``L`` (N·m·s,
        ``pinocchio.computeCentroidalMomentum``); updates ``L_ref``."""
        dt, self._t_prev = max(t - self._t_prev, 0.0), t
        hg = pin.computeCentroidalMomentum(self.model, self.data, state.q, state.v)
        L = np.array(hg.angular)
        rate: np.ndarray = np.zeros(3)
        o = p_d - p_cmd  # the clipped part of the desired ZMP
        n = float(np.linalg.norm(o))
        landed = bool(self.steps) and "landed_at" in self.steps[0]
        if not self._sideways:  # off: no task, no plan (as with cmp_reach 0)
            return np.zeros(3), np.zeros(3)
        if self._L_since is None:  # switched on (this control step: the first clipped ZMP)
            self._L_since = t
            self.wbc.momentum_task.gains = self._momentum_gains  # type: ignore[union-attr]
        storing = (
            self._L_since is not None
            and self._L_return_at is None
            and t - self._L_since < self.momentum_time
            and not landed
        )
        if storing:
            if n > self.cmp_reach:
                o = o * (self.cmp_reach / n)
            rate[:2] = self._mass * self.g * np.array([-o[1], o[0]])
            Lxy = self._L_ref[:2]
            nL = float(np.linalg.norm(Lxy))
            if nL >= self.momentum_budget and float(rate[:2] @ Lxy) > 0:  # budget: no further
                rate[:2] -= (float(rate[:2] @ Lxy) / (nL * nL)) * Lxy
            self._L_ref = self._L_ref + rate * dt
        elif self._L_since is not None:
            if self._L_return_at is None or self._L_peak is None:
                self._L_return_at, self._L_peak = t, self._L_ref.copy()
            s = min((t - self._L_return_at) / self.momentum_return, 1.0)
            f = 1.0 - (10 * s**3 - 15 * s**4 + 6 * s**5)  # smooth from 1 to 0
            df = -(30 * s**2 - 60 * s**3 + 30 * s**4) / self.momentum_return
            self._L_ref, rate = self._L_peak * f, self._L_peak * df
        kd = self._momentum_gains.kd
        return rate, rate + kd * (self._L_ref - L)

    def _classify(self, o: np.ndarray, xi: np.ndarray) -> None:
        """At the first clipped ZMP (``o`` (2,), the clipped part; before any touch-down), for
        the episode: a sideways push, ``o`` within ``cmp_cone`` of the base's lateral axis (the
        momentum layer and the crouch act only in a sideways one), and a diagonal push ahead,
        the capture point's offset ``xi (2,) - xi_home`` within ``diagonal_cone`` of either 45
        deg line ahead of the base's forward axis (``diagonal_land_offset``,
        ``diagonal_zmp_margin``). The first clip's ``o`` lies along the feet's front or back edge
        in a diagonal push too, hence the capture point's direction for that one."""
        n = float(np.linalg.norm(o))
        if n <= 1e-9 or (self.steps and "landed_at" in self.steps[0]):
            return
        R = self.data.oMf[self._base].rotation
        yaw = math.atan2(R[1, 0], R[0, 0])
        fwd, left = (
            np.array([math.cos(yaw), math.sin(yaw)]),
            np.array([-math.sin(yaw), math.cos(yaw)]),
        )
        self._sideways = abs(float(o @ left)) >= n * math.cos(math.radians(self.cmp_cone))
        d = xi - self._home
        angle = math.degrees(math.atan2(abs(float(d @ left)), float(d @ fwd)))  # 0: ahead
        self._diagonal = abs(angle - 45.0) <= self.diagonal_cone

    def _stiffness(self, t: float) -> float:
        """The fraction of the torso's and the posture's errors their tasks see: ``compliance``
        from a step's trigger until ``recovery_time`` after the last touch-down, then a linear
        ramp back to 1 over ``recovery_time``."""
        if not self.steps:
            return 1.0
        if self.mode != "stand":
            return self.compliance
        s = (t - self.t_mode - self.recovery_time) / self.recovery_time
        return self.compliance + (1.0 - self.compliance) * min(max(s, 0.0), 1.0)

    def _height(self, t: float) -> tuple[float, float, float]:
        """CoM height target, velocity, acceleration: the reset height, lowered by ``crouch`` over
        0.3 s from when a sideways first step needed more than the standing reach (``crouch``)."""
        if self._crouch_at is None:
            return self._z, 0.0, 0.0
        T = 0.3
        s = min(max((t - self._crouch_at) / T, 0.0), 1.0)
        f = 10 * s**3 - 15 * s**4 + 6 * s**5
        df = (30 * s**2 - 60 * s**3 + 30 * s**4) / T if s < 1.0 else 0.0
        ddf = (60 * s - 180 * s**2 + 120 * s**3) / T**2 if s < 1.0 else 0.0
        return self._z - self.crouch * f, -self.crouch * df, -self.crouch * ddf

    def _lifted(self, state: RobotState, xi: np.ndarray, feet: dict) -> str | None:
        """The last step's stance foot if it is to follow (class docstring: a follow step)."""
        if self.follow_height <= 0.0 or len(self.steps) != 1 or "landed_at" not in self.steps[0]:
            return None
        foot, lead = self.steps[-1]["stance"], self.steps[-1]["foot"]
        if foot in (state.sensed_contacts or frozenset()):
            return None
        if polygon_exit(xi, self._sole_points(feet, (lead,))) > self.follow_margin:
            return None
        lowest = float(np.min(self._sole_points(feet, (foot,))[:, 2])) - self._floor
        return foot if lowest > self.follow_height else None

    def _begin_step(self, t: float, xi: np.ndarray, feet: dict, foot: str | None = None) -> None:
        """Pick the foot on the capture point's side (or step ``foot``: a follow step); start the
        weight shift."""
        first = not self.steps
        self._T = self.single_support if first else self.next_single_support
        self._h = self.step_height if first else self.next_step_height
        if foot is not None:
            self.swing_foot = foot
        elif first:  # from standing: the foot on the side the capture point goes
            mid = self._mid(feet)
            lf = feet["left_foot"].translation[:2] - feet["right_foot"].translation[:2]
            left = lf / max(float(np.linalg.norm(lf)), 1e-9)
            self.swing_foot = "left_foot" if float((xi - mid) @ left) >= 0.0 else "right_foot"
        else:  # a further step: the trailing foot (the stance is the nearer one)
            dist = {
                f: float(
                    np.linalg.norm(
                        xi - (feet[f].rotation @ self._sole[f] + feet[f].translation)[:2]
                    )
                )
                for f in self.feet
            }
            self.swing_foot = max(self.feet, key=lambda f: dist[f])
        self.mode, self.t_mode = "shift", t
        stance = "right_foot" if self.swing_foot == "left_foot" else "left_foot"
        self._target = feet[self.swing_foot].translation[:2].copy()
        self.steps.append(
            {
                "foot": self.swing_foot,
                "stance": stance,
                "at": t,
                "capture_point": xi.copy(),
                "follow": foot is not None,
            }
        )

    def _landing(self, t: float, xi: np.ndarray, p_cmd: np.ndarray, feet: dict) -> np.ndarray:
        """The swing foot frame's landing (2,): its sole centre on the capture point predicted at
        the touch-down plus ``land_offset``, within the step's kinematic box."""
        foot = self.swing_foot
        if foot is None:
            raise AssertionError("_landing outside a step")
        stance = self.steps[-1]["stance"]
        t_land = self.t_mode + self._T + (self.shift_time if self.mode == "shift" else 0.0)
        remaining = max(t_land - t, 0.0)
        xi_T = p_cmd + (xi - p_cmd) * math.exp(self.omega * remaining)
        S = feet[stance]
        d = xi_T - (S.rotation @ self._sole[stance] + S.translation)[:2]
        n = float(np.linalg.norm(d))
        Rs = S.rotation
        yaw = math.atan2(Rs[1, 0], Rs[0, 0])
        ahead = float(d @ np.array([math.cos(yaw), math.sin(yaw)])) >= 0.0
        offset = self.land_offset_ahead if ahead else self.land_offset
        if ahead and self._diagonal and self.diagonal_land_offset is not None:
            offset = self.diagonal_land_offset
        sole = xi_T + (offset * d / n if n > 1e-9 else 0.0)
        side = 1.0 if foot.startswith("left") else -1.0
        sole = sole + side * self.lateral_offset * np.array([-math.sin(yaw), math.cos(yaw)])
        R = feet[foot].rotation
        frame = sole - (R @ self._sole[foot])[:2]
        if self.crouch > 0 and self._sideways and self._crouch_at is None and len(self.steps) == 1:
            across = side * float(
                (frame - S.translation[:2]) @ np.array([-math.sin(yaw), math.cos(yaw)])
            )
            if across > self.max_step_width:  # beyond the standing reach: crouch from now on
                self._crouch_at = t
        return self._reachable(frame, S, foot)

    def _swing_targets(
        self, tg: dict, t: float, xi: np.ndarray, p_cmd: np.ndarray, feet: dict
    ) -> None:
        sw, foot = self._swing, self.swing_foot
        if sw is None or foot is None:
            raise AssertionError("_swing_targets outside a swing")
        tau = t - sw["t0"]
        remaining = self._T - (t - self.t_mode)
        if remaining > self.freeze_time:
            target = self._landing(t, xi, p_cmd, feet)
            if float(np.linalg.norm(target - sw["target"])) > 0.003:
                x, v, a = _eval_quintic(sw["coef"], tau)
                sw["coef"] = _quintic(x, v, a, target, max(remaining, 1e-3))
                sw["t0"], sw["target"], tau = t, target, 0.0
        x, v, a = _eval_quintic(sw["coef"], min(tau, max(self.t_mode + self._T - sw["t0"], 0.0)))
        T = self._T
        s = (t - self.t_mode) / T
        b, db, ddb = _bump(s)
        z0 = self._foot_z[foot]
        tg[foot] = np.array([x[0], x[1], z0 + self._h * b - 0.004 * min(s, 2.0)])
        tg[f"{foot}_velocity"] = np.array([v[0], v[1], self._h * db / T])
        tg[f"{foot}_acceleration"] = np.array([a[0], a[1], self._h * ddb / T**2])
        self.steps[-1]["target"] = sw["target"].copy()

    def _reachable(self, target: np.ndarray, stance, foot: str) -> np.ndarray:
        """``target`` (2,) clipped to the box of a step of ``foot`` from the ``stance`` placement
        (``+-max_step_length`` along its heading; across it, on the swing foot's side, between
        ``min_step_width``, ``follow_width`` for a follow step, and ``max_step_width``, or
        ``crouch_step_width`` when crouched)."""
        R = stance.rotation
        yaw = math.atan2(R[1, 0], R[0, 0])
        fwd = np.array([math.cos(yaw), math.sin(yaw)])
        left = np.array([-math.sin(yaw), math.cos(yaw)])
        rel = target - stance.translation[:2]
        x = float(np.clip(rel @ fwd, -self.max_step_back, self.max_step_length))
        side = 1.0 if foot.startswith("left") else -1.0
        inner = self.min_step_width
        if self.steps[-1]["follow"]:
            inner = max(inner, self.follow_width)
        outer = self.max_step_width if self._crouch_at is None else self.crouch_step_width
        y = side * float(np.clip(side * (rel @ left), inner, outer))
        return stance.translation[:2] + x * fwd + y * left
