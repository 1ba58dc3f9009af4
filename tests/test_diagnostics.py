"""Events (wbsim.diagnostics): each kind fires exactly when and where it should, ongoing violations
make one event (the flood rule), the events do not depend on how the steps are cut into chunks, and
the standing G1 makes none in 10 s."""

import copy
import dataclasses
import json
import math
import pickle
import types

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from wbsim.contacts import OPEN, SLIDING, STICKING, ContactSensor
from wbsim.controllers.pd import JointPD, PDGains
from wbsim.diagnostics import (
    EVENT_KINDS,
    VIOLATION_KINDS,
    Event,
    EventDetector,
    Tolerances,
)
from wbsim.errors import WbsimError
from wbsim.types import STANDING, Command, CommandStatus, RobotState, StepChunk

DT = 0.002
FEET = ("left_foot", "right_foot")
CORNERS = ("front_left", "back_left", "back_right", "front_right")
NAMES = tuple(f"{f}_{c}" for f in FEET for c in CORNERS)
UP = np.array([0.0, 0.0, 1.0])
UP_X, UP_Y = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])  # the floor's tangent axes


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
    feet = frozenset(
        f for f in FEET if any(loaded[i] for i, nm in enumerate(NAMES) if nm.startswith(f))
    )
    return types.SimpleNamespace(  # what a ContactSensing of one step gives the chunk
        names=NAMES,
        point_foot=tuple(f for f in FEET for _ in CORNERS),
        gap=gap,
        floor_normal_world=UP,
        force_world=force,
        normal_force=fn,
        tangential_force=ft,
        slip_velocity=slip,
        friction=np.full(n, mu),
        mode=mode,
        feet_in_contact=feet,
        non_sole_contacts=dict(non_sole or {}),
    )


LIFTED_LEFT = {"gap": [0.05] * 4 + [-1e-4] * 4, "normal": [0.0] * 4 + [80.0] * 4}


def command(forces, contact_set=FEET, feasible=True, status="", tau=None, **kwargs):
    """A Command with ``forces`` (point name -> (3,) or foot name -> (6,) wrench) in the robot's
    order (0 elsewhere); ``feasible=False`` makes it INFEASIBLE, ``status`` its message."""
    code = (
        CommandStatus.SOLVED
        if feasible and not status
        else (CommandStatus.SOLVER_FAILED if "fail" in status else CommandStatus.INFEASIBLE)
    )
    F = W = None
    if forces and all(k in FEET for k in forces):
        W = np.zeros((len(FEET), 6))
        for k, w in forces.items():
            W[FEET.index(k)] = w
    elif forces:
        F = np.zeros((len(NAMES), 3))
        for k, f in forces.items():
            F[NAMES.index(k)] = f
    return Command(
        tau=np.zeros(3) if tau is None else tau,
        contact_set=frozenset(contact_set),
        point_forces=F,
        foot_wrenches=W,
        status=code,
        message=status,
        **kwargs,
    )


def standing_command(forces=None, contact_set=FEET, **kwargs):
    if forces is None:
        forces = {nm: np.array([0.0, 0.0, 40.0]) for nm in NAMES}
    return command(forces, contact_set, **kwargs)


def as_chunk(steps, first=0, times=None, cone=1, torque=None, limit=None):
    """Steps ``(sensing, command[, assumed feet])`` from step ``first`` on (at ``times``, default
    ``k DT``) as one StepChunk, as the loop records them: NaN where the command gives no forces;
    the assumed feet are the command's contact set, or the given ones (default none) when it
    states neither a contact set nor a force. ``cone``: MuJoCo's cone (1 elliptic by default:
    ``f_t = |f - f_n n|``, the hand-made expectations' rule; 0 pyramidal). ``torque`` ``(k,
    j)`` commanded torques of joints with limits ``limit`` ``(j,)`` (default: no joint)."""
    s0 = steps[0][0]
    n, m = len(s0.names), len(FEET)
    k = np.arange(first, first + len(steps))

    def stack(get):
        return np.stack([get(*item) for item in steps])

    def assumed(sensing, cmd, given=frozenset()):
        stated = cmd.contact_set or cmd.point_forces is not None or cmd.foot_wrenches is not None
        return [f in (cmd.contact_set if stated else given) for f in FEET]

    return StepChunk(
        step=k,
        t=k * DT if times is None else np.asarray(times, dtype=float),
        point_names=s0.names,
        point_foot=s0.point_foot,
        foot_names=FEET,
        floor_normal=s0.floor_normal_world,
        gap=stack(lambda s, *_: s.gap),
        force=stack(lambda s, *_: s.force_world),
        normal_force=stack(lambda s, *_: s.normal_force),
        tangential_force=stack(lambda s, *_: s.tangential_force),
        slip_velocity=stack(lambda s, *_: s.slip_velocity),
        friction=stack(lambda s, *_: s.friction),
        mode=stack(lambda s, *_: s.mode),
        sensed_feet=stack(lambda s, *_: [f in s.feet_in_contact for f in FEET]),
        non_sole=[
            (row, name, f)
            for row, (s, *_) in enumerate(steps)
            for name, f in s.non_sole_contacts.items()
        ],
        point_forces=stack(
            lambda s, c, *_: np.full((n, 3), np.nan) if c.point_forces is None else c.point_forces
        ),
        foot_wrenches=stack(
            lambda s, c, *_: np.full((m, 6), np.nan) if c.foot_wrenches is None else c.foot_wrenches
        ),
        assumed=stack(assumed),
        status=stack(lambda s, c, *_: np.int8(c.status)),
        fallback=tuple(c.fallback for _, c, *_ in steps),
        message=tuple(c.message for _, c, *_ in steps),
        cone=np.full(len(steps), cone, dtype=np.int8),
        tangents=stack(lambda s, *_: np.broadcast_to(np.eye(3)[:2], (n, 2, 3))),
        friction_components=stack(
            lambda s, *_: np.stack([s.force_world @ UP_X, s.force_world @ UP_Y], axis=-1)
        ),
        joint_names=tuple(f"joint{i}" for i in range(0 if limit is None else len(limit))),
        torque=np.zeros((len(steps), 0)) if torque is None else np.asarray(torque, float),
        torque_applied=np.zeros((len(steps), 0))
        if torque is None
        else np.clip(torque, -np.asarray(limit), np.asarray(limit)),
        torque_limit=np.zeros(0) if limit is None else np.asarray(limit, float),
    )


def split(n, sizes):
    """Chunk boundaries ``[(start, stop), ...]`` covering ``n`` steps: ``sizes`` repeated, or
    ``None`` for the whole sequence in one chunk."""
    if sizes is None:
        return [(0, n)]
    bounds, start = [], 0
    while start < n:
        for size in sizes:
            bounds.append((start, min(start + size, n)))
            start += size
            if start >= n:
                break
    return bounds


#: chunkings that every hand-made sequence is also checked with (see :func:`run`)
SPLITS = ((2,), (3, 1, 17), (7,), None)


def run(detector, steps, sizes=(1,), times=None, check_splits=True):
    """Feed ``steps`` (see :func:`as_chunk`) to ``detector`` in chunks of ``sizes`` and finish;
    return what each chunk's :meth:`update` returned (one list per step with the default size 1).
    Unless ``check_splits`` is false, fresh detectors fed the same steps cut as in
    :data:`SPLITS` must give the same events and summary."""
    out = [
        detector.update(as_chunk(steps[a:b], a, None if times is None else times[a:b]))
        for a, b in split(len(steps), sizes)
    ]
    detector.finish()
    for other in SPLITS if check_splits else ():
        twin = EventDetector(detector.tolerances, dt=detector.dt)
        run(twin, steps, other, times, check_splits=False)
        assert_same_events(twin, detector, other)
    return out


def _as_json(events):
    """Events as JSON text (NaN magnitudes compare equal)."""
    return json.dumps([e.to_dict() for e in events], sort_keys=True)


def assert_same_events(detector, reference, context):
    """Every field of every event of ``detector`` as in ``reference`` (NaN equal to NaN), in the
    same order, and the same summary; a difference shows the first differing events."""
    got, want = ([_as_json([e]) for e in d.events] for d in (detector, reference))
    first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    same = got == want  # (not in the assert: pytest's diff of long lists takes minutes)
    assert same, (context, len(got), len(want), got[first : first + 1], want[first : first + 1])
    same = json.dumps(detector.summary()) == json.dumps(reference.summary())
    assert same, (context, detector.summary(), reference.summary())


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
    assert EventDetector({"force_sign": 3.0}, dt=DT).tolerances.force_sign == 3.0
    with pytest.raises(WbsimError):
        EventDetector({"nope": 3.0}, dt=DT)


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
        ("force_sign", 10, "right_foot_back_left"),
        ("force_sign", 60, "right_foot_back_left"),
    ]
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
    assert mism[0].detail == {
        "assumed": True,
        "simulated": False,
        "source": "simulated",
        "confirmed_t": pytest.approx(25 * DT),
        "confirmed_step": 25,
    }
    assert mism[0].magnitude == pytest.approx(25 * DT)  # steps 15..39
    switches = [e for e in det.events if e.kind == "mode_switch"]
    assert [(e.where, e.step, e.detail["source"], e.detail["change"]) for e in switches] == [
        ("left_foot", 15, "assumed", "make")
    ]
    assert switches[0].detail["before"] == ["right_foot"]
    assert switches[0].detail["after"] == ["left_foot", "right_foot"]
    assert switches[0].magnitude == pytest.approx(160.0)
    assert len(det.events) == 6
    assert [k for k, evs in enumerate(new) if evs] == [15, 25]


def test_short_mismatch_is_no_event_and_foot_wrench_maps_to_foot():
    det = EventDetector(dt=DT)
    ok, lifted = fake_sensing(), fake_sensing(**LIFTED_LEFT)
    wrench = {
        "left_foot": np.array([0, 0, 160.0, 0, 0, 0]),
        "right_foot": np.array([0, 0, 160.0, 0, 0, 0]),
    }
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
    bad_cmd = standing_command(
        {
            **{nm: np.array([0.0, 0.0, 40.0]) for nm in NAMES},
            "left_foot_back_left": np.array([30.0, 0.0, 10.0]),
        }
    )
    steps = [(base, standing_command())] * 5
    steps += [(sliding, standing_command())] * 3
    steps += [(lying, standing_command())] * 2
    steps += [(base, bad_cmd)]
    steps += [
        (
            base,
            standing_command(
                feasible=False, fallback="last_feasible+pd", status="infeasible: friction"
            ),
        )
    ] * 4
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
    assert [
        e.magnitude
        for e in det.events
        if e.detail.get("source") == "commanded" and e.kind == "friction_cone"
    ] == [pytest.approx(20.0)]  # 30 - 1 * 10
    assert ev["planar_complementarity"].magnitude == pytest.approx(5.0)
    assert ev["non_sole_contact"].magnitude == pytest.approx(120.0)
    # the solver failure lasts steps 11..15 (the status of step 15 says it failed): one event
    assert ev["solver_failure"].n_steps == 5
    assert ev["fallback"].n_steps == 4
    assert ev["fallback"].magnitude == pytest.approx(4 * DT)


def test_creep_and_slide_are_told_apart_by_the_cone_the_point_reached():
    """Two loaded points slipping (``planar_complementarity``): one creeps at half its cone
    throughout, the other creeps and then reaches the cone (``f_t = mu f_n``) in the same episode.
    Their events carry the largest ``f_t / (mu f_n)`` of the episode (0.5 and 1.0) and only the
    second counts as a slide in the summary."""
    creep = [20.0] + [0.0] * 3 + [20.0] + [0.0] * 3
    at_cone = [40.0] + [0.0] * 3 + [20.0] + [0.0] * 3
    slip = [0.01] + [0.0] * 3 + [0.01] + [0.0] * 3
    steps = [(fake_sensing(tangential=creep, slip=slip), standing_command())] * 3
    steps += [(fake_sensing(tangential=at_cone, slip=slip), standing_command())] * 2
    steps += [(fake_sensing(tangential=creep, slip=slip), standing_command())] * 2
    det = EventDetector(dt=DT)
    run(det, steps)
    planar = {e.where: e for e in det.events if e.kind == "planar_complementarity"}
    assert set(planar) == {NAMES[0], NAMES[4]}
    assert planar[NAMES[0]].detail["friction_used"] == pytest.approx(1.0)
    assert planar[NAMES[4]].detail["friction_used"] == pytest.approx(0.5)
    assert planar[NAMES[0]].n_steps == 7  # one episode, creep then slide
    assert det.summary()["slides"] == 1
    with pytest.raises(WbsimError, match="slide must be at most 1"):
        Tolerances(slide=1.01)  # no slip could be a slide


def test_mujoco_s_sliding_contacts_sit_on_their_cone():
    """The premise of ``Tolerances.slide``, in MuJoCo itself: a 10 kg plate on ``mu = 1`` pushed
    with 1.05 of its weight slides and every loaded contact's ``f_t / (mu f_n)`` is 1 to 1e-3; with
    0.5 it creeps (a few mm/s) at 0.45-0.55 of the cone (``mujoco.mj_contactForce``, contact
    frame)."""
    xml = """<mujoco><option timestep="0.002" cone="{cone}"/><worldbody>
      <geom type="plane" size="50 50 .1" friction="1 0.005 0.0001"/>
      <body pos="0 0 0.02"><freejoint/>
        <geom type="box" size=".2 .2 .02" mass="10" friction="1 0.005 0.0001"/></body>
    </worldbody></mujoco>"""
    for cone in ("pyramidal", "elliptic"):
        for push, sliding in ((1.05, True), (0.5, False)):
            m = mujoco.MjModel.from_xml_string(xml.format(cone=cone))
            d = mujoco.MjData(m)
            used, f = [], np.zeros(6)
            for i in range(1000):
                d.xfrc_applied[1, :3] = [push * 10 * 9.81, 0.0, 0.0]
                mujoco.mj_step(m, d)
                for j in range(d.ncon if i > 500 else 0):
                    mujoco.mj_contactForce(m, d, j, f)
                    if f[0] > 1.0:
                        ft = abs(f[1]) + abs(f[2]) if cone == "pyramidal" else np.hypot(f[1], f[2])
                        used.append(ft / f[0])
            assert len(used) > 50, (cone, push)
            if sliding:
                np.testing.assert_allclose(used, 1.0, atol=1e-3, err_msg=cone)
            else:  # the corners share the friction unevenly (the push tilts the plate)
                assert 0.45 < min(used) and max(used) < 0.55, (cone, min(used), max(used))
            assert (d.qvel[0] > 0.5) == sliding, (cone, push, d.qvel[0])


def test_events_of_one_step_in_a_fixed_order():
    """At step 20 the left foot leaves the floor in the simulation and in the controller's set,
    the controller (infeasible, with a fallback) commands on two left points a force out of its
    cone and a pull, the right front point slides, two robot geoms touch the floor: the events
    of that step come in the documented order. The switches' loads: the step before a break's,
    the step after a make's."""
    standing = (fake_sensing(), standing_command())
    sliding = {"tangential": [0.0] * 4 + [100.0] + [0.0] * 3, "slip": [0.0] * 4 + [0.1] + [0.0] * 3}
    lifted = fake_sensing(
        **LIFTED_LEFT, **sliding, non_sole={"left_knee_link": 120.0, "pelvis": 5.0}
    )
    forces = {
        **{nm: np.array([0.0, 0.0, 80.0]) for nm in NAMES[4:]},
        NAMES[0]: np.array([30.0, 0.0, 10.0]),
        NAMES[1]: np.array([0.0, 0.0, -5.0]),
    }
    bad = standing_command(
        forces, contact_set=["right_foot"], feasible=False, status="x", fallback="pd"
    )
    steps = (
        [standing] * 2
        + [(fake_sensing(non_sole={"pelvis": 1.0}), standing_command())]
        + [standing] * 17
        + [(lifted, bad)]
        + [standing] * 4
    )
    det = EventDetector(dt=DT)
    new = run(det, steps)
    assert [(e.kind, e.where, e.detail.get("source")) for e in new[20]] == [
        ("mode_switch", "left_foot", "simulated"),
        ("mode_switch", "left_foot", "assumed"),
        ("friction_cone", NAMES[0], "commanded"),
        ("complementarity", NAMES[0], "commanded"),
        ("force_sign", NAMES[1], "commanded"),
        ("friction_cone", NAMES[4], "simulated"),
        ("planar_complementarity", NAMES[4], "simulated"),
        ("non_sole_contact", "left_knee_link", "simulated"),
        ("non_sole_contact", "pelvis", "simulated"),
        ("fallback", "pd", None),
        ("solver_failure", "controller", None),
    ]
    switches = [
        (e.step, e.detail["change"], e.magnitude) for e in det.events if e.kind == "mode_switch"
    ]
    assert switches == [(20, "break", 160.0)] * 2 + [(21, "make", 160.0)] * 2
    assert new[20][-1].detail == {"status": "x", "feasible": False, "fallback": "pd"}


def test_mode_switches_and_debounce():
    """A PD-like command (no contact set, no force) with the sensed feet as the assumed set: the
    simulated switches; the assumed ones follow at once (no debounce), without a mismatch."""
    both, right = fake_sensing(), fake_sensing(**LIFTED_LEFT)
    seq = [both] * 5 + [right] * 10 + [both] + [right] + [both] * 10
    steps = [(s, Command(tau=np.zeros(3)), s.feet_in_contact) for s in seq]
    det = EventDetector(dt=DT)
    run(det, steps)
    sw = [(e.step, e.detail["change"]) for e in det.events if e.detail["source"] == "simulated"]
    assert sw == [(5, "break"), (15, "make"), (16, "break"), (17, "make")]
    assert det.events[0].magnitude == pytest.approx(160.0)  # the foot's load before the break
    assumed = [e for e in det.events if e.detail["source"] == "assumed"]
    assert [(e.step, e.detail["change"]) for e in assumed] == sw
    assert all(e.magnitude == 0.0 for e in assumed)  # no force commanded
    assert det.n_violations == 0
    # with a 10 ms debounce the 1-step blips vanish; the break is logged at its first step
    det = EventDetector({"switch_debounce": 0.01}, dt=DT)
    run(det, steps)
    assert [
        (e.step, e.detail["change"]) for e in det.events if e.detail["source"] == "simulated"
    ] == [(5, "break"), (17, "make")]


def test_bad_input():
    chunk = as_chunk([(fake_sensing(), standing_command())] * 3)
    det = EventDetector(dt=DT)
    for F in (np.zeros((3, len(NAMES), 6)), np.zeros((3, 3, 3)), np.zeros((3, 3 * len(NAMES)))):
        with pytest.raises(WbsimError, match="shape"):
            det.update(dataclasses.replace(chunk, point_forces=F))
    with pytest.raises(WbsimError, match="shape"):
        det.update(dataclasses.replace(chunk, foot_wrenches=np.zeros((3, 2, 3))))
    det.update(chunk)
    with pytest.raises(WbsimError, match="does not follow"):
        det.update(as_chunk([(fake_sensing(), standing_command())], first=2))
    assert det.update(as_chunk([(fake_sensing(), standing_command())], first=3)) == []
    for dt in (0.0, -DT, math.nan, None):
        with pytest.raises(WbsimError, match="dt"):
            EventDetector(dt=dt)
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
        J = np.vstack(
            [
                pin.getFrameJacobian(self.model, self.data, f, pin.LOCAL_WORLD_ALIGNED)[:3]
                for f in self.frames
            ]
        )
        f = np.linalg.lstsq(J[:, :6].T, g[:6], rcond=None)[0]
        tau = (g - J.T @ f)[self.robot.converter.pin_vidx] + self.pd(q, v)
        forces = dict(zip(self.robot.contact_point_names, f.reshape(-1, 3)))
        contact_set = frozenset(self.robot.feet)
        if self.hook is not None:
            forces, contact_set = self.hook(k, forces, contact_set)
        return command(forces, contact_set, tau=tau)


def simulate(robot, steps, stub, data=None):
    m = robot.mj_model
    d = robot.make_data("stand") if data is None else data
    stub.pd.reset(robot.mj_to_pin(d.qpos)[0])
    sensor, det = ContactSensor.for_robot(robot), EventDetector(dt=m.opt.timestep)
    record, times = [], []
    for k in range(steps):
        q, v = robot.mj_to_pin(d.qpos, d.qvel)
        cmd = stub.command(k, q, v)
        d.ctrl[:] = cmd.tau
        times.append(d.time)
        mujoco.mj_step(m, d)
        s = sensor.read(d)  # after mj_step: the state (q, v) the command was computed for
        record.append((s, cmd))
    run(det, record, (32,), times)
    return det, d


def test_g1_pulling_stub_in_mujoco(g1):
    """The standing G1 with the stub; at step 100 (only) the stub commands -20 N on one point: exactly
    one force_sign event, at step 100, at that point."""

    def hook(k, forces, contact_set):
        if k == 100:
            forces = {**forces, "left_foot_back_right": np.array([0.0, 0.0, -20.0])}
        return forces, contact_set

    det, _ = simulate(g1, 200, StandingStub(g1, hook))
    assert [(e.kind, e.step, e.where) for e in det.events] == [
        ("force_sign", 100, "left_foot_back_right")
    ]
    assert det.events[0].magnitude == pytest.approx(20.0)
    assert det.events[0].t == pytest.approx(100 * g1.mj_model.opt.timestep)


def test_g1_force_at_lifted_foot_in_mujoco(g1):
    """The G1 released 0.5 m above the floor (falling, nothing touches); from step 40 the stub assumes
    the left foot in contact and commands its static forces there: 4 complementarity events (one per
    left sole point) and one contact_mismatch for the left foot, all at step 40; nothing else."""

    def hook(k, forces, contact_set):
        if k < 40:
            return {}, frozenset()
        return {nm: f for nm, f in forces.items() if nm.startswith("left")}, frozenset(
            {"left_foot"}
        )

    d = g1.make_data("stand")
    d.qpos[2] += 0.5
    mujoco.mj_forward(g1.mj_model, d)
    det, d = simulate(g1, 60, StandingStub(g1, hook), data=d)
    got = sorted((e.kind, e.where, e.step) for e in det.events)
    # the chunk always states the assumed set (here none before step 40): a make at step 40
    assert got == sorted(
        [("complementarity", nm, 40) for nm in g1.feet["left_foot"].point_names]
        + [("contact_mismatch", "left_foot", 40), ("mode_switch", "left_foot", 40)]
    )
    switch = next(e for e in det.events if e.kind == "mode_switch")
    assert switch.detail["source"] == "assumed" and switch.magnitude > 100.0  # its forces, N
    assert all(
        e.magnitude > 1.0 for e in det.events if e.kind == "complementarity"
    )  # ~0.5 m x 40 N
    mismatch = next(e for e in det.events if e.kind == "contact_mismatch")
    assert mismatch.magnitude == pytest.approx(20 * DT) and mismatch.detail["confirmed_step"] == 50
    assert d.qpos[2] > g1.pose_qpos("stand")[2] + 0.3  # still in the air


@pytest.fixture(scope="module")
def standing_run(g1):
    """10 s of quiet standing with the gravity-compensation QP controller if it is installed, else
    the stub; its events."""
    try:
        from wbsim.controllers.gravity_qp import GravityCompensationQP
    except ImportError:  # pragma: no cover - the colleague's controller is optional here
        GravityCompensationQP = None
    m = g1.mj_model
    d = g1.make_data("stand")
    sensor, det = ContactSensor.for_robot(g1), EventDetector(dt=m.opt.timestep)
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
    record, times = [], []
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
        s = sensor.read(d)
        record.append((s, cmd, STANDING.contact_set))
        times.append(t)
    run(det, record, (256,), times, check_splits=False)
    return {"detector": det, "controller": name, "data": d, "last_command": cmd}


def test_g1_standing_10s_has_no_violation(standing_run, g1):
    det = standing_run["detector"]
    assert det.events == [], (standing_run["controller"], [e.to_dict() for e in det.events[:5]])
    assert np.abs(standing_run["last_command"].point_forces).sum() > 0  # it did command forces
    assert abs(standing_run["data"].qpos[2] - g1.pose_qpos("stand")[2]) < 0.02


# ------------------------------------------------------------------------------------------------
# chunks
# ------------------------------------------------------------------------------------------------
#: tolerances that are powers of two, so that values exactly on a boundary are representable
EDGE_TOL = Tolerances(
    force_sign=2**-7, friction_cone=2**-7, complementarity=2**-7, planar_complementarity=2**-6
)


def _edge_values(rng, p_bad, mu):
    """Per-point ``(f_n, |f_t|, gap, slip)`` for friction ``mu`` on the edges of :data:`EDGE_TOL`:
    most on the allowed side of a boundary or exactly on it, each past one with probability
    ``p_bad`` (by one ulp, by far, or NaN / inf / 1e200)."""
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


def _edge_sequence(rng, n_steps, floor_normal=UP):
    """Random steps ``(sensing, command, assumed feet)`` with values on the edges of
    :data:`EDGE_TOL` and runs and breaks of everything: feet lifted for long or for a step,
    point forces, foot wrenches or none, a contact set that lags the simulation, fallbacks and
    solver failures, non-sole contacts."""
    lifted = np.zeros(len(FEET), dtype=bool)
    sensed_before = [frozenset(FEET)] * 6
    steps = []
    for k in range(n_steps):
        if rng.random() < 0.04:
            lifted[rng.integers(len(FEET))] ^= True
        blip = rng.random() < 0.02  # one step off the floor
        off = np.repeat(lifted | blip, len(CORNERS))
        mu = rng.choice([0.0, 0.5, 1.0], len(NAMES))
        fn, ft, gap, slip = _edge_values(rng, 0.01, mu)
        fn, ft = np.where(off, 0.0, np.abs(fn)), np.where(off, 0.0, ft)
        non_sole = {"left_knee": 12.0} if k // 30 % 7 == 3 else {}
        if rng.random() < 0.05:
            non_sole = (
                {"pelvis": 0.0, **non_sole} if rng.random() < 0.5 else {**non_sole, "pelvis": 3.0}
            )
        s = fake_sensing(
            gap=np.where(off, 0.05, gap),
            normal=fn,
            tangential=ft,
            slip=slip,
            mu=mu,
            non_sole=non_sole,
        )
        s.floor_normal_world = floor_normal
        cfn, cft, _, _ = _edge_values(rng, 0.01, mu)
        forces = {nm: np.array([cft[i], 0.0, cfn[i]]) for i, nm in enumerate(NAMES)}
        kind = k // 40 % 4
        if kind == 1:
            forces = {nm: f for nm, f in forces.items() if nm.startswith("right")}
        elif kind == 2:
            forces = {
                "left_foot": np.r_[cft[0], 0.0, cfn[0], 0, 0, 0],
                "right_foot": np.r_[cft[4], 0.0, cfn[4], 0, 0, 0],
            }
        elif kind == 3:
            forces = {}
        contact_set = FEET if k // 60 % 3 else sensed_before[0]
        if kind == 3 and k % 2:
            contact_set = ()  # the given assumed feet then
        failing = k // 70 % 5 == 4 or rng.random() < 0.01
        cmd = command(
            forces,
            contact_set,
            feasible=not failing,
            status="" if not failing or rng.random() < 0.3 else "infeasible: friction",
            fallback=("pd" if k // 70 % 2 else "hold") if failing else "",
        )
        steps.append((s, cmd, sensed_before[-1]))
        sensed_before = [*sensed_before[1:], s.feet_in_contact]
    return steps


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the NaN, inf and 1e200 forces
@pytest.mark.parametrize("floor_normal", [UP, np.array([0.0, np.sin(0.1), np.cos(0.1)])])
def test_events_do_not_depend_on_the_chunks(floor_normal):
    """One random sequence of 1500 steps on the tolerances' edges, cut into chunks of 1, 3, 17 and
    256 steps, of random sizes, and whole: the same events (every field, in the same order) and
    summary; each chunk returns the events emitted in it. With and without a debounce."""
    rng = np.random.default_rng(7)
    steps = _edge_sequence(rng, 1500, floor_normal)
    slow = EDGE_TOL.replace(switch_debounce=0.006, rearm_time=0.006, mismatch_duration=0.01)
    for tol in (EDGE_TOL, slow):
        whole = EventDetector(tol, dt=DT)
        run(whole, steps, None, check_splits=False)
        for sizes in ((1,), (3,), (17,), (256,), tuple(rng.integers(1, 60, 20).tolist())):
            det = EventDetector(tol, dt=DT)
            returned = run(det, steps, sizes, check_splits=False)
            assert_same_events(det, whole, sizes)
            same = [e for events in returned for e in events] == det.events
            assert same, sizes
        # every kind happens, and episodes with breaks, and events that span chunks
        counts = whole.counts()
        del counts["torque_limit"]  # no joint here (tests/test_diagnostics.py tests it alone)
        assert min(counts.values()) >= 3, counts
        assert any(e.n_steps < round(e.duration / DT) for e in whole.events)
        assert sum(e.end_step // 17 > e.step // 17 for e in whole.events) > 20


def test_copied_detector_detects_the_same():
    """A detector copied in the middle of a run goes on exactly like the original: a pulling
    force after the copy is one event in both."""
    det = EventDetector(dt=DT)
    det.update(as_chunk([(fake_sensing(), standing_command())] * 5))
    twins = [det, copy.deepcopy(det), pickle.loads(pickle.dumps(det))]
    pull = {**{nm: np.array([0.0, 0.0, 40.0]) for nm in NAMES}, NAMES[3]: np.array([0, 0, -2.0])}
    for d in twins:
        for k in range(5, 10):
            d.update(as_chunk([(fake_sensing(), standing_command(pull if k == 7 else None))], k))
        d.finish()
    assert [(e.kind, e.step, e.where) for e in twins[0].events] == [("force_sign", 7, NAMES[3])]
    assert _as_json(twins[1].events) == _as_json(twins[0].events) == _as_json(twins[2].events)


def test_friction_is_judged_in_mujoco_s_cone():
    """A commanded force at the corner of the square ``|f_x|, |f_y| <= mu/sqrt(2) f_n`` (inside
    Coulomb's circle, outside MuJoCo's pyramid ``|f_x| + |f_y| <= mu f_n``) is a friction_cone
    event when MuJoCo's cone is pyramidal, none when it is elliptic; its magnitude is the diamond's
    excess ``(sqrt(2) - 1) mu f_n``. The simulated friction is judged the same way."""
    mu, fn = 1.0, 40.0
    corner = mu / np.sqrt(2) * fn * 0.999
    forces = {nm: np.array([0.0, 0.0, fn]) for nm in NAMES}
    forces[NAMES[2]] = np.array([corner, corner, fn])
    steps = [(fake_sensing(mu=mu), standing_command(forces))] * 3
    for cone, expected in ((0, [("friction_cone", NAMES[2], 0)]), (1, [])):
        det = EventDetector(dt=DT)
        det.update(as_chunk(steps, cone=cone))
        det.finish()
        assert [(e.kind, e.where, e.step) for e in det.events] == expected, cone
        if expected:
            assert det.events[0].magnitude == pytest.approx(2 * corner - mu * fn)
    # simulated: the sensed friction force at the same corner
    sensing = fake_sensing(mu=mu)
    sensing.force_world = sensing.force_world.copy()
    sensing.force_world[2] = [corner, corner, fn]
    sensing.tangential_force = sensing.tangential_force.copy()
    sensing.tangential_force[2] = np.hypot(corner, corner)
    steps = [(sensing, standing_command())] * 3
    for cone, n_events in ((0, 1), (1, 0)):
        det = EventDetector(dt=DT)
        det.update(as_chunk(steps, cone=cone))
        assert [e.where for e in det.events if e.kind == "friction_cone"] == [NAMES[2]] * n_events


def test_a_commanded_torque_beyond_the_limit_is_an_event():
    """A joint commanded 3.92 N.m against a 3.5 N.m limit for 5 steps (MuJoCo clips it to 3.5):
    one torque_limit event at that joint, of 0.42 N.m, lasting 5 steps; within the limit none."""
    limit = np.array([3.5, 10.0])
    torque = np.zeros((20, 2))
    torque[5:10, 0] = 3.92
    torque[:, 1] = -9.9
    steps = [(fake_sensing(), standing_command())] * 20
    det = EventDetector(dt=DT)
    det.update(as_chunk(steps, torque=torque, limit=limit))
    det.finish()
    [event] = det.events
    assert (event.kind, event.where, event.step, event.n_steps) == ("torque_limit", "joint0", 5, 5)
    assert event.magnitude == pytest.approx(0.42)
    assert event.detail["applied_torque"] == pytest.approx(3.5)
