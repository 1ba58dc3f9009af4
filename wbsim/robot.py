"""Loading a humanoid once for both MuJoCo (simulation) and Pinocchio (model), from one description.

:func:`load_robot` resolves a name or a path, builds the MuJoCo model with ``mujoco.MjSpec`` (scene of
``assets/scene.xml``, free joint, sole contact spheres, torque motors, armature and damping) and the
Pinocchio model from the same description (free-flyer, same inertias, same armature, a frame at every
sole point), and returns a :class:`Robot`. State conversion is delegated to
:class:`wbsim.conventions.StateConverter`.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import importlib.metadata
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

from wbsim.assets import SCENE_XML
from wbsim.contacts import add_contact_sensors
from wbsim.conventions import StateConverter, quat_wxyz_to_xyzw
from wbsim.errors import NoFeetError, RobotLoadError, UnknownNameError
from wbsim.parity import check_models
from wbsim.robot_config import CORNER_NAMES, FOOT_NAMES, ROBOTS, FootConfig, RobotConfig

__all__ = ["Robot", "Foot", "Pose", "load_robot", "example_robot_data_dir", "FREE_JOINT"]

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


def _resolve_package_uris(text: str, base_dir: Path) -> str:
    """Replace ``package://PKG/rest`` by an absolute path.

    ``PKG`` is looked for under example-robot-data's ``share`` folder, the folders on
    ``ROS_PACKAGE_PATH`` and the ancestors of ``base_dir``.
    """
    roots: list[Path] = []
    try:
        roots.append(example_robot_data_dir().parent.parent)  # .../share
    except RobotLoadError:
        pass
    roots += [Path(p) for p in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]
    roots += [base_dir, *base_dir.parents]

    def repl(match: re.Match) -> str:
        pkg, rest = match.group(1), match.group(2)
        for root in roots:
            if (root / pkg).is_dir():
                return str(root / pkg / rest)
            if root.name == pkg:
                return str(root / rest)
        raise RobotLoadError(f"cannot resolve package://{pkg}/{rest}: package {pkg!r} not found")

    return re.sub(r"package://([^/\"']+)/([^\"'<>]+)", repl, text)


@dataclass(frozen=True)
class Foot:
    """A foot of a loaded robot.

    Attributes:
        name: ``"left_foot"`` or ``"right_foot"``.
        link: the link (MuJoCo body, Pinocchio frame) the sole is attached to.
        point_names: names of the 4 sole contact points (MuJoCo geom and site, Pinocchio frame),
            ``f"{name}_{corner}"`` in :data:`~wbsim.robot_config.CORNER_NAMES` order.
        points_in_foot: ``(4, 3)`` contact point positions in the foot link frame, m.
        sphere_radius: radius (m) of each point's collision sphere.
        mj_body_id: MuJoCo body id of ``link``.
        mj_geom_ids: ``(4,)`` MuJoCo geom ids of the contact spheres.
        mj_site_ids: ``(4,)`` MuJoCo site ids at the contact points.
        pin_frame_id: Pinocchio frame id of ``link``.
        pin_point_frame_ids: ``(4,)`` Pinocchio frame ids of the contact points.
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
        config: the :class:`~wbsim.robot_config.RobotConfig` it was built from.
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

    def __init__(self, config: RobotConfig, mj_model: mujoco.MjModel, pin_model: pin.Model,
                 joint_names: tuple[str, ...], effort_limits: np.ndarray, feet: dict[str, Foot] | None,
                 poses: dict[str, Pose]):
        self.name = config.name
        self.config = config
        self.mj_model = mj_model
        self.pin_model = pin_model
        self.joint_names = joint_names
        self.effort_limits = effort_limits
        self._feet = MappingProxyType(feet) if feet else None
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
    def feet(self) -> Mapping[str, Foot]:
        """``"left_foot"``, ``"right_foot"`` -> :class:`Foot`. Raises :class:`NoFeetError` if none."""
        if self._feet is None:
            raise NoFeetError(self.name)
        return self._feet

    def foot(self, name: str) -> Foot:
        """The :class:`Foot` called ``name``; raises :class:`UnknownNameError` or :class:`NoFeetError`."""
        feet = self.feet
        if name not in feet:
            raise UnknownNameError("foot", name, feet)
        return feet[name]

    @property
    def foot_names(self) -> tuple[str, ...]:
        """The feet's names (``"left_foot"``, ``"right_foot"``): the order of every per-foot
        array (e.g. :attr:`wbsim.types.Command.foot_wrenches`). Empty for a robot without feet."""
        return tuple(self._feet) if self._feet else ()

    @functools.cached_property
    def contact_point_names(self) -> tuple[str, ...]:
        """All sole contact point names, left foot first: the order of every per-point array
        (e.g. :attr:`wbsim.types.Command.point_forces`). Raises :class:`NoFeetError` without
        feet."""
        return tuple(n for f in self.feet.values() for n in f.point_names)

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

    def configuration(self, base_position=(0.0, 0.0, 0.0), base_quaternion_wxyz=(1.0, 0.0, 0.0, 0.0),
                      joints: Mapping[str, float] | None = None) -> np.ndarray:
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
        lowest sole point touches the floor (``z = 0``): zero gap, no penetration (e.g. after
        noise was added to the joints). Raises :class:`NoFeetError` without feet."""
        frames = [i for f in self.feet.values() for i in f.pin_point_frame_ids]
        out = np.array(q, dtype=float)
        out[2] -= _lowest_point_height(self.pin_model, self._pin_data, out, frames)
        return out

    @functools.cached_property
    def _pin_data(self) -> pin.Data:
        return self.pin_model.createData()

    def make_data(self, pose: str | None = "stand") -> mujoco.MjData:
        """A fresh ``mujoco.MjData`` with ``qpos`` at the named pose (or the model default) and
        ``mj_forward`` run."""
        data = mujoco.MjData(self.mj_model)
        if pose is not None:
            data.qpos[:] = self.pose_qpos(pose)
        mujoco.mj_forward(self.mj_model, data)
        return data

    def __repr__(self) -> str:
        feet = ", ".join(self._feet) if self._feet else "no feet"
        return (f"Robot({self.name!r}, {self.n_joints} joints, {self.total_mass:.2f} kg, {feet})")


def _pose_kwargs(pose: Pose) -> dict[str, Any]:
    return dict(base_position=pose.base_position, base_quaternion_wxyz=pose.base_quaternion_wxyz,
                joints=pose.joints)


# ------------------------------------------------------------------------------------------------
# building
# ------------------------------------------------------------------------------------------------
_COMPILER_TAG = ('<mujoco><compiler strippath="false" discardvisual="false" fusestatic="false" '
                 'balanceinertia="false" autolimits="true"/></mujoco>')


def _read_description(config: RobotConfig) -> tuple[Path, str]:
    path = Path(config.description).expanduser()
    if not path.is_absolute() and not path.exists():
        path = example_robot_data_dir() / config.description
    if not path.is_file():
        raise RobotLoadError(f"robot description not found: {path}")
    if path.suffix.lower() != ".urdf":
        raise RobotLoadError(
            f"{path}: only URDF descriptions are supported so far (MJCF support is planned)"
        )
    text = _resolve_package_uris(path.read_text(), path.parent)
    return path, _without_world_root(text, config.name)


def _without_world_root(urdf_text: str, name: str) -> str:
    """The URDF without a root link named ``world`` fixed to the robot's base (a common way to
    pin a URDF in place): MuJoCo's free joint would move the base while Pinocchio's moved
    ``world`` (their mass matrices differed by a factor 1.75 on the G1). Both models then float
    the base. Any other text is returned unchanged.

    Raises:
        RobotLoadError: the description is not XML.
    """
    import xml.etree.ElementTree as ET

    try:
        robot = ET.fromstring(urdf_text)
    except ET.ParseError as exc:
        raise RobotLoadError(f"{name}: the description is not valid XML: {exc}") from None
    links = {link.get("name"): link for link in robot.findall("link")}
    children = {j.find("child").get("link") for j in robot.findall("joint")
                if j.find("child") is not None}
    roots = [n for n in links if n not in children]
    if roots != ["world"] or links["world"].find("inertial") is not None:
        return urdf_text
    out = [j for j in robot.findall("joint") if j.find("parent") is not None
           and j.find("parent").get("link") == "world"]
    if len(out) != 1 or out[0].get("type") not in ("fixed", "floating"):
        return urdf_text
    robot.remove(out[0])
    robot.remove(links["world"])
    return ET.tostring(robot, encoding="unicode")


def _build_mj_model(config: RobotConfig, urdf_text: str) -> tuple[mujoco.MjModel, tuple[str, ...]]:
    robot_text, n = re.subn(r"(<robot\b[^>]*>)", lambda m: m.group(1) + _COMPILER_TAG, urdf_text, 1)
    if n != 1:
        raise RobotLoadError(f"{config.name}: the description has no <robot> element")
    try:
        robot_spec = mujoco.MjSpec.from_string(robot_text)
    except ValueError as exc:
        raise RobotLoadError(f"{config.name}: MuJoCo cannot parse the URDF: {exc}") from exc
    # Attach the robot to the scene with no prefix, so every name stays as in the description. MuJoCo
    # warns that such a spec may not save to XML correctly; wbsim never saves it (an XML round trip
    # would also round every inertia to 6 digits), so that one warning is silenced here and at compile.
    spec = mujoco.MjSpec.from_file(str(SCENE_XML))
    with _quiet_empty_prefix_warning():
        spec.attach(robot_spec, frame=spec.worldbody.add_frame(), prefix="")
    root = spec.worldbody.first_body()
    while root is not None and root.name == "":
        root = spec.worldbody.next_body(root)
    spec.body(root.name).add_freejoint(name=FREE_JOINT)

    foot_links = {f.link: name for name, f in config.feet.items()}
    for link in foot_links:
        if spec.body(link) is None:
            raise RobotLoadError(f"{config.name}: foot link {link!r} is not in the description")
    floor = spec.geom("floor")
    for geom in list(spec.geoms):
        if geom is floor or geom.name == "floor":
            continue
        if geom.contype == 0 and geom.conaffinity == 0:
            continue  # visual geom
        if geom.parent.name in foot_links:
            spec.delete(geom)  # replaced by the sole spheres below
            continue
        geom.contype, geom.conaffinity, geom.group = ROBOT_CONTYPE, ROBOT_CONAFFINITY, COLLISION_GROUP
        geom.solref = CONTACT_SOLREF
    for foot_name, foot in config.feet.items():
        body = spec.body(foot.link)
        for corner, p in zip(CORNER_NAMES, foot.corners):
            name = f"{foot_name}_{corner}"
            body.add_geom(
                name=name, type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[foot.sphere_radius, 0, 0],
                pos=[p[0], p[1], p[2] + foot.sphere_radius], contype=ROBOT_CONTYPE,
                conaffinity=ROBOT_CONAFFINITY, group=COLLISION_GROUP, rgba=[0.9, 0.5, 0.1, 1],
                mass=0.0, density=0.0, solref=CONTACT_SOLREF,
            )
            body.add_site(name=name, pos=list(p), size=[0.006, 0, 0], group=4)
    points = [(f"{foot}_{c}",) * 2 for foot in config.feet for c in CORNER_NAMES]
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
    mujoco.set_mju_user_warning(lambda msg: None if _EMPTY_PREFIX_WARNING in msg else others.append(msg))
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


def _build_pin_model(config: RobotConfig, urdf_text: str, joint_names: tuple[str, ...]) -> pin.Model:
    try:
        model = pin.buildModelFromXML(urdf_text, pin.JointModelFreeFlyer())
    except Exception as exc:  # pinocchio raises plain RuntimeError / ValueError
        raise RobotLoadError(f"{config.name}: Pinocchio cannot parse the URDF: {exc}") from exc
    for name in joint_names:
        if not model.existJointName(name):
            raise RobotLoadError(f"{config.name}: joint {name!r} is missing from the Pinocchio model")
        model.armature[model.joints[model.getJointId(name)].idx_v] = config.dynamics_of(name).armature
    for foot_name, foot in config.feet.items():
        if not model.existFrame(foot.link):
            raise RobotLoadError(f"{config.name}: foot link {foot.link!r} is not in the description")
        parent = model.frames[model.getFrameId(foot.link)]
        for corner, p in zip(CORNER_NAMES, foot.corners):
            placement = parent.placement * pin.SE3(np.eye(3), np.asarray(p, dtype=float))
            model.addFrame(pin.Frame(f"{foot_name}_{corner}", parent.parentJoint,
                                     model.getFrameId(foot.link), placement, pin.FrameType.OP_FRAME))
    return model


def _lowest_point_height(model: pin.Model, data: pin.Data, q: np.ndarray,
                         frame_ids: list[int]) -> float:
    """Height (world z, m) of the lowest of the frames ``frame_ids`` at configuration ``q``."""
    pin.framesForwardKinematics(model, data, q)
    return min(float(data.oMf[f].translation[2]) for f in frame_ids)


def _make_poses(config: RobotConfig, pin_model: pin.Model, joint_names: tuple[str, ...],
                feet_cfg: Mapping[str, FootConfig]) -> dict[str, Pose]:
    poses = {}
    data = pin_model.createData()
    for pose_name, joints in config.poses.items():
        for j in joints:
            if j not in joint_names:
                raise UnknownNameError("joint", j, joint_names)
        full = {name: float(joints.get(name, 0.0)) for name in joint_names}
        q = pin.neutral(pin_model)
        for name, value in full.items():
            q[pin_model.joints[pin_model.getJointId(name)].idx_q] = value
        height = config.base_height
        if feet_cfg:
            frames = [pin_model.getFrameId(f"{f}_{c}") for f in feet_cfg for c in CORNER_NAMES]
            height = -_lowest_point_height(pin_model, data, q, frames)
        poses[pose_name] = Pose(pose_name, np.array([0.0, 0.0, height]), np.array([1.0, 0, 0, 0]),
                                MappingProxyType(full))
    return poses


_BUILD_CACHE: dict[str, tuple] = {}


def _build(config: RobotConfig):
    """Build (once per configuration and process) the compiled models; callers copy them."""
    key = repr(config)
    if key not in _BUILD_CACHE:
        _BUILD_CACHE[key] = _build_uncached(config)
    return _BUILD_CACHE[key]


def _build_uncached(config: RobotConfig):
    _, urdf_text = _read_description(config)
    spec, joint_names = _build_mj_model(config, urdf_text)
    pin_model = _build_pin_model(config, urdf_text, joint_names)
    effort = _effort_limits(pin_model, joint_names)
    _add_motors(spec, joint_names, effort)
    poses = _make_poses(config, pin_model, joint_names, config.feet)
    for pose in poses.values():
        q = pin.neutral(pin_model)
        q[0:3] = pose.base_position
        for name, value in pose.joints.items():
            q[pin_model.joints[pin_model.getJointId(name)].idx_q] = value
        spec.add_key(name=pose.name, qpos=_pin_q_to_mj_qpos_by_name(spec, pin_model, q))
    try:
        with _quiet_empty_prefix_warning():
            mj_model = spec.compile()
    except ValueError as exc:
        raise RobotLoadError(f"{config.name}: MuJoCo cannot compile the model: {exc}") from exc
    converter = StateConverter(mj_model, pin_model, joint_names, FREE_JOINT)
    check_models(config.name, mj_model, pin_model, converter, _joint_ranges(mj_model, joint_names))
    return mj_model, pin_model, joint_names, effort, poses


def _joint_ranges(mj_model: mujoco.MjModel, joint_names: tuple[str, ...]) -> np.ndarray:
    """``(n_joints, 2)`` MuJoCo's joint ranges, rad (``inf`` where unlimited)."""
    jids = [mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in joint_names]
    return np.array([mj_model.jnt_range[j] if mj_model.jnt_limited[j] else (-np.inf, np.inf)
                     for j in jids]).reshape(-1, 2)


def _pin_q_to_mj_qpos_by_name(spec: mujoco.MjSpec, pin_model: pin.Model, q: np.ndarray) -> list:
    """Keyframe qpos, in the spec's joint order (before compiling, so no StateConverter yet)."""
    qpos: list[float] = []
    for joint in spec.joints:
        if joint.type == mujoco.mjtJoint.mjJNT_FREE:
            qpos += [*q[0:3], q[6], q[3], q[4], q[5]]
        else:
            qpos.append(float(q[pin_model.joints[pin_model.getJointId(joint.name)].idx_q]))
    return qpos


def _feet(config: RobotConfig, mj_model: mujoco.MjModel, pin_model: pin.Model) -> dict[str, Foot]:
    feet = {}
    for foot_name in FOOT_NAMES:
        if foot_name not in config.feet:
            continue
        fc = config.feet[foot_name]
        names = tuple(f"{foot_name}_{c}" for c in CORNER_NAMES)
        feet[foot_name] = Foot(
            name=foot_name, link=fc.link, point_names=names,
            points_in_foot=np.array(fc.corners), sphere_radius=fc.sphere_radius,
            mj_body_id=mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_BODY, fc.link),
            mj_geom_ids=tuple(mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_GEOM, n) for n in names),
            mj_site_ids=tuple(mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_SITE, n) for n in names),
            pin_frame_id=pin_model.getFrameId(fc.link),
            pin_point_frame_ids=tuple(pin_model.getFrameId(n) for n in names),
        )
    return feet


def _resolve_config(name_or_path: str | os.PathLike | RobotConfig,
                    config: RobotConfig | Mapping | str | os.PathLike | None) -> RobotConfig:
    if isinstance(name_or_path, RobotConfig):
        return name_or_path
    if config is not None and not isinstance(config, RobotConfig):
        if isinstance(config, Mapping):
            config = RobotConfig.from_dict({"name": Path(str(name_or_path)).stem,
                                            "description": str(name_or_path), **config})
        else:
            config = RobotConfig.from_json(config)
    text = str(name_or_path)
    if text in ROBOTS and config is None:
        return ROBOTS[text]
    looks_like_path = os.sep in text or text.lower().endswith((".urdf", ".xml"))
    if looks_like_path:
        path = Path(text).expanduser()
        if not path.is_file():
            raise RobotLoadError(f"robot description not found: {path}")
        if config is not None:
            return RobotConfig(**{**config.__dict__, "description": str(path.resolve())})
        return RobotConfig(name=path.stem, description=str(path.resolve()))
    if text.endswith("_description"):
        return _from_robot_descriptions(text, config)
    if config is not None:
        return config
    raise UnknownNameError("robot", text, ROBOTS)


def _from_robot_descriptions(name: str, config: RobotConfig | None) -> RobotConfig:
    """Resolve a ``robot_descriptions`` module name (e.g. ``"g1_description"``) to a URDF.

    ``robot_descriptions`` clones the robot's repository on first use; offline and without a cache this
    fails, and the error says so.
    """
    try:
        import robot_descriptions  # noqa: F401
    except ImportError:
        raise RobotLoadError("robot_descriptions is not installed (pip install robot_descriptions)")
    try:
        module = importlib.import_module(f"robot_descriptions.{name}")
    except ModuleNotFoundError:
        known = [*ROBOTS, "<path to a .urdf>", "<robot_descriptions name, e.g. g1_description>"]
        raise UnknownNameError("robot", name, known) from None
    except Exception as exc:  # git clone failures come as several exception types
        cache = os.environ.get("ROBOT_DESCRIPTIONS_CACHE", "~/.cache/robot_descriptions")
        raise RobotLoadError(
            f"robot_descriptions could not fetch {name!r} (it clones the robot's repository on first "
            f"use; there is no network here and no copy in {cache}): {exc}"
        ) from exc
    path = getattr(module, "URDF_PATH", None)
    if path is None:
        raise RobotLoadError(
            f"{name!r} provides only an MJCF ({getattr(module, 'MJCF_PATH', '?')}); wbsim loads URDF "
            "descriptions so far; use the matching URDF description instead"
        )
    base = config.__dict__ if config is not None else {"name": name}
    return RobotConfig(**{**base, "description": str(path)})


def load_robot(name_or_path: str | os.PathLike | RobotConfig = "g1", *,
               config: RobotConfig | Mapping | str | os.PathLike | None = None) -> Robot:
    """Load a humanoid for MuJoCo and Pinocchio.

    Args:
        name_or_path: a built-in robot (``"g1"``, the default, or ``"talos"``; see
            :data:`wbsim.robot_config.ROBOTS`), a path to a URDF, a ``robot_descriptions`` module name
            (``"g1_description"``), or a :class:`RobotConfig`.
        config: for a path or a ``robot_descriptions`` name: a :class:`RobotConfig`, a dict of its
            fields (``feet``, ``poses``, ...) or a JSON file of them. Without it the robot loads with no
            feet; :attr:`Robot.feet` then raises :class:`NoFeetError`.

    Returns:
        A new :class:`Robot` (its models are copies: changing them does not affect other loads).

    Raises:
        UnknownNameError: unknown name; the message lists the known robots.
        RobotLoadError: missing file, unparsable description, or ``robot_descriptions`` offline.
    """
    cfg = _resolve_config(name_or_path, config)
    mj_model, pin_model, joint_names, effort, poses = _build(cfg)
    mj_model = copy.deepcopy(mj_model)
    pin_model = pin_model.copy()
    feet = _feet(cfg, mj_model, pin_model) if cfg.feet else None
    return Robot(cfg, mj_model, pin_model, joint_names, effort.copy(), feet, dict(poses))
