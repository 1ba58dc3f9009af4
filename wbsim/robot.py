"""Loading a humanoid once for both MuJoCo (simulation) and Pinocchio (model), from one description.

:func:`load_robot` resolves a name or a path, builds the MuJoCo model with ``mujoco.MjSpec`` (scene of
``assets/scene.xml`` or the config's own scene, free joint, contact spheres at the sole points and at
the points of any hand configured to touch the scene, torque motors, armature and damping) and the
Pinocchio model from the same description (free-flyer, same inertias, same armature, a frame at every
contact point), and returns a :class:`Robot`. State conversion is delegated to
:class:`wbsim.conventions.StateConverter`.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import importlib
import importlib.metadata
import importlib.util
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import mujoco
import numpy as np
import pinocchio as pin

from wbsim.contacts import add_contact_sensors, surface_frame
from wbsim.conventions import StateConverter, quat_wxyz_to_xyzw
from wbsim.description import (
    Description,
    mujoco_spec,
    pinocchio_model,
    read_description,
    sole_corners,
)
from wbsim.errors import NoFeetError, RobotLoadError, UnknownNameError, WbsimError
from wbsim.parity import check_models
from wbsim.robot_config import (
    CORNER_NAMES,
    FOOT_NAMES,
    HAND_NAMES,
    ROBOTS,
    ContactConfig,
    RobotConfig,
)

__all__ = [
    "FREE_JOINT",
    "Contact",
    "Foot",
    "Pose",
    "Robot",
    "example_robot_data_dir",
    "is_robot_path",
    "load_robot",
    "resolve_config",
]

#: Name of the MuJoCo free joint at the robot's root.
FREE_JOINT = "floating_base"
#: Collision bits (see ``assets/scene.xml``): robot geoms touch the floor and never each other.
ROBOT_CONTYPE, ROBOT_CONAFFINITY = 2, 0
#: Contact stiffness of every robot collision geom and the floor: time constant 5 ms (2.5 steps of
#: 2 ms, MuJoCo's advice is >= 2), critical damping. MuJoCo's default 20 ms lets a G1 dropped from 5 cm
#: sink 6 mm into the floor; 5 ms keeps it under 2 mm (tests/test_robot.py measures it).
CONTACT_SOLREF = (0.005, 1.0)
#: Geom group of collision geoms (hidden by MuJoCo's default rendering; visuals are group 1).
COLLISION_GROUP = 3
#: A sole sphere that MuJoCo finds at most this far above its surface right after a placement on
#: the floor is meant to touch it, m: the distance is the round-off between MuJoCo's and Pinocchio's
#: kinematics (up to ~1e-14 m), far below any real gap (:func:`_touching_height`).
ROUNDOFF_GAP = 1e-9


@functools.cache
def example_robot_data_dir() -> Path:
    """The ``robots`` folder of the installed ``example-robot-data`` pip package.

    Raises:
        RobotLoadError: the package is not installed or its files are missing.
    """
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        raise RobotLoadError(
            "the pip package 'example-robot-data' is not installed (pip install example-robot-data)"
        ) from None
    for f in dist.files or ():
        parts = Path(str(f)).parts
        if "example-robot-data" in parts and "robots" in parts:
            i = parts.index("robots")
            path = Path(str(dist.locate_file(Path(*parts[: i + 1]))))
            if path.is_dir():
                return path.resolve()
    raise RobotLoadError("example-robot-data is installed but its 'robots' folder was not found")


@dataclass(frozen=True)
class Contact:
    """A contact patch of a loaded robot: a foot's sole on the floor, or a hand on a surface of
    the scene (:attr:`wbsim.robot_config.RobotConfig.hands`).

    Attributes:
        name: ``"left_foot"``, ``"right_foot"``, ``"left_hand"`` or ``"right_hand"``.
        link: the link (MuJoCo body, Pinocchio frame) the patch is attached to.
        point_names: names of the 4 contact points (MuJoCo geom and site, Pinocchio frame),
            ``f"{name}_{corner}"`` in :data:`~wbsim.robot_config.CORNER_NAMES` order.
        points_in_foot: ``(4, 3)`` contact point positions in the link frame, m.
        sphere_radius: radius (m) of each point's collision sphere.
        mj_body_id: MuJoCo body id of ``link``.
        mj_geom_ids: ``(4,)`` MuJoCo geom ids of the contact spheres.
        mj_site_ids: ``(4,)`` MuJoCo site ids at the contact points.
        pin_frame_id: Pinocchio frame id of ``link``.
        pin_point_frame_ids: ``(4,)`` Pinocchio frame ids of the contact points.
        surface: name of the scene geom the patch touches (``"floor"`` for a foot).
        mj_surface_geom_id: its MuJoCo geom id.
        surface_rotation: ``(3, 3)`` the contact frame of that surface, world (columns ``x, y,
            z``; ``z`` its normal, towards the robot; ``x``, ``y`` the axes of MuJoCo's friction
            pyramid there, :func:`wbsim.contacts.contact_frame`): the identity for the floor.
            Read-only.
    """

    name: str
    link: str
    point_names: tuple[str, ...]
    points_in_foot: np.ndarray
    sphere_radius: float
    mj_body_id: int
    mj_geom_ids: tuple[int, ...]
    mj_site_ids: tuple[int, ...]
    pin_frame_id: int
    pin_point_frame_ids: tuple[int, ...]
    surface: str = "floor"
    mj_surface_geom_id: int = -1
    surface_rotation: np.ndarray = dataclasses.field(default_factory=lambda: np.eye(3))


#: A foot's contact patch: the same class (the name the feet's users know).
Foot = Contact


@dataclass(frozen=True)
class Pose:
    """A named configuration.

    Attributes:
        name: pose name.
        base_position: ``(3,)`` base origin in the world frame, m.
        base_quaternion_wxyz: ``(4,)`` base orientation, ``(w, x, y, z)``.
        joints: joint name -> angle (rad), every actuated joint.
    """

    name: str
    base_position: np.ndarray
    base_quaternion_wxyz: np.ndarray
    joints: Mapping[str, float]


class Robot:
    """A humanoid that MuJoCo simulates and Pinocchio models, built from one description.

    Use :func:`load_robot` to make one. Public attributes:

    Attributes:
        name: robot name (``"g1"``).
        config: the :class:`~wbsim.robot_config.RobotConfig` it was built from, completed with what
            was found at load (sole corners, stand pose): ``load_robot(robot.config)`` builds the
            same robot without searching again.
        mj_model: ``mujoco.MjModel`` of the robot in the scene (floor, lights, cameras).
        pin_model: ``pinocchio.Model`` with a free-flyer root (root joint ``"root_joint"``).
        joint_names: actuated joint names; the order of ``ctrl``, of ``tau`` vectors and of every
            per-joint array in wbsim.
        effort_limits: ``(n_joints,)`` torque limits, N·m (``inf`` where the description has none).
        joint_limits: ``(n_joints, 2)`` lower and upper position limits, rad.
        poses: pose name -> :class:`Pose` (at least ``"stand"`` for the built-in robots).
        converter: the :class:`~wbsim.conventions.StateConverter` between the two state conventions.
        floor_geom_id: MuJoCo geom id of the floor.
        total_mass: kg.
    """

    def __init__(
        self,
        config: RobotConfig,
        mj_model: mujoco.MjModel,
        pin_model: pin.Model,
        joint_names: tuple[str, ...],
        effort_limits: np.ndarray,
        contacts: dict[str, Contact] | None,
        poses: dict[str, Pose],
    ):
        self.name = config.name
        self.config = config
        self.mj_model = mj_model
        self.pin_model = pin_model
        self.joint_names = joint_names
        self.effort_limits = effort_limits
        contacts = contacts or {}
        feet = {n: c for n, c in contacts.items() if n in FOOT_NAMES}
        self._feet = MappingProxyType(feet) if feet else None
        self._hands = MappingProxyType({n: c for n, c in contacts.items() if n in HAND_NAMES})
        self.poses = MappingProxyType(poses)
        self.converter = StateConverter(mj_model, pin_model, joint_names, FREE_JOINT)
        self.joint_limits = _joint_ranges(mj_model, joint_names)
        self.floor_geom_id = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
        self.total_mass = float(pin.computeTotalMass(pin_model))

    # -- sizes and names ---------------------------------------------------------------------------
    @property
    def n_joints(self) -> int:
        """Number of actuated joints."""
        return len(self.joint_names)

    @property
    def has_feet(self) -> bool:
        return self._feet is not None

    @property
    def feet(self) -> Mapping[str, Contact]:
        """``"left_foot"``, ``"right_foot"`` -> :class:`Contact`. Raises :class:`NoFeetError` if
        none."""
        if self._feet is None:
            raise NoFeetError(self.name)
        return self._feet

    def foot(self, name: str) -> Contact:
        """The foot called ``name``; raises :class:`UnknownNameError` or :class:`NoFeetError`."""
        feet = self.feet
        if name not in feet:
            raise UnknownNameError("foot", name, feet)
        return feet[name]

    @property
    def hands(self) -> Mapping[str, Contact]:
        """The hands configured to touch the scene (``"right_hand"``, ...) -> :class:`Contact`;
        empty for most robots."""
        return self._hands

    @functools.cached_property
    def contacts(self) -> Mapping[str, Contact]:
        """Every contact patch: the feet, then the hands (:attr:`contact_names` order). Raises
        :class:`NoFeetError` without feet."""
        return MappingProxyType({**self.feet, **self._hands})

    def contact(self, name: str) -> Contact:
        """The foot or hand called ``name``; raises :class:`UnknownNameError` (listing the
        contacts) or :class:`NoFeetError`."""
        contacts = self.contacts
        if name not in contacts:
            raise UnknownNameError("contact", name, contacts)
        return contacts[name]

    @property
    def foot_names(self) -> tuple[str, ...]:
        """The feet's names (``"left_foot"``, ``"right_foot"``). Empty for a robot without
        feet."""
        return tuple(self._feet) if self._feet else ()

    @property
    def contact_names(self) -> tuple[str, ...]:
        """The contacts' names, the feet first, then the hands: the order of every per-contact
        array (e.g. :attr:`wbsim.types.Command.foot_wrenches`, the sensed and assumed contacts
        of :class:`wbsim.types.StepChunk`). :attr:`foot_names` for a robot without hands; empty
        for a robot without feet."""
        return (*self.foot_names, *self._hands) if self._feet else ()

    @functools.cached_property
    def contact_point_names(self) -> tuple[str, ...]:
        """All contact point names, the soles' first (left foot first), then the hands': the
        order of every per-point array (e.g. :attr:`wbsim.types.Command.point_forces`). Raises
        :class:`NoFeetError` without feet."""
        return tuple(n for f in self.contacts.values() for n in f.point_names)

    # -- states ------------------------------------------------------------------------------------
    def mj_to_pin(self, qpos: np.ndarray, qvel: np.ndarray | None = None):
        """MuJoCo ``(qpos (nq,), qvel (nv,))`` -> Pinocchio ``(q (nq,), v (nv,))``; see
        :mod:`wbsim.conventions` for the frames. ``v`` is ``None`` if ``qvel`` is."""
        return self.converter.mj_to_pin(qpos, qvel)

    def pin_to_mj(self, q: np.ndarray, v: np.ndarray | None = None):
        """Pinocchio ``(q (nq,), v (nv,))`` -> MuJoCo ``(qpos (nq,), qvel (nv,))``."""
        return self.converter.pin_to_mj(q, v)

    def pose(self, name: str = "stand") -> Pose:
        """The named :class:`Pose`; raises :class:`UnknownNameError` listing the known poses."""
        if name not in self.poses:
            raise UnknownNameError("pose", name, self.poses)
        return self.poses[name]

    def pose_q(self, name: str = "stand") -> np.ndarray:
        """Pinocchio configuration ``q (nq,)`` of a named pose."""
        return self.configuration(**_pose_kwargs(self.pose(name)))

    def pose_qpos(self, name: str = "stand") -> np.ndarray:
        """MuJoCo ``qpos (nq,)`` of a named pose."""
        return self.pin_to_mj(self.pose_q(name))[0]

    def configuration(
        self,
        base_position=(0.0, 0.0, 0.0),
        base_quaternion_wxyz=(1.0, 0.0, 0.0, 0.0),
        joints: Mapping[str, float] | None = None,
    ) -> np.ndarray:
        """Pinocchio ``q (nq,)`` from a base pose (world frame, ``(w, x, y, z)``) and joints by name.

        Joints not named are 0. Raises :class:`UnknownNameError` for a joint that does not exist.
        """
        q = pin.neutral(self.pin_model)
        q[0:3] = base_position
        quat = np.asarray(base_quaternion_wxyz, dtype=float)
        q[3:7] = quat_wxyz_to_xyzw(quat / np.linalg.norm(quat))
        idx = dict(zip(self.joint_names, self.converter.pin_qidx))
        for name, value in (joints or {}).items():
            if name not in idx:
                raise UnknownNameError("joint", name, self.joint_names)
            q[idx[name]] = value
        return q

    def on_floor(self, q: np.ndarray) -> np.ndarray:
        """A copy of the configuration ``q (nq,)`` with the base moved vertically so that the
        lowest sole point touches the floor (e.g. after noise was added to the joints): at
        ``z = 0`` (Pinocchio), then lowered by MuJoCo's round-off if MuJoCo finds its sphere above
        the floor (:func:`_touching_height`), so that MuJoCo counts the contact from the first
        step. Raises :class:`NoFeetError` without feet."""
        frames = [i for f in self.feet.values() for i in f.pin_point_frame_ids]
        out = np.array(q, dtype=float)
        out[2] -= _lowest_point_height(self.pin_model, self._pin_data, out, frames)
        spheres = [(g, f.mj_surface_geom_id) for f in self.feet.values() for g in f.mj_geom_ids]
        out[2] = _touching_height(self.mj_model, self._mj_data, self.pin_to_mj(out)[0], spheres)
        return out

    @functools.cached_property
    def _pin_data(self) -> pin.Data:
        return self.pin_model.createData()

    @functools.cached_property
    def _mj_data(self) -> mujoco.MjData:
        return mujoco.MjData(self.mj_model)

    def copy(self) -> Robot:
        """The same robot with its own MuJoCo and Pinocchio models (deep copies): what an env
        sets on its model (the no-slip solver, the actuators' PD gains) stays its own."""
        return Robot(
            self.config,
            copy.deepcopy(self.mj_model),
            self.pin_model.copy(),
            self.joint_names,
            self.effort_limits.copy(),
            dict(self.contacts),
            dict(self.poses),
        )

    def make_data(self, pose: str | None = "stand") -> mujoco.MjData:
        """A fresh ``mujoco.MjData`` with ``qpos`` at the named pose (or the model default) and
        ``mj_forward`` run."""
        data = mujoco.MjData(self.mj_model)
        if pose is not None:
            data.qpos[:] = self.pose_qpos(pose)
        mujoco.mj_forward(self.mj_model, data)
        return data

    def __repr__(self) -> str:
        feet = ", ".join((*self._feet, *self._hands)) if self._feet else "no feet"
        return f"Robot({self.name!r}, {self.n_joints} joints, {self.total_mass:.2f} kg, {feet})"


def _pose_kwargs(pose: Pose) -> dict[str, Any]:
    return {
        "base_position": pose.base_position,
        "base_quaternion_wxyz": pose.base_quaternion_wxyz,
        "joints": pose.joints,
    }


# ------------------------------------------------------------------------------------------------
# building
# ------------------------------------------------------------------------------------------------
def _foot_bodies(pin_model: pin.Model, link: str) -> list[str]:
    """The links fixed to ``link`` (``link`` included): the bodies moved by the same joint."""
    joint = pin_model.frames[pin_model.getFrameId(link)].parentJoint
    return [
        f.name for f in pin_model.frames if f.type == pin.FrameType.BODY and f.parentJoint == joint
    ]


def _zero_posture_frames(pin_model: pin.Model, links: list[str]) -> dict[str, pin.SE3]:
    """World placement of each of ``links`` at the zero posture (root at the origin)."""
    data = pin_model.createData()
    pin.framesForwardKinematics(pin_model, data, pin.neutral(pin_model))
    return {n: data.oMf[pin_model.getFrameId(n)].copy() for n in links}


def _forward(placements: Mapping[str, pin.SE3], config: RobotConfig) -> np.ndarray:
    """The robot's forward direction (world, horizontal) at the zero posture: left of it is the
    left foot (``x`` when there are not two feet)."""
    if set(config.feet) != set(FOOT_NAMES):
        return np.array([1.0, 0.0, 0.0])
    left = placements[config.feet["left_foot"].link].translation
    right = placements[config.feet["right_foot"].link].translation
    lateral = np.array([*(left - right)[:2], 0.0])
    if np.linalg.norm(lateral) < 1e-9:
        raise RobotLoadError(
            f"{config.name}: the feet links are at the same place at the zero "
            "posture: which is the left one?"
        )
    return np.cross(lateral / np.linalg.norm(lateral), [0.0, 0.0, 1.0])


def _check_feet(config: RobotConfig, pin_model: pin.Model) -> None:
    """The links the config names (feet, hands, the torso that pushes act on) exist."""
    named = [
        ("foot" if name in FOOT_NAMES else "hand", foot.link)
        for name, foot in config.contacts.items()
    ]
    if config.torso:
        named.append(("torso", config.torso))
    for kind, link in named:
        if not pin_model.existFrame(link):
            links = sorted(f.name for f in pin_model.frames if f.type == pin.FrameType.BODY)
            raise RobotLoadError(
                f"{config.name}: {kind} link {link!r} is not in the "
                f"description; its links: {', '.join(links)}"
            )


def _with_sole_corners(
    config: RobotConfig, desc: Description, pin_model: pin.Model, placements: Mapping[str, pin.SE3]
) -> RobotConfig:
    """``config`` with the corners of every foot that has none found from its collision geoms
    (:func:`wbsim.description.sole_corners`)."""
    missing = [name for name, f in config.feet.items() if f.corners is None]
    if not missing:
        return config
    spec = mujoco_spec(desc, config.name)
    try:
        with _quiet_empty_prefix_warning():
            model = spec.compile()
    except ValueError as exc:
        raise RobotLoadError(f"{config.name}: MuJoCo cannot compile the model: {exc}") from exc
    forward = _forward(placements, config)
    feet = dict(config.feet)
    for name in missing:
        foot = feet[name]
        corners = sole_corners(
            model, _foot_bodies(pin_model, foot.link), foot.link, forward, config.name
        )
        feet[name] = dataclasses.replace(foot, corners=tuple(map(tuple, corners)))
    return dataclasses.replace(config, feet=feet)


def _build_mj_model(
    config: RobotConfig,
    robot_spec: mujoco.MjSpec,
    pin_model: pin.Model,
    placements: Mapping[str, pin.SE3],
) -> tuple[mujoco.MjSpec, tuple[str, ...]]:
    # Attach the robot to the scene with no prefix, so every name stays as in the description. MuJoCo
    # warns that such a spec may not save to XML correctly; wbsim never saves it (an XML round trip
    # would also round every inertia to 6 digits), so that one warning is silenced here and at compile.
    try:
        spec = mujoco.MjSpec.from_file(str(config.scene_path()))
    except ValueError as exc:
        raise RobotLoadError(
            f"{config.name}: MuJoCo cannot read the scene {config.scene_path()}: {exc}"
        ) from exc
    scene_geoms = [g.name for g in spec.geoms]
    if "" in scene_geoms:
        raise RobotLoadError(
            f"{config.name}: every geom of the scene {config.scene_path()} needs "
            "a name (robot geoms are told from scene geoms by name)"
        )
    for name, patch in (("floor", ContactConfig("", surface="floor")), *config.contacts.items()):
        if patch.surface not in scene_geoms:
            raise UnknownNameError(
                "scene geom",
                patch.surface,
                scene_geoms,
                context=f"(the surface of {name} of {config.name}; scene {config.scene_path()})",
            )
    with _quiet_empty_prefix_warning():
        spec.attach(robot_spec, frame=spec.worldbody.add_frame(), prefix="")
    root = spec.worldbody.first_body()
    while root is not None and root.name == "":
        root = spec.worldbody.next_body(root)
    spec.body(root.name).add_freejoint(name=FREE_JOINT)

    sole_bodies = {b for f in config.contacts.values() for b in _foot_bodies(pin_model, f.link)}
    scene = set(scene_geoms)
    for geom in list(spec.geoms):
        if geom.name in scene:
            continue
        if geom.contype == 0 and geom.conaffinity == 0:  # visual geom
            if config.visual_rgba is not None:
                geom.material, geom.rgba = "", list(config.visual_rgba)
            continue
        if geom.parent.name in sole_bodies:
            spec.delete(geom)  # replaced by the sole spheres below
            continue
        geom.contype, geom.conaffinity, geom.group = (
            ROBOT_CONTYPE,
            ROBOT_CONAFFINITY,
            COLLISION_GROUP,
        )
        geom.solref = CONTACT_SOLREF
    for foot_name, foot in config.contacts.items():
        body = spec.body(foot.link)
        # the sphere's centre inside its corner, against the patch's outward normal (link frame):
        # for a sole without one, upwards at the zero posture
        inward = (
            placements[foot.link].rotation.T @ np.array([0.0, 0.0, 1.0])
            if foot.normal is None
            else -np.asarray(foot.normal)
        )
        assert foot.corners is not None  # found by _with_sole_corners
        for corner, p in zip(CORNER_NAMES, foot.corners):
            name = f"{foot_name}_{corner}"
            body.add_geom(
                name=name,
                type=mujoco.mjtGeom.mjGEOM_SPHERE,
                size=[foot.sphere_radius, 0, 0],
                pos=list(np.asarray(p) + foot.sphere_radius * inward),
                contype=ROBOT_CONTYPE,
                conaffinity=ROBOT_CONAFFINITY,
                group=COLLISION_GROUP,
                rgba=[0.9, 0.5, 0.1, 1],
                mass=0.0,
                density=0.0,
                solref=CONTACT_SOLREF,
            )
            body.add_site(name=name, pos=list(p), size=[0.006, 0, 0], group=4)
    points = [
        (f"{n}_{c}", f"{n}_{c}", patch.surface)
        for n, patch in config.contacts.items()
        for c in CORNER_NAMES
    ]
    add_contact_sensors(spec, points, floor="floor", robot_root=root.name)

    joint_names: list[str] = []
    for joint in spec.joints:
        if joint.type == mujoco.mjtJoint.mjJNT_FREE:
            continue
        if joint.type not in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            raise RobotLoadError(f"{config.name}: joint {joint.name!r} is not 1-DoF")
        dyn = config.dynamics_of(joint.name)
        joint.armature, joint.frictionloss = dyn.armature, dyn.frictionloss
        joint.damping = [dyn.damping, 0.0, 0.0]  # MjSpec stores damping as a 3-vector in 4.x
        joint_names.append(joint.name)
    return spec, tuple(joint_names)


_EMPTY_PREFIX_WARNING = "Attaching a spec with an empty prefix"


@contextlib.contextmanager
def _quiet_empty_prefix_warning():
    """Silence MuJoCo's warning about attaching with an empty prefix; other warnings pass through."""
    others: list[str] = []
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(
        lambda msg: None if _EMPTY_PREFIX_WARNING in msg else others.append(msg)
    )
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_EMPTY_PREFIX_WARNING)
            yield
    finally:
        mujoco.set_mju_user_warning(previous)
        for msg in others:
            warnings.warn(f"MuJoCo: {msg}", stacklevel=3)


def _effort_limits(pin_model: pin.Model, joint_names: tuple[str, ...]) -> np.ndarray:
    out = np.empty(len(joint_names))
    for i, name in enumerate(joint_names):
        idx_v = pin_model.joints[pin_model.getJointId(name)].idx_v
        e = float(pin_model.effortLimit[idx_v])
        out[i] = e if np.isfinite(e) and e > 0 else np.inf
    return out


def _add_motors(spec: mujoco.MjSpec, joint_names: tuple[str, ...], effort: np.ndarray) -> None:
    """One actuator per joint, in ``joint_names`` order: force ``ctrl + b1 q + b2 qdot`` (N·m),
    clipped to the effort limit. ``b1``, ``b2`` (an affine bias, 0 until set) hold a joint PD at the
    physics rate (:class:`wbsim.sim.Simulation`): MuJoCo's implicit integrators take its damping
    implicitly, so the PD is stable whatever its gains and the contacts."""
    for name, limit in zip(joint_names, effort):
        act = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_motor()
        act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        act.biasprm = np.zeros(len(act.biasprm))
        if np.isfinite(limit):
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.forcerange = [-limit, limit]


def _finish_pin_model(config: RobotConfig, model: pin.Model, joint_names: tuple[str, ...]) -> None:
    """Set the armature of ``joint_names`` and add a frame at every contact point."""
    for name in joint_names:
        if not model.existJointName(name):
            raise RobotLoadError(
                f"{config.name}: joint {name!r} is missing from the Pinocchio model"
            )
        model.armature[model.joints[model.getJointId(name)].idx_v] = config.dynamics_of(
            name
        ).armature
    for foot_name, foot in config.contacts.items():
        parent = model.frames[model.getFrameId(foot.link)]
        assert foot.corners is not None  # found by _with_sole_corners
        for corner, p in zip(CORNER_NAMES, foot.corners):
            placement = parent.placement * pin.SE3(np.eye(3), np.asarray(p, dtype=float))
            model.addFrame(
                pin.Frame(
                    f"{foot_name}_{corner}",
                    parent.parentJoint,
                    model.getFrameId(foot.link),
                    placement,
                    pin.FrameType.OP_FRAME,
                )
            )


def _with_stand_pose(
    config: RobotConfig, model: pin.Model, joint_names: tuple[str, ...]
) -> RobotConfig:
    """``config`` with a ``"stand"`` pose found (:func:`wbsim.stand_pose.find_stand_pose`) when it
    has two feet and none."""
    if "stand" in config.poses or set(config.feet) != set(FOOT_NAMES):
        return config
    from wbsim.stand_pose import find_stand_pose

    feet = {n: model.getFrameId(f.link) for n, f in config.feet.items()}
    points = {n: [model.getFrameId(f"{n}_{c}") for c in CORNER_NAMES] for n in config.feet}
    try:
        stand = find_stand_pose(
            model,
            feet,
            points,
            joint_names,
            crouch=config.stand_crouch,
            posture=config.stand_posture,
        )
    except RobotLoadError as exc:
        raise RobotLoadError(f"{config.name}: {exc}") from None
    return dataclasses.replace(config, poses={"stand": stand, **config.poses})


def _lowest_point_height(
    model: pin.Model, data: pin.Data, q: np.ndarray, frame_ids: list[int]
) -> float:
    """Height (world z, m) of the lowest of the frames ``frame_ids`` at configuration ``q``."""
    pin.framesForwardKinematics(model, data, q)
    return min(float(data.oMf[f].translation[2]) for f in frame_ids)


def _touching_height(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    qpos: np.ndarray,
    spheres: list[tuple[int, int]],
) -> float:
    """The base height ``qpos[2]`` (m) of the MuJoCo configuration ``qpos (nq,)``, lowered just
    enough that MuJoCo's own distance (``mj_geomDistance``) of every sole sphere at most
    :data:`ROUNDOFF_GAP` above its surface is <= 0: MuJoCo then counts it as a contact at once,
    not one step later. ``qpos[2]`` itself, bit for bit, when no sphere is above its surface by
    round-off (one touching or in the surface is left alone).

    Args:
        model, data: the robot's MuJoCo model and a scratch ``MjData`` of it (``qpos`` overwritten,
            kinematics run).
        qpos: ``(nq,)`` the configuration, its lowest sole point placed on the floor.
        spheres: ``(sphere geom id, surface geom id)`` of every sole point.
    """

    def gaps() -> np.ndarray:
        mujoco.mj_kinematics(model, data)
        return np.array([mujoco.mj_geomDistance(model, data, g, s, 1.0, None) for g, s in spheres])

    data.qpos[:] = qpos
    z = float(qpos[2])
    gap = gaps()
    meant = gap <= ROUNDOFF_GAP  # the points placed on the floor
    for _ in range(8):  # one or two passes on a floor; bounded for a surface z barely moves to
        above = float(gap[meant].max(initial=0.0))
        if above <= 0:
            break
        z = min(z - above, float(np.nextafter(z, -np.inf)))  # at least one ulp: z must move
        data.qpos[2] = z
        gap = gaps()
    return z


def _make_poses(
    config: RobotConfig,
    pin_model: pin.Model,
    joint_names: tuple[str, ...],
    feet_cfg: Mapping[str, ContactConfig],
    forward: np.ndarray,
) -> dict[str, Pose]:
    """The named poses: the base level, turned about z so that the robot faces +x (its
    ``forward`` direction at the zero posture; iCub's base frame faces -x), its lowest sole point
    on the floor."""
    yaw = -float(np.arctan2(forward[1], forward[0]))
    quat = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
    if abs(yaw) < 1e-12:
        quat = np.array([1.0, 0.0, 0.0, 0.0])
    poses = {}
    data = pin_model.createData()
    for pose_name, joints in config.poses.items():
        for j in joints:
            if j not in joint_names:
                raise UnknownNameError("joint", j, joint_names)
        full = {name: float(joints.get(name, 0.0)) for name in joint_names}
        q = pin.neutral(pin_model)
        q[3:7] = quat_wxyz_to_xyzw(quat)
        for name, value in full.items():
            iq = pin_model.joints[pin_model.getJointId(name)].idx_q
            lo, hi = pin_model.lowerPositionLimit[iq], pin_model.upperPositionLimit[iq]
            if not lo - 1e-6 <= value <= hi + 1e-6:
                raise RobotLoadError(
                    f"{config.name}: pose {pose_name!r}: {name} = {value:g} rad is outside its "
                    f"limits [{lo:.4g}, {hi:.4g}]"
                )
            q[iq] = value
        height = config.base_height
        if feet_cfg:
            frames = [pin_model.getFrameId(f"{f}_{c}") for f in feet_cfg for c in CORNER_NAMES]
            height = -_lowest_point_height(pin_model, data, q, frames)
        poses[pose_name] = Pose(
            pose_name, np.array([0.0, 0.0, height]), quat.copy(), MappingProxyType(full)
        )
    return poses


_BUILD_CACHE: dict[str, tuple] = {}


def _build(config: RobotConfig):
    """Build (once per configuration and process) the compiled models; callers copy them. The
    completed configuration (:func:`_build_uncached`) is cached too: a robot rebuilt from its
    ``config`` (an env unpickled) is not built again."""
    key = repr(config)
    if key not in _BUILD_CACHE:
        built = _build_uncached(config)
        _BUILD_CACHE[key] = _BUILD_CACHE.setdefault(repr(built[0]), built)
    return _BUILD_CACHE[key]


def _build_uncached(config: RobotConfig):
    """``(completed config, mj_model, pin_model, joint_names, effort, poses)``; the completed
    config is ``config`` with the sole corners and the stand pose found at load filled in."""
    desc = read_description(config.description, config.name, config.locked_joints)
    pin_model = pinocchio_model(desc, config.name)
    _check_feet(config, pin_model)
    placements = _zero_posture_frames(pin_model, [f.link for f in config.contacts.values()])
    config = _with_sole_corners(config, desc, pin_model, placements)
    spec, joint_names = _build_mj_model(
        config, mujoco_spec(desc, config.name), pin_model, placements
    )
    _finish_pin_model(config, pin_model, joint_names)
    config = _with_stand_pose(config, pin_model, joint_names)
    effort = _effort_limits(pin_model, joint_names)
    _add_motors(spec, joint_names, effort)
    poses = _make_poses(config, pin_model, joint_names, config.feet, _forward(placements, config))
    for pose in poses.values():
        q = pin.neutral(pin_model)
        q[0:3] = pose.base_position
        q[3:7] = quat_wxyz_to_xyzw(pose.base_quaternion_wxyz)
        for name, value in pose.joints.items():
            q[pin_model.joints[pin_model.getJointId(name)].idx_q] = value
        spec.add_key(name=pose.name, qpos=_pin_q_to_mj_qpos_by_name(spec, pin_model, q))
    try:
        with _quiet_empty_prefix_warning():
            mj_model = spec.compile()
    except ValueError as exc:
        raise RobotLoadError(f"{config.name}: MuJoCo cannot compile the model: {exc}") from exc
    poses = _touching_poses(config, mj_model, poses)
    converter = StateConverter(mj_model, pin_model, joint_names, FREE_JOINT)
    check_models(config.name, mj_model, pin_model, converter, _joint_ranges(mj_model, joint_names))
    return config, mj_model, pin_model, joint_names, effort, poses


def _touching_poses(
    config: RobotConfig, mj_model: mujoco.MjModel, poses: dict[str, Pose]
) -> dict[str, Pose]:
    """``poses`` (their lowest sole point at ``z = 0`` by Pinocchio, :func:`_make_poses`) with
    each base lowered by MuJoCo's round-off (:func:`_touching_height`), and ``mj_model``'s
    keyframes with them: at a flat-footed pose MuJoCo sees every sole sphere touch the floor."""
    if not config.feet:
        return poses

    def geom(name: str) -> int:
        return mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_GEOM, name)

    spheres = [
        (geom(f"{n}_{c}"), geom(f.surface)) for n, f in config.feet.items() for c in CORNER_NAMES
    ]
    data = mujoco.MjData(mj_model)
    out = {}
    for name, pose in poses.items():
        key = mj_model.key(name).id
        z = _touching_height(mj_model, data, mj_model.key_qpos[key], spheres)
        mj_model.key_qpos[key, 2] = z
        position = np.array([pose.base_position[0], pose.base_position[1], z])
        out[name] = dataclasses.replace(pose, base_position=position)
    return out


def _joint_ranges(mj_model: mujoco.MjModel, joint_names: tuple[str, ...]) -> np.ndarray:
    """``(n_joints, 2)`` MuJoCo's joint ranges, rad (``inf`` where unlimited)."""
    jids = [mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in joint_names]
    return np.array(
        [mj_model.jnt_range[j] if mj_model.jnt_limited[j] else (-np.inf, np.inf) for j in jids]
    ).reshape(-1, 2)


def _pin_q_to_mj_qpos_by_name(spec: mujoco.MjSpec, pin_model: pin.Model, q: np.ndarray) -> list:
    """Keyframe qpos, in the spec's joint order (before compiling, so no StateConverter yet)."""
    qpos: list[float] = []
    for joint in spec.joints:
        if joint.type == mujoco.mjtJoint.mjJNT_FREE:
            qpos += [*q[0:3], q[6], q[3], q[4], q[5]]
        else:
            qpos.append(float(q[pin_model.joints[pin_model.getJointId(joint.name)].idx_q]))
    return qpos


def _contacts(
    config: RobotConfig, mj_model: mujoco.MjModel, pin_model: pin.Model
) -> dict[str, Contact]:
    """The :class:`Contact` of every foot and hand of ``config`` (feet first, in
    :data:`FOOT_NAMES`, then :data:`HAND_NAMES` order)."""
    out = {}
    frames: dict[int, np.ndarray] = {}
    for name in (*FOOT_NAMES, *HAND_NAMES):
        fc = config.contacts.get(name)
        if fc is None:
            continue
        names = tuple(f"{name}_{c}" for c in CORNER_NAMES)
        surface = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_GEOM, fc.surface)
        if surface not in frames:
            try:
                frames[surface] = surface_frame(mj_model, surface)[0]
            except WbsimError as exc:
                raise RobotLoadError(f"{config.name}: {name}: {exc}") from None
            frames[surface].setflags(write=False)
        out[name] = Contact(
            name=name,
            link=fc.link,
            point_names=names,
            points_in_foot=np.array(fc.corners),
            sphere_radius=fc.sphere_radius,
            mj_body_id=mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_BODY, fc.link),
            mj_geom_ids=tuple(
                mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_GEOM, n) for n in names
            ),
            mj_site_ids=tuple(
                mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_SITE, n) for n in names
            ),
            pin_frame_id=pin_model.getFrameId(fc.link),
            pin_point_frame_ids=tuple(pin_model.getFrameId(n) for n in names),
            surface=fc.surface,
            mj_surface_geom_id=surface,
            surface_rotation=frames[surface],
        )
    return out


def _read_description(config: RobotConfig) -> tuple[Path, str]:
    """``(path, text)`` of ``config``'s description as both parsers read it
    (:func:`wbsim.description.read_description`)."""
    desc = read_description(config.description, config.name, config.locked_joints)
    return desc.path, desc.text


#: Suffixes of the description files :func:`load_robot` reads, and of robot config files.
_DESCRIPTION_SUFFIXES = (".urdf", ".xml")
_CONFIG_SUFFIXES = (".toml", ".json")


def is_robot_path(text: str) -> bool:
    """Whether :func:`resolve_config` takes ``text`` as a file (a description or a config) rather
    than a name: it has a folder separator or a description or config suffix."""
    return os.sep in text or text.lower().endswith(_DESCRIPTION_SUFFIXES + _CONFIG_SUFFIXES)


def resolve_config(
    name_or_path: str | os.PathLike | RobotConfig | Mapping[str, Any],
    config: RobotConfig | Mapping | str | os.PathLike | None = None,
) -> RobotConfig:
    """The :class:`RobotConfig` that :func:`load_robot` builds for the same arguments, without
    building anything (cheap: a command checks its robot before any work).

    ``name_or_path`` may also be a :class:`RobotConfig`'s fields as a dict
    (:meth:`RobotConfig.to_dict`: how a run's ``config.json`` records a robot given as a config).

    Raises:
        UnknownNameError: an unknown name (the message lists the built-in robots and the other
            forms).
        RobotLoadError: a missing file, a ``robot_descriptions`` description not in its cache.
        WbsimError: a config file that does not parse, or with unknown keys.
    """
    if isinstance(name_or_path, RobotConfig):
        return name_or_path
    if isinstance(name_or_path, Mapping):
        if config is not None:
            raise RobotLoadError("a robot given as a dict of config fields takes no second config")
        try:
            return RobotConfig.from_dict(name_or_path)
        except TypeError as exc:  # a missing field or a value of the wrong kind
            raise WbsimError(f"robot config fields: {exc}") from None
    text = str(name_or_path)
    is_path = is_robot_path(text)
    if is_path and not Path(text).expanduser().is_file():
        raise RobotLoadError(f"robot file not found: {Path(text).expanduser()}")
    if text.lower().endswith(_CONFIG_SUFFIXES):  # a config file that names its description
        if config is not None:
            raise RobotLoadError(
                f"{text} is a robot config; give a description (.urdf, .xml) "
                "or a robot name with a config, not two configs"
            )
        return RobotConfig.from_file(text)
    if is_path:
        description = str(Path(text).expanduser().resolve())
    elif text.endswith("_description"):
        description = _robot_descriptions_path(text)
    elif config is None and text in ROBOTS:
        return ROBOTS[text]
    elif config is None:
        known = [
            *ROBOTS,
            "<path to a .urdf, .xml or .toml>",
            "<robot_descriptions name, e.g. h1_mj_description>",
        ]
        raise UnknownNameError("robot", text, known)
    else:
        description = None  # a name with a config: the config's description
    name = Path(text).stem if is_path else text
    if config is None:
        assert description is not None  # a name without a config was answered above
        return RobotConfig(name=name, description=description)
    if isinstance(config, Mapping):
        return RobotConfig.from_dict(
            {"name": name, "description": description, **config}
            if description
            else {"name": name, **config}
        )
    if not isinstance(config, RobotConfig):
        path = Path(config)
        if path.suffix.lower() == ".toml":
            return RobotConfig.from_toml(path, description=description)
        config = RobotConfig.from_json(path)
    return dataclasses.replace(config, description=description) if description else config


def _cache_unusable(path: Path, commit: str) -> str | None:
    """Why ``robot_descriptions`` would go to the network for the repository cached at ``path``
    (it re-clones a folder that is not a git repository and fetches a commit it lacks), or
    ``None`` when the commit is there to check out offline."""
    if not path.is_dir():
        return "is missing"
    try:  # GitPython, robot_descriptions' own dependency (it needs the git program)
        from git import Repo
        from git.exc import GitCommandError, InvalidGitRepositoryError, NoSuchPathError
    except ImportError as exc:
        return f"cannot be read: {str(exc).splitlines()[0]}"
    try:
        repo = Repo(path)
    except (InvalidGitRepositoryError, NoSuchPathError):
        return "is not a git repository"
    try:
        repo.git.rev_parse("--verify", "--quiet", f"{commit}^{{commit}}")
    except GitCommandError:
        return f"lacks commit {commit[:12]}"
    return None


def _robot_descriptions_path(name: str) -> str:
    """The URDF or MJCF file of a ``robot_descriptions`` module (``"g1_description"``,
    ``"h1_mj_description"``), from ``robot_descriptions``' cache only: wbsim never clones.

    Raises:
        UnknownNameError: no such module.
        RobotLoadError: ``robot_descriptions`` is not installed, or the repository is not in its
            cache (``ROBOT_DESCRIPTIONS_CACHE``, default ``~/.cache/robot_descriptions``): the
            message says how to fill it.
    """
    if importlib.util.find_spec("robot_descriptions") is None:
        raise RobotLoadError("robot_descriptions is not installed (pip install robot_descriptions)")
    spec = importlib.util.find_spec(f"robot_descriptions.{name}")
    if spec is None or spec.origin is None:
        known = [
            *ROBOTS,
            "<path to a .urdf, .xml or .toml>",
            "<robot_descriptions name, e.g. h1_mj_description>",
        ]
        raise UnknownNameError("robot", name, known)
    match = re.search(r"clone_to_cache\(\s*[\"']([^\"']+)[\"']", Path(spec.origin).read_text())
    if match is not None:
        from robot_descriptions._repositories import REPOSITORIES

        repo = REPOSITORIES[match.group(1)]
        cache = Path(
            os.environ.get("ROBOT_DESCRIPTIONS_CACHE", "~/.cache/robot_descriptions")
        ).expanduser()
        why = _cache_unusable(cache / repo.cache_path, repo.commit)
        if why is not None:
            raise RobotLoadError(
                f"{name!r} is not in robot_descriptions' cache ({cache / repo.cache_path} {why}) "
                "and wbsim does not download it. Fill the cache on a machine with "
                f'network access: `ROBOT_DESCRIPTIONS_CACHE={cache} python -c "import '
                f'robot_descriptions.{name}"` (it clones {repo.url} at {repo.commit[:12]}), or '
                f"`git clone {repo.url} {cache / repo.cache_path}` and check out that commit; "
                "then copy the folder here"
            )
    try:
        module = importlib.import_module(f"robot_descriptions.{name}")
    except Exception as exc:  # git failures come as several exception types
        raise RobotLoadError(
            f"robot_descriptions could not load {name!r} from its cache: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    path = getattr(module, "URDF_PATH", None) or getattr(module, "MJCF_PATH", None)
    if path is None:
        raise RobotLoadError(f"robot_descriptions.{name} has neither URDF_PATH nor MJCF_PATH")
    return str(path)


def load_robot(
    name_or_path: str | os.PathLike | RobotConfig | Mapping[str, Any] = "g1",
    *,
    config: RobotConfig | Mapping | str | os.PathLike | None = None,
) -> Robot:
    """Load a humanoid for MuJoCo and Pinocchio.

    Args:
        name_or_path: a built-in robot (``"g1"``, the default, ``"talos"``, ``"icub"``,
            ``"romeo"``, ...; see :data:`wbsim.robot_config.ROBOTS`), a path to a URDF
            (``.urdf``) or MJCF (``.xml``) description, a robot config file (``.toml``, ``.json``)
            that names its description, a ``robot_descriptions`` module name
            (``"h1_mj_description"``, loaded from its cache only), a :class:`RobotConfig`, or a
            dict of its fields (:meth:`RobotConfig.to_dict`).
        config: for a description path or a ``robot_descriptions`` name: a :class:`RobotConfig`,
            a dict of its fields (``feet``, ``poses``, ...) or a TOML / JSON file of them. Without
            it the robot loads with no feet; :attr:`Robot.feet` then raises :class:`NoFeetError`.

    Returns:
        A new :class:`Robot` (its models are copies: changing them does not affect other loads).

    Raises:
        UnknownNameError: unknown name; the message lists the known robots.
        RobotLoadError: missing file, unparsable description, a ``robot_descriptions`` repository
            not in its cache, models that disagree (:func:`wbsim.parity.check_models`).
    """
    cfg = resolve_config(name_or_path, config)
    cfg, mj_model, pin_model, joint_names, effort, poses = _build(cfg)
    mj_model = copy.deepcopy(mj_model)
    pin_model = pin_model.copy()
    contacts = _contacts(cfg, mj_model, pin_model) if cfg.feet else None
    return Robot(cfg, mj_model, pin_model, joint_names, effort.copy(), contacts, dict(poses))
