"""A robot description file (URDF or MJCF) read once for both MuJoCo and Pinocchio.

:func:`read_description` finds the file, prepares its text the same way for both parsers (URDF:
``package://`` URIs resolved, meshes MuJoCo cannot read converted (:mod:`wbsim.meshes`), a ``world``
root link removed, locked joints made fixed; MJCF: asset folders made absolute, the free joint,
actuators, sensors and keyframes removed (wbsim adds its own), locked joints removed) and returns a
:class:`Description`. :func:`mujoco_spec` and :func:`pinocchio_model` parse it; :func:`sole_corners`
derives a foot's sole corners from its collision geoms.
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin

from wbsim.errors import RobotLoadError
from wbsim.meshes import convert_urdf_meshes, resolve_package_uris

__all__ = ["Description", "mujoco_spec", "pinocchio_model", "read_description", "sole_corners"]

#: MuJoCo's URDF options: keep names, visuals and fixed links, the inertias as written.
_COMPILER_TAG = (
    '<mujoco><compiler strippath="false" discardvisual="false" fusestatic="false" '
    'balanceinertia="false" autolimits="true"/></mujoco>'
)
#: Radius (m) of the solid sphere whose inertia is the least a link's principal inertia may be.
_MIN_GYRATION = 0.005
#: Principal moments at or below this (kg m^2) are not physical (MuJoCo refuses them).
_MIN_EIGENVALUE = 1e-12
#: MJCF sections wbsim replaces (its own motors, sensors, keyframes).
_MJCF_DROPPED = ("actuator", "sensor", "keyframe")
#: MJCF sections that would make MuJoCo's dynamics differ from Pinocchio's model.
_MJCF_REFUSED = ("equality", "tendon")


@dataclass(frozen=True)
class Description:
    """A description prepared for both parsers.

    Attributes:
        path: the file.
        kind: ``"urdf"`` or ``"mjcf"``.
        text: the prepared text (every path in it absolute).
    """

    path: Path
    kind: str
    text: str


def find_description(description: str | os.PathLike) -> Path:
    """The file of ``description``: a path as given, else relative to example-robot-data's
    ``robots`` folder. Raises :class:`RobotLoadError` if neither exists."""
    from wbsim.robot import example_robot_data_dir

    path = Path(description).expanduser()
    if not path.is_absolute() and not path.exists():
        path = example_robot_data_dir() / path
    if not path.is_file():
        raise RobotLoadError(f"robot description not found: {path}")
    return path


def read_description(
    description: str | os.PathLike, name: str, locked_joints: Mapping[str, float] | None = None
) -> Description:
    """Read and prepare a URDF (``.urdf``) or MJCF (``.xml``) file (module docstring).

    Args:
        description: the file (see :func:`find_description`).
        name: the robot's name, for messages.
        locked_joints: joint name -> angle (rad) to fix the joint at (MJCF: 0 only).

    Raises:
        RobotLoadError: missing file, another suffix, text that is not XML, a locked joint that
            does not exist (the message lists the joints), an MJCF with equality constraints or
            tendons, a mesh that cannot be converted.
    """
    path = find_description(description)
    suffix = path.suffix.lower()
    try:
        root = ET.fromstring(path.read_text())
    except ET.ParseError as exc:
        raise RobotLoadError(f"{name}: the description {path} is not valid XML: {exc}") from None
    locked = dict(locked_joints or {})
    if suffix == ".urdf" and root.tag == "robot":
        root = _without_world_root(root)
        _lock_urdf_joints(root, locked, name)
        fixed = _physical_inertias(root)
        if fixed:
            warnings.warn(
                f"{name}: the inertia tensors of {len(fixed)} link(s) of {path.name} "
                f"are not physical ({', '.join(fixed)}); both models use them made "
                f"physical (principal moments >= 0.4 x mass x ({_MIN_GYRATION} m)^2, "
                "triangle inequality)",
                stacklevel=2,
            )
        text = resolve_package_uris(ET.tostring(root, encoding="unicode"), path.parent)
        return Description(path, "urdf", convert_urdf_meshes(text, path.parent))
    if suffix == ".xml" and root.tag == "mujoco":
        return Description(path, "mjcf", _prepare_mjcf(root, path, locked, name))
    raise RobotLoadError(
        f"{name}: {path} is neither a URDF (.urdf, <robot>) nor an MJCF (.xml, "
        "<mujoco>) description"
    )


def _joint_link(joint: ET.Element, end: str) -> str | None:
    """The ``link`` of a URDF joint's ``<parent>`` or ``<child>`` (``end``), ``None`` if absent."""
    el = joint.find(end)
    return None if el is None else el.get("link")


def _without_world_root(robot: ET.Element) -> ET.Element:
    """The URDF without a root link named ``world`` fixed to the robot's base (a common way to
    pin a URDF in place): MuJoCo's free joint would move the base while Pinocchio's moved
    ``world`` (their mass matrices differed by a factor 1.75 on the G1). Both models then float
    the base. Any other URDF is returned unchanged."""
    links = {link.get("name"): link for link in robot.findall("link")}
    children = {_joint_link(j, "child") for j in robot.findall("joint")}
    roots = [n for n in links if n not in children]
    if roots != ["world"] or links["world"].find("inertial") is not None:
        return robot
    out = [j for j in robot.findall("joint") if _joint_link(j, "parent") == "world"]
    if len(out) != 1 or out[0].get("type") not in ("fixed", "floating"):
        return robot
    robot.remove(out[0])
    robot.remove(links["world"])
    return robot


def _physical_inertias(robot: ET.Element) -> list[str]:
    """Make every link's inertia tensor physical, in place; return the names of those changed.

    Only a tensor MuJoCo refuses is changed: zero in a link that moves, zero up to rounding
    noise, a principal moment at or below :data:`_MIN_EIGENVALUE` (iCub's right leg), or the
    largest principal moment above the sum of the other two (Romeo's shoulders). Its principal
    moments are raised to at least that of a solid sphere of radius :data:`_MIN_GYRATION` of the
    link's mass, then, where the largest still exceeds the sum of the other two, the two others
    equally to satisfy the triangle inequality. Pinocchio takes any tensor; both models then read
    the same, changed numbers.
    """
    keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    fixed_links = {
        _joint_link(j, "child"): j.get("type") == "fixed" for j in robot.findall("joint")
    }
    changed: list[str] = []
    for link in robot.findall("link"):
        el, mass_el = link.find("inertial/inertia"), link.find("inertial/mass")
        if el is None or mass_el is None:
            continue
        mass = float(mass_el.get("value", "0"))
        if mass <= 0:
            continue
        xx, xy, xz, yy, yz, zz = (float(el.get(k, "0")) for k in keys)
        tensor = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        if not tensor.any() and fixed_links.get(link.get("name"), False):
            continue  # a point mass fixed to a body with inertia of its own: MuJoCo takes it
        eig, rot = np.linalg.eigh(tensor)  # ascending
        if eig[0] > _MIN_EIGENVALUE and eig[2] <= eig[0] + eig[1]:
            continue  # what MuJoCo accepts is kept as written
        fixed = np.maximum(eig, 0.4 * mass * _MIN_GYRATION**2)
        excess = fixed[2] - fixed[0] - fixed[1]
        if excess > 0:
            fixed[:2] += 0.5 * excess * (1 + 1e-9)
        out = rot @ np.diag(fixed) @ rot.T
        for k, v in zip(keys, (out[0, 0], out[0, 1], out[0, 2], out[1, 1], out[1, 2], out[2, 2])):
            el.set(k, repr(float(v)))
        changed.append(str(link.get("name")))
    return changed


def _lock_urdf_joints(robot: ET.Element, locked: Mapping[str, float], name: str) -> None:
    """Make each joint of ``locked`` fixed, its child placed at the locked angle (revolute) or
    offset (prismatic, m) along the joint axis."""
    joints = {str(j.get("name")): j for j in robot.findall("joint")}
    for jname, angle in locked.items():
        joint = joints.get(jname)
        if joint is None or joint.get("type") in ("fixed", "floating"):
            movable = sorted(
                n for n, j in joints.items() if j.get("type") not in ("fixed", "floating")
            )
            raise RobotLoadError(
                f"{name}: cannot lock joint {jname!r}: no such movable joint; "
                f"the description's joints: {', '.join(movable)}"
            )
        limit = joint.find("limit")
        if joint.get("type") != "continuous" and limit is not None:
            lo, hi = float(limit.get("lower", "-inf")), float(limit.get("upper", "inf"))
            if not lo - 1e-9 <= angle <= hi + 1e-9:
                raise RobotLoadError(
                    f"{name}: cannot lock joint {jname!r} at {angle:g}: outside its limits "
                    f"[{lo:g}, {hi:g}]"
                )
        origin = joint.find("origin")
        if origin is None:
            origin = ET.SubElement(joint, "origin")
        xyz = np.array([float(x) for x in origin.get("xyz", "0 0 0").split()])
        rpy = np.array([float(x) for x in origin.get("rpy", "0 0 0").split()])
        axis_el = joint.find("axis")
        axis_text = axis_el.get("xyz", "1 0 0") if axis_el is not None else "1 0 0"
        axis = np.array([float(x) for x in axis_text.split()])
        axis /= np.linalg.norm(axis)
        placement = pin.SE3(pin.rpy.rpyToMatrix(*rpy), xyz)
        if joint.get("type") == "prismatic":
            motion = pin.SE3(np.eye(3), angle * axis)
        else:
            motion = pin.SE3(pin.AngleAxis(angle, axis).matrix(), np.zeros(3))
        placement = placement * motion
        origin.set("xyz", " ".join(repr(float(x)) for x in placement.translation))
        origin.set("rpy", " ".join(repr(float(x)) for x in pin.rpy.matrixToRpy(placement.rotation)))
        joint.set("type", "fixed")
        for child in list(joint):
            if child.tag in ("limit", "dynamics", "mimic", "safety_controller", "calibration"):
                joint.remove(child)


def _prepare_mjcf(root: ET.Element, path: Path, locked: Mapping[str, float], name: str) -> str:
    """The MJCF text for both parsers (module docstring)."""
    for tag in _MJCF_REFUSED:
        section = root.find(tag)
        if section is not None and len(section):
            raise RobotLoadError(
                f"{name}: {path} has <{tag}> elements, which Pinocchio's model "
                "cannot represent: the two models would disagree"
            )
    for body in root.iter("body"):
        hinges = [
            j.get("name", "(unnamed)") for j in body.findall("joint") if j.get("type") != "free"
        ]
        if len(hinges) > 1:
            raise RobotLoadError(
                f"{name}: body {body.get('name', '(unnamed)')!r} of {path} has {len(hinges)} "
                f"joints ({', '.join(hinges)}); Pinocchio merges them into one composite joint, "
                "so its model and MuJoCo's cannot be matched joint by joint: give each joint a "
                "body of its own (a massless child body per extra joint)"
            )
    for tag in _MJCF_DROPPED:
        for el in root.findall(tag):
            root.remove(el)
    base = path.parent
    compiler = root.find("compiler")
    if compiler is None:
        compiler = ET.Element("compiler")
        root.insert(0, compiler)
    for key in ("meshdir", "texturedir", "assetdir"):
        folder = compiler.get(key)
        if folder is not None and not Path(folder).is_absolute():
            compiler.set(key, str(base / folder))
    if compiler.get("meshdir") is None and compiler.get("assetdir") is None:
        compiler.set("assetdir", str(base))
    for inc in root.iter("include"):
        file = inc.get("file")
        if file and not Path(file).is_absolute():
            inc.set("file", str(base / file))
    world = root.find("worldbody")
    bodies = world.findall("body") if world is not None else []
    if world is None or len(bodies) != 1:
        raise RobotLoadError(
            f"{name}: {path} must hold the robot as the one body of its "
            f"<worldbody>, found {len(bodies)} bodies there"
        )
    for el in list(world):  # a floor, lights or cameras of the file's own scene
        if el.tag != "body":
            world.remove(el)
    top = bodies[0]
    for el in list(top):
        if el.tag == "freejoint" or (el.tag == "joint" and el.get("type") == "free"):
            top.remove(el)
    parents = {child: parent for parent in root.iter() for child in parent}
    joints = {str(j.get("name")): j for j in root.iter("joint") if j.get("name")}
    for jname, angle in locked.items():
        if jname not in joints:
            raise RobotLoadError(
                f"{name}: cannot lock joint {jname!r}: no such joint; the "
                f"description's joints: {', '.join(sorted(joints))}"
            )
        if angle != 0.0:
            raise RobotLoadError(f"{name}: an MJCF joint locks at 0 only, got {jname} = {angle}")
        parents[joints[jname]].remove(joints[jname])
    return ET.tostring(root, encoding="unicode")


def mujoco_spec(desc: Description, name: str) -> mujoco.MjSpec:
    """The robot alone as a ``mujoco.MjSpec`` (no free joint yet).

    Raises:
        RobotLoadError: MuJoCo cannot parse the text (the message has MuJoCo's).
    """
    text = desc.text
    if desc.kind == "urdf":
        text, n = re.subn(r"(<robot\b[^>]*>)", lambda m: m.group(1) + _COMPILER_TAG, text, 1)
        if n != 1:
            raise RobotLoadError(f"{name}: the description has no <robot> element")
    try:
        return mujoco.MjSpec.from_string(text)
    except ValueError as exc:
        raise RobotLoadError(f"{name}: MuJoCo cannot parse {desc.path}: {exc}") from exc


def pinocchio_model(desc: Description, name: str) -> pin.Model:
    """Pinocchio's model of the description, with a free-flyer root joint ``"root_joint"``.

    Raises:
        RobotLoadError: Pinocchio cannot parse the text (the message has Pinocchio's).
    """
    try:
        if desc.kind == "urdf":
            return pin.buildModelFromXML(desc.text, pin.JointModelFreeFlyer())
        with tempfile.TemporaryDirectory() as tmp:
            file = Path(tmp) / desc.path.name
            file.write_text(desc.text)
            import warnings

            with warnings.catch_warnings():  # "use buildModelAndLegacyConstraintsFromMjcf"
                warnings.simplefilter("ignore", DeprecationWarning)
                built = pin.buildModelFromMJCF(str(file), pin.JointModelFreeFlyer(), "root_joint")
            return built[0] if isinstance(built, tuple) else built
    except Exception as exc:  # Pinocchio raises plain RuntimeError / ValueError
        raise RobotLoadError(f"{name}: Pinocchio cannot parse {desc.path}: {exc}") from exc


def sole_corners(
    model: mujoco.MjModel, bodies: Collection[str], link: str, forward: np.ndarray, name: str
) -> np.ndarray:
    """``(4, 3)`` sole corners in the frame of body ``link`` (m), in the order front-left,
    back-left, back-right, front-right: the bottom face of the bounding box of the collision geoms
    of ``bodies`` (boxes, spheres, capsules, cylinders, ellipsoids: their boxes; meshes: their
    vertices), axes ``forward``, left and up (world, horizontal ``forward``), at the model's
    ``qpos0`` (the zero posture, the robot's root at the world origin).

    Raises:
        RobotLoadError: none of ``bodies`` has a collision geom (the message asks for corners).
    """
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    ids = {mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in bodies}
    points = []
    for g in range(model.ngeom):
        if model.geom_bodyid[g] not in ids or not (
            model.geom_contype[g] or model.geom_conaffinity[g]
        ):
            continue
        pos, rot, size = data.geom_xpos[g], data.geom_xmat[g].reshape(3, 3), model.geom_size[g]
        kind = int(model.geom_type[g])  # an np.int32 is not "in" a tuple of mjtGeom
        if kind == mujoco.mjtGeom.mjGEOM_MESH:
            m = model.geom_dataid[g]
            local = model.mesh_vert[
                model.mesh_vertadr[m] : model.mesh_vertadr[m] + model.mesh_vertnum[m]
            ]
        elif kind == mujoco.mjtGeom.mjGEOM_SPHERE:
            local = size[0] * np.vstack([np.eye(3), -np.eye(3)])
        elif kind in (mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_CYLINDER):
            r, h = size[0], size[1] + (size[0] if kind == mujoco.mjtGeom.mjGEOM_CAPSULE else 0.0)
            local = np.array([[x, y, z] for x in (-r, r) for y in (-r, r) for z in (-h, h)])
        elif kind in (mujoco.mjtGeom.mjGEOM_BOX, mujoco.mjtGeom.mjGEOM_ELLIPSOID):
            local = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * size
        else:
            continue
        points.append(pos + np.asarray(local) @ rot.T)
    if not points:
        raise RobotLoadError(
            f"{name}: foot link {link!r} has no collision geom to find its sole "
            "from; give its corners in the config (feet.<foot>.corners)"
        )
    world = np.vstack(points)
    fwd = np.array([forward[0], forward[1], 0.0]) / np.linalg.norm(forward[:2])
    axes = np.array([fwd, np.cross([0.0, 0.0, 1.0], fwd), [0.0, 0.0, 1.0]])  # forward, left, up
    p = world @ axes.T
    (f0, l0, z0), (f1, l1, _) = p.min(axis=0), p.max(axis=0)
    corners_world = np.array([[f1, l1, z0], [f0, l1, z0], [f0, l0, z0], [f1, l0, z0]]) @ axes
    b = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, link)
    return (corners_world - data.xpos[b]) @ data.xmat[b].reshape(3, 3)
