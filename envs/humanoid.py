"""The Gymnasium environment of a humanoid on the wbsim floor, with a contact schedule.

One class, :class:`HumanoidEnv`, serves every registered id (``wbsim/G1Stand-v0``, ...); an id fixes the
robot, the contact plan and the options. The controller, if any, runs outside the env and hands it
torques (or, in ``residual`` mode, inside it, once per MuJoCo step, through
:attr:`HumanoidEnv.torque_hook`); the env gives the controller what it needs in ``info``.

Observation (``float32``, one flat ``Box``; ``n`` = number of actuated joints):

====================  ======  ===================================================================
slice                 size    meaning
====================  ======  ===================================================================
base height           1       base origin z, m
base orientation      4       quaternion ``(w, x, y, z)``, base to world
base twist            6       linear (m/s) then angular (rad/s) velocity, base frame
joint positions       n       rad, ``robot.joint_names`` order
joint velocities      n       rad/s
CoM - support centre  3       world-aligned, m (x, y: CoM minus the mean of the planned feet's
                              sole points as sensed, i.e. at the state the action was applied
                              at, like ``info["contacts"]``; z = CoM height, current)
sole contact flags    2       1.0 if the left / right sole is sensed touching the floor (same
                              state as ``info["contacts"]``)
planned contacts      2       1.0 if the left / right foot is planned in contact now
phase progress        1       0..1 within the current schedule phase (0 for open-ended phases)
====================  ======  ===================================================================

``HumanoidEnv.observation_structure`` names the parts in this order with their sizes
(``base_height``, ``base_quaternion_wxyz``, ``base_twist``, ``joint_positions``,
``joint_velocities``, ``com_minus_support_centre``, ``sole_contact_flags``, ``planned_contacts``,
``phase_progress``).

Action, ``(n,)`` in [-1, 1] in every mode; out-of-range values are clipped to [-1, 1]; a wrong shape,
a NaN or values that are not real numbers raise ``ValueError`` naming the env and the space:

- ``action_mode="torque"``: torque = action * effort limit (N·m).
- ``action_mode="joint_position"``: joint targets ``q_ref + joint_position_scale * action`` (rad, clipped
  to the joint limits), tracked by an inner joint PD (the gains of :class:`wbsim.controllers.pd.JointPD`,
  inertia-scaled, ``pd_frequency_hz``, critically damped), run by the actuators at every MuJoCo
  step with its damping taken implicitly (:mod:`wbsim.sim`): stable in contact and in the air.
- ``action_mode="residual"``: a controller (``controller``, default ``gravity_qp``; options
  ``controller_options``) runs inside the env and the action, times ``residual_scale`` (default 0.1)
  * effort limit, is added to its torques, the sum clipped to the effort limits
  (:class:`wbsim.envs.wrappers.ControllerInTheLoop`). The controller runs every MuJoCo step, as the
  inner PD of ``joint_position`` mode does, through the env's per-substep
  :attr:`HumanoidEnv.torque_hook`; the action is held over the ``frame_skip`` MuJoCo steps of an env
  step. ``controller``, ``residual_scale`` and ``controller_options`` are for this mode only; with
  another mode, :func:`make_humanoid_env` raises :class:`~wbsim.errors.WbsimError`.

``frame_skip`` MuJoCo steps (``timestep`` each) make one env step. In ``torque`` mode the torque is
held over them; ``joint_position`` and ``residual`` modes recompute their inner torque at each of
them.

Pushes (``push_magnitude`` > 0): every ``push_interval`` s, a horizontal force of ``push_magnitude`` N in a
direction drawn from the env's seeded generator acts on the torso for ``push_duration`` s; and each
scripted push of ``push_script`` (``(start s, (fx, fy, fz) N, duration s)``) at its time.

Reward, per step (weights in ``reward_weights``): ``alive`` (1.0 while not fallen), ``- upright`` times
the base tilt squared (rad²), ``- posture`` times the mean squared joint error to the reset posture
(rad²), ``- torque`` times the mean squared normalised torque (``tau / effort``, of the env step's
last MuJoCo step), ``- base_velocity`` times the squared difference between the base's linear
velocity and the plan's commanded velocity (``plan.command_velocity(t)``, world; zero except while a
walking plan's steps are under way, so for every other plan the squared base speed), ((m/s)²).

The plan: ``plan`` is a factory of a plan (:mod:`wbsim.envs.schedules`), called with
``plan_options`` at construction and at each reset; the reset sets its context (the CoM, feet and
base at rest). The factory's own keywords are env options too (``-e speed=0.3`` for
``wbsim/G1Walk-v0``): :func:`make_humanoid_env` and :func:`wbsim.envs.make_humanoid` move them into
``plan_options``.

Termination (a fall): base height below ``fall_height`` times its reset height, the base tilted more
than ``fall_tilt`` (rad, 60 deg by default: a pelvis past it does not come back), or any robot body other
than the soles touching the floor (a body on a wall, e.g. a wrist beside a hand's contact points in
``G1HandWall-v0``, is a ``non_sole_contact`` event, not a fall). Truncation: ``max_seconds`` of simulated time.

``info``: ``t`` (s), the plan's phase (``phase``, its name, e.g. ``"shift"``, ``"lift"``,
``"swing_right_foot"``; ``phase_index``, its index in the plan, from 0; ``phase_time``, s since it
began; the same three keys in every env and both ``info_mode`` values: the observation carries
only ``phase_progress``, which does not tell one phase from another (``G1OneLeg-v0``'s ``"lift"``,
``"hold"`` and ``"lower"``, all on the left foot) and stays 0 all through an open-ended phase
(``G1HandWall-v0``'s ``"hold"``)), ``state``
(:class:`~wbsim.types.RobotState`, Pinocchio convention), ``schedule``
(:class:`~wbsim.types.ContactSchedule`), ``sensed_contacts`` (feet with a loaded sole point),
``contacts`` (:class:`~wbsim.contacts.ContactSensing` of the sole points; after a step it
describes the state the action was applied at, i.e. MuJoCo's contact solution of that step),
``non_sole_contacts`` (other robot geoms touching the environment), ``fell``, ``reward_terms``,
``push_force`` (the push acting in the last MuJoCo step, N, world); in ``residual`` mode also
``command`` (the controller's :class:`~wbsim.types.Command` of the last MuJoCo step). With
``info_mode="lean"`` only ``t``, ``fell``, ``reward_terms``, ``phase``, ``phase_index`` and
``phase_time``: what crosses the pipe of a ``gymnasium`` ``AsyncVectorEnv`` each step is then ~220
bytes of plain numbers and a short string instead of the objects above (~3 kB, ~100 us to pickle
and unpickle), and the vector env's main process merges six keys instead of twelve. The rest stays
reachable on the env itself (:meth:`HumanoidEnv.robot_state`, :meth:`HumanoidEnv.schedule`,
:attr:`HumanoidEnv.sensing`, :attr:`HumanoidEnv.pushes`).

Pickling (``pickle``, ``copy.deepcopy``) keeps the episode: the simulation state, the reset posture
and height, the plan's reset context (the CoM and feet its targets are relative to), the last
contact sensing and torque, the pushes and the random generator; the copy continues bit for bit as
the original. A :attr:`HumanoidEnv.torque_hook` is not pickled (its owner, e.g.
:class:`~wbsim.envs.wrappers.ControllerInTheLoop`, sets it again).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

import wbsim
from wbsim.contacts import ContactSensing, sole_points_in_world, support_polygon
from wbsim.conventions import base_tilt
from wbsim.envs.schedules import PhasePlan, standing_plan
from wbsim.errors import WbsimError, is_real, joint_list, nonfinite_joints
from wbsim.sim import Pushes, Simulation
from wbsim.types import Command, ContactSchedule, JointTargets, RobotState

__all__ = [
    "DEFAULT_REWARD_WEIGHTS",
    "INFO_MODES",
    "HumanoidEnv",
    "make_humanoid_env",
    "plan_parameters",
    "reward_terms",
    "route_plan_options",
]

DEFAULT_REWARD_WEIGHTS: Mapping[str, float] = {
    "alive": 1.0,
    "upright": 1.0,
    "posture": 0.5,
    "torque": 0.01,
    "base_velocity": 0.1,
}
FEET = ("left_foot", "right_foot")
FEET_SET = frozenset(FEET)
#: ``info_mode`` values: ``"full"`` (every key of the module docstring) and ``"lean"`` (plain values
#: only: ``t``, ``fell``, ``reward_terms``, ``phase``, ``phase_index``, ``phase_time``; cheap to
#: pickle and to merge, for vector envs)
INFO_MODES = ("full", "lean")


def reward_terms(
    weights: Mapping[str, float],
    fell,
    base_quat_wxyz: np.ndarray,
    joint_error: np.ndarray,
    torque_normalised: np.ndarray,
    base_velocity_world: np.ndarray,
) -> dict[str, Any]:
    """The reward terms of the module docstring, for one step or ``k`` steps at once (every array
    with a leading axis ``k``; each term is then ``(k,)``).

    Args:
        weights: the reward weights (:data:`DEFAULT_REWARD_WEIGHTS`'s keys).
        fell: bool, or ``(k,)`` bools.
        base_quat_wxyz: ``(4,)`` base orientation ``(w, x, y, z)``.
        joint_error: ``(n,)`` joint angles minus the reset posture, rad.
        torque_normalised: ``(n,)`` applied torque over the effort limits.
        base_velocity_world: ``(3,)`` the base's linear velocity minus the commanded one, m/s.
    """
    q = np.asarray(base_quat_wxyz)
    tilt = base_tilt(q[..., 0], q[..., 1], q[..., 2], q[..., 3])
    n = joint_error.shape[-1]
    return {
        "alive": np.where(fell, 0.0, weights["alive"]),
        "upright": -weights["upright"] * tilt**2,
        "posture": -weights["posture"] * (np.vecdot(joint_error, joint_error) / n),
        "torque": -weights["torque"] * (np.vecdot(torque_normalised, torque_normalised) / n),
        "base_velocity": -weights["base_velocity"]
        * np.vecdot(base_velocity_world, base_velocity_world),
    }


def _check_robot_fits(env_id: str, robot: wbsim.Robot, plan: Any) -> None:
    """Raise :class:`WbsimError` if ``robot`` lacks a contact the env's ``plan`` puts on the scene
    (e.g. a hand on the wall): the env was given another robot than its own."""
    phases = getattr(plan, "phases", ())
    needed = set().union(*(p.contact_set for p in phases)) if phases else set()
    missing = sorted(needed - set(robot.contact_names))
    if missing:
        with_them = [
            name for name, c in wbsim.ROBOTS.items() if set(missing) <= {*c.feet, *c.hands}
        ]
        raise WbsimError(
            f"{env_id} needs a robot with the contacts {', '.join(missing)} (its plan puts them "
            f"on the scene); robot {robot.name} has {', '.join(robot.contact_names) or 'none'}; "
            + (
                f"built-in robots that have them: {', '.join(with_them)}"
                if with_them
                else "no built-in robot has them: run the env with its own robot (no --robot)"
            )
        )


class HumanoidEnv(gym.Env):
    """A humanoid on the floor under a contact schedule (see the module docstring for the spaces).

    Args:
        robot: what :func:`wbsim.load_robot` takes (a name, a ``.toml`` config or description
            path, a :class:`~wbsim.robot_config.RobotConfig` or a dict of its fields, as a run's
            ``config.json`` records it), or a :class:`wbsim.Robot` (the env
            works on a copy, :meth:`wbsim.Robot.copy`: envs made from one robot share no model).
        plan: a callable returning a fresh :class:`~wbsim.envs.schedules.PhasePlan` (default: stand).
        pose: name of the reset pose.
        frame_skip: MuJoCo steps per env step (the control period is ``frame_skip * timestep``).
        max_seconds: time limit (truncation), s.
        action_mode: ``"torque"`` or ``"joint_position"`` (``"residual"`` goes through
            :func:`make_humanoid_env`: a torque-mode env with a :attr:`torque_hook`).
        render_mode: ``None``, ``"rgb_array"`` (``(height, width, 3)`` ``uint8``, with the overlay),
            ``"depth_array"`` (``(height, width)`` ``float32``, distance from the camera plane in m,
            the scene without the overlay) or ``"human"`` (MuJoCo's passive viewer, drawn at
            every :meth:`reset` and :meth:`step`, as in Gymnasium's MuJoCo envs; needs a display:
            without one they raise :class:`~wbsim.errors.WbsimError` saying how to run headless).
        width, height: rendered frame size, pixels (at most the scene's off-screen buffer, 1920x1080).
        reset_noise_scale: uniform noise (rad) added to the joint angles at reset.
        fall_height: fraction of the reset base height below which the robot has fallen.
        fall_tilt: base tilt (rad, from the vertical) beyond which the robot has fallen.
        reward_weights: overrides of :data:`DEFAULT_REWARD_WEIGHTS`.
        env_id: the registered id (for messages).
        push_magnitude, push_interval, push_duration: pushes on the torso (N, s, s); 0 N: none
            (:class:`wbsim.sim.Pushes`).
        push_script: scripted pushes ``[(start s, (fx, fy, fz) N world, duration s), ...]``
            (:class:`wbsim.sim.Pushes`; the push-recovery protocol, :mod:`wbsim.pushtest`).
        joint_position_scale: rad per unit action in ``joint_position`` mode.
        pd_frequency_hz: natural frequency of the inner PD in ``joint_position`` mode.
        info_mode: ``"full"`` (default) or ``"lean"`` (see the module docstring, ``info``).
        camera_name, camera_id: the camera of ``rgb_array`` and ``depth_array`` frames, as in
            Gymnasium's MuJoCo envs: a camera of the model by name (``"front"``, ``"side"``) or by
            id, ``-1`` for the free camera; not both. Default (both ``None``): the free camera,
            which follows the robot (``"track"``, :class:`wbsim.render.FrameRenderer`).
        default_camera_config: the free camera's ``distance`` (m; default: 3.3 times the base
            height), ``azimuth`` and ``elevation`` (deg) and ``trackbodyid`` (the body it
            follows; default 1, the base), as in Gymnasium's MuJoCo envs (there is no ``lookat``:
            the camera looks at the body it follows).
        plan_options: keyword arguments of ``plan`` (e.g. ``{"speed": 0.3}`` for a walking plan);
            unknown keys raise :class:`~wbsim.errors.UnknownNameError` listing the factory's.
        noslip_iterations: iterations of MuJoCo's no-slip solver (0: off, MuJoCo's default;
            :class:`wbsim.sim.Simulation`): with it, sticking contacts creep far less.

    Attributes:
        sim: the :class:`wbsim.sim.Simulation` it steps (the rollout drives the same object).
        observation_structure: the observation's parts in their order, name -> size (a
            ``dict[str, int]``; the sizes add up to ``observation_space.shape[0]``), as Gymnasium's
            MuJoCo envs give theirs (``env.unwrapped.observation_structure``): ``base_height``
            1, ``base_quaternion_wxyz`` 4, ``base_twist`` 6, ``joint_positions`` n,
            ``joint_velocities`` n (n = ``robot.n_joints``, ``robot.joint_names`` order),
            ``com_minus_support_centre`` 3, ``sole_contact_flags`` 2, ``planned_contacts`` 2,
            ``phase_progress`` 1 (units and frames: the module docstring's table). Every
            registered id has it, in every action mode (``residual`` wraps this class).
    """

    # Gymnasium's API: a class attribute, replaced per instance in __init__ (render_fps)
    metadata = {"render_modes": ["rgb_array", "human", "depth_array"], "render_fps": 500}  # noqa: RUF012

    def __init__(
        self,
        robot: str | wbsim.RobotConfig | wbsim.Robot | Mapping[str, Any] = "g1",
        plan: Callable[[], PhasePlan] = standing_plan,
        pose: str = "stand",
        frame_skip: int = 1,
        max_seconds: float = 10.0,
        action_mode: str = "torque",
        render_mode: str | None = None,
        width: int = 640,
        height: int = 480,
        reset_noise_scale: float = 0.0,
        fall_height: float = 0.6,
        fall_tilt: float = math.pi / 3,
        reward_weights: Mapping[str, float] | None = None,
        env_id: str = "wbsim env",
        push_magnitude: float = 0.0,
        push_interval: float = 2.0,
        push_duration: float = 0.1,
        push_script: Any = (),
        joint_position_scale: float = 0.5,
        pd_frequency_hz: float = 5.0,
        info_mode: str = "full",
        camera_name: str | None = None,
        camera_id: int | None = None,
        default_camera_config: Mapping[str, Any] | None = None,
        plan_options: Mapping[str, Any] | None = None,
        noslip_iterations: int = 0,
    ):
        self._init_kwargs = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        # an env owns its MuJoCo model (the simulation sets options and actuator gains on it)
        self.robot = robot.copy() if isinstance(robot, wbsim.Robot) else wbsim.load_robot(robot)
        if action_mode not in ("torque", "joint_position"):
            raise WbsimError(
                f"{env_id}: unknown action_mode {action_mode!r}; known: torque, "
                "joint_position, residual"
            )
        if info_mode not in INFO_MODES:
            raise WbsimError(
                f"{env_id}: unknown info_mode {info_mode!r}; known: {', '.join(INFO_MODES)}"
            )
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise WbsimError(
                f"{env_id}: unknown render_mode {render_mode!r}; known: "
                f"{', '.join(self.metadata['render_modes'])}"
            )
        if reward_weights is not None and not isinstance(reward_weights, Mapping):
            raise WbsimError(
                f"{env_id}: reward_weights must be a mapping of weight name -> number "
                f"(known: {', '.join(sorted(DEFAULT_REWARD_WEIGHTS))}), got "
                f"{reward_weights!r}"
            )
        unknown = set(reward_weights or {}) - set(DEFAULT_REWARD_WEIGHTS)
        if unknown:
            raise WbsimError(
                f"{env_id}: unknown reward weights {sorted(unknown)}; known: "
                f"{sorted(DEFAULT_REWARD_WEIGHTS)}"
            )
        inf = math.inf
        for name, value, integer, ok, expected in (  # ok runs on real numbers only
            ("frame_skip", frame_skip, True, lambda x: x >= 1, "an integer >= 1"),
            ("width", width, True, lambda x: x >= 1, "an integer >= 1 (pixels)"),
            ("height", height, True, lambda x: x >= 1, "an integer >= 1 (pixels)"),
            ("max_seconds", max_seconds, False, lambda x: x > 0, "a number > 0 (s)"),
            (
                "reset_noise_scale",
                reset_noise_scale,
                False,
                lambda x: 0 <= x < inf,
                "a finite number >= 0 (rad)",
            ),
            (
                "fall_tilt",
                fall_tilt,
                False,
                lambda x: 0 < x <= math.pi,
                "a number in (0, pi] (rad from the vertical)",
            ),
            (
                "fall_height",
                fall_height,
                False,
                lambda x: 0 <= x <= 1,
                "a number in [0, 1] (fraction of the reset base height)",
            ),
            (
                "push_magnitude",
                push_magnitude,
                False,
                lambda x: 0 <= x < inf,
                "a finite number >= 0 (N)",
            ),
            (
                "push_interval",
                push_interval,
                False,
                lambda x: 0 < x < inf,
                "a finite number > 0 (s)",
            ),
            (
                "push_duration",
                push_duration,
                False,
                lambda x: 0 <= x < inf,
                "a finite number >= 0 (s)",
            ),
            (
                "joint_position_scale",
                joint_position_scale,
                False,
                lambda x: 0 < x < inf,
                "a finite number > 0 (rad per unit action)",
            ),
            (
                "pd_frequency_hz",
                pd_frequency_hz,
                False,
                lambda x: 0 < x < inf,
                "a finite number > 0 (Hz)",
            ),
            (
                "noslip_iterations",
                noslip_iterations,
                True,
                lambda x: 0 <= x <= 1000,
                "an integer in [0, 1000]",
            ),
        ):
            if not (
                is_real(value)
                and (isinstance(value, numbers.Integral) or not integer)
                and ok(value)
            ):
                raise WbsimError(f"{env_id}: {name} must be {expected}, got {value!r}")
        self.env_id = env_id
        self.plan_factory = plan
        self.plan_options = dict(plan_options or {})
        if self.plan_options:
            from wbsim.errors import UnknownNameError

            known = plan_parameters(plan)
            for key in self.plan_options:
                if key not in known:
                    raise UnknownNameError(
                        "option", key, known, context=f"of the plan of env {env_id}"
                    )
        self.plan = self._plan_call(plan, **self.plan_options)
        _check_robot_fits(env_id, self.robot, self.plan)
        self.pose_name = pose
        self.frame_skip = int(frame_skip)
        self.max_seconds = float(max_seconds)
        self.action_mode = action_mode
        self.render_mode = render_mode
        self.width, self.height = width, height
        self.reset_noise_scale = reset_noise_scale
        self.fall_height = fall_height
        self.fall_tilt = float(fall_tilt)
        self.reward_weights = {**DEFAULT_REWARD_WEIGHTS, **(reward_weights or {})}
        self.info_mode = info_mode
        self.sim = Simulation(
            self.robot,
            Pushes(push_magnitude, push_interval, push_duration, push_script or ()),  # checks it
            noslip_iterations=int(noslip_iterations),
        )
        self.model, self.data = self.sim.model, self.sim.data
        self._camera = _camera_options(
            self.model,
            env_id,
            camera_name,
            camera_id,
            default_camera_config,
            width,
            height,
            render_mode,
        )
        self.metadata = {**self.metadata, "render_fps": round(1.0 / self.dt)}

        n = self.robot.n_joints
        self.effort = np.where(np.isfinite(self.robot.effort_limits), self.robot.effort_limits, 1.0)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(n,), dtype=np.float32)
        #: the observation's parts in order, name -> size (the module docstring's table), as
        #: Gymnasium's MuJoCo envs give theirs
        self.observation_structure: dict[str, int] = {
            "base_height": 1,
            "base_quaternion_wxyz": 4,
            "base_twist": 6,
            "joint_positions": n,
            "joint_velocities": n,
            "com_minus_support_centre": 3,
            "sole_contact_flags": 2,
            "planned_contacts": 2,
            "phase_progress": 1,
        }
        obs_dim = sum(self.observation_structure.values())
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(obs_dim,), dtype=np.float32)
        self._frame_renderer = None
        self._q_ref = self.robot.pose_q(pose)
        self._base_height0 = 1.0
        #: set by :meth:`reset`: before it MuJoCo's state is the model's default (the base at the
        #: origin, the legs through the floor), not an episode's start
        self._was_reset = False
        self.joint_position_scale = joint_position_scale
        self._pd = None
        if action_mode == "joint_position":
            from wbsim.controllers.pd import JointPD, PDGains

            self._pd = JointPD(self.robot, PDGains(pd_frequency_hz, 1.0))
        self._viewer = None
        #: what the overlay draws beyond the simulation: the last Command (commanded forces), a
        #: status line and the points in violation (set by the rollout or a wrapper)
        self.overlay_command = None
        self.overlay_status = ""
        self.overlay_violating: np.ndarray | None = None
        self.overlay = True
        self._torque_hook: Callable[[HumanoidEnv], np.ndarray | Command] | None = None
        conv = self.robot.converter
        self._pin_qidx, self._pin_vidx = conv.pin_qidx, conv.pin_vidx
        nq = self.robot.pin_model.nq
        #: where the observation's state part comes from in ``[q; v]`` (Pinocchio's)
        self._obs_state_index = np.concatenate(
            ([2, 6, 3, 4, 5], nq + np.arange(6), self._pin_qidx, nq + np.asarray(self._pin_vidx))
        ).astype(np.intp)
        self._weights: dict[frozenset[str], np.ndarray] = {}

    # -- per-substep torque hook -------------------------------------------------------------------
    @property
    def torque_hook(self) -> Callable[[HumanoidEnv], np.ndarray | Command] | None:
        """A callable ``hook(env) -> tau`` (or ``-> Command``, whose joint PD the actuators run) that
        replaces the action's torque in ``torque`` mode, or ``None`` (the default: torque = action
        * effort limit, held over the substeps).

        When set, :meth:`step` checks the action (same errors) but does not use it; before each of
        its ``frame_skip`` MuJoCo steps it applies the push schedule, then calls ``hook(self)`` and
        applies (a copy of) the returned torque ``(n_joints,)`` N·m (``robot.joint_names`` order)
        as given (the hook clips it) for that one MuJoCo step. Before each call,
        :meth:`robot_state`, :meth:`schedule` and :attr:`sensing` describe the current substep.
        :attr:`tau` is the torque of the last substep. A torque of the wrong shape or with NaN/inf
        raises :class:`~wbsim.errors.WbsimError`.

        :class:`~wbsim.envs.wrappers.ControllerInTheLoop` (``action_mode="residual"``) sets it: its
        controller then runs every MuJoCo step (``timestep``), as the inner PD of ``joint_position``
        mode does, whatever ``frame_skip``. Not pickled (the owner sets it again). Raises
        :class:`~wbsim.errors.WbsimError` if set to something not callable, or on an env not in
        ``torque`` mode.
        """
        return self._torque_hook

    @torque_hook.setter
    def torque_hook(self, hook: Callable[[HumanoidEnv], np.ndarray | Command] | None) -> None:
        if hook is not None:
            if not callable(hook):
                raise WbsimError(
                    f"{self.env_id}: torque_hook must be callable or None, got {hook!r}"
                )
            if self.action_mode != "torque":
                raise WbsimError(
                    f"{self.env_id}: a torque_hook needs action_mode 'torque', got "
                    f"{self.action_mode!r}"
                )
        self._torque_hook = hook

    # -- Gymnasium API -----------------------------------------------------------------------------
    @property
    def dt(self) -> float:
        """Control period, s."""
        return self.sim.timestep * self.frame_skip

    @property
    def tau(self) -> np.ndarray:
        """``(n_joints,)`` torque applied at the last MuJoCo step, N·m."""
        return self.sim.tau

    @property
    def q_reference(self) -> np.ndarray:
        """``(nq,)`` the reset posture (Pinocchio configuration, reset noise included): the
        reference of the posture reward and of ``joint_position`` actions."""
        return self._q_ref

    @property
    def sensing(self) -> ContactSensing:
        """The contact sensors' reading of the last MuJoCo step (:meth:`Simulation.sensing`)."""
        return self.sim.sensing()

    @property
    def pushes(self) -> list[tuple[float, np.ndarray, float]]:
        """``(start time s, force (3,) N world, duration s)`` of every push of the episode."""
        return self.sim.pushes_done

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Gymnasium's reset: the robot at its pose (plus the reset noise), the plan restarted.

        Raises:
            WbsimError: ``options`` names anything: a reset takes none (the episode's options
                are the env's, given to ``gymnasium.make``), and one silently ignored would run
                another episode than the one asked for.
        """
        if options:
            raise WbsimError(
                f"{self.env_id}: reset takes no options, got {sorted(options)}; an episode's "
                "options are the env's (gymnasium.make(id, **options))"
            )
        super().reset(seed=seed)
        q = self.robot.pose_q(self.pose_name)
        if self.reset_noise_scale > 0:
            q[self._pin_qidx] += self.np_random.uniform(
                -self.reset_noise_scale, self.reset_noise_scale, self.robot.n_joints
            )
            q = self.robot.on_floor(q)  # the noisy soles neither in the floor nor above it
        self.sim.reset(q, self.np_random)
        self._q_ref = q
        self._base_height0 = float(self.data.qpos[2])
        self.plan = self._plan_call(self.plan_factory, **self.plan_options)
        self._plan_call(self.plan.set_context, **self._plan_context())
        self._check_plan_joints()
        if self._pd is not None:
            self._pd.reset(q)
        self._was_reset = True
        out = self._observe(fell=False, reward_terms={})
        if self.render_mode == "human":  # as Gymnasium's MuJoCo envs: the viewer follows by itself
            self.render()
        return out

    def _plan_call(self, fn: Callable[..., Any], **kwargs: Any) -> Any:
        """``fn(**kwargs)`` (the plan factory, or the plan's ``set_context`` at reset), with a
        :class:`~wbsim.errors.WbsimError` it raises (a plan option out of range: ``speed``,
        ``plan_file``, a gait value) naming this env, as the env's own option errors do."""
        try:
            return fn(**kwargs)
        except WbsimError as exc:
            if not str(exc).startswith(f"{self.env_id}: "):
                exc.args = (f"{self.env_id}: {exc}",)  # the same error, its class kept
            raise

    def _check_plan_joints(self) -> None:
        """A plan whose reference has a posture (a DCC plan) must name this robot's joints in
        their order: the controller reads its columns as ``robot.joint_names``.

        Raises:
            WbsimError: the reference's ``joint_names`` are not the robot's (a G1 plan on iCub).
        """
        names = getattr(getattr(self.plan, "reference", None), "joint_names", None)
        ours = tuple(self.robot.joint_names)
        if names is None or tuple(names) == ours:
            return
        first = next(
            (f"{a!r} where {self.robot.name} has {b!r}" for a, b in zip(names, ours) if a != b),
            f"{len(names)} joints where {self.robot.name} has {len(ours)}",
        )
        raise WbsimError(
            f"{getattr(self.plan, 'name', 'plan')}: its posture is not for robot "
            f"{self.robot.name!r} ({first}); a plan replays on the robot it was planned for"
        )

    def step(self, action: np.ndarray):
        """Gymnasium's step: ``action`` ``(n,)`` in [-1, 1] (see the module docstring for its
        meaning per ``action_mode``) -> ``(obs, reward, terminated, truncated, info)``.

        Raises:
            ValueError: the action's shape or values (:meth:`check_action`).
            gymnasium.error.ResetNeeded: before the first :meth:`reset` (MuJoCo's state is then
                the model's default, the robot through the floor, not an episode's start).
        """
        if not self._was_reset:
            raise gym.error.ResetNeeded(
                f"{self.env_id}: call reset() before step() (the robot is not yet at its pose)"
            )
        a = self.check_action(action)
        hook = self._torque_hook
        if hook is not None:
            try:
                self.sim.step_with(lambda _: hook(self), self.frame_skip)
            except WbsimError as exc:
                raise WbsimError(f"{self.env_id}: torque_hook returned {exc}") from None
        elif self._pd is None:
            self.sim.step(a * self.effort, self.frame_skip)
        else:
            lo, hi = self.robot.joint_limits[:, 0], self.robot.joint_limits[:, 1]
            target = np.clip(self._q_ref[self._pin_qidx] + self.joint_position_scale * a, lo, hi)
            pd = self._pd  # run by the actuators at every MuJoCo step (wbsim.sim)
            self.sim.step_command(
                Command(
                    np.zeros(self.robot.n_joints),
                    joint_targets=JointTargets(target, np.zeros_like(target), pd.kp, pd.kd),
                ),
                self.frame_skip,
            )
        failed = self.sim.failed
        non_sole = sorted(self.sensing.non_sole_contacts)
        fell = self.has_fallen() or failed is not None
        terms = self._reward_terms(fell)
        reward = 0.0
        for value in terms.values():
            reward += value
        truncated = self.sim.time >= self.max_seconds - 1e-9 and not fell
        obs, info = self._observe(fell=fell, reward_terms=terms, non_sole=non_sole)
        if failed is not None:
            info["simulation_error"] = str(failed)
        if self.render_mode == "human":
            self.render()
        return obs, reward, fell, truncated, info

    def has_fallen(self) -> bool:
        """The termination rule (module docstring): the base below ``fall_height`` times its reset
        height or tilted beyond ``fall_tilt``, or a robot geom other than the sole points touching
        the floor."""
        z, w, x, y, qz = self.data.qpos[2:7].tolist()  # floats: base_tilt's scalar arithmetic
        return bool(
            z < self.fall_height * self._base_height0
            or base_tilt(w, x, y, qz) > self.fall_tilt
            or self.sensing.non_sole_on_floor
        )

    def reward(
        self,
        qpos: np.ndarray,
        qvel: np.ndarray,
        tau: np.ndarray,
        fell: np.ndarray,
        t: np.ndarray | None = None,
    ) -> np.ndarray:
        """The reward ``(k,)`` of ``k`` steps ending in MuJoCo states ``qpos (k, nq)``, ``qvel (k,
        nv)`` at times ``t (k,)`` s (for the plan's commanded velocity; ``None``: none commanded)
        after torques ``tau (k, n_joints)`` (N·m), ``fell (k,)`` their termination flags: the sum
        of :func:`reward_terms` (what :meth:`step` returns, for a recorded episode)."""
        velocity = qvel[:, 0:3]
        if t is not None:
            velocity = velocity - np.array([self.plan.command_velocity(float(x)) for x in t])
        terms = reward_terms(
            self.reward_weights,
            fell,
            qpos[:, 3:7],
            qpos[:, self.robot.converter.mj_qadr] - self._q_ref[self._pin_qidx],
            tau / self.effort,
            velocity,
        )
        total = np.zeros(len(qpos))
        for value in terms.values():
            total += value
        return total

    def render(self):
        if self.render_mode == "human":
            if self._viewer is None:
                from wbsim.viewer import Viewer

                self._viewer = Viewer(self.model, self.data)
            self._viewer.sync(self.overlay_data() if self.overlay else None)
            return None
        if self.render_mode == "depth_array":
            return self._render_depth()
        if self.render_mode != "rgb_array":  # None: as Gymnasium's MuJoCo envs, a warning
            gym.logger.warn(
                "render() without a render_mode returns nothing: make the env with "
                f'render_mode="rgb_array", e.g. gymnasium.make("{self.env_id}", '
                'render_mode="rgb_array")'
            )
            return None
        if not self.overlay:
            return self.frame_renderer.render(self.data)
        from wbsim.overlay import draw_geoms, draw_text

        data = self.overlay_data()
        frame = self.frame_renderer.render(self.data, lambda scn, _: draw_geoms(scn, data))
        return draw_text(frame, data.text)

    def _render_depth(self) -> np.ndarray:
        """``(height, width)`` ``float32`` depth of the scene, m (MuJoCo's renderer in depth mode)."""
        frames = self.frame_renderer
        frames.renderer.enable_depth_rendering()
        try:
            return frames.render(self.data)
        finally:
            frames.renderer.disable_depth_rendering()

    @property
    def viewer_is_open(self) -> bool:
        """``False`` once the user closed the viewer window (``render_mode="human"``)."""
        return self._viewer is None or self._viewer.is_running

    def overlay_data(self):
        """The :class:`~wbsim.overlay.OverlayData` of the current state (sensing, last command,
        CoM, planned support polygon, status line), built by :func:`wbsim.scene.overlay_of`."""
        from wbsim.scene import FrameValues, overlay_of

        s, d, cmd = self.sensing, self.data, self.overlay_command
        n, m = len(s.names), len(self.robot.foot_names)
        f_cmd = (
            np.full((n, 3), np.nan)
            if cmd is None or cmd.point_forces is None
            else (cmd.point_forces)
        )
        w_cmd = (
            np.full((m, 6), np.nan)
            if cmd is None or cmd.foot_wrenches is None
            else (cmd.foot_wrenches)
        )
        values = FrameValues(
            d.time,
            d.qpos,
            s.mode,
            s.force_world,
            f_cmd,
            w_cmd,
            s.feet_in_contact,
            self.schedule().contact_set,
            violating=self.overlay_violating,
        )
        overlay = overlay_of(self.robot, d, values)
        overlay.text = self.overlay_status or overlay.text
        return overlay

    def close(self):
        if self._frame_renderer is not None:
            self._frame_renderer.close()
            self._frame_renderer = None
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None

    # -- pickling: rebuild from the constructor's arguments, then restore the simulation state ----
    def __getstate__(self):
        kwargs = dict(self._init_kwargs)
        if isinstance(kwargs["robot"], wbsim.Robot):  # its (completed) config rebuilds it
            kwargs["robot"] = kwargs["robot"].config
        sim = self.sim
        return {
            "kwargs": kwargs,
            "state": sim.get_state(),
            "q_ref": self._q_ref,
            "base_height0": self._base_height0,
            "np_random": self._np_random,
            "pushes": sim.push_memory(),
            "push_force": sim.push_force.copy(),
            "plan_context": dict(self.plan.context),
            "sensing": sim.sensing(),
            "tau": sim.tau.copy(),
            "was_reset": self._was_reset,
        }

    def __setstate__(self, st):
        self.__init__(**st["kwargs"])
        sim = self.sim
        sim.set_state(st["state"])
        self._q_ref, self._base_height0 = st["q_ref"], st["base_height0"]
        self._was_reset = st["was_reset"]
        self._np_random = st["np_random"]
        sim._rng = self._np_random
        sim.restore_push_memory(st["pushes"])
        sim.push_force, sim.tau = st["push_force"], st["tau"]
        # the reset's context (CoM, feet), which the plan's targets are relative to
        self.plan.set_context(**st["plan_context"])
        # the contacts of the last MuJoCo step (set_state's mj_forward solved the current state's,
        # which robot_state() and the overlay must not see)
        sim.restore_sensing(st["sensing"])
        if self._pd is not None:
            self._pd.reset(self._q_ref)

    # -- helpers -----------------------------------------------------------------------------------
    @property
    def camera_options(self) -> dict[str, Any]:
        """The camera of this env's frames as :class:`wbsim.render.FrameRenderer` keyword
        arguments (``camera``, and those of ``default_camera_config`` given: ``track_body``,
        ``distance``, ``azimuth``, ``elevation``): what ``camera_name``, ``camera_id`` and
        ``default_camera_config`` ask for, also for the videos of :func:`wbsim.rollout.run_episode`
        and ``wbsim replay``."""
        return dict(self._camera)

    @property
    def frame_renderer(self):
        """The :class:`wbsim.render.FrameRenderer`, created when a frame is first asked for."""
        if self._frame_renderer is None:
            from wbsim.render import FrameRenderer

            self._frame_renderer = FrameRenderer(
                self.model, self.width, self.height, **self._camera
            )
        return self._frame_renderer

    def action_to_torque(self, action: np.ndarray) -> np.ndarray:
        """Check and map an action to joint torques ``(n,)`` N·m in ``torque`` mode (clip to
        [-1, 1], scale by effort)."""
        return self.check_action(action) * self.effort

    def check_action(self, action: np.ndarray) -> np.ndarray:
        """The action as floats clipped to [-1, 1] (a fresh array); ``ValueError`` for a wrong shape,
        NaN/inf, or values that are not real numbers (strings, objects, complex: complex ones
        would otherwise lose their imaginary part silently)."""
        raw = np.asarray(action)
        if raw.dtype.kind not in "biuf":
            raise ValueError(
                f"{self.env_id}: action of dtype {raw.dtype}; expected real numbers in "
                f"{self.action_space}"
            )
        a = np.array(raw, dtype=float)
        if a.shape != self.action_space.shape:
            raise ValueError(
                f"{self.env_id}: action of shape {a.shape}; expected {self.action_space}"
            )
        bad = nonfinite_joints(a, self.robot.joint_names)
        if bad:
            raise ValueError(
                f"{self.env_id}: action has NaN/inf at {len(bad)} joint(s): "
                f"{joint_list(bad)}; expected finite values in {self.action_space}"
            )
        return np.minimum(np.maximum(a, -1.0, out=a), 1.0, out=a)

    def torque_to_action(self, tau: np.ndarray) -> np.ndarray:
        """Joint torques ``(n,)`` N·m -> action in this env's ``torque`` mode (not clipped)."""
        return (np.asarray(tau, dtype=float) / self.effort).astype(np.float32)

    def robot_state(self) -> RobotState:
        """The current state in Pinocchio's convention, with the sensed foot contacts."""
        return self.sim.state()

    def sensed_feet(self) -> frozenset[str]:
        """Feet with at least one loaded sole point (:attr:`sensing`)."""
        return self.sensing.feet_in_contact

    def _plan_context(self) -> dict[str, np.ndarray]:
        """The reset context of the plan (:mod:`wbsim.envs.schedules`): CoM, foot frames, sole
        centres, base rotation, mass and gravity, world frame."""
        d = self.data
        ctx = {"com": d.subtree_com[1].copy()}
        for foot in FEET:
            body = self.robot.foot(foot).mj_body_id
            ctx[foot] = d.xpos[body].copy()
            ctx[f"{foot}_rotation"] = d.xmat[body].reshape(3, 3).copy()
            ctx[f"{foot.split('_')[0]}_sole_centre"] = support_polygon(self.robot, d, [foot]).mean(
                0
            )
        ctx["base_rotation"] = d.xmat[1].reshape(3, 3).copy()
        ctx["mass"] = np.array(float(self.robot.total_mass))
        ctx["gravity"] = self.model.opt.gravity.copy()
        ctx["floor_height"] = np.array(float(sole_points_in_world(self.robot, d)[:, 2].min()))
        for foot in FEET:  # the foot frame above its sole when level (the robot's geometry)
            ctx[f"{foot}_sole_depth"] = np.array(
                -float(np.mean(self.robot.foot(foot).points_in_foot[:, 2]))
            )
        return ctx

    def schedule(self) -> ContactSchedule:
        """The plan's :class:`~wbsim.types.ContactSchedule` at the current time (planned contact
        set, phase, targets; what ``info["schedule"]`` holds in ``info_mode="full"``)."""
        return self.plan.at(self.sim.time)

    def _observe(
        self, fell: bool, reward_terms: dict[str, float], non_sole: list[str] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Observation and info of the current state (module docstring)."""
        sim = self.sim
        t = sim.time
        q, v = self.robot.mj_to_pin(self.data.qpos, self.data.qvel)
        sched = self.plan.at(t)
        sensing = self.sensing
        sensed = sensing.feet_in_contact
        planned = sched.contact_set
        centre = (
            self._support_weights((planned & FEET_SET) or FEET_SET) @ sensing.position_world[:, 0:2]
        )
        com = self.data.subtree_com[1]
        duration = sched.phase_duration
        # base height, quaternion w then x y z, base velocity, joint angles, joint velocities
        # (one gather from [q; v]); CoM over the support centre, CoM height; contact flags; phase
        state_part = np.concatenate((q, v)).take(self._obs_state_index)
        k = len(state_part)
        obs = np.empty(k + 8, dtype=np.float32)
        obs[:k] = state_part
        obs[k : k + 2] = com[0:2] - centre
        obs[k + 2] = com[2]
        obs[k + 3 : k + 7] = [f in sensed for f in FEET] + [f in planned for f in FEET]
        obs[k + 7] = sched.phase_time / duration if math.isfinite(duration) else 0.0
        if self.info_mode == "lean":
            return obs, {
                "t": t,
                "fell": fell,
                "reward_terms": reward_terms,
                "phase": str(sched.phase),
                "phase_index": int(sched.phase_index),
                "phase_time": float(sched.phase_time),
            }
        info = {
            "t": t,
            "phase": str(sched.phase),
            "phase_index": int(sched.phase_index),
            "phase_time": float(sched.phase_time),
            "state": RobotState(t, q, v, sensed, sensing.foot_friction, sensing.cone_name),
            "schedule": sched,
            "sensed_contacts": sensed,
            "contacts": sensing,
            "non_sole_contacts": non_sole or [],
            "fell": fell,
            "reward_terms": reward_terms,
            "push_force": sim.push_force.copy(),
        }
        return obs, info

    def _support_weights(self, feet: frozenset[str]) -> np.ndarray:
        """``(n,)`` weights whose product with the sole points is the mean of the points of
        ``feet`` (the support centre of the observation)."""
        w = self._weights.get(feet)
        if w is None:
            on = np.array([f in feet for f in self.sensing.point_foot], dtype=float)
            w = self._weights[feet] = on / on.sum()
        return w

    def _reward_terms(self, fell: bool) -> dict[str, float]:
        """The reward terms (module docstring) of the current state, as floats."""
        d = self.data
        terms = reward_terms(
            self.reward_weights,
            fell,
            d.qpos[3:7],
            self.sim.joint_positions - self._q_ref[self._pin_qidx],
            self.sim.tau / self.effort,
            d.qvel[0:3] - self.plan.command_velocity(self.sim.time),
        )
        return {k: float(v) for k, v in terms.items()}


#: ``default_camera_config`` key -> :class:`wbsim.render.FrameRenderer` argument
_CAMERA_CONFIG_KEYS = {
    "distance": "distance",
    "azimuth": "azimuth",
    "elevation": "elevation",
    "trackbodyid": "track_body",
}


def _camera_options(
    model,
    env_id: str,
    camera_name: str | None,
    camera_id: int | None,
    config: Mapping[str, Any] | None,
    width: int,
    height: int,
    render_mode: str | None,
) -> dict[str, Any]:
    """The :class:`wbsim.render.FrameRenderer` arguments of the env's camera options (see
    :class:`HumanoidEnv`), checked.

    Raises:
        WbsimError: both ``camera_name`` and ``camera_id``; an unknown camera name or id; a
            ``default_camera_config`` that is not a mapping, has another key, or names no body;
            an off-screen ``render_mode`` with a frame larger than the model's off-screen buffer.
            One line each, naming the option.
    """
    cameras = [model.camera(i).name for i in range(model.ncam)]
    if camera_name is not None and camera_id is not None:
        raise WbsimError(
            f"{env_id}: camera_name and camera_id cannot both be given (got "
            f"{camera_name!r} and {camera_id!r})"
        )
    out: dict[str, Any] = {"camera": "track"}
    if camera_name is not None:
        if camera_name not in cameras and camera_name != "track":
            raise WbsimError(
                f"{env_id}: unknown camera_name {camera_name!r}; known: "
                f"{', '.join(['track', *cameras])}"
            )
        out["camera"] = camera_name
    elif camera_id is not None:
        if not (isinstance(camera_id, numbers.Integral) and -1 <= camera_id < len(cameras)):
            raise WbsimError(
                f"{env_id}: camera_id must be -1 (the free camera) or the id of a "
                f"camera of the model (0..{len(cameras) - 1}: "
                f"{', '.join(cameras)}), got {camera_id!r}"
            )
        if camera_id >= 0:
            out["camera"] = cameras[camera_id]
    if config is not None and not isinstance(config, Mapping):
        raise WbsimError(f"{env_id}: default_camera_config must be a mapping, got {config!r}")
    for key, value in dict(config or {}).items():
        if key not in _CAMERA_CONFIG_KEYS:
            raise WbsimError(
                f"{env_id}: unknown default_camera_config key {key!r}; known: "
                f"{', '.join(_CAMERA_CONFIG_KEYS)} (the free camera follows a body, "
                "so it takes no lookat)"
            )
        integer = key == "trackbodyid"
        if not (is_real(value) and (isinstance(value, numbers.Integral) or not integer)) or (
            integer and not 0 <= value < model.nbody
        ):
            raise WbsimError(
                f"{env_id}: default_camera_config[{key!r}] must be "
                + (f"a body id in 0..{model.nbody - 1}" if integer else "a number")
                + f", got {value!r}"
            )
        bounds = {
            "distance": (0.0, math.inf, "> 0 m"),
            "elevation": (-90.0, 90.0, "in -90..90 deg"),
        }
        if key in bounds:
            lo, hi, text = bounds[key]
            if not (lo < value <= hi if key == "distance" else lo <= value <= hi):
                raise WbsimError(
                    f"{env_id}: default_camera_config[{key!r}] must be {text}, got {value!r} "
                    "(the free camera would look away from the robot)"
                )
        out[_CAMERA_CONFIG_KEYS[key]] = value
    vis = model.vis.global_
    if render_mode in ("rgb_array", "depth_array") and not (
        width <= vis.offwidth and height <= vis.offheight
    ):
        raise WbsimError(
            f"{env_id}: frame size {width}x{height}: the renderer's off-screen buffer "
            f"holds up to {vis.offwidth}x{vis.offheight} pixels"
        )
    return out


def plan_parameters(plan: Callable[..., Any] | None) -> list[str]:
    """The keyword parameters of a plan factory (the env options it takes), sorted; none for
    ``None`` (the standing plan)."""
    import inspect

    if plan is None:
        return []
    try:
        params = inspect.signature(plan).parameters
    except (TypeError, ValueError):
        return []
    return sorted(
        p for p, v in params.items() if v.kind in (v.POSITIONAL_OR_KEYWORD, v.KEYWORD_ONLY)
    )


def route_plan_options(
    kwargs: dict[str, Any], defaults: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``kwargs`` (env options, with ``defaults`` under them, e.g. a registered id's) with every
    key that is a parameter of the ``plan`` factory and not a :class:`HumanoidEnv` option moved into
    ``plan_options`` (so ``speed=0.3`` reaches a walking plan)."""
    import inspect

    merged = {**dict(defaults or {}), **kwargs}
    plan = merged.get("plan", standing_plan)
    own = set(inspect.signature(HumanoidEnv).parameters)
    moved = {k: merged.pop(k) for k in list(merged) if k not in own and k in plan_parameters(plan)}
    if moved:
        merged["plan_options"] = {**dict(merged.get("plan_options") or {}), **moved}
    return merged


def check_option_names(
    options: Mapping[str, Any],
    env_id: str,
    plan: Callable[..., Any] | None,
    residual: bool = True,
    exclude: tuple[str, ...] = (),
) -> None:
    """Raise :class:`~wbsim.errors.UnknownNameError` for a key of ``options`` that no env takes,
    listing those it takes: :class:`HumanoidEnv`'s options, the residual mode's
    (:func:`make_humanoid_env`; if ``residual``) and the parameters of the ``plan`` factory, less
    ``exclude``. Every door to an env checks its options here (``gymnasium.make``,
    :func:`wbsim.envs.make`, :func:`wbsim.envs.make_humanoid`,
    :func:`wbsim.envs.register_robot_env`), so each says what it takes instead of Python's
    "unexpected keyword argument"."""
    import inspect

    from wbsim.errors import UnknownNameError

    known = [
        *(p for p in inspect.signature(HumanoidEnv).parameters if p != "env_id"),
        *(_RESIDUAL_DEFAULTS if residual else ()),
        *plan_parameters(plan),
    ]
    known = [k for k in known if k not in exclude]
    for key in options:
        if key not in known:
            raise UnknownNameError("option", key, known, context=f"of env {env_id!r}")


#: the options of ``action_mode="residual"`` only, with their defaults there
_RESIDUAL_DEFAULTS: Mapping[str, Any] = {
    "controller": "gravity_qp",
    "residual_scale": 0.1,
    "controller_options": None,
}


def make_humanoid_env(
    action_mode: str = "torque",
    controller: str | None = None,
    residual_scale: float | None = None,
    controller_options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> gym.Env:
    """The registered entry point: a :class:`HumanoidEnv`, wrapped in
    :class:`~wbsim.envs.wrappers.ControllerInTheLoop` for ``action_mode="residual"``.

    Args:
        action_mode: ``"torque"``, ``"joint_position"`` or ``"residual"``.
        controller: residual mode only: a registered controller name (default ``"gravity_qp"``).
        residual_scale: residual mode only: fraction of the effort limit an action of 1 adds
            (default 0.1).
        controller_options: residual mode only: keyword options of the controller.
        kwargs: :class:`HumanoidEnv` options.

    Raises:
        UnknownNameError: an option that is none of the env's, the residual mode's or the
            plan's (the message lists them).
        WbsimError: ``controller``, ``residual_scale`` or ``controller_options`` given (not
            ``None``) with another action mode, which would ignore them; and as
            :class:`HumanoidEnv` and :class:`~wbsim.envs.wrappers.ControllerInTheLoop`.
    """
    given: dict[str, Any] = {
        "controller": controller,
        "residual_scale": residual_scale,
        "controller_options": controller_options,
    }
    check_option_names(
        {k: v for k, v in kwargs.items() if k != "env_id"},
        kwargs.get("env_id", "wbsim env"),
        kwargs.get("plan", standing_plan),
    )
    kwargs = route_plan_options(kwargs)
    if action_mode == "residual":
        from wbsim.envs.wrappers import ControllerInTheLoop

        opts = {k: _RESIDUAL_DEFAULTS[k] if v is None else v for k, v in given.items()}
        return ControllerInTheLoop(
            HumanoidEnv(action_mode="torque", **kwargs),
            opts["controller"],
            residual_scale=opts["residual_scale"],
            controller_options=opts["controller_options"],
        )
    extra = [k for k, v in given.items() if v is not None]
    if extra and action_mode in ("torque", "joint_position"):  # (an unknown mode: HumanoidEnv says)
        raise WbsimError(
            f"{kwargs.get('env_id', 'wbsim env')}: {', '.join(extra)} "
            f'need{"s" if len(extra) == 1 else ""} action_mode="residual" (got '
            f"action_mode={action_mode!r}, which would ignore "
            f"{'it' if len(extra) == 1 else 'them'})"
        )
    return HumanoidEnv(action_mode=action_mode, **kwargs)


#: the render modes ``gymnasium.make`` reads from an entry point: with them it turns
#: ``render_mode="rgb_array_list"`` (or ``"depth_array_list"``) into ``"rgb_array"`` and Gymnasium's
#: ``RenderCollection`` wrapper, as for its MuJoCo envs; without them the env refused the mode
make_humanoid_env.metadata = HumanoidEnv.metadata  # type: ignore[attr-defined]
