"""projected_id following a whole-body reference: feed-forward accelerations, orientation and
posture targets, force feed-forward, the load ramps of a short double support, early
touch-downs; the readable path and the kernel alike. Independent references: Pinocchio's CoM
and frame accelerations of the commanded ``qdd`` (``centerOfMass`` / ``getFrameClassicalAcceleration``
at the command's acceleration), the least-norm distribution of a wrench solved by
``np.linalg.lstsq``."""

from __future__ import annotations

import json

import numpy as np
import pinocchio as pin
import pytest

from wbsim.controllers import ContactSchedule, RobotState
from wbsim.controllers.contact_projected_id import ContactProjectedID
from wbsim.errors import WbsimError
from wbsim.gait import IMPACT_WINDOW
from wbsim.rollout import EpisodeConfig, run_episode

BOTH = frozenset({"left_foot", "right_foot"})
LEFT = frozenset({"left_foot"})


def _at_rest(g1, **options):
    ctrl = ContactProjectedID(g1, **options)
    q, v = g1.pose_q("stand"), np.zeros(g1.pin_model.nv)
    ctrl.reset(RobotState(0.0, q, v))
    return ctrl, RobotState(0.0, q, v)


def _com_acceleration(g1, q, v, qdd):
    model = g1.pin_model
    data = model.createData()
    pin.centerOfMass(model, data, q, v, qdd)
    return data.acom[0].copy()


def _frame_acceleration(g1, q, v, qdd, frame):
    model = g1.pin_model
    data = model.createData()
    pin.forwardKinematics(model, data, q, v, qdd)
    pin.updateFramePlacements(model, data)
    return pin.getFrameClassicalAcceleration(model, data, frame, pin.LOCAL_WORLD_ALIGNED).vector


@pytest.mark.parametrize("fast", [True, False], ids=["kernel", "readable"])
def test_acceleration_feed_forward_reaches_the_com_and_the_swing_foot(g1, fast):
    """At zero error the commanded CoM and swing-foot accelerations are the feed-forward ones
    (the tasks' weights dominate the posture's): a CoM target of the current CoM with
    ``com_acceleration`` a gives ``cdd ~ a`` (Pinocchio, at the command's ``qdd``); without the
    feed-forward it stays near 0."""
    ctrl, state = _at_rest(g1, fast=fast)
    com = ctrl.com_task.target.copy()
    foot = ctrl._feet0["right_foot"][0].copy()
    a_com = np.array([0.3, -0.4, 0.0])
    a_foot = np.array([1.0, 0.0, 2.0])
    targets = {
        "com": com,
        "com_velocity": np.zeros(3),
        "com_acceleration": a_com,
        "right_foot": foot,
        "right_foot_velocity": np.zeros(3),
        "right_foot_acceleration": a_foot,
    }
    cmd = ctrl.compute(state, ContactSchedule(LEFT, LEFT, "swing", 1, 0.1, 0.5, targets))
    qdd = cmd.info["qdd_star"]
    # (the CoM and foot tasks share the stack by weight: a few cm/s^2 of crosstalk)
    assert np.allclose(_com_acceleration(g1, state.q, state.v, qdd), a_com, atol=0.05)
    fid = g1.feet["right_foot"].pin_frame_id
    assert np.allclose(_frame_acceleration(g1, state.q, state.v, qdd, fid)[:3], a_foot, atol=0.05)
    ctrl2, _ = _at_rest(g1, fast=fast)
    plain = {k: (np.zeros(3) if k.endswith("acceleration") else v) for k, v in targets.items()}
    cmd2 = ctrl2.compute(state, ContactSchedule(LEFT, LEFT, "swing", 1, 0.1, 0.5, plain))
    assert np.linalg.norm(_com_acceleration(g1, state.q, state.v, cmd2.info["qdd_star"])) < 0.06


def test_orientation_and_posture_targets_steer_the_tasks(g1):
    """``base_orientation``, ``<foot>_orientation`` and ``posture`` become the tasks' targets
    (their errors are the rotation / joint differences, computed here with ``pin.log3``);
    malformed ones raise naming the key."""
    ctrl, state = _at_rest(g1)
    R = pin.exp3(np.array([0.0, 0.0, 0.05])) @ ctrl._base_R0
    Rf = pin.exp3(np.array([0.0, 0.1, 0.0]))
    posture = ctrl._posture0 + 0.01
    targets = {
        "base_orientation": R,
        "right_foot_orientation": Rf,
        "posture": posture,
        "right_foot": ctrl._feet0["right_foot"][0],
    }
    cmd = ctrl.compute(state, ContactSchedule(LEFT, LEFT, "swing", 1, 0.1, 0.5, targets))
    err = cmd.info["task_errors"]
    assert err["base_orientation"] == pytest.approx(0.05, rel=1e-6)
    fid = g1.feet["right_foot"].pin_frame_id
    data = g1.pin_model.createData()
    pin.framesForwardKinematics(g1.pin_model, data, state.q)
    expected = np.linalg.norm(pin.log3(Rf @ data.oMf[fid].rotation.T))
    assert err["right_foot_orientation"] == pytest.approx(expected, rel=1e-9)
    assert err["posture"] == pytest.approx(0.01 * np.sqrt(g1.n_joints), rel=1e-9)
    for key, bad in (
        ("base_orientation", 2 * np.eye(3)),
        ("posture", np.zeros(3)),
        ("left_foot_wrench", np.zeros(5)),
    ):
        with pytest.raises(WbsimError, match=key):
            ctrl.compute(state, ContactSchedule(BOTH, targets={key: bad}))


def test_dynamic_com_reference_is_not_clamped_to_the_support(g1):
    """A CoM target outside the support polygon is clamped (a static reference), but not when
    the schedule gives its acceleration (a LIPM reference leaves the polygon by design)."""
    ctrl, state = _at_rest(g1)
    far = ctrl.com_task.target + np.array([0.0, -0.05, 0.0])
    cmd = ctrl.compute(state, ContactSchedule(LEFT, targets={"com": far}))
    assert cmd.fallback == "clamped_target"
    ctrl, state = _at_rest(g1)
    cmd = ctrl.compute(
        state, ContactSchedule(LEFT, targets={"com": far, "com_acceleration": np.zeros(3)})
    )
    assert "com_target_outside_support" not in cmd.info.get("event", "")
    assert np.allclose(ctrl.com_task.target, far)


@pytest.mark.parametrize("fast", [True, False], ids=["kernel", "readable"])
def test_force_feed_forward_pulls_the_forces_to_the_wrench_reference(g1, fast):
    """With a large force weight the QP's point forces approach the reference: each foot's wrench
    spread over its four points by least norm (recomputed with ``np.linalg.lstsq`` on the grasp
    map). The reference is a static split the robot at rest can realise (half the weight per
    foot, the left centre of pressure 3 cm behind the CoM, the right 3 cm ahead: the total under
    the CoM); without it the two centres of pressure stay level."""
    weight = g1.total_mass * 9.81
    cops = {}
    for ff in (True, False):
        ctrl, state = _at_rest(g1, fast=fast, force_weight=1e3, force_feedforward=ff)
        com = ctrl.com_task.target
        targets = {}
        for f, dx in (("left_foot", -0.03), ("right_foot", 0.03)):
            o = ctrl._feet0[f][0]
            cop = np.array([com[0] + dx, o[1], 0.0])
            force = np.array([0.0, 0.0, weight / 2])
            targets[f"{f}_wrench"] = np.r_[force, np.cross(cop - o, force)]
        cmd = ctrl.compute(state, ContactSchedule(BOTH, targets=dict(targets)))
        f = cmd.point_forces
        pts = ctrl.contact.point_positions
        cops[ff] = [
            float(
                pts[4 * k : 4 * k + 4, 0] @ f[4 * k : 4 * k + 4, 2] / f[4 * k : 4 * k + 4, 2].sum()
            )
            for k in range(2)
        ]
        if ff:
            G = ctrl.contact.grasp
            for k, name in enumerate(("left_foot", "right_foot")):
                Gk = G[6 * k : 6 * k + 6, 12 * k : 12 * k + 12]
                ref = np.linalg.lstsq(Gk, targets[f"{name}_wrench"], rcond=None)[0].reshape(4, 3)
                assert np.abs(f[4 * k : 4 * k + 4] - ref).max() < 1.0
    assert cops[True][1] - cops[True][0] == pytest.approx(0.06, abs=0.005)
    assert abs(cops[False][1] - cops[False][0]) < 0.01


def test_short_double_support_ramps_add_up_to_the_weight(g1):
    """In a 0.3 s double support (shorter than twice ``transition_time`` = 0.6 s) the landing
    foot's cap and the lifting foot's cap are ramps of half the phase: their sum never drops
    below the weight, so the exact QP stays feasible through the transfer; with the full 0.3 s
    ramps it would (0.2 s in: cap 0.67 m g + lifting cap < m g)."""
    ctrl, state = _at_rest(g1)
    ctrl.compute(state, ContactSchedule(LEFT, BOTH, "swing", 1, 0.5, 0.6))
    ctrl.compute(
        RobotState(0.1, state.q, state.v),
        ContactSchedule(BOTH, frozenset({"right_foot"}), "double_support", 2, 0.0, 0.3),
    )
    weight = g1.total_mass * 9.81
    for k in range(1, 30):
        t = 0.1 + 0.01 * k
        sched = ContactSchedule(BOTH, frozenset({"right_foot"}), "double_support", 2, 0.01 * k, 0.3)
        _, limits = ctrl._force_bounds(sched, t)
        caps = dict.fromkeys(ctrl._layout.feet, np.inf)
        if limits is not None:  # rows: a foot's summed normal forces (its 4 points, 12 columns)
            rows, values = limits
            caps.update(
                {
                    ctrl._layout.feet[int(np.flatnonzero(r)[0] // 12)]: c
                    for r, c in zip(rows, values)
                }
            )
        assert sum(min(c, weight) for c in caps.values()) >= weight - 1e-6, (t, caps)


def test_early_touchdown_is_latched_until_the_planned_landing(g1):
    """A swing foot sensed on the floor within ``early_touchdown`` of its planned landing joins
    the contact set and stays in it through a bounce; earlier, or with the option at 0, the
    schedule rules."""
    ctrl, state = _at_rest(g1)
    sched = ContactSchedule(LEFT, BOTH, "swing", 1, 0.47, 0.5)
    touching = RobotState(0.97, state.q, state.v, sensed_contacts=BOTH)
    bounced = RobotState(0.98, state.q, state.v, sensed_contacts=LEFT)
    assert ctrl.compute(touching, sched).contact_set == BOTH
    sched2 = ContactSchedule(LEFT, BOTH, "swing", 1, 0.48, 0.5)
    assert ctrl.compute(bounced, sched2).contact_set == BOTH
    early = ContactSchedule(LEFT, BOTH, "swing", 1, 0.40, 0.5)
    ctrl, state = _at_rest(g1)
    assert (
        ctrl.compute(RobotState(0.9, state.q, state.v, sensed_contacts=BOTH), early).contact_set
        == LEFT
    )
    ctrl, state = _at_rest(g1, early_touchdown=0.0)
    assert ctrl.compute(touching, sched).contact_set == LEFT


def test_torso_orientation_task_follows_the_base_target(g1):
    """The G1's torso link (``robot.config.torso``) has its own orientation task, whose target
    turns with the base's (its reset orientation relative to the base kept); weight 0 drops it."""
    ctrl, state = _at_rest(g1)
    assert ctrl.torso_task is not None
    assert g1.pin_model.frames[ctrl.torso_task.frame_id].name == g1.config.torso == "torso_link"
    R = pin.exp3(np.array([0.0, 0.0, 0.05])) @ ctrl._base_R0
    cmd = ctrl.compute(state, ContactSchedule(BOTH, targets={"base_orientation": R}))
    assert "torso_orientation" in cmd.info["task_errors"]
    assert np.allclose(ctrl.torso_task.target, R @ ctrl._torso_in_base0)
    # at rest the torso's error is the base's: both turned by the same 0.05 rad of yaw
    assert cmd.info["task_errors"]["torso_orientation"] == pytest.approx(0.05, rel=1e-6)
    off, _ = _at_rest(g1, gains={"torso_orientation": (2.0, 1.0, 0.0)})
    assert off.torso_task is None
    cmd = off.compute(state, ContactSchedule(BOTH, targets={"base_orientation": R}))
    assert "torso_orientation" not in cmd.info["task_errors"]


def test_walking_stance_heel_does_not_slide_after_lift_off(tmp_path):
    """G1Walk-v0 (0.2 m/s), 2.5 s: past the second lift-off (1.7 s). Without the torso task the
    waist pitched the torso back to keep the CoM on the LIPM while the swing leg accelerated; the
    stance foot's centre of pressure went to 1 cm of its toe edge, its heel slid (v_t f_t 4 W) and
    the exact QP went infeasible ~60 ms after each lift-off. Now: no slip over 1 W away from a
    touch-down (with the angular-momentum task the touch-downs slip at up to ~2.3 W, 15-25 ms
    after the landing), no solver failure after the reset's first 0.1 s."""
    s = run_episode(
        EpisodeConfig(
            env="wbsim/G1Walk-v0",
            controller="projected_id",
            seconds=2.5,
            progress=False,
            log=str(tmp_path / "run"),
        )
    )
    events = [
        json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()
    ]
    assert s["status"] == "completed"
    away = _slips_away_from_touchdowns(events)
    assert s["gait"]["slips_elsewhere"] == len(away)
    assert max((e["magnitude"] for e in away), default=0.0) < 1.0
    assert [e for e in events if e["kind"] == "planar_complementarity"]  # the impacts slip
    assert not [e for e in events if e["kind"] == "solver_failure" and e["t"] > 0.1]
    _assert_simulated_zmp_inside_the_planned_support(tmp_path / "run")


def _assert_simulated_zmp_inside_the_planned_support(run_dir):
    """The ZMP of the simulated contact forces (the centre of pressure of their normal
    components, from the sole points MuJoCo puts at each logged state) lies inside the support
    polygon of the feet planned in contact (scipy's convex hull of their sole points), at every
    step after the reset's first 0.1 s."""
    import mujoco
    from scipy.spatial import ConvexHull

    import wbsim
    from wbsim.episode_log import load_run

    run = load_run(run_dir)
    robot = wbsim.load_robot("g1")
    m, d = robot.mj_model, mujoco.MjData(robot.mj_model)
    _, qpos = run.prefixed("qpos/")
    points = robot.contact_point_names
    sites = [s for f in robot.foot_names for s in robot.contact(f).mj_site_ids]
    fz = np.stack([run[f"f_sim/{p}/z"] for p in points], axis=1)
    foot_of = {p: f for f in robot.foot_names for p in robot.foot(f).point_names}
    checked = 0
    for k in np.flatnonzero(run["t"] > 0.1):
        planned = [f for f in robot.foot_names if run[f"planned_{f}"][k] > 0.5]
        if not planned or fz[k].sum() < 1.0:
            continue
        d.qpos[:] = qpos[k - 1]  # the state the step began at: its contacts are the step's forces
        mujoco.mj_kinematics(m, d)
        xy = np.array([d.site_xpos[s][:2] for s in sites])
        zmp = fz[k] @ xy / fz[k].sum()
        support = np.array([xy[i] for i, p in enumerate(points) if foot_of[p] in planned])
        hull = ConvexHull(support)
        assert (hull.equations[:, :2] @ zmp + hull.equations[:, 2] <= 1e-3).all(), (k, zmp)
        checked += 1
    assert checked > 1000


@pytest.mark.slow
def test_walking_slips_only_at_impacts(tmp_path):
    """G1Walk-v0 as registered (0.2 m/s, MuJoCo's no-slip solver), 10 s, seed 1 with reset
    noise, projected_id with its defaults (the walking plan gives ``L = 0``, so the centroidal
    angular-momentum task is in the stack): every slip away from a touch-down is in the noisy
    reset's first 30 ms (without the task the stance foot's back outer point sits on the
    friction cone about once a step: 10 slides away from impacts; without the no-slip solver ~60
    creep episodes), and the walk is the same (>= 1.5 m, 21 planned switches sensed within 20
    ms, no force_sign)."""
    s = run_episode(
        EpisodeConfig(
            env="wbsim/G1Walk-v0",
            controller="projected_id",
            seconds=10.0,
            seed=1,
            progress=False,
            log=str(tmp_path / "run"),
            env_options={"reset_noise_scale": 0.02},
        )
    )
    assert s["status"] == "completed" and s["events"]["force_sign"] == 0
    assert s["feet_displacement_m"][0] > 1.5
    gait = s["gait"]
    assert gait["sensed_within_window"] == gait["planned_switches"] == 21
    events = [
        json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()
    ]
    away = [e["t"] for e in _slips_away_from_touchdowns(events)]
    assert gait["slips_elsewhere"] == len(away) and max(away, default=0.0) < 0.03, away


def _slips_away_from_touchdowns(events: list[dict]) -> list[dict]:
    """The ``planar_complementarity`` events of a log's ``events.jsonl`` outside
    :data:`IMPACT_WINDOW` of every simulated touch-down (``mode_switch`` make) of their foot."""
    makes: dict[str, list[float]] = {}
    for e in events:
        d = e["detail"]
        if e["kind"] == "mode_switch" and (d.get("source"), d.get("change")) == (
            "simulated",
            "make",
        ):
            makes.setdefault(e["where"], []).append(e["t"])
    lo, hi = IMPACT_WINDOW
    return [
        e
        for e in events
        if e["kind"] == "planar_complementarity"
        and not any(
            td - lo <= e["t"] <= td + hi for td in makes.get(e["where"].rsplit("_", 2)[0], [])
        )
    ]


@pytest.mark.slow
def test_talos_walks_with_the_g1s_plan_and_gains():
    """TalosWalk-v0 as registered (the G1's walking plan from Talos's feet and CoM, projected_id's
    defaults), 10 s, seed 0 with reset noise: no fall, >= 1.5 m with the feet < 10 cm off the
    line, 21 planned switches sensed within 20 ms, no force_sign."""
    s = run_episode(
        EpisodeConfig(
            env="wbsim/TalosWalk-v0",
            controller="projected_id",
            seconds=10.0,
            seed=0,
            progress=False,
            env_options={"reset_noise_scale": 0.02},
        )
    )
    assert s["status"] == "completed" and s["events"]["force_sign"] == 0
    dx, dy = s["feet_displacement_m"][:2]
    assert dx > 1.5 and abs(dy) < 0.1
    gait = s["gait"]
    assert gait["sensed_within_window"] == gait["planned_switches"] == 21
