"""The G1 one-leg scenario (``wbsim/G1OneLeg-v0``) with ``projected_id``: the issue's bars in closed
loop (qp), the pinv variant's pulling forces counted, bad input reported through the real loop, and
the contact-transition force bounds and joint-damping compensation of the controller checked
directly."""

import dataclasses

import numpy as np
import pinocchio as pin
import pytest

from wbsim.controllers.contact_projected_id import ContactProjectedID
from wbsim.envs.schedules import BOTH_FEET, PhasePlan, one_leg_plan
from wbsim.episode_log import load_run
from wbsim.rollout import EpisodeConfig, run_episode
from wbsim.types import ContactSchedule, RobotState

LEFT = frozenset({"left_foot"})
VIOLATIONS = (
    "force_sign",
    "friction_cone",
    "complementarity",
    "planar_complementarity",
    "contact_mismatch",
    "non_sole_contact",
    "fallback",
    "solver_failure",
)


def _events(run, kind):
    return [e for e in run.events if e["kind"] == kind]


def _first_step_of_phase(run, phase_index):
    """Step index (= row of the step table) of the first step of phase ``phase_index``."""
    rows = np.flatnonzero(run["phase_index"] == phase_index)
    assert rows.size, f"the run never reached phase {phase_index}"
    return int(rows[0])


# ------------------------------------------------------------------------------------------------
# the bars, closed loop
# ------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_one_leg_qp_meets_the_bars(tmp_path):
    s = run_episode(
        EpisodeConfig(
            env="wbsim/G1OneLeg-v0",
            controller="projected_id",
            controller_options={"variant": "qp"},
            seconds=7.5,
            log=tmp_path,
            progress=False,
        )
    )
    run = load_run(tmp_path)
    events = s["events"]
    listing = [(e["kind"], e["where"], round(e["t"], 3)) for e in run.events]
    # no fall, nothing but the soles on the floor, the whole episode
    assert s["status"] == "completed" and not s["fell"], s["stopped_reason"]
    assert s["seconds"] == pytest.approx(7.5, abs=0.003)
    assert events["non_sole_contact"] == 0 and not _events(run, "fall"), listing
    # CoM tracking < 2 cm RMS; recomputed from the step table as well
    assert s["com_tracking_rms_m"] < 0.02
    com = np.stack([run["com_x"], run["com_y"], run["com_z"]], axis=1)
    ref = np.stack([run["com_ref_x"], run["com_ref_y"], run["com_ref_z"]], axis=1)
    assert np.sqrt(np.mean(np.sum((com - ref) ** 2, axis=1))) == pytest.approx(
        s["com_tracking_rms_m"], rel=1e-9
    )
    # the right sole >= 4 cm above the floor during the hold (phase 3), also from the step table
    hold = run["phase_index"] == 3
    assert hold.sum() == 1000
    assert s["swing_clearance_min_hold_m"] >= 0.04
    assert run["sole_min_z_right_foot"][hold].min() == pytest.approx(
        s["swing_clearance_min_hold_m"]
    )
    assert s["swing_clearance_max_m"] >= s["swing_clearance_min_hold_m"]
    # exactly 4 contact-mode switches: the planned ones (assumed) and the right foot's sensed
    # lift-off and touch-down (simulated), each within 20 ms of the plan
    planned = one_leg_plan().switch_times(7.5)
    assert [(t, sorted(b), sorted(a)) for t, b, a in planned] == [
        (2.5, sorted(BOTH_FEET), ["left_foot"]),
        (6.5, ["left_foot"], sorted(BOTH_FEET)),
    ]
    switches = _events(run, "mode_switch")
    assert events["mode_switch"] == 4 and len(switches) == 4, listing
    for source in ("assumed", "simulated"):
        mine = sorted(
            (e for e in switches if e["detail"]["source"] == source), key=lambda e: e["t"]
        )
        assert [(e["where"], e["detail"]["change"]) for e in mine] == [
            ("right_foot", "break"),
            ("right_foot", "make"),
        ], (source, listing)
        for e, (t_plan, _, _) in zip(mine, planned):
            assert abs(e["t"] - t_plan) <= 0.020, (source, e["t"], t_plan)
    # the foot really is unloaded at the planned lift: the simulated right-sole load in the last
    # step before it is below the sensing threshold of each of its 4 points
    names, f_sim = run.prefixed("f_sim/right_foot")
    fz = f_sim[:, [i for i, n in enumerate(names) if n.endswith("/z")]].sum(axis=1)
    last_double = _first_step_of_phase(run, 2) - 1
    assert fz[last_double] < 4 * 0.5
    # no commanded pull, and no other violation at all
    assert events["force_sign"] == 0
    assert {k: events[k] for k in VIOLATIONS if events[k]} == {}, listing


@pytest.mark.slow
def test_one_leg_pinv_runs_or_falls_cleanly_and_counts_pulling(tmp_path):
    """The pinv variant has no unilateral constraint: its pulling commands are counted
    (``force_sign``), whatever their number; the run ends normally, completed or fallen."""
    s = run_episode(
        EpisodeConfig(
            env="wbsim/G1OneLeg-v0",
            controller="projected_id",
            controller_options={"variant": "pinv"},
            seconds=7.5,
            log=tmp_path,
            progress=False,
        )
    )
    run = load_run(tmp_path)
    assert s["status"] == ("fell" if s["fell"] else "completed")
    assert isinstance(s["events"]["force_sign"], int)
    assert s["events"]["force_sign"] == len(_events(run, "force_sign"))
    assert s["diagnostics"]["steps_in_violation"]["force_sign"] >= s["events"]["force_sign"]
    for e in _events(run, "force_sign"):
        assert (
            e["detail"]["commanded_normal_force"] < -0.01 and e["detail"]["source"] == "commanded"
        )
    if s["fell"]:
        (fall,) = _events(run, "fall")
        assert fall["step"] == s["steps"] - 1 and s["stopped_reason"].startswith("fell at")
        # the loop's own events have the detector's fields, t at the step's start
        assert set(fall) == set(_events(run, "force_sign")[0])
        assert fall["t"] == pytest.approx(fall["step"] * 0.002) and fall["n_steps"] == 1
    else:
        assert s["steps"] == 3750


# ------------------------------------------------------------------------------------------------
# bad input through the real loop: reported with its step, a safe command, no exception
# ------------------------------------------------------------------------------------------------
class _Plan(str):
    """A plan factory for ``env_options={"plan": ...}`` that ``config.json`` can store: the rollout
    writes ``env_options`` to the log's config with ``json``, which cannot store a function, so the
    factory is a callable ``str`` (its text names the scenario)."""

    def __new__(cls, name, factory):
        obj = super().__new__(cls, name)
        obj.factory = factory
        return obj

    def __call__(self):
        return self.factory()


def _replace_phase(plan_factory, index, **changes):
    def factory():
        plan = plan_factory()
        phases = list(plan.phases)
        phases[index] = dataclasses.replace(phases[index], **changes)
        return PhasePlan(phases)

    return factory


def _taus(robot, run, step):
    return np.array([run[f"tau/{j}"][step] for j in robot.joint_names])


@pytest.mark.parametrize(
    "offset, fallback, word",
    [
        ((0.0, 0.0, 1.0), "relaxed_qp", "exact_qp_infeasible"),
        ((0.0, -1.0, 0.0), "clamped_target", "right_foot_target_out_of_reach"),
    ],
)
def test_unreachable_swing_target_is_reported_with_a_safe_command(
    tmp_path, g1, offset, fallback, word
):
    """The right foot's target moved by ``offset`` (m) from its rest place from the lift on.

    * 1 m up: 0.35 m above the hip, inside the leg-length sphere the controller checks, so it is
      not clamped; the swing task then asks for far more than the stance foot and the torque limits
      allow, the exact QP is infeasible and the command is the relaxed QP's (``relaxed_qp``).
    * 1 m sideways: beyond the leg's length from the hip: clamped onto that sphere
      (``clamped_target``, status ``right_foot_target_out_of_reach``).

    Either way the command is reported (``fallback`` and ``solver_failure`` events) from the first
    step of the lift, with finite torques within the limits, and the episode goes on.
    """

    def moved(s, c):
        return c["right_foot"] + np.array(offset)

    lift = one_leg_plan().phases[2]
    assert lift.name == "lift"
    plan = _Plan(
        f"one_leg_plan, right_foot target moved by {offset} m from the lift on",
        _replace_phase(one_leg_plan, 2, targets={**lift.targets, "right_foot": moved}),
    )
    s = run_episode(
        EpisodeConfig(
            env="wbsim/G1OneLeg-v0",
            controller="projected_id",
            controller_options={"variant": "qp"},
            seconds=2.6,
            log=tmp_path,
            progress=False,
            env_options={"plan": plan},
        )
    )
    run = load_run(tmp_path)
    assert s["status"] == ("fell" if s["fell"] else "completed")  # ran to its end, no exception
    lift = _first_step_of_phase(run, 2)
    assert abs(lift - 1250) <= 1  # t = 2.5 s, up to the rounding of the accumulated time
    reported = [e for e in _events(run, "fallback") if e["where"] == fallback]
    assert reported and reported[0]["step"] == lift, run.events
    assert word in reported[0]["detail"]["status"]
    failures = [e for e in _events(run, "solver_failure") if e["step"] == lift]
    assert failures and failures[0]["detail"]["fallback"] == fallback
    assert not [
        e for e in run.events if e["kind"] in ("fallback", "solver_failure") and e["step"] < lift
    ]
    for step in range(lift, run.steps.shape[0]):
        tau = _taus(g1, run, step)
        assert np.all(np.isfinite(tau)) and np.all(np.abs(tau) <= g1.effort_limits * (1 + 1e-6))


def test_infeasible_contact_sets_are_reported_with_a_safe_command(tmp_path, g1):
    """Two contact sets the exact QP cannot serve, each from the first step of its phase:

    * the left foot alone while the CoM is between the feet (target check off, so the CoM target is
      not clamped into the sole): ``relaxed_qp`` (least deviation from ``qdd*``, torques within the
      limits);
    * no foot at all: nothing can carry the base, ``last_feasible`` (the torques of the last
      feasible step, held).

    ``transition_time=0``: without it the controller would start unloading the right foot 0.3 s
    before the planned switch, which already makes the exact QP infeasible in the stand phase
    (the CoM is between the feet), so the report would start before the contact set changes.
    """

    def stand(s, c):
        return c["com"].copy()

    def phases():
        first = one_leg_plan().phases[0]
        return PhasePlan(
            [
                dataclasses.replace(first, duration=0.2),
                dataclasses.replace(
                    first, name="left_only", duration=0.1, contact_set=LEFT, targets={"com": stand}
                ),
                dataclasses.replace(
                    first,
                    name="no_contact",
                    duration=0.1,
                    contact_set=frozenset(),
                    targets={"com": stand},
                ),
            ]
        )

    plan = _Plan("stand 0.2 s, left foot only 0.1 s, no contact", phases)
    s = run_episode(
        EpisodeConfig(
            env="wbsim/G1OneLeg-v0",
            controller="projected_id",
            controller_options={"variant": "qp", "check_targets": False, "transition_time": 0.0},
            seconds=0.4,
            log=tmp_path,
            progress=False,
            env_options={"plan": plan},
        )
    )
    run = load_run(tmp_path)
    assert s["status"] == ("fell" if s["fell"] else "completed")  # ran to its end, no exception
    left_only, no_contact = _first_step_of_phase(run, 1), _first_step_of_phase(run, 2)
    first = {}
    for e in run.events:
        if e["kind"] in ("fallback", "solver_failure"):
            first.setdefault((e["kind"], e["where"]), e)
    assert first[("fallback", "relaxed_qp")]["step"] == left_only, run.events
    assert "exact_qp_infeasible" in first[("fallback", "relaxed_qp")]["detail"]["status"]
    assert first[("fallback", "last_feasible")]["step"] == no_contact, run.events
    assert "no contact" in first[("fallback", "last_feasible")]["detail"]["status"]
    # not feasible from the first step of the left-only phase to the end (one episode)
    (failure,) = _events(run, "solver_failure")
    assert failure["step"] == left_only and failure["end_step"] == run.steps.shape[0] - 1
    assert not [
        e
        for e in run.events
        if e["kind"] in ("fallback", "solver_failure") and e["step"] < left_only
    ]
    # safe commands: relaxed torques within the limits; with no contact, the last feasible torques
    for step in range(left_only, no_contact):
        tau = _taus(g1, run, step)
        assert np.all(np.isfinite(tau)) and np.all(np.abs(tau) <= g1.effort_limits * (1 + 1e-6))
    held = _taus(g1, run, left_only - 1)  # the last feasible command
    for step in range(no_contact, run.steps.shape[0]):
        assert np.allclose(_taus(g1, run, step), held, rtol=1e-6, atol=1e-4)


# ------------------------------------------------------------------------------------------------
# the controller's contact-transition bounds and damping compensation, directly
# ------------------------------------------------------------------------------------------------
def _foot_loads(cmd, robot, foot):
    names = robot.contact_point_names
    return np.array([cmd.point_forces[names.index(n), 2] for n in robot.feet[foot].point_names])


def test_unloading_bounds_follow_the_documented_ramp(g1):
    """Standing still, the schedule says the right foot lifts at the end of a 1.5 s phase: its
    commanded point loads keep >= ``transition_force`` until ``release_time`` before the switch,
    its total load is capped on the last ``transition_time`` seconds by the linear ramp from the
    load it had when the cap began, and it is 0 at the switch."""
    ctrl = ContactProjectedID(g1, variant="qp")
    fk, T, Tr = ctrl.transition_force, ctrl.transition_time, ctrl.release_time
    q, v = g1.pose_q("stand"), np.zeros(g1.pin_model.nv)
    state = RobotState(0.0, q, v)
    ctrl.reset(state)

    def at(phase_time):
        sched = ContactSchedule(
            contact_set=BOTH_FEET,
            next_contact_set=LEFT,
            phase="shift",
            phase_index=1,
            phase_time=phase_time,
            phase_duration=1.5,
        )
        return ctrl.compute(RobotState(phase_time, q, v), sched)

    loads = _foot_loads(at(0.5), g1, "right_foot")
    assert loads.min() >= fk - 1e-6
    f0 = loads.sum()
    assert f0 > 4 * fk + 20.0  # standing: the right foot carries ~half the weight, well above
    for tau_left in (0.25, 0.1, 0.05):
        loads = _foot_loads(at(1.5 - tau_left), g1, "right_foot")
        cap = 4 * fk + (f0 - 4 * fk) * (tau_left - Tr) / (T - Tr)
        assert loads.min() >= fk - 1e-6 and loads.sum() <= cap + 1e-6, (tau_left, loads, cap)
    for tau_left in (0.015, 0.005):
        loads = _foot_loads(at(1.5 - tau_left), g1, "right_foot")
        r = tau_left / Tr
        assert loads.min() >= fk * r - 1e-6 and loads.sum() <= 4 * fk * r + 1e-6
    assert np.abs(_foot_loads(at(1.5), g1, "right_foot")).max() < 1e-6


def test_touchdown_bounds_press_the_new_foot_and_ramp_its_load(g1):
    ctrl = ContactProjectedID(g1, variant="qp")
    fk, T, Tr = ctrl.transition_force, ctrl.transition_time, ctrl.release_time
    weight = g1.total_mass * 9.81
    q, v = g1.pose_q("stand"), np.zeros(g1.pin_model.nv)
    ctrl.reset(RobotState(0.0, q, v))
    ctrl.compute(
        RobotState(0.0, q, v),
        ContactSchedule(
            contact_set=LEFT,
            next_contact_set=BOTH_FEET,
            phase="lower",
            phase_time=0.9,
            phase_duration=1.0,
        ),
    )
    t_make = 0.1
    for dt in (0.0, 0.01, 0.1, 0.5):
        sched = ContactSchedule(
            contact_set=BOTH_FEET,
            next_contact_set=BOTH_FEET,
            phase="stand_again",
            phase_time=dt,
            phase_duration=1.0,
        )
        cmd = ctrl.compute(RobotState(t_make + dt, q, v), sched)
        loads = _foot_loads(cmd, g1, "right_foot")
        lo = fk * min(dt / Tr, 1.0)
        assert loads.min() >= lo - 1e-6, (dt, loads)
        if dt < T:
            assert loads.sum() <= max(weight * dt / T, 4 * fk) + 1e-6, (dt, loads)
    assert loads.sum() > 0.3 * weight  # after the ramp the new foot shares the weight


def test_joint_damping_enters_the_inverse_dynamics(g1):
    """``M qdd + h + S^T D qdot = S^T tau_id + J_c^T lambda`` with Pinocchio's M and h (crba, rnea
    at zero acceleration), for the default damping (the robot's, 0.5 N·m·s/rad on the G1) and for
    none."""
    rng = np.random.default_rng(3)
    q0 = g1.pose_q("stand")
    model, data = g1.pin_model, g1.pin_model.createData()
    vidx = g1.converter.pin_vidx
    assert np.allclose(ContactProjectedID(g1).joint_damping, 0.5)
    for damping in ("model", 0.0):
        ctrl = ContactProjectedID(g1, variant="qp", joint_damping=damping)
        ctrl.reset(RobotState(0.0, q0, np.zeros(model.nv)))
        for feet in (BOTH_FEET, LEFT):
            q = q0.copy()
            q[g1.converter.pin_qidx] += rng.normal(scale=0.03, size=g1.n_joints)
            v = rng.normal(scale=0.2, size=model.nv)
            cmd = ctrl.compute(RobotState(0.0, q, v), ContactSchedule(contact_set=feet))
            M = pin.crba(model, data, q)
            M = np.triu(M) + np.triu(M, 1).T
            h = pin.rnea(model, data, q, v, np.zeros(model.nv))
            pin.computeJointJacobians(model, data, q)
            pin.updateFramePlacements(model, data)
            Jc = np.vstack(
                [
                    pin.getFrameJacobian(
                        model, data, g1.feet[f].pin_frame_id, pin.LOCAL_WORLD_ALIGNED
                    )
                    for f in g1.feet
                    if f in feet
                ]
            )
            gen = np.zeros(model.nv)
            gen[vidx] = cmd.info["tau_id"] - ctrl.joint_damping * v[vidx]
            residual = M @ cmd.info["qdd"] + h - gen - Jc.T @ cmd.info["lambda"]
            assert np.abs(residual).max() < 1e-8, (damping, feet)
