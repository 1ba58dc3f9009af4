"""Contact sensing from MuJoCo (wbsim.contacts): forces on the robot in the world frame whichever geom
MuJoCo lists first, both friction cones, slip and contact modes, the gap, hovering in the contact gap,
non-sole contacts. Physical values are checked against statics (weight, applied push) and MuJoCo's
own velocity functions, not against the code's formulas."""

import copy

import mujoco
import numpy as np
import pytest

from wbsim.contacts import (
    OPEN,
    SLIDING,
    STICKING,
    ContactSensing,
    ContactSensor,
    PointContactSensor,
    SensingThresholds,
    sense_point_contacts,
)
from wbsim.errors import UnknownNameError, WbsimError

G = 9.81
CORNERS = [(0.1, 0.1), (-0.1, 0.1), (-0.1, -0.1), (0.1, -0.1)]
R_SPHERE = 0.01


def box_model(floor="plane", cone="pyramidal", mass=2.0, mu=0.8, gap=0.0, gravity=True,
              z0=R_SPHERE, tilt_deg=0.0):
    """A box of ``mass`` kg on 4 massless corner spheres (radius 1 cm) with a site at each sphere's
    lowest point. ``floor="plane"``: MuJoCo lists the floor as geom1; ``floor="box"`` (a big box whose
    top face is z = 0): the sphere comes first (MuJoCo orders a pair by geom type). The box's CoM is
    at the height of the contact points, so a push there (``xfrc_applied`` acts at the CoM) and the
    friction make no pitching moment: a sliding box does not rock."""
    a = np.deg2rad(tilt_deg)  # the floor turned about x, its surface still through the origin
    if floor == "plane":
        floor_xml = (f'<geom name="floor" type="plane" size="5 5 0.1" euler="{tilt_deg} 0 0" '
                     f'friction="{mu} 0.005 0.0001"/>')
    else:
        floor_xml = (f'<geom name="floor" type="box" size="5 5 0.1" euler="{tilt_deg} 0 0" '
                     f'pos="0 {0.1 * np.sin(a)} {-0.1 * np.cos(a)}" friction="{mu} 0.005 0.0001"/>')
    pts = "".join(
        f'<geom name="p{i}" type="sphere" size="{R_SPHERE}" pos="{x} {y} 0" mass="0" gap="{gap}" '
        f'friction="{mu} 0.005 0.0001" solref="0.005 1"/>'
        f'<site name="s{i}" pos="{x} {y} {-R_SPHERE}"/>'
        for i, (x, y) in enumerate(CORNERS))
    xml = f"""<mujoco>
      <option timestep="0.002" cone="{cone}" gravity="0 0 {-G if gravity else 0}"/>
      <worldbody>{floor_xml}
        <body name="box" pos="0 0 {z0}"><freejoint/>
          <inertial pos="0 0 {-R_SPHERE}" mass="{mass}" diaginertia="0.05 0.05 0.05"/>
          <geom name="slab" type="box" size="0.1 0.1 0.004" contype="0" conaffinity="0"/>{pts}
        </body>
      </worldbody></mujoco>"""
    return mujoco.MjModel.from_xml_string(xml)


def box_sensor(m, **kwargs):
    return PointContactSensor(m, m.geom("floor").id, [m.geom(f"p{i}").id for i in range(4)],
                              point_site_ids=[m.site(f"s{i}").id for i in range(4)], **kwargs)


def settle(m, d, steps=300):
    for _ in range(steps):
        mujoco.mj_step(m, d)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("floor", ["plane", "box"])
def test_box_weight_is_the_normal_force_on_the_robot(floor, cone):
    """Resting box: sum of normal forces = m g (1e-3), pointing up (on the robot), whichever geom MuJoCo
    lists first (plane floor: floor is geom1; box floor: the sphere is geom1)."""
    m = box_model(floor, cone)
    d = mujoco.MjData(m)
    settle(m, d)
    floor_id = m.geom("floor").id
    first = set(d.contact.geom1.tolist())
    assert first == ({floor_id} if floor == "plane" else {m.geom(f"p{i}").id for i in range(4)})
    s = box_sensor(m).sense(d)
    weight = m.body_subtreemass[m.body("box").id] * G
    assert abs(s.normal_force.sum() - weight) < 1e-3 * weight
    assert abs(s.external_force_world[2] - weight) < 1e-3 * weight
    np.testing.assert_allclose(s.force_world.sum(axis=0)[:2], 0.0, atol=1e-6)
    assert np.all(s.normal_force > 0.2 * weight / 4)
    assert np.all(s.mode == STICKING)
    # gap: the contact distance, i.e. a small penetration, equal to MuJoCo's
    np.testing.assert_allclose(np.sort(s.gap), np.sort(d.contact.dist), atol=1e-12)
    assert np.all(s.gap < 0) and np.all(s.gap > -1e-3)
    assert s.feet_in_contact == frozenset() and not s.non_sole_contacts
    # the lower-level one-off function agrees
    s2 = sense_point_contacts(m, d, floor_id, [m.geom(f"p{i}").id for i in range(4)])
    np.testing.assert_allclose(s2.force_world, s.force_world, atol=1e-12)


@pytest.mark.parametrize("floor", ["plane", "box"])
def test_box_on_an_incline(floor):
    """A 12 deg incline (mu = 0.8 > tan 12 deg): the box sticks; along the floor's normal the contacts
    carry m g cos(a), across it m g sin(a) (statics), and the gap is measured along the normal."""
    angle = np.deg2rad(12.0)
    m = box_model(floor, tilt_deg=12.0)
    d = mujoco.MjData(m)
    d.qpos[3:7] = [np.cos(angle / 2), np.sin(angle / 2), 0, 0]  # the box tilted like the floor
    d.qpos[0:3] = [0, -0.02 * np.sin(angle), 0.02 * np.cos(angle)]  # sphere centres 2 cm up
    sensor = box_sensor(m)
    s0 = sensor.sense(_forward(m, d))
    n = np.array([0, -np.sin(angle), np.cos(angle)])
    np.testing.assert_allclose(s0.floor_normal_world, n, atol=1e-12)
    np.testing.assert_allclose(s0.gap, 0.02 - R_SPHERE, atol=1e-9)  # site 1 cm above the surface
    settle(m, d, 400)
    s = sensor.sense(d)
    weight = m.body_subtreemass[m.body("box").id] * G
    assert np.all(s.mode == STICKING)
    assert s.normal_force.sum() == pytest.approx(weight * np.cos(angle), rel=1e-3)
    assert s.tangential_force.sum() == pytest.approx(weight * np.sin(angle), rel=1e-3)
    np.testing.assert_allclose(s.external_force_world, [0, 0, weight], rtol=1e-3, atol=1e-3)


def _forward(m, d):
    mujoco.mj_forward(m, d)
    return d


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("floor", ["plane", "box"])
def test_push_below_friction_sticks_above_slides(floor, cone):
    """Push sideways with xfrc_applied. At 0.5 mu m g the box sticks at every step and the friction on
    the robot balances the push exactly (statics). At 1.5 mu m g it slides: every loaded point is
    ``sliding`` (MuJoCo's sliding box hops by ~0.1 mm, so some steps are ``open``, never ``sticking``),
    the slip velocity is the box's velocity and the friction is on the cone (elliptic) or pyramid,
    against the motion."""
    mu = 0.8
    for frac in (0.5, 1.5):
        m = box_model(floor, cone, mu=mu)
        d = mujoco.MjData(m)
        settle(m, d, 100)
        sensor = box_sensor(m)
        b = m.body("box").id
        weight = m.body_subtreemass[b] * G
        push = np.array([1.0, 0.3, 0.0])
        push *= frac * mu * weight / np.linalg.norm(push)
        d.xfrc_applied[b, :3] = push
        modes, sliding_checked = [], 0
        for k in range(150):
            qvel_before = d.qvel.copy()
            mujoco.mj_step(m, d)
            s = sensor.sense(d)
            modes.append(s.mode.copy())
            if frac > 1 and k > 20 and np.all(s.mode == SLIDING):
                box_v = qvel_before[0:3]  # free joint: world linear velocity; the box does not turn
                np.testing.assert_allclose(s.tangential_velocity_world[:, :2],
                                           np.tile(box_v[:2], (4, 1)), atol=1e-3)
                assert np.linalg.norm(box_v[:2]) > 0.05
                ratio = np.linalg.norm(s.force_world.sum(axis=0)[:2]) / s.normal_force.sum()
                if cone == "elliptic":  # on the cone
                    assert ratio == pytest.approx(mu, rel=2e-2)
                else:  # MuJoCo's pyramid |f_t1| + |f_t2| <= mu f_n lies between mu/sqrt(2) and mu
                    assert mu / np.sqrt(2) * 0.98 < ratio <= mu * (1 + 1e-6)
                assert s.force_world.sum(axis=0)[:2] @ box_v[:2] < 0
                sliding_checked += 1
        modes = np.array(modes[20:])
        if frac < 1:
            assert np.all(modes == STICKING), np.unique(modes)
            np.testing.assert_allclose(s.force_world.sum(axis=0)[:2], -push[:2],
                                       rtol=1e-3, atol=1e-3 * weight)
            # the points' friction forces are parallel: their magnitudes add up to the push
            assert s.tangential_force.sum() == pytest.approx(np.linalg.norm(push), rel=1e-3)
            assert np.all(s.slip_velocity < sensor.thresholds.slip_speed / 2)
        else:
            assert not np.any(modes == STICKING)
            assert np.mean(modes == SLIDING) > 0.05
            assert sliding_checked >= 3


def test_hover_inside_the_contact_gap_is_open():
    """MuJoCo 4.x lists a pair when dist < margin + gap but gives it force only when dist < margin: a
    box hovering 5 mm up with gap = 1 cm is listed, has no constraint rows and is open."""
    m = box_model(gap=0.01, gravity=False, z0=R_SPHERE + 0.005)
    d = mujoco.MjData(m)
    sensor = box_sensor(m)
    for _ in range(50):
        mujoco.mj_step(m, d)
        s = sensor.sense(d)
        assert d.ncon == 4
        assert np.all(d.contact.efc_address == -1) and np.all(d.contact.exclude == 1)
        assert np.all(s.mode == OPEN)
        np.testing.assert_allclose(s.force_world, 0.0)
        np.testing.assert_allclose(s.gap, 0.005, atol=1e-9)


def test_gap_is_the_contact_distance_when_listed():
    """Box tilted 40 deg about x, spheres 0/3 lowest and listed (inside the gap): their gap is MuJoCo's
    sphere-floor distance, which differs from the site height once the sphere is tilted; the unlisted
    points report their site height."""
    m = box_model(gap=0.01, gravity=False, z0=0.0)
    d = mujoco.MjData(m)
    angle = np.deg2rad(40)
    d.qpos[3:7] = [np.cos(angle / 2), np.sin(angle / 2), 0, 0]
    mujoco.mj_kinematics(m, d)
    sphere_bottom = d.geom_xpos[[m.geom(f"p{i}").id for i in range(4)], 2] - R_SPHERE
    d.qpos[2] = 0.004 - sphere_bottom.min()  # lowest spheres 4 mm above the floor
    mujoco.mj_forward(m, d)
    s = box_sensor(m).sense(d)
    listed = {int(g) for g in d.contact.geom2}
    assert len(listed) == 2 and np.all(d.contact.exclude == 1)
    sites = d.site_xpos[[m.site(f"s{i}").id for i in range(4)], 2]
    for i in range(4):
        if m.geom(f"p{i}").id in listed:
            assert s.gap[i] == pytest.approx(0.004, abs=1e-9)
            assert abs(sites[i] - 0.004) > 1e-3  # the site is not the lowest point any more
        else:
            assert s.gap[i] == pytest.approx(sites[i], abs=1e-12)


def test_gap_without_contact_is_height_above_the_floor():
    m = box_model(z0=R_SPHERE + 0.3)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    assert d.ncon == 0
    s = box_sensor(m).sense(d)
    np.testing.assert_allclose(s.gap, 0.3, atol=1e-12)
    assert np.all(s.mode == OPEN)
    # sphere points without sites: the lowest point of the sphere, same gap
    s2 = PointContactSensor(m, m.geom("floor").id, [m.geom(f"p{i}").id for i in range(4)]).sense(d)
    np.testing.assert_allclose(s2.gap, s.gap, atol=1e-12)


def test_point_velocity_agrees_with_mujoco():
    """The sphere path (from d.cvel) and the site path (mj_objectVelocity) give the same point
    velocities for a tumbling box, and they match a finite difference of the site positions."""
    m = box_model(gravity=False, z0=1.0)
    d = mujoco.MjData(m)
    d.qvel[:] = [0.3, -0.2, 0.1, 1.5, -2.0, 0.7]
    mujoco.mj_forward(m, d)
    ids = [m.geom(f"p{i}").id for i in range(4)]
    by_site = box_sensor(m).sense(d)
    by_geom = PointContactSensor(m, m.geom("floor").id, ids).sense(d)
    vel_site = np.zeros((4, 6))
    for k in range(4):
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, m.site(f"s{k}").id, vel_site[k], 0)
    expect = vel_site[:, 3:].copy()
    expect[:, 2] = 0.0
    np.testing.assert_allclose(by_site.tangential_velocity_world, expect, atol=1e-12)
    # finite difference of the site positions
    p0 = d.site_xpos[[m.site(f"s{k}").id for k in range(4)]].copy()
    h = 1e-6
    d2 = mujoco.MjData(m)
    d2.qpos[:], d2.qvel[:] = d.qpos, d.qvel
    mujoco.mj_integratePos(m, d2.qpos, d.qvel, h)
    mujoco.mj_forward(m, d2)
    fd = (d2.site_xpos[[m.site(f"s{k}").id for k in range(4)]] - p0) / h
    np.testing.assert_allclose(by_site.tangential_velocity_world[:, :2], fd[:, :2], atol=1e-5)
    # the sphere path: velocity of the sphere's lowest point, which is not the site once tilted;
    # here the box is level, so the two agree
    np.testing.assert_allclose(by_geom.tangential_velocity_world, by_site.tangential_velocity_world,
                               atol=1e-12)


def test_g1_standing_sensing(g1):
    """G1 in its stand pose, a few steps after release with zero torque: both feet in contact, 8
    loaded points, nothing else touching."""
    m = g1.mj_model
    d = g1.make_data("stand")
    sensor = ContactSensor(g1)
    for _ in range(5):
        mujoco.mj_step(m, d)
    s = sensor.sense(d)
    assert s.names == g1.contact_point_names
    assert s.point_foot == tuple(f for f in g1.feet for _ in range(4))
    assert s.feet_in_contact == frozenset(g1.feet)
    assert np.all(s.mode != OPEN)
    assert not s.non_sole_contacts
    assert s.index("right_foot_back_left") == 5
    with pytest.raises(UnknownNameError):
        s.index("nose")
    np.testing.assert_array_equal(s.points_of_foot("right_foot"), [4, 5, 6, 7])
    # every contact is a sole point's: the point forces add up to the total
    np.testing.assert_allclose(s.force_world.sum(axis=0), s.external_force_world, atol=1e-9)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_g1_landing_external_force_is_newton(g1, cone):
    """G1 dropped 2 cm with zero torque, sampled through the impact: the sensed external force equals
    sum_b m_b a_b from MuJoCo's own body accelerations (mj_rnePostConstraint; MuJoCo's cacc carries
    -g, so that sum is the external force, gravity excluded)."""
    m = copy.deepcopy(g1.mj_model)
    m.opt.cone = getattr(mujoco.mjtCone, f"mjCONE_{cone.upper()}")
    feet = list(g1.feet.values())
    mask = m.body_rootid[m.geom_bodyid] == m.body_rootid[feet[0].mj_body_id]
    sensor = PointContactSensor(
        m, g1.floor_geom_id, [g for f in feet for g in f.mj_geom_ids],
        point_names=g1.contact_point_names, point_site_ids=[s for f in feet for s in f.mj_site_ids],
        point_feet=[f.name for f in feet for _ in range(4)], robot_geom_mask=mask)
    d = mujoco.MjData(m)
    d.qpos[:] = g1.pose_qpos("stand")
    d.qpos[2] += 0.02
    weight = g1.total_mass * G
    checked = 0
    res = np.zeros(6)
    for k in range(120):
        mujoco.mj_step(m, d)
        if k % 10 or k < 30:
            continue
        mujoco.mj_forward(m, d)
        mujoco.mj_rnePostConstraint(m, d)
        s = sensor.sense(d)
        total = np.zeros(3)
        for b in range(1, m.nbody):
            mujoco.mj_objectAcceleration(m, d, mujoco.mjtObj.mjOBJ_BODY, b, res, 0)
            total += m.body_mass[b] * res[3:]
        np.testing.assert_allclose(s.external_force_world, total, atol=1e-6 * weight)
        checked += s.feet_in_contact == frozenset(g1.feet) and abs(total[2] - weight) > 0.05 * weight
    assert checked >= 2  # some samples are in the impact, away from static weight


def test_g1_lying_has_non_sole_contacts(g1):
    """G1 on its side on the floor: robot geoms other than the soles touch, named by geom (or
    body/geom id), and their forces are part of the external force."""
    m = g1.mj_model
    d = mujoco.MjData(m)
    q = g1.pose_q("stand")
    q[2] = 0.15
    q[3:7] = [np.sin(np.pi / 4), 0, 0, np.cos(np.pi / 4)]  # 90 deg about x (x, y, z, w)
    d.qpos[:] = g1.pin_to_mj(q)[0]
    for _ in range(200):
        mujoco.mj_step(m, d)
    s = ContactSensor(g1).sense(d)
    assert s.non_sole_contacts
    geom_names = {m.geom(g).name or f"{m.body(m.geom_bodyid[g]).name}/geom{g}" for g in range(m.ngeom)}
    assert set(s.non_sole_contacts) <= geom_names
    assert not set(s.non_sole_contacts) & set(g1.contact_point_names)
    assert s.external_force_world[2] > s.force_world[:, 2].sum() + 1.0
    assert len(s.contact_force_world) == d.ncon


def test_thresholds_and_bad_input():
    assert SensingThresholds().normal_force > 0
    with pytest.raises(WbsimError, match="unknown keys"):
        SensingThresholds.from_dict({"normal_forces": 1.0})
    with pytest.raises(WbsimError):
        SensingThresholds(normal_force=-1.0)
    m = box_model(floor="box")
    ids = [m.geom(f"p{i}").id for i in range(4)]
    with pytest.raises(WbsimError):
        PointContactSensor(m, 999, ids)
    with pytest.raises(WbsimError, match="plane or a box"):
        PointContactSensor(m, ids[0], ids[1:])  # a sphere is no floor
    with pytest.raises(WbsimError, match="not spheres"):
        PointContactSensor(m, m.geom("floor").id, [m.geom("slab").id])
    with pytest.raises(WbsimError, match="duplicates"):
        PointContactSensor(m, m.geom("floor").id, [ids[0], ids[0]])
    with pytest.raises(WbsimError):
        PointContactSensor(m, m.geom("floor").id, ids, point_names=["a"])
    # a custom threshold changes the mode
    d = mujoco.MjData(m)
    settle(m, d, 100)
    s = box_sensor(m, thresholds={"normal_force": 1e3}).sense(d)
    assert np.all(s.mode == OPEN)
    assert isinstance(s, ContactSensing)


# ------------------------------------------------------------------------------------------------
# the vectorised sensing against a slow per-contact, per-point reference
# ------------------------------------------------------------------------------------------------
def reference_sensing(sensor, m, d):
    """What :meth:`PointContactSensor.sense` must return, the slow way: ``mj_contactForce`` for each
    contact, ``mj_objectVelocity`` for each site (or the sphere's geom), Python loops over contacts
    and points. Returns a dict of the :class:`ContactSensing` fields."""
    n = len(sensor.names)
    fid = sensor.floor_geom_id
    normal = d.geom_xmat[fid].reshape(3, 3)[:, 2].copy()
    top = m.geom_size[fid, 2] if m.geom_type[fid] == mujoco.mjtGeom.mjGEOM_BOX else 0.0
    c = float(d.geom_xpos[fid] @ normal) + top
    pos = np.zeros((n, 3))
    vel = np.zeros((n, 3))
    res = np.zeros(6)
    for i, g in enumerate(sensor.point_geom_ids):
        if sensor.point_site_ids is not None:
            s = sensor.point_site_ids[i]
            pos[i] = d.site_xpos[s]
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, s, res, 0)
            vel[i] = res[3:]
        else:
            pos[i] = d.geom_xpos[g] - m.geom_size[g, 0] * normal
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_GEOM, g, res, 0)
            vel[i] = res[3:] + np.cross(res[:3], pos[i] - d.geom_xpos[g])
    gap = pos @ normal - c
    touched = np.full(n, np.inf)
    force = np.zeros((n, 3))
    c_pos, c_force, non_sole = [], [], {}
    point_of = {int(g): i for i, g in enumerate(sensor.point_geom_ids)}
    f6 = np.zeros(6)
    for k in range(d.ncon):
        con = d.contact[k]
        g1, g2 = int(con.geom[0]), int(con.geom[1])
        r1, r2 = sensor.robot_geom_mask[g1], sensor.robot_geom_mask[g2]
        if r1 == r2:
            continue  # robot-robot or environment-environment
        f6[:] = 0.0
        if con.efc_address >= 0:
            mujoco.mj_contactForce(m, d, k, f6)
        f = con.frame.reshape(3, 3).T @ f6[:3] * (1.0 if r2 else -1.0)  # on the robot
        g = g2 if r2 else g1
        c_pos.append(con.pos.copy())
        c_force.append(f)
        if g in point_of:
            force[point_of[g]] += f
            touched[point_of[g]] = min(touched[point_of[g]], con.dist)
        elif con.efc_address >= 0 and (con.dist <= 0 or f @ normal > sensor.thresholds.normal_force):
            name = m.geom(g).name or f"{m.body(m.geom_bodyid[g]).name}/geom{g}"
            non_sole[name] = non_sole.get(name, 0.0) + f @ normal
    gap = np.where(np.isfinite(touched), touched, gap)
    fn = force @ normal
    ft = np.linalg.norm(force - np.outer(fn, normal), axis=1)
    vt = vel - np.outer(vel @ normal, normal)
    slip = np.linalg.norm(vt, axis=1)
    loaded = fn > sensor.thresholds.normal_force
    mode = np.where(loaded, np.where(slip > sensor.thresholds.slip_speed, SLIDING, STICKING), OPEN)
    feet = frozenset(f for f, on in zip(sensor.point_feet, loaded) if on and f)
    return {"position_world": pos, "gap": gap, "floor_normal_world": normal, "force_world": force,
            "normal_force": fn, "tangential_force": ft, "tangential_velocity_world": vt,
            "slip_velocity": slip, "mode": mode, "feet_in_contact": feet,
            "non_sole_contacts": non_sole, "contact_position_world": np.reshape(c_pos, (-1, 3)),
            "contact_force_world": np.reshape(c_force, (-1, 3))}


def assert_matches_reference(s, ref, scale):
    """Every field of the sensing ``s`` equals the reference (forces to 1e-10 of ``scale`` N)."""
    for name, want in ref.items():
        got = getattr(s, name)
        if name in ("feet_in_contact", "mode"):
            np.testing.assert_array_equal(np.asarray(got) if name == "mode" else got, want, name)
        elif name == "non_sole_contacts":
            assert got.keys() == want.keys()
            for k in want:
                assert got[k] == pytest.approx(want[k], abs=1e-10 * scale)
        else:
            tol = 1e-10 * scale if "force" in name else 1e-12
            np.testing.assert_allclose(got, want, rtol=0, atol=tol, err_msg=name)
    assert s.mode.dtype == np.int8


def tilted_drop_data(g1):
    """MjData of the G1 2 cm above its stand pose, tilted (about 4.6 deg of roll, 2.3 of pitch):
    dropped, one foot lands first, so contact lists of 1 to 8 sole points in any order follow."""
    d = mujoco.MjData(g1.mj_model)
    q = g1.pose_q("stand")
    q[2] += 0.02
    q[3:7] = [0.04, 0.02, 0.0, 1.0]  # x, y, z, w
    q[3:7] /= np.linalg.norm(q[3:7])
    d.qpos[:] = g1.pin_to_mj(q)[0]
    return d


def check_states(sensor, m, d, scale, steps, every=1, step=None):
    """Step ``steps`` times (``step(k)`` may change ``d`` before each step); at every ``every``-th
    step sense twice (the second call of a contact list uses the fast path) and compare both, and
    the general path, with the reference. Returns how many comparisons used the fast path."""
    general = sensor._sense_general
    calls = []
    sensor._sense_general = lambda data: calls.append(1) or general(data)  # counts the fallbacks
    fast = 0
    try:
        for k in range(steps):
            if step is not None:
                step(k)
            mujoco.mj_step(m, d)
            if k % every:
                continue
            ref = reference_sensing(sensor, m, d)
            for _ in range(2):
                before = len(calls)
                assert_matches_reference(sensor.sense(d), ref, scale)
                fast += len(calls) == before
            assert_matches_reference(general(d), ref, scale)
    finally:
        del sensor._sense_general
    return fast


BOX_CASES = {
    "plane-pyramidal": {},
    "plane-elliptic": {"cone": "elliptic"},
    "box-pyramidal": {"floor": "box"},
    "box-elliptic": {"floor": "box", "cone": "elliptic"},
    "tilted-plane": {"tilt_deg": 12.0},
    "tilted-box": {"floor": "box", "tilt_deg": 12.0},
    "hover-gap": {"gap": 0.01, "gravity": False, "z0": R_SPHERE + 0.005},
}


@pytest.mark.parametrize("case", list(BOX_CASES))
def test_box_sensing_equals_the_reference(case):
    """The box in every contact situation the tests above use, pushed past its friction limit half
    way (sliding, hopping: contact lists change): every sensed field equals the slow reference, and
    the fast path is taken where it applies (not for contacts inside the gap: no constraint rows)."""
    m = box_model(**BOX_CASES[case])
    d = mujoco.MjData(m)
    if case.startswith("tilted"):  # the box tilted like the floor, 2 mm up
        a = np.deg2rad(12.0)
        d.qpos[3:7] = [np.cos(a / 2), np.sin(a / 2), 0, 0]
        d.qpos[0:3] = [0, -0.012 * np.sin(a), 0.012 * np.cos(a)]
    sensor = box_sensor(m)
    b = m.body("box").id
    weight = m.body_subtreemass[b] * G

    def push(k):
        if k == 60:
            d.xfrc_applied[b, :3] = [1.5 * 0.8 * weight, 0.4 * weight, 0.0]

    fast = check_states(sensor, m, d, weight, 160, every=4, step=push)
    if case == "hover-gap":
        assert fast == 0
    else:
        assert fast >= 40


def test_g1_sensing_equals_the_reference(g1):
    """The G1 dropped 2 cm, tilted, with zero torque (one foot lands first, contact lists of 1 to 8
    sole points, then it crumples), lying on its side (non-sole contacts) and in the air (no
    contact): every sensed field equals the slow reference; the fast path is taken wherever the
    contacts are sole points."""
    m = g1.mj_model
    sensor = ContactSensor(g1)
    d = tilted_drop_data(g1)
    weight = g1.total_mass * G
    counts = set()
    fast = check_states(sensor, m, d, weight, 90, step=lambda k: counts.add(d.ncon))
    assert fast >= 100 and 8 in counts and len(counts) >= 3, counts
    # lying on its side: non-sole contacts (general path)
    d = mujoco.MjData(m)
    q = g1.pose_q("stand")
    q[2] = 0.15
    q[3:7] = [np.sin(np.pi / 4), 0, 0, np.cos(np.pi / 4)]
    d.qpos[:] = g1.pin_to_mj(q)[0]
    for _ in range(150):
        mujoco.mj_step(m, d)
    check_states(sensor, m, d, weight, 20, every=5)
    assert sensor.sense(d).non_sole_contacts
    # in the air
    d = g1.make_data("stand")
    d.qpos[2] += 0.5
    assert check_states(sensor, m, d, weight, 3) == 6 and d.ncon == 0


def test_copied_sensor_senses_the_same(g1):
    """A copy (or unpickled copy) of a sensor that has built its fast-path caches senses the same as
    the original (the caches' shared scratch buffers are rebuilt, not copied apart)."""
    import pickle

    m = g1.mj_model
    feet = list(g1.feet.values())
    sensor = PointContactSensor(m, g1.floor_geom_id, [g for f in feet for g in f.mj_geom_ids],
                                point_site_ids=[s for f in feet for s in f.mj_site_ids])
    d = g1.make_data("stand")
    mujoco.mj_step(m, d)
    for _ in range(3):  # the first sighting of a contact list takes the general path
        sensor.sense(d)
    twins = [copy.deepcopy(sensor), pickle.loads(pickle.dumps(sensor))]
    d.qvel[:] = np.random.default_rng(0).normal(size=m.nv)  # a new state: nothing stale fits
    mujoco.mj_step(m, d)
    want = sensor.sense(d)
    assert np.all(want.slip_velocity > 0.01)
    for twin in twins:
        assert twin.sense(d) == want  # bit for bit: the same fast path


# ------------------------------------------------------------------------------------------------
# the hot path (raw contact views, one product) against the reference
# ------------------------------------------------------------------------------------------------
def binding_key(d):
    """The contact-list key the slow way: every contact's geom pair, frame and friction bytes from
    the binding's fields, contact by contact."""
    con = d.contact
    return b"".join(con.geom[i].tobytes() + con.frame[i].tobytes() + con.friction[i].tobytes()
                    for i in range(d.ncon))


def test_raw_contact_key_is_the_bindings_key(g1):
    """The key read from raw views of MjData's arena is the bytes of the binding's geom, frame and
    friction of each contact (for lists of several lengths), changes with any of them and with
    nothing else; the values read beside it are the binding's dist and pos."""
    from wbsim.contacts import _RawContacts

    m = g1.mj_model
    d = tilted_drop_data(g1)
    raw, lengths = None, set()
    for _ in range(60):
        mujoco.mj_step(m, d)
        if d.ncon == 0:
            continue
        raw = raw or _RawContacts.build(d)
        k = d.ncon
        lengths.add(k)
        assert raw.key(k) == binding_key(d)
        np.testing.assert_array_equal(raw.values(k), np.r_[d.contact.dist, d.contact.pos.ravel()])
    assert len(lengths) >= 3
    con = d.contact
    key = raw.key(d.ncon)
    for field, i in (("geom", (0, 1)), ("frame", (d.ncon - 1, 4)), ("friction", (1, 0))):
        arr = getattr(con, field)
        old = arr[i]
        arr[i] = old + 1
        assert raw.key(d.ncon) != key, field
        arr[i] = old
        assert raw.key(d.ncon) == key
    con.dist[0] += 1e-3
    con.pos[1, 2] += 1e-3
    con.efc_address[0] += 1
    assert raw.key(d.ncon) == key  # not part of the key
    assert raw.values(d.ncon)[0] == con.dist[0] and raw.values(d.ncon)[d.ncon + 5] == con.pos[1, 2]


def test_g1_hot_path_equals_the_reference(g1):
    """The G1 standing on its 8 sole points with the feet moving (random joint velocities), on two
    MjData in turn and across a reset: the hot path (compact plan) is taken and every sensed field
    equals the slow reference."""
    m = g1.mj_model
    sensor = ContactSensor(g1)
    hot = sensor._sense_hot
    calls = []
    sensor._sense_hot = lambda *a: calls.append(1) or hot(*a)
    rng = np.random.default_rng(3)
    datas = [g1.make_data("stand"), g1.make_data("stand")]
    weight = g1.total_mass * G
    for rep in range(3):
        for d in datas:
            if rep == 1:
                mujoco.mj_resetData(m, d)
                d.qpos[:] = g1.pose_qpos("stand")
            d.qvel[6:] = rng.normal(scale=0.05, size=m.nv - 6)
            check_states(sensor, m, d, weight, 4)
    assert len(calls) >= 30


def test_g1_hot_path_takes_partial_contact_lists_and_the_air(g1):
    """The hot path covers any list of sole contacts on a z-up floor, not only all 8 in point order:
    the G1 dropped tilted (one foot lands first: lists of 1 to 8 points, in any order) and held in
    the air (no contact) goes through it, and every sensed field equals the slow reference."""
    m = g1.mj_model
    sensor = ContactSensor(g1)
    hot = sensor._sense_hot
    ks = []
    sensor._sense_hot = lambda d, raw, T, plan, fast: ks.append(plan.k) or hot(d, raw, T, plan, fast)
    d = tilted_drop_data(g1)
    weight = g1.total_mass * G
    check_states(sensor, m, d, weight, 90)
    d = g1.make_data("stand")
    d.qpos[2] += 0.5
    check_states(sensor, m, d, weight, 3)
    partial = {k for k in ks if 0 < k < 8}
    assert 0 in ks and 8 in ks and len(partial) >= 2, sorted(set(ks))
