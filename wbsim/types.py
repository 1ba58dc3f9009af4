"""The shared vocabulary: what a controller sees (:class:`RobotState`, :class:`ContactSchedule`) and
what it returns (:class:`Command`, :class:`CommandStatus`, :class:`JointTargets`).

Envs, the rollout, the diagnostics and every controller speak these types and nothing else of each
other. Arrays follow the robot's orders: joints in ``robot.joint_names`` order, contact points in
``robot.contact_point_names`` order, feet in ``robot.foot_names`` order; forces are world-frame
forces ON the robot (N), wrenches ``[force (N); moment (N·m)]`` at the foot frame origin,
world-aligned.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

__all__ = [
    "COMMAND_INFO_KEYS",
    "STANDING",
    "Command",
    "CommandStatus",
    "ContactSchedule",
    "JointTargets",
    "RobotState",
    "StepChunk",
]


def _equal(a: Any, b: Any) -> bool:
    """Equality that compares arrays element-wise (NaN equal to NaN) and mappings key by key."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (a is None) == (b is None) and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return bool(a == b)


class _ArrayEq:
    """``==`` field by field with arrays compared element-wise, so that Gymnasium's determinism
    checks can compare infos holding these objects. Fields named in ``_eq_exclude`` are skipped."""

    __slots__ = ()
    _eq_exclude: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(
            _equal(getattr(self, f.name), getattr(other, f.name))
            for f in fields(self)  # type: ignore[arg-type]
            if f.name not in self._eq_exclude
        )

    __hash__ = None  # type: ignore[assignment]  # mutable arrays inside


@dataclass(slots=True, eq=False)
class RobotState(_ArrayEq):
    """The robot's state in Pinocchio's convention (treat as read-only).

    Attributes:
        t: simulated time, s.
        q: ``(nq,)`` configuration: base position (world, m), base quaternion ``(x, y, z, w)`` as
            Pinocchio stores it, joint angles (rad) in Pinocchio's order.
        v: ``(nv,)`` velocity: base linear and angular velocity in the base (LOCAL) frame, joint
            velocities (rad/s).
        sensed_contacts: feet (and hands) that the simulation senses in contact (a contact with a
            loaded point); ``None`` if not sensed.
        friction: foot (or hand) -> the sliding friction coefficient ``mu`` the simulator gives
            its contacts with its surface now (the least over its points, priorities applied);
            ``None`` if not given (controllers then read the robot's model).
        cone: the simulator's friction cone, ``"pyramidal"`` (MuJoCo's default) or
            ``"elliptic"``; ``None`` if not given.
    """

    t: float
    q: np.ndarray
    v: np.ndarray
    sensed_contacts: frozenset[str] | None = None
    friction: Mapping[str, float] | None = None
    cone: str | None = None


@dataclass(slots=True, eq=False)
class ContactSchedule(_ArrayEq):
    """The planned contact set at one instant, as the env's plan gives it (treat as read-only).

    Attributes:
        contact_set: feet planned in contact now (``"left_foot"``, ``"right_foot"``), and hands
            (``"right_hand"``, ...: a robot's :attr:`wbsim.Robot.hands`).
        next_contact_set: feet planned in contact in the next phase (same as now in the last).
        phase: name of the current phase (``"stand"``, ``"shift"``, ``"hold"``, ...).
        phase_index: index of the current phase.
        phase_time: time since the phase began, s.
        phase_duration: duration of the phase, s (``inf`` for an open-ended one).
        targets: task targets for this instant, e.g. ``"com"`` -> ``(3,)`` world CoM, m;
            ``"swing_foot"`` -> ``(3,)`` world position of the foot frame, m. Controllers ignore
            what they do not use.
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


class CommandStatus(enum.IntEnum):
    """Outcome of a controller's step (an int, so a step table can store it).

    * ``SOLVED``: the controller's problem was solved as posed (possibly for a clamped target:
      ``Command.fallback`` then names the clamp).
    * ``INFEASIBLE``: the problem had no solution; ``tau`` is a fallback, named in
      ``Command.fallback``.
    * ``SOLVER_FAILED``: the solver failed or raised, or an input was invalid; ``tau`` is a
      fallback, named in ``Command.fallback``.
    """

    SOLVED = 0
    INFEASIBLE = 1
    SOLVER_FAILED = 2


#: Keys every controller puts in ``Command.info``: ``compute_time`` (s, the whole call),
#: ``solve_time`` (s, the solver alone; 0 for a controller without one) and ``solver`` (its name,
#: ``""`` without one). Controllers may add their own keys.
COMMAND_INFO_KEYS = ("compute_time", "solve_time", "solver")


@dataclass(slots=True, eq=False)
class JointTargets(_ArrayEq):
    """A joint PD that runs at the physics rate between two controller steps (as a robot's motor
    drivers do): the torque applied at each physics step is ``Command.tau + kp (q - q_meas) +
    kd (v - v_meas)``. Arrays ``(n_joints,)`` in ``robot.joint_names`` order.

    Attributes:
        q: joint position targets, rad.
        v: joint velocity targets, rad/s.
        kp: stiffness, N·m/rad.
        kd: damping, N·m·s/rad.
    """

    q: np.ndarray
    v: np.ndarray
    kp: np.ndarray
    kd: np.ndarray

    def torque(self, q_meas: np.ndarray, v_meas: np.ndarray) -> np.ndarray:
        """``kp (q - q_meas) + kd (v - v_meas)`` ``(n_joints,)``, N·m, at the measured joint
        positions ``q_meas`` (rad) and velocities ``v_meas`` (rad/s), ``(n_joints,)`` each."""
        return self.kp * (self.q - q_meas) + self.kd * (self.v - v_meas)


@dataclass(slots=True, eq=False)
class Command(_ArrayEq):
    """What a controller returns each step.

    Attributes:
        tau: ``(n_joints,)`` joint torques, N·m, ``robot.joint_names`` order (the feed-forward
            torque when ``joint_targets`` is given). NaN where it could not be computed.
        contact_set: feet (and hands) the controller assumed in contact.
        point_forces: ``(n_points, 3)`` commanded force on the robot at each contact point, world
            frame, N, ``robot.contact_point_names`` order; 0 at points the controller does not load,
            NaN where a failed solve left them unknown. ``None`` when the controller does not
            command point forces.
        foot_wrenches: ``(n_feet, 6)`` commanded wrench on the robot at each foot frame origin,
            world-aligned, ``[force (N); moment (N·m)]``, ``robot.foot_names`` order (0 for a foot
            not in contact; a hand's contact is commanded as point forces only). ``None`` when the
            controller does not command wrenches.
        joint_targets: a joint PD to run at the physics rate on top of ``tau``, or ``None``.
        status: :class:`CommandStatus`.
        fallback: name of the fallback that produced ``tau`` (``""`` if none).
        message: why the status is not ``SOLVED`` (``""`` if it is).
        info: :data:`COMMAND_INFO_KEYS` and whatever else the controller reports.
    """

    tau: np.ndarray
    contact_set: frozenset[str] = frozenset()
    point_forces: np.ndarray | None = None
    foot_wrenches: np.ndarray | None = None
    joint_targets: JointTargets | None = None
    status: CommandStatus = CommandStatus.SOLVED
    fallback: str = ""
    message: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    _eq_exclude = ("info",)  # timings differ run to run; the command itself must not

    @property
    def feasible(self) -> bool:
        """``status is CommandStatus.SOLVED``."""
        return self.status is CommandStatus.SOLVED

    def torque_at(self, q_joints: np.ndarray, v_joints: np.ndarray) -> np.ndarray:
        """The torque ``(n_joints,)`` N·m to apply at the measured joint positions ``q_joints``
        (rad) and velocities ``v_joints`` (rad/s), ``(n_joints,)`` in ``robot.joint_names``
        order: ``tau``, plus the :class:`JointTargets` PD when there is one."""
        if self.joint_targets is None:
            return self.tau
        return self.tau + self.joint_targets.torque(q_joints, v_joints)


@dataclass(slots=True, eq=False)
class StepChunk:
    """``k`` consecutive control steps of one episode as arrays: what the loop recorded and the
    contact sensors read (``n`` contact points, ``m`` feet: more generally ``m`` contacts, the
    feet then the hands of ``robot.contact_names``; every "foot" below is such a contact). The input of the event detector and of
    the episode metrics (:mod:`wbsim.diagnostics`), filled by :mod:`wbsim.recorder`.

    Sensed quantities describe the state the step's command was computed for (MuJoCo's contact
    solution of that step); forces are on the robot, world frame.

    Attributes:
        step: ``(k,)`` int, step index in the episode (consecutive).
        t: ``(k,)`` simulated time of the state the command was computed for, s.
        point_names: ``(n,)`` contact point names (``robot.contact_point_names``).
        point_foot: ``(n,)`` foot of each point.
        foot_names: ``(m,)`` feet (``robot.foot_names``).
        floor_normal: ``(3,)`` unit normal of the floor, up.
        gap: ``(k, n)`` distance ``h`` of each point to its surface (the floor, a wall), m
            (negative: penetration).
        force: ``(k, n, 3)`` simulated contact force at each point, N.
        normal_force: ``(k, n)`` ``force . normal`` with the point's surface normal, N.
        tangential_force: ``(k, n)`` norm of the force across the normal, N.
        slip_velocity: ``(k, n)`` tangential speed of the point relative to the floor, m/s.
        friction: ``(k, n)`` sliding friction coefficient ``mu`` of each point's contact, as
            MuJoCo used it at the step.
        cone: ``(k,)`` MuJoCo's friction cone at the step (``mjtCone``: 0 pyramidal, ``|f_t1| +
            |f_t2| <= mu f_n``; 1 elliptic, ``|f_t| <= mu f_n``).
        tangents: ``(k, n, 2, 3)`` the tangent axes (world) of each point's contact frame, along
            which the pyramid's ``f_t1``, ``f_t2`` are taken.
        friction_components: ``(k, n, 2)`` the simulated friction force along ``tangents``, N.
        mode: ``(k, n)`` int8 contact mode (0 open, 1 sticking, 2 sliding).
        sensed_feet: ``(k, m)`` bool, the foot has a loaded point.
        non_sole: ``(row, geom name, normal force N)`` of every robot geom other than the sole
            points touching the environment, ``row`` in ``0..k-1``.
        point_forces: ``(k, n, 3)`` commanded point forces, N; NaN where not commanded as points.
        foot_wrenches: ``(k, m, 6)`` commanded foot wrenches; NaN where not commanded as wrenches.
        assumed: ``(k, m)`` bool, the feet the controller assumed in contact (its
            ``Command.contact_set``, or the schedule's when the command states no contact set and
            no force).
        status: ``(k,)`` int8 :class:`CommandStatus`.
        fallback: ``(k,)`` ``Command.fallback`` of each step (``""``: none).
        message: ``(k,)`` ``Command.message`` of each step.
        joint_names: ``(j,)`` the actuated joints.
        torque: ``(k, j)`` the torque commanded to the actuators at the step's last physics
            step, N·m.
        torque_applied: ``(k, j)`` the torque MuJoCo applied (clipped to the actuators' range).
        torque_limit: ``(j,)`` the actuators' torque limits, N·m (``inf``: none).
        normals: ``(n, 3)`` the unit normal (world, towards the robot) of the surface each point
            touches (a sole point's is the floor's, a hand's a wall's), or ``None``:
            ``floor_normal`` for every point.
    """

    step: np.ndarray
    t: np.ndarray
    point_names: tuple[str, ...]
    point_foot: tuple[str, ...]
    foot_names: tuple[str, ...]
    floor_normal: np.ndarray
    gap: np.ndarray
    force: np.ndarray
    normal_force: np.ndarray
    tangential_force: np.ndarray
    slip_velocity: np.ndarray
    friction: np.ndarray
    cone: np.ndarray
    tangents: np.ndarray
    friction_components: np.ndarray
    mode: np.ndarray
    sensed_feet: np.ndarray
    non_sole: list[tuple[int, str, float]]
    point_forces: np.ndarray
    foot_wrenches: np.ndarray
    assumed: np.ndarray
    status: np.ndarray
    fallback: tuple[str, ...]
    message: tuple[str, ...]
    joint_names: tuple[str, ...]
    torque: np.ndarray
    torque_applied: np.ndarray
    torque_limit: np.ndarray
    normals: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.step)
