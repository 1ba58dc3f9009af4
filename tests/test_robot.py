"""The foundation: MuJoCo and Pinocchio models of the same robot agree, poses are sane, bad input fails
clearly."""

import json

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from conftest import random_state

import wbsim
from wbsim.contacts import convex_hull, point_in_polygon
from wbsim.envs import make_humanoid
from wbsim.errors import NoFeetError, RobotLoadError, UnknownNameError
from wbsim.robot_config import ROBOTS
from wbsim.rollout import EpisodeConfig, run_episode


def _mj_mass_and_bias(robot, q, v):
    m = robot.mj_model
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = robot.pin_to_mj(q, v)
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)  # MuJoCo 4.x signature: (model, data, dst)
    return d, M, d.qfrc_bias.copy()


@pytest.mark.parametrize("name", ["g1", "talos"])
def test_mass_matrix_and_bias_agree(name):
    """50 random states: M and the bias forces agree to 1e-8 relative, Tdot v term included."""
    robot = wbsim.load_robot(name)
    pm, pd = robot.pin_model, robot.pin_model.createData()
    rng = np.random.default_rng(10)
    worst_M = worst_b = 0.0
    for _ in range(50):
        q, v = random_state(robot, rng)
        _, M_mj, b_mj = _mj_mass_and_bias(robot, q, v)
        M_pin = pin.crba(pm, pd, q)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        b_pin = pin.nonLinearEffects(pm, pd, q, v)
        conv = robot.converter
        worst_M = max(
            worst_M, np.linalg.norm(conv.mj_matrix_to_pin(M_mj, q) - M_pin) / np.linalg.norm(M_pin)
        )
        worst_b = max(
            worst_b,
            np.linalg.norm(conv.mj_bias_to_pin(b_mj, M_mj, q, v) - b_pin) / np.linalg.norm(b_pin),
        )
    assert worst_M < 1e-8, worst_M
    assert worst_b < 1e-8, worst_b


def test_bias_needs_the_rotating_map_term(g1):
    """Without T^T M Tdot v the bias forces disagree when the base turns: the term is not decoration."""
    pm, pd = g1.pin_model, g1.pin_model.createData()
    q, v = random_state(g1, np.random.default_rng(11))
    _, _, b_mj = _mj_mass_and_bias(g1, q, v)
    b_pin = pin.nonLinearEffects(pm, pd, q, v)
    naive = g1.converter.mj_force_to_pin(b_mj, q)
    assert np.linalg.norm(naive - b_pin) / np.linalg.norm(b_pin) > 1e-3


@pytest.mark.parametrize("name", ["g1", "talos"])
def test_contact_points_and_jacobians_agree(name):
    robot = wbsim.load_robot(name)
    m, pm, pd = robot.mj_model, robot.pin_model, robot.pin_model.createData()
    rng = np.random.default_rng(12)
    for _ in range(20):
        q, v = random_state(robot, rng)
        d, _, _ = _mj_mass_and_bias(robot, q, v)
        pin.computeJointJacobians(pm, pd, q)
        pin.updateFramePlacements(pm, pd)
        T = robot.converter.velocity_map(q)
        for foot in robot.feet.values():
            for site, frame in zip(foot.mj_site_ids, foot.pin_point_frame_ids):
                assert np.max(np.abs(d.site_xpos[site] - pd.oMf[frame].translation)) < 1e-9
                jacp = np.zeros((3, m.nv))
                mujoco.mj_jacSite(m, d, jacp, None, site)
                J_pin = pin.getFrameJacobian(pm, pd, frame, pin.LOCAL_WORLD_ALIGNED)[:3]
                assert np.max(np.abs(jacp @ T - J_pin)) < 1e-9
            # the contact sphere sits right above its point
            for geom, site in zip(foot.mj_geom_ids, foot.mj_site_ids):
                R = d.xmat[foot.mj_body_id].reshape(3, 3)
                expect = d.site_xpos[site] + R[:, 2] * foot.sphere_radius
                assert np.allclose(d.geom_xpos[geom], expect, atol=1e-12)


def test_total_mass_agrees(robot):
    assert abs(robot.mj_model.body_mass.sum() - robot.total_mass) < 1e-9
    assert robot.total_mass > 20


def test_stand_pose_on_the_floor(robot):
    d = robot.make_data("stand")
    pts = np.array([d.site_xpos[s] for f in robot.feet.values() for s in f.mj_site_ids])
    assert np.max(np.abs(pts[:, 2])) < 5e-4
    com = d.subtree_com[0]
    assert point_in_polygon(convex_hull(pts[:, :2]), com[:2], margin=0.01)
    # knees bent
    knee = [n for n in robot.joint_names if "knee" in n or "leg_left_4" in n]
    assert knee and all(robot.pose("stand").joints[k] > 0.3 for k in knee)


def _touching_in_mujoco(robot, q):
    """``(n,)`` for each sole point (feet in order, then corners): Pinocchio puts it on the floor
    at ``q`` (to 1 nm), and whether MuJoCo has a contact of its sphere after ``mj_forward``."""
    model, data = robot.pin_model, robot.pin_model.createData()
    pin.framesForwardKinematics(model, data, q)
    d = mujoco.MjData(robot.mj_model)
    d.qpos[:] = robot.pin_to_mj(q)[0]
    mujoco.mj_forward(robot.mj_model, d)
    in_contact = set(d.contact.geom[: d.ncon].ravel().tolist())
    feet = robot.feet.values()
    placed = [abs(data.oMf[i].translation[2]) < 1e-9 for f in feet for i in f.pin_point_frame_ids]
    touching = [g in in_contact for f in feet for g in f.mj_geom_ids]
    return np.array(placed), np.array(touching)


@pytest.mark.parametrize("name", sorted(ROBOTS))
def test_mujoco_finds_the_soles_on_the_floor_at_reset(name):
    """Every sole point that the stand pose, or ``on_floor`` from 1 cm up, puts on the floor
    (Pinocchio, to 1 nm: all of them on a flat-footed robot, the lower edge of Talos's tilted
    soles) touches it in MuJoCo at once, and after the env's reset its contact sensor carries
    load. Round-off between the two kinematics (~1e-14 m) once left iCub's, Romeo's and the G1
    with hands' soles just above the floor; they landed one step later, and a stand run logged
    two contact switches at t = 2 ms."""
    env = make_humanoid("wbsim/G1Stand-v0", robot=name)
    env.reset(seed=0)
    robot, s = env.robot, env.sensing
    placed, touching = _touching_in_mujoco(robot, env.q_reference)
    assert placed.all() if name != "talos" else placed.sum() == 4
    assert touching[placed].all()
    sensed = [s.index(n) for f in robot.feet.values() for n in f.point_names]
    found, loaded, gap = s.found[sensed], s.loaded[sensed], s.gap[sensed]
    assert found[placed].all() and loaded[placed].all() and (gap[placed] <= 0).all()
    raised = env.q_reference.copy()
    raised[2] += 0.01
    placed, touching = _touching_in_mujoco(robot, robot.on_floor(raised))
    assert placed.sum() >= 4 and touching[placed].all()

    summary = run_episode(
        EpisodeConfig(
            controller="gravity_qp", seconds=0.02, progress=False, env_options={"robot": name}
        )
    )
    assert summary["events"]["mode_switch"] == 0


def test_drop_from_5cm_with_zero_torque(robot):
    m = robot.mj_model
    d = robot.make_data("stand")
    d.qpos[2] += 0.05
    worst = 0.0
    for _ in range(int(2.0 / m.opt.timestep)):
        mujoco.mj_step(m, d)
        assert np.all(np.isfinite(d.qpos))
        for f in robot.feet.values():
            worst = min(worst, min(d.site_xpos[s][2] for s in f.mj_site_ids))
    assert worst > -5e-3, worst


def test_model_details(g1):
    m = g1.mj_model
    assert g1.n_joints == 29 and m.nu == 29
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert m.opt.timestep == pytest.approx(0.002)
    for i, name in enumerate(g1.joint_names):
        assert m.actuator(i).name == name
        jid = m.actuator_trnid[i, 0]
        assert m.joint(jid).name == name
        assert m.actuator_forcerange[i, 1] == pytest.approx(g1.effort_limits[i])
        assert m.actuator_forcelimited[i] and not m.actuator_ctrllimited[i]
        assert m.actuator_biastype[i] == mujoco.mjtBias.mjBIAS_AFFINE
        assert m.dof_armature[m.jnt_dofadr[jid]] == pytest.approx(0.01)
        assert m.dof_damping[m.jnt_dofadr[jid]] == pytest.approx(0.5)
    assert set(g1.feet) == {"left_foot", "right_foot"}
    assert g1.foot("left_foot").points_in_foot.shape == (4, 3)


def test_other_bodies_collide_with_floor_not_each_other(g1):
    m = g1.mj_model
    sole = {g for f in g1.feet.values() for g in f.mj_geom_ids}
    colliders = [g for g in range(m.ngeom) if m.geom_contype[g] or m.geom_conaffinity[g]]
    others = [g for g in colliders if g not in sole and g != g1.floor_geom_id]
    assert others, "no geometry to detect a fall with"
    for g in others:  # collides with floor, not with robot
        assert m.geom_contype[g] & m.geom_conaffinity[g1.floor_geom_id]
        assert not (m.geom_contype[g] & m.geom_conaffinity[g])


def test_models_are_independent_copies(g1):
    other = wbsim.load_robot("g1")
    other.mj_model.opt.timestep = 0.01
    assert g1.mj_model.opt.timestep == pytest.approx(0.002)


# -- bad input -------------------------------------------------------------------------------------
def test_unknown_robot_lists_known():
    with pytest.raises(UnknownNameError) as exc:
        wbsim.load_robot("r2d2")
    assert "g1" in str(exc.value) and "talos" in str(exc.value)


def test_missing_file_names_the_path(tmp_path):
    path = tmp_path / "nope.urdf"
    with pytest.raises(RobotLoadError, match="nope.urdf"):
        wbsim.load_robot(path)


def test_urdf_without_feet_loads_and_feet_raise(tmp_path):
    urdf = tmp_path / "two_links.urdf"
    urdf.write_text("""<robot name="two_links">
  <link name="base"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision></link>
  <link name="arm"><inertial><origin xyz="0 0 0.2"/><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
</robot>""")
    robot = wbsim.load_robot(urdf)
    assert robot.joint_names == ("shoulder",)
    assert robot.total_mass == pytest.approx(3.0)
    assert not robot.has_feet
    with pytest.raises(NoFeetError, match="no feet"):
        _ = robot.feet


def test_config_with_unknown_key_is_rejected(tmp_path):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"name": "x", "description": "x.urdf", "fete": {}}))
    with pytest.raises(wbsim.WbsimError, match="fete"):
        wbsim.RobotConfig.from_json(cfg)


def test_unknown_pose_lists_known(g1):
    with pytest.raises(UnknownNameError, match="stand"):
        g1.pose("sit")


def test_robot_descriptions_offline_is_clear(tmp_path, monkeypatch):
    """robot_descriptions clones on first use: offline and uncached, the error says so and names the
    cache. The test neither reaches the network nor writes into the user's home: an empty cache in
    tmp_path, and git allowed no transport but local files (it refuses https before connecting)."""
    import sys

    monkeypatch.setenv("ROBOT_DESCRIPTIONS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file")
    monkeypatch.delitem(sys.modules, "robot_descriptions.g1_description", raising=False)
    with pytest.raises(RobotLoadError, match="not in robot_descriptions' cache") as info:
        wbsim.load_robot("g1_description")
    assert str(tmp_path / "cache") in str(info.value)
    assert not any((tmp_path / "cache").rglob("*.urdf"))
