"""Contact sensing from MuJoCo's contact sensors (wbsim.contacts): forces on the robot in the world
frame whichever geom MuJoCo lists first, both friction cones, slip and contact modes, the gap,
hovering in the contact gap, non-sole contacts. Physical values are checked against statics
(weight, applied push), MuJoCo's contact functions (``mj_contactForce``, ``mj_jac``) and Newton's
law on MuJoCo's body accelerations, not against the code's formulas."""

import copy
import pickle

import mujoco
import numpy as np
import pytest

from wbsim.contacts import (
    OPEN,
    SLIDING,
    STICKING,
    ContactSensing,
    ContactSensor,
    SensingThresholds,
    add_contact_sensors,
)
from wbsim.errors import UnknownNameError, WbsimError

G = 9.81
CORNERS = [(0.1, 0.1), (-0.1, 0.1), (-0.1, -0.1), (0.1, -0.1)]
R_SPHERE = 0.01


def box_model(
    floor="plane",
    cone="pyramidal",
    mass=2.0,
    mu=0.8,
    gap=0.0,
    gravity=True,
    z0=R_SPHERE,
    tilt_deg=0.0,
):
    """A box of ``mass`` kg on 4 massless corner spheres (radius 1 cm) with a site at each sphere's
    lowest point, and wbsim's sensors. ``floor="plane"``: MuJoCo lists the floor as geom1;
    ``floor="box"`` (a big box whose top face is z = 0): the sphere comes first (MuJoCo orders a
    pair by geom type). The box's CoM is at the height of the contact points, so a push there
    (``xfrc_applied`` acts at the CoM) and the friction make no pitching moment."""
    a = np.deg2rad(tilt_deg)  # the floor turned about x, its surface still through the origin
    if floor == "plane":
        floor_xml = (
            f'<geom name="floor" type="plane" size="5 5 0.1" euler="{tilt_deg} 0 0" '
            f'friction="{mu} 0.005 0.0001"/>'
        )
    else:
        floor_xml = (
            f'<geom name="floor" type="box" size="5 5 0.1" euler="{tilt_deg} 0 0" '
            f'pos="0 {0.1 * np.sin(a)} {-0.1 * np.cos(a)}" friction="{mu} 0.005 0.0001"/>'
        )
    pts = "".join(
        f'<geom name="p{i}" type="sphere" size="{R_SPHERE}" pos="{x} {y} 0" mass="0" gap="{gap}" '
        f'friction="{mu} 0.005 0.0001" solref="0.005 1"/>'
        f'<site name="s{i}" pos="{x} {y} {-R_SPHERE}"/>'
        for i, (x, y) in enumerate(CORNERS)
    )
    xml = f"""<mujoco>
      <option timestep="0.002" cone="{cone}" gravity="0 0 {-G if gravity else 0}"/>
      <worldbody>{floor_xml}
        <body name="box" pos="0 0 {z0}"><freejoint/>
          <inertial pos="0 0 {-R_SPHERE}" mass="{mass}" diaginertia="0.05 0.05 0.05"/>
          <geom name="slab" type="box" size="0.1 0.1 0.004" contype="0" conaffinity="0"/>{pts}
        </body>
      </worldbody></mujoco>"""
    spec = mujoco.MjSpec.from_string(xml)
    add_contact_sensors(
        spec, [(f"p{i}", f"s{i}") for i in range(4)], floor="floor", robot_root="box"
    )
    return spec.compile()


def box_sensor(m, **kwargs):
    return ContactSensor(m, m.geom("floor").id, [m.geom(f"p{i}").id for i in range(4)], **kwargs)


def settle(m, d, steps=300):
    for _ in range(steps):
        mujoco.mj_step(m, d)


def _forward(m, d):
    mujoco.mj_forward(m, d)
    return d


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("floor", ["plane", "box"])
def test_box_weight_is_the_normal_force_on_the_robot(floor, cone):
    """Resting box: sum of normal forces = m g (1e-3), pointing up (on the robot), whichever geom
    MuJoCo lists first (plane floor: floor is geom1; box floor: the sphere is geom1)."""
    m = box_model(floor, cone)
    d = mujoco.MjData(m)
    settle(m, d)
    floor_id = m.geom("floor").id
    first = set(d.contact.geom1.tolist())
    assert first == ({floor_id} if floor == "plane" else {m.geom(f"p{i}").id for i in range(4)})
    s = box_sensor(m).read(d)
    weight = m.body_subtreemass[m.body("box").id] * G
    assert abs(s.normal_force.sum() - weight) < 1e-3 * weight
    assert abs(s.external_force_world[2] - weight) < 1e-3 * weight
    np.testing.assert_allclose(s.force_world.sum(axis=0)[:2], 0.0, atol=1e-6)
    np.testing.assert_allclose(s.force_world[:, 2], s.normal_force, atol=1e-9)  # level floor
    assert np.all(s.normal_force > 0.2 * weight / 4)
    assert np.all(s.mode == STICKING)
    # gap: the contact distance, i.e. a small penetration, equal to MuJoCo's
    np.testing.assert_allclose(np.sort(s.gap), np.sort(d.contact.dist), atol=1e-12)
    assert np.all(s.gap < 0) and np.all(s.gap > -1e-3)
    assert s.feet_in_contact == frozenset() and not s.non_sole_contacts
    assert s.n_external == 4 and s.n_sole == 4


@pytest.mark.parametrize("floor", ["plane", "box"])
def test_box_on_an_incline(floor):
    """A 12 deg incline (mu = 0.8 > tan 12 deg): the box sticks; along the floor's normal the
    contacts carry m g cos(a), across it m g sin(a) (statics), and the gap is measured along the
    normal."""
    angle = np.deg2rad(12.0)
    m = box_model(floor, tilt_deg=12.0)
    d = mujoco.MjData(m)
    d.qpos[3:7] = [np.cos(angle / 2), np.sin(angle / 2), 0, 0]  # the box tilted like the floor
    d.qpos[0:3] = [0, -0.02 * np.sin(angle), 0.02 * np.cos(angle)]  # sphere centres 2 cm up
    sensor = box_sensor(m)
    s0 = sensor.read(_forward(m, d))
    n = np.array([0, -np.sin(angle), np.cos(angle)])
    np.testing.assert_allclose(s0.floor_normal_world, n, atol=1e-12)
    np.testing.assert_allclose(s0.gap, 0.02 - R_SPHERE, atol=1e-9)  # site 1 cm above the surface
    settle(m, d, 400)
    s = sensor.read(d)
    weight = m.body_subtreemass[m.body("box").id] * G
    assert np.all(s.mode == STICKING)
    assert s.normal_force.sum() == pytest.approx(weight * np.cos(angle), rel=1e-3)
    assert s.tangential_force.sum() == pytest.approx(weight * np.sin(angle), rel=1e-3)
    np.testing.assert_allclose(s.external_force_world, [0, 0, weight], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("floor", ["plane", "box"])
def test_push_below_friction_sticks_above_slides(floor, cone):
    """Push sideways with xfrc_applied. At 0.5 mu m g the box sticks at every step and the friction
    on the robot balances the push exactly (statics). At 1.5 mu m g it slides: every loaded point
    is ``sliding`` (MuJoCo's sliding box hops by ~0.1 mm, so some steps are ``open``, never
    ``sticking``), the slip velocity is the box's velocity and the friction is on the cone
    (elliptic) or pyramid, against the motion."""
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
            s = sensor.read(d)
            modes.append(s.mode.copy())
            if frac > 1 and k > 20 and np.all(s.mode == SLIDING):
                box_v = qvel_before[0:3]  # free joint: world linear velocity; the box does not turn
                np.testing.assert_allclose(
                    s.tangential_velocity_world[:, :2], np.tile(box_v[:2], (4, 1)), atol=1e-3
                )
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
            np.testing.assert_allclose(
                s.force_world.sum(axis=0)[:2], -push[:2], rtol=1e-3, atol=1e-3 * weight
            )
            # the points' friction forces are parallel: their magnitudes add up to the push
            assert s.tangential_force.sum() == pytest.approx(np.linalg.norm(push), rel=1e-3)
            assert np.all(s.slip_velocity < sensor.thresholds.slip_speed / 2)
        else:
            assert not np.any(modes == STICKING)
            assert np.mean(modes == SLIDING) > 0.05
            assert sliding_checked >= 3


def test_hover_inside_the_contact_gap_is_open():
    """MuJoCo 4.x lists a pair when dist < margin + gap but gives it force only when dist < margin:
    a box hovering 5 mm up with gap = 1 cm is listed, has no constraint rows and is open."""
    m = box_model(gap=0.01, gravity=False, z0=R_SPHERE + 0.005)
    d = mujoco.MjData(m)
    sensor = box_sensor(m)
    for _ in range(50):
        mujoco.mj_step(m, d)
        s = sensor.read(d)
        assert d.ncon == 4
        assert np.all(d.contact.efc_address == -1) and np.all(d.contact.exclude == 1)
        assert np.all(s.mode == OPEN)
        np.testing.assert_allclose(s.force_world, 0.0)
        np.testing.assert_allclose(s.gap, 0.005, atol=1e-9)


def test_gap_is_the_contact_distance_when_listed():
    """Box tilted 40 deg about x, spheres 0/3 lowest and listed (inside the gap): their gap is
    MuJoCo's sphere-floor distance, which differs from the site height once the sphere is tilted;
    the unlisted points report their site height."""
    m = box_model(gap=0.01, gravity=False, z0=0.0)
    d = mujoco.MjData(m)
    angle = np.deg2rad(40)
    d.qpos[3:7] = [np.cos(angle / 2), np.sin(angle / 2), 0, 0]
    mujoco.mj_kinematics(m, d)
    sphere_bottom = d.geom_xpos[[m.geom(f"p{i}").id for i in range(4)], 2] - R_SPHERE
    d.qpos[2] = 0.004 - sphere_bottom.min()  # lowest spheres 4 mm above the floor
    mujoco.mj_forward(m, d)
    s = box_sensor(m).read(d)
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
    s = box_sensor(m).read(d)
    np.testing.assert_allclose(s.gap, 0.3, atol=1e-12)
    assert np.all(s.mode == OPEN) and np.all(s.slip_velocity == 0.0)


def test_g1_standing_sensing(g1):
    """G1 in its stand pose, a few steps after release with zero torque: both feet in contact, 8
    loaded points, nothing else touching."""
    m = g1.mj_model
    d = g1.make_data("stand")
    sensor = ContactSensor.for_robot(g1)
    for _ in range(5):
        mujoco.mj_step(m, d)
    s = sensor.read(d)
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
    # the sensed CoM is MuJoCo's subtree CoM of the robot
    np.testing.assert_allclose(s.com, d.subtree_com[1], atol=1e-12)


def test_feet_and_their_friction_follow_each_steps_values(g1):
    """The per-foot answers of one step (memoised by the values) match the points' own values,
    step after step, whatever was seen before; the friction dicts are fresh."""
    layout = ContactSensor.for_robot(g1).layout
    left = [f == "left_foot" for f in layout.point_foot]
    patterns = [
        (np.array(left), {"left_foot"}),
        (~np.array(left), {"right_foot"}),
        (np.zeros(8, dtype=bool), set()),
        (np.eye(8, dtype=bool)[5], {"right_foot"}),
        (np.array(left), {"left_foot"}),  # seen before: the memo's answer
    ]
    for loaded, feet in patterns:
        assert layout.feet_with(loaded) == feet
    mu = np.array([0.9, 0.8, 0.7, 0.95, 1.0, 1.0, 0.5, 1.0])
    first = layout.least_friction(mu)
    assert first == {"left_foot": 0.7, "right_foot": 0.5}
    first["left_foot"] = 0.0  # a caller's change stays its own
    assert layout.least_friction(mu) == {"left_foot": 0.7, "right_foot": 0.5}
    assert layout.least_friction(np.ones(8)) == {"left_foot": 1.0, "right_foot": 1.0}
    with pytest.raises(WbsimError, match="one step"):
        layout.feet_with(np.zeros((2, 8), dtype=bool))


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_g1_landing_external_force_is_newton(g1, cone):
    """G1 dropped 2 cm with zero torque, sampled through the impact: the sensed external force
    equals sum_b m_b a_b from MuJoCo's own body accelerations (mj_rnePostConstraint; MuJoCo's cacc
    carries -g, so that sum is the external force, gravity excluded)."""
    m = copy.deepcopy(g1.mj_model)
    m.opt.cone = getattr(mujoco.mjtCone, f"mjCONE_{cone.upper()}")
    feet = list(g1.feet.values())
    sensor = ContactSensor(
        m,
        g1.floor_geom_id,
        [g for f in feet for g in f.mj_geom_ids],
        point_names=g1.contact_point_names,
        point_feet=[f.name for f in feet for _ in range(4)],
    )
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
        s = sensor.read(d)
        total = np.zeros(3)
        for b in range(1, m.nbody):
            mujoco.mj_objectAcceleration(m, d, mujoco.mjtObj.mjOBJ_BODY, b, res, 0)
            total += m.body_mass[b] * res[3:]
        np.testing.assert_allclose(s.external_force_world, total, atol=1e-6 * weight)
        checked += (
            s.feet_in_contact == frozenset(g1.feet) and abs(total[2] - weight) > 0.05 * weight
        )
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
    s = ContactSensor.for_robot(g1).read(d)
    assert s.non_sole_contacts
    geom_names = {
        m.geom(g).name or f"{m.body(m.geom_bodyid[g]).name}/geom{g}" for g in range(m.ngeom)
    }
    assert set(s.non_sole_contacts) <= geom_names
    assert not set(s.non_sole_contacts) & set(g1.contact_point_names)
    assert s.non_sole_on_floor == set(s.non_sole_contacts)  # only the floor to touch here
    assert s.external_force_world[2] > s.force_world[:, 2].sum() + 1.0
    assert s.n_external == d.ncon > s.n_sole


def test_thresholds_and_bad_input():
    assert SensingThresholds().normal_force > 0
    with pytest.raises(WbsimError, match="unknown keys"):
        SensingThresholds.from_dict({"normal_forces": 1.0})
    with pytest.raises(WbsimError):
        SensingThresholds(normal_force=-1.0)
    m = box_model(floor="box")
    ids = [m.geom(f"p{i}").id for i in range(4)]
    with pytest.raises(WbsimError):
        ContactSensor(m, 999, ids)
    with pytest.raises(WbsimError, match="plane or a box"):
        ContactSensor(m, ids[0], ids[1:])  # a sphere is no floor
    with pytest.raises(WbsimError, match="no sensor"):
        ContactSensor(m, m.geom("floor").id, [m.geom("slab").id])  # no sensor on the slab
    with pytest.raises(WbsimError, match="one entry per point"):
        ContactSensor(m, m.geom("floor").id, ids, point_names=["a"])
    # a custom threshold changes the mode
    d = mujoco.MjData(m)
    settle(m, d, 100)
    s = box_sensor(m, thresholds={"normal_force": 1e3}).read(d)
    assert np.all(s.mode == OPEN)
    assert isinstance(s, ContactSensing)


# ------------------------------------------------------------------------------------------------
# the sensing against a per-contact, per-point reference from MuJoCo's contact functions
# ------------------------------------------------------------------------------------------------
def reference_sensing(sensor, m, d):
    """What :meth:`ContactSensor.read` must return, the slow way: ``mj_contactForce`` for each
    contact, the velocity of the point's body at the contact position (``mj_jac``), Python loops
    over contacts and points. Returns a dict of the :class:`ContactSensing` fields."""
    names = sensor.names
    n = len(names)
    fid = sensor.floor_geom_id
    normal = d.geom_xmat[fid].reshape(3, 3)[:, 2].copy()
    top = m.geom_size[fid, 2] if m.geom_type[fid] == mujoco.mjtGeom.mjGEOM_BOX else 0.0
    c = float(d.geom_xpos[fid] @ normal) + top
    sites = [int(m.sensor(f"wbsim/site/{m.geom(g).name}").objid[0]) for g in sensor.point_geom_ids]
    pos = d.site_xpos[sites].copy()
    gap = pos @ normal - c
    force, vt, normal_force = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros(n)
    non_sole, ext_f, ext_m = {}, np.zeros(3), np.zeros(3)
    point_of = {int(g): i for i, g in enumerate(sensor.point_geom_ids)}
    f6, jac = np.zeros(6), np.zeros((3, m.nv))
    for k in range(d.ncon):
        con = d.contact[k]
        g1, g2 = int(con.geom[0]), int(con.geom[1])
        r1, r2 = sensor.robot_geom_mask[g1], sensor.robot_geom_mask[g2]
        if r1 == r2:
            continue  # robot-robot or environment-environment
        f6[:] = 0.0
        if con.efc_address >= 0:
            mujoco.mj_contactForce(m, d, k, f6)
        frame = con.frame.reshape(3, 3)
        f = frame.T @ f6[:3] * (1.0 if r2 else -1.0)  # on the robot
        g = g2 if r2 else g1
        ext_f += f
        ext_m += np.cross(con.pos, f)
        if g in point_of and (fid in (g1, g2)):
            i = point_of[g]
            force[i] = f
            normal_force[i] = f6[0]
            gap[i] = con.dist
            mujoco.mj_jac(m, d, jac, None, con.pos, m.geom_bodyid[g])
            v = jac @ d.qvel
            vt[i] = v - (v @ frame[0]) * frame[0]
        elif (
            g not in point_of
            and con.efc_address >= 0
            and (con.dist <= 0 or f @ normal > sensor.thresholds.normal_force)
        ):
            name = m.geom(g).name or f"{m.body(m.geom_bodyid[g]).name}/geom{g}"
            non_sole[name] = non_sole.get(name, 0.0) + f @ normal
    ft = np.linalg.norm(force - np.outer(force @ normal, normal), axis=1)
    slip = np.linalg.norm(vt, axis=1)
    loaded = normal_force > sensor.thresholds.normal_force
    mode = np.where(loaded, np.where(slip > sensor.thresholds.slip_speed, SLIDING, STICKING), OPEN)
    feet = frozenset(f for f, on in zip(sensor.layout.point_foot, loaded) if on and f)
    return {
        "position_world": pos,
        "gap": gap,
        "floor_normal_world": normal,
        "force_world": force,
        "normal_force": normal_force,
        "tangential_force": ft,
        "tangential_velocity_world": vt,
        "slip_velocity": slip,
        "mode": mode,
        "feet_in_contact": feet,
        "non_sole_contacts": non_sole,
        "external_force_world": ext_f,
        "external_moment_world": ext_m,
    }


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
            tol = 1e-10 * scale if ("force" in name or "moment" in name) else 1e-12
            np.testing.assert_allclose(got, want, rtol=0, atol=tol, err_msg=name)
    assert s.mode.dtype == np.int8


def check_states(sensor, m, d, scale, steps, every=1, step=None):
    """Step ``steps`` times (``step(k)`` may change ``d`` before each step); at every ``every``-th
    step compare the sensing with the reference at that state (``mj_forward`` first: the sensors
    and the reference then describe the same state); also decode the recorded sensor values in
    one batch and compare each row with its one-step reading."""
    rows, readings = [], []
    for k in range(steps):
        if step is not None:
            step(k)
        mujoco.mj_step(m, d)
        if k % every:
            continue
        mujoco.mj_forward(m, d)
        s = sensor.read(d)
        assert_matches_reference(s, reference_sensing(sensor, m, d), scale)
        rows.append(d.sensordata.copy())
        readings.append(s)
    batch = sensor.decode(np.array(rows))
    for i, s in enumerate(readings):
        for name in (
            "position_world",
            "gap",
            "force_world",
            "normal_force",
            "tangential_force",
            "tangential_velocity_world",
            "slip_velocity",
            "mode",
            "external_force_world",
            "external_moment_world",
            "feet_loaded",
        ):
            np.testing.assert_allclose(
                getattr(batch, name)[i],
                getattr(s, name),
                rtol=0,
                atol=1e-15 * max(1.0, scale),
                err_msg=name,
            )


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
    way (sliding, hopping: contact lists change): every sensed field equals the reference."""
    m = box_model(**BOX_CASES[case])
    d = mujoco.MjData(m)
    if case.startswith("tilted"):  # the box tilted like the floor, 2 mm up
        a = np.deg2rad(12.0)
        d.qpos[3:7] = [np.cos(a / 2), np.sin(a / 2), 0, 0]
        d.qpos[0:3] = [0, -0.012 * np.sin(a), 0.012 * np.cos(a)]
    b = m.body("box").id
    weight = m.body_subtreemass[b] * G

    def push(k):
        if k == 60:
            d.xfrc_applied[b, :3] = [1.5 * 0.8 * weight, 0.4 * weight, 0.0]

    check_states(box_sensor(m), m, d, weight, 160, every=4, step=push)


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


def test_g1_sensing_equals_the_reference(g1):
    """The G1 dropped 2 cm, tilted, with random torques (one foot lands first, contact lists of 1
    to 8 sole points, the feet turning fast, then it crumples), lying on its side (non-sole
    contacts) and in the air (no contact): every sensed field equals the reference."""
    m = g1.mj_model
    sensor = ContactSensor.for_robot(g1)
    d = tilted_drop_data(g1)
    weight = g1.total_mass * G
    rng = np.random.default_rng(1)
    counts = set()

    def step(k):
        counts.add(d.ncon)
        d.ctrl[:] = rng.normal(scale=10.0, size=g1.n_joints) if k > 85 else 0.0

    check_states(sensor, m, d, weight, 130, step=step)
    assert 8 in counts and len(counts) >= 3, counts
    # lying on its side: non-sole contacts
    d = mujoco.MjData(m)
    q = g1.pose_q("stand")
    q[2] = 0.15
    q[3:7] = [np.sin(np.pi / 4), 0, 0, np.cos(np.pi / 4)]
    d.qpos[:] = g1.pin_to_mj(q)[0]
    for _ in range(150):
        mujoco.mj_step(m, d)
    check_states(sensor, m, d, weight, 20, every=5)
    assert sensor.read(d).non_sole_contacts
    # in the air
    d = g1.make_data("stand")
    d.qpos[2] += 0.5
    check_states(sensor, m, d, weight, 3)
    assert d.ncon == 0


def test_sensings_copy_and_compare(g1):
    """A sensing pickles and copies (its layout, raw values and non-sole contacts) and compares
    equal to its copies; another step's sensing does not."""
    m = g1.mj_model
    d = g1.make_data("stand")
    sensor = ContactSensor.for_robot(g1)
    mujoco.mj_step(m, d)
    s = sensor.read(d)
    _ = s.force_world  # decoded fields are not part of the state
    for twin in (copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert twin == s
        np.testing.assert_array_equal(twin.force_world, s.force_world)
    mujoco.mj_step(m, d)
    assert sensor.read(d) != s


def test_friction_and_cone_are_read_at_run_time():
    """The friction MuJoCo uses and its cone type are read at each step, not copied at the build:
    soles set to mu 0.3 with a higher priority than the floor (1.0) at run time are sensed at 0.3,
    as d.contact.friction says (the larger of the two, 1.0, was sensed before); switching the cone
    type in the middle of a run (pyramidal -> elliptic -> pyramidal) keeps every force equal to
    mj_contactForce's."""
    import wbsim

    g1 = wbsim.load_robot("g1")  # a copy of the model: changed here only
    m = g1.mj_model
    sensor = ContactSensor.for_robot(g1)
    d = g1.make_data("stand")
    weight = g1.total_mass * G
    check_states(sensor, m, d, weight, 20, every=5)
    assert np.all(sensor.read(d).friction == 1.0)
    soles = list(sensor.point_geom_ids)
    m.geom_friction[soles, 0], m.geom_priority[soles] = 0.3, 1
    mujoco.mj_step(m, d)
    s = sensor.read(d)
    listed = [i for i in range(d.ncon) if int(d.contact.geom[i][1]) in soles]
    assert listed and np.all(d.contact.friction[listed, 0] == 0.3)
    assert np.all(s.friction == 0.3)
    for cone in ("elliptic", "pyramidal"):
        m.opt.cone = getattr(mujoco.mjtCone, f"mjCONE_{cone.upper()}")
        check_states(sensor, m, d, weight, 20, every=5)
        assert sensor.read(d).cone == int(m.opt.cone)
