"""Contact schedules: which feet are planned in contact when, and the task targets of each instant.

Two kinds of plan, one interface (``set_context(**values)`` at reset, ``at(t)`` ->
:class:`~wbsim.types.ContactSchedule`, ``switch_times(horizon)``, ``command_velocity(t)``):

* :class:`PhasePlan`, a list of :class:`Phase` with target functions of the phase progress
  (standing, :func:`one_leg_plan`, the former :func:`step_in_place_plan`);
* :class:`ReferencePlan`, a :class:`~wbsim.reference.WholeBodyReference` built from the reset
  context (:func:`walking_plan`, :func:`stepping_plan`: the LIPM pattern generator of
  :mod:`wbsim.planning.walking`), whose schedule carries the reference's targets
  (:data:`wbsim.reference.TARGET_KEYS`).

Envs own a plan and hand its schedule to the controller and into ``info["schedule"]``. The context
an env sets (:meth:`wbsim.envs.humanoid.HumanoidEnv.reset`): ``com`` (3,), ``left_foot``,
``right_foot`` (3,) foot frame origins, ``left_sole_centre``, ``right_sole_centre`` (2,),
``left_foot_rotation``, ``right_foot_rotation``, ``base_rotation`` (3, 3), ``mass`` (kg),
``gravity`` (3,) m/s^2, ``floor_height`` (m, the lowest sole point), ``left_foot_sole_depth``,
``right_foot_sole_depth`` (m, the foot frame's height above its sole points when level); world
frame, the robot at rest.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wbsim.types import ContactSchedule

__all__ = [
    "BOTH_FEET",
    "DCC_PLANS",
    "MAX_WALK_SPEED",
    "Phase",
    "PhasePlan",
    "ReferencePlan",
    "dcc_plan",
    "foot_lift_targets",
    "one_leg_plan",
    "standing_plan",
    "step_in_place_plan",
    "stepping_plan",
    "walking_plan",
]

BOTH_FEET = frozenset({"left_foot", "right_foot"})

#: A target function: ``(s, context) -> value`` with ``s`` in [0, 1] the phase progress and
#: ``context`` the plan's reference values (e.g. initial CoM and foot positions).
TargetFn = Callable[[float, Mapping[str, np.ndarray]], np.ndarray]


@dataclass(frozen=True)
class Phase:
    """One phase of a contact schedule.

    Attributes:
        name: phase name (``"stand"``, ``"shift"``, ``"lift"``, ``"hold"``, ``"lower"``).
        duration: s (``inf`` for the last, open-ended phase).
        contact_set: feet planned in contact during the phase.
        targets: target name -> :data:`TargetFn` (e.g. ``"com"`` -> world CoM position, m).
    """

    name: str
    duration: float
    contact_set: frozenset[str] = BOTH_FEET
    targets: Mapping[str, TargetFn] = field(default_factory=dict)


class PhasePlan:
    """A sequence of phases; time beyond the end stays in the last phase.

    Args:
        phases: the phases, in order.
        periodic: repeat the sequence forever (step in place) instead of staying in the last phase.
        repeat_from: index of the phase a periodic plan repeats from.

    Treat a plan as immutable once built (only :meth:`set_context` changes it): :meth:`at`, which
    runs every env step, uses start times and successors cached at construction.
    """

    def __init__(self, phases: Sequence[Phase], periodic: bool = False, repeat_from: int = 0):
        if not phases:
            raise ValueError("a PhasePlan needs at least one phase")
        self.phases = tuple(phases)
        self.periodic = periodic
        self.repeat_from = repeat_from if periodic else len(self.phases)
        self.starts = np.concatenate([[0.0], np.cumsum([p.duration for p in self.phases])[:-1]])
        self.context: dict[str, np.ndarray] = {}
        # plain-float copies for :meth:`at`, which runs every step (bisect instead of searchsorted)
        self._starts = self.starts.tolist()
        self._duration = float(sum(p.duration for p in self.phases))
        self._wraps = self.periodic and math.isfinite(self._duration)
        self._t0 = self._starts[self.repeat_from] if self._wraps else 0.0
        self._finite = [math.isfinite(p.duration) for p in self.phases]
        self._next = [
            self.phases[i + 1]
            if i + 1 < len(self.phases)
            else (self.phases[self.repeat_from] if periodic else p)
            for i, p in enumerate(self.phases)
        ]
        # per phase, the schedule's fields that do not change within the phase (at() adds
        # phase_time and targets)
        self._fields: list[dict[str, Any]] = [
            {
                "contact_set": p.contact_set,
                "next_contact_set": nxt.contact_set,
                "phase": p.name,
                "phase_index": i,
                "phase_duration": p.duration,
            }
            for i, (p, nxt) in enumerate(zip(self.phases, self._next))
        ]

    @property
    def duration(self) -> float:
        """Duration of one pass through the phases, s."""
        return float(sum(p.duration for p in self.phases))

    def set_context(self, **values: np.ndarray) -> None:
        """Reference values that target functions read (set by the env at reset)."""
        self.context = {k: np.asarray(v, dtype=float).copy() for k, v in values.items()}

    def _wrap(self, t: float) -> float:
        """Map ``t`` into one pass; periodic plans repeat from phase ``repeat_from`` on."""
        if not self._wraps or t < self._duration:
            return t
        t0 = self._t0
        return t0 + (t - t0) % (self._duration - t0)

    def index_at(self, t: float) -> int:
        return bisect.bisect_right(self._starts, self._wrap(t)) - 1

    def at(self, t: float) -> ContactSchedule:
        """The :class:`ContactSchedule` at time ``t`` (s).

        Targets with a finite phase duration come with their time derivative ``<name>_velocity``,
        by central differences in the phase progress ``s`` (step ``1e-4``, one-sided at the phase
        ends): three evaluations of each target function.
        """
        if self._wraps and t >= self._duration:
            t = self._wrap(t)
        # the phase index is index_at(t) of the wrapped t (wrapped once more, as index_at does)
        i = bisect.bisect_right(self._starts, self._wrap(t) if self._wraps else t) - 1
        phase = self.phases[i]
        t_in = t - self._starts[i]
        finite = self._finite[i]
        s = min(max(t_in / phase.duration, 0.0), 1.0) if finite else 0.0
        if phase.targets:
            context = self.context
            targets = {name: fn(s, context) for name, fn in phase.targets.items()}
            if finite:
                # time derivatives for feed-forward, by central differences in the phase progress s
                ds = 1e-4
                lo, hi = max(s - ds, 0.0), min(s + ds, 1.0)
                scale = (hi - lo) * phase.duration
                for name, fn in phase.targets.items():
                    targets[f"{name}_velocity"] = (fn(hi, context) - fn(lo, context)) / scale
        else:
            targets = {}
        return ContactSchedule(**self._fields[i], phase_time=float(t_in), targets=targets)

    def command_velocity(self, t: float) -> np.ndarray:
        """The commanded base velocity at ``t``: ``(3,)`` zeros (a phase plan does not travel)."""
        return np.zeros(3)

    def switch_times(self, horizon: float) -> list[tuple[float, frozenset[str], frozenset[str]]]:
        """Planned contact-set switches up to ``horizon`` s: ``(time, before, after)``."""
        out, t, i, prev = [], 0.0, 0, self.phases[0].contact_set
        while t <= horizon:
            phase = self.phases[i]
            if phase.contact_set != prev:
                out.append((t, prev, phase.contact_set))
                prev = phase.contact_set
            if not np.isfinite(phase.duration):
                break
            t += phase.duration
            i += 1
            if i == len(self.phases):
                if not self.periodic:
                    break
                i = self.repeat_from
        return out


def standing_plan() -> PhasePlan:
    """Quiet standing on both feet, forever."""
    return PhasePlan([Phase("stand", float("inf"), BOTH_FEET)])


def smoothstep(s: float) -> float:
    """Quintic (minimum-jerk) profile on [0, 1]: zero velocity and acceleration at both ends."""
    s = min(max(s, 0.0), 1.0)
    return s * s * s * (10.0 - 15.0 * s + 6.0 * s * s)


def _lerp(a: np.ndarray, b: np.ndarray, s: float) -> np.ndarray:
    return a + (b - a) * smoothstep(s)


def foot_lift_targets(foot: str, lift_height: float) -> tuple[TargetFn, TargetFn, TargetFn]:
    """A foot's targets for a vertical lift (world position of the foot link origin, m, from its
    reset position in the context under ``foot``): at rest, rising ``lift_height`` m over a phase
    (quintic ``smoothstep`` of the phase fraction ``s``, zero velocity and acceleration at both
    ends), and held up. Each is ``fn(s, context) -> (3,)``."""

    def rest(s, c):
        return c[foot].copy()

    def up(s, c):
        return c[foot] + np.array([0.0, 0.0, lift_height * smoothstep(s)])

    def hold(s, c):
        return c[foot] + np.array([0.0, 0.0, lift_height])

    return rest, up, hold


def one_leg_plan(
    lift_height: float = 0.05,
    shift_margin: float = 0.01,
    touchdown_speed: float = 0.03,
    return_fraction: float = 0.5,
) -> PhasePlan:
    """The one-leg scenario: stand 1 s, shift the CoM towards the left sole (1.5 s), lift the right foot
    ``lift_height`` m (1 s), hold 2 s, lower it (1 s), stand on both feet 1 s (CoM back towards the
    middle).

    The CoM path keeps the centre of pressure (CoP) it needs well inside the support (linear inverted
    pendulum: CoP = CoM - (z / g) CoM acceleration, ``z / g`` = 0.068 s² on the G1):

    * ``shift`` (both feet): quintic to ``shift_margin`` m short of the left sole centre, on the
      line from the start. The right foot then still carries a few percent of the weight, so a
      controller has a load to ramp to zero at the planned lift (``ContactProjectedID`` does) rather
      than a foot that is already almost unloaded and whose sensed contact flickers. Going all the
      way, the braking at the end of the shift (0.3 m/s²) needs the CoP ~2 cm outside the CoM,
      i.e. beyond the left sole centre, on the edge of the sole.
    * ``lift`` (left foot only): the last ``shift_margin`` m, quintic over the phase (peak 0.06
      m/s², the CoP moves ~4 mm).
    * ``hold``: over the left sole centre.
    * ``lower``: back to ``shift_margin`` m short of the centre (the ``lift`` move reversed), so that
      the right foot takes load naturally once down.
    * ``stand_again`` (both feet): quintic to ``return_fraction`` of the way from the left sole
      centre to the initial CoM. Only the left sole can start the CoM towards the middle (the CoP
      must lie on the far side of the CoM), so the start acceleration is bounded by the CoP room on
      the left sole: a full return in 1 s with a quintic needs the CoP 2.7 cm beyond the left sole
      centre (the sole's edge is 2.5-3 cm away); the slow-start profiles tried that stay within
      ~1.2 cm brake at 1.3 m/s² or more at the end. Half-way (default) needs 7 mm and 0.3 m/s².

    The right foot rises (quintic, ``lift``), holds ``lift_height`` and comes down on a cubic that
    arrives at ``touchdown_speed`` m/s exactly at the planned switch: fast enough that the sensed
    touch-down coincides with it (0.1 mm of tracking error is 3 ms at 3 cm/s) rather than creeping
    in, slow enough that the impact does not bounce the foot (0.1 m/s did on the G1).

    Targets: ``"com"`` (world CoM, m) and ``"right_foot"`` (world position of the right foot link
    origin, m), each with its time derivative ``"com_velocity"``, ``"right_foot_velocity"`` (m/s) for
    feed-forward (see :meth:`PhasePlan.at`).

    Context (set by the env at reset): ``com``, ``left_foot``, ``right_foot``, ``left_sole_centre``.
    """
    points: dict = {}

    def _points(c):
        """The CoM way points of context ``c``, computed once per context (``at`` evaluates every
        target three times per step)."""
        if points.get("context") is not c:
            over = np.array([c["left_sole_centre"][0], c["left_sole_centre"][1], c["com"][2]])
            d = over - c["com"]
            n = float(np.linalg.norm(d))
            short = over - d * (min(shift_margin, n) / n) if n > 0 else over.copy()
            back = over + return_fraction * (c["com"] - over)
            points.update(context=c, over=over, short=short, back=back)
        return points

    def com_stand(s, c):
        return c["com"].copy()

    def com_shift(s, c):
        return _lerp(c["com"], _points(c)["short"], s)

    def com_finish(s, c):
        p = _points(c)
        return _lerp(p["short"], p["over"], s)

    def com_left(s, c):
        return _points(c)["over"].copy()

    def com_unfinish(s, c):
        p = _points(c)
        return _lerp(p["over"], p["short"], s)

    def com_back(s, c):
        p = _points(c)
        return _lerp(p["short"], p["back"], s)

    foot_rest, foot_up, foot_hold = foot_lift_targets("right_foot", lift_height)

    def foot_down(s, c):
        # cubic Hermite from the hold (at rest) to the rest height at s = 1, arriving at
        # touchdown_speed (docstring)
        slope = -touchdown_speed * down_time / lift_height if lift_height > 0 else 0.0
        z = (2.0 * s - 3.0) * s * s + 1.0 + slope * (s - 1.0) * s * s
        return c["right_foot"] + np.array([0.0, 0.0, lift_height * z])

    down_time = 1.0
    left = frozenset({"left_foot"})
    return PhasePlan(
        [
            Phase("stand", 1.0, BOTH_FEET, {"com": com_stand, "right_foot": foot_rest}),
            Phase("shift", 1.5, BOTH_FEET, {"com": com_shift, "right_foot": foot_rest}),
            Phase("lift", 1.0, left, {"com": com_finish, "right_foot": foot_up}),
            Phase("hold", 2.0, left, {"com": com_left, "right_foot": foot_hold}),
            Phase("lower", down_time, left, {"com": com_unfinish, "right_foot": foot_down}),
            Phase("stand_again", 1.0, BOTH_FEET, {"com": com_back, "right_foot": foot_rest}),
        ]
    )


def step_in_place_plan(
    step_height: float = 0.03, shift_time: float = 0.8, swing_time: float = 0.8
) -> PhasePlan:
    """Alternating single supports, periodic: shift the CoM from the middle over the left sole
    (``shift_time`` s, both feet), then repeat: lift and put down the right foot (``swing_time`` s, left
    only), shift over the right sole, lift and put down the left foot, shift over the left sole.

    Targets: ``"com"`` and the swing foot's ``"left_foot"`` / ``"right_foot"`` (world, m), with
    velocities. Context: ``com``, ``left_foot``, ``right_foot``, ``left_sole_centre``,
    ``right_sole_centre``.
    """

    def over(side):
        def fn(c):
            centre = c[f"{side}_sole_centre"]
            return np.array([centre[0], centre[1], c["com"][2]])

        return fn

    def shift(frm, to):
        return lambda s, c: _lerp(frm(c), to(c), s)

    def hold(at):
        return lambda s, c: at(c)

    def swing(foot):
        return lambda s, c: c[foot] + np.array([0.0, 0.0, step_height * np.sin(np.pi * s) ** 2])

    def rest(foot):
        return lambda s, c: c[foot].copy()

    left, right = over("left"), over("right")

    def centre(c):
        return c["com"].copy()

    return PhasePlan(
        [
            Phase(
                "shift_left_first",
                shift_time,
                BOTH_FEET,
                {
                    "com": shift(centre, left),
                    "left_foot": rest("left_foot"),
                    "right_foot": rest("right_foot"),
                },
            ),
            Phase(
                "swing_right",
                swing_time,
                frozenset({"left_foot"}),
                {"com": hold(left), "right_foot": swing("right_foot")},
            ),
            Phase(
                "shift_right",
                shift_time,
                BOTH_FEET,
                {
                    "com": shift(left, right),
                    "left_foot": rest("left_foot"),
                    "right_foot": rest("right_foot"),
                },
            ),
            Phase(
                "swing_left",
                swing_time,
                frozenset({"right_foot"}),
                {"com": hold(right), "left_foot": swing("left_foot")},
            ),
            Phase(
                "shift_left",
                shift_time,
                BOTH_FEET,
                {
                    "com": shift(right, left),
                    "left_foot": rest("left_foot"),
                    "right_foot": rest("right_foot"),
                },
            ),
        ],
        periodic=True,
        repeat_from=1,
    )


# ------------------------------------------------------------------------------------------------
# plans from a whole-body reference
# ------------------------------------------------------------------------------------------------
#: The largest walking speed :func:`walking_plan` accepts, m/s (G1: a 0.32 m step at 0.8 s steps;
#: tested from 0.1 to 0.3 m/s).
MAX_WALK_SPEED = 0.4


class ReferencePlan:
    """A plan whose schedule comes from a :class:`~wbsim.reference.WholeBodyReference` built from
    the reset context (module docstring) by ``build(context)``.

    Args:
        build: ``context -> WholeBodyReference``, called by :meth:`set_context`.
        velocity: ``context -> (3,)`` the commanded base velocity (world, m/s) while the
            reference's footsteps are under way, from the first lift-off to the last landing (the
            reward of a walking env tracks it; zeros elsewhere); ``None``: zeros.
        name: for messages.

    Attributes:
        reference: the :class:`~wbsim.reference.WholeBodyReference` of the last context.

    Before :meth:`set_context`, :meth:`at` raises :class:`~wbsim.errors.WbsimError`.
    """

    def __init__(
        self,
        build: Callable[[Mapping[str, np.ndarray]], Any],
        velocity: Callable[[Mapping[str, np.ndarray]], np.ndarray] | None = None,
        name: str = "reference plan",
    ):
        self._build = build
        self._velocity_of = velocity
        self.name = name
        self.context: dict[str, np.ndarray] = {}
        self.reference: Any = None
        self._velocity = np.zeros(3)
        self._window = (0.0, 0.0)

    def set_context(self, **values: np.ndarray) -> None:
        """Store the reset context and build the reference from it."""
        self.context = {k: np.asarray(v, dtype=float).copy() for k, v in values.items()}
        self.reference = self._build(self.context)
        steps = self.reference.footsteps
        if steps:
            self._window = (steps[0].lift_time, steps[-1].land_time)
        if self._velocity_of is not None:
            self._velocity = np.asarray(self._velocity_of(self.context), dtype=float)

    def _ref(self):
        if self.reference is None:
            from wbsim.errors import WbsimError

            raise WbsimError(f"{self.name}: no reference yet (set_context builds it at reset)")
        return self.reference

    def at(self, t: float) -> ContactSchedule:
        """The reference's :class:`~wbsim.types.ContactSchedule` at ``t`` (s)."""
        return self._ref().schedule(t)

    @property
    def duration(self) -> float:
        """Time of the reference's last sample, s."""
        return self._ref().duration

    def command_velocity(self, t: float) -> np.ndarray:
        """``(3,)`` commanded base velocity at ``t``, world, m/s (see the class docstring)."""
        lo, hi = self._window
        return self._velocity.copy() if lo <= t < hi else np.zeros(3)

    def switch_times(self, horizon: float) -> list[tuple[float, frozenset[str], frozenset[str]]]:
        """Planned contact-set switches up to ``horizon`` s: ``(time, before, after)``."""
        return self._ref().switch_times(horizon)


def _walk_inputs(c: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """:func:`wbsim.planning.walking.plan_walk`'s arguments from an env's reset context."""
    missing = [
        k
        for k in ("com", "left_foot", "right_foot", "left_sole_centre", "right_sole_centre")
        if k not in c
    ]
    if missing:
        from wbsim.errors import WbsimError

        raise WbsimError(f"a walking plan needs the reset context {missing} (set by the env)")
    eye = np.eye(3)
    feet = {f: (c[f], c.get(f"{f}_rotation", eye)) for f in ("left_foot", "right_foot")}
    soles = {"left_foot": c["left_sole_centre"], "right_foot": c["right_sole_centre"]}
    gravity = float(np.linalg.norm(c["gravity"])) if "gravity" in c else 9.81
    mass = float(c["mass"]) if "mass" in c else None
    depth = (
        {f: float(c[f"{f}_sole_depth"]) for f in ("left_foot", "right_foot")}
        if "left_foot_sole_depth" in c and "right_foot_sole_depth" in c
        else None
    )
    return {
        "com": c["com"],
        "feet": feet,
        "sole_centres": soles,
        "base_rotation": c.get("base_rotation"),
        "mass": mass,
        "gravity": gravity,
        "floor_height": float(c.get("floor_height", 0.0)),
        "sole_depth": depth,
    }


def walking_plan(
    speed: float = 0.2,
    n_steps: int = 12,
    single_support: float = 0.6,
    double_support: float = 0.3,
    clearance: float = 0.04,
    step_width: float | None = None,
    touchdown_speed: float = 0.02,
    zmp_inward: float = 0.015,
    zmp_travel: float = 0.06,
    first_swing: str = "right_foot",
    momentum: bool = True,
) -> ReferencePlan:
    """Walk straight ahead (along the feet's heading at reset) at ``speed`` m/s: ``n_steps`` steps
    of ``speed (single_support + double_support)`` m from the LIPM/DCM pattern generator
    (:func:`wbsim.planning.walking.plan_walk`; 0.8 s initial weight shift, 1 s final shift, then
    standing), swing feet lifted ``clearance`` m. With the defaults: 12 steps of 0.18 m, the first
    lift-off at 0.8 s, the tenth landing at 9.5 s, the last at 11.3 s. The gait keeps the
    LIPM's horizontal CoM acceleration near 1 m/s^2 (a single support of 0.6 s, a double
    support of 0.3 s, the ZMP 1.5 cm inside the sole centre and travelling 6 cm heel to toe):
    MuJoCo's soft friction lets a loaded sole point creep 0.28 mm/s per newton of tangential
    force, so above ~8.4 N per point (~1.0 m/s^2 on one foot of the G1) the diagnostics count
    ``planar_complementarity`` (0.02 W) in every stance (docs/locomotion.md). A single support of
    0.5 s (0.4 s of double support) lowers that acceleration but swings the foot faster: its
    momentum then asks the stance ankle for more than the G1's 35 N·m in pitch. ``momentum``:
    the reference gives the LIPM's centroidal angular momentum, 0, which adds ``projected_id``'s
    momentum task (``False``: it does not; Talos walks better without it, docs/locomotion.md).

    Raises:
        WbsimError: ``|speed| > MAX_WALK_SPEED`` or invalid gait values
            (:class:`~wbsim.planning.walking.WalkingParameters`).
    """
    from wbsim.errors import WbsimError
    from wbsim.planning.walking import WalkingParameters, plan_walk

    if not (isinstance(speed, (int, float)) and abs(speed) <= MAX_WALK_SPEED):
        raise WbsimError(
            f"speed must be a number in [-{MAX_WALK_SPEED:g}, {MAX_WALK_SPEED:g}] m/s (tested "
            f"from 0.1 to 0.3), got {speed!r}"
        )
    params = WalkingParameters.from_speed(
        speed,
        n_steps=n_steps,
        single_support=single_support,
        double_support=double_support,
        clearance=clearance,
        step_width=step_width,
        touchdown_speed=touchdown_speed,
        zmp_inward=zmp_inward,
        zmp_travel=zmp_travel,
        first_swing=first_swing,
    )

    def build(c):
        return plan_walk(params, **_walk_inputs(c), momentum=momentum)

    def velocity(c):  # along the feet's mean heading at reset
        R = c.get("left_foot_rotation", np.eye(3)) + c.get("right_foot_rotation", np.eye(3))
        yaw = math.atan2(R[1, 0], R[0, 0])
        return np.array([math.cos(yaw), math.sin(yaw), 0.0]) * speed

    return ReferencePlan(build, velocity, name=f"walking plan ({speed:g} m/s)")


def stepping_plan(
    n_steps: int = 12,
    single_support: float = 0.5,
    double_support: float = 0.4,
    clearance: float = 0.04,
    touchdown_speed: float = 0.02,
    zmp_inward: float = 0.015,
    first_swing: str = "right_foot",
    momentum: bool = True,
) -> ReferencePlan:
    """Step in place: :func:`walking_plan` at speed 0 (the feet land where they lifted; the CoM
    sways from sole to sole on the LIPM). With the defaults: 12 steps, the first lift-off at 0.8 s,
    the tenth landing at 9.4 s, the last at 11.2 s, then standing."""
    return walking_plan(
        0.0,
        n_steps=n_steps,
        single_support=single_support,
        double_support=double_support,
        clearance=clearance,
        touchdown_speed=touchdown_speed,
        zmp_inward=zmp_inward,
        zmp_travel=0.0,
        first_swing=first_swing,
        momentum=momentum,
    )


#: The DCC plans shipped with wbsim (``wbsim.assets.PLANS_DIR``), by name.
DCC_PLANS = {"step": "g1_dcc_step.npz", "walk": "g1_dcc_walk.npz"}


def dcc_plan(plan_file: str = "step", land_time: float = 0.2) -> ReferencePlan:
    """Replay a DCC plan file (:func:`wbsim.planning.plan_replay.reference_from_plan`): ``"step"``
    or ``"walk"`` (:data:`DCC_PLANS`, shipped) or a path to a ``wbsim dcc plan`` file. The plan is
    moved horizontally so that its CoM at 0 s is the robot's at reset; ``land_time`` s: the
    completion's landing of a foot the plan leaves in the air.

    After a reset the plan's ``dcc`` attribute holds the plan's own complementarity accuracy:
    ``plan_file``, ``horizon_s`` (its last knot's time, s) and ``plan_Nm``
    (:func:`wbsim.planning.plan_file.complementarity_accuracy` of its knots); the episode's
    summary puts the simulation's next to it (``dcc_complementarity``,
    :class:`wbsim.metrics.EpisodeMetrics`).

    Raises:
        WbsimError: ``plan_file`` empty, or neither a shipped plan's name nor a file (at once,
            listing the shipped names); a file that is not a plan file (read at the first reset).
    """
    from pathlib import Path

    from wbsim.assets import PLANS_DIR
    from wbsim.errors import WbsimError

    shipped = ", ".join(DCC_PLANS)
    if not str(plan_file).strip():
        raise WbsimError(
            f"plan_file is empty: give a shipped plan ({shipped}) or the path of a "
            "`wbsim dcc plan` file"
        )
    path = Path(PLANS_DIR / DCC_PLANS[plan_file]) if plan_file in DCC_PLANS else Path(plan_file)
    if not path.is_file():
        raise WbsimError(
            f"plan_file {plan_file!r}: no shipped plan of that name ({shipped}) and no such "
            "file (a `wbsim dcc plan --out` file)"
        )

    def build(c):
        from wbsim.planning.plan_file import complementarity_accuracy, load_plan
        from wbsim.planning.plan_replay import reference_from_plan

        plan = load_plan(path)
        P, F = plan["point_positions"], plan["point_forces"]
        replay.dcc = {
            "plan_file": path.name,
            "horizon_s": float(plan["times"][-1]),
            "plan_Nm": complementarity_accuracy(P[..., 2], F[..., 2]),
        }
        offset = np.zeros(3)
        if "com" in c:
            offset[:2] = np.asarray(c["com"])[:2] - np.asarray(plan["com"][0])[:2]
        mass = float(c["mass"]) if "mass" in c else None
        return reference_from_plan(plan, land_time=land_time, offset=offset, mass=mass)

    replay = ReferencePlan(build, name=f"DCC plan {path.name}")
    return replay
