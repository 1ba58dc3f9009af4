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

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import mujoco
import numpy as np

from wbsim.errors import WbsimError

__all__ = [
    "convex_hull",
    "sole_points_in_world",
    "support_polygon",
    "point_in_polygon",
    "OPEN",
    "STICKING",
    "SLIDING",
    "MODE_NAMES",
    "SensingThresholds",
    "ContactSensing",
    "PointContactSensor",
    "ContactSensor",
    "sense_point_contacts",
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
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise WbsimError(f"SensingThresholds: unknown keys {sorted(unknown)}; known: {sorted(known)}")
        return cls(**data)


@dataclass(frozen=True, eq=False)
class ContactSensing:
    """What the simulation says about the sole points at one step. ``n`` = number of points.

    All vectors are in the WORLD frame; forces are the forces ON THE ROBOT.

    Attributes:
        names: ``(n,)`` point names (left foot first for a robot).
        point_foot: ``(n,)`` foot of each point (``""`` when the points are not grouped in feet).
        position_world: ``(n, 3)`` point positions (MuJoCo sites), m.
        gap: ``(n,)`` distance to the floor ``h(p)``, m: the smallest ``d.contact.dist`` of the point's
            listed contacts, else the point's height above the floor surface. Negative = penetration.
        normal_world: ``(n, 3)`` unit contact normal pointing from the floor to the robot (the floor's
            normal when the point has no contact).
        force_world: ``(n, 3)`` contact force on the robot at the point (sum over its contacts), N.
        normal_force: ``(n,)`` ``force_world . normal_world``, N (>= 0 for a simulated force).
        tangential_force: ``(n,)`` norm of the force component orthogonal to the normal, N.
        tangential_velocity_world: ``(n, 3)`` velocity of the point relative to the floor, normal
            component removed, m/s.
        slip_velocity: ``(n,)`` norm of ``tangential_velocity_world`` (slip speed), m/s.
        friction: ``(n,)`` sliding friction coefficient ``mu`` of the point-floor pair (MuJoCo's
            combined value for listed contacts, else the larger of the two geoms' coefficients).
        mode: ``(n,)`` int8, :data:`OPEN`, :data:`STICKING` or :data:`SLIDING` (:data:`MODE_NAMES`).
        feet_in_contact: feet with at least one loaded (non-open) point.
        non_sole_contacts: name -> normal force (N) of every robot geom other than the sole points that
            touches the environment (active contact with ``dist <= 0`` or a loaded one); the name is the
            geom's, or ``"<body>/geom<id>"`` for an unnamed geom.
        external_force_world: ``(3,)`` sum of every contact force on the robot (sole and non-sole), N.
        external_moment_world: ``(3,)`` moment of those forces about the WORLD ORIGIN, N·m (the moment
            about a point ``c`` is ``external_moment_world - cross(c, external_force_world)``).
    """

    names: tuple[str, ...]
    point_foot: tuple[str, ...]
    position_world: np.ndarray
    gap: np.ndarray
    normal_world: np.ndarray
    force_world: np.ndarray
    normal_force: np.ndarray
    tangential_force: np.ndarray
    tangential_velocity_world: np.ndarray
    slip_velocity: np.ndarray
    friction: np.ndarray
    mode: np.ndarray
    feet_in_contact: frozenset[str]
    non_sole_contacts: Mapping[str, float]
    external_force_world: np.ndarray
    external_moment_world: np.ndarray

    @property
    def loaded(self) -> np.ndarray:
        """``(n,)`` bool: the point is not ``open``."""
        return self.mode != OPEN

    def mode_names(self) -> tuple[str, ...]:
        """``(n,)`` mode of each point as text (``"open"``, ``"sticking"``, ``"sliding"``)."""
        return tuple(MODE_NAMES[m] for m in self.mode)

    def index(self, name: str) -> int:
        """Index of point ``name``; raises :class:`~wbsim.errors.UnknownNameError`."""
        try:
            return self.names.index(name)
        except ValueError:
            from wbsim.errors import UnknownNameError

            raise UnknownNameError("contact point", name, self.names) from None


def _cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of ``(..., 3)`` arrays (``np.cross`` is ~20x slower on small arrays)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


class PointContactSensor:
    """Senses point geoms (e.g. sole spheres) against a floor, for any MuJoCo model.

    Everything that depends only on the model (geom -> point map, which geoms belong to the robot,
    names, friction) is computed once here; :meth:`sense` loops in Python only over the ``d.ncon``
    contacts and is otherwise vectorised.

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
        n = len(self.point_geom_ids)
        if n == 0:
            raise WbsimError("point_geom_ids is empty")
        if np.any((self.point_geom_ids < 0) | (self.point_geom_ids >= m.ngeom)):
            raise WbsimError(f"point_geom_ids {self.point_geom_ids.tolist()} has ids outside 0..{m.ngeom - 1}")
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
        self.foot_names = tuple(dict.fromkeys(f for f in self.point_feet if f))
        self._foot_index = np.array([self.foot_names.index(f) if f else -1 for f in self.point_feet])
        if point_site_ids is not None:
            self.point_site_ids = np.asarray(point_site_ids, dtype=int).reshape(-1)
            if len(self.point_site_ids) != n:
                raise WbsimError(f"{len(self.point_site_ids)} point_site_ids for {n} point geoms")
            if np.any((self.point_site_ids < 0) | (self.point_site_ids >= m.nsite)):
                raise WbsimError(f"point_site_ids has ids outside 0..{m.nsite - 1}")
            self._radius = None
        else:
            self.point_site_ids = None
            not_spheres = [g for g in self.point_geom_ids if m.geom_type[g] != mujoco.mjtGeom.mjGEOM_SPHERE]
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
        self._point_root = m.body_rootid[self._point_body].copy()
        self._floor_body = int(m.geom_bodyid[self.floor_geom_id])
        self._floor_root = int(m.body_rootid[self._floor_body])
        self._floor_static = (self._floor_body == 0 or
                              (m.body_weldid[self._floor_body] == 0))
        self._model_friction = np.maximum(m.geom_friction[self.point_geom_ids, 0],
                                          m.geom_friction[self.floor_geom_id, 0])
        self._geom_names = []
        for g in range(m.ngeom):
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g)
            if not name:
                body = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, m.geom_bodyid[g]) or f"body{m.geom_bodyid[g]}"
                name = f"{body}/geom{g}"
            self._geom_names.append(name)
        self._buf = np.zeros(6)

    # ------------------------------------------------------------------------------------------
    def _floor_frame(self, data: mujoco.MjData) -> tuple[np.ndarray, np.ndarray]:
        """Floor surface normal (world, unit) and a point on the surface."""
        R = data.geom_xmat[self.floor_geom_id].reshape(3, 3)
        normal = R[:, 2].copy()
        origin = data.geom_xpos[self.floor_geom_id] + self._floor_offset * normal
        return normal, origin

    def _point_velocity(self, data: mujoco.MjData, p: np.ndarray) -> np.ndarray:
        """World linear velocity ``(n, 3)`` of the points ``p (n, 3)`` rigidly attached to their bodies
        (from ``d.cvel``: rotation first, at the subtree CoM of each body's root)."""
        cvel = data.cvel[self._point_body]
        r = p - data.subtree_com[self._point_root]
        v = cvel[:, 3:6] + _cross3(cvel[:, 0:3], r)
        if not self._floor_static:
            fc = data.cvel[self._floor_body]
            v -= fc[3:6] + _cross3(fc[0:3], p - data.subtree_com[self._floor_root])
        return v

    def sense(self, data: mujoco.MjData) -> ContactSensing:
        """Sense the points in ``data``.

        ``data`` must hold positions, velocities and constraint forces of one state: right after
        ``mj_forward`` or ``mj_step`` (then it describes the state before the integration).

        Returns:
            A :class:`ContactSensing`.
        """
        m, d = self.model, data
        n = len(self.point_geom_ids)
        floor_n, floor_o = self._floor_frame(d)
        if self.point_site_ids is not None:
            pos = d.site_xpos[self.point_site_ids].copy()
        else:
            pos = d.geom_xpos[self.point_geom_ids] - self._radius[:, None] * floor_n[None, :]
        gap = (pos - floor_o) @ floor_n
        normal = np.broadcast_to(floor_n, (n, 3)).copy()
        force = np.zeros((n, 3))
        friction = self._model_friction.copy()
        ext_f = np.zeros(3)
        ext_m = np.zeros(3)
        non_sole: dict[str, float] = {}

        ncon = d.ncon
        if ncon:
            con = d.contact
            g1, g2 = con.geom1, con.geom2
            r1, r2 = self.robot_geom_mask[g1], self.robot_geom_mask[g2]
            ext = np.flatnonzero(r1 != r2)  # robot vs environment
            if len(ext):
                robot_is_2 = r2[ext]
                rgeom = np.where(robot_is_2, g2[ext], g1[ext])
                sign = np.where(robot_is_2, 1.0, -1.0)
                frames = con.frame[ext].reshape(-1, 3, 3)
                efc = con.efc_address[ext]
                fc = np.zeros((len(ext), 3))
                buf = self._buf
                for k, i in enumerate(ext):  # only the listed contacts
                    if efc[k] >= 0:
                        mujoco.mj_contactForce(m, d, int(i), buf)
                        fc[k] = buf[:3]
                # frame rows are the axes: world = frame.T @ f_contact; sign -> force on the robot
                f_world = np.einsum("kji,kj->ki", frames, fc) * sign[:, None]
                n_robot = frames[:, 0, :] * sign[:, None]
                ext_f = f_world.sum(axis=0)
                ext_m = _cross3(con.pos[ext], f_world).sum(axis=0)
                pidx = self._geom_to_point[rgeom]
                dist = con.dist[ext]
                is_pt = pidx >= 0
                if np.any(is_pt):
                    pi = pidx[is_pt]
                    np.add.at(force, pi, f_world[is_pt])
                    cgap = np.full(n, np.inf)
                    np.minimum.at(cgap, pi, dist[is_pt])
                    has = np.isfinite(cgap)
                    gap[has] = cgap[has]
                    normal[pi] = n_robot[is_pt]
                    friction[pi] = con.friction[ext[is_pt], 0]
                others = np.flatnonzero(~is_pt)
                if len(others):
                    fn_other = np.einsum("ki,ki->k", f_world[others], n_robot[others])
                    touching = (efc[others] >= 0) & (
                        (dist[others] <= 0) | (fn_other > self.thresholds.normal_force))
                    for k in others[touching]:
                        name = self._geom_names[rgeom[k]]
                        non_sole[name] = non_sole.get(name, 0.0) + float(
                            f_world[k] @ n_robot[k])

        fn = np.einsum("ki,ki->k", force, normal)
        ft = np.linalg.norm(force - fn[:, None] * normal, axis=1)
        vel = self._point_velocity(d, pos)
        vt = vel - np.einsum("ki,ki->k", vel, normal)[:, None] * normal
        slip = np.linalg.norm(vt, axis=1)
        loaded = fn > self.thresholds.normal_force
        mode = np.where(loaded, np.where(slip > self.thresholds.slip_speed, SLIDING, STICKING),
                        OPEN).astype(np.int8)
        if self.foot_names:
            fidx = self._foot_index[loaded]
            feet = frozenset(self.foot_names[i] for i in set(fidx.tolist()) if i >= 0)
        else:
            feet = frozenset()
        return ContactSensing(
            names=self.names, point_foot=self.point_feet, position_world=pos, gap=gap,
            normal_world=normal, force_world=force, normal_force=fn, tangential_force=ft,
            tangential_velocity_world=vt, slip_velocity=slip, friction=friction, mode=mode,
            feet_in_contact=feet, non_sole_contacts=MappingProxyType(non_sole),
            external_force_world=ext_f, external_moment_world=ext_m,
        )

    __call__ = sense


class ContactSensor(PointContactSensor):
    """:class:`PointContactSensor` for a :class:`wbsim.Robot`: its sole spheres and sites (left foot
    first), its floor, its feet, and every geom of the robot's kinematic tree as robot geoms.

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
        robot_root = m.body_rootid[feet[next(iter(feet))].mj_body_id]
        mask = m.body_rootid[m.geom_bodyid] == robot_root
        super().__init__(m, robot.floor_geom_id, geoms, point_names=robot.contact_point_names,
                         point_site_ids=sites, point_feet=point_feet, robot_geom_mask=mask,
                         thresholds=thresholds)
        self.robot = robot


def sense_point_contacts(model: mujoco.MjModel, data: mujoco.MjData, floor_geom_id: int,
                         point_geom_ids: Sequence[int], **kwargs) -> ContactSensing:
    """One-off sensing: ``PointContactSensor(model, floor_geom_id, point_geom_ids, **kwargs).sense(data)``.

    Builds the maps each call; in a loop, build a :class:`PointContactSensor` once instead.
    """
    return PointContactSensor(model, floor_geom_id, point_geom_ids, **kwargs).sense(data)
