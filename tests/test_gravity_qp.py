"""GravityCompensationQP: the floating-base statics g(q) = [0; tau] + sum J^T f by four methods.

The QP runs with the statics kernel on and off (``fast``, parametrized) wherever it applies.

Physical values are checked against independent computations: Pinocchio's rnea (not
computeGeneralizedGravity) with Jacobians from computeFrameJacobian, MuJoCo's bias forces and site /
body Jacobians, the seed's closed form (typos corrected) written out here, the weight m g, and the
single-support centre of pressure, which must sit under the CoM.
"""

import copy
import json
import types

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from conftest import forces_by_name
from scipy.optimize import root

from wbsim.contacts import convex_hull, point_in_polygon
from wbsim.controllers import make_controller
from wbsim.controllers.friction import FRICTION_MARGIN
from wbsim.controllers.gravity_qp import (
    DEFAULT_SOLVER,
    FALLBACKS,
    GravityCompensationError,
    GravityCompensationQP,
    StaticsResult,
)
from wbsim.errors import UnknownNameError, WbsimError
from wbsim.types import STANDING, CommandStatus, ContactSchedule, RobotState

BOTH = ("left_foot", "right_foot")


@pytest.fixture(params=[True, False], ids=["kernel", "readable"])
def fast(request):
    """The ``fast`` option of GravityCompensationQP: the statics kernel on, or the readable path."""
    return request.param


LEFT = ("left_foot",)
RIGHT = ("right_foot",)
G0 = 9.81


# ------------------------------------------------------------------------------------------------
# poses: the whole body leaned about the ankles, both soles kept level
# ------------------------------------------------------------------------------------------------
def _ankle_joints(robot, foot):
    """(pitch, roll) joint names: the foot link's parent joint and that joint's parent."""
    m = robot.pin_model
    roll = m.frames[robot.feet[foot].pin_frame_id].parentJoint
    return m.names[m.parents[roll]], m.names[roll]


def _leaned(robot, d_pitch, d_roll):
    """Stand pose with both ankles turned by the same angles and the base turned so that the left
    sole is level; both legs turn alike, so the right sole is level too (at another height: statics
    do not care where the floor is)."""
    joints = dict(robot.pose("stand").joints)
    for foot in robot.feet:
        p, r = _ankle_joints(robot, foot)
        joints[p] += d_pitch
        joints[r] += d_roll
    q = robot.configuration(joints=joints)
    data = robot.pin_model.createData()
    pin.framesForwardKinematics(robot.pin_model, data, q)
    quat = pin.Quaternion(data.oMf[robot.feet["left_foot"].pin_frame_id].rotation.T)
    return robot.configuration(joints=joints, base_quaternion_wxyz=[quat.w, quat.x, quat.y, quat.z])


def _com_in_foot(robot, q, foot="left_foot"):
    data = robot.pin_model.createData()
    com = pin.centerOfMass(robot.pin_model, data, q)
    pin.framesForwardKinematics(robot.pin_model, data, q)
    return data.oMf[robot.feet[foot].pin_frame_id].actInv(com)


def lean_to(robot, com_xy_in_left_foot):
    """A pose whose CoM projects at ``com_xy_in_left_foot`` (x, y in the left foot frame, m)."""
    target = np.asarray(com_xy_in_left_foot, dtype=float)
    sol = root(
        lambda a: _com_in_foot(robot, _leaned(robot, *a))[:2] - target, [0.0, 0.0], tol=1e-12
    )
    assert sol.success
    q = _leaned(robot, *sol.x)
    assert np.allclose(_com_in_foot(robot, q)[:2], target, atol=1e-9)
    return q


def sole_centre_x(robot):
    return float(robot.feet["left_foot"].points_in_foot[:, 0].mean())


def com_and_support_polygon(robot, q, feet):
    """World CoM x-y and the convex hull of the sole points of ``feet`` (both from Pinocchio)."""
    data = robot.pin_model.createData()
    com = pin.centerOfMass(robot.pin_model, data, q)
    pin.framesForwardKinematics(robot.pin_model, data, q)
    pts = [data.oMf[i].translation[:2] for f in feet for i in robot.feet[f].pin_point_frame_ids]
    return com[:2], convex_hull(np.array(pts))


def vertical_forces(res):
    return np.array([f[2] for f in res.contact_forces.values()])


# ------------------------------------------------------------------------------------------------
# independent statics checks
# ------------------------------------------------------------------------------------------------
def rnea_statics_error(robot, q, res):
    """``||rnea(q, 0, 0) - sum J_i^T f_i - [0; tau]||`` with Jacobians from computeFrameJacobian."""
    m, d = robot.pin_model, robot.pin_model.createData()
    zero = np.zeros(m.nv)
    gen = pin.rnea(m, d, q, zero, zero).copy()
    for name, f in res.contact_forces.items():
        fid = robot.feet[name].pin_frame_id if name in robot.feet else m.getFrameId(name)
        J = pin.computeFrameJacobian(m, d, q, fid, pin.LOCAL_WORLD_ALIGNED)
        gen -= J[: len(f)].T @ f
    expected = np.zeros(m.nv)
    expected[robot.converter.pin_vidx] = res.tau_array
    return float(np.linalg.norm(gen - expected))


def mujoco_statics_error(robot, q, res):
    """The same statics in MuJoCo: ``qfrc_bias`` (v = 0) minus the contact forces through
    ``mj_jacSite`` (points) or ``mj_jacBody`` (wrench at the foot body origin)."""
    m = robot.mj_model
    d = mujoco.MjData(m)
    d.qpos[:] = robot.pin_to_mj(q)[0]
    mujoco.mj_forward(m, d)
    gen = d.qfrc_bias.copy()
    jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    for name, f in res.contact_forces.items():
        if name in robot.feet:
            mujoco.mj_jacBody(m, d, jacp, jacr, robot.feet[name].mj_body_id)
            gen -= jacp.T @ f[:3] + jacr.T @ f[3:]
        else:
            foot = next(ft for ft in robot.feet.values() if name in ft.point_names)
            mujoco.mj_jacSite(m, d, jacp, jacr, foot.mj_site_ids[foot.point_names.index(name)])
            gen -= jacp.T @ f
    expected = np.zeros(m.nv)
    expected[robot.converter.mj_vadr] = res.tau_array
    return float(np.linalg.norm(gen - expected))


def cop_in_foot(robot, q, foot, wrench):
    """CoP (x, y) in the foot frame, on the sole plane, of a world-aligned wrench at the foot
    origin."""
    data = robot.pin_model.createData()
    pin.framesForwardKinematics(robot.pin_model, data, q)
    R = data.oMf[robot.feet[foot].pin_frame_id].rotation
    f, tq = R.T @ wrench[:3], R.T @ wrench[3:]
    zs = robot.feet[foot].points_in_foot[:, 2].mean()
    return np.array([(zs * f[0] - tq[1]) / f[2], (tq[0] + zs * f[1]) / f[2]])


ALL_METHODS = [
    ("points", "qp"),
    ("points", "pinv"),
    ("points", "min_torque"),
    ("wrench", "qp"),
    ("wrench", "pinv"),
    ("wrench", "min_torque"),
]


# ------------------------------------------------------------------------------------------------
# single support
# ------------------------------------------------------------------------------------------------
def test_single_equals_qp_in_single_support(g1):
    q = lean_to(g1, (sole_centre_x(g1), 0.0))  # CoM above the middle of the left sole
    single = GravityCompensationQP(g1, contact_model="wrench", method="single").solve(q, LEFT)
    qp = GravityCompensationQP(g1, contact_model="wrench", method="qp").solve(q, LEFT)
    assert single.feasible and single.physically_possible and single.reasons == ()
    assert qp.feasible and qp.solver == DEFAULT_SOLVER
    assert np.abs(single.tau_array - qp.tau_array).max() < 1e-8
    assert np.abs(single.contact_forces["left_foot"] - qp.contact_forces["left_foot"]).max() < 1e-8
    # the unique wrench carries the weight and puts the CoP under the CoM
    assert abs(single.contact_forces["left_foot"][2] - g1.total_mass * G0) < 1e-8
    cop = cop_in_foot(g1, q, "left_foot", single.contact_forces["left_foot"])
    assert np.allclose(cop, _com_in_foot(g1, q)[:2], atol=1e-9)


def test_single_reports_whether_its_wrench_is_possible(g1):
    """CoM 6 cm to the side of the left sole's axis (the sole is 5-6 cm wide): the wrench pushes
    (f_n = m g) but its CoP is outside the sole, so it is not physically possible."""
    q = lean_to(g1, (sole_centre_x(g1), 0.06))
    res = GravityCompensationQP(g1, contact_model="wrench", method="single").solve(q, LEFT)
    assert res.physically_possible is False and res.feasible is False
    assert res.residual < 1e-8  # the statics still hold: it is the CoP
    assert res.contact_forces["left_foot"][2] > 0
    assert any("centre of pressure" in r for r in res.reasons)
    assert "left_foot:cop_left" in res.active_constraints
    cop = cop_in_foot(g1, q, "left_foot", res.contact_forces["left_foot"])
    assert np.allclose(cop, [sole_centre_x(g1), 0.06], atol=1e-9)


# ------------------------------------------------------------------------------------------------
# least torque
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["wrench", "points"])
def test_qp_with_vanishing_eps_is_the_least_torque(robot, model, fast):
    q = robot.pose_q("stand")
    qp = GravityCompensationQP(robot, contact_model=model, eps=1e-9, fast=fast).solve(q, BOTH)
    mt = GravityCompensationQP(robot, contact_model=model, method="min_torque").solve(q, BOTH)
    assert qp.feasible and mt.feasible
    assert qp.active_constraints == ()  # no inequality active
    assert np.abs(qp.tau_array - mt.tau_array).max() < 1e-6
    if model == "wrench":
        for foot in BOTH:
            assert np.abs(qp.contact_forces[foot] - mt.contact_forces[foot]).max() < 1e-6
    # and it is the least torque: the least-force solution needs more
    pinv = GravityCompensationQP(robot, contact_model=model, method="pinv").solve(q, BOTH)
    assert np.linalg.norm(mt.tau_array) < np.linalg.norm(pinv.tau_array) - 1e-3


def test_larger_eps_trades_torque_for_force(g1):
    q = g1.pose_q("stand")
    small, large = (
        GravityCompensationQP(g1, contact_model="wrench", eps=e).solve(q, BOTH)
        for e in (1e-7, 1e-1)
    )
    f_small = np.concatenate(list(small.contact_forces.values()))
    f_large = np.concatenate(list(large.contact_forces.values()))
    assert np.linalg.norm(large.tau_array) > np.linalg.norm(small.tau_array)
    assert np.linalg.norm(f_large) < np.linalg.norm(f_small)


@pytest.mark.parametrize("lean", [(0.0, 0.0), (0.02, 0.015)])
def test_min_torque_matches_the_seed_closed_form(robot, lean):
    """The seed's two-feet derivation, with its typos fixed (tau_r in the right-leg equation, the
    lost '+' in eq. 7), written out with 6x6 leg blocks, equals the generic least-torque
    solution."""
    q = lean_to(robot, (sole_centre_x(robot) + lean[0], -0.5 * _foot_gap(robot) + lean[1]))
    m, d = robot.pin_model, robot.pin_model.createData()
    g = pin.computeGeneralizedGravity(m, d, q).copy()
    blocks = {}
    for foot in BOTH:
        fid = robot.feet[foot].pin_frame_id
        J = pin.computeFrameJacobian(m, d, q, fid, pin.LOCAL_WORLD_ALIGNED)
        leg = [m.joints[j].idx_v for j in m.supports[m.frames[fid].parentJoint] if j > 1]
        assert len(leg) == 6
        blocks[foot] = (J[:, :6].T, J[:, leg].T, leg)
    (Jl_u, Jl_l, l_idx), (Jr_u, Jr_r, r_idx) = blocks["left_foot"], blocks["right_foot"]
    g_u, g_l, g_r = g[:6], g[l_idx], g[r_idx]
    A = -np.linalg.solve(Jl_u, Jr_u)
    B = np.linalg.solve(Jl_u, g_u)
    K = Jl_l @ A
    C = -np.linalg.solve(K, np.eye(6))
    D = np.linalg.solve(K, g_l - Jl_l @ B)
    E = -np.linalg.solve(Jr_r, np.eye(6))
    F = np.linalg.solve(Jr_r, g_r)
    tau_lr = np.linalg.pinv(np.hstack([C, -E])) @ (F - D)
    tau_seed = g.copy()  # joints off the legs: tau = g
    tau_seed[l_idx], tau_seed[r_idx] = tau_lr[:6], tau_lr[6:]
    res = GravityCompensationQP(robot, contact_model="wrench", method="min_torque").solve(q, BOTH)
    assert np.abs(res.tau_array - tau_seed[robot.converter.pin_vidx]).max() < 1e-8
    f_r = C @ tau_lr[:6] + D
    assert np.abs(res.contact_forces["right_foot"] - f_r).max() < 1e-6


def _foot_gap(robot):
    data = robot.pin_model.createData()
    pin.framesForwardKinematics(robot.pin_model, data, robot.pose_q("stand"))
    return float(
        np.linalg.norm(
            data.oMf[robot.feet["left_foot"].pin_frame_id].translation
            - data.oMf[robot.feet["right_foot"].pin_frame_id].translation
        )
    )


# ------------------------------------------------------------------------------------------------
# statics: weight, residual, independent checks
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model,method", ALL_METHODS)
def test_vertical_forces_carry_the_weight(robot, model, method, fast):
    q = robot.pose_q("stand")
    res = GravityCompensationQP(robot, contact_model=model, method=method, fast=fast).solve(q, BOTH)
    assert res.feasible, res.status
    assert abs(vertical_forces(res).sum() - robot.total_mass * G0) < 1e-6


def test_single_carries_the_weight(robot):
    q = lean_to(robot, (sole_centre_x(robot), 0.0))
    res = GravityCompensationQP(robot, contact_model="wrench", method="single").solve(q, LEFT)
    assert res.feasible
    assert abs(res.contact_forces["left_foot"][2] - robot.total_mass * G0) < 1e-6


@pytest.mark.parametrize("model,method", ALL_METHODS + [("wrench", "single")])
def test_statics_hold_by_rnea_and_mujoco(robot, model, method, fast):
    """Residual < 1e-8 N·m as reported, and recomputed independently with rnea(q, 0, 0) and with
    MuJoCo's qfrc_bias and Jacobians, on a leaned pose (CoM inside the support)."""
    q = lean_to(robot, (sole_centre_x(robot) + 0.01, 0.005))
    support = LEFT if method == "single" else BOTH
    res = GravityCompensationQP(robot, contact_model=model, method=method, fast=fast).solve(
        q, support
    )
    assert np.all(np.isfinite(res.tau_array))
    assert res.residual < 1e-8
    assert rnea_statics_error(robot, q, res) < 1e-8
    assert mujoco_statics_error(robot, q, res) < 1e-8


# ------------------------------------------------------------------------------------------------
# unilateral contacts
# ------------------------------------------------------------------------------------------------
def test_qp_keeps_every_foot_pushing_where_least_force_pulls(g1, fast):
    """CoM 2 cm from the axis of the left sole, near its outer edge, in double support: the
    least-force solution makes the right foot pull; the QP does not, and says which bounds hold."""
    q = lean_to(g1, (sole_centre_x(g1), 0.02))
    com, poly = com_and_support_polygon(g1, q, BOTH)
    assert point_in_polygon(poly, com, margin=0.004)  # inside, near the edge
    pinv = GravityCompensationQP(g1, method="pinv").solve(q, BOTH)
    assert vertical_forces(pinv).min() < -1.0
    assert not pinv.feasible and any("pull" in r for r in pinv.reasons)
    assert any(a.endswith(":normal") for a in pinv.active_constraints)
    for model in ("points", "wrench"):
        qp = GravityCompensationQP(g1, contact_model=model, mu=0.7, fast=fast).solve(q, BOTH)
        assert qp.feasible, qp.status
        assert vertical_forces(qp).min() >= -1e-6
        assert qp.active_constraints, "the bounds that shape the answer are reported"
        assert qp.residual < 1e-8
        for f in qp.contact_forces.values():  # MuJoCo's pyramid (its default cone), world axes
            assert abs(f[0]) + abs(f[1]) <= 0.7 * f[2] + 1e-6
    pts = GravityCompensationQP(g1, fast=fast).solve(q, BOTH)
    assert any(a.startswith("right_foot") and a.endswith(":normal") for a in pts.active_constraints)
    wr = GravityCompensationQP(g1, contact_model="wrench").solve(q, BOTH)
    assert any(":cop_" in a for a in wr.active_constraints)
    assert any(":friction_" in a for a in wr.active_constraints)  # friction shapes this answer
    for foot in BOTH:  # the wrench model's CoPs stay inside the soles
        poly_f = convex_hull(g1.feet[foot].points_in_foot[:, :2])
        cop = cop_in_foot(g1, q, foot, wr.contact_forces[foot])
        assert point_in_polygon(poly_f, cop, margin=-1e-9)


@pytest.mark.parametrize("model", ["points", "wrench"])
def test_answer_turns_with_the_robot(g1, model, fast):
    """Yawing the whole robot (soles included) by a quarter turn turns the forces and leaves the
    torques: the CoP bounds live in the sole frame and the friction pyramid in the floor's axes
    (MuJoCo's contact frame on the plane), which a quarter turn maps onto itself. At another yaw
    the soles meet the pyramid at another angle, and where friction binds the torques change."""
    q = lean_to(g1, (sole_centre_x(g1), 0.02))

    def yawed(angle):
        Rz = pin.rpy.rpyToMatrix(0.0, 0.0, angle)
        quat = pin.Quaternion(Rz @ pin.Quaternion(q[3:7]).toRotationMatrix())
        return Rz, g1.configuration(
            Rz @ q[:3],
            [quat.w, quat.x, quat.y, quat.z],
            dict(zip(g1.joint_names, g1.converter.joint_values_pin(q))),
        )

    def kinds(res):  # the contacts and kinds of the active bounds (a turn renames the faces)
        return {
            a.split(":")[0] + ":" + a.split(":")[1].rstrip("1234") for a in res.active_constraints
        }

    ctrl = GravityCompensationQP(g1, contact_model=model, fast=fast)
    res = ctrl.solve(q, BOTH)
    assert res.feasible
    assert any(":friction_" in a for a in res.active_constraints)
    Rz, q_quarter = yawed(np.pi / 2)
    quarter = ctrl.solve(q_quarter, BOTH)
    assert quarter.feasible and kinds(res) == kinds(quarter)
    assert np.abs(res.tau_array - quarter.tau_array).max() < 1e-6
    for name, f in res.contact_forces.items():
        turned = np.concatenate([Rz @ f[i : i + 3] for i in range(0, len(f), 3)])
        assert np.abs(quarter.contact_forces[name] - turned).max() < 1e-6
    other = ctrl.solve(yawed(0.7)[1], BOTH)
    assert other.feasible and np.abs(res.tau_array - other.tau_array).max() > 1e-3


def test_the_qp_uses_the_friction_the_state_reports(g1, fast):
    """``compute`` bounds the forces by the simulator's ``mu`` of each foot (``RobotState.friction``)
    times the margin, in the linearisation of the simulator's cone: the diamond for MuJoCo's
    pyramidal cone, the inscribed square for its elliptic one. Where friction binds, the bound is
    reached."""
    q = lean_to(g1, (sole_centre_x(g1), 0.02))
    v = np.zeros(g1.pin_model.nv)
    names = g1.contact_point_names
    ctrl = GravityCompensationQP(g1, fast=fast)
    mu = {"left_foot": 0.5, "right_foot": 0.25}
    for cone in ("pyramidal", "elliptic"):
        cmd = ctrl.compute(RobotState(0.0, q, v, None, mu, cone), STANDING)
        assert cmd.status == CommandStatus.SOLVED
        tight = -np.inf
        for name, f in zip(names, cmd.point_forces):
            m = FRICTION_MARGIN * mu["left_foot" if name.startswith("left") else "right_foot"]
            ft = (
                abs(f[0]) + abs(f[1])
                if cone == "pyramidal"
                else np.sqrt(2.0) * max(abs(f[0]), abs(f[1]))
            )
            assert ft <= m * f[2] + 1e-6, (cone, name)
            tight = max(tight, ft - m * f[2])
        assert tight > -1e-6, cone  # some point sits on the edge of its cone
    assert ctrl.friction(RobotState(0.0, q, v, None, mu, "elliptic")).cone == "inscribed_pyramid"
    assert ctrl.friction().mu == {
        "left_foot": FRICTION_MARGIN,  # the model's mu of 1
        "right_foot": FRICTION_MARGIN,
    }


def test_f_min_bounds_every_point(g1, fast):
    q = lean_to(g1, (sole_centre_x(g1), -0.06))
    free = GravityCompensationQP(g1, fast=fast).solve(q, BOTH)
    assert vertical_forces(free).min() < 1.0
    res = GravityCompensationQP(g1, f_min=10.0, fast=fast).solve(q, BOTH)
    assert res.feasible and vertical_forces(res).min() >= 10.0 - 1e-6
    assert "right_foot_back_right:normal" in res.active_constraints
    assert not GravityCompensationQP(g1, f_min=50.0, fast=fast).solve(q, BOTH).feasible  # 8x50 N


@pytest.mark.parametrize("model", ["points", "wrench"])
def test_com_outside_the_support_polygon_is_infeasible_for_every_method(g1, model, fast):
    q = lean_to(g1, (sole_centre_x(g1), 0.06))
    for support in (BOTH, LEFT):
        com, poly = com_and_support_polygon(g1, q, support)
        assert not point_in_polygon(poly, com, margin=-0.02)  # outside by more than 2 cm
        methods = [("qp", s) for s in ("daqp", "proxqp", "osqp")]
        methods += [("pinv", None), ("min_torque", None)]
        if model == "wrench" and len(support) == 1:
            methods.append(("single", None))
        for method, solver in methods:
            ctrl = GravityCompensationQP(
                g1, contact_model=model, method=method, solver=solver, fast=fast
            )
            res = ctrl.solve(q, support)
            assert res.feasible is False, (method, solver, support)
            assert res.status != "solved" and res.reasons
            if method == "qp":
                assert np.all(np.isnan(res.tau_array))  # no solution, not zeros
            else:
                assert res.physically_possible is False
                assert np.all(np.isfinite(res.tau_array)) and res.residual < 1e-8


# ------------------------------------------------------------------------------------------------
# solvers
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["points", "wrench"])
def test_every_solver_gives_the_same_answer(g1, model):
    for com in ((sole_centre_x(g1), -0.5 * _foot_gap(g1)), (sole_centre_x(g1), 0.02)):
        q = lean_to(g1, com)
        ref = GravityCompensationQP(g1, contact_model=model, solver="daqp").solve(q, BOTH)
        assert ref.feasible
        for solver in ("daqp", "proxqp", "osqp"):
            for condensed in (False, True):
                res = GravityCompensationQP(
                    g1, contact_model=model, solver=solver, condensed=condensed
                ).solve(q, BOTH)
                assert res.feasible and res.solver == solver, (solver, res.status)
                assert np.abs(res.tau_array - ref.tau_array).max() < 1e-5, (solver, condensed)
                assert vertical_forces(res).min() >= -1e-6
                assert res.residual < 1e-8
                assert res.solve_time > 0


def test_the_stand_keeps_a_3_5_nm_ankle_within_its_limit(g1, fast):
    """The G1's stand statics ask 3.92 N·m of each ankle pitch. With a 3.5 N·m limit the old
    default (no torque limits) commanded 3.92 and called it feasible, and MuJoCo clipped it; the
    default QP now shifts the load to keep the left ankle at 3.5 N·m, and the statics still hold."""
    q = g1.pose_q()
    ankle = g1.joint_names.index("left_ankle_pitch_joint")
    limited = copy.copy(g1)
    limited.effort_limits = g1.effort_limits.copy()
    limited.effort_limits[ankle] = 3.5
    old = GravityCompensationQP(limited, torque_limits=False, fast=fast).solve(q, BOTH)
    assert old.feasible and abs(old.tau_array[ankle]) == pytest.approx(3.92, abs=0.01)
    new = GravityCompensationQP(limited, fast=fast).solve(q, BOTH)
    assert new.feasible and new.residual < 1e-8
    assert abs(new.tau_array[ankle]) <= 3.5 + 1e-6
    assert "left_ankle_pitch_joint:torque_max" in new.active_constraints


def test_torque_limits_are_respected_or_reported(g1, fast):
    """The QP keeps every torque within the effort limits MuJoCo's actuators clip at (by default),
    or reports it cannot: a knee limited to 80 % of its free torque is met with the bound active;
    at 0.5 N·m there is no solution and no torque is made up."""
    q = lean_to(g1, (sole_centre_x(g1), 0.0))
    free = GravityCompensationQP(g1, torque_limits=False).solve(q, BOTH)
    knee = g1.joint_names.index("left_knee_joint")
    limited = copy.copy(g1)
    limited.effort_limits = g1.effort_limits.copy()
    limited.effort_limits[knee] = 0.8 * abs(free.tau_array[knee])
    assert abs(free.tau_array[knee]) > limited.effort_limits[knee]
    for condensed in (False, True):
        ctrl = GravityCompensationQP(limited, condensed=condensed, fast=fast)
        assert ctrl.torque_limits and ctrl.uses_kernel == fast
        res = ctrl.solve(q, BOTH)
        assert res.feasible, res.status
        assert abs(res.tau_array[knee]) <= limited.effort_limits[knee] + 1e-6
        assert any(a.startswith("left_knee_joint:torque_") for a in res.active_constraints)
    mt = GravityCompensationQP(limited, torque_limits=True, method="min_torque").solve(q, BOTH)
    assert not mt.feasible and any("left_knee_joint" in r for r in mt.reasons)
    limited.effort_limits[knee] = 0.5
    res = GravityCompensationQP(limited, fast=fast).solve(q, BOTH)
    assert not res.feasible and np.all(np.isnan(res.tau_array))


# ------------------------------------------------------------------------------------------------
# result, errors, fixed base
# ------------------------------------------------------------------------------------------------
def test_result_fields_and_json(g1, fast):
    q = g1.pose_q("stand")
    res = GravityCompensationQP(g1, fast=fast).solve(q, BOTH)
    assert isinstance(res, StaticsResult)
    assert list(res.tau) == list(g1.joint_names)
    assert np.array_equal(np.array(list(res.tau.values())), res.tau_array)
    assert set(res.contact_forces) == set(g1.contact_point_names)
    d = json.loads(json.dumps(res.to_dict()))
    for key in ("tau", "contact_forces", "feasible", "residual", "method"):
        assert key in d
    assert d["method"] == "qp" and d["feasible"] is True
    assert all(len(v) == 3 for v in d["contact_forces"].values())
    wr = GravityCompensationQP(g1, contact_model="wrench").solve(q, BOTH).to_dict()
    assert set(wr["contact_forces"]) == set(BOTH)
    assert all(len(v) == 6 for v in wr["contact_forces"].values())
    bad = (
        GravityCompensationQP(g1, fast=fast)
        .solve(lean_to(g1, (sole_centre_x(g1), 0.06)), BOTH)
        .to_dict()
    )
    assert bad["feasible"] is False and bad["tau"]["left_knee_joint"] is None
    json.dumps(bad, allow_nan=False)


def test_bad_input_raises_clearly(g1):
    with pytest.raises(UnknownNameError):
        GravityCompensationQP(g1, method="magic")
    with pytest.raises(UnknownNameError):
        GravityCompensationQP(g1, contact_model="springs")
    with pytest.raises(UnknownNameError):
        GravityCompensationQP(g1, solver="no_such_solver")
    with pytest.raises(GravityCompensationError, match="wrench"):
        GravityCompensationQP(g1, method="single")
    with pytest.raises(GravityCompensationError):
        GravityCompensationQP(g1, eps=0.0)
    ctrl = GravityCompensationQP(g1, contact_model="wrench", method="single")
    with pytest.raises(GravityCompensationError, match="exactly one foot"):
        ctrl.solve(g1.pose_q("stand"), BOTH)
    with pytest.raises(GravityCompensationError, match="shape"):
        ctrl.solve(np.zeros(3), LEFT)
    with pytest.raises(UnknownNameError):
        ctrl.solve(g1.pose_q("stand"), ["left_hand"])
    assert issubclass(GravityCompensationError, WbsimError)
    empty = GravityCompensationQP(g1).solve(g1.pose_q("stand"), ())
    assert not empty.feasible and np.all(np.isnan(empty.tau_array))


def test_fixed_base_is_tau_equals_g():
    """A robot without a free-flyer (Pinocchio's sample manipulator): tau = g(q) = rnea(q, 0, 0)."""
    model = pin.buildSampleModelManipulator()
    names = tuple(model.names[1:])
    vidx = np.array([model.joints[j].idx_v for j in range(1, model.njoints)])
    qidx = np.array([model.joints[j].idx_q for j in range(1, model.njoints)])
    robot = types.SimpleNamespace(
        pin_model=model,
        joint_names=names,
        n_joints=len(names),
        effort_limits=np.full(len(names), 1e3),
        has_feet=False,
        configuration=lambda: pin.neutral(model),
        converter=types.SimpleNamespace(
            pin_vidx=vidx,
            pin_qidx=qidx,
            floating=False,
            joint_values_pin=lambda q: np.asarray(q)[qidx],
        ),
    )
    ctrl = GravityCompensationQP(robot)
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    res = ctrl.solve(q, ())
    zero = np.zeros(model.nv)
    assert res.feasible and res.method == "fixed_base"
    assert np.allclose(
        res.tau_array, pin.rnea(model, model.createData(), q, zero, zero)[vidx], atol=1e-10
    )
    assert np.abs(res.tau_array).max() > 1.0
    with pytest.raises(GravityCompensationError, match="fixed-base"):
        ctrl.solve(q, ["left_foot"])


# ------------------------------------------------------------------------------------------------
# controller protocol
# ------------------------------------------------------------------------------------------------
def _state(robot, q, t=0.0, v=None):
    return RobotState(t=t, q=q, v=np.zeros(robot.pin_model.nv) if v is None else v)


def _pd_law(ctrl, q, v):
    """The joint PD as the controller wrote it before it handed it to the loop:
    ``kp (q_ref - q) - kd v`` on the joints."""
    conv = ctrl.robot.converter
    return ctrl.pd.kp * (ctrl.pd.q_ref - q[conv.pin_qidx]) - ctrl.pd.kd * v[conv.pin_vidx]


def _applied(robot, cmd, q, v):
    """The torque the loop applies for ``cmd`` at the Pinocchio state ``(q, v)``."""
    conv = robot.converter
    return cmd.torque_at(q[conv.pin_qidx], v[conv.pin_vidx])


def test_controller_compute(g1, fast):
    ctrl = make_controller("gravity_qp", g1, fast=fast)
    assert isinstance(ctrl, GravityCompensationQP) and ctrl.name == "gravity_qp"
    assert ctrl.uses_kernel == fast
    q = g1.pose_q("stand")
    ctrl.reset(_state(g1, q))
    cmd = ctrl.compute(_state(g1, q), STANDING)
    statics = ctrl.solve(q, BOTH)
    assert cmd.tau.shape == (g1.n_joints,) and cmd.feasible and cmd.fallback == ""
    assert np.array_equal(cmd.tau, statics.tau_array)  # the feed-forward: statics
    assert cmd.contact_set == frozenset(BOTH)
    assert set(forces_by_name(g1, cmd)) == set(g1.contact_point_names)
    for key in ("solve_time", "compute_time", "solver", "residual", "active_constraints"):
        assert key in cmd.info
    targets = cmd.joint_targets  # the PD, at the physics rate
    assert np.array_equal(targets.q, g1.converter.joint_values_pin(q))
    assert not targets.v.any() and np.all(targets.kp > 0) and np.all(targets.kd > 0)
    # away from the reference the PD adds kp (q_ref - q) - kd v
    q2, v2 = q.copy(), np.zeros(g1.pin_model.nv)
    q2[g1.converter.pin_qidx[3]] += 0.05
    v2[g1.converter.pin_vidx[3]] = 0.2
    cmd2 = ctrl.compute(_state(g1, q2, v=v2), STANDING)
    assert np.array_equal(cmd2.tau, ctrl.solve(q2, BOTH).tau_array)
    pd = _applied(g1, cmd2, q2, v2) - cmd2.tau
    assert np.isclose(pd[3], -ctrl.pd.kp[3] * 0.05 - ctrl.pd.kd[3] * 0.2)
    assert np.allclose(np.delete(pd, 3), 0.0, atol=1e-9)


def test_joint_targets_give_the_torque_of_the_pd_in_the_command_bit_for_bit(g1):
    """``torque_at`` (the loop's torque at each physics step) equals what the controller returned
    as ``tau`` when it added the PD itself, ``statics + (kp (q_ref - q) - kd v)``, bit for bit, at
    perturbed states with velocities; likewise for the ``pd`` controller (``0 + PD``)."""
    rng = np.random.default_rng(2)
    gq, pd = make_controller("gravity_qp", g1), make_controller("pd", g1)
    for ctrl in (gq, pd):
        ctrl.reset(_state(g1, g1.pose_q("stand")))
    for q in _perturbed_states(g1, 6, seed=2, scale=0.02):
        v = rng.normal(scale=0.3, size=g1.pin_model.nv)
        for ctrl in (gq, pd):
            cmd = ctrl.compute(_state(g1, q, v=v), STANDING)
            assert np.array_equal(_applied(g1, cmd, q, v), cmd.tau + _pd_law(ctrl, q, v))
            if ctrl is pd:
                assert not cmd.tau.any()


def test_controller_falls_back_without_raising(g1, fast):
    ctrl = GravityCompensationQP(g1, fast=fast)
    q_ok = lean_to(g1, (sole_centre_x(g1), 0.02))
    q_out = lean_to(g1, (sole_centre_x(g1), 0.06))  # CoM outside the support polygon
    ctrl.reset(_state(g1, q_out))  # PD reference = q_out: PD is zero
    cmd = ctrl.compute(_state(g1, q_out), STANDING)
    assert cmd.feasible is False and cmd.fallback in FALLBACKS and cmd.fallback
    assert cmd.status is CommandStatus.INFEASIBLE and cmd.message.startswith("infeasible")
    assert np.all(np.isfinite(cmd.tau)) and np.abs(cmd.tau).max() > 1.0
    assert cmd.fallback == "unconstrained_min_torque+pd" and cmd.joint_targets is not None
    # after a feasible step with the same support, the last feasible torques stand in
    ok = ctrl.compute(_state(g1, q_ok, t=1.0), STANDING)
    assert ok.feasible
    held = ctrl.compute(_state(g1, q_out, t=1.002), STANDING)
    assert held.fallback == "last_feasible+pd" and not held.feasible
    assert np.array_equal(held.tau, ok.tau) and held.joint_targets is ctrl.pd.targets
    # no support at all, and a method that cannot take the schedule: no exception either
    flight = ctrl.compute(_state(g1, q_out, t=2.0), ContactSchedule(contact_set=frozenset()))
    assert flight.fallback == "joint_gravity+pd" and np.abs(flight.tau).max() > 1.0
    assert np.isnan(flight.point_forces).all()  # no force known: NaN, not 0
    single = GravityCompensationQP(g1, contact_model="wrench", method="single")
    single.reset(_state(g1, q_ok))
    cmd = single.compute(_state(g1, q_ok), STANDING)
    assert not cmd.feasible and cmd.fallback and "exactly one foot" in cmd.message
    assert cmd.status is CommandStatus.SOLVER_FAILED
    assert np.all(np.isfinite(cmd.tau)) and np.abs(cmd.tau).max() > 1.0


# ------------------------------------------------------------------------------------------------
# the statics kernel (DAQP called directly, sole-frame forces, transported Jacobians) against
# the readable path (build_statics_qp through qpsolvers)
# ------------------------------------------------------------------------------------------------
def _perturbed_states(robot, n, seed, q0=None, scale=0.1):
    """``q0`` (the stand pose) with every joint moved by up to ~``scale`` rad (tilted soles, some
    contacts at their friction or unilateral bounds, some states infeasible)."""
    rng = np.random.default_rng(seed)
    q0 = robot.pose_q("stand") if q0 is None else q0
    idx = robot.converter.pin_qidx
    states = []
    for k in range(n):
        q = q0.copy()
        q[idx] += rng.normal(scale=0.1 * scale + scale * k / n, size=robot.n_joints)
        states.append(q)
    return states


def _same_answer(a, b, tau_tol, f_tol):
    assert a.feasible == b.feasible and a.status == b.status, (a.status, b.status)
    assert set(a.active_constraints) == set(b.active_constraints)
    if not a.feasible:
        return
    assert np.abs(a.tau_array - b.tau_array).max() < tau_tol
    for name, f in a.contact_forces.items():
        assert np.abs(f - b.contact_forces[name]).max() < f_tol, name
    assert a.residual < 1e-8 and b.residual < 1e-8


def test_kernel_equals_the_readable_qp(robot):
    """The statics kernel against the readable QP through qpsolvers (condensed and full, DAQP and
    ProxQP) on perturbed stand poses in double and single support (left and right: the joints
    the contacts reach are then not the first ones), active bounds and infeasible states among
    them; then again with torque limits that bind."""
    kernel = GravityCompensationQP(robot)
    assert kernel.uses_kernel
    readable = [GravityCompensationQP(robot, fast=False, condensed=c) for c in (True, False)]
    assert not any(r.uses_kernel for r in readable)
    prox = GravityCompensationQP(robot, solver="proxqp")
    cx = sole_centre_x(robot)
    states = _perturbed_states(robot, 8, seed=3)
    gap = _foot_gap(robot)
    states += [lean_to(robot, (cx, y)) for y in (0.02, -0.5 * gap - 0.02, 0.06, -gap - 0.01)]
    for y in (0.0, -gap):  # over the left sole, over the right one
        states += _perturbed_states(robot, 3, seed=4, q0=lean_to(robot, (cx + 0.01, y)), scale=0.01)
    feasible, active = {BOTH: 0, LEFT: 0, RIGHT: 0}, 0
    for q in states:
        for support in (BOTH, LEFT, RIGHT):
            res = kernel.solve(q, support)
            assert res.solver == "daqp" and res.residual < 1e-8 or not res.feasible
            for other in readable:
                _same_answer(res, other.solve(q, support), 1e-6, 1e-6)
            if res.feasible:
                feasible[support] += 1
                active += bool(res.active_constraints)
                other = prox.solve(q, support)  # its internal forces are looser
                assert other.feasible
                assert np.abs(res.tau_array - other.tau_array).max() < 1e-6
    assert min(feasible.values()) >= 2 and feasible[BOTH] >= 6 and active >= 2  # bounds at work
    # the two most loaded left leg joints (the G1's knee and ankle pitch) limited to 85 % of their
    # stand torques: binding in some states
    stand = GravityCompensationQP(robot, torque_limits=False).solve(robot.pose_q(), BOTH)
    limited = copy.copy(robot)
    limited.effort_limits = robot.effort_limits.copy()
    left = [
        i
        for i, n in enumerate(robot.joint_names)
        if "left" in n and any(k in n for k in ("leg", "hip", "knee", "ankle"))
    ]
    legs = sorted(left, key=lambda i: -abs(stand.tau_array[i]))[:2]
    limited.effort_limits[legs] = 0.85 * np.abs(stand.tau_array[legs])
    kernel = GravityCompensationQP(limited)
    readable = [GravityCompensationQP(limited, fast=False, condensed=c) for c in (True, False)]
    assert kernel.uses_kernel and kernel.torque_limits
    bound = 0
    for q in states:
        for support in (BOTH, LEFT, RIGHT):
            res = kernel.solve(q, support)
            for other in readable:
                _same_answer(res, other.solve(q, support), 1e-6, 1e-6)
            bound += res.feasible and any(":torque_" in a for a in res.active_constraints)
    assert bound >= 3


def test_kernel_point_jacobians_are_pinocchio_s(robot):
    """The kernel's ``J^T`` (sole points' Jacobians transported from one foot Jacobian each, in the
    sole frame, base and reached columns) against Pinocchio's Jacobian of each point frame
    (``computeFrameJacobian``, LOCAL_WORLD_ALIGNED, rotated into the foot frame)."""
    ctrl = GravityCompensationQP(robot)
    m, d = robot.pin_model, robot.pin_model.createData()
    for q in _perturbed_states(robot, 4, seed=5):
        for support in (BOTH, RIGHT):
            ctrl.solve(q, support)
            kernel = next(k for key, k in ctrl._kernels.items() if key[0] == support)
            pin.framesForwardKinematics(m, d, q)
            rows = []
            for f in support:
                foot = robot.feet[f]
                R = pin.updateFramePlacement(m, d, foot.pin_frame_id).rotation
                for pid in foot.pin_point_frame_ids:
                    J = pin.computeFrameJacobian(m, d, q, pid, pin.LOCAL_WORLD_ALIGNED)[:3]
                    rows.append(R.T @ J)
            ref = np.vstack(rows)[:, kernel.cols]
            assert np.abs(kernel.JT - ref.T).max() < 1e-12


def test_answer_does_not_depend_on_earlier_calls(g1):
    """The DAQP workspace is reused between calls, yet every solve starts afresh: the same state
    gives the same answer after any history (feasible, infeasible, another support)."""
    states = _perturbed_states(g1, 5, seed=7) + [lean_to(g1, (sole_centre_x(g1), 0.06))]
    used = GravityCompensationQP(g1)
    for q in states:
        for support in (BOTH, LEFT, RIGHT):
            used.solve(q, support)
    for q in states:
        for support in (BOTH, LEFT):
            a, b = used.solve(q, support), GravityCompensationQP(g1).solve(q, support)
            assert a.status == b.status and np.array_equal(a.tau_array, b.tau_array, equal_nan=True)
            for name, f in a.contact_forces.items():
                assert np.array_equal(f, b.contact_forces[name], equal_nan=True)
    fresh = GravityCompensationQP(g1)
    for q in states:
        used.compute(_state(g1, q), STANDING)
    for q in states[:3]:
        a, b = used.compute(_state(g1, q), STANDING), fresh.compute(_state(g1, q), STANDING)
        assert a.feasible and np.array_equal(a.tau, b.tau)


def test_compute_matches_solve(g1, fast):
    """``compute`` (which builds no StaticsResult) returns solve's torques, forces and info."""
    ctrl = make_controller("gravity_qp", g1, fast=fast)
    ctrl.reset(_state(g1, g1.pose_q("stand")))
    rng = np.random.default_rng(11)
    states = _perturbed_states(g1, 8, seed=11) + [lean_to(g1, (sole_centre_x(g1), 0.02))]
    n_active = 0
    for q in [g1.pose_q("stand")] + states:
        v = rng.normal(scale=0.1, size=g1.pin_model.nv)
        cmd = ctrl.compute(_state(g1, q, v=v), STANDING)
        res = ctrl.solve(q, BOTH)
        assert cmd.feasible == res.feasible
        if not res.feasible:
            assert cmd.message == res.status
            continue
        n_active += bool(res.active_constraints)
        assert np.array_equal(cmd.tau, res.tau_array)
        forces = forces_by_name(g1, cmd)
        assert forces.keys() == res.contact_forces.keys()
        for name, f in res.contact_forces.items():
            assert np.array_equal(forces[name], f)
        assert cmd.info["residual"] < 1e-8 and res.residual < 1e-8
        for key in (
            "active_constraints",
            "solver",
            "method",
            "contact_model",
            "physically_possible",
            "reasons",
        ):
            assert cmd.info[key] == ctrl._info(res)[key], key
    assert n_active >= 1
    # a support given as a list (unhashable), same answer
    q = g1.pose_q("stand")
    as_list = ctrl.compute(_state(g1, q), ContactSchedule(contact_set=list(BOTH)))
    assert np.array_equal(as_list.tau, ctrl.compute(_state(g1, q), STANDING).tau)


def test_fallback_holds_the_last_feasible_torques_and_forces(g1, fast):
    """The ``last_feasible+pd`` fallback returns the last feasible step's statics torques and
    forces; the commands' arrays are their own."""
    ctrl = GravityCompensationQP(g1, fast=fast)
    q_ok = g1.pose_q("stand")  # no bound active
    q_out = lean_to(g1, (sole_centre_x(g1), 0.06))  # CoM outside the support polygon
    ctrl.reset(_state(g1, q_ok))
    ok = ctrl.compute(_state(g1, q_ok, t=1.0), STANDING)
    assert ok.feasible
    statics = ctrl.solve(q_ok, BOTH)
    held = ctrl.compute(_state(g1, q_out, t=1.002), STANDING)
    assert held.fallback == "last_feasible+pd" and not held.feasible
    assert np.array_equal(held.tau, statics.tau_array)
    held_f, ok_f = forces_by_name(g1, held), forces_by_name(g1, ok)
    assert held_f.keys() == statics.contact_forces.keys()
    for name, f in statics.contact_forces.items():
        assert np.array_equal(held_f[name], f) and np.array_equal(held_f[name], ok_f[name])
    # the commands' arrays are their own: editing one changes neither the other nor the next
    ok.point_forces[:] = 0.0
    again = ctrl.compute(_state(g1, q_out, t=1.004), STANDING)
    assert np.array_equal(again.point_forces, held.point_forces)
    with pytest.raises(ValueError):
        ok.tau[0] = 1.0  # held torques: read-only
    # too old, or another support: no longer held
    late = ctrl.compute(_state(g1, q_out, t=1.2), STANDING)
    assert late.fallback == "unconstrained_min_torque+pd"
