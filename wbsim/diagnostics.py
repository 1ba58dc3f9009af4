"""Contact events, their tolerances, and the centroidal momentum balance.

Owns: deciding, every step, which physically forbidden or noteworthy things happened, from what the
simulation sensed (:class:`wbsim.contacts.ContactSensing`) and what the controller commanded
(:class:`wbsim.controllers.base.Command`); the documented tolerances of those decisions
(:class:`Tolerances`).
It writes no files: the episode log stores :meth:`Event.to_dict` and :meth:`EventDetector.summary`.

Events (``Event.kind``, see :data:`EVENT_KINDS`), with the seed's conditions
(after the project's seed text "dynamic-complementarity-conditions", not shipped with the package;
``n`` the floor normal, ``h`` the
simulated gap of the point, ``f`` a force on the robot, world frame):

=========================  =======================================================  ================
kind                       condition (per point, or per foot for a wrench command)  magnitude
=========================  =======================================================  ================
``mode_switch``            the set of feet in contact changed; ``source`` is        foot normal
                           ``"simulated"`` (sensed) or ``"assumed"`` (command)      force, N (*)
``force_sign``             commanded ``f . n < -force_sign``                        ``-f . n``, N
``friction_cone``          commanded (and not pulling), or simulated and loaded:    ``|f_t| - mu
                           ``|f_t| > mu (f . n) + friction_cone``                   f_n``, N
``complementarity``        commanded force at a point that is not touching:         ``h f_n``, N·m
                           ``h > 0``, ``f_n > 0``, ``h f_n > complementarity``
``planar_complementarity`` simulated, loaded: ``|v_t| |f_t| > planar_complementarity``  ``|v_t| |f_t|``,
                                                                                    W
``contact_mismatch``       a foot assumed in contact is open in the simulation, or  duration, s
                           the reverse, for more than ``mismatch_duration``
``non_sole_contact``       a robot geom other than the sole points touches the      normal force, N
                           environment
``fallback``               ``Command.fallback`` is not empty                        duration, s
``solver_failure``         ``Command.status`` is not ``CommandStatus.SOLVED``        duration, s
=========================  =======================================================  ================

(*) on the loaded side of the switch: after a make, before a break; the commanded foot force for
``"assumed"`` (0 when the controller commands no force).

Flood rule (every kind but ``mode_switch``): a violation is an *episode* per ``(kind, where,
source)``. Its :class:`Event` is emitted (returned by :meth:`EventDetector.update` and appended to
:attr:`EventDetector.events`) at the step the condition starts to hold; ``t`` and ``step`` are that
first step. While the episode lasts the same object is updated in place: ``magnitude`` is the worst
value so far, ``duration``, ``n_steps``, ``end_t``, ``end_step`` grow. The episode ends when the
condition has not held for more than ``Tolerances.rearm_time`` seconds (or at
:meth:`EventDetector.finish`); only then can the same ``(kind, where, source)`` emit a new event.
``contact_mismatch`` must also hold without a break for more than ``mismatch_duration`` before it
is an event at all (the event still carries the first step of the mismatch). ``mode_switch`` events
are discrete: one per foot whose state changes (the first update only sets the reference), after
``switch_debounce`` seconds of the new state (0: at once).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wbsim.contacts import ContactSensing
from wbsim.errors import UnknownNameError, WbsimError, check_keys

__all__ = [
    "EVENT_KINDS",
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
)
#: The kinds that are violations (everything but ``mode_switch``).
VIOLATION_KINDS = EVENT_KINDS[1:]


@dataclass(frozen=True)
class Tolerances:
    """Tolerances of the event conditions (see the table in :mod:`wbsim.diagnostics`).

    Attributes:
        force_sign: N. A commanded normal force below ``-force_sign`` pulls on the floor. 0.01 N is
            far above a QP's constraint tolerance (1e-6 N and less for the wbsim solvers) and far
            below any force that matters (a G1 sole point carries ~40 N standing).
        friction_cone: N. Allowed excess of ``|f_t|`` over ``mu f_n``, commanded or simulated.
            MuJoCo's simulated force never leaves its cone (pyramid: ``|f_t| <= mu f_n``); 0.01 N
            absorbs rounding.
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
    """

    force_sign: float = 0.01
    friction_cone: float = 0.01
    complementarity: float = 0.01
    planar_complementarity: float = 0.02
    mismatch_duration: float = 0.02
    rearm_time: float = 0.02
    switch_debounce: float = 0.0

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    math.isfinite(value) and value >= 0):
                raise WbsimError(f"Tolerances.{f.name} must be a finite number >= 0, got {value!r}")
            object.__setattr__(self, f.name, float(value))

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
            ``gap``, ``normal_force``, ``status``, ...; plain JSON types only.
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
        return {"kind": self.kind, "t": float(self.t), "step": int(self.step), "where": self.where,
                "magnitude": float(self.magnitude), "detail": dict(self.detail),
                "duration": float(self.duration), "n_steps": int(self.n_steps),
                "end_t": float(self.end_t), "end_step": int(self.end_step), "ongoing": self.ongoing}


class _Episode:
    """Bookkeeping of one ``(kind, where, source)`` condition."""

    __slots__ = (
        "detail",
        "event",
        "last_step",
        "last_t",
        "n_true",
        "start_step",
        "start_t",
        "worst",
    )

    def __init__(self, t: float, step: int, magnitude: float, detail: dict):
        self.start_t, self.start_step = t, step
        self.last_t, self.last_step = t, step
        self.n_true = 1
        self.worst = magnitude
        self.event: Event | None = None
        self.detail = detail


class EventDetector:
    """Turns sensing and commands into :class:`Event` objects, one episode per violation.

    Args:
        tolerances: :class:`Tolerances` or a dict of its fields (unknown keys raise).
        dt: the step, s; default: inferred from the first two :meth:`update` calls (durations of
            an episode found at the very first step count one step of ``dt`` once it is known).

    Use: call :meth:`update` once per step, then :meth:`finish` at the end of the episode; read
    :attr:`events` and :meth:`summary`.
    """

    def __init__(self, tolerances: Tolerances | Mapping[str, float] = Tolerances(), *,
                 dt: float | None = None):
        self.tolerances = (tolerances if isinstance(tolerances, Tolerances)
                           else Tolerances.from_dict(tolerances))
        if dt is not None and not (math.isfinite(dt) and dt > 0):
            raise WbsimError(f"dt must be > 0, got {dt!r}")
        self.dt = dt
        #: every event emitted, in emission order
        self.events: list[Event] = []
        self._episodes: dict[tuple[str, str, str], _Episode] = {}
        self._steps_in_violation = dict.fromkeys(EVENT_KINDS, 0)
        self._last_t: float | None = None
        self._last_step: int | None = None
        self._prev_sensing: ContactSensing | None = None
        self._sim_feet: frozenset[str] | None = None
        self._sim_pending: dict[str, tuple[bool, float, int]] = {}
        self._assumed_feet: frozenset[str] | None = None
        self._prev_cmd: tuple[tuple[str, ...], np.ndarray] = ((), _NO_FORCES)
        self._cmd_layouts: dict[tuple[str, ...], tuple] = {}
        self._point_index: dict[str, int] | None = None
        self._foot_points: dict[str, np.ndarray] = {}
        self._names: tuple[str, ...] | None = None
        self._up_normal: np.ndarray | None = None  # a floor normal known to be exactly +z
        self._screens: dict[tuple[str, ...], tuple] = {}
        #: ``(m, 3)`` the commanded forces of the last :meth:`update`, in ``contact_forces`` key
        #: order, when every key is a point with a ``(3,)`` force (a fresh array; ``None``
        #: otherwise). :func:`wbsim.rollout.run_episode` logs it without building it again.
        self.command_forces: np.ndarray | None = None

    def __getstate__(self) -> dict:
        """For copy and pickle: without the screens' scratch buffers, which are shared by views (a
        copy would break the sharing); they are rebuilt at the next :meth:`update`."""
        state = self.__dict__.copy()
        state["_screens"] = {}
        return state

    # ------------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget everything (a new episode)."""
        self.__init__(self.tolerances, dt=self.dt)

    def _layout(self, sensing: ContactSensing) -> None:
        self._names = sensing.names
        self._point_index = {n: i for i, n in enumerate(sensing.names)}
        feet: dict[str, list[int]] = {}
        for i, f in enumerate(sensing.point_foot):
            if f:
                feet.setdefault(f, []).append(i)
        self._foot_points = {f: np.array(ix) for f, ix in feet.items()}
        self._cmd_layouts.clear()
        self._screens.clear()

    def update(self, sensing, command=None, t: float = 0.0, step: int = 0,
               assumed_contacts: Iterable[str] | None = None) -> list[Event]:
        from wbsim.types import StepChunk
        if isinstance(sensing, StepChunk):  # TEMPORARY: replaced by the chunk detector
            return self._update_chunk(sensing)
        return self._update(sensing, command, t, step, assumed_contacts)

    def _update_chunk(self, c) -> list[Event]:  # TEMPORARY
        from wbsim.types import Command, CommandStatus
        out = []
        feet = c.foot_names
        for i in range(len(c)):
            s = _OneStep(c, i)
            F = None if np.isnan(c.point_forces[i]).all() else c.point_forces[i]
            W = None if np.isnan(c.foot_wrenches[i]).all() else c.foot_wrenches[i]
            cset = frozenset(f for f, a in zip(feet, c.assumed[i]) if a)
            cmd = Command(tau=np.zeros(1), contact_set=cset, point_forces=F, foot_wrenches=W,
                          status=CommandStatus(int(c.status[i])), fallback=c.fallback[i],
                          message=c.message[i])
            out += self._update(s, cmd, float(c.t[i]), int(c.step[i]), cset)
        return out

    def _update(self, sensing: ContactSensing, command, t: float, step: int,
                assumed_contacts: Iterable[str] | None = None) -> list[Event]:
        """Check one step.

        Args:
            sensing: the simulation's contact state at this step.
            command: the controller's :class:`~wbsim.controllers.base.Command` of this step.
                ``point_forces`` ``(n, 3)`` in the sensing's point order, or ``foot_wrenches``
                (checked with the foot's smallest gap and friction).
            t: simulated time of the state the command was computed for, s (``d.time`` before
                ``mj_step``; sensing read right after ``mj_step`` belongs to that state).
            step: step index (increasing).
            assumed_contacts: the feet assumed in contact when the command does not say: used only
                when ``command.contact_set`` is empty and it commands no force (e.g. a
                PD controller; pass the schedule's contact set). Without either, the assumed-set
                checks (``mode_switch`` "assumed", ``contact_mismatch``) are skipped this step.

        Returns:
            The events that started at this step (also appended to :attr:`events`).

        Raises:
            WbsimError: a commanded force of the wrong shape, or ``step`` not increasing.
        """
        t = float(t)
        step = int(step)
        if self._last_step is not None:
            if step <= self._last_step:
                raise WbsimError(f"step {step} does not follow step {self._last_step}")
            if self.dt is None:
                self.dt = (t - self._last_t) / (step - self._last_step)
        if sensing.names is not self._names:
            self._layout(sensing)
        new: list[Event] = []
        hits: list[tuple[str, str, str, float, dict]] = []  # kind, where, source, magnitude, detail
        forces = self._forces_of(command, sensing)
        self.command_forces = None
        # the usual step: a quick screen of the force checks finds nothing to look at
        cmd = self._screen(sensing, forces)
        if cmd is None:
            cmd = self._check_forces(sensing, forces, hits)

        # --- non-sole contacts --------------------------------------------------------------
        for name, f in sensing.non_sole_contacts.items():
            hits.append(("non_sole_contact", name, "simulated", float(f), {}))

        # --- controller status --------------------------------------------------------------
        if command.fallback:
            hits.append(("fallback", str(command.fallback), "commanded", 0.0,
                         {"status": command.message or command.status.name.lower()}))
        if not command.feasible:
            hits.append(("solver_failure", "controller", "commanded", 0.0,
                         {"status": command.message or command.status.name.lower(),
                          "feasible": False, "fallback": str(command.fallback)}))

        # --- contact sets -------------------------------------------------------------------
        if command.contact_set or forces:
            assumed = frozenset(command.contact_set)
        elif assumed_contacts is not None:
            assumed = frozenset(assumed_contacts)
        else:
            assumed = None
        sim = sensing.feet_in_contact
        if sim != self._sim_feet or self._sim_pending or assumed != self._assumed_feet:
            new += self._mode_switches(sensing, sim, assumed, cmd, t, step)
        if assumed is not None and assumed != sim:
            for foot in sorted(assumed ^ sim):
                hits.append(("contact_mismatch", foot, "simulated", 0.0,
                             {"assumed": foot in assumed, "simulated": foot in sim}))

        if hits or self._episodes:
            new += self._track(hits, t, step)
        self._last_t, self._last_step = t, step
        self._prev_sensing = sensing
        self._prev_cmd = cmd
        return new

    def _forces_of(self, command, sensing: ContactSensing) -> Mapping[str, np.ndarray]:
        """The command's forces by name: point -> ``(3,)`` or foot -> ``(6,)`` wrench."""
        if command.point_forces is not None:
            F = np.asarray(command.point_forces)
            if F.shape != (len(sensing.names), 3):
                raise WbsimError(f"Command.point_forces must have shape ({len(sensing.names)}, 3) "
                                 f"(one row per contact point), got {F.shape}")
            return dict(zip(sensing.names, F))
        if command.foot_wrenches is not None:
            W = np.asarray(command.foot_wrenches)
            if W.shape != (len(self._foot_points), 6):
                raise WbsimError(f"Command.foot_wrenches must have shape ({len(self._foot_points)}"
                                 f", 6) (one row per foot), got {W.shape}")
            return dict(zip(self._foot_points, W))
        return {}

    def _screen(self, sensing: ContactSensing, forces: Mapping[str, np.ndarray]) -> tuple | None:
        """The force checks of :meth:`_check_forces` in a few numpy calls, for the usual step.

        Returns the command's ``(feet, normal forces)`` when no force condition can hold, or
        ``None`` when :meth:`_check_forces` must run (a condition may hold, a floor that is not
        exactly level, foot wrenches, bad input). Each quantity is computed with the same
        floating-point operations as in :meth:`_check_forces` (for a level floor ``f . n`` is
        ``f_z`` and ``|f_t| = sqrt(f_x^2 + f_y^2)`` exactly), and every screened inequality is a
        necessary condition of an event, so the screen never hides one
        (``tests/test_diagnostics.py`` compares both on random inputs).
        """
        normal = sensing.floor_normal_world
        if normal is not self._up_normal:
            if not (np.shape(normal) == (3,) and np.asarray(normal).tolist() == [0.0, 0.0, 1.0]):
                return None
            self._up_normal = normal
        keys = tuple(forces)
        screen = self._screens.get(keys)
        if screen is None or (screen is not False and screen[-1] is not self.tolerances):
            screen = self._make_screen(sensing, keys)
        if screen is False:
            return None
        m, identity, idx, feet, S, S_pull, S_cone, S_comp, S_sim_cone, S_planar, T, flags, clear, _ \
            = screen
        fn = ft = None
        if m:
            try:
                F = np.array(tuple(forces.values()), dtype=float)
            except ValueError:
                return None
            if F.shape != (m, 3):
                return None
            self.command_forces = F
            fn = F[:, 2]
            # |f_t| = sqrt(f_x^2 + f_y^2 (+ 0 f_z^2)): the same rounding
            ft = np.sqrt((F * F).dot(_XY), out=S_cone)
            if identity:
                gaps, mus = sensing.gap, sensing.friction
            else:
                gaps, mus = sensing.gap.take(idx), sensing.friction.take(idx)
            np.negative(fn, out=S_pull)  # -f_n > force_sign: pulling
            np.subtract(ft, mus * fn, out=S_cone)  # |f_t| - mu f_n > friction_cone (in place)
            np.multiply(gaps, fn, out=S_comp)  # h f_n > complementarity
        sfn, sft = sensing.normal_force, sensing.tangential_force
        np.subtract(sft, sensing.friction * sfn, out=S_sim_cone)
        np.multiply(sensing.slip_velocity, sft, out=S_planar)
        if np.less_equal(S, T, flags).tobytes() != clear:  # an inequality may hold (or a NaN)
            return None
        return (feet, fn) if m else ((), _NO_FORCES)

    def _make_screen(self, sensing: ContactSensing, keys: tuple[str, ...]):
        """Scratch buffers and thresholds of :meth:`_screen` for the commanded keys ``keys``
        (``False``: keys that :meth:`_screen` leaves to :meth:`_check_forces`)."""
        n = len(sensing.names)
        screen = False
        try:
            if keys:
                idx, feet, all_points = self._command_layout(sensing, keys)
                identity = len(idx) == n and bool(np.all(idx == np.arange(n)))
            else:
                idx, feet, all_points, identity = _NO_INDEX, (), True, True
        except UnknownNameError:
            all_points = False  # _check_forces raises it
        if all_points and np.shape(sensing.normal_force) == (n,):
            m, tol = len(keys), self.tolerances
            S = np.zeros(3 * m + 2 * n)
            T = np.concatenate([np.full(m, tol.force_sign), np.full(m, tol.friction_cone),
                                np.full(m, tol.complementarity), np.full(n, tol.friction_cone),
                                np.full(n, tol.planar_complementarity)])
            screen = (m, identity, idx, feet, S, S[:m], S[m:2 * m], S[2 * m:3 * m],
                      S[3 * m:3 * m + n], S[3 * m + n:], T, np.zeros(len(S), dtype=bool),
                      np.ones(len(S), dtype=bool).tobytes(), tol)
        if len(self._screens) >= 256:
            self._screens.clear()
        self._screens[keys] = screen
        return screen

    def _check_forces(self, sensing: ContactSensing, forces: Mapping[str, np.ndarray],
                      hits: list) -> tuple:
        """The commanded and simulated force conditions (exact); appends to ``hits`` and returns
        the command's ``(feet, normal forces)``."""
        tol = self.tolerances
        # --- commanded forces ---------------------------------------------------------------
        cmd = self._check_commanded(sensing, forces, hits) if forces else ((), _NO_FORCES)

        # --- simulated forces ---------------------------------------------------------------
        fn, ft, slip = sensing.normal_force, sensing.tangential_force, sensing.slip_velocity
        excess = ft - sensing.friction * fn
        planar = slip * ft
        bad = (sensing.mode != 0) & ((excess > tol.friction_cone)
                                     | (planar > tol.planar_complementarity))
        if bad.any():
            for i in bad.nonzero()[0].tolist():
                if excess[i] > tol.friction_cone:
                    hits.append(("friction_cone", sensing.names[i], "simulated", float(excess[i]),
                                 {"normal_force": float(fn[i]), "tangential_force": float(ft[i]),
                                  "mu": float(sensing.friction[i])}))
                if planar[i] > tol.planar_complementarity:
                    hits.append(("planar_complementarity", sensing.names[i], "simulated",
                                 float(planar[i]), {"slip_velocity": float(slip[i]),
                                                    "tangential_force": float(ft[i])}))
        return cmd

    # ------------------------------------------------------------------------------------------
    def _command_layout(self, sensing: ContactSensing, keys: tuple[str, ...]):
        """Per commanded key: the point index (or -1 for a foot wrench) and its foot; cached."""
        layout = self._cmd_layouts.get(keys)
        if layout is None:
            pidx = self._point_index
            idx, feet = [], []
            for key in keys:
                if key in pidx:
                    idx.append(pidx[key])
                    feet.append(sensing.point_foot[pidx[key]])
                elif key in self._foot_points:
                    idx.append(-1)
                    feet.append(key)
                else:
                    raise UnknownNameError("contact point or foot", key, [*pidx, *self._foot_points])
            idx_arr = np.array(idx, dtype=int)
            layout = (idx_arr, tuple(feet), bool(np.all(idx_arr >= 0)))
            self._cmd_layouts[keys] = layout
        return layout

    def _check_commanded(self, sensing: ContactSensing, forces: Mapping[str, np.ndarray],
                         hits: list) -> tuple[tuple[str, ...], np.ndarray]:
        """Commanded-force checks; returns the command's feet per key and normal forces (N)."""
        tol = self.tolerances
        keys = tuple(forces)
        idx, feet, all_points = self._command_layout(sensing, keys)
        if all_points:
            try:
                F = np.array(list(forces.values()), dtype=float)
            except ValueError:
                F = None
            if F is None or F.shape != (len(keys), 3):
                for key, value in forces.items():
                    shape = np.shape(value)
                    if shape != (3,):
                        raise WbsimError(f"commanded force at point {key!r} must have shape (3,), "
                                         f"got {shape}")
            gaps = sensing.gap.take(idx)
            mus = sensing.friction.take(idx)
            self.command_forces = F
        else:
            F = np.empty((len(keys), 3))
            gaps = np.empty(len(keys))
            mus = np.empty(len(keys))
            for j, (key, value) in enumerate(forces.items()):
                f = np.asarray(value, dtype=float)
                if idx[j] >= 0:
                    if f.shape != (3,):
                        raise WbsimError(f"commanded force at point {key!r} must have shape (3,), "
                                         f"got {f.shape}")
                    F[j], gaps[j], mus[j] = f, sensing.gap[idx[j]], sensing.friction[idx[j]]
                else:
                    if f.shape != (6,):
                        raise WbsimError(f"commanded wrench at foot {key!r} must have shape (6,), "
                                         f"got {f.shape}")
                    ix = self._foot_points[key]
                    F[j], gaps[j], mus[j] = f[:3], sensing.gap[ix].min(), sensing.friction[ix].min()
        n = sensing.floor_normal_world
        fn = F @ n
        ft_vec = F - fn[:, None] * n
        ft = np.sqrt(np.add.reduce(ft_vec * ft_vec, 1))
        pull = fn < -tol.force_sign
        excess = ft - mus * fn
        fric = (excess > tol.friction_cone) & ~pull  # a pulling force is a force_sign event only
        hf = gaps * fn
        comp = (hf > tol.complementarity) & (gaps > 0)
        bad = pull | fric | comp
        if bad.any():
            for i in bad.nonzero()[0].tolist():
                detail = {"commanded_normal_force": float(fn[i]), "gap": float(gaps[i])}
                if pull[i]:
                    hits.append(("force_sign", keys[i], "commanded", float(-fn[i]), detail))
                if fric[i]:
                    hits.append(("friction_cone", keys[i], "commanded", float(excess[i]),
                                 {**detail, "commanded_tangential_force": float(ft[i]),
                                  "mu": float(mus[i])}))
                if comp[i]:
                    hits.append(("complementarity", keys[i], "commanded", float(hf[i]), detail))
        return feet, fn

    def _mode_switches(self, sensing: ContactSensing, sim: frozenset[str],
                       assumed: frozenset[str] | None, cmd: tuple, t: float,
                       step: int) -> list[Event]:
        out: list[Event] = []
        # simulated, with optional debounce
        if self._sim_feet is None:
            self._sim_feet = sim
        elif sim != self._sim_feet or self._sim_pending:
            for foot in sorted((sim ^ self._sim_feet) | set(self._sim_pending)):
                on = foot in sim
                if on == (foot in self._sim_feet):  # back to the logged state: drop pending
                    self._sim_pending.pop(foot, None)
                    continue
                pend = self._sim_pending.get(foot)
                if pend is None or pend[0] != on:
                    pend = (on, t, step, self._foot_fn(self._prev_sensing, foot))
                    self._sim_pending[foot] = pend
                held = t - pend[1] + (self.dt or 0.0)
                if held + 1e-12 >= self.tolerances.switch_debounce:
                    before = self._sim_feet
                    after = (before | {foot}) if on else (before - {foot})
                    mag = self._foot_fn(sensing, foot) if on else pend[3]
                    out.append(self._switch_event(foot, "simulated", before, after, pend[1],
                                                  pend[2], mag))
                    self._sim_feet = frozenset(after)
                    del self._sim_pending[foot]
        # assumed (the controller's set is exact: no debounce)
        if assumed is not None:
            if self._assumed_feet is not None and assumed != self._assumed_feet:
                before = self._assumed_feet
                for foot in sorted(assumed ^ before):
                    on = foot in assumed
                    feet, fn = cmd if on else self._prev_cmd
                    mag = float(sum(f for p, f in zip(feet, fn.tolist()) if p == foot))
                    out.append(self._switch_event(foot, "assumed", before, assumed, t, step, mag))
            self._assumed_feet = assumed
        return out

    @staticmethod
    def _foot_fn(sensing: ContactSensing | None, foot: str) -> float:
        if sensing is None:
            return 0.0
        return float(sum(f for f, p in zip(sensing.normal_force.tolist(), sensing.point_foot)
                         if p == foot))

    def _switch_event(self, foot, source, before, after, t, step, magnitude) -> Event:
        change = "make" if foot in after else "break"
        ev = Event("mode_switch", t, step, foot, float(magnitude),
                   {"source": source, "change": change, "before": sorted(before),
                    "after": sorted(after)},
                   duration=0.0, n_steps=1, end_t=t, end_step=step, ongoing=False)
        self.events.append(ev)
        return ev

    def _track(self, hits: list, t: float, step: int) -> list[Event]:
        """Open, extend and close the violation episodes (the flood rule)."""
        out: list[Event] = []
        tol = self.tolerances
        dt = self.dt or 0.0
        seen = set()
        for kind, where, source, mag, detail in hits:
            key = (kind, where, source)
            if key in seen:
                continue
            seen.add(key)
            self._steps_in_violation[kind] += 1
            ep = self._episodes.get(key)
            if ep is None:
                ep = self._episodes[key] = _Episode(t, step, mag, detail)
            else:
                ep.last_t, ep.last_step = t, step
                ep.n_true += 1
                ep.worst = max(ep.worst, mag)
            duration = ep.last_t - ep.start_t + dt
            if ep.event is None:
                if kind == "contact_mismatch" and not duration > tol.mismatch_duration + 1e-12:
                    continue
                detail = dict(ep.detail)
                if kind in ("friction_cone", "force_sign", "complementarity"):
                    detail["source"] = source
                elif kind in ("planar_complementarity", "contact_mismatch", "non_sole_contact"):
                    detail["source"] = "simulated"
                if kind == "contact_mismatch":
                    detail["confirmed_t"], detail["confirmed_step"] = t, step
                ep.event = Event(kind, ep.start_t, ep.start_step, where, ep.worst, detail)
                self.events.append(ep.event)
                out.append(ep.event)
            ev = ep.event
            ev.duration = duration
            ev.n_steps = ep.n_true
            ev.end_t, ev.end_step = ep.last_t, ep.last_step
            ev.magnitude = duration if kind in _DURATION_KINDS else ep.worst
        # end the episodes whose condition has not held for long enough
        if len(seen) < len(self._episodes):
            for key in [k for k in self._episodes if k not in seen]:
                ep = self._episodes[key]
                if ep.event is None or t - ep.last_t > tol.rearm_time + 1e-12:
                    if ep.event is not None:
                        ep.event.ongoing = False
                    del self._episodes[key]
        return out

    def finish(self) -> None:
        """End every ongoing episode (call at the end of a rollout)."""
        for ep in self._episodes.values():
            if ep.event is not None:
                ep.event.ongoing = False
        self._episodes.clear()

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

    def summary(self) -> dict[str, Any]:
        """For ``summary.json``: per kind the event ``counts``, the ``worst`` magnitude and the
        ``first_t`` (``None`` without events), ``steps_in_violation`` (summed over steps: at each
        step, the number of distinct ``(where, source)`` pairs where the condition held, a point
        with both its commanded and its simulated force outside the cone counting twice; before
        the mismatch delay; so it can exceed the episode's steps), the total ``n_violations`` and
        the ``tolerances``."""
        worst: dict[str, float | None] = dict.fromkeys(EVENT_KINDS)
        first: dict[str, float | None] = dict.fromkeys(EVENT_KINDS)
        for ev in self.events:
            if worst[ev.kind] is None or ev.magnitude > worst[ev.kind]:
                worst[ev.kind] = float(ev.magnitude)
            if first[ev.kind] is None or ev.t < first[ev.kind]:
                first[ev.kind] = float(ev.t)
        return {"counts": self.counts(), "worst": worst, "first_t": first,
                "steps_in_violation": dict(self._steps_in_violation),
                "n_violations": self.n_violations, "tolerances": self.tolerances.to_dict()}


_DURATION_KINDS = frozenset({"contact_mismatch", "fallback", "solver_failure"})
_NO_FORCES = np.zeros(0)
_NO_INDEX = np.zeros(0, dtype=int)
_XY = np.array([1.0, 1.0, 0.0])


class _OneStep:  # TEMPORARY: one row of a StepChunk as the per-step detector reads it
    def __init__(self, c, i):
        self.names, self.point_foot = c.point_names, c.point_foot
        self.floor_normal_world = c.floor_normal
        self.gap, self.normal_force = c.gap[i], c.normal_force[i]
        self.tangential_force, self.slip_velocity = c.tangential_force[i], c.slip_velocity[i]
        self.friction, self.mode = np.ascontiguousarray(c.friction[i]), c.mode[i]
        self.feet_in_contact = frozenset(f for f, on in zip(c.foot_names, c.sensed_feet[i]) if on)
        self.non_sole_contacts = {n: f for r, n, f in c.non_sole if r == i}
