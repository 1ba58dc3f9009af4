"""The friction a controller assumes (``wbsim.controllers.friction``): the rows against each cone's
own definition, against MuJoCo's cones (a box pushed at the rows' edge), and the simulator's ``mu``
and cone as a state carries them."""

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from wbsim.controllers.friction import (
    CONE_ROWS,
    FRICTION_MARGIN,
    SIMULATOR_CONES,
    ContactFriction,
    check_friction_option,
    cone_rows,
    simulator_friction,
    stacked_cone_rows,
)
from wbsim.errors import UnknownNameError, WbsimError


def _inside(f_local, mu, f_min, cone):
    """Each cone, written from its definition in the contact frame."""
    fx, fy, fn = f_local
    if cone == "pyramidal":
        return fn >= f_min and abs(fx) + abs(fy) <= mu * fn
    m = mu / np.sqrt(2.0)
    return fn >= f_min and abs(fx) <= m * fn and abs(fy) <= m * fn


@pytest.mark.parametrize("cone", ["pyramidal", "inscribed_pyramid"])
def test_rows_are_the_cone_in_the_contact_frame(cone):
    rng = np.random.default_rng(0)
    mu, f_min = 0.7, 5.0
    R = pin.rpy.rpyToMatrix(0.3, -0.2, 1.1)  # a tilted, yawed contact frame
    C, d = cone_rows(mu, R, f_min, cone)
    C0, d0 = cone_rows(mu, None, f_min, cone)
    assert C.shape == (5, 3) and d.shape == (5,) and len(CONE_ROWS) == 5
    n_in = 0
    for _ in range(2000):
        f_local = rng.normal(size=3) * [30.0, 30.0, 40.0] + [0.0, 0.0, 20.0]
        inside = _inside(f_local, mu, f_min, cone)
        n_in += inside
        assert bool(np.all(C @ (R @ f_local) <= d + 1e-12)) == inside
        assert bool(np.all(C0 @ f_local <= d0 + 1e-12)) == inside
        if inside:  # inside Coulomb's cone too
            assert np.hypot(f_local[0], f_local[1]) <= mu * f_local[2] + 1e-12
    assert 200 < n_in < 1800
    assert d[0] == -f_min and not np.signbit(cone_rows(mu)[1][0])  # +0.0 for f_min = 0
    # where each touches Coulomb's circle: the pyramid on the axes, the square on the diagonals
    m = mu / np.sqrt(2.0)
    touch = [mu, 0.0, 1.0] if cone == "pyramidal" else [m, m, 1.0]
    assert np.isclose(np.hypot(*touch[:2]), mu) and np.isclose((C0 @ touch).max(), 0.0)


def test_wrench_rows_ignore_the_moment_and_stack_block_diagonally():
    R = np.stack([pin.rpy.rpyToMatrix(0.0, 0.0, 0.5), pin.rpy.rpyToMatrix(0.1, 0.2, -0.4)])
    C6, _ = cone_rows(0.5, R[0], dim=6)
    assert np.array_equal(C6[:, :3], cone_rows(0.5, R[0])[0]) and not C6[:, 3:].any()
    C, d = stacked_cone_rows(2, [0.5, 0.3], R, 1.0, dim=6)
    assert C.shape == (10, 12) and d.shape == (10,)
    assert np.array_equal(C[:5, :6], cone_rows(0.5, R[0], 1.0, dim=6)[0])
    assert np.array_equal(C[5:, 6:], cone_rows(0.3, R[1], 1.0, dim=6)[0])
    assert not C[:5, 6:].any() and not C[5:, :6].any()


def test_bad_arguments_raise():
    with pytest.raises(UnknownNameError):
        cone_rows(0.7, cone="elliptic")  # a simulator's cone, not a linearisation
    with pytest.raises(WbsimError):
        cone_rows(0.0)
    with pytest.raises(WbsimError):
        cone_rows(0.7, min_normal_force=-1.0)
    with pytest.raises(UnknownNameError, match="pyramidal"):
        simulator_friction(None, "conical", ("left_foot",), ContactFriction({}, "pyramidal"))


def test_simulator_friction_takes_the_state_s_then_the_model_s():
    fallback = ContactFriction({"left_foot": 1.0, "right_foot": 0.8}, "pyramidal")
    feet = ("left_foot", "right_foot")
    got = simulator_friction({"left_foot": 0.5, "right_foot": 0.4}, "elliptic", feet, fallback)
    assert got.cone == "inscribed_pyramid" and SIMULATOR_CONES["elliptic"] == got.cone
    assert got.mu == pytest.approx(
        {"left_foot": 0.5 * FRICTION_MARGIN, "right_foot": 0.4 * FRICTION_MARGIN}
    )
    got = simulator_friction(None, None, feet, fallback, margin=0.5)
    assert got == ({"left_foot": 0.5, "right_foot": 0.4}, "pyramidal")
    got = simulator_friction(
        {"left_foot": 0.5, "right_foot": 0.4}, None, feet, fallback, mu=0.3, margin=0.9
    )
    assert got.mu == {"left_foot": 0.3, "right_foot": 0.3}  # the user's cap
    got = simulator_friction(
        {"left_foot": 0.5, "right_foot": 0.2}, None, feet, fallback, mu=0.3, margin=0.9
    )
    assert got.mu == pytest.approx({"left_foot": 0.3, "right_foot": 0.18})  # never above MuJoCo's


def test_a_mu_mujoco_cannot_realise_is_refused(g1):
    """``mu=1.0`` on floors of mu 1 (MuJoCo's default) used to be taken silently; it is above what
    sticks (the margin's 0.7), so the controller refuses it, naming the largest valid value."""
    from wbsim.controllers.gravity_qp import GravityCompensationError, GravityCompensationQP

    model = ContactFriction({"left_foot": 1.0, "right_foot": 0.6}, "pyramidal")
    check_friction_option(0.54, 0.9, model)
    check_friction_option(None, 0.9, model)
    with pytest.raises(WbsimError, match=r"mu = 0.6: .*\(0, 0.54\].*right_foot mu 0.6"):
        check_friction_option(0.6, 0.9, model)
    for margin in (0.0, 1.5, "x"):
        with pytest.raises(WbsimError, match="friction_margin"):
            check_friction_option(None, margin, model)
    with pytest.raises(GravityCompensationError, match=r"\(0, 0.7\]"):
        GravityCompensationQP(g1, mu=1.0)
    assert GravityCompensationQP(g1, mu=0.6).friction().mu == {"left_foot": 0.6, "right_foot": 0.6}


# ------------------------------------------------------------------------------------------------
# against MuJoCo: a box pushed at the edge of the rows
# ------------------------------------------------------------------------------------------------
BOX = """<mujoco><option timestep="0.002" cone="{cone}"/><worldbody>
  <geom name="floor" type="plane" size="5 5 .1" friction="{mu} 0.005 0.0001"/>
  <body pos="0 0 0.1"><freejoint/><geom type="box" size=".1 .1 .1" mass="10"/></body>
</worldbody></mujoco>"""


def _box_speed(cone: str, mu: float, push: np.ndarray) -> float:
    """Horizontal speed (m/s) of a 10 kg box on the floor (friction ``mu``, MuJoCo's ``cone``)
    over 0.5 s, after 1 s under the horizontal force ``push`` (N) at its centre."""
    m = mujoco.MjModel.from_xml_string(BOX.format(cone=cone, mu=mu))
    d = mujoco.MjData(m)
    d.xfrc_applied[1, :3] = push
    mujoco.mj_step(m, d, 500)
    start = d.qpos[:2].copy()
    mujoco.mj_step(m, d, 250)
    return float(np.linalg.norm(d.qpos[:2] - start)) / 0.5


def _edge(C: np.ndarray, d: np.ndarray, direction: np.ndarray, fn: float) -> float:
    """The largest ``s`` with ``C [s u; fn] <= d`` (the rows' edge along the unit ``u``)."""
    a, b = C[1:, :2] @ direction, d[1:] - C[1:, 2] * fn
    return float(np.min(b[a > 0] / a[a > 0]))


@pytest.mark.parametrize("simulator_cone", ["pyramidal", "elliptic"])
def test_forces_at_the_rows_edge_do_not_slide_in_mujoco(simulator_cone):
    """In every direction, the friction force at the edge of the rows a controller uses for
    MuJoCo's cone (:func:`simulator_friction`: its mu times the margin) holds a box that MuJoCo
    pushes with it (it creeps, as MuJoCo's soft friction does, under 3 cm/s). The pyramid
    inscribed in Coulomb's circle does not fit MuJoCo's pyramidal cone: at the square's corner
    (mu / sqrt(2), mu / sqrt(2)), outside MuJoCo's diamond, the box slides away."""
    mu, weight = 0.8, 10 * 9.81
    friction = simulator_friction(
        None, simulator_cone, ("foot",), ContactFriction({"foot": mu}, "pyramidal")
    )
    C, d = cone_rows(friction.mu["foot"], None, 0.0, friction.cone)
    for angle in np.linspace(0.0, np.pi / 2, 7):  # the cones' symmetry does the rest
        u = np.array([np.cos(angle), np.sin(angle)])
        push = np.append(-_edge(C, d, u, weight) * u, 0.0)  # friction on the box balances it
        assert _box_speed(simulator_cone, mu, push) < 0.03, (simulator_cone, angle)
    if simulator_cone == "pyramidal":
        C, d = cone_rows(mu, None, 0.0, "inscribed_pyramid")
        u = np.array([1.0, 1.0]) / np.sqrt(2.0)
        assert _box_speed("pyramidal", mu, np.append(-_edge(C, d, u, weight) * u, 0.0)) > 1.0


def test_a_state_carries_the_friction_mujoco_uses_now(g1):
    """``Simulation.state()`` gives the ``mu`` MuJoCo applies to each foot now (priorities, values
    changed at run time) and its cone; the controllers read it from there."""
    from wbsim.sim import Simulation

    sim = Simulation(g1)
    sim.reset(g1.pose_q(), np.random.default_rng(0))
    state = sim.state()
    assert state.friction == {"left_foot": 1.0, "right_foot": 1.0} and state.cone == "pyramidal"
    m = sim.model  # the robot's (shared): put it back after
    left = list(g1.feet["left_foot"].mj_geom_ids)
    saved = m.geom_friction.copy(), m.geom_priority.copy(), int(m.opt.cone)
    try:
        m.geom_friction[left[1:], 0] = 0.3
        m.geom_priority[left[1:]] = 1  # the points' friction wins over the floor's
        m.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        sim.step(np.zeros(g1.n_joints))
        state = sim.state()
    finally:
        m.geom_friction[:], m.geom_priority[:], m.opt.cone = saved
    assert state.friction == pytest.approx({"left_foot": 0.3, "right_foot": 1.0})
    assert state.cone == "elliptic"
