"""push_step (wbsim.controllers.push_stepping): the support-polygon test, the step trigger on the
capture point, the stepping foot chosen by the push's side, the landing beyond the capture point,
and a forward push the standing controller falls to, recovered by a step."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wbsim.controllers import STANDING, RobotState, make_controller
from wbsim.controllers.push_stepping import PushStepping, polygon_exit
from wbsim.errors import WbsimError


def test_polygon_exit_is_signed_distance_to_the_edges():
    square = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=float)
    assert polygon_exit(np.array([0.5, 0.5]), square) == pytest.approx(-0.5)
    assert polygon_exit(np.array([0.9, 0.5]), square) == pytest.approx(-0.1)
    assert polygon_exit(np.array([1.3, 0.5]), square) == pytest.approx(0.3)
    assert polygon_exit(np.array([0.5, -0.2]), square) == pytest.approx(0.2)


def _state(g1, vel):
    q, v = g1.pose_q("stand"), np.zeros(g1.pin_model.nv)
    v[:2] = vel  # floating base linear velocity (the root joint's, ~ the CoM's at rest)
    return RobotState(0.0, q, v)


def _pushed(g1, vel, **options):
    ctrl = PushStepping(g1, **options)
    ctrl.reset(_state(g1, (0.0, 0.0)))
    cmd = ctrl.compute(_state(g1, vel), STANDING)
    return ctrl, cmd


def test_at_rest_no_step_and_capture_point_is_the_com(g1):
    ctrl, cmd = _pushed(g1, (0.0, 0.0))
    assert ctrl.mode == "stand" and ctrl.steps == []
    assert np.all(np.isfinite(cmd.tau))
    c, _, _ = ctrl._measure(_state(g1, (0.0, 0.0)))
    np.testing.assert_allclose(cmd.info["capture_point"], c[:2], atol=1e-9)


@pytest.mark.parametrize(
    "vel, foot",
    [
        ((0.0, 0.7), "left_foot"),
        ((0.0, -0.7), "right_foot"),
        ((0.5, 0.2), "left_foot"),
        ((-0.5, -0.2), "right_foot"),
    ],
)
def test_capture_point_outside_the_feet_starts_a_step_on_its_side(g1, vel, foot):
    ctrl, cmd = _pushed(g1, vel)
    assert ctrl.mode == "shift" and ctrl.swing_foot == foot
    # the shift hands the swing foot's load over: the schedule the whole-body controller got
    # keeps both feet now and only the stance foot next
    assert len(ctrl.steps) == 1 and ctrl.steps[0]["foot"] == foot
    assert np.all(np.isfinite(cmd.tau))


def test_landing_lies_beyond_the_capture_point_within_reach(g1):
    ctrl, _ = _pushed(g1, (0.0, 0.7), land_offset=0.05, lateral_offset=0.0)
    c, cd, feet = ctrl._measure(_state(g1, (0.0, 0.7)))
    xi = c[:2] + cd[:2] / ctrl.omega
    stance = feet["right_foot"].translation[:2]
    # ZMP on the stance foot: the capture point runs away from it until the touch-down
    target = ctrl._landing(0.0, xi, stance.copy(), feet)
    xi_T = stance + (xi - stance) * math.exp(ctrl.omega * (ctrl.shift_time + ctrl._T))
    sole = target + (feet["left_foot"].rotation @ ctrl._sole["left_foot"])[:2]
    width = ctrl.crouch_step_width  # a sideways push: the crouched reach
    assert sole[1] == pytest.approx(
        min(xi_T[1] + 0.05, stance[1] + width + ctrl._sole["left_foot"][1]), abs=0.02
    )
    assert sole[1] > xi[1]
    assert ctrl.min_step_width - 1e-9 <= target[1] - stance[1] <= width + 1e-9
    assert abs(target[0] - stance[0]) <= ctrl.max_step_length + 1e-9


def test_a_sideways_step_beyond_the_standing_reach_crouches_and_widens_it(g1):
    """A capture point far out to the left: the first step's landing lies beyond
    ``max_step_width``, so the CoM height target drops by ``crouch`` over 0.3 s and the step may
    land ``crouch_step_width`` across. Not for a step within the standing reach, a push ahead or
    diagonal (outside ``cmp_cone``; the diagonal one's step lands beyond 0.75 m too) or
    ``crouch`` 0."""
    far = np.array([0.0, 5.0])  # a landing far out to the left: clipped to the reach

    def width(ctrl):
        stance = ctrl._measure(_state(g1, (0.0, 0.0)))[2]["right_foot"]
        landing = ctrl._reachable(stance.translation[:2] + far, stance, "left_foot")
        return float(landing[1] - stance.translation[1])

    side, _ = _pushed(g1, (0.0, 1.6))  # (during the shift the ZMP may still use both feet)
    t0 = side._crouch_at
    assert side._sideways and t0 == side.steps[0]["at"]
    assert side._height(t0 + 0.3)[0] == pytest.approx(side._z - side.crouch)
    assert side.crouch == pytest.approx(0.12) and width(side) == pytest.approx(0.85)
    cases = (((0.0, 0.55), {}), ((0.9, 0.0), {}), ((1.2, 1.2), {}), ((0.0, 1.6), {"crouch": 0.0}))
    for vel, options in cases:
        ctrl, _ = _pushed(g1, vel, **options)
        assert ctrl.steps and ctrl._crouch_at is None, (vel, options)
        assert ctrl._height(1.0)[0] == ctrl._z and width(ctrl) == pytest.approx(0.75)
    with pytest.raises(WbsimError, match="crouch_step_width"):
        PushStepping(g1, crouch_step_width=0.1)


def test_a_sideways_push_beyond_the_standing_reach_is_recovered_crouched():
    """30 N s to the left (above the ladder's 26.58 N s before the crouch): recovered with the
    crouch, lost without it (the grid at 90 / 270 deg, docs/locomotion.md)."""
    from wbsim.pushtest import PushTestConfig, _trial

    impulse, angle = 30.0, math.pi / 2
    crouched = _trial(PushTestConfig(controller="push_step"), angle, impulse)
    upright = PushTestConfig(controller="push_step", controller_options={"crouch": 0.0})
    assert crouched["survived"] and not _trial(upright, angle, impulse)["survived"]


def test_land_offset_ahead_moves_only_landings_ahead_of_the_stance_foot(g1):
    """``land_offset_ahead`` replaces ``land_offset`` for a landing ahead of the stance foot
    only: a forward step's target moves forward by about the difference (along the step; its
    lateral part may be clipped to the step box), a backward one's not at all."""
    for vel, ahead in (((0.6, 0.0), True), ((-0.6, 0.0), False)):
        a, _ = _pushed(g1, vel, land_offset=0.03, land_offset_ahead=0.03)
        b, _ = _pushed(g1, vel, land_offset=0.03, land_offset_ahead=0.08)
        assert a.mode == b.mode == "shift"
        moved = b._target - a._target
        if ahead:
            assert 0.04 <= moved[0] <= 0.05 + 1e-9
        else:
            np.testing.assert_allclose(moved, 0.0, atol=1e-9)


def test_diagonal_land_offset_moves_only_landings_after_a_diagonal_push(g1):
    """A capture point leaving at 45 deg ahead makes the episode diagonal (``diagonal_cone``):
    its landing ahead lies ``diagonal_land_offset`` beyond the predicted capture point instead of
    ``land_offset_ahead``; after a push straight ahead or sideways the option changes nothing."""
    for vel, diagonal in (((0.5, 0.5), True), ((0.6, 0.0), False), ((0.0, 0.7), False)):
        a, _ = _pushed(g1, vel, land_offset_ahead=0.03, diagonal_land_offset=0.03)
        b, _ = _pushed(g1, vel, land_offset_ahead=0.03, diagonal_land_offset=0.08)
        assert a.mode == b.mode == "shift" and a._diagonal == b._diagonal == diagonal, vel
        moved = float(np.linalg.norm(b._target - a._target))
        if diagonal:
            assert 0.03 <= moved <= 0.05 + 1e-9
        else:
            assert moved == pytest.approx(0.0, abs=1e-9)


def test_a_diagonal_push_at_twice_the_standing_figure_is_recovered():
    """30.38 N s at 45 deg (the ladder's rung at twice projected_id's 15.19 N s): recovered with
    the diagonal push's own landing offset and ZMP margin, lost without them (``None``: the
    ``land_offset_ahead`` and ``zmp_margin`` of every push; the ladder's figure was 24.05)."""
    from wbsim.pushtest import PushTestConfig, _trial

    impulse, angle = 30.375, math.pi / 4
    diagonal = _trial(PushTestConfig(controller="push_step"), angle, impulse)
    off = {"diagonal_land_offset": None, "diagonal_zmp_margin": None}
    plain = PushTestConfig(controller="push_step", controller_options=off)
    assert diagonal["survived"] and not _trial(plain, angle, impulse)["survived"]


def test_out_of_range_options_raise(g1):
    with pytest.raises(WbsimError, match="single_support"):
        PushStepping(g1, single_support=0.0)
    with pytest.raises(WbsimError, match="max_step_width"):
        PushStepping(g1, min_step_width=0.3, max_step_width=0.2)
    with pytest.raises(WbsimError, match="diagonal_cone"):
        PushStepping(g1, diagonal_cone=50.0)


def test_follow_options_are_validated(g1):
    with pytest.raises(WbsimError, match="follow_height"):
        PushStepping(g1, follow_height=-0.01)
    with pytest.raises(WbsimError, match="follow_width"):
        PushStepping(g1, follow_width=0.8)


def test_sideways_push_is_recovered_with_a_follow_step():
    """21 N s to the left: the first step lands ~0.75 m out, the roll over it lifts the right
    foot; without the follow step (``follow_height=0``) the robot falls (the full protocol's
    grid at 90 deg, docs/locomotion.md)."""
    from wbsim.pushtest import PushTestConfig, _trial

    impulse, angle = 21.0, math.pi / 2
    # without the momentum layer and the crouch (cmp_reach 0, crouch 0; with the momentum
    # layer 21 N s needs no follow step; with the crouch but no momentum layer it falls)
    before = {"cmp_reach": 0.0, "crouch": 0.0}
    follow = _trial(
        PushTestConfig(controller="push_step", controller_options=before), angle, impulse
    )
    off = PushTestConfig(
        controller="push_step", controller_options={**before, "follow_height": 0.0}
    )
    assert follow["survived"] and not _trial(off, angle, impulse)["survived"]


def test_registered_as_push_step(g1):
    assert isinstance(make_controller("push_step", g1), PushStepping)


def test_forward_push_the_standing_controller_falls_to_is_recovered_by_a_step():
    from wbsim.pushtest import PushTestConfig, _trial

    impulse, angle = 20.25, 0.0  # the full protocol's result forward (videos/pushtest_g1.png)
    stand = _trial(PushTestConfig(controller="projected_id", at=1.5), angle, impulse)
    step = _trial(PushTestConfig(controller="push_step", at=1.5), angle, impulse)
    assert not stand["survived"] and step["survived"]


def test_the_upper_body_may_lean_unless_told_otherwise(g1):
    """push_step's whole-body controller has no upright-torso task by default (its compliance
    lets the upper body lean; with the task, the forward push above fells the robot); a
    ``gains`` option sets it."""
    assert PushStepping(g1).wbc.gains.torso_orientation.weight == 0.0
    wbc = PushStepping(g1, wbc_options={"gains": {"torso_orientation": (2.0, 1.0, 5.0)}}).wbc
    assert wbc.gains.torso_orientation.weight == 5.0


def test_momentum_options_are_validated(g1):
    assert PushStepping(g1, cmp_reach=0.0).wbc.gains.angular_momentum.weight == 0.0
    with pytest.raises(WbsimError, match="cmp_reach"):
        PushStepping(g1, cmp_reach=-0.01)
    with pytest.raises(WbsimError, match="momentum_return"):
        PushStepping(g1, cmp_reach=0.05, momentum_return=0.0)
    with pytest.raises(WbsimError, match="angular_momentum"):
        PushStepping(
            g1, cmp_reach=0.05, wbc_options={"gains": {"angular_momentum": (2.0, 1.0, 0.0)}}
        )
    assert PushStepping(g1, cmp_reach=0.05).wbc.gains.angular_momentum.weight > 0


def test_a_clipped_zmp_becomes_a_cmp_outside_the_feet(g1):
    """A capture point far out to the left: the ZMP is clipped at the feet's edge; with
    ``cmp_reach`` the plan asks for ``L'_xy = m g (-o_y, o_x)`` (``o`` the clipped part, at most
    ``cmp_reach``): ``L'_x < 0``, and the CoM acceleration target gains ``(e_z x L')_xy / (m z)
    = -g cmp_reach / z`` along y: the CMP lies ``cmp_reach`` beyond the same clipped ZMP."""
    vel, reach = (0.0, 0.9), 0.05
    off, cmd_off = _pushed(g1, vel, cmp_reach=0.0)
    on, cmd_on = _pushed(g1, vel, cmp_reach=reach)
    np.testing.assert_allclose(cmd_on.info["zmp_command"], cmd_off.info["zmp_command"], atol=1e-9)
    m, g, z = on._mass, on.g, on._z - on._floor
    rate = on.wbc.momentum_task.target_rate  # the clipped part points ~+y (the edge's normal)
    assert np.linalg.norm(rate) == pytest.approx(m * g * reach) and rate[2] == 0.0
    assert rate[0] < -0.95 * m * g * reach
    np.testing.assert_allclose(on.wbc.momentum_task.target, 0.0, atol=1e-12)  # nothing stored
    # the measured L is 0 (a pure translation), so L'_des = L'_ref
    cdd_on = on.wbc.com_task.target_acceleration
    cdd_off = off.wbc.com_task.target_acceleration
    np.testing.assert_allclose(
        cdd_on[:2] - cdd_off[:2], np.array([-rate[1], rate[0]]) / (m * z), rtol=1e-6, atol=1e-9
    )
    assert cdd_on[1] - cdd_off[1] < -0.95 * g * reach / z
    assert off.wbc.momentum_task is None  # cmp_reach 0: no task at all
    assert on._sideways and on.wbc.momentum_task.gains.weight > 0  # a sideways push: on


def test_the_momentum_layer_stays_off_for_a_push_outside_its_cone(g1):
    """A capture point straight ahead (outside ``cmp_cone`` of the lateral axis): the task's
    weight stays 0 and the command is that of ``cmp_reach`` 0."""
    vel = (0.9, 0.0)
    _, cmd_off = _pushed(g1, vel, cmp_reach=0.0)
    on, cmd_on = _pushed(g1, vel, cmp_reach=0.05)
    assert on._sideways is False and on.wbc.momentum_task.gains.weight == 0.0
    np.testing.assert_allclose(cmd_on.tau, cmd_off.tau, atol=1e-8)
    wide, _ = _pushed(g1, vel, cmp_reach=0.05, cmp_cone=180.0)
    assert wide._sideways and wide.wbc.momentum_task.gains.weight > 0
    with pytest.raises(WbsimError, match="cmp_cone"):
        PushStepping(g1, cmp_reach=0.05, cmp_cone=-1.0)
