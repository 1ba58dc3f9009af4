"""Sole contact points, the support polygon, and contact sensing from MuJoCo.

Owns: where the sole points are in the simulation, the support polygon of a contact set, and what the
simulation says about each sole point every step (:class:`ContactSensor` -> :class:`ContactSensing`):
gap to the floor, contact force on the robot, slip velocity and contact mode. It never decides what is
a violation; that belongs to :mod:`wbsim.diagnostics`.

MuJoCo facts this module relies on (verified against the installed MuJoCo 4.x in
``tests/test_contacts.py``):

* ``mujoco.mj_contactForce(m, d, i, out)`` returns the 6D force of contact ``i`` in its contact frame,
  normal first; ``d.contact.frame[i]`` holds the frame's axes as ROWS, the first row being the normal,
  which points from ``geom1`` to ``geom2``. Rotated to the world (``frame.T @ out[:3]``) it is the force
  that ``geom1`` exerts on ``geom2``; the force on ``geom1`` is its negative. MuJoCo orders a pair by geom
  type (a plane is always ``geom1``, a sphere comes before a box), so either geom can be the robot's.
* In MuJoCo 4.x a geom pair is listed in ``d.contact`` when ``dist < margin + gap`` and is active (has
  constraint rows, ``efc_address >= 0``) only when ``dist < margin``; a listed, inactive pair
  (``exclude == 1``, "in gap") carries no force.
* After ``mj_step`` every derived quantity (``site_xpos``, ``cvel``, ``contact``, ``efc_force``,
  ``qacc``) belongs to the state BEFORE the integration, i.e. the state the controller saw; sensing
  read right after ``mj_step`` is therefore consistent with the command of that step.
"""

from __future__ import annotations

import ctypes
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from wbsim.conventions import MjDataGather, buffer_address
from wbsim.errors import UnknownNameError, WbsimError, check_keys

__all__ = [
    "MODE_NAMES",
    "OPEN",
    "SLIDING",
    "STICKING",
    "ContactSensing",
    "ContactSensor",
    "PointContactSensor",
    "SensingThresholds",
    "convex_hull",
    "point_in_polygon",
    "sense_point_contacts",
    "sole_points_in_world",
    "support_polygon",
]


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


def sole_points_in_world(robot, data: mujoco.MjData, feet: Iterable[str] | None = None) -> np.ndarray:
    """World positions ``(4 * n_feet, 3)`` of the sole points of ``feet`` (default: both), m,
    read from MuJoCo's sites (``mj_kinematics`` must have run)."""
    names = robot.feet if feet is None else feet
    return np.array([data.site_xpos[s] for f in names for s in robot.foot(f).mj_site_ids])


def support_polygon(robot, data: mujoco.MjData, feet: Iterable[str] | None = None) -> np.ndarray:
    """Support polygon ``(k, 2)``, world x-y, counter-clockwise: the convex hull of the sole points of
    the feet in contact."""
    return convex_hull(sole_points_in_world(robot, data, feet)[:, :2])


# ------------------------------------------------------------------------------------------------
# contact sensing
# ------------------------------------------------------------------------------------------------
#: Contact modes of a point (values of :attr:`ContactSensing.mode`).
OPEN, STICKING, SLIDING = 0, 1, 2
#: Name of each mode value: ``MODE_NAMES[OPEN] == "open"``.
MODE_NAMES = ("open", "sticking", "sliding")


@dataclass(frozen=True)
class SensingThresholds:
    """When a sensed point counts as loaded and as sliding (sensing, not violation, thresholds).

    Attributes:
        normal_force: N. A point is loaded (not ``open``) when its simulated normal force exceeds this.
            0.5 N is about 1 % of the load of one of a G1's 8 sole points in quiet standing, and well
            above the solver's noise on an unloaded point (0).
        slip_speed: m/s. A loaded point is ``sliding`` when its tangential speed exceeds this, else
            ``sticking``. MuJoCo's soft friction lets a sticking contact creep; 5 mm/s is above the
            creep measured in ``tests/test_contacts.py`` (box pushed at 0.5 mu m g) and in quiet
            standing, and a box pushed past its friction limit exceeds it within a few steps.
    """

    normal_force: float = 0.5
    slip_speed: float = 0.005

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not np.isfinite(value) or value < 0:
                raise WbsimError(f"SensingThresholds.{f.name} must be finite and >= 0, got {value!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SensingThresholds:
        """Build from a mapping; unknown keys raise :class:`WbsimError` listing the known ones."""
        check_keys("SensingThresholds", data, (f.name for f in dataclasses.fields(cls)))
        return cls(**data)


@dataclass(eq=False, slots=True)
class ContactSensing:
    """What the simulation says about the sole points at one step. ``n`` = number of points,
    ``k`` = number of contacts between the robot and the environment.

    All vectors are in the WORLD frame; forces are the forces ON THE ROBOT. Arrays are fresh (not
    views of ``MjData``; several may be views of one fresh buffer of this step). Treat it as
    read-only (it is not frozen only because a frozen dataclass costs microseconds to build, every
    step).

    Attributes:
        names: ``(n,)`` point names (left foot first for a robot).
        point_foot: ``(n,)`` foot of each point (``""`` when the points are not grouped in feet).
        position_world: ``(n, 3)`` point positions (MuJoCo sites, or the spheres' lowest points), m.
        gap: ``(n,)`` distance to the floor ``h(p)``, m: the smallest ``d.contact.dist`` of the point's
            listed contacts, else the point's height above the floor surface. Negative = penetration.
        floor_normal_world: ``(3,)`` unit normal of the floor surface, pointing up (out of the floor).
            Normal and tangential components below are taken along and across it (for a point on a
            plane or on a box's top face the contact normal is this normal).
        force_world: ``(n, 3)`` contact force on the robot at the point (sum over its contacts), N.
        normal_force: ``(n,)`` ``force_world . floor_normal_world``, N (>= 0 for a simulated force).
        tangential_force: ``(n,)`` norm of the force component orthogonal to the normal, N.
        tangential_velocity_world: ``(n, 3)`` velocity of the point relative to the floor with the
            normal component removed, m/s.
        slip_velocity: ``(n,)`` norm of ``tangential_velocity_world`` (slip speed), m/s.
        friction: ``(n,)`` sliding friction coefficient ``mu`` of the point-floor pair: the larger of
            the two geoms' coefficients, which is how MuJoCo combines them (equal priorities).
        mode: ``(n,)`` int8, :data:`OPEN`, :data:`STICKING` or :data:`SLIDING` (see :data:`MODE_NAMES`):
            ``open`` unless ``normal_force > thresholds.normal_force``; then ``sliding`` if
            ``slip_velocity > thresholds.slip_speed``, else ``sticking``.
        feet_in_contact: feet with at least one loaded (non-open) point.
        non_sole_contacts: name -> normal force (N) of every robot geom other than the sole points that
            touches the environment (an active contact with ``dist <= 0``, or one loaded above the
            threshold); the name is the geom's, or ``"<body>/geom<id>"`` for an unnamed geom.
        contact_position_world: ``(k, 3)`` position of every robot-environment contact (MuJoCo's
            ``d.contact.pos``), m.
        contact_force_world: ``(k, 3)`` force on the robot at each of those contacts, N.
    """

    names: tuple[str, ...]
    point_foot: tuple[str, ...]
    position_world: np.ndarray
    gap: np.ndarray
    floor_normal_world: np.ndarray
    force_world: np.ndarray
    normal_force: np.ndarray
    tangential_force: np.ndarray
    tangential_velocity_world: np.ndarray
    slip_velocity: np.ndarray
    friction: np.ndarray
    mode: np.ndarray
    feet_in_contact: frozenset[str]
    non_sole_contacts: Mapping[str, float]
    contact_position_world: np.ndarray
    contact_force_world: np.ndarray

    def __eq__(self, other: object) -> bool:
        """Field-by-field equality, arrays element-wise (so Gymnasium's determinism checks can
        compare infos that hold a sensing)."""
        if type(other) is not type(self):
            return NotImplemented
        for name in self.__slots__:
            a, b = getattr(self, name), getattr(other, name)
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                if not np.array_equal(a, b):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None

    @property
    def loaded(self) -> np.ndarray:
        """``(n,)`` bool: the point is not ``open``."""
        return self.mode != OPEN

    @property
    def external_force_world(self) -> np.ndarray:
        """``(3,)`` sum of every contact force on the robot (sole and non-sole), N."""
        return self.contact_force_world.sum(axis=0)

    def external_moment_world(self, about: np.ndarray | None = None) -> np.ndarray:
        """``(3,)`` moment of every contact force on the robot about the point ``about`` (world,
        m; default the world origin), N·m: ``sum_k (p_k - about) x f_k``."""
        # sum_k p_k x f_k from the 3x3 matrix P = sum_k p_k f_k^T (one matmul instead of k crosses):
        # (p x f)_x = P_yz - P_zy, (p x f)_y = P_zx - P_xz, (p x f)_z = P_xy - P_yx
        P = (self.contact_position_world.T @ self.contact_force_world).tolist()
        m = [P[1][2] - P[2][1], P[2][0] - P[0][2], P[0][1] - P[1][0]]
        if about is not None:
            x, y, z = np.asarray(about, dtype=float).tolist()
            fx, fy, fz = self.contact_force_world.sum(axis=0).tolist()
            m = [m[0] - (y * fz - z * fy), m[1] - (z * fx - x * fz), m[2] - (x * fy - y * fx)]
        return np.array(m)

    def mode_names(self) -> tuple[str, ...]:
        """``(n,)`` mode of each point as text (``"open"``, ``"sticking"``, ``"sliding"``)."""
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


def _cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of ``(..., 3)`` arrays (``np.cross`` is ~20x slower on small arrays)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


_EMPTY3 = np.zeros((0, 3))
_EMPTY3.setflags(write=False)
_EMPTY = np.zeros(0)
_EMPTY.setflags(write=False)


class PointContactSensor:
    """Senses point geoms (e.g. sole spheres) against a floor, for any MuJoCo model.

    Everything that depends only on the model (geom -> point map, which geoms belong to the robot,
    names, friction) is computed once here, and what depends only on a contact list (which contact
    is at which point, the contact frames and friction) once per list; :meth:`sense` has no Python
    loop over contacts or points (see its comments). Contacts of a point with any non-robot geom
    count, not only with the floor.

    Args:
        model: the ``mujoco.MjModel``.
        floor_geom_id: the floor geom: a plane, or a box whose top face is the floor.
        point_geom_ids: ``(n,)`` geoms that are the contact points.
        point_names: ``(n,)`` names (default: the geoms' names).
        point_site_ids: ``(n,)`` sites at the points' lowest points (where ``h`` is measured). Without
            sites every point geom must be a sphere; its lowest point is then used.
        point_feet: ``(n,)`` foot name of each point (for :attr:`ContactSensing.feet_in_contact`);
            default: no feet.
        robot_geom_mask: ``(ngeom,)`` bool, the geoms of the robot (forces on them are the robot's).
            Default: every geom not in the floor's kinematic tree (``body_rootid``).
        thresholds: :class:`SensingThresholds` (or a dict of its fields).

    Raises:
        WbsimError: bad ids, a floor that is not a plane or box, a non-sphere point without a site,
            a point geom that is not in the robot mask, or sizes that do not match.
    """

    def __init__(self, model: mujoco.MjModel, floor_geom_id: int, point_geom_ids: Sequence[int], *,
                 point_names: Sequence[str] | None = None, point_site_ids: Sequence[int] | None = None,
                 point_feet: Sequence[str] | None = None, robot_geom_mask: np.ndarray | None = None,
                 thresholds: SensingThresholds | Mapping[str, float] = SensingThresholds()):
        m = model
        self.model = m
        if not 0 <= int(floor_geom_id) < m.ngeom:
            raise WbsimError(f"floor_geom_id {floor_geom_id} is not a geom id (ngeom={m.ngeom})")
        self.floor_geom_id = int(floor_geom_id)
        floor_type = m.geom_type[self.floor_geom_id]
        if floor_type == mujoco.mjtGeom.mjGEOM_PLANE:
            self._floor_offset = 0.0
        elif floor_type == mujoco.mjtGeom.mjGEOM_BOX:
            self._floor_offset = float(m.geom_size[self.floor_geom_id, 2])
        else:
            raise WbsimError("the floor geom must be a plane or a box (its top face is the floor), "
                             f"got geom type {mujoco.mjtGeom(floor_type).name}")
        self.point_geom_ids = np.asarray(point_geom_ids, dtype=int).reshape(-1)
        n = self._n = len(self.point_geom_ids)
        if n == 0:
            raise WbsimError("point_geom_ids is empty")
        if np.any((self.point_geom_ids < 0) | (self.point_geom_ids >= m.ngeom)):
            raise WbsimError(f"point_geom_ids {self.point_geom_ids.tolist()} has ids outside "
                             f"0..{m.ngeom - 1}")
        if len(set(self.point_geom_ids.tolist())) != n:
            raise WbsimError("point_geom_ids has duplicates")
        if point_names is None:
            point_names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"
                           for g in self.point_geom_ids]
        self.names = tuple(str(x) for x in point_names)
        if len(self.names) != n:
            raise WbsimError(f"{len(self.names)} point_names for {n} point geoms")
        self.point_feet = tuple(point_feet) if point_feet is not None else ("",) * n
        if len(self.point_feet) != n:
            raise WbsimError(f"{len(self.point_feet)} point_feet for {n} point geoms")
        #: feet in first-appearance order
        self.foot_names = tuple(dict.fromkeys(f for f in self.point_feet if f))
        self._foot_index_list = [self.foot_names.index(f) if f else -1 for f in self.point_feet]
        if not self.foot_names:
            self._foot_index_list = []
        if point_site_ids is not None:
            self.point_site_ids = np.asarray(point_site_ids, dtype=int).reshape(-1)
            if len(self.point_site_ids) != n:
                raise WbsimError(f"{len(self.point_site_ids)} point_site_ids for {n} point geoms")
            if np.any((self.point_site_ids < 0) | (self.point_site_ids >= m.nsite)):
                raise WbsimError(f"point_site_ids has ids outside 0..{m.nsite - 1}")
            self._radius = None
        else:
            self.point_site_ids = None
            not_spheres = [int(g) for g in self.point_geom_ids
                           if m.geom_type[g] != mujoco.mjtGeom.mjGEOM_SPHERE]
            if not_spheres:
                raise WbsimError(f"point geoms {not_spheres} are not spheres: pass point_site_ids "
                                 "(a site at each point's lowest point)")
            self._radius = m.geom_size[self.point_geom_ids, 0].copy()

        if robot_geom_mask is None:
            floor_root = m.body_rootid[m.geom_bodyid[self.floor_geom_id]]
            robot_geom_mask = m.body_rootid[m.geom_bodyid] != floor_root
        self.robot_geom_mask = np.asarray(robot_geom_mask, dtype=bool).reshape(-1)
        if self.robot_geom_mask.shape != (m.ngeom,):
            raise WbsimError(f"robot_geom_mask must have shape ({m.ngeom},)")
        if not np.all(self.robot_geom_mask[self.point_geom_ids]):
            raise WbsimError("every point geom must be a robot geom (robot_geom_mask)")
        if self.robot_geom_mask[self.floor_geom_id]:
            raise WbsimError("the floor geom is marked as a robot geom")
        self.thresholds = (thresholds if isinstance(thresholds, SensingThresholds)
                           else SensingThresholds.from_dict(thresholds))

        # model-only maps, computed once
        self._geom_to_point = np.full(m.ngeom, -1, dtype=int)
        self._geom_to_point[self.point_geom_ids] = np.arange(n)
        self._point_body = m.geom_bodyid[self.point_geom_ids].copy()
        self._floor_body = int(m.geom_bodyid[self.floor_geom_id])
        self._floor_root = int(m.body_rootid[self._floor_body])
        #: the floor does not move (world body or welded to it): its frame is cached at first use
        self.floor_static = int(m.body_weldid[self._floor_body]) == 0
        self._floor_cache: tuple[np.ndarray, float] | None = None
        self._z_up = False  # the floor's normal is exactly world z (set with the cache)
        #: ``(n,)`` sliding friction of each point-floor pair (MuJoCo takes the larger of the two)
        self.friction = np.maximum(m.geom_friction[self.point_geom_ids, 0],
                                   m.geom_friction[self.floor_geom_id, 0])
        self.friction.setflags(write=False)
        self._pyramidal = m.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL
        # every robot-environment contact has condim 3 (pairs take the larger condim): fast decoding
        env_dims = m.geom_condim[~self.robot_geom_mask & (m.geom_contype | m.geom_conaffinity > 0)]
        self._all_condim3 = (m.npair == 0 and np.all(m.geom_condim[self.robot_geom_mask] == 3)
                             and np.all(env_dims <= 3))
        self._geom_names = []
        for g in range(m.ngeom):
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g)
            if not name:
                b = int(m.geom_bodyid[g])
                name = f"{mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or f'body{b}'}/geom{g}"
            self._geom_names.append(name)
        self._buf = np.zeros(6)
        # the body whose motion each point follows (the site's, else the geom's) and its root, whose
        # subtree CoM is the point ``d.cvel`` is expressed at
        self._vel_body = (m.site_bodyid[self.point_site_ids] if self.point_site_ids is not None
                          else self._point_body).copy()
        self._vel_root = m.body_rootid[self._vel_body].copy()
        # fast path (see :meth:`sense`): set up at the first call, once the floor's frame is known
        self._fast: _FastSetup | None = None
        self._fast_checked = False
        self._plans: dict[tuple, Any] = {}  # contact-list key -> _Plan, None (general), _SEEN_ONCE
        self._last_key: tuple | None = None
        self._last_plan: Any = None
        self._feet_cache: dict[bytes, frozenset[str]] = {}
        # the fast path's one-take gather of positions and velocity factors (per MjData, see
        # :meth:`_gather_for`)
        self._gather: MjDataGather | None = None
        self._gather_data: mujoco.MjData | None = None  # the MjData _gather was made for
        # the contact list read from raw views of MjData's arena, and the compact plans' scratch
        # (per MjData, see :meth:`_raw_for` and :meth:`_sense_hot`)
        self._raw: _RawContacts | None = None
        self._raw_data: mujoco.MjData | None = None  # the MjData _raw was made for
        self._hot: dict[int, _HotSetup | None] = {}  # efc rows of a plan -> its scratch
        self._hot_data: mujoco.MjData | None = None

    def __getstate__(self) -> dict:
        """For copy and pickle: without the fast path's caches, whose scratch buffers are shared
        by views (a copy would break the sharing); they are rebuilt at the next :meth:`sense`."""
        state = self.__dict__.copy()
        state.update(_fast=None, _fast_checked=False, _plans={}, _last_key=None, _last_plan=None,
                     _feet_cache={}, _gather=None, _gather_data=None, _raw=None, _raw_data=None,
                     _hot={}, _hot_data=None)
        return state

    # ------------------------------------------------------------------------------------------
    def floor_normal_and_height(self, data: mujoco.MjData) -> tuple[np.ndarray, float]:
        """The floor's unit normal ``(3,)`` (world, pointing up, out of the floor) and the offset
        ``c`` (m) of its surface ``{p : p . normal = c}``."""
        return self._floor(data)

    def _floor(self, data: mujoco.MjData) -> tuple[np.ndarray, float]:
        if self._floor_cache is not None:
            return self._floor_cache
        R = data.geom_xmat[self.floor_geom_id].reshape(3, 3)
        normal = R[:, 2].copy()
        c = float(data.geom_xpos[self.floor_geom_id] @ normal) + self._floor_offset
        normal.setflags(write=False)
        if self.floor_static:
            self._floor_cache = (normal, c)
            self._z_up = bool(np.array_equal(normal, [0.0, 0.0, 1.0]))
        return normal, c

    def _positions(self, data: mujoco.MjData, floor_n: np.ndarray) -> np.ndarray:
        """World positions ``(n, 3)`` of the points (fresh): the sites, or the spheres' lowest points."""
        if self.point_site_ids is not None:
            return data.site_xpos.take(self.point_site_ids, axis=0)
        pos = data.geom_xpos.take(self.point_geom_ids, axis=0)
        pos -= self._radius[:, None] * floor_n
        return pos

    def _point_velocity(self, data: mujoco.MjData, p: np.ndarray) -> np.ndarray:
        """World linear velocity ``(n, 3)`` of the points ``p (n, 3)`` relative to the floor, from
        ``d.cvel`` (rotation first, world frame, at the subtree CoM of each body's root):
        ``v = v_c + omega x (p - c)``, what ``mj_objectVelocity`` computes point by point."""
        cvel = data.cvel.take(self._vel_body, axis=0)
        v = cvel[:, 3:6] + _cross3(cvel[:, 0:3], p - data.subtree_com.take(self._vel_root, axis=0))
        if not self.floor_static:
            fc = data.cvel[self._floor_body]
            v -= fc[3:6] + _cross3(fc[0:3], p - data.subtree_com[self._floor_root])
        return v

    def _contact_forces(self, data: mujoco.MjData, con, ext: np.ndarray | None) -> np.ndarray:
        """Force ``(k, 3)`` of the contacts ``ext`` (all if ``None``) in their contact frames (normal
        first), as ``mj_contactForce`` gives it: decoded from ``efc_force`` when every contact is
        active with ``condim == 3``, else with ``mj_contactForce`` one contact at a time."""
        efc = con.efc_address if ext is None else con.efc_address.take(ext)
        k = len(efc)
        if self._all_condim3 and efc.min() >= 0:
            e0, e1 = int(efc[0]), int(efc[-1])
            if self._pyramidal:  # 4 pyramid edges n +- mu t_j: f_n = sum, f_t_j = mu_j (f_2j - f_2j+1)
                if e1 - e0 == 4 * (k - 1):  # rows of consecutive contacts are consecutive
                    fp = data.efc_force[e0:e1 + 4].reshape(k, 4)
                else:
                    fp = data.efc_force.take(efc[:, None] + _PYR_ROWS)
                fc = fp @ _PYR_DECODE
                fc[:, 1:] *= (con.friction if ext is None else con.friction.take(ext, axis=0))[:, :2]
                return fc
            if e1 - e0 == 3 * (k - 1):
                return data.efc_force[e0:e1 + 3].reshape(k, 3).copy()
            return data.efc_force.take(efc[:, None] + _ELL_ROWS)
        ids = range(k) if ext is None else ext.tolist()
        fc = np.zeros((k, 3))
        buf, m = self._buf, self.model
        for j, (i, e) in enumerate(zip(ids, efc.tolist())):
            if e >= 0:  # an inactive contact (in the gap) has no force
                mujoco.mj_contactForce(m, data, i, buf)
                fc[j] = buf[:3]
        return fc

    def sense(self, data: mujoco.MjData) -> ContactSensing:
        """Sense the points in ``data``.

        ``data`` must hold positions, velocities and constraint forces of one state: right after
        ``mj_forward`` or ``mj_step`` (then it describes the state before the integration).

        Returns:
            A :class:`ContactSensing`.
        """
        # Runs every step. The usual case (a floor that does not move, every robot-environment
        # contact at a sole point, at most one per point, all active with condim 3) takes a fast
        # path: a handful of numpy calls on precomputed matrices, see _sense_fast. Anything else,
        # and the same values to round-off (tests/test_contacts.py), comes from _sense_general.
        fast = self._fast
        if fast is None or fast.threshold_source is not self.thresholds:
            if self._fast_checked and fast is None:
                return self._sense_general(data)
            fast = self._setup_fast(data)
            if fast is None:
                return self._sense_general(data)
        ncon = data.ncon
        if ncon:
            # the key: the bytes of every contact's geom pair, frame and friction (what a plan
            # depends on), in one take from a raw view of the contact array (_raw_for)
            raw = self._raw if self._raw_data is data else self._raw_for(data)
            if raw is not None and ncon <= raw.max_ncon:
                # T = [dist (ncon) and pos (ncon, 3) as int32 pairs | the key's words]
                idx = raw.indices.get(ncon)
                T = raw.i32.take(raw.index(ncon) if idx is None else idx)
                key = T[8 * ncon:].tobytes()
            else:
                raw = None
                con = data.contact
                key = (con.geom.tobytes(), con.frame.tobytes(), con.friction.tobytes())
        else:
            raw, key = None, ()
        if key == self._last_key:
            plan = self._last_plan
        else:
            plan = self._plans.get(key, _MISSING)
            if plan is _MISSING:
                # a plan is made the second time a contact list is seen, so contacts whose frames
                # change at every step (a curved or uneven floor) do not make one per step
                if len(self._plans) >= _MAX_CACHE:
                    self._plans.clear()
                plan = self._plans[key] = _SEEN_ONCE
                self._last_key, self._last_plan = key, plan
                return self._sense_general(data)
        if plan is _SEEN_ONCE:
            plan = self._plans[key] = self._make_plan(data, data.contact if ncon else None, ncon)
        self._last_key, self._last_plan = key, plan
        if plan is None:
            return self._sense_general(data)
        if plan.hot and (raw is not None or not ncon):
            return self._sense_hot(data, raw, T if ncon else None, plan, fast)
        return self._sense_fast(data, data.contact if ncon else None, plan, fast)

    __call__ = sense

    # ------------------------------------------------------------------------------------------
    # fast path
    # ------------------------------------------------------------------------------------------
    def _setup_fast(self, data: mujoco.MjData) -> _FastSetup | None:
        """Model- and floor-only data of the fast path (``None``: the floor moves)."""
        self._fast_checked = True
        floor_n, floor_c = self._floor(data)
        if not self.floor_static:
            return None
        n = self._n
        if self._z_up:
            t1, t2 = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
            proj = np.diag([1.0, 1.0, 0.0])
        else:  # any orthonormal tangent basis of the floor
            a = np.eye(3)[int(np.argmin(np.abs(floor_n)))]
            t1 = np.cross(floor_n, a)
            t1 /= np.linalg.norm(t1)
            t2 = np.cross(floor_n, t1)
            proj = np.eye(3) - np.outer(floor_n, floor_n)
        # Point velocity v_i = v_c + omega x r_i (cvel of the point's body: omega = cvel[0:3], v_c =
        # cvel[3:6] at the subtree CoM c of its root; r_i = p_i - c). The 6 products of the cross
        # product, (omega x r)_a = omega_a+1 r_a+2 - omega_a+2 r_a+1, are taken elementwise from two
        # gathers (cvel entries, r entries); with v_c they form z = [products (6n) | v_c (3n)], and
        # one matrix maps z to the outputs [v . t1 (n) | v . t2 (n) | tangential v (n, 3)].
        w_idx, r_idx, vc_idx = [], [], []
        G = np.zeros((3 * n, 9 * n))
        for i, b in enumerate(self._vel_body.tolist()):
            for a_ in range(3):
                j, k = (a_ + 1) % 3, (a_ + 2) % 3
                w_idx += [6 * b + j, 6 * b + k]
                r_idx += [3 * i + k, 3 * i + j]
                G[3 * i + a_, 6 * i + 2 * a_] = 1.0
                G[3 * i + a_, 6 * i + 2 * a_ + 1] = -1.0
                G[3 * i + a_, 6 * n + 3 * i + a_] = 1.0
                vc_idx.append(6 * b + 3 + a_)
        Q = np.zeros((5 * n, 3 * n))
        for i in range(n):
            Q[i, 3 * i:3 * i + 3] = t1
            Q[n + i, 3 * i:3 * i + 3] = t2
            Q[2 * n + 3 * i:2 * n + 3 * i + 3, 3 * i:3 * i + 3] = proj
        z = np.zeros(9 * n)
        gather_parts = None
        if self.point_site_ids is not None:
            # one take from MjData (:meth:`_gather_for`): G = [site positions (3 n) | p factors (6 n)
            # | c factors (6 n) | omega factors (6 n) | v_c (3 n)], each factor block made of two
            # (n, 3) halves: (omega x r)_a = omega_a+1 r_a+2 - omega_a+2 r_a+1 with r = p - c
            site_flat = (3 * self.point_site_ids[:, None] + np.arange(3)).reshape(-1)
            body = np.repeat(self._vel_body, 3)  # body of each (point, axis) entry, point-major
            root = np.repeat(self._vel_root, 3)
            axis = np.tile(np.arange(3), n)
            pt3 = np.repeat(np.arange(n), 3) * 3
            w_f = np.concatenate([6 * body + (axis + 1) % 3, 6 * body + (axis + 2) % 3])
            r_ax = np.concatenate([(axis + 2) % 3, (axis + 1) % 3])
            p_f = site_flat[np.tile(pt3, 2) + r_ax]
            c_f = 3 * np.tile(root, 2) + r_ax
            gather_parts = (("site_xpos", site_flat), ("site_xpos", p_f), ("subtree_com", c_f),
                            ("cvel", w_f), ("cvel", 6 * body + 3 + axis))
        fast = _FastSetup(
            floor_n=floor_n, floor_c=floor_c, basis=np.vstack([floor_n, t1, t2]).T,
            vel_matrix=(Q @ G).T.copy(), w_idx=np.array(w_idx), r_idx=np.array(r_idx),
            vc_idx=np.array(vc_idx), z=z, z_prod=z[:6 * n], z_vc=z[6 * n:],
            f_threshold=np.full(n, self.thresholds.normal_force),
            v_threshold=np.full(n, self.thresholds.slip_speed),
            threshold_source=self.thresholds, gather_parts=gather_parts)
        self._fast = fast
        return fast

    def _make_plan(self, data: mujoco.MjData, con, ncon: int) -> _Plan | None:
        """The fast path's plan for this contact list (geom pairs, frames, friction), or ``None``
        when the list needs the general path (non-sole contacts, two contacts at one point, a
        condim other than 3)."""
        n = self._n
        rows = 4 if self._pyramidal else 3
        if ncon == 0:
            ext = np.zeros(0, dtype=int)
            rgeom, sign = ext, np.zeros(0)
        else:
            if not (self._all_condim3 and np.all(con.dim == 3)):
                return None
            geom = con.geom.copy()
            mg = self.robot_geom_mask[geom]
            ext = np.flatnonzero(mg[:, 0] != mg[:, 1])
            r2 = mg[ext, 1]
            sign = np.where(r2, 1.0, -1.0)
            rgeom = np.where(r2, geom[ext, 1], geom[ext, 0])
        pidx = self._geom_to_point[rgeom]
        if np.any(pidx < 0) or len(set(pidx.tolist())) != len(pidx):
            return None  # a non-sole contact, or two contacts at one point
        ke = len(ext)
        N0 = 3 * n + 3 * ke
        # efc_force rows of the k contacts -> F = [force at each point (n, 3) | force of each
        # robot-environment contact (ke, 3) | f . normal (n) | f . t1 (n) | f . t2 (n)]
        B = np.zeros((rows * ncon, N0 + 3 * n))
        basis = self._fast.basis
        for e, (i, p, s) in enumerate(zip(ext.tolist(), pidx.tolist(), sign.tolist())):
            frame = con.frame[i].reshape(3, 3)  # rows: the contact frame's axes, normal first
            if rows == 4:  # pyramid edge forces -> contact-frame force (f_n, f_t1, f_t2)
                D = (_PYR_DECODE * np.r_[1.0, con.friction[i, :2]]) @ frame
            else:
                D = frame.copy()
            D *= s  # the force geom1 exerts on geom2; on geom1 it is the opposite
            r0 = rows * i
            B[r0:r0 + rows, 3 * p:3 * p + 3] = D
            B[r0:r0 + rows, 3 * n + 3 * e:3 * n + 3 * e + 3] = D
            DB = D @ basis
            for c in range(3):
                B[r0:r0 + rows, N0 + c * n + p] = DB[:, c]
        if ke == ncon and ke == n:  # every point has its contact: the gap is the contact distance
            order = np.empty(n, dtype=int)
            order[pidx] = np.arange(n)
            gap_order = None if np.array_equal(order, np.arange(n)) else order
            gap_points = gap_rows = None
        elif ke:
            gap_order, gap_points, gap_rows = None, pidx.copy(), ext.copy()
        else:
            gap_order = gap_points = gap_rows = None
        # z up and contact i at point i: the normal and tangential parts and the contact forces
        # are the point forces' components, so F needs only the point forces (compact)
        compact = bool(self._z_up and ke == ncon == n and gap_order is None)
        # z up and every contact at its own sole point (any number, any order): _sense_hot, with
        # the point forces from B's first 3 n columns (zero at points without a contact); no
        # contact at all included (the point velocities and heights only)
        hot = bool(self._z_up and ke == ncon and self.point_site_ids is not None)
        return _Plan(k=ncon, n_rows=rows * ncon, last_row=rows * (ncon - 1),
                     B=B[:, :3 * n].copy() if compact else B, N0=N0,
                     ext=None if ke == ncon else ext, ke=ke, gap_all=ke == ncon == n,
                     gap_order=gap_order, gap_points=gap_points, gap_rows=gap_rows,
                     compact=compact, hot=hot, M=self._hot_matrix(B[:, :3 * n]) if hot else None,
                     hot_points=None if compact else pidx.copy())

    def _sense_fast(self, d: mujoco.MjData, con, plan: _Plan, fast: _FastSetup) -> ContactSensing:
        n = self._n
        N0 = plan.N0
        if plan.k:
            ea = con.efc_address
            e0 = int(ea[0])
            if e0 < 0 or int(ea[-1]) - e0 != plan.last_row:
                return self._sense_general(d)  # inactive contacts, or rows not consecutive
            F = d.efc_force[e0:e0 + plan.n_rows].dot(plan.B)
        else:
            F = np.zeros(plan.B.shape[1])
        gather = self._gather if self._gather_data is d else self._gather_for(d, fast)
        if gather is not None:
            # one take: G = [pos (3 n) | p (6 n) | c (6 n) | omega (6 n) | v_c (3 n)] (_setup_fast);
            # the products omega (p - c) overwrite the omega part: v = v_c + omega x (p - c)
            G = gather.gather()
            prod = np.multiply(G[15 * n:21 * n], np.subtract(G[3 * n:9 * n], G[9 * n:15 * n]),
                               out=G[15 * n:21 * n])
            vt = np.subtract(prod[:3 * n], prod[3 * n:], out=G[9 * n:12 * n])
            vt += G[21 * n:]
            vt = vt.reshape(n, 3)
            pos = G[:3 * n].reshape(n, 3)
            if self._z_up:  # tangential = horizontal
                vt[:, 2] = 0.0
                slip = np.hypot(vt[:, 0], vt[:, 1])
            else:
                vt -= (vt @ fast.floor_n)[:, None] * fast.floor_n
                slip = np.sqrt(np.add.reduce(vt * vt, 1))
        else:
            pos = self._positions(d, fast.floor_n)
            V = self._velocities(d, pos, fast)
            slip = np.hypot(V[:n], V[n:2 * n])
            vt = V[2 * n:].reshape(n, 3)
        if plan.compact:  # z up, contact i at point i: F is the force at each point
            force = F.reshape(n, 3)
            fn = force[:, 2]
            ft = np.hypot(force[:, 0], force[:, 1])
        else:
            force = F[:3 * n].reshape(n, 3)
            fn = F[N0:N0 + n]
            ft = np.hypot(F[N0 + n:N0 + 2 * n], F[N0 + 2 * n:])
        loaded = fn > fast.f_threshold
        # OPEN 0, STICKING 1 (loaded), SLIDING 2 (loaded and sliding)
        mode = np.add(loaded, loaded & (slip > fast.v_threshold), dtype=np.int8)
        # gap: the contact distance at points with a contact, else the height above the floor
        if plan.gap_all:
            gap = con.dist.copy() if plan.gap_order is None else con.dist.take(plan.gap_order)
        else:
            if self._z_up:
                gap = pos[:, 2] - fast.floor_c
            else:
                gap = pos @ fast.floor_n
                gap -= fast.floor_c
            if plan.gap_points is not None:
                gap[plan.gap_points] = con.dist.take(plan.gap_rows)
        if plan.k:
            c_pos = con.pos.copy() if plan.ext is None else con.pos.take(plan.ext, axis=0)
        else:
            c_pos = _EMPTY3
        feet = self._feet_cached(loaded)
        return ContactSensing(
            self.names, self.point_feet, pos, gap, fast.floor_n, force, fn, ft, vt, slip,
            self.friction, mode, feet, {}, c_pos,
            F.reshape(n, 3) if plan.compact else F[3 * n:N0].reshape(plan.ke, 3))

    def _sense_hot(self, d: mujoco.MjData, raw: _RawContacts, T: np.ndarray, plan: _Plan,
                   fast: _FastSetup) -> ContactSensing:
        """:meth:`_sense_fast` for a hot plan (z-up floor, sites, each of the ``k`` contacts at its
        own sole point), in the fewest numpy calls: X = [efc_force rows | omega x (p - c) products
        | v_c] in one scratch buffer (one take from MjData, one copy of the rows, two in-place
        ufuncs), then ONE product with ``plan.M`` gives ``[force at each point (n, 3) | tangential
        velocity (n, 3)]`` (zero force at a point without a contact) and one ``hypot`` both norms.
        The same values as :meth:`_sense_fast` to round-off (the products' sums are grouped
        differently); positions, gaps and contact positions are exact copies. With all ``n``
        points in contact in point order (``plan.compact``) the gaps and contact forces are the
        contacts' own arrays; otherwise (``plan.hot_points``: the point of each contact) the gap is
        the height above the floor where no contact is, and the contact forces are the point
        forces taken in contact order. ``T``: :meth:`sense`'s take from ``raw`` (its first ``8 k``
        words: dist and pos; ``None`` without contacts)."""
        n, k = self._n, plan.k
        if k:
            mv, ea, step = raw.mv, raw.ea_word, raw.step
            e0 = mv[ea]
            if e0 < 0 or mv[ea + step * (k - 1)] - e0 != plan.last_row:
                return self._sense_general(d)  # inactive contacts, or rows not consecutive
        else:
            e0 = 0
        hot = self._hot.get(plan.n_rows, _MISSING) if self._hot_data is d else _MISSING
        if hot is _MISSING:
            hot = self._hot_for(d, plan.n_rows)
        if hot is None:
            return self._sense_fast(d, d.contact, plan, fast)
        hot.x_efc[:] = d.efc_force[e0:e0 + plan.n_rows]
        hot.g_view.take(hot.g_index, out=hot.x_tail)  # [p | v_c | c | omega], p where the products go
        prod = hot.x_prod
        np.subtract(prod, hot.x_c, out=prod)
        np.multiply(prod, hot.x_w, out=prod)
        out = hot.x_head.dot(plan.M)  # fresh: [force (n, 3) | tangential v (n, 3) | 0 (2 n)]
        fv = out[:6 * n].reshape(2 * n, 3)
        np.hypot(fv[:, 0], fv[:, 1], out=out[6 * n:])  # [f_t | slip]
        force = fv[:n]
        fn = force[:, 2]
        slip = out[7 * n:]
        loaded = fn > fast.f_threshold
        # OPEN 0, STICKING 1 (loaded), SLIDING 2 (loaded and sliding): loaded << sliding
        mode = np.left_shift(loaded.view(np.int8), (slip > fast.v_threshold).view(np.int8))
        cv = T[:8 * k].view(np.float64) if k else _EMPTY  # fresh: [dist (k) | positions (k, 3)]
        pos = hot.p_view.take(hot.p_index).reshape(n, 3)
        points = plan.hot_points
        if points is None:  # contact i at point i, all n
            gap, c_force = cv[:n], force
        else:
            gap = pos[:, 2] - fast.floor_c  # the height above the floor ...
            gap[points] = cv[:k]  # ... and the contact distance where a contact is
            c_force = force.take(points, axis=0)
        feet = self._feet_cached(loaded)
        return ContactSensing(
            self.names, self.point_feet, pos, gap, fast.floor_n, force, fn, out[6 * n:7 * n],
            fv[n:], slip, self.friction, mode, feet, {}, cv[k:].reshape(k, 3), c_force)

    def _hot_for(self, d: mujoco.MjData, n_rows: int) -> _HotSetup | None:
        """The scratch (for plans of ``n_rows`` efc rows) and gathers of :meth:`_sense_hot` on
        ``d`` (``None``: not one take), kept for the next calls with the same ``d``."""
        n = self._n
        site = 3 * self.point_site_ids
        body, root = 6 * self._vel_body, 3 * self._vel_root
        # products (omega x r)_x = w_y r_z - w_z r_y, (omega x r)_y = w_z r_x - w_x r_z, r = p - c:
        # [w_y r_z | w_z r_x | w_z r_y | w_x r_z], each (n,)
        axes = (2, 0, 1, 2)  # r's axis of each product block
        parts = (("site_xpos", np.concatenate([site + a for a in axes])),
                 ("cvel", np.concatenate([body + 3, body + 4])),  # v_c x, y
                 ("subtree_com", np.concatenate([root + a for a in axes])),
                 ("cvel", np.concatenate([body + 1, body + 2, body + 2, body + 0])))  # omega
        gather = MjDataGather(d, parts)
        pos = MjDataGather(d, (("site_xpos", (site[:, None] + np.arange(3)).reshape(-1)),))
        hot = None
        if gather.one_take and pos.one_take:
            x = np.zeros(n_rows + 14 * n)
            t = n_rows
            hot = _HotSetup(g_view=gather.view, g_index=gather.index, p_view=pos.view,
                            p_index=pos.index, x=x, x_efc=x[:t], x_tail=x[t:],
                            x_prod=x[t:t + 4 * n], x_c=x[t + 6 * n:t + 10 * n],
                            x_w=x[t + 10 * n:], x_head=x[:t + 6 * n])
        if self._hot_data is not d:
            self._hot, self._hot_data = {}, d
        self._hot[n_rows] = hot
        return hot

    def _hot_matrix(self, B: np.ndarray) -> np.ndarray:
        """``plan.M`` of :meth:`_sense_hot`: ``(n_rows + 6 n, 8 n)``, the compact ``B`` (efc rows ->
        point forces) and the velocity map (products, v_c -> horizontal point velocity)."""
        n, R = self._n, B.shape[0]
        M = np.zeros((R + 6 * n, 8 * n))
        M[:R, :3 * n] = B
        i = np.arange(n)
        vx, vy = 3 * n + 3 * i, 3 * n + 3 * i + 1  # columns of each point's v_t x, y
        M[R + i, vx] = 1.0  # + w_y r_z
        M[R + 2 * n + i, vx] = -1.0  # - w_z r_y
        M[R + 4 * n + i, vx] = 1.0  # + v_c x
        M[R + n + i, vy] = 1.0  # + w_z r_x
        M[R + 3 * n + i, vy] = -1.0  # - w_x r_z
        M[R + 5 * n + i, vy] = 1.0  # + v_c y
        return M

    def _raw_for(self, d: mujoco.MjData) -> _RawContacts | None:
        """:class:`_RawContacts` of ``d`` (``None``: the layout is not as expected), kept for the
        next calls with the same ``d``; ``d`` must list contacts."""
        raw = _RawContacts.build(d)
        self._raw, self._raw_data = raw, d
        return raw

    def _gather_for(self, d: mujoco.MjData, fast: _FastSetup) -> MjDataGather | None:
        """The :class:`~wbsim.conventions.MjDataGather` of ``fast.gather_parts`` on ``d``, or ``None``
        (no sites, or not one take); kept for the next calls with the same ``d``."""
        gather = None
        if fast.gather_parts is not None:
            gather = MjDataGather(d, fast.gather_parts)
            if not gather.one_take:
                gather = None
        self._gather, self._gather_data = gather, d
        return gather

    def _velocities(self, d: mujoco.MjData, pos: np.ndarray, fast: _FastSetup) -> np.ndarray:
        """``(5 n,)`` ``[v . t1 (n) | v . t2 (n) | tangential v (n, 3)]`` of the points ``pos (n,
        3)``, from the bodies' ``d.cvel`` (see :meth:`_setup_fast`)."""
        r = pos - d.subtree_com.take(self._vel_root, axis=0)
        cvel = d.cvel
        np.multiply(cvel.take(fast.w_idx), r.take(fast.r_idx), out=fast.z_prod)
        cvel.take(fast.vc_idx, out=fast.z_vc)
        return fast.z.dot(fast.vel_matrix)

    def _feet_cached(self, loaded: np.ndarray) -> frozenset[str]:
        """:meth:`_feet_of`, cached by the bytes of ``loaded`` (up to ``_MAX_CACHE`` patterns)."""
        key = loaded.tobytes()
        feet = self._feet_cache.get(key)
        if feet is None:
            feet = self._feet_of(loaded)
            if len(self._feet_cache) < _MAX_CACHE:
                self._feet_cache[key] = feet
        return feet

    def _feet_of(self, loaded: np.ndarray) -> frozenset[str]:
        """Feet with a loaded point."""
        if not self._foot_index_list:
            return frozenset()
        return frozenset(self.foot_names[i] for i, on in zip(self._foot_index_list, loaded.tolist())
                         if on and i >= 0)

    # ------------------------------------------------------------------------------------------
    # general path
    # ------------------------------------------------------------------------------------------
    def _sense_general(self, data: mujoco.MjData) -> ContactSensing:
        """:meth:`sense` for any contact list and floor (non-sole contacts, several contacts at one
        point, inactive contacts, any condim, a moving floor)."""
        d, n = data, self._n
        floor_n, floor_c = self._floor(d)
        z_up = self._z_up
        pos = self._positions(d, floor_n)
        if z_up:
            gap = pos[:, 2] - floor_c
        else:
            gap = pos @ floor_n
            gap -= floor_c
        force = np.zeros((n, 3))
        non_sole = {}
        c_pos = c_force = _EMPTY3

        ncon = d.ncon
        if ncon:
            con = d.contact
            geom = con.geom  # (ncon, 2) view
            mg = self.robot_geom_mask.take(geom)
            n1, n2 = mg.sum(axis=0).tolist()
            if n1 == 0 and n2 == ncon:  # every contact is robot (geom2) vs environment
                ext, sign, rgeom = None, 1.0, geom[:, 1]
            elif n2 == 0 and n1 == ncon:  # every contact is robot (geom1) vs environment
                ext, sign, rgeom = None, -1.0, geom[:, 0]
            else:
                ext = (mg[:, 0] != mg[:, 1]).nonzero()[0]
                r2 = mg[:, 1].take(ext)
                sign = np.where(r2, 1.0, -1.0)[:, None]
                geom = geom.take(ext, axis=0)
                rgeom = np.where(r2, geom[:, 1], geom[:, 0])
            if ext is None or ext.size:
                fc = self._contact_forces(d, con, ext)
                # frame rows are the axes: world = frame.T @ f is geom1's force on geom2; the force
                # on geom1 is its negative
                frames = (con.frame if ext is None else con.frame.take(ext, axis=0)).reshape(-1, 3, 3)
                f_world = np.matmul(fc[:, None, :], frames)[:, 0, :]
                if ext is not None or sign < 0:
                    f_world *= sign
                c_pos, c_force = _sel(con.pos, ext), f_world
                dist = con.dist if ext is None else con.dist.take(ext)
                pidx = self._geom_to_point.take(rgeom)
                plist = pidx.tolist()
                if min(plist) >= 0 and len(set(plist)) == len(plist):  # one contact per point
                    force[pidx] = f_world
                    gap[pidx] = dist
                else:
                    is_pt = pidx >= 0
                    pi = pidx[is_pt]
                    if pi.size:
                        np.add.at(force, pi, f_world[is_pt])
                        cgap = np.full(n, np.inf)
                        np.minimum.at(cgap, pi, dist[is_pt])
                        has = cgap < np.inf
                        gap[has] = cgap[has]
                    if pi.size < len(plist):
                        efc = _sel(con.efc_address, ext)
                        non_sole = self._non_sole(~is_pt, rgeom, efc, _sel(dist, None), f_world,
                                                  floor_n)

        # normal and tangential parts of the force and of the point velocity
        if z_up:
            fn = force[:, 2].copy()
            ft = np.hypot(force[:, 0], force[:, 1])
        else:
            fn = force @ floor_n
            across = force - fn[:, None] * floor_n
            ft = np.sqrt(np.add.reduce(across * across, 1))
        fast = self._fast
        if fast is not None:  # a static floor: the fast path's velocities
            V = self._velocities(d, pos, fast)
            vt, slip = V[2 * n:].reshape(n, 3), np.hypot(V[:n], V[n:2 * n])
        else:
            vel = self._point_velocity(d, pos)
            vt = vel - (vel @ floor_n)[:, None] * floor_n
            slip = np.sqrt(np.add.reduce(vt * vt, 1))
        loaded = fn > self.thresholds.normal_force
        mode = np.add(slip > self.thresholds.slip_speed, 1, dtype=np.int8)  # STICKING 1, SLIDING 2
        mode *= loaded  # OPEN = 0
        return ContactSensing(
            names=self.names, point_foot=self.point_feet, position_world=pos, gap=gap,
            floor_normal_world=floor_n, force_world=force, normal_force=fn, tangential_force=ft,
            tangential_velocity_world=vt, slip_velocity=slip, friction=self.friction,
            mode=mode, feet_in_contact=self._feet_of(loaded), non_sole_contacts=non_sole,
            contact_position_world=c_pos, contact_force_world=c_force,
        )

    def _non_sole(self, sel, rgeom, efc, dist, f_world, floor_n) -> Mapping[str, float]:
        fn = f_world[sel] @ floor_n
        touching = (efc[sel] >= 0) & ((dist[sel] <= 0) | (fn > self.thresholds.normal_force))
        out: dict[str, float] = {}
        for g, f in zip(rgeom[sel][touching].tolist(), fn[touching].tolist()):
            name = self._geom_names[g]
            out[name] = out.get(name, 0.0) + f
        return out  # a plain dict: sensings travel through pickles (async vector envs)


@dataclass(frozen=True, slots=True)
class _FastSetup:
    """Model- and floor-only data of the fast path (see :meth:`PointContactSensor._setup_fast`)."""

    floor_n: np.ndarray  # (3,) floor normal
    floor_c: float  # floor offset along it
    basis: np.ndarray  # (3, 3) columns: normal, tangent 1, tangent 2
    vel_matrix: np.ndarray  # (9 n, 5 n): z -> [v . t1 | v . t2 | tangential v (n, 3)]
    w_idx: np.ndarray  # (6 n,) flat cvel indices of the omega factor of each cross-product term
    r_idx: np.ndarray  # (6 n,) flat indices into r (n, 3) of its lever-arm factor
    vc_idx: np.ndarray  # (3 n,) flat cvel indices of each point's v_c
    z: np.ndarray  # (9 n,) scratch [products | v_c]
    z_prod: np.ndarray  # view z[:6 n]
    z_vc: np.ndarray  # view z[6 n:]
    f_threshold: np.ndarray  # (n,) SensingThresholds.normal_force
    v_threshold: np.ndarray  # (n,) SensingThresholds.slip_speed
    threshold_source: SensingThresholds  # the sensor's thresholds these were taken from
    gather_parts: tuple | None  # MjDataGather parts of [pos | p | c | omega | v_c] (sites only)


@dataclass(frozen=True, slots=True)
class _Plan:
    """How the fast path reads one contact list (see :meth:`PointContactSensor._make_plan`)."""

    k: int  # contacts listed
    n_rows: int  # efc rows of the k contacts (4 or 3 each)
    last_row: int  # offset of the last contact's rows from the first's
    B: np.ndarray  # (n_rows, 3 n + 3 ke + 3 n) efc_force rows -> F
    N0: int  # offset of f . normal in F (3 n + 3 ke)
    ext: np.ndarray | None  # rows of the robot-environment contacts (None: all)
    ke: int  # their number
    gap_all: bool  # every point has one contact (the gap is its distance) ...
    gap_order: np.ndarray | None  # ... the contact of each point (None: the same order)
    gap_points: np.ndarray | None  # else the points with a contact ...
    gap_rows: np.ndarray | None  # ... and their contacts
    compact: bool = False  # B gives only the point forces (z-up floor, contact i at point i)
    M: np.ndarray | None = None  # (n_rows + 6 n, 8 n) of :meth:`PointContactSensor._sense_hot`
    hot: bool = False  # z up, sites, each contact at its own point: ``_sense_hot`` applies
    hot_points: np.ndarray | None = None  # (k,) the point of each contact (None: compact)


@dataclass(frozen=True, slots=True)
class _HotSetup:
    """Scratch and gathers of :meth:`PointContactSensor._sense_hot` on one MjData."""

    g_view: np.ndarray  # MjDataGather view and index of [p (4 n) | v_c x, y (2 n) | c (4 n) |
    g_index: np.ndarray  # omega (4 n)], taken into x_tail
    p_view: np.ndarray  # ... and of the site positions (3 n)
    p_index: np.ndarray
    x: np.ndarray  # (n_rows + 14 n,) [efc rows | products | v_c | c | omega]
    x_efc: np.ndarray  # views of x
    x_tail: np.ndarray
    x_prod: np.ndarray
    x_c: np.ndarray
    x_w: np.ndarray
    x_head: np.ndarray  # [efc rows | products | v_c]


class _RawContacts:
    """Raw read-only views of ``d.contact`` (the ``mjContact`` array at the start of MjData's arena:
    MuJoCo's ``mj_clearEfc`` sets ``d->contact = d->arena`` before every collision pass), so that
    the contact-list key is one ``take``: the bytes of every contact's ``geom``, ``frame`` and
    ``friction``, the same bytes ``d.contact``'s fields hold. Field offsets and the struct size come
    from the binding's own views; :meth:`build` checks the views read what the binding reads."""

    def __init__(self, d, base: int, size: int, offsets: dict[str, int], nbytes: int):
        self.data = d  # keeps the memory alive
        self.step = size // 4  # int32 words per contact
        self.max_ncon = nbytes // size
        self.i32 = _raw_view(base, nbytes // 4, np.int32)
        self.mv = memoryview(self.i32)
        w = lambda name, count: offsets[name] // 4 + np.arange(count)
        self._key_words = np.concatenate([w("geom", 2), w("frame", 18), w("friction", 10)])
        self.ea_word = offsets["efc_address"] // 4
        self._dist = offsets["dist"] // 4 + np.arange(2)
        self._pos = offsets["pos"] // 4 + np.arange(6)
        self.indices: dict[int, np.ndarray] = {}  # ncon -> index(ncon)

    @classmethod
    def build(cls, d) -> _RawContacts | None:
        con = d.contact
        fields = {"geom": con.geom, "frame": con.frame, "friction": con.friction, "dist": con.dist,
                  "pos": con.pos, "efc_address": con.efc_address}

        size = con.dist.strides[0]
        base = buffer_address(con.dist)
        offsets = {k: buffer_address(a) - base for k, a in fields.items()}
        ok = (d.ncon > 0 and size % 8 == 0 and all(a.strides[0] == size for a in fields.values())
              and all(0 <= off < size for off in offsets.values())
              and all(offsets[k] % 8 == 0 for k in ("frame", "friction", "dist", "pos"))
              and offsets["geom"] % 4 == 0 and offsets["efc_address"] % 4 == 0
              and con.geom.dtype == np.int32 and con.efc_address.dtype == np.int32)
        if not ok:
            return None
        # the contacts lie in the arena (narena bytes from its start, where contact 0 is)
        raw = cls(d, base, size, offsets, (int(d.narena) // size - 1) * size)
        k = d.ncon
        want = np.concatenate([con.geom.view(np.int32).reshape(k, -1),
                               con.frame.view(np.int32).reshape(k, -1),
                               con.friction.view(np.int32).reshape(k, -1)], axis=1).tobytes()
        values = np.concatenate([con.dist, con.pos.reshape(-1)])
        ea = [raw.mv[raw.ea_word + raw.step * i] for i in range(k)]
        if (raw.key(k) != want or ea != con.efc_address.tolist()
                or raw.values(k).tobytes() != values.tobytes()):
            return None
        return raw

    def index(self, ncon: int) -> np.ndarray:
        """Indices into :attr:`i32` of ``[dist (ncon) and pos (ncon, 3) as int32 pairs | the key]``,
        the key being the words of the geom pairs, frames and friction of contacts ``0..ncon-1``;
        cached in :attr:`indices` up to 64 contacts."""
        c = self.step * np.arange(ncon)[:, None]
        idx = np.concatenate([(c + self._dist).reshape(-1), (c + self._pos).reshape(-1),
                              (c + self._key_words).reshape(-1)])
        if ncon <= 64:
            self.indices[ncon] = idx
        return idx

    def key(self, ncon: int) -> bytes:
        """The key's bytes of contacts ``0..ncon-1`` (as :meth:`PointContactSensor.sense` takes it)."""
        return self.i32.take(self.index(ncon))[8 * ncon:].tobytes()

    def values(self, ncon: int) -> np.ndarray:
        """``[dist (ncon) | pos (ncon, 3)]`` of contacts ``0..ncon-1``."""
        return self.i32.take(self.index(ncon))[:8 * ncon].view(np.float64)

    def __getstate__(self):
        raise TypeError("_RawContacts holds views of one MjData's memory")


def _raw_view(address: int, count: int, dtype) -> np.ndarray:
    """Read-only ``(count,)`` view of ``dtype`` at ``address`` (memory that outlives the view)."""
    arr = np.frombuffer((ctypes.c_char * (count * np.dtype(dtype).itemsize)).from_address(address),
                        dtype=dtype)
    arr.setflags(write=False)
    return arr


_MISSING = object()
_SEEN_ONCE = object()
_MAX_CACHE = 256


def _sel(a: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Rows ``rows`` of ``a`` (all if ``None``), always a copy (``d.contact`` fields are views)."""
    return a.copy() if rows is None else a.take(rows, axis=0)

#: efc rows of a condim-3 contact: 4 pyramid edges, or the 3 elliptic components
_PYR_ROWS = np.arange(4)
_ELL_ROWS = np.arange(3)
#: pyramid edge forces -> (f_n, f_0 - f_1, f_2 - f_3); the friction coefficients scale the last two
_PYR_DECODE = np.array([[1.0, 1.0, 0.0], [1.0, -1.0, 0.0], [1.0, 0.0, 1.0], [1.0, 0.0, -1.0]])


class ContactSensor(PointContactSensor):
    """:class:`PointContactSensor` for a :class:`wbsim.Robot`: its sole spheres and sites (left foot
    first, :attr:`wbsim.Robot.contact_point_names` order), its floor, its feet, and every geom of the
    robot's kinematic tree as robot geoms.

    Args:
        robot: a :class:`wbsim.Robot` with feet.
        thresholds: :class:`SensingThresholds` (or a dict of its fields).

    Raises:
        NoFeetError: the robot has no feet.
    """

    def __init__(self, robot, thresholds: SensingThresholds | Mapping[str, float] = SensingThresholds()):
        m = robot.mj_model
        feet = robot.feet
        geoms = [g for f in feet.values() for g in f.mj_geom_ids]
        sites = [s for f in feet.values() for s in f.mj_site_ids]
        point_feet = [f.name for f in feet.values() for _ in f.mj_geom_ids]
        robot_root = m.body_rootid[next(iter(feet.values())).mj_body_id]
        mask = m.body_rootid[m.geom_bodyid] == robot_root
        super().__init__(m, robot.floor_geom_id, geoms, point_names=robot.contact_point_names,
                         point_site_ids=sites, point_feet=point_feet, robot_geom_mask=mask,
                         thresholds=thresholds)
        self.robot = robot


def sense_point_contacts(model: mujoco.MjModel, data: mujoco.MjData, floor_geom_id: int,
                         point_geom_ids: Sequence[int], **kwargs) -> ContactSensing:
    """One-off sensing: ``PointContactSensor(model, floor_geom_id, point_geom_ids, **kwargs)(data)``.

    Builds the maps on each call; in a loop, build a :class:`PointContactSensor` once instead.
    """
    return PointContactSensor(model, floor_geom_id, point_geom_ids, **kwargs).sense(data)
