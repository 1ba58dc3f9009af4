"""The controller protocol: what a controller sees (:class:`RobotState`, :class:`ContactSchedule`) and
what it returns (:class:`Command`).

Controllers see the Pinocchio state ``(q, v)`` and the robot's models; they never touch
``mujoco.MjData``. An env or the rollout converts MuJoCo's state with :meth:`wbsim.Robot.mj_to_pin`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Command", "ContactSchedule", "Controller", "RobotState", "STANDING", "is_real"]


def is_real(value: Any) -> bool:
    """True for a real number (``int``, ``float``, a numpy integer or float); False for anything else,
    ``bool`` included (``-c frequency_hz=true`` is a mistake, not 1). Option checks call it before
    comparing a value, so a string gives a clear error instead of a ``TypeError``."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def nonfinite_joints(values: np.ndarray, joint_names: Sequence[str]) -> list[str] | None:
    """``None`` if every entry of ``values (n_joints,)`` is finite; else the names of the joints
    (``joint_names`` order) whose entries are NaN or infinite. The check of every per-step torque and
    action: a finite sum of squares means every entry is finite (one call in the usual case)."""
    if math.isfinite(values.dot(values)) or np.isfinite(values).all():
        return None
    return [joint_names[i] for i in np.flatnonzero(~np.isfinite(values))]


def joint_list(names: Sequence[str], first: int = 5) -> str:
    """``"a, b, c, d, e and 3 more"``: the first ``first`` names and how many follow."""
    more = f" and {len(names) - first} more" if len(names) > first else ""
    return ", ".join(names[:first]) + more


def _equal(a: Any, b: Any) -> bool:
    """Equality that compares arrays element-wise (for ``==`` on dataclasses holding arrays)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a == b


class _ArrayEq:
    """``==`` field by field with :func:`_equal` (so infos holding these compare in Gymnasium's
    determinism checks)."""

    _eq_exclude: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(_equal(getattr(self, f), getattr(other, f)) for f in self.__dataclass_fields__
                   if f not in self._eq_exclude)

    __hash__ = None  # mutable arrays inside


_object_new, _object_setattr = object.__new__, object.__setattr__


def _as_slice(idx) -> slice | np.ndarray:
    """The 1-D index array ``idx`` as a slice when it is a run of consecutive increasing indices (a
    view instead of a copy when indexing), else ``idx`` as an int array."""
    idx = np.asarray(idx, dtype=int)
    if idx.ndim == 1 and idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return slice(int(idx[0]), int(idx[0]) + idx.size)
    return idx


def _build(cls: type, values: dict[str, Any]) -> Any:
    """An instance of the frozen dataclass ``cls`` with attribute dict ``values`` (every field, in
    field order), without running ``__init__``: the same object (``==``, pickling, ``repr``,
    immutability) as ``cls(**values)`` for :class:`RobotState` and :class:`ContactSchedule`, whose
    ``__init__`` only stores the fields, in ~1 us instead of ~3 (a frozen ``__init__`` stores each
    field with ``object.__setattr__``; the env builds both every step). ``values`` becomes the
    instance's ``__dict__`` (pass a fresh dict); no check is made."""
    obj = _object_new(cls)
    _object_setattr(obj, "__dict__", values)
    return obj


@dataclass(frozen=True, eq=False)
class RobotState(_ArrayEq):
    """The robot's state in Pinocchio's convention.

    Attributes:
        t: simulated time, s.
        q: ``(nq,)`` configuration: base position (world, m), base quaternion ``(x, y, z, w)`` as
            Pinocchio stores it, joint angles (rad) in Pinocchio's order.
        v: ``(nv,)`` velocity: base linear and angular velocity in the base (LOCAL) frame, joint
            velocities (rad/s).
        sensed_contacts: feet that the simulation senses in contact (for controllers that use sensed
            contacts instead of the schedule); ``None`` if not sensed.
    """

    t: float
    q: np.ndarray
    v: np.ndarray
    sensed_contacts: frozenset[str] | None = None


@dataclass(frozen=True, eq=False)
class ContactSchedule(_ArrayEq):
    """The planned contact set at this instant, as the scenario (env) plans it.

    Attributes:
        contact_set: feet planned in contact now (``"left_foot"``, ``"right_foot"``).
        next_contact_set: feet planned in contact in the next phase (same as now in the last phase).
        phase: name of the current phase (``"stand"``, ``"shift"``, ``"lift"``, ...).
        phase_index: index of the current phase.
        phase_time: time since the phase began, s.
        phase_duration: duration of the phase, s (``inf`` for an open-ended one).
        targets: task targets for this instant (e.g. ``"com"`` -> ``(3,)`` world position, m;
            ``"swing_foot"`` -> ``(3,)`` world position, m); controllers ignore what they do not use.
    """

    contact_set: frozenset[str]
    next_contact_set: frozenset[str] | None = None
    phase: str = "stand"
    phase_index: int = 0
    phase_time: float = 0.0
    phase_duration: float = float("inf")
    targets: Mapping[str, np.ndarray] = field(default_factory=dict)


#: The schedule of quiet standing on both feet.
STANDING = ContactSchedule(contact_set=frozenset({"left_foot", "right_foot"}))


@dataclass(eq=False)
class Command(_ArrayEq):
    """What a controller returns each step.

    Attributes:
        tau: ``(n_joints,)`` joint torques, N·m, in ``robot.joint_names`` order.
        contact_set: feet the controller assumed in contact.
        contact_forces: contact point name -> ``(3,)`` commanded force on the robot, world frame, N
            (point contact model); or foot name -> ``(6,)`` wrench ``[force, torque]`` at the foot
            frame origin, world-aligned (wrench model). Empty if the controller commands no force.
        feasible: ``False`` when the controller's problem had no solution and ``tau`` is a fallback.
        fallback: name of the fallback used (``""`` if none).
        status: solver or controller status text.
        info: anything else worth logging (solver time in s, residuals, active constraints, ...).
    """

    tau: np.ndarray
    contact_set: frozenset[str] = frozenset()
    contact_forces: dict[str, np.ndarray] = field(default_factory=dict)
    feasible: bool = True
    fallback: str = ""
    status: str = "ok"
    info: dict[str, Any] = field(default_factory=dict)

    _eq_exclude = ("info",)  # timings differ run to run; the command itself must not


@runtime_checkable
class Controller(Protocol):
    """A controller: built with a :class:`wbsim.Robot` and options, then called every step."""

    name: str

    def reset(self, state: RobotState) -> None:
        """Start an episode from ``state`` (e.g. take its posture as the PD reference)."""

    def compute(self, state: RobotState, schedule: ContactSchedule) -> Command:
        """Torques for ``state`` under the planned contacts ``schedule``."""
