"""Events and the momentum balance (wbsim.diagnostics): each kind fires exactly when and where it
should, ongoing violations make one event (the flood rule), the standing G1 makes none in 10 s, and
the centroidal momentum balance closes in MuJoCo to far below 1 % of m g."""

import dataclasses
import json

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from wbsim.types import STANDING, Command, CommandStatus, RobotState
from wbsim.controllers.pd import JointPD, PDGains

from wbsim.contacts import OPEN, SLIDING, STICKING, ContactSensing, ContactSensor
from wbsim.diagnostics import (
    EVENT_KINDS,
    VIOLATION_KINDS,
    Event,
    EventDetector,
    Tolerances,
)
from wbsim.momentum import MomentumBalance
from wbsim.errors import UnknownNameError, WbsimError

DT = 0.002
FEET = ("left_foot", "right_foot")
CORNERS = ("front_left", "back_left", "back_right", "front_right")
NAMES = tuple(f"{f}_{c}" for f in FEET for c in CORNERS)
UP = np.array([0.0, 0.0, 1.0])


# ------------------------------------------------------------------------------------------------
# fake sensing and commands
# ------------------------------------------------------------------------------------------------
def fake_sensing(gap=None, normal=None, tangential=None, slip=None, mu=1.0, non_sole=None):
    """8 sole points (2 feet). Defaults: standing, every point at gap -1e-4 m with 40 N, sticking."""
    n = len(NAMES)
    gap = np.full(n, -1e-4) if gap is None else np.asarray(gap, float)
    fn = np.full(n, 40.0) if normal is None else np.asarray(normal, float)
    ft = np.zeros(n) if tangential is None else np.asarray(tangential, float)
    slip = np.zeros(n) if slip is None else np.asarray(slip, float)
    loaded = fn > 0.5
    mode = np.where(loaded, np.where(slip > 0.005, SLIDING, STICKING), OPEN).astype(np.int8)
    force = np.zeros((n, 3))
    force[:, 0], force[:, 2] = ft, fn
    feet = frozenset(f for f in FEET if any(loaded[i] for i, nm in enumerate(NAMES)
                                            if nm.startswith(f)))
    return ContactSensing(
        names=NAMES, point_foot=tuple(f for f in FEET for _ in CORNERS),
        position_world=np.zeros((n, 3)), gap=gap, floor_normal_world=UP, force_world=force,
        normal_force=fn, tangential_force=ft, tangential_velocity_world=np.zeros((n, 3)),
        slip_velocity=slip, friction=np.full(n, mu), mode=mode, feet_in_contact=feet,
        non_sole_contacts=dict(non_sole or {}), contact_position_world=np.zeros((0, 3)),
        contact_force_world=np.zeros((0, 3)))


LIFTED_LEFT = {"gap": [0.05] * 4 + [-1e-4] * 4, "normal": [0.0] * 4 + [80.0] * 4}


def command(forces, contact_set=FEET, feasible=True, status="", tau=None, **kwargs):
    """A Command with ``forces`` (point name -> (3,) or foot name -> (6,) wrench) in the robot's
    order (0 elsewhere); ``feasible=False`` makes it INFEASIBLE, ``status`` its message."""
    code = CommandStatus.SOLVED if feasible and not status else (
        CommandStatus.SOLVER_FAILED if "fail" in status else CommandStatus.INFEASIBLE)
    F = W = None
    if forces and all(k in FEET for k in forces):
        W = np.zeros((len(FEET), 6))
        for k, w in forces.items():
            W[FEET.index(k)] = w
    elif forces:
        F = np.zeros((len(NAMES), 3))
        for k, f in forces.items():
            F[NAMES.index(k)] = f
    return Command(tau=np.zeros(3) if tau is None else tau, contact_set=frozenset(contact_set),
                   point_forces=F,
                   foot_wrenches=W, status=code, message=status, **kwargs)


def standing_command(forces=None, contact_set=FEET, **kwargs):
    if forces is None:
        forces = {nm: np.array([0.0, 0.0, 40.0]) for nm in NAMES}
    return command(forces, contact_set, **kwargs)


def run(detector, steps):
    """``steps``: list of (sensing, command[, assumed]) per step."""
    out = []
    for k, item in enumerate(steps):
        out.append(detector.update(item[0], item[1], k * DT, k, *item[2:]))
    return out


# ------------------------------------------------------------------------------------------------
# tolerances
# ------------------------------------------------------------------------------------------------
def test_tolerances_defaults_and_unknown_keys():
    tol = Tolerances()
    assert tol.force_sign > 0 and tol.complementarity > 0 and tol.mismatch_duration > 0
    with pytest.raises(WbsimError, match="unknown keys"):
        Tolerances.from_dict({"force_sgn": 1.0})
    with pytest.raises(WbsimError, match="unknown keys"):
        tol.replace(eps=1.0)
    with pytest.raises(WbsimError):
        Tolerances(force_sign=-1.0)
    with pytest.raises(WbsimError):
        Tolerances(complementarity=float("nan"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        tol.force_sign = 2.0
    assert tol.replace(force_sign=2.0).force_sign == 2.0
    assert EventDetector({"force_sign": 3.0}).tolerances.force_sign == 3.0
    with pytest.raises(WbsimError):
        EventDetector({"nope": 3.0})


# ------------------------------------------------------------------------------------------------
# fake controller stubs
# ------------------------------------------------------------------------------------------------
def test_pulling_force_is_one_event_at_its_step():
    """A stub commands -5 N on one point from step 10 to 29 (worst -8 N at step 20), then -3 N again at
    step 60: two force_sign events, at steps 10 and 60, nothing else."""
    det = EventDetector(dt=DT)
    steps = []
    for k in range(80):
        forces = {nm: np.array([0.0, 0.0, 40.0]) for nm in NAMES}
        if 10 <= k < 30:
            forces["right_foot_back_left"] = np.array([0.0, 0.0, -8.0 if k == 20 else -5.0])
        if k == 60:
            forces["right_foot_back_left"] = np.array([0.0, 0.0, -3.0])
        steps.append((fake_sensing(), standing_command(forces)))
    new = run(det, steps)
    det.finish()
    assert [k for k, evs in enumerate(new) if evs] == [10, 60]
    assert [(e.kind, e.step, e.where) for e in det.events] == [
        ("force_sign", 10, "right_foot_back_left"), ("force_sign", 60, "right_foot_back_left")]
    first = det.events[0]
    assert first.t == pytest.approx(10 * DT)
    assert first.magnitude == pytest.approx(8.0)
    assert first.n_steps == 20 and first.end_step == 29
    assert first.duration == pytest.approx(20 * DT)
    assert first.detail["source"] == "commanded"
    assert not first.ongoing
    summary = det.summary()
    assert summary["counts"]["force_sign"] == 2 and summary["n_violations"] == 2
    assert summary["worst"]["force_sign"] == pytest.approx(8.0)
    assert summary["first_t"]["force_sign"] == pytest.approx(10 * DT)
    assert summary["steps_in_violation"]["force_sign"] == 21
    assert set(summary["counts"]) == set(EVENT_KINDS)
    json.dumps(summary)  # summary.json and the event log need plain JSON types
    json.dumps([e.to_dict() for e in det.events])


def test_force_at_a_lifted_foot():
    """The left foot is 5 cm up from step 0; a stub assumes it in contact and commands 40 N on its 4
    points from step 15 on: 4 complementarity events at step 15 (h f_n = 2 N·m) and one
    contact_mismatch for the left foot that starts at step 15, confirmed after mismatch_duration."""
    det = EventDetector(dt=DT)
    sensing = fake_sensing(**LIFTED_LEFT)
    steps = []
    for k in range(40):
        if k < 15:
            forces = {nm: np.array([0.0, 0.0, 80.0]) for nm in NAMES[4:]}
            steps.append((sensing, standing_command(forces, contact_set=["right_foot"])))
        else:
            steps.append((sensing, standing_command()))
    new = run(det, steps)
    det.finish()
    comp = [e for e in det.events if e.kind == "complementarity"]
    assert sorted(e.where for e in comp) == sorted(NAMES[:4])
    assert all(e.step == 15 and e.magnitude == pytest.approx(0.05 * 40.0) for e in comp)
    mism = [e for e in det.events if e.kind == "contact_mismatch"]
    assert len(mism) == 1 and mism[0].where == "left_foot" and mism[0].step == 15
    assert mism[0].detail == {"assumed": True, "simulated": False, "source": "simulated",
                              "confirmed_t": pytest.approx(25 * DT), "confirmed_step": 25}
    assert mism[0].magnitude == pytest.approx(25 * DT)  # steps 15..39
    switches = [e for e in det.events if e.kind == "mode_switch"]
    assert [(e.where, e.step, e.detail["source"], e.detail["change"]) for e in switches] == [
        ("left_foot", 15, "assumed", "make")]
    assert switches[0].detail["before"] == ["right_foot"]
    assert switches[0].detail["after"] == ["left_foot", "right_foot"]
    assert switches[0].magnitude == pytest.approx(160.0)
    assert len(det.events) == 6
    assert [k for k, evs in enumerate(new) if evs] == [15, 25]


def test_short_mismatch_is_no_event_and_foot_wrench_maps_to_foot():
    det = EventDetector(dt=DT)
    ok, lifted = fake_sensing(), fake_sensing(**LIFTED_LEFT)
    wrench = {"left_foot": np.array([0, 0, 160.0, 0, 0, 0]),
              "right_foot": np.array([0, 0, 160.0, 0, 0, 0])}
    steps = [(lifted if 5 <= k < 10 else ok, standing_command(wrench)) for k in range(30)]
    # a pulling wrench on the right foot at step 20
    steps[20] = (ok, standing_command({**wrench, "right_foot": np.array([0, 0, -1.0, 0, 0, 0])}))
    run(det, steps)
    kinds = [(e.kind, e.where, e.step) for e in det.events]
    # the 5-step (10 ms) lift: a switch each way in the simulation and a complementarity event
    # for the left foot (wrench at a foot 5 cm up), but no mismatch (shorter than 20 ms)
    assert ("contact_mismatch", "left_foot", 5) not in kinds
    assert ("complementarity", "left_foot", 5) in kinds
    assert ("mode_switch", "left_foot", 5) in kinds and ("mode_switch", "left_foot", 10) in kinds
    assert ("force_sign", "right_foot", 20) in kinds
    assert len(det.events) == 4


def test_simulated_friction_planar_nonsole_and_controller_events():
    det = EventDetector(dt=DT)
    base = fake_sensing()
    sliding = fake_sensing(tangential=[50.0] + [0.0] * 7, slip=[0.1] + [0.0] * 7)  # 5 W, ft > mu fn
    lying = fake_sensing(non_sole={"left_knee_link": 120.0})
    bad_cmd = standing_command({**{nm: np.array([0.0, 0.0, 40.0]) for nm in NAMES},
                                "left_foot_back_left": np.array([30.0, 0.0, 10.0])})
    steps = [(base, standing_command())] * 5
    steps += [(sliding, standing_command())] * 3
    steps += [(lying, standing_command())] * 2
    steps += [(base, bad_cmd)]
    steps += [(base, standing_command(feasible=False, fallback="last_feasible+pd",
                                      status="infeasible: friction"))] * 4
    steps += [(base, standing_command(status="osqp failed"))]
    run(det, steps)
    got = {(e.kind, e.where, e.step, e.detail.get("source")) for e in det.events}
    assert got == {
        ("friction_cone", "left_foot_front_left", 5, "simulated"),
        ("planar_complementarity", "left_foot_front_left", 5, "simulated"),
        ("non_sole_contact", "left_knee_link", 8, "simulated"),
        ("friction_cone", "left_foot_back_left", 10, "commanded"),
        ("fallback", "last_feasible+pd", 11, None),
        ("solver_failure", "controller", 11, None),
    }
    ev = {(e.kind, e.detail.get("source")): e for e in det.events}
    ev = {**{k: e for (k, _), e in ev.items()}, "friction_cone": ev["friction_cone", "simulated"]}
    assert ev["friction_cone"].magnitude == pytest.approx(10.0)  # 50 - 1 * 40
    assert [e.magnitude for e in det.events if e.detail.get("source") == "commanded"
            and e.kind == "friction_cone"] == [pytest.approx(20.0)]  # 30 - 1 * 10
    assert ev["planar_complementarity"].magnitude == pytest.approx(5.0)
    assert ev["non_sole_contact"].magnitude == pytest.approx(120.0)
    # the solver failure lasts steps 11..15 (the status of step 15 says it failed): one event
    assert ev["solver_failure"].n_steps == 5
    assert ev["fallback"].n_steps == 4
    assert ev["fallback"].magnitude == pytest.approx(4 * DT)


def test_mode_switches_and_debounce():
    both, right = fake_sensing(), fake_sensing(**LIFTED_LEFT)
    seq = [both] * 5 + [right] * 10 + [both] + [right] + [both] * 10
    det = EventDetector(dt=DT)
    run(det, [(s, Command(tau=np.zeros(3))) for s in seq])  # no assumed set: simulated only
    sw = [(e.step, e.detail["change"], e.detail["source"]) for e in det.events]
    assert sw == [(5, "break", "simulated"), (15, "make", "simulated"), (16, "break", "simulated"),
                  (17, "make", "simulated")]
    assert det.events[0].magnitude == pytest.approx(160.0)  # the foot's load before the break
    assert det.n_violations == 0
    # with a 10 ms debounce the 1-step blips vanish; the break is logged at its first step
    det = EventDetector({"switch_debounce": 0.01}, dt=DT)
    run(det, [(s, Command(tau=np.zeros(3))) for s in seq])
    assert [(e.step, e.detail["change"]) for e in det.events] == [(5, "break"), (17, "make")]


def test_bad_input():
    det = EventDetector(dt=DT)
    for F in (np.zeros((len(NAMES), 6)), np.zeros((3, 3)), np.zeros(3 * len(NAMES))):
        with pytest.raises(WbsimError, match="shape"):
            det.update(fake_sensing(), Command(tau=np.zeros(3), point_forces=F), 0.0, 0)
    with pytest.raises(WbsimError, match="shape"):
        det.update(fake_sensing(), Command(tau=np.zeros(3), foot_wrenches=np.zeros((2, 3))), 0.0, 0)
    det.update(fake_sensing(), standing_command(), 0.0, 0)
    with pytest.raises(WbsimError, match="does not follow"):
        det.update(fake_sensing(), standing_command(), 0.0, 0)
    assert set(VIOLATION_KINDS) == set(EVENT_KINDS) - {"mode_switch"}
    assert Event("fallback", 0.0, 0, "x", 1.0).to_dict()["kind"] == "fallback"


# ------------------------------------------------------------------------------------------------
# the real G1 in MuJoCo
# ------------------------------------------------------------------------------------------------
class StandingStub:
    """Joint PD (3 Hz) plus the torques of the least-norm contact forces that hold the robot statically
    (``pinv`` of the base rows of ``g(q) = S^T tau + J_c^T f``); commands those forces at the 8 sole
    points. ``hook(k, forces, contact_set)`` may alter the command at step ``k``."""

    def __init__(self, robot, hook=None):
        self.robot, self.hook = robot, hook
        self.model = robot.pin_model
        self.data = self.model.createData()
        self.frames = [f for foot in robot.feet.values() for f in foot.pin_point_frame_ids]
        self.pd = JointPD(robot, PDGains(3.0, 1.0))

    def command(self, k, q, v):
        g = pin.computeGeneralizedGravity(self.model, self.data, q)
        pin.computeJointJacobians(self.model, self.data, q)
        pin.updateFramePlacements(self.model, self.data)
        J = np.vstack([pin.getFrameJacobian(self.model, self.data, f, pin.LOCAL_WORLD_ALIGNED)[:3]
                       for f in self.frames])
        f = np.linalg.lstsq(J[:, :6].T, g[:6], rcond=None)[0]
        tau = (g - J.T @ f)[self.robot.converter.pin_vidx] + self.pd(q, v)
        forces = dict(zip(self.robot.contact_point_names, f.reshape(-1, 3)))
        contact_set = frozenset(self.robot.feet)
        if self.hook is not None:
            forces, contact_set = self.hook(k, forces, contact_set)
        return command(forces, contact_set, tau=tau)


def simulate(robot, steps, stub, data=None, momentum=None):
    m = robot.mj_model
    d = robot.make_data("stand") if data is None else data
    stub.pd.reset(robot.mj_to_pin(d.qpos)[0])
    sensor, det = ContactSensor(robot), EventDetector()
    residuals = []
    for k in range(steps):
        q, v = robot.mj_to_pin(d.qpos, d.qvel)
        cmd = stub.command(k, q, v)
        d.ctrl[:] = cmd.tau
        t = d.time
        mujoco.mj_step(m, d)
        s = sensor.sense(d)  # after mj_step: the state (q, v) the command was computed for
        det.update(s, cmd, t, k)
        if momentum is not None:
            residuals.append(momentum.residual_from_data(d, q, v, s))
    det.finish()
    return det, np.array(residuals), d


def test_g1_pulling_stub_in_mujoco(g1):
    """The standing G1 with the stub; at step 100 (only) the stub commands -20 N on one point: exactly
    one force_sign event, at step 100, at that point."""
    def hook(k, forces, contact_set):
        if k == 100:
            forces = {**forces, "left_foot_back_right": np.array([0.0, 0.0, -20.0])}
        return forces, contact_set

    det, _, _ = simulate(g1, 200, StandingStub(g1, hook))
    assert [(e.kind, e.step, e.where) for e in det.events] == [
        ("force_sign", 100, "left_foot_back_right")]
    assert det.events[0].magnitude == pytest.approx(20.0)
    assert det.events[0].t == pytest.approx(100 * g1.mj_model.opt.timestep)


def test_g1_force_at_lifted_foot_in_mujoco(g1):
    """The G1 released 0.5 m above the floor (falling, nothing touches); from step 40 the stub assumes
    the left foot in contact and commands its static forces there: 4 complementarity events (one per
    left sole point) and one contact_mismatch for the left foot, all at step 40; nothing else."""
    def hook(k, forces, contact_set):
        if k < 40:
            return {}, frozenset()
        return {nm: f for nm, f in forces.items() if nm.startswith("left")}, frozenset({"left_foot"})

    d = g1.make_data("stand")
    d.qpos[2] += 0.5
    mujoco.mj_forward(g1.mj_model, d)
    det, _, d = simulate(g1, 60, StandingStub(g1, hook), data=d)
    got = sorted((e.kind, e.where, e.step) for e in det.events)
    assert got == sorted([("complementarity", nm, 40) for nm in g1.feet["left_foot"].point_names]
                         + [("contact_mismatch", "left_foot", 40)])
    assert all(e.magnitude > 1.0 for e in det.events if e.kind == "complementarity")  # ~0.5 m x 40 N
    mismatch = next(e for e in det.events if e.kind == "contact_mismatch")
    assert mismatch.magnitude == pytest.approx(20 * DT) and mismatch.detail["confirmed_step"] == 50
    assert d.qpos[2] > g1.pose_qpos("stand")[2] + 0.3  # still in the air


@pytest.fixture(scope="module")
def standing_run(g1):
    """10 s of quiet standing with the gravity-compensation QP controller if it is installed, else
    the stub; events and the momentum residual of every step."""
    try:
        from wbsim.controllers.gravity_qp import GravityCompensationQP
    except ImportError:  # pragma: no cover - the colleague's controller is optional here
        GravityCompensationQP = None
    m = g1.mj_model
    d = g1.make_data("stand")
    sensor, det, mb = ContactSensor(g1), EventDetector(), MomentumBalance(g1)
    steps = round(10.0 / m.opt.timestep)
    if GravityCompensationQP is not None:
        ctrl = GravityCompensationQP(g1)
        q, v = g1.mj_to_pin(d.qpos, d.qvel)
        ctrl.reset(RobotState(0.0, q, v))
        name = "gravity_qp"
    else:
        stub = StandingStub(g1)
        stub.pd.reset(g1.mj_to_pin(d.qpos)[0])
        name = "stub"
    residuals = np.empty((steps, 6))
    for k in range(steps):
        q, v = g1.mj_to_pin(d.qpos, d.qvel)
        t = d.time
        if name == "gravity_qp":
            cmd = ctrl.compute(RobotState(t, q, v), STANDING)
        else:
            cmd = stub.command(k, q, v)
        conv = g1.converter
        d.ctrl[:] = cmd.torque_at(q[conv.pin_qidx], v[conv.pin_vidx])
        mujoco.mj_step(m, d)
        s = sensor.sense(d)
        det.update(s, cmd, t, k)
        residuals[k] = mb.residual_from_data(d, q, v, s)
    det.finish()
    return {"detector": det, "residuals": residuals, "weight": mb.weight, "controller": name,
            "data": d, "last_command": cmd}


def test_g1_standing_10s_has_no_violation(standing_run, g1):
    det = standing_run["detector"]
    assert det.events == [], (standing_run["controller"], [e.to_dict() for e in det.events[:5]])
    assert np.abs(standing_run["last_command"].point_forces).sum() > 0  # it did command forces
    assert abs(standing_run["data"].qpos[2] - g1.pose_qpos("stand")[2]) < 0.02


def test_momentum_balance_in_quiet_standing(standing_run):
    """|dh_G/dt - (sum of contact wrenches + m g)| < 1 % of m g at every step (it closes to ~1e-9)."""
    rel = np.linalg.norm(standing_run["residuals"], axis=1) / standing_run["weight"]
    assert rel.max() < 0.01, rel.max()
    assert rel.max() < 1e-6  # what MuJoCo's exact dynamics give


def test_momentum_balance_through_an_impact_and_a_push(g1):
    """Dropped 3 cm (impact forces up to several m g), then pushed at the pelvis with xfrc_applied: the
    residual stays below 1e-6 m g; leaving out the push (or the contacts) breaks it, so the balance
    is not trivially zero."""
    mb = MomentumBalance(g1)
    d = g1.make_data("stand")
    d.qpos[2] += 0.03
    mujoco.mj_forward(g1.mj_model, d)
    stub = StandingStub(g1)
    _, res, d = simulate(g1, 150, stub, data=d, momentum=mb)
    assert np.linalg.norm(res, axis=1).max() / mb.weight < 1e-6
    pelvis = g1.mj_model.body("pelvis").id
    d.xfrc_applied[pelvis] = [40.0, -20.0, 0.0, 0.0, 0.0, 8.0]
    m = g1.mj_model
    sensor = ContactSensor(g1)
    for k in range(50):
        q, v = g1.mj_to_pin(d.qpos, d.qvel)
        d.ctrl[:] = stub.command(k, q, v).tau
        mujoco.mj_step(m, d)
        s = sensor.sense(d)
        full = mb.residual_from_data(d, q, v, s)
        assert np.linalg.norm(full) / mb.weight < 1e-6
    no_push = mb.residual(q, v, d.qacc, s)
    assert np.linalg.norm(no_push) / mb.weight > 0.05
    no_contacts = mb.residual(q, v, d.qacc, _without_contacts(s), d.xfrc_applied, d.xipos)
    assert np.linalg.norm(no_contacts) / mb.weight > 0.5


def _without_contacts(s):
    return dataclasses.replace(s, contact_force_world=np.zeros((0, 3)),
                               contact_position_world=np.zeros((0, 3)))


def test_acceleration_matches_the_velocity_map(g1):
    """vdot from qacc equals solve(T, qacc - Tdot v) with the conventions' maps, at random states."""
    from conftest import random_state

    mb = MomentumBalance(g1)
    rng = np.random.default_rng(3)
    conv = g1.converter
    for _ in range(5):
        q, v = random_state(g1, rng)
        qacc = rng.normal(size=g1.mj_model.nv)
        expect = np.linalg.solve(conv.velocity_map(q), qacc - conv.velocity_map_dot_times_v(q, v))
        np.testing.assert_allclose(mb.acceleration(q, v, qacc), expect, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# the quick screen of the usual step against the exact checks
# ------------------------------------------------------------------------------------------------
#: tolerances that are powers of two, so that values exactly on a boundary are representable
EDGE_TOL = Tolerances(force_sign=2**-7, friction_cone=2**-7, complementarity=2**-7,
                      planar_complementarity=2**-6)


def _edge_values(rng, p_bad, mu):
    """Per-point ``(f_n, |f_t|, gap, slip)`` for friction ``mu`` on the edges of :data:`EDGE_TOL`:
    most on the allowed side of a boundary or exactly on it, each past one with probability
    ``p_bad`` (by one ulp, by far, or NaN / inf / 1e200): where a screen that differs from the
    exact checks would show."""
    n, tol, nxt = len(NAMES), EDGE_TOL, np.nextafter
    fn = rng.choice([32.0, 16.0, 0.375, 0.0, -tol.force_sign], n)
    excess = rng.choice([0.0, tol.friction_cone, -1.0], n)
    gap = rng.choice([-1e-4, 0.0, tol.complementarity / 32.0], n)  # h f_n <= tol, = at 32 N
    slip = rng.choice([0.0, 2.0**-12], n)  # |v_t| |f_t| < tol
    for i in np.flatnonzero(rng.random(n) < p_bad):
        what = rng.integers(5)
        if what == 0:
            fn[i] = rng.choice([nxt(-tol.force_sign, -1.0), -5.0])
        elif what == 1:
            excess[i] = rng.choice([nxt(tol.friction_cone, 1.0), 3.0])
        elif what == 2:
            gap[i] = rng.choice([nxt(tol.complementarity / 32.0, 1.0), 0.05])
        elif what == 3:
            slip[i] = 0.1
        else:
            fn[i] = rng.choice([np.nan, np.inf, 1e200])
    ft = np.maximum(mu * fn + excess, 0.0)
    return fn, np.where(np.isnan(ft), 1.0, ft), gap, slip


def _as_json(events):
    """Events as JSON text (NaN magnitudes compare equal)."""
    return json.dumps([e.to_dict() for e in events], sort_keys=True)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the NaN, inf and 1e200 forces
def test_screen_never_hides_an_event():
    """Random steps with sensed and commanded values on the tolerances' edges (and NaN, inf,
    1e200): the detector with its quick screen gives exactly the events and summary of one that
    always runs the exact checks. Foot wrenches, tilted floors and missing forces included."""
    rng = np.random.default_rng(7)
    fast, exact = EventDetector(EDGE_TOL, dt=DT), EventDetector(EDGE_TOL, dt=DT)
    exact._screen = lambda sensing, forces: None  # always the exact checks
    tilted = np.array([0.0, np.sin(0.1), np.cos(0.1)])
    screened = 0
    for k in range(3000):
        mu = rng.choice([0.0, 0.5, 1.0], len(NAMES))
        fn, ft, gap, slip = _edge_values(rng, 0.01, mu)
        s = fake_sensing(gap=gap, normal=np.abs(fn), tangential=ft, slip=slip, mu=mu)
        if k % 97 == 5:
            s = dataclasses.replace(s, floor_normal_world=tilted)
        cfn, cft, _, _ = _edge_values(rng, 0.01, mu)
        forces = {nm: np.array([cft[i], 0.0, cfn[i]]) for i, nm in enumerate(NAMES)}
        if k % 7 == 0:
            forces = {nm: f for nm, f in forces.items() if nm.startswith("right")}
        if k % 11 == 0:
            bad = rng.choice(NAMES)
            forces[bad] = np.array([rng.choice([np.nan, np.inf, 1e200]), 0.0, 1e200])
        if k % 13 == 0:
            forces = {"left_foot": np.r_[cft[0], 0.0, cfn[0], 0, 0, 0]}
        if k % 17 == 0:
            forces = {}
        cmd = standing_command(forces, contact_set=FEET if k % 5 else ["right_foot"])
        a = fast.update(s, cmd, k * DT, k)
        b = exact.update(s, cmd, k * DT, k)
        assert _as_json(a) == _as_json(b), k
        screened += fast._screen(s, forces) is not None
    fast.finish()
    exact.finish()
    assert _as_json(fast.events) == _as_json(exact.events)
    assert json.dumps(fast.summary()) == json.dumps(exact.summary())
    assert len(fast.events) > 300 and screened > 1000, (len(fast.events), screened)


def test_momentum_residual_matches_a_direct_sum(g1):
    """At random states, accelerations, contact forces and pushes the residual equals the balance
    written out directly: ``dh_G/dt`` with ``vdot = solve(velocity_map, qacc - Tdot v)``, the CoM
    from ``pinocchio.centerOfMass``, moments with ``np.cross``."""
    from conftest import random_state

    mb = MomentumBalance(g1)
    model, data = g1.pin_model, g1.pin_model.createData()
    conv = g1.converter
    rng = np.random.default_rng(11)
    nbody = g1.mj_model.nbody
    for k in range(6):
        q, v = random_state(g1, rng)
        qacc = rng.normal(size=g1.mj_model.nv) * 5
        npts = [0, 1, 8][k % 3]
        s = dataclasses.replace(fake_sensing(), contact_position_world=rng.normal(size=(npts, 3)),
                                contact_force_world=rng.normal(size=(npts, 3)) * 100)
        xfrc = np.zeros((nbody, 6))
        xipos = rng.normal(size=(nbody, 3))
        if k % 2:
            xfrc[rng.integers(1, nbody)] = rng.normal(size=6) * 20
        a = np.linalg.solve(conv.velocity_map(q), qacc - conv.velocity_map_dot_times_v(q, v))
        dh = pin.computeCentroidalMomentumTimeVariation(model, data, q, v, a)
        c = pin.centerOfMass(model, data, q)
        p, f = s.contact_position_world, s.contact_force_world
        force = f.sum(axis=0) + g1.total_mass * g1.mj_model.opt.gravity + xfrc[:, :3].sum(axis=0)
        moment = (np.cross(p - c, f).sum(axis=0) + np.cross(xipos - c, xfrc[:, :3]).sum(axis=0)
                  + xfrc[:, 3:].sum(axis=0))
        expect = np.concatenate([dh.linear - force, dh.angular - moment])
        got = mb.residual(q, v, qacc, s, xfrc, xipos)
        np.testing.assert_allclose(got, expect, atol=1e-9 * (1 + np.abs(expect).max()))
        assert mb.relative(got) == pytest.approx(np.linalg.norm(expect) / mb.weight, rel=1e-12)
    with pytest.raises(WbsimError, match="xipos"):
        mb.residual(q, v, qacc, s, np.ones((nbody, 6)))


def test_copied_detector_detects_the_same():
    """A detector copied in the middle of a run (its screens built) goes on exactly like the
    original: a pulling force after the copy is one event in both."""
    import copy
    import pickle

    det = EventDetector(dt=DT)
    run(det, [(fake_sensing(), standing_command())] * 5)
    twins = [det, copy.deepcopy(det), pickle.loads(pickle.dumps(det))]
    pull = {**{nm: np.array([0.0, 0.0, 40.0]) for nm in NAMES}, NAMES[3]: np.array([0, 0, -2.0])}
    for d in twins:
        for k in range(5, 10):
            d.update(fake_sensing(), standing_command(pull if k == 7 else None), k * DT, k)
        d.finish()
    assert [(e.kind, e.step, e.where) for e in twins[0].events] == [("force_sign", 7, NAMES[3])]
    assert _as_json(twins[1].events) == _as_json(twins[0].events) == _as_json(twins[2].events)


def test_relative_from_data_is_the_residual_bit_for_bit(g1):
    """The loop's one call (``relative_from_data``, with cached MjData views) gives the same float
    as ``relative(residual_from_data(...))`` and as ``residual`` with the arrays passed in, bit for
    bit; with and without a push; after switching to another MjData (the cache follows the data);
    a copy of the balance holds no views of the original's data."""
    import copy

    m = g1.mj_model
    sensor, stub = ContactSensor(g1), StandingStub(g1)
    mb, ref = MomentumBalance(g1), MomentumBalance(g1)
    pelvis = m.body("pelvis").id
    datas = [g1.make_data("stand"), g1.make_data("stand")]
    datas[1].qpos[2] += 0.02
    for d in datas:
        mujoco.mj_forward(m, d)
    seen = 0.0
    for k in range(40):
        d = datas[(k // 10) % 2]  # alternate the data every 10 steps
        d.xfrc_applied[pelvis] = [30.0, -10.0, 0.0, 0.0, 0.0, 5.0] if k % 20 >= 15 else 0.0
        q, v = g1.mj_to_pin(d.qpos, d.qvel)
        d.ctrl[:] = stub.command(k, q, v).tau
        mujoco.mj_step(m, d)
        s = sensor.sense(d)
        fast = mb.relative_from_data(d, q, v, s)
        full = ref.residual_from_data(d, q, v, s)
        direct = ref.residual(q, v, d.qacc.copy(), s, d.xfrc_applied.copy(), d.xipos.copy())
        assert full.tobytes() == direct.tobytes()
        assert fast == ref.relative(full) and type(fast) is float
        seen = max(seen, np.linalg.norm(full))
        assert mb.max_norm == ref.max_norm == pytest.approx(seen, rel=1e-15)
    assert np.count_nonzero([d.xfrc_applied for d in datas])  # the push path ran
    clone = copy.copy(mb)
    assert clone._views is None and mb._views is not None
    assert clone.relative_from_data(d, q, v, s) == mb.relative_from_data(d, q, v, s)
