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
