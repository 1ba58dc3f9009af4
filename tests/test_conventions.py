"""Each row of the conventions table in wbsim/conventions.py, checked against the installed MuJoCo."""

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from conftest import random_state

from wbsim.conventions import quat_wxyz_to_xyzw, quat_xyzw_to_wxyz, rotation_from_wxyz


def test_quaternion_orders_round_trip():
    q = np.array([0.1, 0.2, 0.3, 0.9])
    assert np.array_equal(quat_wxyz_to_xyzw(q), [0.2, 0.3, 0.9, 0.1])
    assert np.array_equal(quat_xyzw_to_wxyz(quat_wxyz_to_xyzw(q)), q)


def test_rotation_matches_pinocchio():
    rng = np.random.default_rng(0)
    R = pin.rpy.rpyToMatrix(*rng.normal(size=3))
    quat = pin.Quaternion(R)
    assert np.allclose(rotation_from_wxyz([quat.w, quat.x, quat.y, quat.z]), R, atol=1e-14)


def test_mujoco_free_joint_velocity_frames():
    """Row check on a lone free body: qvel[0:3] is the world-frame velocity of the body origin and
    qvel[3:6] the angular velocity in the body frame (MuJoCo 4.x)."""
    m = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><freejoint/><geom type="box" size=".1 .2 .3" pos=".3 .1 0"/>'
        "</body></worldbody></mujoco>"
    )
    d = mujoco.MjData(m)
    quat = np.array([0.3, -0.5, 0.6, 0.4])
    d.qpos[3:7] = quat / np.linalg.norm(quat)
    d.qvel[:] = [1.0, 2.0, 3.0, 0.4, 0.5, 0.6]
    mujoco.mj_forward(m, d)
    R = d.xmat[1].reshape(3, 3)
    # finite difference of the body origin: world frame linear velocity
    d2 = mujoco.MjData(m)
    d2.qpos[:] = d.qpos
    mujoco.mj_integratePos(m, d2.qpos, d.qvel, 1e-7)
    mujoco.mj_forward(m, d2)
    assert np.allclose((d2.xpos[1] - d.xpos[1]) / 1e-7, [1, 2, 3], atol=1e-5)
    vel = np.zeros(6)
    mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, 1, vel, 0)  # world, rotation first
    assert np.allclose(vel[:3], R @ [0.4, 0.5, 0.6], atol=1e-12)


def test_round_trip_exact(robot):
    rng = np.random.default_rng(1)
    for _ in range(10):
        q, v = random_state(robot, rng)
        qpos, qvel = robot.pin_to_mj(q, v)
        q2, v2 = robot.mj_to_pin(qpos, qvel)
        assert np.max(np.abs(q2 - q)) < 1e-12 and np.max(np.abs(v2 - v)) < 1e-12
        qpos2, qvel2 = robot.pin_to_mj(q2, v2)
        assert np.max(np.abs(qpos2 - qpos)) < 1e-12 and np.max(np.abs(qvel2 - qvel)) < 1e-12


def test_joints_mapped_by_name(robot):
    """Setting one joint by name in Pinocchio's q moves the MuJoCo joint of that name only."""
    q = robot.pose_q("stand")
    name = robot.joint_names[len(robot.joint_names) // 2]
    q[robot.pin_model.joints[robot.pin_model.getJointId(name)].idx_q] += 0.123
    qpos, _ = robot.pin_to_mj(q)
    diff = qpos - robot.pose_qpos("stand")
    changed = np.flatnonzero(np.abs(diff) > 1e-12)
    assert list(changed) == [robot.mj_model.jnt_qposadr[robot.mj_model.joint(name).id]]


def test_body_velocity_agrees(robot):
    """The world-frame spatial velocity of a foot link, from each library, for converted states."""
    rng = np.random.default_rng(2)
    m, pm = robot.mj_model, robot.pin_model
    d, pd = mujoco.MjData(m), pm.createData()
    for _ in range(10):
        q, v = random_state(robot, rng)
        d.qpos[:], d.qvel[:] = robot.pin_to_mj(q, v)
        mujoco.mj_forward(m, d)
        for foot in robot.feet.values():
            pin.forwardKinematics(pm, pd, q, v)
            pin.updateFramePlacements(pm, pd)
            vel_pin = pin.getFrameVelocity(pm, pd, foot.pin_frame_id, pin.LOCAL_WORLD_ALIGNED)
            jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
            mujoco.mj_jacBody(m, d, jacp, jacr, foot.mj_body_id)
            assert np.allclose(jacp @ d.qvel, vel_pin.linear, atol=1e-9)
            assert np.allclose(jacr @ d.qvel, vel_pin.angular, atol=1e-9)


def test_velocity_map_is_consistent(robot):
    rng = np.random.default_rng(3)
    q, v = random_state(robot, rng)
    _, qvel = robot.pin_to_mj(q, v)
    assert np.allclose(robot.converter.velocity_map(q) @ v, qvel, atol=1e-13)


def test_converter_rejects_mismatched_models(g1, talos):
    from wbsim.conventions import StateConverter
    from wbsim.errors import WbsimError

    with pytest.raises(WbsimError):
        StateConverter(g1.mj_model, talos.pin_model, g1.joint_names, "floating_base")


def test_mj_to_pin_matches_independent_computation(robot):
    """mj_to_pin against a by-name mapping and Pinocchio's rotation, also for a
    quaternion that is not unit length (the base velocity uses the normalised rotation)."""
    from wbsim.errors import WbsimError

    rng = np.random.default_rng(4)
    m, pm = robot.mj_model, robot.pin_model
    for _ in range(10):
        qpos = rng.normal(size=m.nq)
        qvel = rng.normal(size=m.nv)
        q, v = robot.mj_to_pin(qpos, qvel)
        w, x, y, z = qpos[3:7]
        R = pin.Quaternion(np.array([x, y, z, w])).normalized().toRotationMatrix()
        n = np.sqrt(w * w + x * x + y * y + z * z)  # Pinocchio gets a unit quaternion
        assert np.array_equal(q[0:3], qpos[0:3])
        np.testing.assert_allclose(q[3:7], np.array([x, y, z, w]) / n, rtol=0, atol=1e-15)
        assert np.allclose(v[0:3], R.T @ qvel[0:3], rtol=0, atol=1e-14)
        assert np.array_equal(v[3:6], qvel[3:6])
        for name in robot.joint_names:
            j, pj = m.joint(name).id, pm.joints[pm.getJointId(name)]
            assert q[pj.idx_q] == qpos[m.jnt_qposadr[j]] and v[pj.idx_v] == qvel[m.jnt_dofadr[j]]
        q2, none = robot.mj_to_pin(qpos)
        assert none is None and np.array_equal(q2, q)
        assert not np.shares_memory(q, qpos) and not np.shares_memory(v, qvel)
    qpos[3:7] = 0.0
    with pytest.raises(WbsimError, match="quaternion is zero"):
        robot.mj_to_pin(qpos, qvel)


def test_rotate_to_base_matches_pinocchio():
    """R^T v with R from Pinocchio's normalised quaternion, for unnormalised quaternions, one at a
    time and in a batch; a zero quaternion is refused."""
    import wbsim
    from wbsim.conventions import rotate_to_base

    rng = np.random.default_rng(3)
    quats = rng.normal(size=(200, 4)) * rng.uniform(0.1, 3.0, size=(200, 1))
    vels = rng.normal(size=(200, 3))
    expected = np.array(
        [pin.Quaternion(q).normalized().toRotationMatrix().T @ v for q, v in zip(quats, vels)]
    )
    np.testing.assert_allclose(rotate_to_base(quats, vels), expected, rtol=0, atol=1e-14)
    for q, v, e in zip(quats[:5], vels[:5], expected[:5]):
        np.testing.assert_allclose(rotate_to_base(q, v), e, rtol=0, atol=1e-14)
    with pytest.raises(wbsim.WbsimError, match="quaternion is zero"):
        rotate_to_base(np.zeros(4), np.ones(3))


def test_conversions_take_batches_of_states(robot):
    """mj_to_pin and mj_acceleration_to_pin on (k, n) arrays give each row's single conversion."""
    rng = np.random.default_rng(6)
    m, conv = robot.mj_model, robot.converter
    qpos, qvel, qacc = (
        rng.normal(size=(7, m.nq)),
        rng.normal(size=(7, m.nv)),
        rng.normal(size=(7, m.nv)),
    )
    q, v = robot.mj_to_pin(qpos, qvel)
    a = conv.mj_acceleration_to_pin(q, v, qacc)
    for i in range(7):
        qi, vi = robot.mj_to_pin(qpos[i], qvel[i])
        np.testing.assert_allclose(q[i], qi, rtol=0, atol=1e-15)
        np.testing.assert_allclose(v[i], vi, rtol=1e-15, atol=1e-15)
        np.testing.assert_allclose(
            a[i], conv.mj_acceleration_to_pin(qi, vi, qacc[i]), rtol=0, atol=1e-14
        )


def test_base_tilt_matches_mujoco_rotation():
    """base_tilt against acos of mju_quat2Mat's R[2, 2] (of the normalised quaternion) for random
    quaternions of any norm, upright (0), upside down (pi), and NaN / zero quaternions (NaN)."""
    import math

    from wbsim.conventions import base_tilt

    rng = np.random.default_rng(3)
    R = np.empty(9)
    for _ in range(200):
        q = rng.normal(size=4) * rng.uniform(0.1, 10.0)
        mujoco.mju_quat2Mat(R, q / np.linalg.norm(q))
        assert base_tilt(*q.tolist()) == pytest.approx(np.arccos(np.clip(R[8], -1, 1)), abs=1e-7)
    # a known angle: turned 30 deg about x (and any yaw on top of it)
    a = math.radians(30.0)
    qx = np.array([math.cos(a / 2), math.sin(a / 2), 0.0, 0.0])
    yaw = np.array([math.cos(0.4), 0.0, 0.0, math.sin(0.4)])
    q = np.empty(4)
    mujoco.mju_mulQuat(q, yaw, qx)
    assert base_tilt(*q.tolist()) == pytest.approx(a, abs=1e-12)
    assert base_tilt(1.0, 0.0, 0.0, 0.0) == 0.0
    assert base_tilt(0.0, 1.0, 0.0, 0.0) == pytest.approx(math.pi)
    assert math.isnan(base_tilt(math.nan, 0.0, 0.0, 0.0))
    assert math.isnan(base_tilt(0.0, 0.0, 0.0, 0.0))
    # arrays, element-wise
    qs = rng.normal(size=(4, 50))
    np.testing.assert_array_equal(base_tilt(*qs), [base_tilt(*c.tolist()) for c in qs.T])


def test_mj_acceleration_to_pin_inverts_the_velocity_map(robot):
    """vdot from qacc against the slow route, solve(T, qacc - Tdot v), and against MuJoCo's own
    dynamics: at a random state and torque, Pinocchio's RNEA of the converted mj_forward qacc
    gives MuJoCo's applied forces (no contacts: the robot is lifted off the floor)."""
    conv = robot.converter
    rng = np.random.default_rng(5)
    m, pm = robot.mj_model, robot.pin_model
    for _ in range(5):
        q, v = random_state(robot, rng)
        qacc = rng.normal(size=m.nv)
        expect = np.linalg.solve(conv.velocity_map(q), qacc - conv.velocity_map_dot_times_v(q, v))
        np.testing.assert_allclose(conv.mj_acceleration_to_pin(q, v, qacc), expect, atol=1e-12)
    d = mujoco.MjData(m)
    q, v = random_state(robot, rng)
    q[2] += 5.0  # high above the floor: no contact
    d.qpos[:], d.qvel[:] = robot.pin_to_mj(q, v)
    tau = rng.normal(size=robot.n_joints)
    d.ctrl[:] = tau
    mujoco.mj_forward(m, d)
    assert d.ncon == 0
    # Pinocchio's inverse dynamics of the converted vdot gives MuJoCo's applied forces (motors and
    # passive forces; the armature is in both models' inertia)
    vdot = conv.mj_acceleration_to_pin(q, v, d.qacc.copy())
    f_mj = d.qfrc_actuator + d.qfrc_passive
    f_pin = conv.mj_force_to_pin(f_mj, q)
    pdata = pm.createData()
    tau_id = pin.rnea(pm, pdata, q, v, vdot)
    np.testing.assert_allclose(tau_id, f_pin, atol=1e-6 * max(1.0, np.abs(f_pin).max()))


def test_spatial_vector_orders():
    """MuJoCo's spatial velocities are rotation first, Pinocchio's ``Motion`` linear first: a body
    spinning about the world z axis at 2 rad/s while its origin moves along x at 3 m/s."""
    m = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body name="b"><freejoint/><geom type="sphere" size=".1"/></body>'
        "</worldbody></mujoco>"
    )
    d = mujoco.MjData(m)
    d.qvel[:] = [3.0, 0.0, 0.0, 0.0, 0.0, 2.0]
    mujoco.mj_forward(m, d)
    vel = np.zeros(6)
    mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, 1, vel, 0)  # world frame
    assert np.allclose(vel, [0, 0, 2, 3, 0, 0])
    motion = pin.Motion(np.array([3.0, 0.0, 0.0, 0.0, 0.0, 2.0]))
    assert np.allclose(motion.linear, [3, 0, 0]) and np.allclose(motion.angular, [0, 0, 2])


def test_contact_frame_and_force_order():
    """``mj_contactForce`` gives the force in the contact frame, normal first; on a z-up plane the
    frame's rows are world z, y, -x; a 2 kg box resting on it pushes its weight along the normal."""
    m = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><geom type="plane" size="1 1 .1"/><body pos="0 0 .1"><freejoint/>'
        '<geom type="box" size=".1 .1 .1" mass="2"/></body></worldbody></mujoco>'
    )
    d = mujoco.MjData(m)
    mujoco.mj_step(m, d, 500)
    assert d.ncon == 4
    total = np.zeros(6)
    for i in range(d.ncon):
        assert np.allclose(d.contact.frame[i].reshape(3, 3), [[0, 0, 1], [0, 1, 0], [-1, 0, 0]])
        f = np.zeros(6)
        mujoco.mj_contactForce(m, d, i, f)
        total += f
    assert total[0] == pytest.approx(2 * 9.81, rel=1e-3) and abs(total[1:3]).max() < 1e-6


def test_friction_of_a_pair_follows_priority_then_the_larger():
    """MuJoCo's friction of a contact (``data.contact.friction``): the higher priority geom's, at
    equal priority the larger of the two; ``wbsim.contacts.pair_friction`` says the same."""
    from wbsim.contacts import pair_friction

    for box_mu, box_priority, expected in (
        (0.3, 0, 1.0),
        (0.3, 1, 0.3),
        (1.5, 0, 1.5),
        (1.5, -1, 1.0),
    ):
        m = mujoco.MjModel.from_xml_string(
            '<mujoco><worldbody><geom type="plane" size="1 1 .1" friction="1 .005 .0001"/>'
            f'<body pos="0 0 .099"><freejoint/><geom type="box" size=".1 .1 .1" '
            f'friction="{box_mu} .005 .0001" priority="{box_priority}"/></body></worldbody>'
            "</mujoco>"
        )
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        assert d.ncon and np.allclose(d.contact.friction[: d.ncon, 0], expected)
        assert pair_friction(m, [1], 0) == pytest.approx([expected])
