"""Sole contact points: the support polygon, MuJoCo's contact sensors on the points, and what they
read (gap, force, slip, contact mode).

Owns where the sole points are and what the simulation says about them; it never decides what is
a violation (:mod:`wbsim.diagnostics` does). Sensing reads MuJoCo's own sensors, computed in C
inside ``mj_step`` (added to the model by :func:`add_contact_sensors` when it is built):

* per point, a ``contact`` sensor of the point's sphere against the floor (``found``, ``force``,
  ``dist``, ``normal``, ``tangent``, ``linvel``; the closest contact) and a ``framepos`` sensor of
  its site (the point, where the gap is measured when it does not touch);
* one ``contact`` sensor of the robot's whole tree against anything, reduced to the net wrench
  (``found``, ``force``, ``torque``, ``pos``): every external contact force on the robot;
* one ``subtreecom`` sensor: the robot's centre of mass.

MuJoCo facts used here (checked in ``tests/test_contacts.py`` against ``mj_contactForce``):
a contact sensor's frame has the normal pointing from its first object (the robot) to the other,
its ``force`` and ``linvel`` are in that frame (normal, tangent, normal x tangent) and the force is
the one the first object exerts on the other, so the force ON the robot is its negative. After
``mj_step`` the sensors describe the state before the integration: the state the step's command
was computed for.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from wbsim._cached import cached_property
from wbsim.errors import UnknownNameError, WbsimError, check_keys

__all__ = [
    "CONE_NAMES",
    "MODE_NAMES",
    "OPEN",
    "SLIDING",
    "STICKING",
    "ContactSensing",
    "ContactSensor",
    "SensingThresholds",
    "SensorLayout",
    "add_contact_sensors",
    "contact_frame",
    "convex_hull",
    "pair_friction",
    "point_in_polygon",
    "sole_points_in_world",
    "support_polygon",
    "surface_frame",
]


# ------------------------------------------------------------------------------------------------
# geometry
# ------------------------------------------------------------------------------------------------
def _cross2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """z component of the cross product of planar vectors ``(..., 2)``."""
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def convex_hull(points_xy: np.ndarray) -> np.ndarray:
    """Convex hull of planar points, counter-clockwise, no repeated end point.

    Args:
        points_xy: ``(n, 2)`` points, m.

    Returns:
        ``(k, 2)`` hull vertices (Andrew's monotone chain; collinear points dropped).
    """
    pts = np.unique(np.asarray(points_xy, dtype=float).reshape(-1, 2), axis=0)
    if len(pts) <= 2:
        return pts

    def half(seq):
        out: list[np.ndarray] = []
        for p in seq:
            while len(out) >= 2 and _cross2(out[-1] - out[-2], p - out[-2]) <= 0:
                out.pop()
            out.append(p)
        return out

    lower, upper = half(pts), half(pts[::-1])
    return np.array(lower[:-1] + upper[:-1])


def point_in_polygon(polygon_ccw: np.ndarray, p: np.ndarray, margin: float = 0.0) -> bool:
    """Whether ``p (2,)`` lies inside the convex counter-clockwise polygon ``(k, 2)`` by at least
    ``margin`` metres from every edge."""
    poly = np.asarray(polygon_ccw)
    if len(poly) < 3:
        return False
    edges = np.roll(poly, -1, axis=0) - poly
    rel = np.asarray(p)[None, :] - poly
    dist = _cross2(edges, rel) / np.linalg.norm(edges, axis=1)
    return bool(np.all(dist > margin))


def sole_points_in_world(
    robot, data: mujoco.MjData, feet: Iterable[str] | None = None
) -> np.ndarray:
    """World positions ``(4 * n, 3)`` of the contact points of ``feet`` (contact names: feet or
    hands; default: every foot), m, read from MuJoCo's sites (``mj_kinematics`` must have run)."""
    names = robot.feet if feet is None else feet
    return np.array([data.site_xpos[s] for f in names for s in robot.contact(f).mj_site_ids])


def support_polygon(robot, data: mujoco.MjData, feet: Iterable[str] | None = None) -> np.ndarray:
    """Support polygon ``(k, 2)``, world x-y, counter-clockwise: the convex hull of the contact
    points of ``feet`` (contact names; default: every foot), projected on the floor."""
    return convex_hull(sole_points_in_world(robot, data, feet)[:, :2])


# ------------------------------------------------------------------------------------------------
# contact frames
# ------------------------------------------------------------------------------------------------
def contact_frame(normal: np.ndarray) -> np.ndarray:
    """``(3, 3)`` the contact frame wbsim uses for a contact whose normal is ``normal`` ``(3,)``
    (world, made unit): columns ``x, y, z`` with ``z`` the normal and ``x``, ``y`` along the
    axes of MuJoCo's pyramidal friction cone for that normal.

    MuJoCo completes a contact frame from its normal ``n`` (``mju_makeFrame``): the first tangent
    is ``(0, 1, 0)``, or ``(0, 0, 1)`` when ``|n_y| >= 0.5``, made orthogonal to ``n``; the second
    is ``n x t1``. Its pyramid bounds ``|f . t1| + |f . t2|``, a diamond that only depends on the
    lines of ``t1``, ``t2``: it is the same for ``-n``, whichever side the contact's first geom
    is. wbsim turns that frame by 90 degrees about ``n`` (``x = -t2``, ``y = t1``): the same
    diamond, and for the floor's normal ``(0, 0, 1)`` the world's own axes
    (``tests/test_contacts.py`` checks the rule against MuJoCo's contacts).

    Raises:
        WbsimError: a zero or non-finite normal.
    """
    n = np.asarray(normal, dtype=float)
    norm = float(np.linalg.norm(n)) if n.shape == (3,) else 0.0
    if not (math.isfinite(norm) and norm > 1e-12):
        raise WbsimError(f"a contact normal must be a finite non-zero (3,) vector, got {normal!r}")
    n = n / norm
    t1 = np.array([0.0, 0.0, 1.0]) if abs(n[1]) >= 0.5 else np.array([0.0, 1.0, 0.0])
    t1 -= n * (n @ t1)
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(n, t1)
    return np.column_stack([-t2, t1, n])


def surface_frame(model: mujoco.MjModel, geom_id: int) -> tuple[np.ndarray, float]:
    """The contact frame (:func:`contact_frame`) of a static geom's contact surface and the
    offset ``c`` of the surface ``{p : p . n = c}`` (m): a plane's own ``z`` side, or a box's
    top face (its ``+z`` face).

    Raises:
        WbsimError: the geom is neither a plane nor a box.
    """
    gtype = int(model.geom_type[geom_id])
    if gtype not in (int(mujoco.mjtGeom.mjGEOM_PLANE), int(mujoco.mjtGeom.mjGEOM_BOX)):
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, geom_id)
        raise WbsimError(
            f"a contact surface must be a plane or a box (its top face), geom "
            f"{name!r} is a {mujoco.mjtGeom(gtype).name}"
        )
    d = mujoco.MjData(model)
    mujoco.mj_kinematics(model, d)
    normal = d.geom_xmat[geom_id].reshape(3, 3)[:, 2].copy()
    top = float(model.geom_size[geom_id, 2]) if gtype == int(mujoco.mjtGeom.mjGEOM_BOX) else 0.0
    return contact_frame(normal), float(d.geom_xpos[geom_id] @ normal) + top


# ------------------------------------------------------------------------------------------------
# modes and thresholds
# ------------------------------------------------------------------------------------------------
#: Contact modes of a point (values of :attr:`ContactSensing.mode`).
OPEN, STICKING, SLIDING = 0, 1, 2
#: Name of each mode value: ``MODE_NAMES[OPEN] == "open"``.
MODE_NAMES = ("open", "sticking", "sliding")


#: MuJoCo's friction cones by ``mjtCone`` value.
CONE_NAMES = ("pyramidal", "elliptic")


def pair_friction(
    model: mujoco.MjModel,
    geoms: Sequence[int] | np.ndarray,
    other: int | Sequence[int] | np.ndarray,
) -> np.ndarray:
    """``(len(geoms),)`` the sliding friction ``mu`` MuJoCo gives a contact of each geom with geom
    ``other`` (one id, or one per geom), from the model's current values: the higher ``geom_priority``'s friction, else the
    larger of the two (MuJoCo's "Contact parameters" rule; explicit ``<pair>`` elements are read
    from ``data.contact`` instead, :meth:`ContactSensor.friction`)."""
    ids = np.asarray(geoms, dtype=int)
    f_geom, f_other = model.geom_friction[ids, 0], model.geom_friction[other, 0]
    p_geom, p_other = model.geom_priority[ids], model.geom_priority[other]
    return np.where(
        p_geom > p_other, f_geom, np.where(p_geom < p_other, f_other, np.maximum(f_geom, f_other))
    )


@dataclass(frozen=True)
class SensingThresholds:
    """When a sensed point counts as loaded and as sliding (sensing, not violation, thresholds).

    Attributes:
        normal_force: N. A point is loaded (not ``open``) when its simulated normal force exceeds
            this. 0.5 N is about 1 % of the load of one of a G1's 8 sole points in quiet standing,
            and well above the solver's noise on an unloaded point (0).
        slip_speed: m/s. A loaded point is ``sliding`` when its tangential speed exceeds this, else
            ``sticking``. MuJoCo's soft friction lets a sticking contact creep; 5 mm/s is above the
            creep of a box pushed at half its friction limit and of quiet standing, and a box
            pushed past its friction limit exceeds it within a few steps.
    """

    normal_force: float = 0.5
    slip_speed: float = 0.005

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not np.isfinite(value) or value < 0:
                raise WbsimError(
                    f"SensingThresholds.{f.name} must be finite and >= 0, got {value!r}"
                )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SensingThresholds:
        """Build from a mapping; unknown keys raise :class:`WbsimError` listing the known ones."""
        check_keys("SensingThresholds", data, (f.name for f in dataclasses.fields(cls)))
        return cls(**data)


# ------------------------------------------------------------------------------------------------
# the sensors in the model
# ------------------------------------------------------------------------------------------------
#: Prefix of the names of the sensors wbsim adds.
SENSOR_PREFIX = "wbsim/"
#: Fields of each point's contact sensor, in MuJoCo's order (``mjtConDataField``), and their sizes.
_POINT_FIELDS = (
    ("FOUND", 1),
    ("FORCE", 3),
    ("DIST", 1),
    ("NORMAL", 3),
    ("TANGENT", 3),
    ("LINVEL", 3),
)
_EXTERNAL_FIELDS = (("FOUND", 1), ("FORCE", 3), ("TORQUE", 3), ("POS", 3))
_REDUCE_MINDIST, _REDUCE_NETFORCE = 1, 3  # mjtConDataReduce (the sensor's intprm[1])


def _data_bits(fields: Sequence[tuple[str, int]]) -> int:
    return sum(1 << int(getattr(mujoco.mjtConDataField, f"mjCONDATA_{name}")) for name, _ in fields)


def add_contact_sensors(
    spec: mujoco.MjSpec, points: Sequence[tuple[str, ...]], floor: str, robot_root: str
) -> None:
    """Add wbsim's sensors to a model spec before it is compiled (see the module docstring).

    Args:
        spec: the ``mujoco.MjSpec`` of the scene with the robot.
        points: ``(geom name, site name)`` of each contact point: a sphere geom and a site at its
            outermost point; or ``(geom name, site name, surface geom name)`` for a point that
            touches another geom of the scene than the floor (e.g. a hand on a wall).
        floor: the floor geom's name.
        robot_root: the name of the robot's root body (its whole tree is "the robot").
    """
    ctype = mujoco.mjtSensor.mjSENS_CONTACT
    for point in points:
        geom, site = point[0], point[1]
        surface = point[2] if len(point) > 2 else floor
        spec.add_sensor(
            name=f"{SENSOR_PREFIX}contact/{geom}",
            type=ctype,
            objtype=mujoco.mjtObj.mjOBJ_GEOM,
            objname=geom,
            reftype=mujoco.mjtObj.mjOBJ_GEOM,
            refname=surface,
            intprm=[_data_bits(_POINT_FIELDS), _REDUCE_MINDIST, 1],
        )
        spec.add_sensor(
            name=f"{SENSOR_PREFIX}site/{geom}",
            type=mujoco.mjtSensor.mjSENS_FRAMEPOS,
            objtype=mujoco.mjtObj.mjOBJ_SITE,
            objname=site,
        )
    spec.add_sensor(
        name=f"{SENSOR_PREFIX}external",
        type=ctype,
        objtype=mujoco.mjtObj.mjOBJ_XBODY,
        objname=robot_root,
        intprm=[_data_bits(_EXTERNAL_FIELDS), _REDUCE_NETFORCE, 1],
    )
    spec.add_sensor(
        name=f"{SENSOR_PREFIX}com",
        type=mujoco.mjtSensor.mjSENS_SUBTREECOM,
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        objname=robot_root,
    )


@dataclass(frozen=True, eq=False)
class SensorLayout:
    """Where wbsim's sensors sit in ``MjData.sensordata`` and what reading them needs: a small,
    picklable object (no MuJoCo model). ``n`` = number of points.

    Attributes:
        names: ``(n,)`` point names.
        point_foot: ``(n,)`` foot (more generally the contact: a foot or a hand) of each point
            (``""`` if none); every "foot" of the sensing is such a contact.
        contact: ``(n, 14)`` sensordata indices per point: found, force (3), dist, normal (3),
            tangent (3), linvel (3) of its contact sensor.
        site: ``(n, 3)`` sensordata indices of each point's site position.
        external: ``(10,)`` indices of the robot's net contact wrench sensor: found, force (3),
            torque (3), position (3).
        com: ``(3,)`` indices of the robot's centre of mass.
        floor_normal: ``(3,)`` the floor's unit normal, up (world).
        floor_tangents: ``(2, 3)`` the floor geom's x and y axes (world): the tangent axes of a
            point that does not touch (a touching point has its contact's own).
        floor_offset: ``c`` of the floor surface ``{p : p . floor_normal = c}``, m.
        friction: ``(n,)`` friction coefficient ``mu`` of each point-surface pair in the model
            when the sensor was made (the sensing of a step has the step's own,
            :meth:`ContactSensor.friction`).
        thresholds: the :class:`SensingThresholds` of the contact modes.
        surface_normal: ``(n, 3)`` the unit normal (world) of the surface each point touches
            (the floor's for a sole point, a wall's for a hand's), pointing towards the robot.
        surface_tangents: ``(n, 2, 3)`` the tangent axes (world) of each point's contact frame
            when it does not touch (:func:`contact_frame` of its surface's normal; a touching
            point has its contact's own).
        surface_offset: ``(n,)`` ``c`` of each point's surface ``{p : p . normal = c}``, m.
    """

    names: tuple[str, ...]
    point_foot: tuple[str, ...]
    contact: np.ndarray
    site: np.ndarray
    external: np.ndarray
    com: np.ndarray
    floor_normal: np.ndarray
    floor_tangents: np.ndarray
    floor_offset: float
    friction: np.ndarray
    thresholds: SensingThresholds
    surface_normal: np.ndarray
    surface_tangents: np.ndarray
    surface_offset: np.ndarray

    @cached_property
    def foot_names(self) -> tuple[str, ...]:
        """The feet, in the order they first appear in :attr:`point_foot`."""
        return tuple(dict.fromkeys(f for f in self.point_foot if f))

    @cached_property
    def foot_index(self) -> tuple[tuple[int, ...], ...]:
        """The point indices of each foot of :attr:`foot_names`."""
        return tuple(
            tuple(i for i, f in enumerate(self.point_foot) if f == foot) for foot in self.foot_names
        )

    @cached_property
    def foot_points(self) -> np.ndarray:
        """``(n, m)`` 0/1 matrix: point ``i`` belongs to foot ``j`` of :attr:`foot_names`."""
        return np.array([[float(f == foot) for foot in self.foot_names] for f in self.point_foot])

    def feet_with(self, loaded: np.ndarray) -> frozenset[str]:
        """The feet with at least one point set in ``loaded`` ``(n,)`` bool (one step);
        memoised by the pattern, which repeats from step to step.

        Raises:
            WbsimError: ``loaded`` is not of shape ``(n,)`` (e.g. several steps).
        """
        if loaded.shape != (len(self.names),):
            raise WbsimError(f"feet_with takes one step's ({len(self.names)},) bools")
        key = loaded.tobytes()
        feet = self._feet_memo.get(key)
        if feet is None:
            on = loaded.tolist()
            feet = frozenset(
                foot
                for foot, idx in zip(self.foot_names, self.foot_index)
                if any(on[i] for i in idx)
            )
            _remember(self._feet_memo, key, feet)
        return feet

    def least_friction(self, mu: np.ndarray) -> dict[str, float]:
        """Foot -> the least of ``mu`` ``(n,)`` (friction coefficients) over its points (one
        step; a fresh dict), memoised by the values, which repeat from step to step.

        Raises:
            WbsimError: ``mu`` is not of shape ``(n,)`` (e.g. several steps).
        """
        if mu.shape != (len(self.names),):
            raise WbsimError(f"least_friction takes one step's ({len(self.names)},) values")
        key = mu.tobytes()
        least = self._friction_memo.get(key)
        if least is None:
            values = mu.tolist()
            least = {
                foot: min(values[i] for i in idx)
                for foot, idx in zip(self.foot_names, self.foot_index)
            }
            _remember(self._friction_memo, key, least)
        return dict(least)

    @cached_property
    def _feet_memo(self) -> dict[bytes, frozenset[str]]:
        return {}

    @cached_property
    def _friction_memo(self) -> dict[bytes, dict[str, float]]:
        return {}


def _remember(memo: dict, key, value) -> None:
    """``memo[key] = value``, forgetting everything first when the memo holds 4096 entries."""
    if len(memo) >= 4096:
        memo.clear()
    memo[key] = value


def _sensor_indices(model: mujoco.MjModel, name: str, dim: int) -> np.ndarray:
    """The sensordata indices ``(dim,)`` of wbsim's sensor ``name``; raises :class:`WbsimError`."""
    sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, SENSOR_PREFIX + name)
    if sid < 0:
        raise WbsimError(
            f"the model has no sensor {SENSOR_PREFIX + name!r}: build it with "
            "wbsim.contacts.add_contact_sensors"
        )
    if model.sensor_dim[sid] != dim:
        raise WbsimError(
            f"sensor {SENSOR_PREFIX + name!r} has {model.sensor_dim[sid]} values, expected {dim}"
        )
    return model.sensor_adr[sid] + np.arange(dim)


# ------------------------------------------------------------------------------------------------
# what the sensors read
# ------------------------------------------------------------------------------------------------
class ContactSensing:
    """What the simulation's sensors say about the contact points, at one step (``sensordata`` of
    shape ``(nsensordata,)``) or at ``k`` recorded steps (``(k, nsensordata)``: every quantity then
    has a leading axis of length ``k``; shapes below are for one step). ``n`` = number of points.
    World frame; forces are ON the robot. Each quantity is decoded from the raw sensor values when
    first read; treat the object as read-only.

    Normal and tangential components are taken in the contact's frame, as MuJoCo's contact sensor
    gives them (the normal of a floor contact is the floor's).

    Attributes:
        layout: the :class:`SensorLayout` it is read with.
        sensordata: the raw sensor values.
        non_sole_contacts: name -> normal force (N) of each robot geom other than the points that
            touches the environment (read from ``MjData.contact`` at one step; empty otherwise).
        non_sole_on_floor: the names of ``non_sole_contacts`` that touch the floor (a fall; a
            wrist on a wall is not one).
    """

    def __init__(
        self,
        layout: SensorLayout,
        sensordata: np.ndarray,
        non_sole_contacts: Mapping[str, float] | None = None,
        friction: np.ndarray | None = None,
        cone: int | np.ndarray = 0,
        non_sole_on_floor: Iterable[str] | None = None,
    ):
        self.layout = layout
        self.sensordata = sensordata
        self.non_sole_contacts = dict(non_sole_contacts or {})
        self.non_sole_on_floor = frozenset(non_sole_on_floor or ())
        self._friction = friction
        #: MuJoCo's friction cone of the step(s) (``mjtCone``: 0 pyramidal, 1 elliptic)
        self.cone = cone

    @property
    def names(self) -> tuple[str, ...]:
        """``(n,)`` point names."""
        return self.layout.names

    @property
    def point_foot(self) -> tuple[str, ...]:
        """``(n,)`` foot of each point."""
        return self.layout.point_foot

    @cached_property
    def _contact(self) -> np.ndarray:
        return self.sensordata.take(self.layout.contact, axis=-1)  # (..., n, 14)

    @cached_property
    def found(self) -> np.ndarray:
        """``(n,)`` bool: the point's sphere touches the floor (within the contact margin)."""
        return self._contact[..., 0] > 0

    @cached_property
    def position_world(self) -> np.ndarray:
        """``(n, 3)`` point positions (the sites), m."""
        return self.sensordata[..., self.layout.site]

    @cached_property
    def gap(self) -> np.ndarray:
        """``(n,)`` distance ``h`` to the point's surface (the floor, a wall), m: the contact's
        distance where the sphere touches, else the point's height above the surface (along its
        normal). Negative: penetration."""
        layout = self.layout
        height = (
            np.einsum("...j,...j->...", self.position_world, layout.surface_normal)
            - layout.surface_offset
        )
        return np.where(self.found, self._contact[..., 4], height)

    @property
    def floor_normal_world(self) -> np.ndarray:
        """``(3,)`` unit normal of the floor, pointing up."""
        return self.layout.floor_normal

    @property
    def normal_force(self) -> np.ndarray:
        """``(n,)`` normal force on the robot along the contact normal, N (>= 0; 0 without
        contact)."""
        return self._contact[..., 1]

    @cached_property
    def tangential_force(self) -> np.ndarray:
        """``(n,)`` norm of the friction force (across the contact normal), N."""
        return np.hypot(self._contact[..., 2], self._contact[..., 3])

    @cached_property
    def slip_velocity(self) -> np.ndarray:
        """``(n,)`` tangential speed of the point relative to the floor at the contact, m/s (0
        without contact)."""
        return np.hypot(self._contact[..., 12], self._contact[..., 13])

    @cached_property
    def _frame(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        c = self._contact
        normal, tangent = c[..., 5:8], c[..., 8:11]  # the sensor frame's first two axes
        return normal, tangent, np.cross(normal, tangent)

    @cached_property
    def force_world(self) -> np.ndarray:
        """``(n, 3)`` contact force on the robot at the point, world frame, N."""
        c, (normal, tangent, binormal) = self._contact, self._frame
        # the sensor gives the force of the point's sphere on the floor: minus it on the robot
        return -(c[..., 1:2] * normal + c[..., 2:3] * tangent + c[..., 3:4] * binormal)

    @cached_property
    def tangential_velocity_world(self) -> np.ndarray:
        """``(n, 3)`` velocity of the point relative to the floor across the contact normal,
        world frame, m/s (0 without contact)."""
        c, (_, tangent, binormal) = self._contact, self._frame
        # the sensor gives the floor's velocity relative to the sphere: minus it
        return -(c[..., 12:13] * tangent + c[..., 13:14] * binormal)

    @cached_property
    def friction(self) -> np.ndarray:
        """``(n,)`` friction coefficient ``mu`` of each point-floor pair, as MuJoCo used it at the
        step (:meth:`ContactSensor.friction`); the model's at the sensor's making if not given."""
        if self._friction is not None:
            return self._friction
        return np.broadcast_to(self.layout.friction, self.normal_force.shape)

    @cached_property
    def tangents(self) -> np.ndarray:
        """``(n, 2, 3)`` the two tangent axes (world) of each point's contact frame, MuJoCo's for a
        touching point (the friction pyramid's axes), its surface's (:attr:`SensorLayout.
        surface_tangents`) otherwise."""
        _, tangent, binormal = self._frame
        frame = np.stack([tangent, binormal], axis=-2)
        return np.where(self.found[..., None, None], frame, self.layout.surface_tangents)

    @property
    def friction_components(self) -> np.ndarray:
        """``(n, 2)`` the friction force along :attr:`tangents`, N (up to sign)."""
        return self._contact[..., 2:4]

    @cached_property
    def mode(self) -> np.ndarray:
        """``(n,)`` int8 :data:`OPEN`, :data:`STICKING` or :data:`SLIDING`: ``open`` unless
        ``normal_force > thresholds.normal_force``; then ``sliding`` if ``slip_velocity >
        thresholds.slip_speed``, else ``sticking``."""
        sliding = self.slip_velocity > self.layout.thresholds.slip_speed
        return np.where(self.loaded, np.where(sliding, SLIDING, STICKING), OPEN).astype(np.int8)

    @cached_property
    def loaded(self) -> np.ndarray:
        """``(n,)`` bool: the point is not ``open`` (``normal_force > thresholds.normal_force``)."""
        return self.normal_force > self.layout.thresholds.normal_force

    @cached_property
    def _external(self) -> np.ndarray:
        return self.sensordata[..., self.layout.external]

    @property
    def n_external(self) -> np.ndarray:
        """Number of contacts between the robot and its environment (sole points included)."""
        return self._external[..., 0]

    @property
    def n_sole(self) -> np.ndarray:
        """Number of the points touching the floor."""
        return self.found.sum(axis=-1)

    @property
    def external_force_world(self) -> np.ndarray:
        """``(3,)`` sum of every contact force on the robot (sole points and any other geom), N."""
        return -self._external[..., 1:4]

    @property
    def external_moment_world(self) -> np.ndarray:
        """``(3,)`` moment of every contact force on the robot about the world origin, N·m (the
        sensor gives the net wrench on the environment at a point ``p``: on the robot about the
        origin, ``-(torque + p x force)``)."""
        e = self._external
        return -(e[..., 4:7] + np.cross(e[..., 7:10], e[..., 1:4]))

    def external_moment_about(self, point: np.ndarray) -> np.ndarray:
        """``(3,)`` moment of every contact force on the robot about ``point`` (world, m), N·m."""
        return self.external_moment_world - np.cross(
            np.asarray(point, dtype=float), self.external_force_world
        )

    @property
    def com(self) -> np.ndarray:
        """``(3,)`` the robot's centre of mass, world, m."""
        return self.sensordata[..., self.layout.com]

    @cached_property
    def feet_loaded(self) -> np.ndarray:
        """``(m,)`` bool: each foot of ``layout.foot_names`` has a loaded point."""
        return (self.loaded @ self.layout.foot_points) > 0

    @cached_property
    def foot_friction(self) -> dict[str, float]:
        """Foot -> the least ``mu`` over its points (one step): what a controller may assume for
        the foot's contacts (:attr:`friction`)."""
        return self.layout.least_friction(np.ascontiguousarray(self.friction, dtype=float))

    @property
    def cone_name(self) -> str:
        """MuJoCo's friction cone of the step, ``"pyramidal"`` or ``"elliptic"`` (one step)."""
        return CONE_NAMES[int(self.cone)]

    @property
    def feet_in_contact(self) -> frozenset[str]:
        """Feet with at least one loaded point (one step)."""
        return self.layout.feet_with(self.loaded)

    def mode_names(self) -> tuple[str, ...]:
        """``(n,)`` mode of each point as text (one step)."""
        return tuple(MODE_NAMES[m] for m in self.mode)

    def index(self, name: str) -> int:
        """Index of point ``name``; raises :class:`~wbsim.errors.UnknownNameError`."""
        try:
            return self.names.index(name)
        except ValueError:
            raise UnknownNameError("contact point", name, self.names) from None

    def points_of_foot(self, foot: str) -> np.ndarray:
        """Indices of the points of ``foot``; raises :class:`~wbsim.errors.UnknownNameError`."""
        idx = np.array([i for i, f in enumerate(self.point_foot) if f == foot and f], dtype=int)
        if idx.size == 0:
            raise UnknownNameError("foot", foot, {f for f in self.point_foot if f})
        return idx

    def __eq__(self, other: object) -> bool:
        """The same sensor values and non-sole contacts (Gymnasium's determinism checks compare
        infos)."""
        if type(other) is not type(self):
            return NotImplemented
        return (
            self.layout.names == other.layout.names
            and np.array_equal(self.sensordata, other.sensordata, equal_nan=True)
            and np.array_equal(self.friction, other.friction, equal_nan=True)
            and np.array_equal(self.cone, other.cone)
            and self.non_sole_contacts == other.non_sole_contacts
            and self.non_sole_on_floor == other.non_sole_on_floor
        )

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "sensordata": self.sensordata,
            "non_sole_contacts": self.non_sole_contacts,
            "friction": self._friction,
            "cone": self.cone,
            "non_sole_on_floor": self.non_sole_on_floor,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]


class ContactSensor:
    """Reads wbsim's contact sensors (:func:`add_contact_sensors`) of a set of point geoms.

    Args:
        model: the ``mujoco.MjModel`` (built with :func:`add_contact_sensors` for these points).
        floor_geom_id: the floor geom (a plane, or a box whose top face is the floor); it must not
            move.
        point_geom_ids: ``(n,)`` the points' sphere geoms.
        point_names: ``(n,)`` names (default: the geoms' names).
        point_feet: ``(n,)`` foot (or hand: the contact) of each point (default: none).
        robot_geom_mask: ``(ngeom,)`` bool, the robot's geoms (default: every geom of the first
            point's kinematic tree).
        thresholds: :class:`SensingThresholds` (or a dict of its fields).
        surface_geom_ids: ``(n,)`` the static geom (a plane, or a box: its top face) each point
            touches, its sensor's other object (default: the floor for every point).

    Raises:
        WbsimError: a floor or surface that is not a plane or a box, a missing sensor, bad ids
            or sizes.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        floor_geom_id: int,
        point_geom_ids: Sequence[int],
        *,
        point_names: Sequence[str] | None = None,
        point_feet: Sequence[str] | None = None,
        robot_geom_mask: np.ndarray | None = None,
        thresholds: SensingThresholds | Mapping[str, float] = SensingThresholds(),
        surface_geom_ids: Sequence[int] | None = None,
    ):
        m = self.model = model
        if not 0 <= int(floor_geom_id) < m.ngeom:
            raise WbsimError(f"floor_geom_id {floor_geom_id} is not a geom id (ngeom={m.ngeom})")
        floor = int(floor_geom_id)
        ids = [int(g) for g in point_geom_ids]
        if not ids or any(not 0 <= g < m.ngeom for g in ids):
            raise WbsimError(f"point_geom_ids {ids} must be geom ids in 0..{m.ngeom - 1}")
        geom_names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) for g in ids]
        names = tuple(point_names) if point_names is not None else tuple(geom_names)
        feet = tuple(point_feet) if point_feet is not None else ("",) * len(ids)
        if not len(names) == len(feet) == len(ids):
            raise WbsimError("point_names and point_feet need one entry per point geom")
        if not isinstance(thresholds, SensingThresholds):
            thresholds = SensingThresholds.from_dict(thresholds)
        # the floor: its upward normal and the offset c of its surface {p : p . normal = c}
        ftype = int(m.geom_type[floor])
        if ftype not in (int(mujoco.mjtGeom.mjGEOM_PLANE), int(mujoco.mjtGeom.mjGEOM_BOX)):
            raise WbsimError(
                "the floor geom must be a plane or a box (its top face is the floor), "
                f"got geom type {mujoco.mjtGeom(ftype).name}"
            )
        d = mujoco.MjData(m)
        mujoco.mj_kinematics(m, d)
        axes = d.geom_xmat[floor].reshape(3, 3)
        normal, tangents = axes[:, 2].copy(), axes[:, 0:2].T.copy()
        top = float(m.geom_size[floor, 2]) if ftype == int(mujoco.mjtGeom.mjGEOM_BOX) else 0.0
        surfaces = (
            np.full(len(ids), floor)
            if surface_geom_ids is None
            else np.array([int(g) for g in surface_geom_ids])
        )
        if surfaces.shape != (len(ids),) or not np.all((surfaces >= 0) & (surfaces < m.ngeom)):
            raise WbsimError(f"surface_geom_ids must be one geom id per point, in 0..{m.ngeom - 1}")
        frames = {int(g): surface_frame(m, int(g)) for g in np.unique(surfaces)}
        s_normal = np.array([frames[int(g)][0][:, 2] for g in surfaces])
        s_tangents = np.array([frames[int(g)][0][:, 0:2].T for g in surfaces])
        s_offset = np.array([frames[int(g)][1] for g in surfaces])
        friction = pair_friction(m, ids, surfaces)
        for a in (normal, tangents, friction, s_normal, s_tangents, s_offset):
            a.setflags(write=False)
        width = sum(size for _, size in _POINT_FIELDS)
        #: the :class:`SensorLayout` every :class:`ContactSensing` of this sensor is read with
        self.layout = SensorLayout(
            names=names,
            point_foot=feet,
            contact=np.array([_sensor_indices(m, f"contact/{g}", width) for g in geom_names]),
            site=np.array([_sensor_indices(m, f"site/{g}", 3) for g in geom_names]),
            external=_sensor_indices(m, "external", sum(s for _, s in _EXTERNAL_FIELDS)),
            com=_sensor_indices(m, "com", 3),
            floor_normal=normal,
            floor_tangents=tangents,
            floor_offset=float(d.geom_xpos[floor] @ normal) + top,
            friction=friction,
            thresholds=thresholds,
            surface_normal=s_normal,
            surface_tangents=s_tangents,
            surface_offset=s_offset,
        )
        self.floor_geom_id = floor
        self.point_geom_ids = np.array(ids)
        #: ``(n,)`` the surface geom of each point
        self.surface_geom_ids = surfaces
        if robot_geom_mask is None:
            root = m.body_rootid[m.geom_bodyid[ids[0]]]
            robot_geom_mask = m.body_rootid[m.geom_bodyid] == root
        self.robot_geom_mask = np.asarray(robot_geom_mask, dtype=bool)
        self._is_point = np.zeros(m.ngeom, dtype=bool)
        self._is_point[ids] = True
        self._surface_of_geom = np.full(m.ngeom, -1)
        self._surface_of_geom[ids] = surfaces
        self._point_of_geom = np.full(m.ngeom, -1)
        self._point_of_geom[ids] = np.arange(len(ids))
        self._found = self.layout.contact[:, 0]
        self._n_external = int(self.layout.external[0])  # index of the number of contacts
        self._opt = m.opt  # (a live view of the model's options, made once)
        self._rule_key: tuple[bytes, bytes] | None = None  # model values of _rule_mu
        self._rule_mu = friction
        self._geom_names = []
        for g in range(m.ngeom):
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g)
            if not name:
                b = int(m.geom_bodyid[g])
                name = f"{mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or f'body{b}'}/geom{g}"
            self._geom_names.append(name)

    @classmethod
    def for_robot(
        cls, robot, thresholds: SensingThresholds | Mapping[str, float] = SensingThresholds()
    ) -> ContactSensor:
        """The sensor of a :class:`wbsim.Robot`'s contact points (``robot.contact_point_names``
        order: the soles, left foot first, then the hands'), each against its surface. Raises
        :class:`~wbsim.errors.NoFeetError` without feet."""
        robot.feet  # noqa: B018  (raises NoFeetError)
        contacts = robot.contacts.values()
        return cls(
            robot.mj_model,
            robot.floor_geom_id,
            [g for f in contacts for g in f.mj_geom_ids],
            point_names=robot.contact_point_names,
            point_feet=[f.name for f in contacts for _ in f.mj_geom_ids],
            thresholds=thresholds,
            surface_geom_ids=[f.mj_surface_geom_id for f in contacts for _ in f.mj_geom_ids],
        )

    @property
    def names(self) -> tuple[str, ...]:
        return self.layout.names

    @property
    def thresholds(self) -> SensingThresholds:
        return self.layout.thresholds

    def read(self, data: mujoco.MjData) -> ContactSensing:
        """The sensing of the state in ``data`` (right after ``mj_forward`` or ``mj_step``: then
        the state before the integration), with the non-sole contacts named, the friction MuJoCo
        used (:meth:`friction`) and its cone type."""
        sd = data.sensordata.copy()
        non_sole, on_floor = None, None
        if sd[self._n_external] > sd.take(self._found).sum():
            non_sole, on_floor = self._non_sole(data)
        return ContactSensing(
            self.layout, sd, non_sole, self.friction(data), int(self._opt.cone), on_floor
        )

    def decode(
        self, sensordata: np.ndarray, friction: np.ndarray | None = None, cone: int | np.ndarray = 0
    ) -> ContactSensing:
        """A :class:`ContactSensing` of recorded ``sensordata`` rows ``(..., nsensordata)``, with
        the recorded ``friction`` ``(..., n)`` and cone types (:meth:`read`'s)."""
        return ContactSensing(
            self.layout, np.asarray(sensordata, dtype=float), None, friction, cone
        )

    def friction(self, data: mujoco.MjData) -> np.ndarray:
        """``(n,)`` the sliding friction coefficient MuJoCo gives each point-surface pair now: its
        contact's (``data.contact.friction``) where the pair is listed, else the rule MuJoCo
        applies to the model's current values (the higher ``geom_priority``'s friction, else the
        larger of the two), so a friction changed at run time is the one read."""
        surfaces = self.surface_geom_ids
        if not data.ncon or not self.model.npair:
            # without <pair> elements every contact's friction is the rule's, listed or not
            return self._rule_friction()
        con = data.contact
        geom = con.geom
        point = np.maximum(self._point_of_geom[geom[:, 0]], self._point_of_geom[geom[:, 1]])
        surface = surfaces[point]  # (point -1: the last one's, dropped below)
        pair = (geom[:, 0] == surface) | (geom[:, 1] == surface)
        rows = np.flatnonzero(pair & (point >= 0))
        listed = point[rows]
        mu = np.full(len(surfaces), np.nan)
        mu[listed] = con.friction[rows, 0]
        if len(listed) < len(surfaces) or np.isnan(mu).any():  # a point without its contact
            mu = np.where(np.isnan(mu), self._rule_friction(), mu)
        return mu

    def _rule_friction(self) -> np.ndarray:
        """:func:`pair_friction` of the points with their surfaces under the model's current
        ``geom_friction`` and ``geom_priority`` (read-only; computed again only when those
        values changed since the last call)."""
        m = self.model
        key = (m.geom_friction.tobytes(), m.geom_priority.tobytes())
        if key != self._rule_key:
            mu = pair_friction(m, self.point_geom_ids, self.surface_geom_ids)
            mu.setflags(write=False)
            self._rule_key, self._rule_mu = key, mu
        return self._rule_mu

    def non_sole_contacts(self, data: mujoco.MjData) -> dict[str, float]:
        """Name -> normal force (N, on the robot, along the contact's normal) of every robot geom
        that touches the environment now, other than a point on its own surface (a sole point
        on the floor, a hand's point on its wall; a point touching anything else counts): an
        active contact (``efc_address >= 0``) with ``dist <= 0`` or a normal force above the
        loaded threshold. From ``data.contact`` and ``mujoco.mj_contactForce``."""
        return self._non_sole(data)[0]

    def _non_sole(self, data: mujoco.MjData) -> tuple[dict[str, float], set[str]]:
        """:meth:`non_sole_contacts` and the names among them that touch the floor."""
        out: dict[str, float] = {}
        on_floor: set[str] = set()
        if not data.ncon:
            return out, on_floor
        con = data.contact
        robot = self.robot_geom_mask[con.geom]  # (ncon, 2)
        geom = np.where(robot[:, 0], con.geom[:, 0], con.geom[:, 1])
        other = np.where(robot[:, 0], con.geom[:, 1], con.geom[:, 0])
        own = self._is_point[geom] & (self._surface_of_geom[geom] == other)
        candidates = np.flatnonzero((robot[:, 0] != robot[:, 1]) & ~own & (con.efc_address >= 0))
        f6 = np.zeros(6)
        fn = np.empty(len(candidates))
        for j, i in enumerate(candidates.tolist()):
            mujoco.mj_contactForce(self.model, data, i, f6)
            fn[j] = f6[0]  # the normal component, in the contact frame: it pushes them apart
        touching = (con.dist[candidates] <= 0) | (fn > self.thresholds.normal_force)
        for g, o, value in zip(
            geom[candidates][touching].tolist(),
            other[candidates][touching].tolist(),
            fn[touching].tolist(),
        ):
            name = self._geom_names[g]
            out[name] = out.get(name, 0.0) + value
            if o == self.floor_geom_id:
                on_floor.add(name)
        return out, on_floor
