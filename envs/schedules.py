"""Contact schedules: which feet are planned in contact when, and the task targets of each instant.

A :class:`PhasePlan` is a list of :class:`Phase`; :meth:`PhasePlan.at` gives the
:class:`~wbsim.controllers.base.ContactSchedule` at a time. Envs own a plan and hand its schedule to the
controller and into ``info["schedule"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from wbsim.controllers.base import ContactSchedule

__all__ = ["Phase", "PhasePlan", "standing_plan", "BOTH_FEET"]

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
    """

    def __init__(self, phases: Sequence[Phase], periodic: bool = False):
        if not phases:
            raise ValueError("a PhasePlan needs at least one phase")
        self.phases = tuple(phases)
        self.periodic = periodic
        self.starts = np.concatenate([[0.0], np.cumsum([p.duration for p in self.phases])[:-1]])
        self.context: dict[str, np.ndarray] = {}

    @property
    def duration(self) -> float:
        return float(sum(p.duration for p in self.phases))

    def set_context(self, **values: np.ndarray) -> None:
        """Reference values that target functions read (set by the env at reset)."""
        self.context = {k: np.asarray(v, dtype=float).copy() for k, v in values.items()}

    def index_at(self, t: float) -> int:
        if self.periodic and np.isfinite(self.duration):
            t = t % self.duration
        return int(np.searchsorted(self.starts, t, side="right") - 1)

    def at(self, t: float) -> ContactSchedule:
        """The :class:`ContactSchedule` at time ``t`` (s)."""
        if self.periodic and np.isfinite(self.duration):
            t = t % self.duration
        i = self.index_at(t)
        phase = self.phases[i]
        t_in = t - self.starts[i]
        s = float(np.clip(t_in / phase.duration, 0.0, 1.0)) if np.isfinite(phase.duration) else 0.0
        nxt = self.phases[(i + 1) % len(self.phases)] if (self.periodic or i + 1 < len(self.phases)) \
            else phase
        targets = {name: fn(s, self.context) for name, fn in phase.targets.items()}
        if np.isfinite(phase.duration) and phase.targets:
            # time derivatives for feed-forward, by central differences in the phase progress s
            ds = 1e-4
            lo, hi = max(s - ds, 0.0), min(s + ds, 1.0)
            for name, fn in phase.targets.items():
                targets[f"{name}_velocity"] = ((fn(hi, self.context) - fn(lo, self.context))
                                              / ((hi - lo) * phase.duration))
        return ContactSchedule(
            contact_set=phase.contact_set, next_contact_set=nxt.contact_set, phase=phase.name,
            phase_index=i, phase_time=float(t_in), phase_duration=phase.duration, targets=targets,
        )

    def switch_times(self, horizon: float) -> list[tuple[float, frozenset[str], frozenset[str]]]:
        """Planned contact-set switches up to ``horizon`` s: ``(time, before, after)``."""
        out = []
        t, i, prev = 0.0, 0, self.phases[0].contact_set
        while t <= horizon:
            phase = self.phases[i % len(self.phases)]
            if phase.contact_set != prev:
                out.append((t, prev, phase.contact_set))
                prev = phase.contact_set
            if not np.isfinite(phase.duration):
                break
            t += phase.duration
            i += 1
            if i >= len(self.phases) and not self.periodic:
                break
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


def one_leg_plan(lift_height: float = 0.05) -> PhasePlan:
    """The one-leg scenario: stand 1 s, shift the CoM over the left sole (1.5 s), lift the right foot
    ``lift_height`` m (1 s), hold 2 s, lower it (1 s), stand on both feet 1 s (CoM back to the middle).

    Targets: ``"com"`` (world CoM, m) and ``"right_foot"`` (world position of the right foot link
    origin, m), each with its time derivative ``"com_velocity"``, ``"right_foot_velocity"`` (m/s) for
    feed-forward (see :meth:`PhasePlan.at`).

    Context (set by the env at reset): ``com``, ``left_foot``, ``right_foot``, ``left_sole_centre``.
    """
    def com_shift(s, c):
        over_left = np.array([c["left_sole_centre"][0], c["left_sole_centre"][1], c["com"][2]])
        return _lerp(c["com"], over_left, s)

    def com_left(s, c):
        return com_shift(1.0, c)

    def com_back(s, c):
        return _lerp(com_left(1.0, c), c["com"], s)

    def foot_rest(s, c):
        return c["right_foot"].copy()

    def foot_up(s, c):
        return c["right_foot"] + np.array([0.0, 0.0, lift_height * smoothstep(s)])

    def foot_hold(s, c):
        return c["right_foot"] + np.array([0.0, 0.0, lift_height])

    def foot_down(s, c):
        # z = h (1 - s^2): leaves the hold at rest and reaches the rest height exactly at s = 1 moving
        # down at 2 h / T (0.1 m/s for 5 cm in 1 s), so the sensed touch-down coincides with the
        # planned switch to double support instead of creeping in over the last 100 ms
        return c["right_foot"] + np.array([0.0, 0.0, lift_height * (1.0 - s * s)])

    left = frozenset({"left_foot"})
    return PhasePlan([
        Phase("stand", 1.0, BOTH_FEET, {"com": lambda s, c: c["com"].copy(), "right_foot": foot_rest}),
        Phase("shift", 1.5, BOTH_FEET, {"com": com_shift, "right_foot": foot_rest}),
        Phase("lift", 1.0, left, {"com": com_left, "right_foot": foot_up}),
        Phase("hold", 2.0, left, {"com": com_left, "right_foot": foot_hold}),
        Phase("lower", 1.0, left, {"com": com_left, "right_foot": foot_down}),
        Phase("stand_again", 1.0, BOTH_FEET, {"com": com_back, "right_foot": foot_rest}),
    ])
