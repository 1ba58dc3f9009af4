"""The two models of a robot agree, or the robot is refused at load with a message naming what
differs (wbsim.parity); a URDF rooted at a ``world`` link loads floating at its base; public
conversions hand Pinocchio unit quaternions."""

import dataclasses

import numpy as np
import pinocchio as pin
import pytest

import wbsim
from wbsim.errors import RobotLoadError
from wbsim.parity import check_models
from wbsim.robot import _read_description


@pytest.mark.parametrize("name", ["g1", "talos"])
def test_the_built_in_robots_agree(name):
    robot = wbsim.load_robot(name)
    check_models(
        name,
        robot.mj_model,
        robot.pin_model,
        robot.converter,
        robot.joint_limits,
        n_states=20,
        seed=3,
    )


def _check(robot, pin_model):
    check_models("g1", robot.mj_model, pin_model, robot.converter, robot.joint_limits)


def test_what_differs_is_named(g1):
    """A body 10 g heavier, a joint limit moved, an inertia changed: each is refused, naming it."""
    heavier = g1.pin_model.copy()
    jid = heavier.getJointId("left_knee_joint")
    heavier.inertias[jid].mass += 0.01
    with pytest.raises(RobotLoadError, match="weighs"):
        _check(g1, heavier)  # the total mass first
    limit = g1.pin_model.copy()
    limit.upperPositionLimit[limit.joints[jid].idx_q] += 0.01
    with pytest.raises(RobotLoadError, match="joint 'left_knee_joint' has the upper limit"):
        _check(g1, limit)
    inertia = g1.pin_model.copy()
    I = inertia.inertias[jid]
    inertia.inertias[jid] = pin.Inertia(I.mass, I.lever, I.inertia * 1.5)
    with pytest.raises(RobotLoadError, match="mass matrices .* differ"):
        _check(g1, inertia)
    moved = g1.pin_model.copy()  # mass moved from one body to another: the total agrees
    moved.inertias[jid].mass += 0.2
    other = moved.getJointId("right_knee_joint")
    moved.inertias[other].mass -= 0.2
    with pytest.raises(RobotLoadError, match="joint 'left_knee_joint'"):
        _check(g1, moved)


@pytest.mark.parametrize("joint", ["floating", "fixed"])
def test_a_urdf_rooted_at_a_world_link_floats_at_its_base(tmp_path, g1, joint):
    """The G1's URDF with a ``world`` link joined to the pelvis, as its own comment suggests for
    MuJoCo (a ``floating`` joint; MuJoCo refused it: "more than 6 dofs in body 'pelvis'") or
    fixed: it loads, both models float the pelvis, and it has the G1's own mass matrix."""
    _, text = _read_description(wbsim.ROBOTS["g1"])
    text = text.replace(
        '<link name="pelvis">',
        f'<link name="world"/><joint name="pin" '
        f'type="{joint}"><parent link="world"/><child link="pelvis"/></joint>'
        '<link name="pelvis">',
        1,
    )
    path = tmp_path / "g1_world.urdf"
    path.write_text(text)
    cfg = dataclasses.replace(wbsim.ROBOTS["g1"], name=f"g1_world_{joint}", description=str(path))
    robot = wbsim.load_robot(cfg)
    assert robot.pin_model.nq == g1.pin_model.nq and robot.mj_model.nq == g1.mj_model.nq
    q = g1.pose_q("stand")
    M = [pin.crba(r.pin_model, r.pin_model.createData(), q) for r in (robot, g1)]
    np.testing.assert_allclose(M[0], M[1], rtol=0, atol=1e-12)
    assert robot.total_mass == pytest.approx(g1.total_mass, rel=1e-12)


def test_conversions_give_pinocchio_unit_quaternions(g1):
    """A base quaternion of norm 2 reaches Pinocchio as a unit one (feet 2.9 m off before)."""
    qpos = g1.pose_qpos("stand")
    qpos[3:7] *= 2.0
    q, _ = g1.mj_to_pin(qpos)
    assert np.linalg.norm(q[3:7]) == pytest.approx(1.0, abs=1e-15)
    data = g1.pin_model.createData()
    pin.framesForwardKinematics(g1.pin_model, data, q)
    foot = data.oMf[g1.feet["left_foot"].pin_frame_id].translation
    pin.framesForwardKinematics(g1.pin_model, data, g1.pose_q("stand"))
    np.testing.assert_allclose(
        foot, data.oMf[g1.feet["left_foot"].pin_frame_id].translation, atol=1e-12
    )
    q2 = g1.pose_q("stand")
    q2[3:7] *= 3.0
    qpos2, _ = g1.pin_to_mj(q2)
    assert np.linalg.norm(qpos2[3:7]) == pytest.approx(1.0, abs=1e-15)
