"""Whole-body references: what a controller tracks over time, from any source.

Owns :class:`WholeBodyReference` (CoM, base orientation, each foot's pose, the planned contact
phases and their switch times, optional joint posture and feed-forward foot wrenches, sampled on a
time grid) and the one translation of a reference into what a controller reads each step, a
:class:`~wbsim.types.ContactSchedule` whose ``targets`` hold the keys of :data:`TARGET_KEYS`.
Sources: the walking pattern generator (:mod:`wbsim.planning.walking`) and the DCC planner's plan
files (:func:`wbsim.planning.plan_replay.reference_from_plan`). Envs hand the schedule to the
controller; controllers read only the targets, never this module's objects.

Frames and units: world frame (z up), SI. A foot's pose is that of its foot frame (the link of
``robot.feet[name]``, e.g. ``left_ankle_roll_link`` on the G1), not of its sole. Between samples
positions, velocities, accelerations, postures and wrenches are interpolated linearly, rotations
along the geodesic (``R0 exp(s log(R0^T R1))``); before the first sample and after the last the
end sample holds. Contact phases are exact intervals (not sampled): a switch happens at a phase's
start time.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from wbsim.errors import UnknownNameError, WbsimError
from wbsim.types import ContactSchedule

__all__ = ["TARGET_KEYS", "ContactPhase", "Footstep", "WholeBodyReference"]

#: The keys of ``ContactSchedule.targets`` that :meth:`WholeBodyReference.targets` writes
#: (``<foot>`` is each foot name, e.g. ``left_foot``). Shapes, world frame, SI units:
#:
#: ========================  ==========  =====================================================
#: key                       shape       meaning
#: ========================  ==========  =====================================================
#: ``com``                   (3,)        CoM position, m
#: ``com_velocity``          (3,)        m/s
#: ``com_acceleration``      (3,)        m/s^2 (feed-forward)
#: ``base_orientation``      (3, 3)      base (pelvis) rotation, base to world
#: ``base_angular_velocity`` (3,)        rad/s, world frame
#: ``<foot>``                (3,)        foot frame origin, m
#: ``<foot>_velocity``       (3,)        m/s
#: ``<foot>_acceleration``   (3,)        m/s^2
#: ``<foot>_orientation``    (3, 3)      foot frame rotation, foot to world
#: ``<foot>_wrench``         (6,)        feed-forward ``[force N; moment N·m]`` on the robot at
#:                                       the foot frame origin, world-aligned (when given)
#: ``posture``               (n_joints,) joint angles, rad, in the reference's ``joint_names``
#:                                       order (when given)
#: ``zmp``                   (3,)        planned zero-moment point on the floor, m (when given)
#: ``dcm``                   (3,)        planned divergent component of motion, m (when given)
#: ``angular_momentum``      (3,)        centroidal angular momentum ``L`` about the CoM, world
#:                                       axes, N·m·s (when given; the LIPM's is 0)
#: ``angular_momentum_rate`` (3,)        its rate ``L'``, N·m (with ``angular_momentum``)
#: ``<foot>_landing``        (3,)        where a foot that swings now or in the next phase is
#:                                       planned to land (foot frame origin), m (footstep plans)
#: ``landing_time``          (1,)        when that foot lands, s (footstep plans)
#: ========================  ==========  =====================================================
TARGET_KEYS = (
    "com",
    "com_velocity",
    "com_acceleration",
    "base_orientation",
    "base_angular_velocity",
    "<foot>",
    "<foot>_velocity",
    "<foot>_acceleration",
    "<foot>_orientation",
    "<foot>_wrench",
    "posture",
    "zmp",
    "dcm",
    "angular_momentum",
    "angular_momentum_rate",
    "<foot>_landing",
    "landing_time",
)


@dataclass(frozen=True)
class ContactPhase:
    """An interval with one planned contact set.

    Attributes:
        start: s; the phase lasts until the next phase's start (the last one forever).
        contact_set: feet planned in contact.
        name: e.g. ``"double_support"``, ``"swing_right_foot"``.
    """

    start: float
    contact_set: frozenset[str]
    name: str = ""


@dataclass(frozen=True)
class Footstep:
    """One planned step.

    Attributes:
        foot: the swing foot's name.
        position: ``(3,)`` landing position of the foot frame origin, world, m.
        yaw: landing heading of the foot, rad (about world z).
        lift_time, land_time: s.
    """

    foot: str
    position: np.ndarray
    yaw: float
    lift_time: float
    land_time: float


def _level_rotation(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@dataclass(eq=False)
class WholeBodyReference:
    """A whole-body reference over time (module docstring: frames, interpolation).

    Attributes:
        times: ``(T,)`` increasing sample times, s.
        com, com_velocity, com_acceleration: ``(T, 3)`` m, m/s, m/s^2.
        base_rotation: ``(T, 3, 3)`` base to world.
        foot_names: ``(F,)`` names of the feet, e.g. ``("left_foot", "right_foot")``.
        foot_position, foot_velocity, foot_acceleration: ``(T, F, 3)`` foot frame origins, m,
            m/s, m/s^2.
        foot_rotation: ``(T, F, 3, 3)`` foot to world.
        phases: the contact phases, by start time; the first starts at or before ``times[0]``.
        base_angular_velocity: ``(T, 3)`` rad/s, world (zeros if not given).
        joint_names: names of the ``posture`` columns (``None``: no posture).
        posture: ``(T, n_joints)`` rad, or ``None``.
        foot_wrench: ``(T, F, 6)`` feed-forward foot wrenches, or ``None``.
        zmp, dcm: ``(T, 3)`` m, or ``None``.
        angular_momentum, angular_momentum_rate: ``(T, 3)`` centroidal angular momentum about
            the CoM (world axes, N·m·s) and its rate (N·m), or ``None`` (both or neither): a
            reference that gives them asks a tracking controller to hold ``L`` to them
            (:class:`~wbsim.controllers.contact_projected_id.ContactProjectedID` adds its
            angular-momentum task).
        footsteps: the planned steps (empty for a reference without a footstep plan).
        source: where the reference comes from (for logs).

    Raises:
        WbsimError: inconsistent shapes, non-finite values, times not increasing, phases not
            sorted or starting after ``times[0]``, rotations that are not rotations.
    """

    times: np.ndarray
    com: np.ndarray
    com_velocity: np.ndarray
    com_acceleration: np.ndarray
    base_rotation: np.ndarray
    foot_names: tuple[str, ...]
    foot_position: np.ndarray
    foot_velocity: np.ndarray
    foot_acceleration: np.ndarray
    foot_rotation: np.ndarray
    phases: tuple[ContactPhase, ...]
    base_angular_velocity: np.ndarray | None = None
    joint_names: tuple[str, ...] | None = None
    posture: np.ndarray | None = None
    foot_wrench: np.ndarray | None = None
    zmp: np.ndarray | None = None
    dcm: np.ndarray | None = None
    angular_momentum: np.ndarray | None = None
    angular_momentum_rate: np.ndarray | None = None
    footsteps: tuple[Footstep, ...] = ()
    source: str = ""
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        t = np.asarray(self.times, dtype=float)
        if t.ndim != 1 or t.size < 1 or not np.all(np.isfinite(t)):
            raise WbsimError("WholeBodyReference: times must be a finite (T,) array, T >= 1")
        if t.size > 1 and not np.all(np.diff(t) > 0):
            raise WbsimError("WholeBodyReference: times must increase")
        self.times = t
        T, F = t.size, len(self.foot_names)
        self.foot_names = tuple(self.foot_names)
        if self.base_angular_velocity is None:
            self.base_angular_velocity = np.zeros((T, 3))
        shapes: dict[str, tuple[int, ...]] = {
            "com": (T, 3),
            "com_velocity": (T, 3),
            "com_acceleration": (T, 3),
            "base_rotation": (T, 3, 3),
            "base_angular_velocity": (T, 3),
            "foot_position": (T, F, 3),
            "foot_velocity": (T, F, 3),
            "foot_acceleration": (T, F, 3),
            "foot_rotation": (T, F, 3, 3),
        }
        if self.foot_wrench is not None:
            shapes["foot_wrench"] = (T, F, 6)
        if (self.angular_momentum is None) != (self.angular_momentum_rate is None):
            raise WbsimError(
                "WholeBodyReference: angular_momentum and angular_momentum_rate go together"
            )
        for name in ("zmp", "dcm", "angular_momentum", "angular_momentum_rate"):
            if getattr(self, name) is not None:
                shapes[name] = (T, 3)
        if (self.posture is None) != (self.joint_names is None):
            raise WbsimError("WholeBodyReference: posture and joint_names go together")
        if self.posture is not None:
            self.joint_names = tuple(self.joint_names)
            shapes["posture"] = (T, len(self.joint_names))
        for name, shape in shapes.items():
            arr = np.asarray(getattr(self, name), dtype=float)
            if arr.shape != shape or not np.all(np.isfinite(arr)):
                raise WbsimError(
                    f"WholeBodyReference: {name} must be a finite {shape} array, got "
                    f"shape {arr.shape}"
                )
            setattr(self, name, arr)
        for name in ("base_rotation", "foot_rotation"):
            R = getattr(self, name).reshape(-1, 3, 3)
            err = np.abs(np.einsum("kji,kjl->kil", R, R) - np.eye(3)).max(initial=0.0)
            if err > 1e-6 or np.any(np.linalg.det(R) < 0):
                raise WbsimError(
                    f"WholeBodyReference: {name} holds matrices that are not "
                    f"rotations (|R^T R - I| = {err:.2g})"
                )
        if not self.phases:
            raise WbsimError("WholeBodyReference: at least one contact phase is needed")
        starts = [p.start for p in self.phases]
        if any(b <= a for a, b in itertools.pairwise(starts)) or starts[0] > t[0] + 1e-12:
            raise WbsimError(
                "WholeBodyReference: phases must be sorted by start, the first "
                f"starting at or before {t[0]} s; got starts {starts}"
            )
        for p in self.phases:
            unknown = set(p.contact_set) - set(self.foot_names)
            if unknown:
                raise UnknownNameError(
                    "foot", min(unknown), self.foot_names, context="in a contact phase"
                )
        self._starts = starts
        self._tlist = t.tolist()
        self._steps_by_land = sorted(self.footsteps, key=lambda s: s.land_time)

    # -- time lookup ------------------------------------------------------------------------------
    @property
    def duration(self) -> float:
        """Time of the last sample, s."""
        return float(self.times[-1])

    def phase_index(self, t: float) -> int:
        """Index of the phase holding ``t`` (the first phase for earlier times)."""
        return max(bisect.bisect_right(self._starts, t) - 1, 0)

    def contact_set(self, t: float) -> frozenset[str]:
        """The planned contact set at ``t``."""
        return self.phases[self.phase_index(t)].contact_set

    def switch_times(
        self, horizon: float = math.inf
    ) -> list[tuple[float, frozenset[str], frozenset[str]]]:
        """Planned contact-set switches up to ``horizon`` s: ``(time, before, after)`` (the same
        form as :meth:`wbsim.envs.schedules.PhasePlan.switch_times`)."""
        out = []
        for a, b in zip(self.phases, self.phases[1:]):
            if b.start > horizon:
                break
            if a.contact_set != b.contact_set:
                out.append((b.start, a.contact_set, b.contact_set))
        return out

    def _bracket(self, t: float) -> tuple[int, float]:
        """``(i, s)``: ``t`` lies at fraction ``s`` in [0, 1] of ``[times[i], times[i+1]]``."""
        tl = self._tlist
        if t <= tl[0] or len(tl) == 1:
            return 0, 0.0
        if t >= tl[-1]:
            return len(tl) - 2, 1.0
        i = bisect.bisect_right(tl, t) - 1
        return i, (t - tl[i]) / (tl[i + 1] - tl[i])

    # -- samples ----------------------------------------------------------------------------------
    def targets(self, t: float) -> dict[str, np.ndarray]:
        """The :data:`TARGET_KEYS` at ``t`` (fresh arrays)."""
        i, s = self._bracket(t)
        j = min(i + 1, len(self._tlist) - 1)

        def lin(a: np.ndarray) -> np.ndarray:
            return a[i] + s * (a[j] - a[i]) if s > 0.0 else a[i].copy()

        def rot(a: np.ndarray) -> np.ndarray:
            if s <= 0.0:
                return a[i].copy()
            R0 = a[i]
            return R0 @ pin.exp3(s * pin.log3(R0.T @ a[j]))

        out = {
            "com": lin(self.com),
            "com_velocity": lin(self.com_velocity),
            "com_acceleration": lin(self.com_acceleration),
            "base_orientation": rot(self.base_rotation),
            "base_angular_velocity": lin(_given(self.base_angular_velocity)),
        }
        pos, vel, acc = (
            lin(self.foot_position),
            lin(self.foot_velocity),
            lin(self.foot_acceleration),
        )
        wrench = None if self.foot_wrench is None else lin(self.foot_wrench)
        for k, name in enumerate(self.foot_names):
            out[name] = pos[k]
            out[f"{name}_velocity"] = vel[k]
            out[f"{name}_acceleration"] = acc[k]
            out[f"{name}_orientation"] = rot(self.foot_rotation[:, k])
            if wrench is not None:
                out[f"{name}_wrench"] = wrench[k]
        if self.posture is not None:
            out["posture"] = lin(self.posture)
        if self.zmp is not None:
            out["zmp"] = lin(self.zmp)
        if self.dcm is not None:
            out["dcm"] = lin(self.dcm)
        if self.angular_momentum is not None:
            out["angular_momentum"] = lin(self.angular_momentum)
            out["angular_momentum_rate"] = lin(_given(self.angular_momentum_rate))
        step = self.next_footstep(t)
        if step is not None:
            out[f"{step.foot}_landing"] = step.position.copy()
            out["landing_time"] = np.array([step.land_time])
        return out

    def next_footstep(self, t: float) -> Footstep | None:
        """The footstep that lands next after ``t`` (the one in the air, or the next to lift),
        or ``None``."""
        steps = self._steps_by_land
        k = bisect.bisect_right([s.land_time for s in steps], t) if steps else 0
        return steps[k] if k < len(steps) else None

    def schedule(self, t: float) -> ContactSchedule:
        """The :class:`~wbsim.types.ContactSchedule` at ``t``: the phase's contact set, the next
        phase's (the same in the last phase), the phase timing (``phase_duration`` ``inf`` in the
        last phase) and :meth:`targets`."""
        k = self.phase_index(t)
        phase = self.phases[k]
        last = k == len(self.phases) - 1
        nxt = phase if last else self.phases[k + 1]
        duration = math.inf if last else nxt.start - phase.start
        return ContactSchedule(
            contact_set=phase.contact_set,
            next_contact_set=nxt.contact_set,
            phase=phase.name,
            phase_index=k,
            phase_time=float(t - phase.start),
            phase_duration=float(duration),
            targets=self.targets(t),
        )

    # -- construction helpers ---------------------------------------------------------------------
    @staticmethod
    def level_rotation(yaw: float) -> np.ndarray:
        """The ``(3, 3)`` rotation about world z by ``yaw`` rad."""
        return _level_rotation(yaw)

    def shifted(self, offset: Sequence[float]) -> WholeBodyReference:
        """A copy with every position (CoM, feet, ZMP, DCM, footsteps) moved by ``offset``
        ``(3,)`` m."""
        d = np.asarray(offset, dtype=float)
        kw: dict[str, Any] = {
            f: getattr(self, f)
            for f in (
                "times",
                "com_velocity",
                "com_acceleration",
                "base_rotation",
                "foot_names",
                "foot_velocity",
                "foot_acceleration",
                "foot_rotation",
                "phases",
                "base_angular_velocity",
                "joint_names",
                "posture",
                "foot_wrench",
                "angular_momentum",
                "angular_momentum_rate",
                "source",
            )
        }
        return WholeBodyReference(
            com=self.com + d,
            foot_position=self.foot_position + d,
            zmp=None if self.zmp is None else self.zmp + d,
            dcm=None if self.dcm is None else self.dcm + d,
            footsteps=tuple(
                Footstep(s.foot, s.position + d, s.yaw, s.lift_time, s.land_time)
                for s in self.footsteps
            ),
            **kw,
        )

    def summary(self) -> Mapping[str, Any]:
        """A few figures: duration, switches, steps, CoM travel (for logs and the CLI)."""
        return {
            "source": self.source,
            "duration_s": self.duration,
            "switches": len(self.switch_times()),
            "steps": len(self.footsteps),
            "com_travel_m": (self.com[-1] - self.com[0]).tolist(),
        }


def _given(a: np.ndarray | None) -> np.ndarray:
    """A field that ``__post_init__`` has filled in (never ``None`` after it)."""
    if a is None:
        raise AssertionError("a reference field was not filled in at construction")
    return a
