"""Contact-projected inverse dynamics (``wbsim.controllers.contact_projected_id``, ``tasks``).

Every physical value is checked against an independent computation: the projector properties of the
seed (Section 4), the KKT system of its Problem 1 solved with ``np.linalg.solve``, ``Jcdot v`` from
Pinocchio's ``getFrameJacobianTimeVariation`` and from finite differences, the floating-base
dynamics ``M qdd + h = S^T tau + J_c^T lambda`` with ``M``, ``h`` from ``pin.crba`` / ``pin.rnea``,
the gravity-compensation QP of ``wbsim.controllers.gravity_qp``, and a short MuJoCo rollout. The
controller runs with its kernel (``fast=True``) and on the readable path, compared step by step.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pinocchio as pin
import pytest
import qpsolvers
from conftest import forces_by_name, random_state

from wbsim.controllers import ContactSchedule, RobotState, make_controller
from wbsim.controllers import contact_projected_id as cpid
from wbsim.controllers import tasks as T
from wbsim.controllers.base import solve_qp
from wbsim.controllers.contact_projected_id import ContactProjectedID
from wbsim.controllers.friction import FRICTION_MARGIN
from wbsim.errors import UnknownNameError, WbsimError
from wbsim.types import CommandStatus

BOTH = frozenset({"left_foot", "right_foot"})
LEFT = frozenset({"left_foot"})
RIGHT = frozenset({"right_foot"})
N_STATES = 20


def test_public_names_import():
    for name in cpid.__all__:
        assert hasattr(cpid, name), name
    for name in T.__all__:
        assert hasattr(T, name), name
    assert make_controller.__module__  # registry import works
    from wbsim.controllers import controller_class

    assert controller_class("projected_id") is ContactProjectedID


# ------------------------------------------------------------------------------------------------
# independent references
# ------------------------------------------------------------------------------------------------
def _reference_M_h(robot, q, v):
    """``M`` from ``pin.crba`` (symmetrised), ``h`` from ``pin.rnea`` with zero acceleration."""
    model = robot.pin_model
    data = model.createData()
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.rnea(model, data, q, v, np.zeros(model.nv))
    return M, h


def _reference_contact(robot, q, v, feet):
    """``Jc`` and ``Jcdot v`` of the feet (6D, LOCAL_WORLD_ALIGNED) from
    ``computeJointJacobiansTimeVariation`` / ``getFrameJacobianTimeVariation`` (not from the
    classical accelerations the controller uses)."""
    model = robot.pin_model
    data = model.createData()
    pin.computeJointJacobiansTimeVariation(model, data, q, v)
    pin.updateFramePlacements(model, data)
    Js, dJv = [], []
    for f in robot.feet:
        if f not in feet:
            continue
        fid = robot.feet[f].pin_frame_id
        Js.append(pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED))
        dJv.append(pin.getFrameJacobianTimeVariation(model, data, fid, pin.LOCAL_WORLD_ALIGNED) @ v)
    if not Js:
        return np.zeros((0, model.nv)), np.zeros(0)
    return np.vstack(Js), np.concatenate(dJv)


def _fd_frame_acceleration(robot, q, v, frame_id, dt=1e-6):
    """``d/dt (J v)`` at zero ``qdd`` by central differences along ``q(t) = q (+) t v``
    (``J v`` LOCAL_WORLD_ALIGNED: frame-origin velocity and angular velocity in world axes)."""
    model = robot.pin_model
    data = model.createData()

    def jv(qq):
        pin.computeJointJacobians(model, data, qq)
        pin.updateFramePlacements(model, data)
        return pin.getFrameJacobian(model, data, frame_id, pin.LOCAL_WORLD_ALIGNED) @ v

    return (jv(pin.integrate(model, q, v * dt)) - jv(pin.integrate(model, q, -v * dt))) / (2 * dt)


def _projection_at(robot, q, v, feet, W=None):
    model = robot.pin_model
    s = T.compute_snapshot(model, model.createData(), q, v)
    layout = cpid.build_contact_layout(robot, feet)
    ck = cpid.contact_kinematics(s, layout)
    proj = cpid.contact_projection(ck.Jc, ck.Jc_dot_v, W=s.M if W is None else W)
    return s, layout, ck, proj


def _solve(problem, args, relaxed=False, solver="daqp"):
    """A built contact QP solved by qpsolvers and read (``args``: M, h, qdd*, Jc, grasp, vidx)."""
    sol = solve_qp(problem, solver)
    return cpid.contact_qp_result(sol.x, *args, relaxed)


def _states(robot, seed, n=N_STATES):
    rng = np.random.default_rng(seed)
    return [random_state(robot, rng) for _ in range(n)]


# ------------------------------------------------------------------------------------------------
# drift terms and snapshot
# ------------------------------------------------------------------------------------------------
def test_snapshot_matches_crba_rnea_and_drifts_match_time_variation(g1):
    for q, v in _states(g1, 0, 5):
        s = T.compute_snapshot(g1.pin_model, g1.pin_model.createData(), q, v)
        M, h = _reference_M_h(g1, q, v)
        assert np.allclose(s.M, M, atol=1e-10) and np.allclose(s.M, s.M.T)
        assert np.allclose(s.h, h, atol=1e-9)
        Jc, dJv = _reference_contact(g1, q, v, BOTH)
        layout = cpid.build_contact_layout(g1, BOTH)
        ck = cpid.contact_kinematics(s, layout)
        assert np.allclose(ck.Jc, Jc, atol=1e-12)
        assert np.allclose(ck.Jc_dot_v, dJv, atol=1e-9 * (1 + np.abs(dJv).max()))
        fid = g1.feet["left_foot"].pin_frame_id
        fd = _fd_frame_acceleration(g1, q, v, fid)
        assert np.allclose(s.frame(fid).drift, fd, atol=1e-4 * (1 + np.abs(fd).max()))


def test_com_drift_and_jacobian_against_finite_differences(g1):
    model = g1.pin_model
    data = model.createData()
    dt = 1e-6
    for q, v in _states(g1, 1, 3):
        s = T.compute_snapshot(model, model.createData(), q, v)

        def com_vel(qq, v=v):
            pin.jacobianCenterOfMass(model, data, qq)
            return data.Jcom @ v

        qp, qm = pin.integrate(model, q, v * dt), pin.integrate(model, q, -v * dt)
        fd_acc = (com_vel(qp) - com_vel(qm)) / (2 * dt)
        assert np.allclose(s.com_drift, fd_acc, atol=1e-5 * (1 + np.abs(fd_acc).max()))
        fd_vel = (pin.centerOfMass(model, data, qp) - pin.centerOfMass(model, data, qm)) / (2 * dt)
        assert np.allclose(s.com_jacobian @ v, fd_vel, atol=1e-6 * (1 + np.abs(fd_vel).max()))


def test_task_errors_and_jacobians(g1):
    """Each task's Jacobian maps v to the time derivative of its value (finite differences), and its
    error decreases to first order along the least-squares step ``J^+ e``."""
    model = g1.pin_model
    q, v = _states(g1, 2, 1)[0]
    s = T.compute_snapshot(model, model.createData(), q, v)
    fid = g1.feet["right_foot"].pin_frame_id
    R_target = pin.rpy.rpyToMatrix(0.1, -0.2, 0.3)
    tasks = [
        T.ComTask(s.com + [0.01, -0.02, 0.03], (1.0, 1.0, 1.0)),
        T.FramePositionTask(fid, s.frame(fid).position + [0.02, 0.0, -0.01], (1.0,)),
        T.FrameOrientationTask(fid, R_target, (1.0,)),
        T.PostureTask(
            g1.converter.pin_qidx,
            g1.converter.pin_vidx,
            q[g1.converter.pin_qidx] + 0.01,
            (1.0,),
            model.nv,
        ),
    ]
    dt = 1e-7
    for task in tasks:
        J, e = task.jacobian(s), task.error(s)
        dq = np.linalg.lstsq(J, e, rcond=None)[0]
        s2 = T.compute_snapshot(model, model.createData(), pin.integrate(model, q, dq * 1e-3), v)
        assert np.linalg.norm(task.error(s2)) < np.linalg.norm(e) * (1 - 0.9e-3), task.name
        sp = T.compute_snapshot(model, model.createData(), pin.integrate(model, q, v * dt), v)
        sm = T.compute_snapshot(model, model.createData(), pin.integrate(model, q, -v * dt), v)
        fd = (task.error(sp) - task.error(sm)) / (2 * dt)
        if isinstance(task, T.FrameOrientationTask):
            # e = log3(R_t R^T): de/dt = Jlog3(R_t R^T) (-omega), omega in the world frame
            expected = -pin.Jlog3(R_target @ s.frame(fid).rotation.T) @ task.velocity(s)
        else:
            expected = -task.velocity(s)  # d/dt (target - x) = -xdot
        assert np.allclose(expected, fd, atol=1e-5 * (1 + np.abs(fd).max())), task.name
        gains = task.gains
        a = task.desired_acceleration(s)
        assert np.allclose(
            a,
            task.reference_acceleration()
            + gains.kp * e
            + gains.kd * (task.reference_velocity() - task.velocity(s)),
        )


def test_gains_config_rejects_bad_values():
    g = T.TaskGains(2.0, 0.5, 3.0)
    assert g.kp == pytest.approx((4 * np.pi) ** 2) and g.kd == pytest.approx(2 * 0.5 * 4 * np.pi)
    with pytest.raises(WbsimError):
        T.TaskGains(-1.0)
    with pytest.raises(WbsimError):
        T.TaskGains.from_value({"frequency": 1.0})
    with pytest.raises(WbsimError):
        cpid.ProjectedIDGains.from_value({"comm": (1.0,)})


# ------------------------------------------------------------------------------------------------
# projection (seed, Sections 3-4)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("feet", [LEFT, RIGHT, BOTH], ids=["left", "right", "both"])
def test_projector_properties_at_random_states(g1, feet):
    rng = np.random.default_rng(10)
    for q, v in _states(g1, 3):
        s, _, ck, proj = _projection_at(g1, q, v, feet)
        M, Jc, Nc = s.M, ck.Jc, proj.Nc
        assert Jc.shape == (6 * len(feet), g1.pin_model.nv)
        assert np.linalg.norm(Jc @ Nc) < 1e-9
        assert np.linalg.norm(Nc @ Nc - Nc) < 1e-9
        assert np.linalg.norm(Nc.T @ M - M @ Nc) < 1e-9 * np.linalg.norm(M)
        qdd_des = rng.normal(scale=5.0, size=g1.pin_model.nv)
        qdd_star = proj.project(qdd_des)
        Jc_ref, dJv_ref = _reference_contact(g1, q, v, feet)
        assert np.linalg.norm(Jc_ref @ qdd_star + dJv_ref) < 1e-9


def test_projection_is_the_kkt_solution_of_problem_1(g1):
    """``qdd*`` solves min (qdd - qdd_des)^T W (qdd - qdd_des) s.t. Jc qdd + Jcdot v = 0, for W = M and
    for another SPD W; the KKT matrix is built from independent M, Jc, Jcdot v and solved by
    np.linalg.solve."""
    rng = np.random.default_rng(11)
    nv = g1.pin_model.nv
    for i, (q, v) in enumerate(_states(g1, 4)):
        feet = BOTH if i % 2 else LEFT
        M, _ = _reference_M_h(g1, q, v)
        A = rng.normal(size=(nv, nv))
        for W in (M, A @ A.T + nv * np.eye(nv)):
            _, _, _, proj = _projection_at(g1, q, v, feet, W=W)
            Jc, dJv = _reference_contact(g1, q, v, feet)
            nc = Jc.shape[0]
            qdd_des = rng.normal(scale=5.0, size=nv)
            K = np.block([[W, Jc.T], [Jc, np.zeros((nc, nc))]])
            sol = np.linalg.solve(K, np.concatenate([W @ qdd_des, -dJv]))
            assert np.allclose(proj.project(qdd_des), sol[:nv], atol=1e-8, rtol=0)


def test_controller_qdd_star_is_contact_consistent_in_both_task_modes(g1):
    """The controller's own qdd* (tasks -> qdd_des -> projection) at random states, both task modes."""
    for task_space in ("nullspace", "free"):
        ctrl = ContactProjectedID(g1, variant="pinv", task_space=task_space)
        states = _states(g1, 5, 6)
        ctrl.reset(RobotState(0.0, *states[0]))
        for i, (q, v) in enumerate(states):
            feet = BOTH if i % 2 else RIGHT
            cmd = ctrl.compute(RobotState(0.0, q, v), ContactSchedule(contact_set=feet))
            Jc, dJv = _reference_contact(g1, q, v, feet)
            assert np.linalg.norm(Jc @ cmd.info["qdd_star"] + dJv) < 1e-9
            Nc = ctrl.projection.Nc
            assert np.allclose(
                cmd.info["qdd_star"],
                Nc @ cmd.info["qdd_des"] + ctrl.projection.particular,
                atol=1e-9,
            )


def test_bad_weight_and_rank_are_reported(g1):
    q, v = _states(g1, 6, 1)[0]
    s, _, ck, _ = _projection_at(g1, q, v, BOTH)
    with pytest.raises(WbsimError):
        cpid.contact_projection(ck.Jc, ck.Jc_dot_v, W=-np.eye(g1.pin_model.nv))
    with pytest.raises(WbsimError):
        cpid.contact_projection(np.vstack([ck.Jc, ck.Jc[:1]]), np.zeros(13), W=s.M)
    empty = cpid.contact_projection(np.zeros((0, g1.pin_model.nv)), np.zeros(0), W=s.M)
    assert np.array_equal(empty.Nc, np.eye(g1.pin_model.nv))
    with pytest.raises(WbsimError):
        ContactProjectedID(g1, W=np.ones((3, 3)))
    with pytest.raises(UnknownNameError):
        ContactProjectedID(g1, W="mass")


# ------------------------------------------------------------------------------------------------
# inverse dynamics
# ------------------------------------------------------------------------------------------------
def _dynamics_residual(robot, q, v, qdd, tau, Jc, lam):
    M, h = _reference_M_h(robot, q, v)
    gen = np.zeros(robot.pin_model.nv)
    gen[robot.converter.pin_vidx] = tau
    return np.abs(M @ qdd + h - gen - Jc.T @ lam).max()


@pytest.mark.parametrize("forces", ["points", "wrench"])
def test_pinv_inverse_dynamics_satisfies_the_equations_of_motion(g1, forces):
    rng = np.random.default_rng(12)
    for i, (q, v) in enumerate(_states(g1, 7)):
        feet = BOTH if i % 2 else LEFT
        s, layout, ck, proj = _projection_at(g1, q, v, feet)
        qdd = proj.project(rng.normal(scale=5.0, size=g1.pin_model.nv))
        res = cpid.inverse_dynamics_pinv(
            s.M,
            s.h,
            qdd,
            ck.Jc,
            g1.converter.pin_vidx,
            ck.grasp,
            (ck.foot_rotations, layout.distribution),
            forces,
        )
        assert res.found
        Jc, _ = _reference_contact(g1, q, v, feet)
        assert _dynamics_residual(g1, q, v, qdd, res.tau, Jc, res.lam) < 1e-8
        # point forces reproduce the foot wrenches
        assert np.allclose(ck.grasp @ res.point_forces.ravel(), res.lam, atol=1e-8)
        # least norm: lambda has no component in the null space of the unactuated rows
        A = (Jc.T @ ck.grasp)[:6] if forces == "points" else Jc[:, :6].T
        x = res.point_forces.ravel() if forces == "points" else res.lam
        assert np.allclose(x, np.linalg.pinv(A) @ (A @ x), atol=1e-8 * (1 + np.abs(x).max()))
        if forces == "wrench":  # each foot's points: the least-norm distribution of its wrench
            for k in range(len(feet)):
                Gk = ck.grasp[6 * k : 6 * k + 6, 12 * k : 12 * k + 12]
                ref = np.linalg.lstsq(Gk, res.lam[6 * k : 6 * k + 6], rcond=None)[0]
                assert np.allclose(res.point_forces[4 * k : 4 * k + 4].ravel(), ref, atol=1e-8)


def test_qp_inverse_dynamics_satisfies_the_equations_of_motion(g1):
    """Exact QP (qdd = qdd*) where feasible, relaxed QP otherwise; each checked with its own qdd, and
    the point forces against unilaterality, the friction pyramid and the contact-acceleration
    equality."""
    rng = np.random.default_rng(13)
    vidx = g1.converter.pin_vidx
    n_exact = n_relaxed = 0
    for i, (q, v) in enumerate(_states(g1, 8)):
        feet = BOTH if i % 2 else RIGHT
        v = 0.2 * v
        s, layout, ck, proj = _projection_at(g1, q, v, feet)
        qdd_star = proj.project(rng.normal(scale=1.0, size=g1.pin_model.nv))
        lim = np.full(g1.n_joints, np.inf)
        args = (
            s.M,
            s.h,
            qdd_star,
            ck.Jc,
            ck.Jc_dot_v,
            ck.grasp,
            layout.friction,
            layout.friction_rhs,
            vidx,
            lim,
            1e-2,
        )  # the controller's default force weight
        read = (s.M, s.h, qdd_star, ck.Jc, ck.grasp, vidx)
        res = _solve(cpid.build_contact_qp(*args), read)
        if res.found:
            n_exact += 1
            assert np.array_equal(res.qdd, qdd_star)
        else:
            assert np.isnan(res.tau).all() and np.isnan(res.point_forces).all()  # NaN, not 0
            res = _solve(cpid.build_contact_qp(*args, relax_weight=1e5), read, relaxed=True)
            assert res.found and res.relaxed
            n_relaxed += 1
        Jc, dJv = _reference_contact(g1, q, v, feet)
        assert _dynamics_residual(g1, q, v, res.qdd, res.tau, Jc, res.lam) < 1e-8
        assert np.linalg.norm(Jc @ res.qdd + dJv) < 1e-8
        f = res.point_forces
        assert np.all(f[:, 2] >= -1e-7)  # solver tolerance on forces of ~100 N
        # MuJoCo's pyramid at the model's mu (1) times the margin, world axes
        assert np.all(np.abs(f[:, :2]).sum(axis=1) <= FRICTION_MARGIN * f[:, 2] + 1e-7)
        assert np.allclose(ck.grasp @ f.ravel(), res.lam)
    assert n_exact and n_relaxed  # both paths were exercised


def test_qp_respects_torque_limits_and_reports_joints_no_force_reaches(g1):
    q = g1.pose_q("stand")
    v = np.zeros(g1.pin_model.nv)
    s, layout, ck, _ = _projection_at(g1, q, v, BOTH)
    vidx = g1.converter.pin_vidx
    lim = np.full(g1.n_joints, np.inf)
    knee = g1.joint_names.index("left_knee_joint")
    lim[knee] = 5.0  # the knee needs ~12 N·m standing: the QP must shift load to the right leg
    zero = np.zeros(g1.pin_model.nv)
    read = (s.M, s.h, zero, ck.Jc, ck.grasp, vidx)
    res = _solve(
        cpid.build_contact_qp(
            s.M,
            s.h,
            zero,
            ck.Jc,
            ck.Jc_dot_v,
            ck.grasp,
            layout.friction,
            layout.friction_rhs,
            vidx,
            lim,
            1e-5,
        ),
        read,
    )
    assert res.found and abs(res.tau[knee]) <= 5.0 + 1e-7
    shoulder = g1.joint_names.index("left_shoulder_roll_joint")
    lim[shoulder] = 1e-3  # no contact force reaches the arm (it needs more): infeasible
    qp = cpid.build_contact_qp(
        s.M,
        s.h,
        zero,
        ck.Jc,
        ck.Jc_dot_v,
        ck.grasp,
        layout.friction,
        layout.friction_rhs,
        vidx,
        lim,
        1e-5,
    )
    assert not _solve(qp, read).found


@pytest.mark.parametrize("variant", ["qp", "pinv"])
def test_controller_command_satisfies_the_equations_of_motion(g1, variant):
    """Through the controller, near the stand pose with small velocities: Command.tau, info qdd and
    lambda satisfy the dynamics; contact forces are reported per sole point of the feet in contact."""
    rng = np.random.default_rng(14)
    ctrl = ContactProjectedID(g1, variant=variant)
    q0 = g1.pose_q("stand")
    ctrl.reset(RobotState(0.0, q0, np.zeros(g1.pin_model.nv)))
    for i in range(6):
        feet = (BOTH, LEFT, RIGHT)[i % 3]
        q = q0.copy()
        q[g1.converter.pin_qidx] += rng.normal(scale=0.05, size=g1.n_joints)
        v = rng.normal(scale=0.1, size=g1.pin_model.nv)
        cmd = ctrl.compute(RobotState(0.0, q, v), ContactSchedule(contact_set=feet))
        assert cmd.contact_set == feet and cmd.tau.shape == (g1.n_joints,)
        names = [n for f in g1.feet if f in feet for n in g1.feet[f].point_names]
        assert cmd.point_forces.shape == (len(g1.contact_point_names), 3)
        assert list(forces_by_name(g1, cmd)) == names
        others = [i for i, n in enumerate(g1.contact_point_names) if n not in names]
        assert np.all(cmd.point_forces[others] == 0.0)
        Jc, _ = _reference_contact(g1, q, v, feet)
        tau_id = cmd.info["tau_id"]
        # the controller also compensates the joints' viscous damping (MuJoCo simulates it, the
        # rigid-body model has none): remove it to check the rigid-body equation of motion
        tau_rigid = tau_id - ctrl.joint_damping * v[g1.converter.pin_vidx]
        assert (
            _dynamics_residual(g1, q, v, cmd.info["qdd"], tau_rigid, Jc, cmd.info["lambda"]) < 1e-8
        )
        if cmd.feasible:
            assert np.array_equal(cmd.tau, tau_id)
            assert np.all(np.abs(cmd.tau) <= g1.effort_limits + 1e-9)


# ------------------------------------------------------------------------------------------------
# the static case equals the gravity-compensation QP
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_static_double_support_equals_gravity_qp(robot, eps):
    gq = pytest.importorskip("wbsim.controllers.gravity_qp")
    gravity = gq.GravityCompensationQP(robot, contact_model="points", method="qp", eps=eps)
    rng = np.random.default_rng(15)
    q0 = robot.pose_q("stand")
    arms = [
        i
        for i, n in enumerate(robot.joint_names)
        if "arm" in n
        or "shoulder" in n
        or "elbow" in n
        or "wrist" in n
        or "torso" in n
        or "waist" in n
    ]
    v = np.zeros(robot.pin_model.nv)
    for k in range(4):
        q = q0.copy()
        if k:  # move arms and waist: the CoM moves, the feet stay flat
            q[robot.converter.pin_qidx[arms]] += rng.normal(scale=0.3, size=len(arms))
        ctrl = ContactProjectedID(robot, variant="qp", force_weight=eps)
        state = RobotState(0.0, q, v)
        ctrl.reset(state)  # targets = current values: zero task error
        cmd = ctrl.compute(state, ContactSchedule(contact_set=BOTH))
        assert cmd.feasible and np.abs(cmd.info["qdd_star"]).max() < 1e-9
        ref = gravity.solve(q, BOTH)
        assert ref.feasible
        tau_ref = (
            np.asarray(ref.tau_array)
            if hasattr(ref, "tau_array")
            else np.array([ref.tau[n] for n in robot.joint_names])
        )
        assert np.abs(cmd.tau - tau_ref).max() < 1e-5
        loaded = forces_by_name(robot, cmd)
        forces_ref = np.array([ref.contact_forces[n] for n in loaded])
        forces = np.array(list(loaded.values()))
        assert np.abs(forces - forces_ref).max() < 1e-3


# ------------------------------------------------------------------------------------------------
# the per-step fast paths against the general ones
# ------------------------------------------------------------------------------------------------
def test_sole_points_and_grasp_map_match_pinocchio_frames(g1):
    """``contact_kinematics``' batched sole points against Pinocchio's own frames at the sole
    corners, and its grasp map against the per-point definition ``[I; [p_i - o]x]``."""
    model = g1.pin_model
    for q, v in _states(g1, 21, 3):
        data = model.createData()
        s = T.compute_snapshot(model, data, q, v)
        for feet in (BOTH, RIGHT):
            layout = cpid.build_contact_layout(g1, feet)
            ck = cpid.contact_kinematics(s, layout)
            pin.updateFramePlacements(model, data)
            ids = [i for f in g1.feet if f in feet for i in g1.feet[f].pin_point_frame_ids]
            ref = np.array([data.oMf[i].translation for i in ids])
            assert np.allclose(ck.point_positions, ref, atol=1e-12)
            for k in range(len(layout.feet)):
                for i in range(4):
                    r = ck.point_positions[4 * k + i] - ck.foot_positions[k]
                    skew = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
                    block = ck.grasp[6 * k : 6 * k + 6, 12 * k + 3 * i : 12 * k + 3 * i + 3]
                    assert np.allclose(block, np.vstack([np.eye(3), skew]), atol=1e-14)


def _controller_tasks(g1, swing):
    ctrl = ContactProjectedID(g1)
    ctrl.reset(RobotState(0.0, g1.pose_q("stand"), np.zeros(g1.pin_model.nv)))
    tasks = [ctrl.com_task, ctrl.base_task]
    for f in swing:
        tasks += [ctrl.foot_position_tasks[f], ctrl.foot_orientation_tasks[f]]
    return tasks + [ctrl.posture_task]


@pytest.mark.parametrize("swing", [(), ("right_foot",)], ids=["double", "single"])
def test_task_stack_is_the_weighted_least_squares_solution(g1, swing):
    """``build_task_stack`` + ``solve_task_stack`` against the normal equations written out with
    ``np.linalg.solve``: free, ``min sum w ||J qdd + drift - a||^2 + reg ||qdd||^2``; in the null
    space, the same over ``qdd = qdd_p + N z`` (the result is then contact-consistent)."""
    nv = g1.pin_model.nv
    tasks = _controller_tasks(g1, swing)
    tasks[0].set_target(tasks[0].target + [0.02, -0.01, 0.01], [0.1, 0.0, -0.05])
    feet = BOTH - frozenset(swing)
    for q, v in _states(g1, 23, 3):
        s, _, _, proj = _projection_at(g1, q, v, feet)
        rows = [t.rows(s) for t in tasks]
        A = np.vstack([np.sqrt(r.weight) * r.jacobian for r in rows])
        b = np.concatenate([np.sqrt(r.weight) * (r.acceleration - r.drift) for r in rows])
        free = np.linalg.solve(A.T @ A + 1e-6 * np.eye(nv), A.T @ b)
        got = T.solve_task_stack(T.build_task_stack(rows, nv, 1e-6))
        assert np.allclose(got, free, rtol=1e-9, atol=1e-9 * (1 + np.abs(free).max()))
        N, p = proj.Nc, proj.particular
        AN = A @ N
        z = np.linalg.solve(AN.T @ AN + 1e-6 * np.eye(nv), AN.T @ (b - A @ p))
        ref = p + N @ z
        got = T.solve_task_stack(T.build_task_stack(rows, nv, 1e-6, (N, p)))
        assert np.allclose(got, ref, rtol=1e-9, atol=1e-9 * (1 + np.abs(ref).max()))
        Jc, dJv = _reference_contact(g1, q, v, feet)
        assert np.linalg.norm(Jc @ got + dJv) < 1e-8


def _one_sided_reference(P, q, G, h, A, b):
    """The same QP solved by ProxQP, tight tolerances."""
    return qpsolvers.solve_qp(
        P, q, G, h, A, b, solver="proxqp", eps_abs=1e-9, eps_rel=0.0, max_iter=100000
    )


def _reference_exact_qp(M, h, qdd_star, Jc, grasp, friction, friction_rhs, vidx, tau_limit, eps):
    """The exact problem built from its definition, independently of ``build_contact_qp``:
    ``min ||tau||^2 + eps ||f||^2`` with ``tau = (M qdd* + h - J_c^T G f)_a`` over all actuated
    rows, base rows as equality, friction, ``-lim <= tau <= lim`` as two one-sided blocks; ProxQP."""
    nv = M.shape[0]
    unact = np.setdiff1d(np.arange(nv), vidx)
    A_f = Jc.T @ grasp
    b = M @ qdd_star + h
    Aa, ba = A_f[vidx], b[vidx]
    P = 2 * (Aa.T @ Aa + eps * np.eye(A_f.shape[1]))
    q = -2 * Aa.T @ ba
    G = np.vstack(
        [friction, -Aa, Aa]
    )  # tau <= lim: -Aa f <= lim - ba; -tau <= lim: Aa f <= lim + ba
    hh = np.concatenate([friction_rhs, tau_limit - ba, tau_limit + ba])
    keep = np.isfinite(hh) & (np.abs(G).sum(axis=1) > 0)
    return _one_sided_reference(P, q, G[keep], hh[keep], A_f[unact], b[unact])


def _reference_relaxed_qp(
    M, h, qdd_star, Jc, Jc_dot_v, grasp, friction, friction_rhs, vidx, tau_limit, eps, w
):
    """The relaxed problem from its definition over ``x = [qdd, f]``: ``w (qdd - qdd*)^T M
    (qdd - qdd*) + ||tau||^2 + eps ||f||^2``, ``tau = S (M qdd + h - J_c^T G f)``, base rows and
    ``J_c qdd + Jcdot_c v = 0`` as equalities, friction and torque limits; ProxQP."""
    nv = M.shape[0]
    unact = np.setdiff1d(np.arange(nv), vidx)
    A_f = Jc.T @ grasp
    n = A_f.shape[1]
    T_map = np.hstack([M, -A_f])[vidx]  # tau = T_map x + h_a
    Q = np.zeros((nv + n, nv + n))
    Q[:nv, :nv] = w * M
    Q[nv:, nv:] = eps * np.eye(n)
    P = 2 * (T_map.T @ T_map + Q)
    q = 2 * (T_map.T @ h[vidx]) - 2 * np.r_[w * M @ qdd_star, np.zeros(n)]
    A = np.vstack([np.hstack([M, -A_f])[unact], np.hstack([Jc, np.zeros((Jc.shape[0], n))])])
    b = np.r_[-h[unact], -Jc_dot_v]
    fin = np.isfinite(tau_limit)
    G = np.vstack(
        [np.hstack([np.zeros((friction.shape[0], nv)), friction]), T_map[fin], -T_map[fin]]
    )
    hh = np.r_[friction_rhs, (tau_limit - h[vidx])[fin], (tau_limit + h[vidx])[fin]]
    return _one_sided_reference(P, q, G, hh, A, b)


def test_built_contact_qp_equals_its_definition_for_every_solver(g1):
    """``build_contact_qp`` solved by DAQP and ProxQP through qpsolvers against the exact problem
    written out from its definition (ProxQP), with and without extra force bounds and torque
    limits; the relaxed problem satisfies its constraints (dynamics, contact acceleration)."""
    rng = np.random.default_rng(24)
    vidx = g1.converter.pin_vidx
    nv = g1.pin_model.nv
    q0 = g1.pose_q("stand")
    states = [
        (
            q0 + np.r_[np.zeros(7), rng.normal(scale=0.05, size=g1.n_joints)],
            rng.normal(scale=0.1, size=nv),
        )
        for _ in range(6)
    ]
    states += [(q, 0.2 * v) for q, v in _states(g1, 25, 6)]
    checked = {False: 0, True: 0}
    n_relaxed_ref = 0
    for i, (q, v) in enumerate(states):
        feet = BOTH if i % 2 else LEFT
        s, layout, ck, proj = _projection_at(g1, q, v, feet)
        qdd_star = proj.project(rng.normal(scale=0.2 if i < 6 else 1.0, size=nv))
        limits = None
        if i % 4 == 3:  # a cap on the first foot's load, as in a contact transition
            rows = np.zeros((1, ck.grasp.shape[1]))
            rows[0, 2:12:3] = 1.0
            limits = (rows, np.array([150.0]))
        tau_limit = (np.full(g1.n_joints, np.inf), g1.effort_limits, 0.2 * g1.effort_limits)[i % 3]
        args = (
            s.M,
            s.h,
            qdd_star,
            ck.Jc,
            ck.Jc_dot_v,
            ck.grasp,
            layout.friction,
            layout.friction_rhs,
            vidx,
            tau_limit,
            1.0,
        )
        read = (s.M, s.h, qdd_star, ck.Jc, ck.grasp, vidx)
        for relax in (None, 1e5):
            qp = cpid.build_contact_qp(*args, relax_weight=relax, force_limits=limits)
            assert isinstance(qp, qpsolvers.Problem)
            a = _solve(qp, read, relax is not None)
            b = _solve(qp, read, relax is not None, solver="proxqp")
            assert a.found == b.found
            if not a.found:
                continue
            scale = 1 + np.abs(a.point_forces).max()
            assert np.abs(a.point_forces - b.point_forces).max() < 1e-5 * scale
            assert np.abs(a.tau - b.tau).max() < 1e-5 * scale
            if relax is None and limits is None:
                ref = _reference_exact_qp(
                    s.M,
                    s.h,
                    qdd_star,
                    ck.Jc,
                    ck.grasp,
                    layout.friction,
                    layout.friction_rhs,
                    vidx,
                    tau_limit,
                    1.0,
                )
                assert np.abs(a.point_forces.ravel() - ref).max() < 1e-5 * scale
            assert np.all(np.abs(a.tau) <= tau_limit + 1e-6)
            if relax is not None and limits is None:
                ref = _reference_relaxed_qp(
                    s.M,
                    s.h,
                    qdd_star,
                    ck.Jc,
                    ck.Jc_dot_v,
                    ck.grasp,
                    layout.friction,
                    layout.friction_rhs,
                    vidx,
                    tau_limit,
                    1.0,
                    1e5,
                )
                if ref is not None:  # ProxQP may stop short on this scaling
                    assert np.abs(np.r_[a.qdd, a.point_forces.ravel()] - ref).max() < 1e-4 * scale
                    n_relaxed_ref += 1
            if relax is not None:
                Jc, dJv = _reference_contact(g1, q, v, feet)
                assert np.linalg.norm(Jc @ a.qdd + dJv) < 1e-8
                assert _dynamics_residual(g1, q, v, a.qdd, a.tau, Jc, a.lam) < 1e-8
            checked[relax is not None] += 1
    assert checked[False] >= 3 and checked[True] >= 3 and n_relaxed_ref >= 3, (
        checked,
        n_relaxed_ref,
    )


def test_contact_qp_torque_rows_are_the_torque_limits(g1):
    """The rows of the built QPs bound the torque they define: for random unknowns ``x``, the
    torque rows hold iff ``|tau(x)| <= tau_limit``, with ``tau`` computed from its definition
    ``(M qdd + h - J_c^T G f)_a`` (exact: ``qdd = qdd*``)."""
    rng = np.random.default_rng(28)
    vidx = g1.converter.pin_vidx
    nv = g1.pin_model.nv
    q, v = _states(g1, 29, 1)[0]
    s, layout, ck, proj = _projection_at(g1, q, v, BOTH)
    qdd_star = proj.project(rng.normal(scale=2.0, size=nv))
    nfr = layout.friction.shape[0]
    A_f = ck.Jc.T @ ck.grasp
    b = s.M @ qdd_star + s.h
    f0 = np.linalg.lstsq(A_f[vidx], b[vidx], rcond=None)[0]
    lim = np.abs(b[vidx] - A_f[vidx] @ f0) + rng.uniform(0.5, 5.0, size=g1.n_joints)  # f0 within
    for relax in (None, 1e5):
        qp = cpid.build_contact_qp(
            s.M,
            s.h,
            qdd_star,
            ck.Jc,
            ck.Jc_dot_v,
            ck.grasp,
            layout.friction,
            layout.friction_rhs,
            vidx,
            lim,
            1.0,
            relax_weight=relax,
        )
        rows = slice(nfr, nfr + 2 * g1.n_joints)
        x0 = f0 if relax is None else np.r_[qdd_star, f0]
        agree = {True: 0, False: 0}
        for k in range(400):
            x = x0 + rng.normal(scale=0.3 * (1 + k % 20), size=x0.size)
            qdd, f = (qdd_star, x) if relax is None else (x[:nv], x[nv:])
            tau = (s.M @ qdd + s.h - ck.Jc.T @ (ck.grasp @ f))[vidx]
            within = bool(np.all(np.abs(tau) <= lim))
            assert bool(np.all(qp.G[rows] @ x <= qp.h[rows])) == within
            agree[within] += 1
        assert agree[True] and agree[False]


def _run_both(g1, schedules, states, **options):
    """The same steps through the kernel and the readable path: their commands, in pairs."""
    fast, readable = (ContactProjectedID(g1, fast=f, **options) for f in (True, False))
    assert fast._kernel is None and readable._kernel is None
    q0 = g1.pose_q("stand")
    for ctrl in (fast, readable):
        ctrl.reset(RobotState(0.0, q0, np.zeros(g1.pin_model.nv)))
    out = []
    for t, ((q, v), sched) in enumerate(zip(states, schedules)):
        a = fast.compute(RobotState(0.002 * t, q, v), sched)
        b = readable.compute(RobotState(0.002 * t, q, v), sched)
        assert (fast._kernel is not None) and readable._kernel is None
        out.append((a, b))
    return out


@pytest.mark.parametrize(
    "options",
    [
        {"variant": "qp"},
        {"variant": "pinv"},
        {"variant": "qp", "task_space": "free"},
        {"variant": "qp", "W": "identity"},
        {"variant": "pinv", "pinv_forces": "wrench"},
        {"variant": "qp", "gains": {"angular_momentum": (2.0, 1.0, 10.0)}},
        {"variant": "qp", "task_space": "free", "gains": {"angular_momentum": (3.0, 0.7, 1.0)}},
    ],
    ids=["qp", "pinv", "free", "W", "pinv-wrench", "momentum", "momentum-free"],
)
def test_kernel_equals_the_readable_path(g1, options):
    """``fast=True`` (the kernel) against ``fast=False`` (snapshot, tasks' rows, build/solve of
    the stack, ``contact_projection``, ``build_contact_qp`` through qpsolvers) on perturbed stand
    states in double and single support, with swing targets and a contact transition (the
    unloading bounds): same status, fallback, torques, forces, accelerations and task errors.

    Equal up to rounding, not bit for bit: the kernel hands DAQP the QP's rows in two-sided form
    (the readable path, through qpsolvers, in one-sided form: the same problem, rows in another
    order), skips the second projection in the null space (the identity up to rounding), reads
    ``M`` from one triangle and fuses products. Measured: torques and forces within 1.3e-12 of
    ``1 + max |f|``, accelerations within 1e-13 relative; a wrong row or sign shows at 1e-3 or
    more."""
    rng = np.random.default_rng(27)
    q0 = g1.pose_q("stand")
    states = [
        (
            q0 + np.r_[np.zeros(7), rng.normal(scale=0.005, size=g1.n_joints)],
            rng.normal(scale=0.02, size=g1.pin_model.nv),
        )
        for _ in range(12)
    ]
    lift = {"right_foot": np.array([0.0, -0.12, 0.1])}
    schedules = (
        [ContactSchedule(BOTH)] * 3
        + [ContactSchedule(BOTH, LEFT, "shift", 1, 1.2 + 0.05 * k, 1.5) for k in range(3)]
        + [ContactSchedule(LEFT, LEFT, "lift", 2, 0.1, 1.0, targets=lift)] * 3
        + [ContactSchedule(BOTH)] * 3
    )
    n_feasible = n_other = 0
    for a, b in _run_both(g1, schedules, states, **options):
        assert (a.status, a.fallback, a.contact_set) == (b.status, b.fallback, b.contact_set)
        n_feasible += a.feasible
        n_other += a.fallback in ("relaxed_qp", "clipped")
        scale = 1 + np.abs(b.point_forces).max()
        assert np.abs(a.tau - b.tau).max() < 1e-10 * scale
        assert np.abs(a.point_forces - b.point_forces).max() < 1e-10 * scale
        for key in ("qdd_des", "qdd_star", "qdd"):
            assert np.abs(a.info[key] - b.info[key]).max() < 1e-11 * (1 + np.abs(b.info[key]).max())
        assert a.info["task_errors"] == pytest.approx(b.info["task_errors"], rel=1e-12, abs=1e-15)
    assert n_feasible >= 3 and (n_other >= 1 or options["variant"] == "pinv")  # exact, relaxed


@pytest.mark.parametrize("variant", ["qp", "pinv"])
def test_layouts_and_kernels_are_kept_across_switches_and_resets(g1, variant):
    """A switch back to a contact set (and the first step after a reset) reuses the layout and
    kernel built for it before: the commands are those of a new controller, bit for bit."""
    rng = np.random.default_rng(5)
    q0 = g1.pose_q("stand")
    states = [
        (
            q0 + np.r_[np.zeros(7), rng.normal(scale=0.005, size=g1.n_joints)],
            rng.normal(scale=0.02, size=g1.pin_model.nv),
        )
        for _ in range(8)
    ]
    schedules = [ContactSchedule(s) for s in (BOTH, BOTH, LEFT, LEFT, BOTH, RIGHT, BOTH, LEFT)]

    def run(ctrl):
        ctrl.reset(RobotState(0.0, q0, np.zeros(g1.pin_model.nv)))
        return [
            ctrl.compute(RobotState(0.002 * t, q, v), sched)
            for t, ((q, v), sched) in enumerate(zip(states, schedules))
        ]

    kept = ContactProjectedID(g1, variant=variant)
    first = run(kept)
    kernels = {id(k) for k in kept._built_for.values()}
    assert len(kept._built_for) == 6  # 3 sets: a layout and a kernel each
    again = run(kept)
    assert {id(k) for k in kept._built_for.values()} == kernels
    for commands in (first, again):
        for a, b in zip(commands, run(ContactProjectedID(g1, variant=variant))):
            assert np.array_equal(a.tau, b.tau)
            assert np.array_equal(a.point_forces, b.point_forces, equal_nan=True)
            assert (a.status, a.fallback) == (b.status, b.fallback)


# ------------------------------------------------------------------------------------------------
# contact-mode changes
# ------------------------------------------------------------------------------------------------
def test_contact_set_change_rebuilds_jc_and_nc(g1):
    ctrl = ContactProjectedID(g1, variant="qp")
    states = _states(g1, 9, 4)
    q0 = g1.pose_q("stand")
    v0 = np.zeros(g1.pin_model.nv)
    ctrl.reset(RobotState(0.0, q0, v0))
    cmd = ctrl.compute(RobotState(0.0, q0, v0), ContactSchedule(contact_set=BOTH))
    assert "mode_switch" not in cmd.info and ctrl.projection.Jc.shape[0] == 12
    sequence = [
        (LEFT, {"from": sorted(BOTH), "to": sorted(LEFT)}),
        (LEFT, None),
        (BOTH, {"from": sorted(LEFT), "to": sorted(BOTH)}),
        (RIGHT, {"from": sorted(BOTH), "to": sorted(RIGHT)}),
    ]
    for (feet, switch), (q, v) in zip(sequence, states):
        cmd = ctrl.compute(RobotState(0.0, q, v), ContactSchedule(contact_set=feet))
        assert cmd.info.get("mode_switch") == switch
        assert cmd.contact_set == feet
        proj = ctrl.projection
        Jc_ref, dJv_ref = _reference_contact(g1, q, v, feet)
        assert proj.Jc.shape == Jc_ref.shape and np.allclose(proj.Jc, Jc_ref, atol=1e-12)
        M, _ = _reference_M_h(g1, q, v)
        Nc = proj.Nc
        assert np.linalg.norm(Jc_ref @ Nc) < 1e-9
        assert np.linalg.norm(Nc @ Nc - Nc) < 1e-9
        assert np.linalg.norm(Nc.T @ M - M @ Nc) < 1e-9 * np.linalg.norm(M)
        assert np.linalg.norm(Jc_ref @ cmd.info["qdd_star"] + dJv_ref) < 1e-9
        names = [n for f in g1.feet if f in feet for n in g1.feet[f].point_names]
        assert list(forces_by_name(g1, cmd)) == names


def test_sensed_contact_source(g1):
    ctrl = ContactProjectedID(g1, contact_source="sensed")
    q, v = g1.pose_q("stand"), np.zeros(g1.pin_model.nv)
    ctrl.reset(RobotState(0.0, q, v))
    cmd = ctrl.compute(
        RobotState(0.0, q, v, sensed_contacts=LEFT), ContactSchedule(contact_set=BOTH)
    )
    assert cmd.contact_set == LEFT and ctrl.projection.Jc.shape[0] == 6
    with pytest.raises(WbsimError):
        ctrl.compute(RobotState(0.0, q, v), ContactSchedule(contact_set=BOTH))


# ------------------------------------------------------------------------------------------------
# bad input: reported, with a fallback, never raised
# ------------------------------------------------------------------------------------------------
def _stand(robot, **options):
    ctrl = ContactProjectedID(robot, **options)
    q, v = robot.pose_q("stand"), np.zeros(robot.pin_model.nv)
    ctrl.reset(RobotState(0.0, q, v))
    return ctrl, RobotState(0.0, q, v)


def test_qp_forces_stay_in_the_cone_of_the_friction_the_state_reports(g1):
    """The QP bounds each point force by the simulator's mu of its foot (``RobotState.friction``)
    times the margin, in MuJoCo's pyramid (world axes); at mu 0.1 that bound binds where mu 1
    leaves the forces free. A mu above what the model's floor gives is refused."""
    q, v = g1.pose_q("stand"), np.zeros(g1.pin_model.nv)
    tangential = {}
    for mu in (1.0, 0.1):
        ctrl = ContactProjectedID(g1, variant="qp")
        state = RobotState(0.0, q, v, None, {"left_foot": mu, "right_foot": mu}, "pyramidal")
        ctrl.reset(state)
        target = ctrl.com_task.target + np.array([0.01, 0.0, 0.0])
        f = ctrl.compute(state, ContactSchedule(contact_set=BOTH, targets={"com": target}))
        f = f.point_forces
        ft = np.abs(f[:, :2]).sum(axis=1)
        assert np.all(ft <= FRICTION_MARGIN * mu * f[:, 2] + 1e-6), mu
        tangential[mu] = ft.max()
    assert tangential[0.1] < tangential[1.0] - 0.1
    expected = 0.1 * FRICTION_MARGIN
    assert ctrl.friction(state).mu == pytest.approx({"left_foot": expected, "right_foot": expected})
    with pytest.raises(WbsimError, match="mu = 1.0"):
        ContactProjectedID(g1, mu=1.0)


def test_com_target_outside_support_is_clamped_and_reported(g1):
    ctrl, state = _stand(g1, variant="qp")
    far = ctrl.com_task.target + np.array([0.0, -0.5, 0.0])
    cmd = ctrl.compute(state, ContactSchedule(contact_set=LEFT, targets={"com": far}))
    assert not cmd.feasible and cmd.fallback == "clamped_target"
    assert "com_target_outside_support" in cmd.info["event"]
    assert np.all(np.isfinite(cmd.tau))
    # the clamped target lies over the left sole
    pts = ctrl.contact.point_positions[:, :2]
    assert pts[:, 1].min() <= ctrl.com_task.target[1] <= pts[:, 1].max()


def test_infeasible_qp_falls_back_without_raising(g1):
    # CoM target far outside the single support, target check off: the exact QP is infeasible
    ctrl, state = _stand(g1, variant="qp", check_targets=False)
    far = ctrl.com_task.target + np.array([0.0, -0.5, 0.0])
    cmd = ctrl.compute(state, ContactSchedule(contact_set=LEFT, targets={"com": far}))
    assert not cmd.feasible and cmd.fallback in ("relaxed_qp", "gravity_pinv")
    assert "exact_qp_infeasible" in cmd.info["event"] or "qp_infeasible" in cmd.info["event"]
    assert np.all(np.isfinite(cmd.tau)) and np.all(np.abs(cmd.tau) <= g1.effort_limits + 1e-9)
    # torque limits standing cannot meet: the exact QP is infeasible, the relaxed one lets it sag
    ctrl, state = _stand(g1, variant="qp", torque_limits=np.full(g1.n_joints, 1e-3))
    cmd = ctrl.compute(state, ContactSchedule(contact_set=BOTH))
    assert not cmd.feasible and cmd.fallback in ("relaxed_qp", "gravity_pinv")
    assert np.all(np.abs(cmd.tau) <= 1e-3 + 1e-9)


@pytest.mark.parametrize("fast", [True, False], ids=["kernel", "readable"])
def test_no_qp_solution_falls_back_to_static_pinv(g1, monkeypatch, fast):
    """When neither QP has a solution: gravity compensation by the pinv variant of the static problem
    (qdd = 0, h = g), checked against the statics with Pinocchio's g(q)."""
    from wbsim.controllers import _projected_id_fast

    ctrl, state = _stand(g1, variant="qp", fast=fast)
    q = state.q.copy()
    q[g1.converter.pin_qidx] += 0.05
    state = RobotState(0.0, q, np.zeros(g1.pin_model.nv))

    def no_solution(problem, solver, args, relaxed):
        return cpid.contact_qp_result(None, *args, relaxed, "mock: infeasible")

    monkeypatch.setattr(cpid, "_solve_contact_qp", no_solution)
    monkeypatch.setattr(
        _projected_id_fast.ProjectedIDKernel,
        "solve_qp",
        lambda self, *a: (False, None, None, "mock: kernel"),
    )
    cmd = ctrl.compute(state, ContactSchedule(contact_set=BOTH))
    assert (
        not cmd.feasible and cmd.fallback == "gravity_pinv" and "qp_infeasible" in cmd.info["event"]
    )
    assert cmd.status is CommandStatus.INFEASIBLE and cmd.message == "mock: infeasible"
    g = pin.computeGeneralizedGravity(g1.pin_model, g1.pin_model.createData(), q)
    Jc, _ = _reference_contact(g1, q, state.v, BOTH)
    gen = np.zeros(g1.pin_model.nv)
    gen[g1.converter.pin_vidx] = cmd.tau
    assert np.abs(g - gen - Jc.T @ cmd.info["lambda"]).max() < 1e-8


@pytest.mark.parametrize("variant", ["qp", "pinv"])
def test_empty_contact_set_is_reported(g1, variant):
    ctrl, state = _stand(g1, variant=variant)
    first = ctrl.compute(state, ContactSchedule(contact_set=BOTH))
    assert first.feasible
    cmd = ctrl.compute(state, ContactSchedule(contact_set=frozenset()))
    assert not cmd.feasible and cmd.fallback == "last_feasible" and cmd.info["event"]
    assert np.array_equal(cmd.tau, first.tau) and np.isnan(cmd.point_forces).all()
    ctrl, state = _stand(g1, variant=variant)
    cmd = ctrl.compute(state, ContactSchedule(contact_set=frozenset()))
    assert not cmd.feasible and cmd.fallback == "joint_gravity"


def test_swing_foot_target_out_of_reach_is_clamped(g1):
    ctrl, state = _stand(g1, variant="qp")
    cmd = ctrl.compute(
        state,
        ContactSchedule(contact_set=LEFT, targets={"right_foot": np.array([0.0, -0.1, -2.0])}),
    )
    assert not cmd.feasible and "right_foot_target_out_of_reach" in cmd.info["event"]
    hip, reach = ctrl._leg_reach["right_foot"]
    target = ctrl.foot_position_tasks["right_foot"].target
    assert np.linalg.norm(target - ctrl.data.oMi[hip].translation) == pytest.approx(reach)


def test_malformed_input_raises(g1):
    with pytest.raises(UnknownNameError):
        ContactProjectedID(g1, variant="lqr")
    with pytest.raises(UnknownNameError):
        ContactProjectedID(g1, contact_source="camera")
    with pytest.raises(UnknownNameError):
        ContactProjectedID(g1, solver="no_such_solver")
    ctrl, state = _stand(g1)
    with pytest.raises(WbsimError):
        ctrl.compute(state, ContactSchedule(contact_set=BOTH, targets={"com": [0.0, 1.0]}))
    with pytest.raises(WbsimError):
        ctrl.compute(state, ContactSchedule(contact_set=BOTH, targets={"com": [np.nan, 0, 1]}))
    with pytest.raises(UnknownNameError):
        ctrl.compute(state, ContactSchedule(contact_set=frozenset({"left_hand"})))


# ------------------------------------------------------------------------------------------------
# closed loop
# ------------------------------------------------------------------------------------------------
def test_g1_stands_in_mujoco(g1):
    """1 s of quiet standing in MuJoCo with the qp variant: the CoM stays within 1 mm of its start."""
    m = g1.mj_model
    d = g1.make_data("stand")
    ctrl = ContactProjectedID(g1, variant="qp")
    q, v = g1.mj_to_pin(d.qpos, d.qvel)
    ctrl.reset(RobotState(0.0, q, v))
    com0 = ctrl.com_task.target.copy()
    schedule = ContactSchedule(contact_set=BOTH)
    worst = 0.0
    for _ in range(int(1.0 / m.opt.timestep)):
        q, v = g1.mj_to_pin(d.qpos, d.qvel)
        cmd = ctrl.compute(RobotState(d.time, q, v), schedule)
        assert cmd.feasible
        d.ctrl[:] = cmd.torque_at(q[g1.converter.pin_qidx], v[g1.converter.pin_vidx])
        mujoco.mj_step(m, d)
        data = g1.pin_model.createData()
        worst = max(worst, np.linalg.norm(pin.centerOfMass(g1.pin_model, data, q) - com0))
    assert worst < 1e-3


def test_rank_deficient_factorisations_are_reported():
    """The Cholesky checks (tasks.check_cholesky) wherever a factor is made: an indefinite matrix
    (dpotrf fails) and a rank-deficient one that rounding leaves barely positive (tiny pivot) both
    raise with the matrix named; contact_projection does so for a contact Jacobian with a repeated
    row (J_c W^-1 J_c^T singular), by way of its one dposv call."""
    from wbsim.errors import WbsimError

    rng = np.random.default_rng(7)
    with pytest.raises(WbsimError, match="M is not symmetric positive definite"):
        T.cholesky(np.diag([1.0, -1.0, 2.0]), "M")
    Q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    near = Q @ np.diag([1.0, 2.0, 3.0, 1e-15]) @ Q.T  # one eigenvalue far below the pivot test
    # rounding decides which check trips (a tiny pivot, or dpotrf's failure): both name A
    with pytest.raises(WbsimError, match=r"A is (\(numerically\) singular|not symmetric positive)"):
        T.cholesky(near, "A")
    L = T.cholesky(near + np.eye(4), "A")  # well conditioned: the factor
    L = np.tril(L)  # dpotrf leaves the upper triangle as it was
    np.testing.assert_allclose(L @ L.T, near + np.eye(4), atol=1e-12)
    nv = 8
    B = rng.normal(size=(nv, nv))
    W = B @ B.T + nv * np.eye(nv)
    Jc = rng.normal(size=(3, nv))
    cpid.contact_projection(Jc, np.zeros(3), W)  # full row rank: fine
    Jc_bad = np.vstack([Jc, Jc[1]])  # a repeated contact row
    with pytest.raises(WbsimError, match=r"J_c W\^-1 J_c\^T"):
        cpid.contact_projection(Jc_bad, np.zeros(4), W)


# ------------------------------------------------------------------------------------------------
# centroidal angular momentum task
# ------------------------------------------------------------------------------------------------
def test_angular_momentum_task_rows_are_the_centroidal_map_s(g1):
    """The task's Jacobian is the angular rows of ``A_G`` (``pin.computeCentroidalMap``), its
    drift and velocity those of ``pin.computeCentroidalMomentumTimeVariation``
    (``h_G' = A_G a + A_G' v``, any ``a``), its law first order in ``L``; the snapshot's data is
    left alone."""
    model = g1.pin_model
    rng = np.random.default_rng(3)
    q, v = random_state(g1, rng)
    a = rng.normal(size=model.nv)
    s = T.compute_snapshot(model, model.createData(), q, v)
    M_before = s.data.M.copy()
    task = T.CentroidalAngularMomentumTask(model, (2.0, 0.8, 3.0))
    Ag = pin.computeCentroidalMap(model, model.createData(), q)
    d = model.createData()
    pin.computeCentroidalMomentumTimeVariation(model, d, q, v, a)
    np.testing.assert_allclose(task.jacobian(s), Ag[3:6], atol=1e-12)
    np.testing.assert_allclose(task.velocity(s), d.hg.angular, atol=1e-10)
    np.testing.assert_allclose(task.jacobian(s) @ a + task.drift(s), d.dhg.angular, atol=1e-9)
    np.testing.assert_array_equal(s.data.M, M_before)
    L_ref, rate = np.array([1.0, -2.0, 0.5]), np.array([-3.0, 4.0, 0.0])
    task.set_target(L_ref, rate)
    rows = task.rows(s)
    np.testing.assert_allclose(rows.error, L_ref - d.hg.angular, atol=1e-10)
    np.testing.assert_allclose(
        rows.acceleration, rate + task.gains.kd * (L_ref - d.hg.angular), atol=1e-9
    )
    assert rows.weight == 3.0
    with pytest.raises(WbsimError, match="target"):
        task.set_target(np.array([np.nan, 0.0, 0.0]))


@pytest.mark.parametrize("fast", [True, False], ids=["kernel", "readable"])
def test_angular_momentum_task_gets_the_rate_it_asks_for(g1, fast):
    """In double support the solved ``qdd`` gives ``L' = A_G qdd + A_G' v`` (Pinocchio,
    independent of the controller) of the commanded sign on the commanded axis, about the
    rate asked for; without the task (weight 0, the default) there is no such task and ``L'``
    is near 0."""
    model = g1.pin_model
    q0, v0 = g1.pose_q("stand"), np.zeros(model.nv)
    rate = np.array([-20.0, 0.0, 0.0])
    sched = ContactSchedule(BOTH, targets={"angular_momentum_rate": rate})
    got = {}
    for weight in (0.0, 10.0):
        ctrl = ContactProjectedID(g1, fast=fast, gains={"angular_momentum": (2.0, 1.0, weight)})
        ctrl.reset(RobotState(0.0, q0, v0))
        cmd = ctrl.compute(RobotState(0.0, q0, v0), sched)
        assert cmd.feasible
        assert ("angular_momentum" in cmd.info["task_errors"]) == (weight > 0)
        d = model.createData()
        pin.computeCentroidalMomentumTimeVariation(model, d, q0, v0, cmd.info["qdd"])
        got[weight] = np.array(d.dhg.angular)
    assert np.abs(got[0.0]).max() < 1.0
    assert got[10.0][0] == pytest.approx(rate[0], rel=0.25)
    assert np.abs(got[10.0][1:]).max() < 2.0


def test_angular_momentum_gains_are_validated(g1):
    with pytest.raises(WbsimError, match="weight"):
        ContactProjectedID(g1, gains={"angular_momentum": (2.0, 1.0, -1.0)})
    with pytest.raises(WbsimError, match="frequency"):
        ContactProjectedID(g1, gains={"angular_momentum": (0.0, 1.0, 1.0)})
    assert ContactProjectedID(g1).gains.angular_momentum is None  # from the reference
    # text that was not JSON on the command line: named as such, not split into characters
    with pytest.raises(WbsimError, match=r"expected a mapping .* got str"):
        ContactProjectedID(g1, gains="{angular_momentum: [2, 1, 0.3]}")
    with pytest.raises(WbsimError, match=r"from 2; expected \[frequency_hz, damping_ratio"):
        ContactProjectedID(g1, gains={"angular_momentum": 2})


@pytest.mark.parametrize("fast", [True, False], ids=["kernel", "readable"])
def test_the_momentum_task_joins_when_the_reference_gives_l(g1, fast):
    """``gains.angular_momentum`` unset: no task while the schedule gives no ``L`` (standing:
    the command is that of weight 0, bit for bit); the first step that gives one adds the task
    with :data:`REFERENCE_MOMENTUM_GAINS` (the realised ``L'`` from Pinocchio turns towards the
    rate asked for), which stays until the next reset; weight 0 given: never."""
    from wbsim.controllers.contact_projected_id import REFERENCE_MOMENTUM_GAINS

    model = g1.pin_model
    q0, v0 = g1.pose_q("stand"), np.zeros(model.nv)
    state = RobotState(0.0, q0, v0)
    plain = ContactSchedule(BOTH)
    asking = ContactSchedule(BOTH, targets={"angular_momentum_rate": np.array([-20.0, 0, 0])})

    def rate(cmd):
        d = model.createData()
        pin.computeCentroidalMomentumTimeVariation(model, d, q0, v0, cmd.info["qdd"])
        return np.array(d.dhg.angular)

    auto = ContactProjectedID(g1, fast=fast)
    off = ContactProjectedID(g1, fast=fast, gains={"angular_momentum": (2.0, 1.0, 0.0)})
    for c in (auto, off):
        c.reset(state)
    a, o = auto.compute(state, plain), off.compute(state, plain)
    assert "angular_momentum" not in a.info["task_errors"]
    np.testing.assert_array_equal(a.tau, o.tau)
    a, o = auto.compute(state, asking), off.compute(state, asking)
    assert "angular_momentum" in a.info["task_errors"]
    assert "angular_momentum" not in o.info["task_errors"]
    assert auto.momentum_task.gains == REFERENCE_MOMENTUM_GAINS
    assert rate(a)[0] < -1.0 and abs(rate(o)[0]) < 1.0  # weight 0.3 against the other tasks
    assert "angular_momentum" in auto.compute(state, plain).info["task_errors"]  # it stays
    auto.reset(state)
    assert "angular_momentum" not in auto.compute(state, plain).info["task_errors"]
