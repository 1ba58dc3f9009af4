"""The walking pattern generator against the linear inverted pendulum's closed forms and an ODE
solver, and the whole-body reference it builds (wbsim.planning.walking, wbsim.reference)."""

import itertools
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from wbsim.errors import UnknownNameError, WbsimError
from wbsim.planning.walking import (
    LipmTrajectory,
    WalkingParameters,
    lipm_omega,
    plan_footsteps,
    plan_walk,
    swing_profile,
)
from wbsim.reference import ContactPhase, WholeBodyReference

G = 9.81
# the G1 at rest on its stand pose (what the env's reset context holds)
COM = np.array([0.0234, 0.0, 0.6664])
EYE = np.eye(3)
FEET = {
    "left_foot": (np.array([-0.0015, 0.1185, 0.035]), EYE),
    "right_foot": (np.array([-0.0015, -0.1185, 0.035]), EYE),
}
SOLES = {"left_foot": np.array([0.0335, 0.1185]), "right_foot": np.array([0.0335, -0.1185])}
MASS = 33.34
# sole corners in the foot frame (x forward, y left), m
CORNERS = np.array([[0.12, 0.03], [-0.05, 0.025], [-0.05, -0.025], [0.12, -0.03]])


def _walk(**kw):
    speed = kw.pop("speed", None)
    params = (
        WalkingParameters.from_speed(speed, **kw) if speed is not None else WalkingParameters(**kw)
    )
    return params, plan_walk(params, COM, FEET, SOLES, mass=MASS, gravity=G)


def _zmp_of(ref, t):
    """The planned ZMP at ``t`` by linear interpolation of the reference's samples."""
    return np.array([np.interp(t, ref.times, ref.zmp[:, k]) for k in range(2)])


@pytest.mark.parametrize(
    "kw",
    [
        {"step_length": 0.0},
        {"speed": 0.2, "zmp_travel": 0.04},
        {"speed": 0.3, "zmp_inward": 0.01, "double_support": 0.3},
    ],
)
def test_com_solves_the_lipm(kw):
    """Over every step period, an ODE solver integrating ``cdd = omega^2 (c - p)`` from the plan's
    CoM and velocity at the period's start, with the plan's ZMP, lands on the plan's CoM; in each
    single support with a fixed ZMP the CoM is the closed form
    ``p + (c0 - p) cosh(w t) + cd0 / w sinh(w t)``."""
    _, ref = _walk(n_steps=6, **kw)
    w = lipm_omega(COM[2], G)
    knots = np.unique(
        np.concatenate(
            [
                [0.0],
                [s.lift_time for s in ref.footsteps],
                [s.land_time for s in ref.footsteps],
                [ref.duration],
            ]
        )
    )
    for t0, t1 in itertools.pairwise(knots):
        i0 = int(np.argmin(np.abs(ref.times - t0)))
        c0, v0 = ref.com[i0, :2], ref.com_velocity[i0, :2]
        t0 = ref.times[i0]

        def rhs(t, y):
            return np.concatenate([y[2:], w * w * (y[:2] - _zmp_of(ref, t))])

        sol = solve_ivp(
            rhs,
            (t0, t1),
            np.concatenate([c0, v0]),
            rtol=1e-10,
            atol=1e-12,
            dense_output=True,
            max_step=0.005,
        )
        sel = (ref.times >= t0) & (ref.times <= t1)
        y = sol.sol(ref.times[sel])
        np.testing.assert_allclose(ref.com[sel, :2], y[:2].T, atol=2e-6)
        np.testing.assert_allclose(ref.com_velocity[sel, :2], y[2:].T, atol=2e-5)
    if kw.get("zmp_travel", 0.0) == 0.0:
        for st in ref.footsteps:
            sel = (ref.times >= st.lift_time) & (ref.times <= st.land_time)
            i0 = np.flatnonzero(sel)[0]
            tau = ref.times[sel] - ref.times[i0]
            p = ref.zmp[i0, :2]
            c0, v0 = ref.com[i0, :2], ref.com_velocity[i0, :2]
            closed = p + np.outer(np.cosh(w * tau), c0 - p) + np.outer(np.sinh(w * tau), v0) / w
            np.testing.assert_allclose(ref.com[sel, :2], closed, atol=1e-9)


def test_lipm_identities_and_rest_at_both_ends():
    """DCM ``xi = c + cd / w``, ZMP ``p = c - cdd / w^2`` at every sample; the walk starts at rest
    (c = c0, cd = 0, cdd = 0) and ends at rest between the soles; CoM, velocity and acceleration are
    continuous (finite differences match the planned derivatives)."""
    params, ref = _walk(speed=0.2, n_steps=5)
    w = lipm_omega(COM[2], G)
    c, cd, cdd = ref.com[:, :2], ref.com_velocity[:, :2], ref.com_acceleration[:, :2]
    np.testing.assert_allclose(ref.dcm[:, :2], c + cd / w, atol=1e-12)
    np.testing.assert_allclose(ref.zmp[:, :2], c - cdd / w**2, atol=1e-12)
    np.testing.assert_allclose(c[0], COM[:2], atol=1e-12)
    np.testing.assert_allclose(cd[0], 0.0, atol=1e-12)
    np.testing.assert_allclose(cdd[0], 0.0, atol=1e-12)
    last = ref.footsteps[-1]
    middle = 0.5 * (last.position[:2] + ref.footsteps[-2].position[:2]) + np.array([0.035, 0.0])
    np.testing.assert_allclose(ref.zmp[-1, :2], middle, atol=1e-12)
    assert np.linalg.norm(c[-1] - middle) < 5e-3 and np.linalg.norm(cd[-1]) < 2e-2
    dt = params.sample_dt
    np.testing.assert_allclose(np.gradient(c, dt, axis=0)[1:-1], cd[1:-1], atol=2e-4)
    # the acceleration has kinks where the ZMP's slope changes: compare away from them
    kinks = np.array(
        [0.4, 0.8]
        + [t for s in ref.footsteps for t in (s.lift_time, s.land_time)]
        + [ref.footsteps[-1].land_time + params.final_double_support]
    )
    away = np.min(np.abs(ref.times[:, None] - kinks[None, :]), axis=1) > 1.5 * dt
    away[[0, -1]] = False
    np.testing.assert_allclose(np.gradient(cd, dt, axis=0)[away], cdd[away], atol=1e-4)
    # no jump in acceleration: per sample it changes at most by the jerk w^2 (cd - pd) allows
    zmp_rate = np.abs(np.diff(ref.zmp[:, :2], axis=0)).max() / dt
    assert np.abs(np.diff(cdd, axis=0)).max() <= w * w * (np.abs(cd).max() + zmp_rate) * dt
    np.testing.assert_allclose(ref.com[:, 2], COM[2])


def test_lipm_segments_against_hand_solved_case():
    """One linear ZMP segment then a fixed ZMP: the DCM at 0 equals the backward formula, the
    CoM at the knot equals the closed form of ``cd = w (xi - c)`` solved by hand."""
    w, T = 3.0, 0.5
    p0, p1 = np.array([0.0, 0.0]), np.array([0.1, -0.05])
    lipm = LipmTrajectory([0.0, T], np.array([p0, p1]), w, np.array([0.02, 0.01]))
    b = (p1 - p0) / T
    xi0 = p0 + b / w + (p1 - p1 - b / w) * math.exp(-w * T)  # xi(T) = p1 at the end
    np.testing.assert_allclose(lipm.knot_dcm[0], xi0, atol=1e-14)
    # c(t) = p(t) + A/2 e^{w(t-T)} + C e^{-wt}, A = -b/w; check the ODE numerically instead
    sol = solve_ivp(
        lambda t, c: w * (lipm.evaluate([t])["dcm"][0] - c),
        (0, T),
        [0.02, 0.01],
        rtol=1e-11,
        atol=1e-13,
    )
    np.testing.assert_allclose(lipm.knot_com[1], sol.y[:, -1], atol=1e-9)


def test_footsteps():
    params = WalkingParameters(step_length=0.15, n_steps=5)
    steps = plan_footsteps(params, FEET)
    assert [s.foot for s in steps] == [
        "right_foot",
        "left_foot",
        "right_foot",
        "left_foot",
        "right_foot",
    ]
    mid_x = -0.0015
    np.testing.assert_allclose(
        [s.position[0] - mid_x for s in steps], [0.15, 0.30, 0.45, 0.60, 0.60], atol=1e-12
    )
    np.testing.assert_allclose(
        [s.position[1] for s in steps], [-0.1185, 0.1185, -0.1185, 0.1185, -0.1185], atol=1e-12
    )
    np.testing.assert_allclose(np.diff([s.lift_time for s in steps]), params.step_period)
    np.testing.assert_allclose([s.land_time - s.lift_time for s in steps], params.single_support)
    inplace = plan_footsteps(WalkingParameters(n_steps=4), FEET)
    for s in inplace:
        np.testing.assert_allclose(s.position, FEET[s.foot][0])
    wide = plan_footsteps(WalkingParameters(n_steps=2, step_width=0.3), FEET)
    assert wide[0].position[1] == pytest.approx(-0.15) and wide[1].position[1] == pytest.approx(
        0.15
    )


def test_swing_profile_and_feet():
    up = swing_profile(0.04, 0.6, 0.02)
    s = np.linspace(0.0, 1.0, 100001)
    assert up(0.0) == pytest.approx(0.0, abs=1e-15) and up(1.0) == pytest.approx(0.0, abs=1e-14)
    assert up(s).max() == pytest.approx(0.04, rel=1e-6)
    assert up.deriv(1)(0.0) == pytest.approx(0.0, abs=1e-14)
    assert up.deriv(2)(0.0) == pytest.approx(0.0, abs=1e-13)
    assert up.deriv(1)(1.0) / 0.6 == pytest.approx(-0.02)
    assert up.deriv(2)(1.0) == pytest.approx(0.0, abs=1e-12)  # no braking at the last moment
    assert up(s[1:-1]).min() > 0.0
    params, ref = _walk(speed=0.2, n_steps=4, clearance=0.04)
    for st in ref.footsteps:
        k = ref.foot_names.index(st.foot)
        sel = (ref.times > st.lift_time) & (ref.times < st.land_time)
        z = ref.foot_position[sel, k, 2] - FEET[st.foot][0][2]
        assert z.min() > -1e-12 and z.max() == pytest.approx(0.04, abs=1e-4)
        after = ref.times >= st.land_time
        np.testing.assert_allclose(ref.foot_position[after, k][0], st.position, atol=1e-12)
        # planned velocity and acceleration are the derivatives of the planned position
        dt = params.sample_dt
        np.testing.assert_allclose(
            np.gradient(ref.foot_position[sel, k], dt, axis=0)[1:-1],
            ref.foot_velocity[sel, k][1:-1],
            atol=1e-3,
        )
        # the stance foot does not move
        other = 1 - k
        assert np.ptp(ref.foot_position[sel, other], axis=0).max() == 0.0


def _inside(point, foot_pos, margin=1e-9):
    rel = point - foot_pos[:2]
    hull = CORNERS  # the G1's sole is a trapezoid: inside if on the inner side of each edge
    for a, b in zip(hull, np.roll(hull, -1, axis=0)):
        e = b - a
        if e[0] * (rel[1] - a[1]) - e[1] * (rel[0] - a[0]) > margin:  # clockwise hull: right side
            return False
    return True


@pytest.mark.parametrize("speed", [0.0, 0.2, 0.3])
def test_planned_zmp_inside_the_planned_support(speed):
    """The planned ZMP lies on the stance sole in single support and in the hull of both soles in
    double support; the feed-forward foot wrenches sum to ``m (cdd + g)`` with their centre of
    pressure at the planned ZMP."""
    from wbsim.contacts import convex_hull, point_in_polygon

    _, ref = _walk(speed=speed, n_steps=6, zmp_travel=0.04 if speed else 0.0)
    for n, t in enumerate(ref.times):
        cs = ref.contact_set(t)
        p = ref.zmp[n, :2]
        soles = [
            ref.foot_position[n, k, :2] + CORNERS for k, f in enumerate(ref.foot_names) if f in cs
        ]
        assert point_in_polygon(convex_hull(np.vstack(soles)), p, -1e-9), (t, p)
        w = ref.foot_wrench[n]
        total = w[:, :3].sum(axis=0)
        np.testing.assert_allclose(total, MASS * (ref.com_acceleration[n] + [0, 0, G]), atol=1e-9)
        moment = sum(w[k, 3:] + np.cross(ref.foot_position[n, k], w[k, :3]) for k in range(2))
        cop = np.array([-moment[1], moment[0]]) / total[2]  # on the floor, z = 0
        np.testing.assert_allclose(cop, p, atol=1e-9)
        for k, f in enumerate(ref.foot_names):
            if f not in cs:
                assert np.all(w[k] == 0.0)


def test_reference_schedule_and_errors():
    params, ref = _walk(speed=0.2, n_steps=3)
    s = ref.schedule(0.5)
    assert s.contact_set == {"left_foot", "right_foot"} and s.next_contact_set == {"left_foot"}
    assert s.phase == "initial_shift" and s.phase_duration == pytest.approx(0.8)
    assert set(s.targets) >= {
        "com",
        "com_velocity",
        "com_acceleration",
        "base_orientation",
        "left_foot",
        "right_foot_orientation",
        "zmp",
        "dcm",
        "right_foot_landing",
        "landing_time",
        "left_foot_wrench",
        "angular_momentum",
        "angular_momentum_rate",
    }
    # the LIPM's point mass has no angular momentum about the CoM: asked of the whole body
    for key in ("angular_momentum", "angular_momentum_rate"):
        assert np.array_equal(s.targets[key], np.zeros(3))
    s = ref.schedule(1.0)
    assert s.phase == "swing_right_foot" and s.phase_time == pytest.approx(0.2)
    assert s.targets["landing_time"][0] == pytest.approx(1.3)
    last = ref.schedule(100.0)
    assert last.phase == "stand" and math.isinf(last.phase_duration)
    assert "landing_time" not in last.targets
    assert [round(t, 6) for t, _, _ in ref.switch_times()] == [0.8, 1.3, 1.7, 2.2, 2.6, 3.1]
    # interpolation between two samples, and rotations stay rotations
    t = 1.0 + 0.3 * params.sample_dt
    i = int(np.searchsorted(ref.times, t)) - 1
    a = (t - ref.times[i]) / params.sample_dt
    np.testing.assert_allclose(ref.targets(t)["com"], (1 - a) * ref.com[i] + a * ref.com[i + 1])
    with pytest.raises(WbsimError, match="com must be"):
        WholeBodyReference(
            ref.times,
            ref.com[:-1],
            ref.com_velocity,
            ref.com_acceleration,
            ref.base_rotation,
            ref.foot_names,
            ref.foot_position,
            ref.foot_velocity,
            ref.foot_acceleration,
            ref.foot_rotation,
            ref.phases,
        )
    with pytest.raises(UnknownNameError, match="left_foot"):
        WholeBodyReference(
            ref.times,
            ref.com,
            ref.com_velocity,
            ref.com_acceleration,
            ref.base_rotation,
            ref.foot_names,
            ref.foot_position,
            ref.foot_velocity,
            ref.foot_acceleration,
            ref.foot_rotation,
            (ContactPhase(0.0, frozenset({"hand"})),),
        )
    with pytest.raises(WbsimError, match="rotations"):
        WholeBodyReference(
            ref.times,
            ref.com,
            ref.com_velocity,
            ref.com_acceleration,
            2 * ref.base_rotation,
            ref.foot_names,
            ref.foot_position,
            ref.foot_velocity,
            ref.foot_acceleration,
            ref.foot_rotation,
            ref.phases,
        )
    with pytest.raises(UnknownNameError, match="right_foot"):
        WalkingParameters(first_swing="tail")
    with pytest.raises(WbsimError, match="single_support"):
        WalkingParameters(single_support=0.0)


def test_the_gait_envs_momentum_reference():
    """The walking plans give the LIPM's angular momentum (0) unless told not to: TalosWalk-v0
    does not (Talos walks better without projected_id's momentum task, docs/locomotion.md)."""
    from wbsim.envs import make

    for env_id, given in (
        ("wbsim/G1Walk-v0", True),
        ("wbsim/TalosStepInPlace-v0", True),
        ("wbsim/TalosWalk-v0", False),
    ):
        env = make(env_id)
        env.reset(seed=0)
        targets = env.unwrapped.schedule().targets
        assert ("angular_momentum" in targets) == given, env_id
        assert ("angular_momentum_rate" in targets) == given, env_id
        env.close()
