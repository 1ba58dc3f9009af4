"""adam's CasADi kinematics of the G1 against Pinocchio (wbsim.load_robot's model) at random
states: sole points, CoM, centroidal momentum to 1e-9."""

import numpy as np
import pytest

pytest.importorskip("casadi")
pytest.importorskip("adam")

from wbsim.planning.kinematics import (
    adam_urdf_text,
    load_kinematics,
    pinocchio_reference,
    quat_to_rot,
)


@pytest.fixture(scope="module")
def kin(g1):
    return load_kinematics(g1)


def test_same_joints_and_mass_as_the_robot(kin, g1):
    assert kin.joint_names == g1.joint_names and kin.n_joints == 29
    assert kin.mass == pytest.approx(g1.total_mass, rel=1e-12)
    assert kin.point_names == g1.contact_point_names


def test_points_com_and_momentum_match_pinocchio(kin, g1):
    rng = np.random.default_rng(7)
    lo, hi = g1.joint_limits.T
    worst = np.zeros(3)
    for _ in range(10):
        p_B = rng.normal(size=3)
        rho = rng.normal(size=4)
        rho /= np.linalg.norm(rho)
        s = rng.uniform(lo, hi)
        v_B, omega, s_dot = rng.normal(size=3), rng.normal(size=3), rng.normal(size=29)
        ref = pinocchio_reference(g1, p_B, rho, s, v_B, omega, s_dot)
        P = np.array(kin.feet(p_B, rho, s)[0]).T
        x = np.array(kin.com(p_B, rho, s)).ravel()
        h = np.array(kin.momentum(p_B, rho, s, v_B, omega, s_dot)).ravel()
        worst = np.maximum(
            worst,
            [
                np.abs(P - ref["points"]).max(),
                np.abs(x - ref["com"]).max(),
                np.abs(h - ref["h"]).max(),
            ],
        )
    assert worst[0] < 1e-9 and worst[1] < 1e-9 and worst[2] < 1e-9, worst


def test_momentum_is_the_one_of_the_velocity_convention(kin, g1):
    """A pure base translation at v: h = [m v, 0] (checks the world-frame linear velocity)."""
    s = np.zeros(29)
    rho = np.array([np.cos(0.4), 0.0, 0.0, np.sin(0.4)])  # yawed base: local != world
    h = np.array(kin.momentum([0, 0, 1], rho, s, [0.3, -0.2, 0.1], [0, 0, 0], np.zeros(29)))
    np.testing.assert_allclose(
        h.ravel(), [kin.mass * 0.3, -kin.mass * 0.2, kin.mass * 0.1, 0, 0, 0], atol=1e-10
    )


def test_quaternion_matrix_and_urdf_fix():
    import pinocchio as pin

    rho = np.array([0.3, -0.5, 0.2, 0.7])
    rho /= np.linalg.norm(rho)
    R = pin.Quaternion(rho[0], rho[1], rho[2], rho[3]).toRotationMatrix()
    np.testing.assert_allclose(quat_to_rot(rho), R, atol=1e-14)
    text = (
        '<robot name="r"><link name="world"/><joint name="fb" type="floating"><parent '
        'link="world"/><child link="a"/></joint><link name="a"/><joint name="j" type="fixed">'
        '<parent link="a"/><child link="b"/></joint><link name="b"/></robot>'
    )
    fixed = adam_urdf_text(text)
    assert "world" not in fixed and "floating" not in fixed
    assert '<joint name="j" type="fixed"><origin xyz="0 0 0" rpy="0 0 0"/>' in fixed
