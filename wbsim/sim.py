"""The simulation core: one robot on the floor in MuJoCo, stepped with joint torques, pushed, and
read (its state in Pinocchio's convention, its contact sensors).

A command's joint PD (:class:`wbsim.types.JointTargets`) runs in MuJoCo's actuators, as a robot's
motor drivers run one: each actuator's force is ``ctrl + b1 q + b2 qdot`` with ``b1 = -kp``,
``b2 = -kd`` (an affine bias) and ``ctrl`` the feed-forward torque plus ``kp q* + kd v*``; the
``implicitfast`` integrator takes the damping implicitly, so the PD is stable whatever its gains,
in contact or in the air (an explicit PD with the inertia-scaled gains diverged in the air: its
coupled joint modes reach 17x the design stiffness).

The Gymnasium env (:mod:`wbsim.envs.humanoid`) and the rollout (:mod:`wbsim.rollout`) drive the same
:class:`Simulation`, so both run the same physics, bit for bit. It steps MuJoCo and reads it; it
decides nothing about tasks, rewards or violations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import mujoco
import numpy as np

from wbsim.contacts import ContactSensing, ContactSensor, SensingThresholds
from wbsim.errors import WbsimError, is_real, joint_list, nonfinite_joints
from wbsim.types import Command, JointTargets, RobotState

__all__ = ["RESETTING_WARNINGS", "Pushes", "Simulation", "SimulatorWarning"]

#: MuJoCo's warnings after which ``mj_step`` reset the state (a NaN, an infinity or a huge value in
#: the position, velocity or acceleration): the episode cannot go on.
RESETTING_WARNINGS = ("mjWARN_BADQPOS", "mjWARN_BADQVEL", "mjWARN_BADQACC")
_WARNING_NAMES = {
    int(getattr(mujoco.mjtWarning, k)): k for k in dir(mujoco.mjtWarning) if k.startswith("mjWARN_")
}


@dataclass(frozen=True)
class SimulatorWarning:
    """A warning MuJoCo raised during a physics step (``MjData.warning``).

    Attributes:
        name: MuJoCo's name, e.g. ``"mjWARN_BADQACC"``.
        time: simulated time at the start of the physics step, s.
        info: MuJoCo's detail (for the ``BAD*`` warnings, the index of the offending dof).
        reset: MuJoCo reset the state (:data:`RESETTING_WARNINGS`): the episode cannot go on.
    """

    name: str
    time: float
    info: int
    reset: bool

    def __str__(self) -> str:
        what = (
            "MuJoCo reset the simulation (NaN, inf or a huge value in the state: the "
            "simulation was unstable)"
            if self.reset
            else "the simulation went on"
        )
        return f"MuJoCo warning {self.name} (info {self.info}) at t = {self.time:.4f} s: {what}"


@dataclass(frozen=True)
class Pushes:
    """Pushes on the robot's torso (at its centre of mass).

    Periodic: every ``interval`` s (the first at ``interval``), a horizontal force of ``magnitude``
    N in a direction drawn uniformly from the episode's random generator acts for ``duration`` s;
    ``magnitude = 0``: none. Scripted: each ``(start s, force (3,) N world, duration s)`` of
    ``script`` acts from its start for its duration (the push-recovery protocol,
    :mod:`wbsim.pushtest`); both kinds may be given, their forces add.

    Raises:
        WbsimError: a value that is not a finite number >= 0 (``interval`` > 0); a script entry
            that is not ``(start >= 0, three finite numbers, duration > 0)``.
    """

    magnitude: float = 0.0
    interval: float = 2.0
    duration: float = 0.1
    script: tuple[tuple[float, tuple[float, float, float], float], ...] = ()

    def __post_init__(self):
        for name, low in (("magnitude", 0.0), ("interval", 1e-12), ("duration", 0.0)):
            value = getattr(self, name)
            if not (is_real(value) and low <= value < np.inf):
                raise WbsimError(f"push {name} must be a finite number >= {low:g}, got {value!r}")
        shape = "a list of [start s >= 0, [fx, fy, fz] N, duration s > 0]"
        if isinstance(self.script, (str, bytes, Mapping)) or not isinstance(self.script, Iterable):
            raise WbsimError(f"push_script must be {shape}, got {self.script!r}")
        entries = []
        for entry in self.script:
            try:
                start, force, duration = entry
                force = tuple(float(x) for x in force)
                ok = (
                    is_real(start)
                    and is_real(duration)
                    and 0 <= start < np.inf
                    and 0 < duration < np.inf
                    and len(force) == 3
                    and all(np.isfinite(force))
                )
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise WbsimError(
                    f"push_script must be {shape}; its entry {entry!r} is not one "
                    f"(push_script = {self.script!r})"
                )
            entries.append((float(start), force, float(duration)))
        object.__setattr__(self, "script", tuple(sorted(entries)))


#: the default contact thresholds of a :class:`Simulation` (frozen: one shared instance)
_DEFAULT_THRESHOLDS = SensingThresholds()


class Simulation:
    """One robot on the floor in MuJoCo.

    Args:
        robot: a :class:`wbsim.Robot` with feet.
        pushes: the :class:`Pushes` schedule (default: none).
        thresholds: the contact-mode thresholds of the sensing.
        noslip_iterations: iterations of MuJoCo's no-slip solver, set on the robot's model
            (``MjOption.noslip_iterations``; 0: off, MuJoCo's default). MuJoCo's friction is soft:
            a sticking contact creeps in proportion to its tangential force (the G1 standing under
            a steady 8 N sideways push: its loaded sole points 0.47 mm/s, median). The no-slip
            pass after the main solver stops most of that creep (0.008 mm/s with 5 iterations;
            docs/locomotion.md, "Slips while walking").

    Attributes:
        robot, model, data: the robot, its ``MjModel`` and this simulation's ``MjData``.
        sensor: the :class:`~wbsim.contacts.ContactSensor` of its sole points.
        tau: ``(n_joints,)`` torque applied at the last physics step, N·m (``robot.joint_names``
            order), before MuJoCo clips it to the actuators' control range.
        push_force: ``(3,)`` the push acting now (world, N; zero between pushes).
        pushes_done: ``(start time s, force (3,) N world, duration s)`` of every push of the
            episode.
    """

    def __init__(
        self,
        robot,
        pushes: Pushes | None = None,
        thresholds: SensingThresholds = _DEFAULT_THRESHOLDS,
        noslip_iterations: int = 0,
    ):
        self.robot = robot
        self.model = robot.mj_model
        self.model.opt.noslip_iterations = noslip_iterations
        self.data = mujoco.MjData(self.model)
        self.sensor = ContactSensor.for_robot(robot, thresholds)
        self.pushes = pushes or Pushes()
        conv = robot.converter
        self._qadr, self._vadr = conv.mj_qadr, conv.mj_vadr
        torso = robot.config.torso
        #: the body pushes act on (at its centre of mass, ``MjData.xipos``)
        self.push_body = (
            mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, torso) if torso else 1
        )
        if self.push_body < 0:  # a link MuJoCo fused into its parent (a fixed joint)
            raise WbsimError(
                f"{robot.name}: the torso link {torso!r} is not a body of MuJoCo's model (fused "
                "into its parent by a fixed joint?): pushes need one; name a link that moves"
            )
        self.tau = np.zeros(robot.n_joints)
        self.push_force = np.zeros(3)
        self.pushes_done: list[tuple[float, np.ndarray, float]] = []
        self._periodic: list[tuple[float, np.ndarray]] = []  # the periodic pushes done
        self._scripted_done: set[int] = set()  # the scripted pushes started
        self._rng = np.random.default_rng(0)
        self._sensing: ContactSensing | None = None
        #: MuJoCo's ``qpos``, ``qvel`` before the last physics step: the state its sensor values,
        #: contacts and ``qacc`` belong to
        self.qpos_before = self.data.qpos.copy()
        self.qvel_before = self.data.qvel.copy()
        self._targets: JointTargets | None = None  # the PD whose gains are in the actuators
        self.model.actuator_biasprm[:, 1:3] = 0.0
        #: every :class:`SimulatorWarning` of the episode, in order
        self.warnings: list[SimulatorWarning] = []
        #: a live view of MuJoCo's warning counters (``MjData.warning.number``: the attribute
        #: makes a new view at each access)
        self._warning_number = self.data.warning.number
        self._warning_counts = self._warning_number.copy()
        self._warning_bytes = self._warning_counts.tobytes()

    # -- episode -----------------------------------------------------------------------------------
    def reset(self, q: np.ndarray, rng: np.random.Generator) -> None:
        """Start an episode at the Pinocchio configuration ``q`` ``(nq,)`` (zero velocity), with
        ``rng`` drawing the push directions."""
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = self.robot.pin_to_mj(q)[0]
        mujoco.mj_forward(self.model, self.data)
        self.tau = np.zeros(self.robot.n_joints)
        self.push_force = np.zeros(3)
        self.pushes_done = []
        self._periodic = []
        self._scripted_done = set()
        self._rng = rng
        self._sensing = None
        self.warnings = []
        self._warning_counts = self.data.warning.number.copy()
        self._warning_bytes = self._warning_counts.tobytes()

    @property
    def failed(self) -> SimulatorWarning | None:
        """The first warning after which MuJoCo reset the state (the episode cannot go on), or
        ``None``."""
        return next((w for w in self.warnings if w.reset), None)

    @property
    def time(self) -> float:
        """Simulated time, s."""
        return float(self.data.time)

    @property
    def timestep(self) -> float:
        """The physics step, s."""
        return float(self.model.opt.timestep)

    # -- stepping ----------------------------------------------------------------------------------
    def step(self, tau: np.ndarray, n: int = 1) -> None:
        """``n`` physics steps with the joint torque ``tau`` ``(n_joints,)`` N·m held."""
        for _ in range(n):
            self._physics_step(tau, None)

    def step_command(self, command: Command, n: int = 1) -> None:
        """``n`` physics steps under ``command``: its feed-forward torque held and, if it has one,
        its joint PD (:class:`~wbsim.types.JointTargets`) run by the actuators at every physics
        step (module docstring)."""
        for _ in range(n):
            self._physics_step(command.tau, command.joint_targets)

    def step_with(self, source: Callable[[Simulation], np.ndarray | Command], n: int = 1) -> None:
        """``n`` physics steps, each under ``source(self)`` (called with the state before that
        step, after its push): a torque ``(n_joints,)`` N·m, or a :class:`~wbsim.types.Command`
        (applied as :meth:`step_command` does).

        Raises:
            WbsimError: a torque of the wrong shape, or with NaN or infinite entries.
        """
        for _ in range(n):
            self.apply_push()  # before the call: the source sees this step's push
            out = source(self)
            targets = out.joint_targets if isinstance(out, Command) else None
            tau = np.array(out.tau if isinstance(out, Command) else out, dtype=float)
            if tau.shape != self.tau.shape:
                raise WbsimError(
                    f"a torque of shape {tau.shape}; expected {self.tau.shape} "
                    "(N·m, robot.joint_names order)"
                )
            bad = nonfinite_joints(tau, self.robot.joint_names)
            if bad:
                raise WbsimError(f"a torque with NaN/inf at {joint_list(bad)}")
            self._physics_step(tau, targets)

    def _physics_step(self, tau: np.ndarray, targets: JointTargets | None) -> None:
        """One ``mj_step`` with the feed-forward torque ``tau`` and the actuators' PD on
        ``targets``: the actuator force is ``ctrl - kp q - kd qdot`` with ``ctrl = tau + kp q* +
        kd v*``, i.e. ``tau + kp (q* - q) + kd (v* - v)``, clipped to the effort limits."""
        self.apply_push()
        d = self.data
        if targets is not self._targets:  # new gains (a new command): into the actuators' bias
            bias = self.model.actuator_biasprm
            if targets is None:
                bias[:, 1:3] = 0.0
            else:
                bias[:, 1], bias[:, 2] = -targets.kp, -targets.kd
            self._targets = targets
        if targets is None:
            self.tau = tau
            d.ctrl[:] = tau
        else:
            q, v = d.qpos.take(self._qadr), d.qvel.take(self._vadr)
            self.tau = tau + targets.torque(q, v)  # the torque asked for (before the clip)
            d.ctrl[:] = tau + targets.kp * targets.q + targets.kd * targets.v
        self.qpos_before[:], self.qvel_before[:] = d.qpos, d.qvel
        t = d.time
        mujoco.mj_step(self.model, d)
        self._sensing = None
        counts = self._warning_number
        if counts.tobytes() != self._warning_bytes:  # MuJoCo raised a warning
            for i in np.flatnonzero(counts != self._warning_counts).tolist():
                name = _WARNING_NAMES.get(i, f"warning {i}")
                self.warnings.append(
                    SimulatorWarning(
                        name, float(t), int(d.warning.lastinfo[i]), name in RESETTING_WARNINGS
                    )
                )
            self._warning_counts = counts.copy()
            self._warning_bytes = counts.tobytes()

    def apply_push(self) -> None:
        """Start, hold or end the push on the torso (``xfrc_applied``) at the current time, per
        the schedule (every physics step does it first; calling it again does nothing new)."""
        p = self.pushes
        if p.magnitude <= 0.0 and not p.script:
            return
        t = self.data.time
        force = np.zeros(3)
        if p.magnitude > 0.0:
            periodic = self._periodic
            if t + 1e-9 >= p.interval * (len(periodic) + 1):  # the next push starts
                angle = self._rng.uniform(-np.pi, np.pi)
                push = (float(t), p.magnitude * np.array([np.cos(angle), np.sin(angle), 0.0]))
                periodic.append(push)
                self.pushes_done.append((*push, float(p.duration)))
            if periodic and t < periodic[-1][0] + p.duration:
                force += periodic[-1][1]
        for k, (start, f, duration) in enumerate(p.script):
            if t + 1e-9 >= start and k not in self._scripted_done:  # it starts
                self._scripted_done.add(k)
                self.pushes_done.append((float(t), np.array(f), float(duration)))
            if start - 1e-9 <= t < start + duration - 1e-9:
                force += f
        self.push_force = force
        self.data.xfrc_applied[self.push_body, 0:3] = self.push_force

    def push_memory(self) -> tuple:
        """What the push schedule remembers of this episode (the pushes done and started), for
        :meth:`restore_push_memory` (pickling an env mid-episode)."""
        return (list(self.pushes_done), list(self._periodic), set(self._scripted_done))

    def restore_push_memory(self, memory: tuple) -> None:
        """Restore :meth:`push_memory`'s value."""
        done, periodic, scripted = memory
        self.pushes_done, self._periodic, self._scripted_done = (
            list(done),
            list(periodic),
            set(scripted),
        )

    # -- reading -----------------------------------------------------------------------------------
    def sensing(self) -> ContactSensing:
        """The contact sensors' reading of the last physics step (after a step: the contacts of
        the state that step started from, MuJoCo's contact solution of that step)."""
        if self._sensing is None:
            self._sensing = self.sensor.read(self.data)
        return self._sensing

    def state(self) -> RobotState:
        """The current state in Pinocchio's convention, with the feet the last sensing found
        loaded and the friction and cone MuJoCo uses (:class:`~wbsim.types.RobotState`)."""
        q, v = self.robot.mj_to_pin(self.data.qpos, self.data.qvel)
        sensing = self.sensing()
        return RobotState(
            self.time, q, v, sensing.feet_in_contact, sensing.foot_friction, sensing.cone_name
        )

    @property
    def joint_positions(self) -> np.ndarray:
        """``(n_joints,)`` joint angles, rad, ``robot.joint_names`` order (a copy)."""
        return self.data.qpos[self._qadr]

    @property
    def joint_velocities(self) -> np.ndarray:
        """``(n_joints,)`` joint velocities, rad/s, ``robot.joint_names`` order (a copy)."""
        return self.data.qvel[self._vadr]

    # -- copies ------------------------------------------------------------------------------------
    def get_state(self) -> np.ndarray:
        """MuJoCo's integration state (``mjSTATE_INTEGRATION``) as a fresh array."""
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        out = np.empty(mujoco.mj_stateSize(self.model, spec))
        mujoco.mj_getState(self.model, self.data, out, spec)
        return out

    def set_state(self, state: np.ndarray) -> None:
        """Restore :meth:`get_state`'s array and recompute the derived quantities. The sensing of
        the last physics step is not restored: a step or :meth:`restore_sensing` sets it."""
        mujoco.mj_setState(self.model, self.data, state, mujoco.mjtState.mjSTATE_INTEGRATION)
        mujoco.mj_forward(self.model, self.data)
        self._sensing = None

    def restore_sensing(self, sensing: ContactSensing | None) -> None:
        """Set the sensing of the last physics step (e.g. after :meth:`set_state`)."""
        self._sensing = sensing
