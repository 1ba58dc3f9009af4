"""Robot configurations: which description, which links are feet (and hands that touch the scene),
where their contact points are, the scene, named poses, and the joint dynamics (armature, damping)
that a URDF does not carry.

The built-in robots are the registry :data:`ROBOTS`: the G1 and Talos written out here, iCub and
Romeo read from the TOML files in ``wbsim/assets/robots``. Any other humanoid loads from a
:class:`RobotConfig`, a dict or JSON file of its fields, or a TOML file (:meth:`RobotConfig.from_toml`,
a few lines: the description, the feet links; sole corners and the stand pose are found at load
when not given) passed to :func:`wbsim.load_robot`.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from wbsim.assets import ASSETS_DIR
from wbsim.errors import UnknownNameError, WbsimError, check_keys

#: Folder of the built-in robots' TOML configs (iCub, Romeo, the G1 with hands).
ROBOT_CONFIG_DIR = ASSETS_DIR / "robots"

__all__ = [
    "CORNER_NAMES",
    "FOOT_NAMES",
    "HAND_NAMES",
    "ROBOTS",
    "ROBOT_CONFIG_DIR",
    "ContactConfig",
    "FootConfig",
    "JointDynamics",
    "RobotConfig",
]

#: Public names of the two feet, for every robot.
FOOT_NAMES = ("left_foot", "right_foot")
#: Public names of the hands a robot may put on the scene (:attr:`RobotConfig.hands`).
HAND_NAMES = ("left_hand", "right_hand")
#: Names of the four sole corners, in counter-clockwise order seen from above (foot frame x forward,
#: y left); contact point ``i`` of foot ``f`` is named ``f"{f}_{CORNER_NAMES[i]}"``.
CORNER_NAMES = ("front_left", "back_left", "back_right", "front_right")


def _reject_unknown(cls, data: Mapping[str, Any]) -> None:
    check_keys(cls.__name__, data, (f.name for f in dataclasses.fields(cls)))


@dataclass(frozen=True)
class ContactConfig:
    """A contact patch: a link and four contact points on it, touching a geom of the scene (a
    foot's sole on the floor, a hand on a wall).

    Attributes:
        link: URDF link (MuJoCo body, Pinocchio frame) of the patch (a link fixed to the ankle,
            such as iCub's ``l_sole``, works too).
        corners: ``(4, 3)`` contact points in the link frame, metres, in the order of
            :data:`CORNER_NAMES` (for a foot: front-left, back-left, back-right, front-right), or
            ``None`` (feet only): the bottom face of the bounding box of the collision geoms of
            the link and the links fixed to it (boxes, spheres, capsules, cylinders, meshes), axes
            as the world's at the zero posture, front along the robot's forward direction (found
            at load).
        sphere_radius: radius (m) of the collision sphere put at each corner; the sphere's centre
            sits ``sphere_radius`` inside the patch, against ``normal``, so its outermost point is
            the corner.
        normal: ``(3,)`` the patch's outward normal in the link frame (unit after
            normalisation), or ``None``: downwards at the zero posture (a foot's sole). A hand
            needs one.
        surface: the name of the scene geom (a plane, or a box: its top face) the patch touches:
            ``"floor"`` (default) or e.g. ``"wall"`` (:attr:`RobotConfig.scene`).
    """

    link: str
    corners: tuple[tuple[float, float, float], ...] | None = None
    sphere_radius: float = 0.005
    normal: tuple[float, float, float] | None = None
    surface: str = "floor"

    def __post_init__(self):
        if self.sphere_radius <= 0:
            raise WbsimError(f"contact {self.link!r}: sphere_radius must be > 0")
        if not isinstance(self.surface, str) or not self.surface:
            raise WbsimError(
                f"contact {self.link!r}: surface must be a geom name, got {self.surface!r}"
            )
        if self.normal is not None:
            n = np.asarray(self.normal, dtype=float)
            if n.shape != (3,) or not np.all(np.isfinite(n)) or np.linalg.norm(n) < 1e-9:
                raise WbsimError(
                    f"contact {self.link!r}: normal must be a non-zero (3,) vector, "
                    f"got {self.normal!r}"
                )
            object.__setattr__(self, "normal", tuple(float(x) for x in n / np.linalg.norm(n)))
        if self.corners is None:
            return
        arr = np.asarray(self.corners, dtype=float)
        if arr.shape != (4, 3):
            raise WbsimError(
                f"contact {self.link!r}: corners must have shape (4, 3), got {arr.shape}"
            )
        object.__setattr__(self, "corners", tuple(tuple(float(x) for x in c) for c in arr))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContactConfig:
        _reject_unknown(cls, data)
        return cls(**data)


#: The contact patch of a foot: the same class (the name the feet's users know).
FootConfig = ContactConfig


@dataclass(frozen=True)
class JointDynamics:
    """Joint properties a URDF lacks, applied to every actuated joint of the MuJoCo model.

    Defaults follow MuJoCo Menagerie's G1 joint defaults, except friction loss (0 here): a hidden
    Coulomb friction unknown to the Pinocchio model would bias every model-based controller.

    Attributes:
        armature: rotor inertia reflected at the joint, kg·m². Also put into Pinocchio's
            ``model.armature`` so the two mass matrices agree. It keeps the light wrist links stable at
            a 2 ms step.
        damping: viscous joint damping, N·m·s/rad (MuJoCo only; a passive force, integrated implicitly).
        frictionloss: dry friction, N·m (MuJoCo only).
    """

    armature: float = 0.01
    damping: float = 0.5
    frictionloss: float = 0.0

    def __post_init__(self) -> None:
        """Raises :class:`WbsimError` for a value that is not a finite number >= 0 (a negative
        armature makes the mass matrix indefinite, a negative damping feeds energy in)."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and np.isfinite(value)
                and value >= 0
            ):
                raise WbsimError(
                    f"JointDynamics: {f.name} must be a finite number >= 0, got {value!r}"
                )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JointDynamics:
        _reject_unknown(cls, data)
        return cls(**data)


@dataclass(frozen=True)
class RobotConfig:
    """Everything wbsim needs to know about a robot beyond its description file.

    Attributes:
        name: short name (``"g1"``).
        description: path to a URDF (``.urdf``) or MJCF (``.xml``); relative paths are taken relative
            to example-robot-data's ``robots`` folder when they do not exist as given.
        feet: foot name (``"left_foot"``, ``"right_foot"``) -> :class:`ContactConfig`; empty for a
            robot without feet (it loads, but :attr:`wbsim.Robot.feet` raises).
        hands: hand name (:data:`HAND_NAMES`) -> :class:`ContactConfig` (corners and normal
            given) of a hand that may touch a geom of the scene (e.g. a wall); empty by default.
            Its points are contact points like the soles' (:attr:`wbsim.Robot.contacts`).
        scene: the MJCF scene the robot is attached to (floor, lights, options, and whatever the
            hands touch): a path, absolute or relative to ``wbsim/assets``; ``""``: the floor
            alone (``assets/scene.xml``). It must have a geom named ``"floor"``.
        poses: pose name -> joint name -> angle (rad). Joints not named are 0. The base of a pose is
            level, at x = y = 0, at the height that puts the lowest sole point on the floor. A
            robot with feet and no ``"stand"`` pose gets one found at load
            (:func:`wbsim.stand_pose.find_stand_pose`: feet flat, knees bent, CoM over the feet).
        stand_crouch: for that search: how far the base is lowered, as a fraction of its height
            above the feet at the zero posture.
        stand_posture: for that search: joint name -> angle (rad) it starts from and pulls
            towards (e.g. the arms down; other joints 0).
        visual_rgba: a colour ``(r, g, b, a)`` for every visual geom (``None``: the
            description's; iCub's is black).
        locked_joints: joint name -> angle (rad): joints made fixed at that angle in both models
            (e.g. fingers, a neck), before anything else reads the description.
        joint_dynamics: default :class:`JointDynamics` of every actuated joint.
        joint_dynamics_overrides: joint name -> :class:`JointDynamics` for particular joints.
        base_height: base height (m) of poses for a robot without feet.
        torso: the link that pushes are applied to (``""``: the root link).
    """

    name: str
    description: str
    feet: Mapping[str, ContactConfig] = field(default_factory=dict)
    poses: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    joint_dynamics: JointDynamics = JointDynamics()
    joint_dynamics_overrides: Mapping[str, JointDynamics] = field(default_factory=dict)
    base_height: float = 1.0
    torso: str = ""
    stand_crouch: float = 0.05
    locked_joints: Mapping[str, float] = field(default_factory=dict)
    stand_posture: Mapping[str, float] = field(default_factory=dict)
    visual_rgba: tuple[float, float, float, float] | None = None
    hands: Mapping[str, ContactConfig] = field(default_factory=dict)
    scene: str = ""

    def __post_init__(self):
        for foot in self.feet:
            if foot not in FOOT_NAMES:
                raise WbsimError(
                    f"robot {self.name!r}: foot names must be {FOOT_NAMES}, got {foot!r}"
                )
        for name, hand in self.hands.items():
            if name not in HAND_NAMES:
                raise WbsimError(
                    f"robot {self.name!r}: hand names must be {HAND_NAMES}, got {name!r}"
                )
            if hand.corners is None or hand.normal is None:
                raise WbsimError(
                    f"robot {self.name!r}: hand {name!r} needs its corners and its "
                    "outward normal (in the link frame)"
                )
        if not isinstance(self.scene, str):
            raise WbsimError(f"robot {self.name!r}: scene must be a path (str), got {self.scene!r}")
        if not (isinstance(self.stand_crouch, (int, float)) and 0 <= self.stand_crouch < 1):
            raise WbsimError(
                f"robot {self.name!r}: stand_crouch must be a number in [0, 1), got "
                f"{self.stand_crouch!r}"
            )
        object.__setattr__(self, "feet", MappingProxyType(dict(self.feet)))
        object.__setattr__(self, "hands", MappingProxyType(dict(self.hands)))
        object.__setattr__(
            self,
            "poses",
            MappingProxyType({k: MappingProxyType(dict(v)) for k, v in self.poses.items()}),
        )
        object.__setattr__(
            self, "joint_dynamics_overrides", MappingProxyType(dict(self.joint_dynamics_overrides))
        )
        for key in ("locked_joints", "stand_posture"):
            object.__setattr__(
                self,
                key,
                MappingProxyType({str(k): float(v) for k, v in dict(getattr(self, key)).items()}),
            )
        if self.visual_rgba is not None:
            rgba = tuple(float(x) for x in self.visual_rgba)
            if len(rgba) != 4 or not all(0 <= x <= 1 for x in rgba):
                raise WbsimError(
                    f"robot {self.name!r}: visual_rgba must be 4 numbers in [0, 1], "
                    f"got {self.visual_rgba!r}"
                )
            object.__setattr__(self, "visual_rgba", rgba)

    def __reduce__(self):
        """Pickle (and ``copy.deepcopy``) through plain dicts: ``MappingProxyType`` does not
        pickle."""
        return (_rebuild, (type(self), self._fields(plain_feet=False)))

    def _fields(self, plain_feet: bool) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for key in ("feet", "hands"):
            out[key] = {
                k: dataclasses.asdict(v) if plain_feet else v for k, v in getattr(self, key).items()
            }
        out["poses"] = {k: dict(v) for k, v in self.poses.items()}
        dyn = dataclasses.asdict if plain_feet else (lambda d: d)
        out["joint_dynamics"] = dyn(self.joint_dynamics)
        out["joint_dynamics_overrides"] = {
            k: dyn(v) for k, v in self.joint_dynamics_overrides.items()
        }
        out["locked_joints"] = dict(self.locked_joints)
        out["stand_posture"] = dict(self.stand_posture)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready; :meth:`from_dict` builds the same config back)."""
        out = self._fields(plain_feet=True)
        if out["visual_rgba"] is not None:
            out["visual_rgba"] = list(out["visual_rgba"])
        for patch in (*out["feet"].values(), *out["hands"].values()):
            if patch["corners"] is not None:
                patch["corners"] = [list(c) for c in patch["corners"]]
            if patch["normal"] is not None:
                patch["normal"] = list(patch["normal"])
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RobotConfig:
        """Build from plain data (e.g. JSON); unknown keys raise :class:`WbsimError`."""
        _reject_unknown(cls, data)
        data = dict(data)
        for key in ("feet", "hands"):
            data[key] = {k: ContactConfig.from_dict(v) for k, v in data.get(key, {}).items()}
        if "joint_dynamics" in data:
            data["joint_dynamics"] = JointDynamics.from_dict(data["joint_dynamics"])
        data["joint_dynamics_overrides"] = {
            k: JointDynamics.from_dict(v)
            for k, v in data.get("joint_dynamics_overrides", {}).items()
        }
        return cls(**data)

    @classmethod
    def from_json(cls, path: str | Path) -> RobotConfig:
        """Read a JSON file with the fields of :class:`RobotConfig`."""
        path = Path(path)
        if not path.is_file():
            raise WbsimError(f"robot config file not found: {path}")
        return cls.from_dict(json.loads(path.read_text()))

    @classmethod
    def from_toml(cls, path: str | Path, description: str | Path | None = None) -> RobotConfig:
        """Read a robot config file in TOML (Python's ``tomllib``)::

            description = "icub_description/robots/icub_reduced.urdf"  # .urdf or .xml (MJCF)
            feet = { left_foot = "l_sole", right_foot = "r_sole" }     # links
            torso = "chest"                                            # where pushes act
            lock = ["neck_pitch"]                    # or { neck_pitch = 0.2 } (rad)
            stand = { l_knee = -0.5 }                # joints (rad); without it one is found
            stand_crouch = 0.05                      # for that search ...
            posture = { l_shoulder_roll = 0.3 }      # ... and where it starts (rad)
            visual_rgba = [0.8, 0.8, 0.8, 1]         # colour of the visual geoms
            scene = "scene_wall.xml"                 # the scene (default: the floor alone)
            [hands.right_hand]                       # a hand that touches the scene
            link = "right_hand_palm_link"
            corners = [[0.08, -0.02, 0.04], ...]     # 4 points (m, link frame)
            normal = [0, -1, 0]                      # outward, link frame
            surface = "wall"                         # a geom of the scene

        Keys: ``description`` (a path relative to this file, or to example-robot-data's
        ``robots`` folder; or given as ``description``), ``name`` (default: the stem of the
        ``description`` argument, else of this file),
        ``feet`` (foot name -> link, or a table of :class:`ContactConfig` fields), ``hands``
        (hand name -> a table of :class:`ContactConfig` fields), ``scene`` (a path relative to
        this file, or to ``wbsim/assets``), ``stand``,
        ``poses`` (name -> joint angles), ``lock``, ``posture`` (``stand_posture``), and any
        other :class:`RobotConfig` field.

        Raises:
            WbsimError: a missing file, invalid TOML, or unknown keys (the message lists the known
                ones).
        """
        path = Path(path)
        if not path.is_file():
            raise WbsimError(f"robot config file not found: {path}")
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise WbsimError(f"{path}: not valid TOML ({exc})") from None
        known = {f.name for f in dataclasses.fields(cls)} - {
            "poses",
            "locked_joints",
            "stand_posture",
        }
        check_keys(f"robot config {path}", data, known | {"poses", "stand", "lock", "posture"})
        if description is not None:
            data["description"] = str(description)
        if "description" not in data:
            raise WbsimError(
                f"{path}: no description (a .urdf or .xml path, relative to this "
                "file or to example-robot-data's robots folder)"
            )
        desc = Path(str(data["description"])).expanduser()
        if not desc.is_absolute() and (path.parent / desc).exists():
            desc = (path.parent / desc).resolve()  # the same file from any working folder
        data["description"] = str(desc)
        data.setdefault("name", Path(str(description)).stem if description else path.stem)
        if isinstance(data.get("scene"), str) and data["scene"]:
            scene = Path(data["scene"]).expanduser()
            if not scene.is_absolute() and (path.parent / scene).exists():
                data["scene"] = str((path.parent / scene).resolve())
        feet = data.get("feet", {})
        if not isinstance(feet, Mapping):
            raise WbsimError(f"{path}: feet must be a table of foot name -> link, got {feet!r}")
        data["feet"] = {k: {"link": v} if isinstance(v, str) else v for k, v in feet.items()}
        poses = dict(data.pop("poses", {}))
        if "stand" in data:
            poses["stand"] = data.pop("stand")
        data["poses"] = poses
        data["stand_posture"] = data.pop("posture", {})
        lock = data.pop("lock", {})
        data["locked_joints"] = dict.fromkeys(lock, 0.0) if isinstance(lock, list) else lock
        for key in (
            "feet",
            "hands",
            "poses",
            "locked_joints",
            "stand_posture",
            "joint_dynamics_overrides",
        ):
            if not isinstance(data.get(key, {}), Mapping):
                raise WbsimError(f"{path}: {key} must be a table, got {data[key]!r}")
        try:
            return cls.from_dict(data)
        except TypeError as exc:  # a value of the wrong kind
            raise WbsimError(f"{path}: {exc}") from None

    @classmethod
    def from_file(cls, path: str | Path) -> RobotConfig:
        """:meth:`from_toml` for a ``.toml`` file, :meth:`from_json` otherwise."""
        return cls.from_toml(path) if str(path).lower().endswith(".toml") else cls.from_json(path)

    def dynamics_of(self, joint: str) -> JointDynamics:
        return self.joint_dynamics_overrides.get(joint, self.joint_dynamics)

    @property
    def contacts(self) -> Mapping[str, ContactConfig]:
        """The feet, then the hands: every contact patch by name."""
        return MappingProxyType({**self.feet, **self.hands})

    def scene_path(self) -> Path:
        """The scene file (:attr:`scene`): ``assets/scene.xml`` for ``""``, a relative path taken
        from ``wbsim/assets``.

        Raises:
            WbsimError: the file does not exist.
        """
        if not self.scene:
            return ASSETS_DIR / "scene.xml"
        path = Path(self.scene).expanduser()
        if not path.is_absolute():
            path = ASSETS_DIR / path
        if not path.is_file():
            raise WbsimError(f"robot {self.name!r}: scene file not found: {path}")
        return path


def _rebuild(cls: type, fields_: dict[str, Any]) -> Any:
    return cls(**fields_)


def _box_corners(
    x_front: float, x_back: float, half_width_front: float, half_width_back: float, z: float
) -> tuple[tuple[float, float, float], ...]:
    """Corners in :data:`CORNER_NAMES` order."""
    return (
        (x_front, half_width_front, z),
        (x_back, half_width_back, z),
        (x_back, -half_width_back, z),
        (x_front, -half_width_front, z),
    )


# G1: the URDF's four sole spheres (radius 5 mm) sit at x in {-0.05, 0.12}, y = ±0.025 (heel) and
# ±0.03 (toe), z = -0.03 in the ankle-roll link; the corners are their lowest points.
_G1_CORNERS = _box_corners(0.12, -0.05, 0.03, 0.025, -0.035)
# Talos: the sole is a 0.21 x 0.13 x 0.02 box centred 0.1 m below the ankle (leg_*_6_link); its
# bottom face is at z = -0.11.
_TALOS_CORNERS = _box_corners(0.105, -0.105, 0.065, 0.065, -0.11)

_G1_ARMS = {
    "left_shoulder_pitch_joint": 0.2,
    "left_shoulder_roll_joint": 0.2,
    "left_elbow_joint": 1.28,
    "right_shoulder_pitch_joint": 0.2,
    "right_shoulder_roll_joint": -0.2,
    "right_elbow_joint": 1.28,
}
_G1_LEGS = {
    f"{side}_{j}": a
    for side in ("left", "right")
    for j, a in (("hip_pitch_joint", -0.312), ("knee_joint", 0.669), ("ankle_pitch_joint", -0.357))
}

_TALOS_HALF_SITTING = {
    "arm_left_1_joint": 0.25847,
    "arm_left_2_joint": 0.173046,
    "arm_left_3_joint": -0.0002,
    "arm_left_4_joint": -0.525366,
    "arm_left_7_joint": 0.1,
    "arm_right_1_joint": -0.25847,
    "arm_right_2_joint": -0.173046,
    "arm_right_3_joint": 0.0002,
    "arm_right_4_joint": -0.525366,
    "arm_right_7_joint": 0.1,
    "leg_left_3_joint": -0.411354,
    "leg_left_4_joint": 0.859395,
    "leg_left_5_joint": -0.448041,
    "leg_left_6_joint": -0.001708,
    "leg_right_3_joint": -0.411354,
    "leg_right_4_joint": 0.859395,
    "leg_right_5_joint": -0.448041,
    "leg_right_6_joint": -0.001708,
    "torso_2_joint": 0.006761,
}

#: The built-in robots, by name; every one loads offline from the ``example-robot-data`` pip
#: package. iCub and Romeo (COLLADA meshes, converted at the first load) and the G1 with hands come
#: from the TOML files of :data:`ROBOT_CONFIG_DIR`: their soles and stand poses are found at load.
ROBOTS: Mapping[str, RobotConfig] = MappingProxyType(
    {
        "g1": RobotConfig(
            name="g1",
            description="g1_description/urdf/g1_29dof_rev_1_0.urdf",
            feet={
                "left_foot": FootConfig("left_ankle_roll_link", _G1_CORNERS),
                "right_foot": FootConfig("right_ankle_roll_link", _G1_CORNERS),
            },
            poses={"stand": {**_G1_LEGS, **_G1_ARMS}, "zero": {}},
            torso="torso_link",
        ),
        "talos": RobotConfig(
            name="talos",
            description="talos_data/robots/talos_reduced_box.urdf",
            feet={
                "left_foot": FootConfig("leg_left_6_link", _TALOS_CORNERS),
                "right_foot": FootConfig("leg_right_6_link", _TALOS_CORNERS),
            },
            # Talos's ``half_sitting`` from example-robot-data's talos.srdf.
            poses={"stand": _TALOS_HALF_SITTING, "half_sitting": _TALOS_HALF_SITTING, "zero": {}},
            torso="torso_2_link",
        ),
        **{
            path.stem: RobotConfig.from_toml(path)
            for path in sorted(ROBOT_CONFIG_DIR.glob("*.toml"))
        },
    }
)


def known_robot(name: str) -> RobotConfig:
    """The built-in :class:`RobotConfig` called ``name``; raises :class:`UnknownNameError`."""
    try:
        return ROBOTS[name]
    except KeyError:
        raise UnknownNameError("robot", name, ROBOTS) from None
