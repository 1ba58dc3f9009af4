"""Multi-contact (issue #17, part 5): a hand on a wall as a third contact.

The contact frame against MuJoCo's own, the G1HandWall robot and its pose, the sensing and the
events of a point on a wall, the statics QP with three contacts against the KKT conditions of the
same QP written here from MuJoCo's contact frames and solved with numpy, the projection with
three contacts against the seed's KKT system and finite-difference Jacobians, and the scenario in
closed loop (slow)."""

import mujoco
import numpy as np
import pinocchio as pin
import pytest
import scipy.optimize

import wbsim
from wbsim.contacts import ContactSensor, contact_frame
from wbsim.controllers.contact_projected_id import (
    ContactProjectedID,
    build_contact_layout,
    contact_kinematics,
    contact_projection,
)
from wbsim.controllers.friction import FRICTION_MARGIN
from wbsim.controllers.gravity_qp import GravityCompensationError, GravityCompensationQP
from wbsim.controllers.tasks import compute_snapshot
from wbsim.diagnostics import EventDetector
from wbsim.envs.hand_wall import WALL_Y, g1_hand_wall_config
from wbsim.errors import UnknownNameError
from wbsim.types import ContactSchedule, RobotState, StepChunk

THREE = ("left_foot", "right_foot", "right_hand")


@pytest.fixture(scope="module")
def hand_robot():
    return wbsim.load_robot(g1_hand_wall_config())


# ------------------------------------------------------------------------------------------------
# the contact frame
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "normal",
    [
        (0, 0, 1),
        (0, 1, 0),
        (0, -1, 0),
        (1, 0, 0),
        (-1, 0, 0),
        (0.3, -0.8, 0.52),
        (0.2, 0.45, -0.87),
        (0, 0.5, 0.866),
    ],
)
def test_contact_frame_has_mujoco_s_pyramid_axes(normal):
    """A sphere on a plane with that normal: MuJoCo's contact frame has the same normal line and
    its tangents span the same diamond (the same two lines, up to sign and order)."""
    n = np.asarray(normal, dtype=float) / np.linalg.norm(normal)
    xml = f"""<mujoco><worldbody>
      <geom name="plane" type="plane" size="1 1 0.1" zaxis="{n[0]} {n[1]} {n[2]}"/>
      <body pos="{0.049 * n[0]} {0.049 * n[1]} {0.049 * n[2]}"><freejoint/>
        <geom type="sphere" size="0.05"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    assert d.ncon == 1
    frame = d.contact[0].frame.reshape(3, 3)  # rows: normal, tangent 1, tangent 2
    R = contact_frame(n)
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0)
    np.testing.assert_allclose(R[:, 2], n, atol=1e-12)
    # the lines of the tangents: |cos| between each of ours and MuJoCo's is 1 or 0, pairing both
    C = np.abs(R[:, :2].T @ frame[1:].T)
    np.testing.assert_allclose(np.sort(C, axis=1), [[0, 1], [0, 1]], atol=1e-12)
    np.testing.assert_allclose(np.sort(C, axis=0), [[0, 0], [1, 1]], atol=1e-12)


def test_the_floor_s_contact_frame_is_the_world_s():
    np.testing.assert_array_equal(contact_frame([0, 0, 1]), np.eye(3))


# ------------------------------------------------------------------------------------------------
# the robot, the scene and the pose
# ------------------------------------------------------------------------------------------------
def test_hand_wall_robot_has_three_contacts(hand_robot):
    r = hand_robot
    assert r.contact_names == THREE and r.foot_names == ("left_foot", "right_foot")
    assert tuple(r.hands) == ("right_hand",)
    assert r.contact_point_names[8:] == tuple(
        f"right_hand_{c}" for c in ("front_left", "back_left", "back_right", "front_right")
    )
    hand = r.contact("right_hand")
    assert hand.surface == "wall" and hand.mj_surface_geom_id == r.mj_model.geom("wall").id
    np.testing.assert_allclose(hand.surface_rotation[:, 2], [0, 1, 0], atol=1e-12)
    np.testing.assert_array_equal(r.contact("left_foot").surface_rotation, np.eye(3))
    with pytest.raises(UnknownNameError, match="right_hand"):
        r.contact("left_hand")
    assert r.n_joints == 29  # the fingers are locked


def test_lean_pose_puts_the_back_of_the_hand_flat_on_the_wall(hand_robot):
    """In the reset pose every hand point is on the wall (Pinocchio frame and MuJoCo site), the
    hand's outward normal is -y, every sole point on the floor, and no other robot geom touches
    the wall or the floor."""
    r = hand_robot
    model, data = r.pin_model, r.pin_model.createData()
    q = r.pose_q("lean")
    pin.framesForwardKinematics(model, data, q)
    hand = r.contact("right_hand")
    points = np.array([data.oMf[f].translation for f in hand.pin_point_frame_ids])
    np.testing.assert_allclose(points[:, 1], WALL_Y, atol=1e-9)
    palm = data.oMf[hand.pin_frame_id].rotation
    np.testing.assert_allclose(palm @ np.array([0.0, -1.0, 0.0]), [0, -1, 0], atol=1e-9)
    soles = np.array(
        [data.oMf[f].translation[2] for f in r.feet.values() for f in f.pin_point_frame_ids]
    )
    np.testing.assert_allclose(soles, 0.0, atol=1e-9)
    d = r.make_data("lean")
    sites = np.array([d.site_xpos[s] for s in hand.mj_site_ids])
    np.testing.assert_allclose(sites[:, 1], WALL_Y, atol=1e-9)
    sensor = ContactSensor.for_robot(r)
    assert sensor.non_sole_contacts(d) == {}
    np.testing.assert_allclose(sensor.read(d).gap, 0.0, atol=1e-9)  # spheres just touching


# ------------------------------------------------------------------------------------------------
# sensing and events on the wall
# ------------------------------------------------------------------------------------------------
def test_sensing_reads_the_hand_against_the_wall(hand_robot):
    """Hand points: the wall's normal and offset, the gap to the wall when off it, the force of
    the wall pushing the hand, the hand-wall friction (not the floor's)."""
    r = hand_robot
    m = r.mj_model
    sensor = ContactSensor.for_robot(r)
    lay = sensor.layout
    np.testing.assert_allclose(lay.surface_normal[8:], [[0, 1, 0]] * 4, atol=1e-12)
    np.testing.assert_allclose(lay.surface_offset[8:], WALL_Y, atol=1e-12)
    np.testing.assert_allclose(lay.surface_normal[:8], [[0, 0, 1]] * 8, atol=1e-12)
    assert lay.foot_names == THREE
    # off the wall by 1 cm: the hand's gap is 1 cm
    d = r.make_data("lean")
    d.qpos[1] += 0.01
    mujoco.mj_forward(m, d)
    np.testing.assert_allclose(sensor.read(d).gap[8:], 0.01, atol=1e-9)
    # pressed into the wall: the wall pushes the robot along +y at every hand point
    d = r.make_data("lean")
    d.qpos[1] -= 0.001
    d.qpos[2] += 0.01  # feet off the floor: only the hand touches
    mujoco.mj_forward(m, d)
    s = sensor.read(d)
    assert s.found[8:].all() and not s.found[:8].any()
    f = s.force_world[8:]
    assert (f[:, 1] >= 0).all() and f[:, 1].sum() > 10.0
    np.testing.assert_allclose(f @ [0, 1, 0], s.normal_force[8:], rtol=1e-9)
    assert s.feet_in_contact == {"right_hand"}
    # the hand-wall pair's friction, by MuJoCo's rule (the larger), not the floor's
    wall, floor = m.geom("wall").id, m.geom("floor").id
    saved = m.geom_friction[[wall, floor], 0].copy()
    hand_geoms = list(r.contact("right_hand").mj_geom_ids)
    saved_hand = m.geom_friction[hand_geoms, 0].copy()
    try:
        m.geom_friction[wall, 0], m.geom_friction[floor, 0] = 0.45, 0.9
        m.geom_friction[hand_geoms, 0] = 0.2
        np.testing.assert_allclose(sensor.friction(mujoco.MjData(m))[8:], 0.45)  # the model's
        mujoco.mj_forward(m, d)
        np.testing.assert_allclose(sensor.friction(d)[8:], 0.45)
        ctrl = GravityCompensationQP(r)
        assert ctrl.friction().mu["right_hand"] == pytest.approx(FRICTION_MARGIN * 0.45)
    finally:
        m.geom_friction[[wall, floor], 0] = saved
        m.geom_friction[hand_geoms, 0] = saved_hand


def _wall_chunk(force, mu=0.7):
    """One step, one commanded point force ``force`` (N) on a hand point lying on the wall
    (normal +y), pressed and sticking; MuJoCo's pyramidal cone."""
    R = contact_frame([0.0, 1.0, 0.0])
    tangents = R[:, :2].T
    f = np.asarray(force, dtype=float)
    one = np.ones((1, 1))
    return StepChunk(
        step=np.array([0]),
        t=np.array([0.0]),
        point_names=("right_hand_p",),
        point_foot=("right_hand",),
        foot_names=("right_hand",),
        floor_normal=np.array([0.0, 0.0, 1.0]),
        gap=-1e-4 * one,
        force=np.array([[[0.0, 10.0, 0.0]]]),
        normal_force=10.0 * one,
        tangential_force=0.0 * one,
        slip_velocity=0.0 * one,
        friction=mu * one,
        cone=np.zeros(1, dtype=np.int8),
        tangents=tangents[None, None],
        friction_components=np.zeros((1, 1, 2)),
        mode=np.ones((1, 1), dtype=np.int8),
        sensed_feet=np.ones((1, 1), dtype=bool),
        non_sole=[],
        point_forces=f[None, None],
        foot_wrenches=np.full((1, 1, 6), np.nan),
        assumed=np.ones((1, 1), dtype=bool),
        status=np.zeros(1, dtype=np.int8),
        fallback=("",),
        message=("",),
        joint_names=(),
        torque=np.zeros((1, 0)),
        torque_applied=np.zeros((1, 0)),
        torque_limit=np.zeros(0),
        normals=np.array([[0.0, 1.0, 0.0]]),
    )


@pytest.mark.parametrize(
    "force, kinds",
    [
        ((0.0, 10.0, 0.0), set()),  # pushes on the wall: fine
        ((0.0, 10.0, 6.9), set()),  # friction up the wall inside 0.7 x 10 N
        ((0.0, -10.0, 0.0), {"force_sign"}),  # pulls on the wall
        ((0.0, 10.0, 7.5), {"friction_cone"}),  # 7.5 N > 7 N along the wall
        ((5.0, 10.0, 2.5), {"friction_cone"}),  # the diamond: 5 + 2.5 > 7
    ],
)
def test_commanded_forces_on_the_wall_are_judged_in_its_frame(force, kinds):
    det = EventDetector(dt=0.002)
    got = {e.kind for e in det.update(_wall_chunk(force))}
    assert got == kinds


# ------------------------------------------------------------------------------------------------
# the statics QP with three contacts against its KKT conditions
# ------------------------------------------------------------------------------------------------
def _mujoco_frames(robot, q):
    """Per contact point, MuJoCo's contact frame with its surface (rows: normal towards the
    robot, tangent 1, tangent 2), read from ``MjData.contact`` (a contact of any point with the
    same plane: MuJoCo's frame on a plane depends on its normal only), the points' margins
    widened so that the points off their surface have contacts too."""
    m = robot.mj_model
    d = mujoco.MjData(m)
    d.qpos[:] = robot.pin_to_mj(q)[0]
    geoms = [g for c in robot.contacts.values() for g in c.mj_geom_ids]
    surface = {g: c.mj_surface_geom_id for c in robot.contacts.values() for g in c.mj_geom_ids}
    saved = m.geom_margin[geoms].copy()
    try:
        m.geom_margin[geoms] = 0.1
        mujoco.mj_forward(m, d)
    finally:
        m.geom_margin[geoms] = saved
    frames = {}
    for c in d.contact[: d.ncon]:
        point = int(c.geom[1] if c.geom[1] in geoms else c.geom[0])
        F = c.frame.reshape(3, 3).copy()
        if c.geom[0] == point:  # the normal from geom 1 to geom 2: towards the robot
            F[0] *= -1
        frames[surface[point]] = F
    return [frames[surface[g]] for g in geoms]


def _kkt_statics(robot, q, support, mu, eps, sol_tau, sol_f):
    """The statics QP written from scratch: ``x = [tau; f]``, min 1/2 (|tau|^2 + eps |f|^2) s.t.
    ``g(q) = [0; tau] + J^T f`` (g from RNEA at zero velocity and acceleration, J point Jacobians
    world-aligned), MuJoCo's pyramid ``|f.t1| + |f.t2| <= mu f.n`` and ``f.n >= 0`` in MuJoCo's
    contact frames, ``|tau| <= effort``. Solved from the KKT system of the constraints active at
    the given solution (numpy), with the KKT conditions checked: ``(tau, f)`` (N·m, N)."""
    model, data = robot.pin_model, robot.pin_model.createData()
    nv, n = model.nv, robot.n_joints
    g = pin.rnea(model, data, q, np.zeros(nv), np.zeros(nv))
    names = [p for c in support for p in robot.contact(c).point_names]
    frame_of = dict(zip(robot.contact_point_names, _mujoco_frames(robot, q)))
    mu_of = {p: mu[c] for c in support for p in robot.contact(c).point_names}
    J = np.vstack(
        [
            pin.computeFrameJacobian(model, data, q, model.getFrameId(p), pin.LOCAL_WORLD_ALIGNED)[
                :3
            ]
            for p in names
        ]
    )
    nf = 3 * len(names)
    act = np.asarray(robot.converter.pin_vidx)
    S = np.zeros((n, nv))
    S[np.arange(n), act] = 1.0
    A = np.hstack([S.T, J.T])  # g = S^T tau + J^T f
    b = g
    G, h = [], []
    for i, p in enumerate(names):
        nrm, t1, t2 = frame_of[p]
        for row in (
            [-nrm],
            *[[a * t1 + c * t2 - mu_of[p] * nrm] for a in (1, -1) for c in (1, -1)],
        ):
            r = np.zeros(n + nf)
            r[n + 3 * i : n + 3 * i + 3] = row[0]
            G.append(r)
            h.append(0.0)
    lim = robot.effort_limits
    for j in np.flatnonzero(np.isfinite(lim)):
        for sign in (1.0, -1.0):
            r = np.zeros(n + nf)
            r[j] = sign
            G.append(r)
            h.append(lim[j])
    G, h = np.array(G), np.array(h)
    P = np.diag(np.r_[np.ones(n), np.full(nf, eps)])
    x_sol = np.r_[sol_tau, sol_f.ravel()]
    active = np.flatnonzero(G @ x_sol - h > -1e-7)
    Ga = G[active]
    k, ne, na = n + nf, len(b), len(active)
    K = np.block([[P, A.T, Ga.T], [A, np.zeros((ne, ne + na))], [Ga, np.zeros((na, ne + na))]])
    z = np.linalg.lstsq(K, np.r_[np.zeros(k), b, h[active]], rcond=None)[0]
    x = z[:k]  # unique (P > 0), even where the active rows are redundant
    np.testing.assert_allclose(A @ x, b, atol=1e-8)
    np.testing.assert_allclose(Ga @ x, h[active], atol=1e-8)
    assert (G @ x - h <= 1e-9).all()
    # dual feasibility: multipliers with mu >= 0 on the active rows that make P x stationary
    # (not unique where a point's five rows are active at zero force: scipy's bounded least
    # squares finds one)
    lo = np.r_[np.full(ne, -np.inf), np.zeros(na)]
    dual = scipy.optimize.lsq_linear(
        np.hstack([A.T, Ga.T]),
        -P @ x,
        bounds=(lo, np.inf),
        tol=1e-14,
        lsmr_tol="auto",
        max_iter=10_000,
    )
    assert np.abs(dual.fun).max() < 1e-8, np.abs(dual.fun).max()
    return x[:n], x[n:].reshape(-1, 3), active.size


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize(
    "support", [THREE, ("left_foot", "right_hand"), ("right_foot", "right_hand")]
)
def test_statics_qp_with_three_contacts_matches_its_kkt_solution(hand_robot, support, fast):
    """Both feet and the hand, and each foot with the hand (the CoM of the lean pose is outside
    either sole: the hand must carry), at the lean pose and at a posture nearby: torques and
    forces within 1e-6 of the KKT solution, with the wall's cone active where it binds."""
    r = hand_robot
    ctrl = GravityCompensationQP(r, fast=fast)
    assert ctrl.uses_kernel == fast
    rng = np.random.default_rng(7)
    mu = ctrl.friction().mu
    for q in (r.pose_q("lean"), _near(r, rng)):
        res = ctrl.solve(q, support)
        if support == ("right_foot", "right_hand") and not res.feasible:
            # standing on the foot under the hand: the lean pose's CoM is on the far side
            assert "no solution" in res.status
            continue
        assert res.feasible, res.status
        f = np.array([res.contact_forces[p] for c in support for p in r.contact(c).point_names])
        tau, f_ref, n_active = _kkt_statics(r, q, support, mu, ctrl.eps, res.tau_array, f)
        np.testing.assert_allclose(res.tau_array, tau, atol=1e-6)
        np.testing.assert_allclose(f, f_ref, atol=1e-6)
        hand = f[-4:].sum(axis=0)
        assert hand[1] > 1.0  # the wall pushes the hand: it is loaded
        if support == ("left_foot", "right_hand"):  # the wall's friction binds
            assert n_active > 0 and any(
                a.startswith("right_hand") and ":friction" in a for a in res.active_constraints
            )


def _near(robot, rng):
    """The lean pose with the legs and waist moved a little (the hand stays on the wall only
    approximately: the statics do not need it on it)."""
    q = robot.pose_q("lean").copy()
    idx = robot.converter.pin_qidx
    legs = [i for i, n in zip(idx, robot.joint_names) if "hip" in n or "knee" in n or "waist" in n]
    q[legs] += rng.uniform(-0.03, 0.03, len(legs))
    return q


def test_the_kernel_serves_the_hand_as_the_readable_path_does(hand_robot):
    r = hand_robot
    fast, slow = GravityCompensationQP(r, fast=True), GravityCompensationQP(r, fast=False)
    assert fast.uses_kernel and not slow.uses_kernel
    q = r.pose_q("lean")
    for support in (THREE, ("left_foot", "right_hand")):
        a, b = fast.solve(q, support), slow.solve(q, support)
        np.testing.assert_allclose(a.tau_array, b.tau_array, atol=1e-7)
        for p in a.contact_forces:
            np.testing.assert_allclose(a.contact_forces[p], b.contact_forces[p], atol=1e-7)


@pytest.mark.parametrize("method", ["pinv", "min_torque"])
def test_statics_judges_the_hand_s_forces_in_the_wall_s_frame(hand_robot, method):
    """The closed forms ignore the inequalities; their physical check names the points whose
    force pulls or leaves MuJoCo's pyramid, each in the frame of its own surface (MuJoCo's)."""
    r = hand_robot
    ctrl = GravityCompensationQP(r, method=method)
    q = r.pose_q("lean")
    for support in (THREE, ("left_foot", "right_hand")):
        res = ctrl.solve(q, support)
        names = [p for c in support for p in r.contact(c).point_names]
        frame_of = dict(zip(r.contact_point_names, _mujoco_frames(r, q)))
        mu = ctrl.friction().mu
        pulls, slips = set(), set()
        for p in names:
            f, (n, t1, t2) = res.contact_forces[p], frame_of[p]
            fn = f @ n
            if fn < -ctrl.feasibility_tol:
                pulls.add(p)
            elif abs(f @ t1) + abs(f @ t2) > mu[p.rsplit("_", 2)[0]] * fn + ctrl.feasibility_tol:
                slips.add(p)
        assert pulls | slips, "the closed form should break an inequality here"
        got_pulls = {x.split(":")[0] for x in res.reasons if "normal force" in x}
        got_slips = {x.split(":")[0] for x in res.reasons if "would slip" in x}
        assert (got_pulls, got_slips) == (pulls, slips)


def test_statics_refuses_what_it_cannot_do_with_a_hand(hand_robot):
    with pytest.raises(GravityCompensationError, match="points"):
        GravityCompensationQP(hand_robot, contact_model="wrench").solve(
            hand_robot.pose_q("lean"), THREE
        )
    with pytest.raises(UnknownNameError, match="right_hand"):
        GravityCompensationQP(hand_robot).solve(hand_robot.pose_q("lean"), ["left_hand"])


def test_gravity_qp_commands_the_hand_s_points(hand_robot):
    r = hand_robot
    ctrl = GravityCompensationQP(r)
    q = r.pose_q("lean")
    state = RobotState(0.0, q, np.zeros(r.pin_model.nv))
    ctrl.reset(state)
    cmd = ctrl.compute(state, ContactSchedule(frozenset(THREE)))
    assert cmd.feasible and cmd.contact_set == frozenset(THREE)
    assert cmd.point_forces.shape == (12, 3)
    hand = cmd.point_forces[8:]
    assert (hand[:, 1] >= -1e-6).all() and hand[:, 1].sum() > 1.0  # pressed on the wall
    np.testing.assert_array_equal(
        cmd.point_forces[8:],
        np.array(
            [ctrl.solve(q, THREE).contact_forces[p] for p in r.contact("right_hand").point_names]
        ),
    )


# ------------------------------------------------------------------------------------------------
# the projection with three contacts
# ------------------------------------------------------------------------------------------------
def _fd_jacobian(model, q, frame_id, h=1e-6):
    """World-aligned frame Jacobian ``(6, nv)`` by central differences of the placement."""
    data = model.createData()
    J = np.zeros((6, model.nv))
    for i in range(model.nv):
        e = np.zeros(model.nv)
        e[i] = h
        placements = []
        for sign in (1.0, -1.0):
            pin.framesForwardKinematics(model, data, pin.integrate(model, q, sign * e))
            placements.append(data.oMf[frame_id].copy())
        J[:3, i] = (placements[0].translation - placements[1].translation) / (2 * h)
        J[3:, i] = pin.log3(placements[0].rotation @ placements[1].rotation.T) / (2 * h)
    return J


def test_projection_with_three_contacts(hand_robot):
    """J_c (18 rows: two feet and the hand) against finite differences; ``qdd*`` against the
    seed's KKT system ``[[M, J_c^T], [J_c, 0]] [qdd; nu] = [M qdd_des; -Jcdot v]`` solved with
    numpy; N_c a projector onto J_c's null space, M-orthogonal."""
    r = hand_robot
    model, data = r.pin_model, r.pin_model.createData()
    rng = np.random.default_rng(3)
    q = r.pose_q("lean")
    v = rng.normal(scale=0.3, size=model.nv)
    s = compute_snapshot(model, data, q, v)
    layout = build_contact_layout(r, THREE)
    assert layout.feet == THREE and layout.n_rows == 18
    ck = contact_kinematics(s, layout)
    J_fd = np.vstack([_fd_jacobian(model, q, fid) for fid in layout.frame_ids])
    np.testing.assert_allclose(ck.Jc, J_fd, atol=1e-6)
    proj = contact_projection(ck.Jc, ck.Jc_dot_v, W=s.M)
    qdd_des = rng.normal(size=model.nv)
    nv, nc = model.nv, ck.Jc.shape[0]
    K = np.block([[s.M, ck.Jc.T], [ck.Jc, np.zeros((nc, nc))]])
    qdd_kkt = np.linalg.solve(K, np.r_[s.M @ qdd_des, -ck.Jc_dot_v])[:nv]
    np.testing.assert_allclose(proj.project(qdd_des), qdd_kkt, atol=1e-8)
    N = proj.Nc
    np.testing.assert_allclose(ck.Jc @ N, 0.0, atol=1e-9)
    np.testing.assert_allclose(N @ N, N, atol=1e-9)
    np.testing.assert_allclose(s.M @ N, (s.M @ N).T, atol=1e-9)
    assert np.linalg.matrix_rank(N, tol=1e-8) == nv - nc


def test_the_layout_s_cone_of_a_hand_point_is_the_wall_s(hand_robot):
    """projected_id's friction rows of a hand point: a force pressing on the wall with friction
    along it just inside ``mu`` (MuJoCo's diamond, the wall's axes) passes, just outside fails;
    a sole point's rows are the floor's."""
    layout = build_contact_layout(hand_robot, THREE)
    mu = FRICTION_MARGIN * 1.0  # the scene's friction, 1
    C, d = layout.friction, layout.friction_rhs
    # MuJoCo's frame on a wall facing +y (mju_makeFrame): tangents z and n x z = x
    R = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]).T
    for p in (8, 11):  # two of the hand's points
        rows = slice(5 * p, 5 * p + 5)
        for along, ok in ((0.99, True), (1.01, False)):
            for t in (R[:, 0], R[:, 1], (R[:, 0] + R[:, 1]) / 2):
                f = np.zeros(3 * layout.n_points)
                f[3 * p : 3 * p + 3] = 10.0 * (R[:, 2] + along * mu * t)
                assert ((C[rows] @ f - d[rows]) <= 1e-12).all() == ok
    f = np.zeros(3 * layout.n_points)
    f[0:3] = [6.9, 0.0, 10.0]  # a sole point: the floor's rows
    assert ((C[0:5] @ f - d[0:5]) <= 0).all()
    f[0:3] = [0.0, 10.0, 0.0]  # pushing sideways on the floor: out
    assert not ((C[0:5] @ f - d[0:5]) <= 0).all()


@pytest.mark.parametrize("fast", [True, False])
def test_projected_id_with_the_hand_in_its_contact_set(hand_robot, fast):
    """One step of projected_id at the lean pose on the three contacts: 18 rows of J_c, a
    contact-consistent acceleration, the hand's points pressed (its preload), the statics of the
    step balanced (the dynamics' unactuated rows)."""
    r = hand_robot
    ctrl = ContactProjectedID(r, fast=fast)
    state = RobotState(0.0, r.pose_q("lean"), np.zeros(r.pin_model.nv))
    ctrl.reset(state)
    cmd = ctrl.compute(state, ContactSchedule(frozenset(THREE)))
    assert cmd.feasible, cmd.message
    proj = ctrl.projection
    assert proj.Jc.shape == (18, r.pin_model.nv)
    qdd = cmd.info["qdd"]
    np.testing.assert_allclose(proj.Jc @ qdd + proj.Jc_dot_v, 0.0, atol=1e-8)
    hand = cmd.point_forces[8:]
    assert (hand[:, 1] >= ctrl.transition_force - 1e-6).all()
    t = ctrl.contact
    M, h = ctrl._terms.M, ctrl._terms.h
    gen = M @ qdd + h - t.Jc.T @ (t.grasp @ cmd.point_forces.ravel())
    np.testing.assert_allclose(gen[:6], 0.0, atol=1e-6)


# ------------------------------------------------------------------------------------------------
# closed loop
# ------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_g1_leans_on_the_wall_and_holds_a_foot_up_for_5_s(tmp_path):
    """wbsim/G1HandWall-v0 on projected_id, 8.5 s: no fall; the right foot sensed off the floor
    for at least 5 s without a break, at least 4.5 cm up through the hold; the hand sensed on the
    wall from the first steps on; no commanded pull (force_sign), no cone violation, no other
    robot geom on the wall or the floor, no fallback."""
    from wbsim.episode_log import load_run
    from wbsim.rollout import EpisodeConfig, run_episode

    summary = run_episode(
        EpisodeConfig(
            "wbsim/G1HandWall-v0", "projected_id", seconds=8.5, log=tmp_path / "run", progress=False
        )
    )
    assert not summary["fell"] and summary["status"] == "completed"
    counts = summary["events"]
    for kind in (
        "force_sign",
        "friction_cone",
        "non_sole_contact",
        "fallback",
        "solver_failure",
        "torque_limit",
    ):
        assert counts[kind] == 0, (kind, counts)
    assert summary["swing_clearance_min_hold_m"] > 0.045
    run = load_run(tmp_path / "run")
    cols = list(run.columns)
    t = run.steps[:, cols.index("t")]
    foot_off = run.steps[:, cols.index("sensed_right_foot")] == 0
    hand_on = run.steps[:, cols.index("sensed_right_hand")] == 1
    assert hand_on[t > 0.01].all()
    edges = np.flatnonzero(np.diff(np.r_[0, foot_off.astype(int), 0]))
    longest = max(
        (t[min(b, len(t) - 1)] - t[a] for a, b in zip(edges[::2], edges[1::2])), default=0.0
    )
    assert longest >= 5.0, longest


def test_a_wrist_on_the_wall_is_an_event_not_a_fall():
    """With 0.02 rad of joint noise, seed 4 starts G1HandWall with the right wrist's own geom
    against the wall beside the hand's points: a non-sole contact (on the wall, not the floor),
    which is not a fall (it was one, at t = 0)."""
    import gymnasium as gym

    env = gym.make("wbsim/G1HandWall-v0", reset_noise_scale=0.02).unwrapped
    env.reset(seed=4)
    s = env.sensing
    assert any(name.startswith("right_wrist") for name in s.non_sole_contacts)
    assert not s.non_sole_on_floor
    assert not env.has_fallen()
    env.close()
