"""Contact events and their tolerances, detected over chunks of steps.

Owns: deciding which physically forbidden or noteworthy things happened in an episode, from what
the loop recorded, ``k`` steps at a time (:class:`wbsim.types.StepChunk`: what the simulation
sensed and what the controller commanded), and the documented tolerances of those decisions
(:class:`Tolerances`). It writes no files: the episode log stores :meth:`Event.to_dict` and
:meth:`EventDetector.summary`.

Events (``Event.kind``, see :data:`EVENT_KINDS`), with the seed's conditions (after the project's
seed text "dynamic-complementarity-conditions", not shipped with the package). World frame; ``n``
the normal of the point's surface (``StepChunk.normals``: the floor's for a sole point, a wall's
for a hand's point; a "foot" below is any contact, a foot or a hand); for a force ``f`` on the robot ``f_n = f . n`` and ``f_t = |f - f_n n|``; ``h``
the simulated gap of the point; ``mu`` its friction coefficient; ``v_t`` its slip speed:

=========================  =======================================================  ================
kind                       condition (per point, or per foot for a wrench command)  magnitude
=========================  =======================================================  ================
``mode_switch``            the set of feet in contact changed; ``source`` is        foot normal
                           ``"simulated"`` (sensed) or ``"assumed"`` (command)      force, N (*)
``force_sign``             commanded ``f_n < -force_sign``                          ``-f_n``, N
``friction_cone``          commanded (and not pulling), or simulated and loaded:    ``f_t - mu f_n``,
                           ``f_t > mu f_n + friction_cone`` in MuJoCo's cone (**)   N
``complementarity``        commanded at a point that is not touching: ``h > 0``,    ``h f_n``, N·m
                           ``h f_n > complementarity``
``planar_complementarity`` simulated, loaded: ``v_t f_t > planar_complementarity``  ``v_t f_t``, W
                           (a slide if ``f_t`` reached ``slide`` of ``mu f_n``,
                           else creep)
``contact_mismatch``       a foot assumed in contact is open in the simulation, or  duration, s
                           the reverse, for more than ``mismatch_duration``
``non_sole_contact``       a robot geom other than the sole points touches the      normal force, N
                           environment
``fallback``               the command names a fallback                             duration, s
``solver_failure``         the command's status is not ``CommandStatus.SOLVED``     duration, s
``torque_limit``           a joint's commanded torque beyond its actuator's limit   ``|tau| - limit``,
                           by more than ``torque_limit`` (MuJoCo clips it)          N·m
=========================  =======================================================  ================

Commanded forces are the rows of ``StepChunk.point_forces`` (per point) and the forces of
``StepChunk.foot_wrenches`` (per foot, with the foot's smallest ``h`` and smallest ``mu``); a NaN
row is not commanded and holds no condition. "Loaded": the contact mode is not open.

(**) The cone MuJoCo enforces at the step (``StepChunk.cone``), with the contact's own ``mu`` as
MuJoCo used it (``StepChunk.friction``): pyramidal, ``f_t = |f_t1| + |f_t2|`` with ``f_t1``,
``f_t2`` along the contact frame's tangents (``StepChunk.tangents``; a diamond inside Coulomb's
circle); elliptic, ``f_t = |f - f_n n|``.

(*) On the loaded side of the switch (after a make, before a break): the sum over the foot's points
of the sensed ``f_n`` for ``"simulated"``, of the commanded ``f_n`` for ``"assumed"`` (0 when the
controller commands no force there).

Flood rule (every kind but ``mode_switch``): a violation is an *episode* per ``(kind, where,
source)``. Its :class:`Event` is emitted (returned by :meth:`EventDetector.update` and appended to
:attr:`EventDetector.events`) when the condition starts to hold; ``t`` and ``step`` are that first
step. While the episode lasts the same object is updated in place: ``magnitude`` is the worst value
so far, ``duration``, ``n_steps``, ``end_t``, ``end_step`` grow. The episode ends when the
condition has not held for more than ``Tolerances.rearm_time`` seconds (or at
:meth:`EventDetector.finish`); only then can the same ``(kind, where, source)`` emit a new event.
``contact_mismatch`` must also hold without a break for more than ``mismatch_duration`` before it
is an event at all (the event still carries the first step of the mismatch). ``mode_switch`` events
are discrete: one per foot whose state changes (the first step only sets the reference), after
``switch_debounce`` seconds of the new state (0: at once; a debounced switch's ``detail`` has the
``confirmed_t`` and ``confirmed_step`` when it was emitted, as a contact mismatch's has). Events
emitted at the same step come in a fixed order: mode switches (simulated, then assumed; by foot name); commanded forces point by
point, then foot by foot (each: force_sign, friction_cone, complementarity); simulated forces point
by point (friction_cone, planar_complementarity); non-sole contacts (as listed); fallback; solver
failure; torque limits (joint by joint); contact mismatches (by foot name).

The events, their fields and order and the summary do not depend on how the steps are cut into
chunks: the detector carries the open episodes, the pending switches and the last step's values
from one chunk to the next.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wbsim.contacts import OPEN
from wbsim.errors import WbsimError, check_keys
from wbsim.types import CommandStatus, StepChunk

__all__ = [
    "EVENT_KINDS",
    "MAGNITUDES",
    "VIOLATION_KINDS",
    "Event",
    "EventDetector",
    "Tolerances",
]

#: Every event kind, in a fixed order (the keys of the summary's per-kind tables).
EVENT_KINDS = (
    "mode_switch",
    "force_sign",
    "friction_cone",
    "complementarity",
    "planar_complementarity",
    "contact_mismatch",
    "non_sole_contact",
    "fallback",
    "solver_failure",
    "torque_limit",
)
#: The kinds that are violations (everything but ``mode_switch``).
VIOLATION_KINDS = EVENT_KINDS[1:]
#: What an event's ``magnitude`` (and the summary's ``worst`` of its kind) measures, per kind:
#: ``(quantity, unit)`` (the module docstring's table).
MAGNITUDES: dict[str, tuple[str, str]] = {
    "mode_switch": ("foot normal force on the loaded side", "N"),
    "force_sign": ("commanded pull -f_n", "N"),
    "friction_cone": ("f_t - mu f_n", "N"),
    "complementarity": ("gap times commanded force, h f_n", "N·m"),
    "planar_complementarity": ("slip speed times tangential force, v_t f_t", "W"),
    "contact_mismatch": ("duration", "s"),
    "non_sole_contact": ("normal force", "N"),
    "fallback": ("duration", "s"),
    "solver_failure": ("duration", "s"),
    "torque_limit": ("|tau| - limit", "N·m"),
}


@dataclass(frozen=True)
class Tolerances:
    """Tolerances of the event conditions (see the table in :mod:`wbsim.diagnostics`).

    Attributes:
        force_sign: N. A commanded normal force below ``-force_sign`` pulls on the floor. 0.01 N is
            far above a QP's constraint tolerance (1e-6 N and less for the wbsim solvers) and far
            below any force that matters (a G1 sole point carries ~40 N standing).
        friction_cone: N. Allowed excess of ``f_t`` over ``mu f_n`` (in MuJoCo's cone), commanded
            or simulated. MuJoCo's simulated force never leaves its cone; 0.01 N absorbs rounding.
        complementarity: N·m (``eps`` of the relaxed condition ``h f_n <= eps``). 0.01 N·m: 10 N
            commanded at a point 1 mm above the floor, or 1 N at 1 cm, is a violation.
        planar_complementarity: W (``eps_p``, slip speed times tangential force). 0.02 W: 1 cm/s of
            slip under 2 N of friction. Sticking contacts creep far less in quiet standing (G1 about
            1e-5 W, Talos about 7e-4 W measured).
        mismatch_duration: s. A contact mismatch is an event once it has lasted more than this
            (10 steps of 2 ms): the controller's contact set may lead or lag the simulation by a
            few steps at a touchdown without that being an error.
        rearm_time: s. An ongoing violation episode ends when its condition has not held for more
            than this; shorter breaks (chatter) belong to the same episode and event.
        switch_debounce: s. A foot's simulated contact state must hold this long before a
            ``mode_switch`` is logged (0: every change is logged; bounces are real switches).
        torque_limit: N·m. Allowed excess of a commanded torque over its actuator's limit (1e-6
            N·m: a QP's round-off on a torque at its bound is no event).
        slide: fraction of the cone, at most 1. A ``planar_complementarity`` event is a *slide*
            when its point's simulated ``f_t / (mu f_n)`` (in MuJoCo's cone) reaches this at some
            step of the event, else *creep* (MuJoCo's soft friction moving a point inside its cone). Measured
            (pyramidal and elliptic cones, a 10 kg plate on ``mu = 1``): sliding contacts sit at
            1.000 of the cone; a plate creeping under 0.95 of it has a median 0.975 per contact.
    """

    force_sign: float = 0.01
    friction_cone: float = 0.01
    complementarity: float = 0.01
    planar_complementarity: float = 0.02
    mismatch_duration: float = 0.02
    rearm_time: float = 0.02
    switch_debounce: float = 0.0
    torque_limit: float = 1e-6
    slide: float = 0.99

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not (math.isfinite(value) and value >= 0)
            ):
                raise WbsimError(f"Tolerances.{f.name} must be a finite number >= 0, got {value!r}")
            object.__setattr__(self, f.name, float(value))
        if self.slide > 1.0:
            raise WbsimError(
                f"Tolerances.slide must be at most 1 (a fraction of the friction cone, which "
                f"MuJoCo's forces never leave: above 1 no slip is a slide), got {self.slide!r}"
            )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Tolerances:
        """Build from a mapping; unknown keys raise :class:`WbsimError` listing the known ones."""
        check_keys("Tolerances", data, (f.name for f in dataclasses.fields(cls)))
        return cls(**data)

    def replace(self, **changes: float) -> Tolerances:
        """A copy with ``changes``; unknown keys raise :class:`WbsimError`."""
        return Tolerances.from_dict({**dataclasses.asdict(self), **changes})

    def to_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)


@dataclass(eq=False)
class Event:
    """One logged event (see the table and the flood rule in :mod:`wbsim.diagnostics`).

    Attributes:
        kind: one of :data:`EVENT_KINDS`.
        t: simulated time of the first step of the event, s.
        step: that step's index.
        where: contact point name, foot name, geom name (``non_sole_contact``), the fallback name
            (``fallback``) or ``"controller"`` (``solver_failure``).
        magnitude: worst value over the episode, in the unit of the kind (N, N·m, W, s).
        detail: kind-specific facts: ``source`` (``"commanded"``/``"simulated"`` or, for
            ``mode_switch``, ``"simulated"``/``"assumed"``), ``before``/``after`` contact sets,
            ``gap``, ``normal_force``, ``status``, ... (at the event's first step); a
            ``planar_complementarity`` event's ``friction_used`` is its point's largest ``f_t /
            (mu f_n)`` over the event's steps (a slide at ``Tolerances.slide`` and above, creep
            below); plain JSON types only.
        duration: length of the episode so far, s (first to last step where the condition held,
            plus one step).
        n_steps: number of steps at which the condition held.
        end_t, end_step: last step at which the condition held.
        ongoing: the episode has not ended yet.
    """

    kind: str
    t: float
    step: int
    where: str
    magnitude: float
    detail: dict[str, Any] = field(default_factory=dict)
    duration: float = 0.0
    n_steps: int = 1
    end_t: float = 0.0
    end_step: int = 0
    ongoing: bool = True

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field."""
        return {
            "kind": self.kind,
            "t": float(self.t),
            "step": int(self.step),
            "where": self.where,
            "magnitude": float(self.magnitude),
            "detail": dict(self.detail),
            "duration": float(self.duration),
            "n_steps": int(self.n_steps),
            "end_t": float(self.end_t),
            "end_step": int(self.end_step),
            "ongoing": self.ongoing,
        }


#: The place of an event among those emitted in one chunk, compared as a tuple: the chunk row,
#: then the order within a step of the module docstring.
_Rank = tuple[int, ...]


@dataclass
class _Hits:
    """Where one condition holds in a chunk: column ``c`` is the key ``(kind, names[c], source)``.

    Attributes:
        holds: ``(k, c)`` bool, the condition holds at that step.
        magnitude: ``(k, c)`` its value (read where it holds).
        detail: ``(row, c) -> Event.detail`` of an episode that starts at that row.
        rank: ``(row, c) ->`` the order of the key's event among those of one step.
        peak: ``(name, values)``: the largest of ``values`` ``(k, c)`` over the steps where the
            condition holds goes into the event's ``detail[name]`` (``None``: nothing tracked).
    """

    kind: str
    source: str
    names: Sequence[str]
    holds: np.ndarray
    magnitude: np.ndarray
    detail: Callable[[int, int], dict[str, Any]]
    rank: Callable[[int, int], _Rank]
    peak: tuple[str, np.ndarray] | None = None


class _Episode:
    """An episode of one ``(kind, where, source)`` key: its first and last step where the
    condition held, how many steps it held, its worst magnitude, and its event (``None`` while a
    contact mismatch is too short to be one)."""

    __slots__ = (
        "detail",
        "event",
        "last_step",
        "last_t",
        "n_true",
        "peak",
        "start_step",
        "start_t",
        "worst",
    )

    def __init__(self, t: float, step: int, magnitude: float, detail: dict[str, Any]):
        self.start_t, self.start_step = t, step
        self.last_t, self.last_step = t, step
        self.n_true = 0
        self.worst = magnitude
        self.detail = detail
        self.peak = -math.inf
        self.event: Event | None = None

    def extend(self, t: float, step: int, magnitudes: list[float]) -> None:
        """The condition held at consecutive steps up to ``step`` (time ``t``) with
        ``magnitudes``."""
        self.last_t, self.last_step = t, step
        self.n_true += len(magnitudes)
        self.worst = max([self.worst, *magnitudes])  # a first NaN stays, later ones are skipped


@dataclass
class _Step:
    """The values of one step that the step after it compares with (``n`` points, ``m`` feet).

    Attributes:
        step: its index.
        sensed_feet, assumed: ``(m,)`` bool, the feet in contact in the simulation, assumed.
        normal_force: ``(n,)`` sensed ``f_n``, N.
        point_fn: ``(n,)`` commanded ``f_n`` of the points, N (NaN: not commanded).
        foot_fn: ``(m,)`` commanded ``f_n`` of the foot wrenches, N (NaN: not commanded).
    """

    step: int
    sensed_feet: np.ndarray
    assumed: np.ndarray
    normal_force: np.ndarray
    point_fn: np.ndarray
    foot_fn: np.ndarray

    @classmethod
    def of(cls, chunk: StepChunk, row: int, point_fn: np.ndarray, foot_fn: np.ndarray) -> _Step:
        """Row ``row`` of ``chunk`` (copied: the chunk's buffers may be reused)."""
        return cls(
            int(chunk.step[row]),
            chunk.sensed_feet[row].copy(),
            chunk.assumed[row].copy(),
            chunk.normal_force[row].copy(),
            point_fn[row].copy(),
            foot_fn[row].copy(),
        )


def _before(values: np.ndarray, row: int, previous: np.ndarray) -> np.ndarray:
    """The value at the step before chunk row ``row``: ``values[row - 1]``, or for row 0
    ``previous`` (the last step of the chunk before)."""
    return values[row - 1] if row > 0 else previous


class EventDetector:
    """Turns the steps of an episode, a :class:`~wbsim.types.StepChunk` at a time, into
    :class:`Event` objects, one episode per violation.

    Args:
        tolerances: :class:`Tolerances` or a dict of its fields (unknown keys raise).
        dt: the control step, s (a duration counts one ``dt`` per step).

    Use: call :meth:`update` with consecutive chunks of the episode's steps (any sizes), then
    :meth:`finish` at the end of the episode; read :attr:`events` and :meth:`summary`.
    """

    def __init__(self, tolerances: Tolerances | Mapping[str, float] = Tolerances(), *, dt: float):
        self.tolerances = (
            tolerances if isinstance(tolerances, Tolerances) else Tolerances.from_dict(tolerances)
        )
        if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
            raise WbsimError(f"dt must be > 0, got {dt!r}")
        self.dt = float(dt)
        #: every event emitted, in emission order
        self.events: list[Event] = []
        self._episodes: dict[tuple[str, str, str], _Episode] = {}
        self._steps_in_violation = dict.fromkeys(EVENT_KINDS, 0)
        self._previous: _Step | None = None  # the last step checked
        # simulated contact state per foot (StepChunk.foot_names order): the one last logged, and
        # a change waiting for the debounce as (t, step, foot f_n of the step before it) or None
        self._logged_feet = np.zeros(0, dtype=bool)
        self._pending: list[tuple[float, int, float] | None] = []
        self._layout: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        self._foot_points: list[np.ndarray] = []  # per foot, its point indices
        self._foot_rank: list[int] = []  # per foot, its place among the feet sorted by name

    def reset(self) -> None:
        """Forget everything (a new episode)."""
        self.__init__(self.tolerances, dt=self.dt)  # type: ignore[misc]

    # ------------------------------------------------------------------------------------------
    def update(self, chunk: StepChunk) -> list[Event]:
        """Check the steps of ``chunk``, which follow the steps already checked.

        Returns:
            The events emitted in this chunk (also appended to :attr:`events`), in emission order:
            those that started in it, a contact mismatch once confirmed, a mode switch once
            debounced.

        Raises:
            WbsimError: the chunk's steps do not follow the last step checked, or its commanded
                arrays have the wrong shape.
        """
        k = len(chunk)
        if k == 0:
            return []
        self._check(chunk)
        normal, foot_normal = self._normals(chunk)
        wrench_forces = np.ascontiguousarray(chunk.foot_wrenches[..., :3])  # (k, m, 3)
        point_fn, foot_fn = _along(chunk.point_forces, normal), _along(wrench_forces, foot_normal)
        previous = self._previous
        if previous is None:  # the very first step is the reference of the contact sets
            previous = _Step.of(chunk, 0, point_fn, foot_fn)
            self._logged_feet = previous.sensed_feet.copy()
            self._pending = [None] * len(chunk.foot_names)
        new: list[tuple[_Rank, Event]] = []  # (rank, event), the rank starting with the row
        self._simulated_switches(chunk, previous, new)
        self._assumed_switches(chunk, previous, point_fn, foot_fn, new)
        for hits in self._hits(chunk, (normal, foot_normal), point_fn, wrench_forces, foot_fn):
            n_true = int(np.count_nonzero(hits.holds))
            if n_true:
                self._steps_in_violation[hits.kind] += n_true
                for c in np.flatnonzero(hits.holds.any(axis=0)).tolist():
                    self._track(hits, c, chunk, new)
        self._end_episodes(float(chunk.t[-1]), int(chunk.step[-1]))
        self._previous = _Step.of(chunk, k - 1, point_fn, foot_fn)
        new.sort(key=lambda item: item[0])
        events = [event for _, event in new]
        self.events += events
        return events

    def _check(self, chunk: StepChunk) -> None:
        """Raise on a chunk that does not follow or is malformed; set the feet's layout."""
        k, n, m = len(chunk), len(chunk.point_names), len(chunk.foot_names)
        first = int(chunk.step[0])
        if self._previous is not None and first <= self._previous.step:
            raise WbsimError(f"step {first} does not follow step {self._previous.step}")
        for name, value, shape in (
            ("point_forces", chunk.point_forces, (k, n, 3)),
            ("foot_wrenches", chunk.foot_wrenches, (k, m, 6)),
        ):
            if np.shape(value) != shape:
                raise WbsimError(f"StepChunk.{name} must have shape {shape}, got {np.shape(value)}")
        layout = (chunk.point_foot, chunk.foot_names)
        if layout != self._layout:
            self._layout = layout
            self._foot_points = [
                np.flatnonzero([f == foot for f in chunk.point_foot]) for foot in chunk.foot_names
            ]
            by_name = sorted(range(m), key=lambda j: chunk.foot_names[j])
            self._foot_rank = [by_name.index(j) for j in range(m)]

    def _normals(self, chunk: StepChunk) -> tuple[np.ndarray, np.ndarray]:
        """The surface normals of the points (``(n, 3)``) and of the feet (their first point's,
        ``(m, 3)``), or the floor's ``(3,)`` for both when every point is on the floor."""
        floor = np.asarray(chunk.floor_normal, dtype=float)
        normals = chunk.normals
        if normals is None or np.array_equal(normals, np.broadcast_to(floor, np.shape(normals))):
            return floor, floor
        normals = np.asarray(normals, dtype=float)
        first = [points[0] if len(points) else 0 for points in self._foot_points]
        return normals, normals[first]

    # ------------------------------------------------------------------------------------------
    def _hits(
        self,
        chunk: StepChunk,
        normals: tuple[np.ndarray, np.ndarray],
        point_fn: np.ndarray,
        wrench_forces: np.ndarray,
        foot_fn: np.ndarray,
    ) -> list[_Hits]:
        """Every violation condition over the chunk, with the surface normals ``(point normals,
        foot normals)`` (:meth:`_normals`); the commanded ``f_n`` (N) of the points ``(k, n)``
        and of the foot wrenches ``(k, m)``, whose forces are ``wrench_forces`` ``(k, m, 3)``,
        N."""
        tol = self.tolerances
        hits = []
        normal, foot_normal = normals
        pyramid = np.asarray(chunk.cone) == 0  # (k,): mjCONE_PYRAMIDAL
        if not np.isnan(point_fn).all():  # (a NaN f_n holds no condition)
            hits += self._commanded(
                0,
                chunk.point_names,
                point_fn,
                _cone_tangential(chunk.point_forces, point_fn, normal, chunk.tangents, pyramid),
                chunk.gap,
                chunk.friction,
            )
        if not np.isnan(foot_fn).all():
            first = [points[0] for points in self._foot_points]  # a foot's contact frame
            hits += self._commanded(
                1,
                chunk.foot_names,
                foot_fn,
                _cone_tangential(
                    wrench_forces, foot_fn, foot_normal, chunk.tangents[:, first], pyramid
                ),
                self._foot_min(chunk.gap),
                self._foot_min(chunk.friction),
            )

        # simulated forces at loaded points, in MuJoCo's cone
        fn, mu, slip = chunk.normal_force, chunk.friction, chunk.slip_velocity
        ft = np.where(
            pyramid[:, None], np.abs(chunk.friction_components).sum(axis=-1), chunk.tangential_force
        )
        loaded = chunk.mode != OPEN
        excess = ft - mu * fn
        with np.errstate(divide="ignore", invalid="ignore"):  # read where loaded only
            used = ft / (mu * fn)
        planar = slip * chunk.tangential_force
        hits += [
            _Hits(
                "friction_cone",
                "simulated",
                chunk.point_names,
                loaded & (excess > tol.friction_cone),
                excess,
                lambda r, c: {
                    "normal_force": float(fn[r, c]),
                    "tangential_force": float(ft[r, c]),
                    "mu": float(mu[r, c]),
                },
                lambda r, c: (2, c, 0),
            ),
            _Hits(
                "planar_complementarity",
                "simulated",
                chunk.point_names,
                loaded & (planar > tol.planar_complementarity),
                planar,
                lambda r, c: {
                    "slip_velocity": float(slip[r, c]),
                    "tangential_force": float(chunk.tangential_force[r, c]),
                },
                lambda r, c: (2, c, 1),
                ("friction_used", used),
            ),
        ]

        if chunk.non_sole:
            hits.append(_non_sole_hits(len(chunk), chunk.non_sole))

        # the controller's status
        def status(r: int) -> str:
            return chunk.message[r] or CommandStatus(int(chunk.status[r])).name.lower()

        fallbacks = sorted({f for f in chunk.fallback if f})
        if fallbacks:
            hits.append(
                _Hits(
                    "fallback",
                    "commanded",
                    fallbacks,
                    np.array([[f == name for name in fallbacks] for f in chunk.fallback]),
                    np.zeros((len(chunk), len(fallbacks))),
                    lambda r, c: {"status": status(r)},
                    lambda r, c: (4, 0, 0),
                )
            )
        failed = (chunk.status != int(CommandStatus.SOLVED))[:, None]
        hits.append(
            _Hits(
                "solver_failure",
                "commanded",
                ("controller",),
                failed,
                np.zeros(failed.shape),
                lambda r, c: {
                    "status": status(r),
                    "feasible": False,
                    "fallback": chunk.fallback[r],
                },
                lambda r, c: (4, 1, 0),
            )
        )

        # commanded torques beyond the actuators' limits
        tau, limit = np.asarray(chunk.torque), np.asarray(chunk.torque_limit)
        over = np.abs(tau) - limit
        hits.append(
            _Hits(
                "torque_limit",
                "commanded",
                chunk.joint_names,
                over > tol.torque_limit,
                over,
                lambda r, c: {
                    "commanded_torque": float(tau[r, c]),
                    "applied_torque": float(chunk.torque_applied[r, c]),
                    "limit": float(limit[c]),
                },
                lambda r, c: (4, 2, c),
            )
        )

        # the assumed contact set against the simulated one
        assumed, sensed = chunk.assumed, chunk.sensed_feet
        hits.append(
            _Hits(
                "contact_mismatch",
                "simulated",
                chunk.foot_names,
                assumed != sensed,
                np.zeros(assumed.shape),
                lambda r, c: {"assumed": bool(assumed[r, c]), "simulated": bool(sensed[r, c])},
                lambda r, c: (5, self._foot_rank[c], 0),
            )
        )
        return hits

    def _commanded(
        self,
        block: int,
        names: Sequence[str],
        fn: np.ndarray,
        ft: np.ndarray,
        gap: np.ndarray,
        mu: np.ndarray,
    ) -> list[_Hits]:
        """The commanded-force conditions of ``(k, c)`` normal forces ``fn`` (N), tangential
        forces ``ft`` (N), gaps ``gap`` (m) and friction coefficients ``mu`` at ``names``."""
        tol = self.tolerances
        pull = fn < -tol.force_sign
        excess = ft - mu * fn
        hf = gap * fn

        def detail(r: int, c: int) -> dict[str, Any]:
            return {"commanded_normal_force": float(fn[r, c]), "gap": float(gap[r, c])}

        return [
            _Hits("force_sign", "commanded", names, pull, -fn, detail, lambda r, c: (block, c, 0)),
            _Hits(
                "friction_cone",
                "commanded",
                names,
                (excess > tol.friction_cone) & ~pull,  # a pulling force is a force_sign only
                excess,
                lambda r, c: {
                    **detail(r, c),
                    "commanded_tangential_force": float(ft[r, c]),
                    "mu": float(mu[r, c]),
                },
                lambda r, c: (block, c, 1),
            ),
            _Hits(
                "complementarity",
                "commanded",
                names,
                (hf > tol.complementarity) & (gap > 0),
                hf,
                detail,
                lambda r, c: (block, c, 2),
            ),
        ]

    # ------------------------------------------------------------------------------------------
    def _track(self, hits: _Hits, c: int, chunk: StepChunk, new: list[tuple[_Rank, Event]]) -> None:
        """Open, extend and confirm the episodes of the key in column ``c`` of ``hits`` (the flood
        rule), one run of consecutive steps where it holds at a time."""
        key = (hits.kind, hits.names[c], hits.source)
        t, step, magnitude = chunk.t, chunk.step, hits.magnitude[:, c]
        episode = self._episodes.get(key)
        for a, b in _runs(hits.holds[:, c]):
            # steps in this chunk before row a where the condition did not hold may have ended the
            # episode (the chunk before ended it at its own steps); the latest of them decides
            if (
                episode is not None
                and a > 0
                and step[a - 1] > episode.last_step
                and self._is_over(episode, float(t[a - 1]))
            ):
                self._end(key)
                episode = None
            if episode is None:
                episode = self._episodes[key] = _Episode(
                    float(t[a]), int(step[a]), float(magnitude[a]), hits.detail(a, c)
                )
            episode.extend(float(t[b]), int(step[b]), magnitude[a : b + 1].tolist())
            if hits.peak is not None:
                episode.peak = max(episode.peak, float(hits.peak[1][a : b + 1, c].max()))
            if episode.event is None:
                row = self._confirmation(hits.kind, episode, t, a, b)
                if row is None:
                    continue
                episode.event = self._violation(key, episode, float(t[row]), int(step[row]))
                new.append(((row, 1, *hits.rank(row, c)), episode.event))
            event = episode.event
            if hits.peak is not None:
                event.detail[hits.peak[0]] = episode.peak
            event.duration = episode.last_t - episode.start_t + self.dt
            event.n_steps = episode.n_true
            event.end_t, event.end_step = episode.last_t, episode.last_step
            event.magnitude = event.duration if key[0] in _DURATION_KINDS else episode.worst

    def _confirmation(
        self, kind: str, episode: _Episode, t: np.ndarray, a: int, b: int
    ) -> int | None:
        """The row in ``a..b`` where the episode becomes an event: at once, or for a contact
        mismatch the first where it has lasted more than ``mismatch_duration`` (else None)."""
        if kind != "contact_mismatch":
            return a
        lasted = t[a : b + 1] - episode.start_t + self.dt
        late = np.flatnonzero(lasted > self.tolerances.mismatch_duration + 1e-12)
        return a + int(late[0]) if len(late) else None

    @staticmethod
    def _violation(key: tuple[str, str, str], episode: _Episode, t: float, step: int) -> Event:
        """The event of an episode confirmed at ``step`` (time ``t``)."""
        kind, where, source = key
        detail = dict(episode.detail)
        if kind not in ("fallback", "solver_failure"):
            detail["source"] = source
        if kind == "contact_mismatch":
            detail["confirmed_t"], detail["confirmed_step"] = t, step
        return Event(kind, episode.start_t, episode.start_step, where, episode.worst, detail)

    def _is_over(self, episode: _Episode, t: float) -> bool:
        """Whether an episode whose condition does not hold at time ``t`` has ended by then (a
        contact mismatch not yet an event ends at once)."""
        return episode.event is None or t - episode.last_t > self.tolerances.rearm_time + 1e-12

    def _end(self, key: tuple[str, str, str]) -> None:
        event = self._episodes.pop(key).event
        if event is not None:
            event.ongoing = False

    def _end_episodes(self, t: float, step: int) -> None:
        """End the episodes that do not hold at the last step (``t``, ``step``) and are over."""
        for key, episode in list(self._episodes.items()):
            if episode.last_step < step and self._is_over(episode, t):
                self._end(key)

    def finish(self) -> None:
        """End every ongoing episode (call at the end of a rollout)."""
        for key in list(self._episodes):
            self._end(key)

    # ------------------------------------------------------------------------------------------
    def _simulated_switches(
        self, chunk: StepChunk, previous: _Step, new: list[tuple[_Rank, Event]]
    ) -> None:
        """``mode_switch`` events of the simulated contact set.

        Per foot, a run of steps in the state other than the one last logged is a switch once it
        has lasted ``switch_debounce`` (its event has the run's first step; a make's magnitude is
        the foot's load when logged, a break's the load at the step before the run); a run back
        in the logged state drops it. A run still too short at the chunk's end carries over.
        """
        sensed, t, step = chunk.sensed_feet, chunk.t, chunk.step
        k, m = sensed.shape
        changed = sensed != np.concatenate((previous.sensed_feet[None], sensed[:-1]))  # (k, m)
        logged_before = self._logged_feet.copy()
        switches = []  # (row logged, foot, make, t, step, magnitude)
        for j in range(m):
            starts = np.flatnonzero(changed[:, j]).tolist()
            if self._pending[j] is not None and starts[:1] != [0]:
                starts.insert(0, 0)  # the run of the waiting change goes on
            for a, end in zip(starts, [*starts[1:], k]):
                make = bool(sensed[a, j])
                if make == self._logged_feet[j]:  # back in the logged state
                    self._pending[j] = None
                    continue
                if self._pending[j] is None:
                    load = self._foot_load(_before(chunk.normal_force, a, previous.normal_force), j)
                    self._pending[j] = (float(t[a]), int(step[a]), load)
                t0, step0, load_before = self._pending[j]  # type: ignore[misc]
                held = t[a:end] - t0 + self.dt
                due = np.flatnonzero(held + 1e-12 >= self.tolerances.switch_debounce)
                if len(due):
                    row = a + int(due[0])
                    load = self._foot_load(chunk.normal_force[row], j) if make else load_before
                    switches.append((row, j, make, t0, step0, load))
                    self._logged_feet[j] = make
                    self._pending[j] = None
        in_contact = {f for f, on in zip(chunk.foot_names, logged_before) if on}
        for row, j, make, t0, step0, load in sorted(
            switches, key=lambda s: (s[0], self._foot_rank[s[1]])
        ):
            foot = chunk.foot_names[j]
            after = in_contact | {foot} if make else in_contact - {foot}
            event = _switch(foot, "simulated", in_contact, after, t0, step0, load)
            if int(step[row]) != step0:  # debounced: when it was logged, as a confirmed mismatch
                event.detail["confirmed_t"] = float(t[row])
                event.detail["confirmed_step"] = int(step[row])
            new.append(((row, 0, 0, self._foot_rank[j]), event))
            in_contact = after

    def _assumed_switches(
        self,
        chunk: StepChunk,
        previous: _Step,
        point_fn: np.ndarray,
        foot_fn: np.ndarray,
        new: list[tuple[_Rank, Event]],
    ) -> None:
        """``mode_switch`` events of the controller's assumed contact set, at once (its
        magnitude: the commanded load of the step after a make, of the step before a break)."""
        assumed = chunk.assumed
        changed = assumed != np.concatenate((previous.assumed[None], assumed[:-1]))  # (k, m)
        for row in np.flatnonzero(changed.any(axis=1)).tolist():
            was, now = _before(assumed, row, previous.assumed), assumed[row]
            before = {f for f, on in zip(chunk.foot_names, was) if on}
            after = {f for f, on in zip(chunk.foot_names, now) if on}
            for j in sorted(np.flatnonzero(changed[row]).tolist(), key=self._foot_rank.__getitem__):
                if now[j]:
                    load = self._foot_load(point_fn[row], j, foot_fn[row])
                else:
                    load = self._foot_load(
                        _before(point_fn, row, previous.point_fn),
                        j,
                        _before(foot_fn, row, previous.foot_fn),
                    )
                new.append(
                    (
                        (row, 0, 1, self._foot_rank[j]),
                        _switch(
                            chunk.foot_names[j],
                            "assumed",
                            before,
                            after,
                            float(chunk.t[row]),
                            int(chunk.step[row]),
                            load,
                        ),
                    )
                )

    def _foot_min(self, values: np.ndarray) -> np.ndarray:
        """``(k, m)`` the smallest of ``values`` ``(k, n)`` over each foot's points (NaN if one
        is NaN)."""
        out = np.empty((len(values), len(self._foot_points)))
        for j, points in enumerate(self._foot_points):
            np.min(values[:, points], axis=1, out=out[:, j])
        return out

    def _foot_load(
        self, normal_force: np.ndarray, j: int, wrench_normal_force: np.ndarray | None = None
    ) -> float:
        """The normal force on foot ``j``, N: ``normal_force`` ``(n,)`` summed over its points in
        point order. For a command, with ``wrench_normal_force`` ``(m,)``: plus the foot's wrench,
        and NaN (not commanded) left out."""
        values = normal_force[self._foot_points[j]].tolist()
        if wrench_normal_force is None:
            return float(sum(values))
        values.append(float(wrench_normal_force[j]))
        return float(sum(v for v in values if not math.isnan(v)))

    # ------------------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """Number of events per kind (every kind of :data:`EVENT_KINDS`, 0 included)."""
        out = dict.fromkeys(EVENT_KINDS, 0)
        for ev in self.events:
            out[ev.kind] += 1
        return out

    @property
    def n_violations(self) -> int:
        """Number of violation events (every kind but ``mode_switch``)."""
        return sum(1 for ev in self.events if ev.kind != "mode_switch")

    @property
    def slides(self) -> int:
        """Number of ``planar_complementarity`` events that are slides, not creep (their point
        reached ``Tolerances.slide`` of MuJoCo's friction cone)."""
        return sum(
            1
            for ev in self.events
            if ev.kind == "planar_complementarity"
            and ev.detail["friction_used"] >= self.tolerances.slide
        )

    def summary(self) -> dict[str, Any]:
        """For ``summary.json``: per kind the event ``counts``, the ``worst`` magnitude and the
        ``first_t`` (``None`` without events), ``steps_in_violation`` (summed over steps: at each
        step, the number of distinct ``(where, source)`` pairs where the condition held, a point
        with both its commanded and its simulated force outside the cone counting twice; before
        the mismatch delay; so it can exceed the episode's steps), the total ``n_violations``,
        ``slides`` (the ``planar_complementarity`` events that reached ``Tolerances.slide`` of
        MuJoCo's cone; the others are creep) and the ``tolerances``."""
        worst: dict[str, float | None] = dict.fromkeys(EVENT_KINDS)
        first: dict[str, float | None] = dict.fromkeys(EVENT_KINDS)
        for ev in self.events:
            w, f = worst[ev.kind], first[ev.kind]
            if w is None or ev.magnitude > w:
                worst[ev.kind] = float(ev.magnitude)
            if f is None or ev.t < f:
                first[ev.kind] = float(ev.t)
        return {
            "counts": self.counts(),
            "worst": worst,
            "first_t": first,
            "steps_in_violation": dict(self._steps_in_violation),
            "n_violations": self.n_violations,
            "slides": self.slides,
            "tolerances": self.tolerances.to_dict(),
        }


_DURATION_KINDS = frozenset({"contact_mismatch", "fallback", "solver_failure"})


def _along(force: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """``f . n`` ``(k, c)`` of forces ``(k, c, 3)`` with one unit normal ``(3,)`` or one per
    column ``(c, 3)``."""
    if normal.ndim == 1:
        return force @ normal
    return np.einsum("kcj,cj->kc", force, normal)


def _tangential(force: np.ndarray, f_n: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """``f_t = |f - f_n n|`` (N), shape ``(k, c)``, of forces ``(k, c, 3)`` (N) with normal
    components ``f_n`` ``(k, c)`` (N) along the unit normal ``n`` ``(3,)`` (or one per column,
    ``(c, 3)``)."""
    if normal.ndim == 2:
        across = force - f_n[..., None] * normal
        return np.sqrt(np.einsum("kcj,kcj->kc", across, across))
    nx, ny, nz = normal.tolist()
    fx, fy, fz = force[..., 0], force[..., 1], force[..., 2]  # per component: fast for long k n
    across_x, across_y, across_z = fx - f_n * nx, fy - f_n * ny, fz - f_n * nz
    return np.sqrt((across_x * across_x + across_y * across_y) + across_z * across_z)


def _cone_tangential(
    force: np.ndarray,
    f_n: np.ndarray,
    normal: np.ndarray,
    tangents: np.ndarray,
    pyramid: np.ndarray,
) -> np.ndarray:
    """The tangential force ``(k, c)`` (N) that MuJoCo's cone bounds by ``mu f_n``, of forces
    ``(k, c, 3)`` (N) with normal components ``f_n`` ``(k, c)``: ``|f . t1| + |f . t2|`` with the
    contact frame's tangents ``tangents`` ``(k, c, 2, 3)`` where ``pyramid`` ``(k,)``, else the
    norm of the force across the unit ``normal`` ``(3,)`` (or one per column, ``(c, 3)``)."""
    along = np.abs(np.einsum("kcj,kcij->kci", force, tangents)).sum(axis=-1)
    return np.where(pyramid[:, None], along, _tangential(force, f_n, normal))


def _runs(holds: np.ndarray) -> list[tuple[int, int]]:
    """``(first, last)`` index of each run of consecutive ``True`` in ``holds`` ``(k,)``."""
    edges = np.flatnonzero(np.diff(holds, prepend=False, append=False))
    return list(zip(edges[0::2].tolist(), (edges[1::2] - 1).tolist()))


def _non_sole_hits(k: int, contacts: Sequence[tuple[int, str, float]]) -> _Hits:
    """``non_sole_contact`` of ``StepChunk.non_sole`` in a chunk of ``k`` steps."""
    names = list(dict.fromkeys(name for _, name, _ in contacts))
    column = {name: c for c, name in enumerate(names)}
    holds = np.zeros((k, len(names)), dtype=bool)
    force = np.zeros((k, len(names)))
    place = np.zeros((k, len(names)), dtype=int)  # the order within the step
    seen: dict[int, int] = {}
    for row, name, f in contacts:
        c = column[name]
        holds[row, c], force[row, c] = True, f
        place[row, c] = seen[row] = seen.get(row, -1) + 1
    return _Hits(
        "non_sole_contact",
        "simulated",
        names,
        holds,
        force,
        lambda r, c: {},
        lambda r, c: (3, int(place[r, c]), 0),
    )


def _switch(
    foot: str, source: str, before: set[str], after: set[str], t: float, step: int, magnitude: float
) -> Event:
    """A ``mode_switch`` event of ``foot``."""
    return Event(
        "mode_switch",
        t,
        step,
        foot,
        float(magnitude),
        {
            "source": source,
            "change": "make" if foot in after else "break",
            "before": sorted(before),
            "after": sorted(after),
        },
        duration=0.0,
        n_steps=1,
        end_t=t,
        end_step=step,
        ongoing=False,
    )
