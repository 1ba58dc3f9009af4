"""Recording an episode's control steps into preallocated buffers: the only per-step work of the
loop beyond the controller and the physics. Everything derived (contacts, events, the momentum
balance, metrics, log rows) is computed from a chunk of recorded steps at once.

A recorded step holds the time ``t`` of the state the command was computed for, the command and
the schedule, and what the physics did: the state its last physics step started from (``qpos0``,
``qvel0``; the command's state when the controller runs every physics step) with MuJoCo's
acceleration and sensor values of that state (computed inside ``mj_step`` before the integration),
the torque applied, the push, and the state after the step (``qpos``, ``qvel``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from wbsim.contacts import ContactSensing
from wbsim.sim import Simulation
from wbsim.types import Command, ContactSchedule, RobotState, StepChunk

__all__ = ["RecordedSteps", "StepRecorder"]


@dataclass(eq=False)
class RecordedSteps:
    """``k`` recorded control steps (``n`` joints, ``p`` contact points, ``m`` feet).

    Attributes:
        step: ``(k,)`` step index in the episode.
        t: ``(k,)`` time of the state the command was computed for, s.
        qpos0, qvel0: ``(k, nq)``, ``(k, nv)`` MuJoCo's state at the start of the step's last
            physics step.
        qacc: ``(k, nv)`` MuJoCo's acceleration at that state (``MjData.qacc``).
        sensordata: ``(k, nsensordata)`` MuJoCo's sensor values at that state.
        qpos, qvel: ``(k, nq)``, ``(k, nv)`` MuJoCo's state after the step.
        t_after: ``(k,)`` the time of that state (``MjData.time`` after the step), s.
        tau: ``(k, n)`` torque commanded at the step's last physics step, N·m.
        tau_applied: ``(k, n)`` the torque MuJoCo applied there (``actuator_force``: clipped to
            the actuators' range), N·m.
        friction: ``(k, p)`` each point's friction coefficient as MuJoCo used it.
        cone: ``(k,)`` MuJoCo's friction cone type (``mjtCone``).
        push: ``(k, 3)`` the push acting in the step, world, N.
        push_point: ``(k, 3)`` where it acts (the pushed body's centre of mass at ``qpos0``), m.
        controller_time: ``(k,)`` the controller's wall time, s.
        point_forces: ``(k, p, 3)`` commanded point forces (NaN: not commanded as points).
        foot_wrenches: ``(k, m, 6)`` commanded foot wrenches (NaN: not commanded as wrenches;
            always for a hand), ``m`` the robot's contacts (``robot.contact_names``).
        assumed: ``(k, m)`` contacts the command assumed (the schedule's when it states neither a
            contact set nor a force).
        status: ``(k,)`` int8 ``CommandStatus``.
        fallback, message: ``(k,)`` the command's fallback and message.
        planned: ``(k, m)`` contacts the schedule plans.
        phase_index: ``(k,)`` the schedule's phase.
        hold: ``(k,)`` the schedule's phase is named ``"hold"``.
        com_ref: ``(k, 3)`` the schedule's CoM target (NaN without one), m.
        non_sole: ``(row, geom name, normal force N)`` of the non-sole contacts.
    """

    step: np.ndarray
    t: np.ndarray
    qpos0: np.ndarray
    qvel0: np.ndarray
    qacc: np.ndarray
    sensordata: np.ndarray
    qpos: np.ndarray
    qvel: np.ndarray
    t_after: np.ndarray
    tau: np.ndarray
    tau_applied: np.ndarray
    friction: np.ndarray
    cone: np.ndarray
    push: np.ndarray
    push_point: np.ndarray
    controller_time: np.ndarray
    point_forces: np.ndarray
    foot_wrenches: np.ndarray
    assumed: np.ndarray
    status: np.ndarray
    fallback: list[str]
    message: list[str]
    planned: np.ndarray
    phase_index: np.ndarray
    hold: np.ndarray
    com_ref: np.ndarray
    non_sole: list[tuple[int, str, float]]

    def __len__(self) -> int:
        return len(self.step)

    def step_chunk(self, sensing: ContactSensing, robot) -> StepChunk:
        """The :class:`~wbsim.types.StepChunk` of these steps for the event detector, with
        ``sensing`` their decoded sensor values (:meth:`ContactSensor.decode` of
        ``sensordata``, ``friction`` and ``cone``) and ``robot`` the :class:`wbsim.Robot`."""
        return StepChunk(
            step=self.step,
            t=self.t,
            point_names=sensing.names,
            point_foot=sensing.point_foot,
            foot_names=sensing.layout.foot_names,
            floor_normal=sensing.floor_normal_world,
            gap=sensing.gap,
            force=sensing.force_world,
            normal_force=sensing.normal_force,
            tangential_force=sensing.tangential_force,
            slip_velocity=sensing.slip_velocity,
            friction=sensing.friction,
            cone=self.cone,
            tangents=sensing.tangents,
            friction_components=sensing.friction_components,
            mode=sensing.mode,
            sensed_feet=sensing.feet_loaded,
            normals=sensing.layout.surface_normal,
            non_sole=self.non_sole,
            point_forces=self.point_forces,
            foot_wrenches=self.foot_wrenches,
            assumed=self.assumed,
            status=self.status,
            fallback=tuple(self.fallback),
            message=tuple(self.message),
            joint_names=robot.joint_names,
            torque=self.tau,
            torque_applied=self.tau_applied,
            torque_limit=robot.effort_limits,
        )


class StepRecorder:
    """Preallocated buffers of ``capacity`` control steps.

    Args:
        sim: the :class:`~wbsim.sim.Simulation` recorded.
        capacity: steps per chunk.

    Use: :meth:`record` after each control step; when :attr:`full` (or at a frame, or at the end),
    :meth:`take` returns the recorded steps and empties the buffers.
    """

    def __init__(self, sim: Simulation, capacity: int = 256):
        robot = sim.robot
        self.sim = sim
        self.capacity = int(capacity)
        self.foot_names = robot.contact_names  # the feet, then the hands
        self._n_feet = len(robot.foot_names)
        m = sim.model
        n, p, f, k = robot.n_joints, len(robot.contact_point_names), len(self.foot_names), capacity
        # the float values a step takes from the simulation, side by side in one row of one
        # buffer, so that record() writes them with one concatenate (the named arrays are views)
        widths = {
            "qpos0": m.nq,
            "qvel0": m.nv,
            "qacc": m.nv,
            "sensordata": m.nsensordata,
            "qpos": m.nq,
            "qvel": m.nv,
            "tau": n,
            "tau_applied": n,
            "friction": p,
            "push": 3,
            "push_point": 3,
            "t_after": 1,
        }
        self._row = np.zeros((k, sum(widths.values())))
        self._arrays: dict[str, np.ndarray] = {}
        col = 0
        for name, w in widths.items():
            self._arrays[name] = self._row[:, col : col + w]
            col += w
        self._arrays["t_after"] = self._arrays["t_after"][:, 0]
        d = sim.data
        # live views of the MjData arrays (MjData's attributes make a new view at each access)
        self._qacc, self._sensordata, self._qpos, self._qvel = d.qacc, d.sensordata, d.qpos, d.qvel
        self._actuator_force = d.actuator_force
        self._push_point = d.xipos[sim.push_body]
        self._arrays.update(
            {
                "step": np.zeros(k, dtype=np.int64),
                "t": np.zeros(k),
                "cone": np.zeros(k, dtype=np.int8),
                "controller_time": np.zeros(k),
                "point_forces": np.zeros((k, p, 3)),
                "foot_wrenches": np.zeros((k, f, 6)),
                "assumed": np.zeros((k, f), dtype=bool),
                "status": np.zeros(k, dtype=np.int8),
                "planned": np.zeros((k, f), dtype=bool),
                "phase_index": np.zeros(k, dtype=np.int64),
                "hold": np.zeros(k, dtype=bool),
                "com_ref": np.zeros((k, 3)),
            }
        )
        self._fallback: list[str] = []
        self._message: list[str] = []
        self._non_sole: list[tuple[int, str, float]] = []
        self._masks: dict[frozenset[str], np.ndarray] = {}
        self.n = 0

    @property
    def full(self) -> bool:
        return self.n == self.capacity

    def record(
        self,
        step: int,
        state: RobotState,
        command: Command,
        schedule: ContactSchedule,
        controller_time: float,
    ) -> None:
        """Record one control step, right after the physics steps that applied ``command``
        (computed for ``state`` under ``schedule``)."""
        i, a, sim = self.n, self._arrays, self.sim
        # the sensing of the state after the step: read once, the next step's state reuses it
        sensing = sim.sensing()
        np.concatenate(
            (
                sim.qpos_before,
                sim.qvel_before,
                self._qacc,
                self._sensordata,
                self._qpos,
                self._qvel,
                sim.tau,
                self._actuator_force,
                sensing.friction,
                sim.push_force,
                self._push_point,
                (sim.data.time,),
            ),
            out=self._row[i],
        )
        a["step"][i], a["t"][i], a["cone"][i] = step, state.t, sensing.cone  # the model's now
        a["controller_time"][i] = controller_time
        a["point_forces"][i] = math.nan if command.point_forces is None else command.point_forces
        a["foot_wrenches"][i] = math.nan  # (a hand's row stays NaN)
        if command.foot_wrenches is not None:
            a["foot_wrenches"][i, : self._n_feet] = command.foot_wrenches
        states_a_set = (
            command.contact_set
            or command.point_forces is not None
            or command.foot_wrenches is not None
        )
        a["assumed"][i] = self._mask(command.contact_set if states_a_set else schedule.contact_set)
        a["status"][i] = command.status
        a["planned"][i] = self._mask(schedule.contact_set)
        a["phase_index"][i], a["hold"][i] = schedule.phase_index, schedule.phase == "hold"
        a["com_ref"][i] = schedule.targets.get("com", math.nan)
        self._fallback.append(command.fallback)
        self._message.append(command.message)
        for name, force in sensing.non_sole_contacts.items():
            self._non_sole.append((i, name, force))
        self.n += 1

    def _mask(self, contacts: frozenset[str]) -> np.ndarray:
        """``(m,)`` bool: which of :attr:`foot_names` are in ``contacts`` (memoised by the set:
        an episode has a handful)."""
        if type(contacts) is not frozenset:  # (a controller's own set type: not memoised)
            return np.array([foot in contacts for foot in self.foot_names], dtype=bool)
        mask = self._masks.get(contacts)
        if mask is None:
            mask = np.array([foot in contacts for foot in self.foot_names], dtype=bool)
            mask.setflags(write=False)
            if len(self._masks) < 64:
                self._masks[contacts] = mask
        return mask

    def take(self) -> RecordedSteps:
        """The steps recorded since the last call (copies), and empty buffers."""
        k = self.n
        out = RecordedSteps(
            **{name: arr[:k].copy() for name, arr in self._arrays.items()},
            fallback=self._fallback,
            message=self._message,
            non_sole=self._non_sole,
        )
        self._fallback, self._message, self._non_sole = [], [], []
        self.n = 0
        return out
