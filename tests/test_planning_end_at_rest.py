"""Plans that end at rest: the task reference's window (numpy), and the shipped plans checked with
Pinocchio on their planned joints (no CasADi needed): every knot's sole points, CoM and centroidal
momentum, and at the end a CoM at rest between both feet on the floor."""

import json

import numpy as np
import pytest

from wbsim.assets import PLANS_DIR
from wbsim.errors import WbsimError
from wbsim.planning.kinematics import pinocchio_reference
from wbsim.planning.plan_file import load_plan
from wbsim.planning.receding import Task, com_reference, task_clock

G = 9.81
START = {
    "P": np.array([[0.03, 0.12, 0.0]] * 4 + [[0.03, -0.12, 0.0]] * 4),
    "x": np.array([0.02, 0.0, 0.67]),
}


def _derivatives(f, t, h=1e-4):
    return (f(t + h) - f(t - h)) / (2 * h), (f(t + h) - 2 * f(t) + f(t - h)) / h**2


@pytest.mark.parametrize("name", ["step", "walk"])
def test_reference_comes_to_rest_smoothly_at_stop(name):
    """Before the taper the reference is the endless one; at ``stop`` (``settle + 2 period / 2 +
    taper / 2``) it is at the feet's middle (walk: ``speed 3 period / 4`` ahead) with zero velocity and
    acceleration, and it stays there; the clock's rate integrates to the clock; rest knots are
    those from ``stop`` on."""
    task, endless = Task(name, half_periods=2, taper=0.8), Task(name)
    assert task.stop == pytest.approx(1.0 + 2.8 + 0.4)

    def ref(t, tk=task):
        return com_reference(tk, np.atleast_1d(t), START)[:, :2]

    early = np.linspace(
        0.0, task.stop - task.taper - (task.period / 4 if name == "walk" else 0), 71
    )
    np.testing.assert_allclose(ref(early), ref(early, endless), atol=1e-12)
    end = np.array([START["x"][0], 0.0])
    if name == "walk":  # its clock stops a quarter period early
        end[0] += task.speed * (task.period - task.period / 4)
    for t in (task.stop, task.stop + 0.2, 9.0):
        np.testing.assert_allclose(ref(t)[0], end, atol=1e-12)
        v, a = _derivatives(ref, t)
        assert np.abs(v).max() < 1e-6 and np.abs(a).max() < 1e-3, (t, v, a)
    # approaching stop: velocity and acceleration go to 0 continuously (quintic smoothstep)
    v, a = _derivatives(ref, task.stop - 1e-3)
    assert np.abs(v).max() < 1e-5 and np.abs(a).max() < 0.02, (v, a)
    # no overshoot: the sway's last half-period stays on one side of the middle
    late = np.linspace(task.stop - task.taper, task.stop, 81)
    assert np.all(ref(late)[:, 1] <= 1e-12)
    t = np.linspace(1.0, 5.0, 4001)
    w, clock = task_clock(task, t)
    np.testing.assert_allclose(clock[-1], np.trapezoid(w, t), atol=1e-6)
    assert clock[-1] == pytest.approx(task.period)
    assert w[0] == 1.0 and w[-1] == 0.0 and np.all(np.diff(w) <= 1e-15)
    stop = task.stop
    np.testing.assert_array_equal(
        task.rest([stop - 0.2, stop - 0.1, stop, stop + 0.1]), [0, 0, 1, 1]
    )
    assert not endless.rest(np.arange(0, 10, 0.1)).any() and endless.stop is None


def test_task_rest_settings_are_checked():
    with pytest.raises(WbsimError, match="half_periods"):
        Task("step", half_periods=0)
    with pytest.raises(WbsimError, match="taper"):
        Task("step", half_periods=1, taper=0.0)
    with pytest.raises(WbsimError, match="taper"):
        Task("step", half_periods=1, taper=1.5)  # the walk's clock would taper before settle


def _plan_vs_pinocchio(g1, plan):
    """Pinocchio's sole points, CoM and momentum at every knot from the planned base, joints and
    velocities; the worst difference to the plan's own of each, and the momenta."""
    worst = {"points": 0.0, "com": 0.0, "momentum": 0.0}
    hs = []
    for k in range(len(plan["times"])):
        ref = pinocchio_reference(
            g1,
            plan["base_position"][k],
            plan["base_quaternion_wxyz"][k],
            plan["joint_positions"][k],
            plan["base_linear_velocity"][k],
            plan["base_angular_velocity"][k],
            plan["joint_velocities"][k],
        )
        worst["points"] = max(
            worst["points"], np.abs(ref["points"] - plan["point_positions"][k]).max()
        )
        worst["com"] = max(worst["com"], np.abs(ref["com"] - plan["com"][k]).max())
        worst["momentum"] = max(worst["momentum"], np.abs(ref["h"] - plan["momentum"][k]).max())
        hs.append(ref["h"])
    return worst, np.array(hs)


@pytest.mark.parametrize("name", ["step", "walk"])
def test_shipped_plan_ends_at_rest(g1, name):
    """The shipped plan agrees with Pinocchio on its planned joints, and it ends at rest: at its
    last knot Pinocchio's CoM velocity puts the capture point within 1 cm of the CoM
    (``|v| <= omega 0.01 m``, ``omega = sqrt(g / z)``, ~3.8 cm/s), the angular momentum is at
    most ``0.01 m * m g * 0.1 s`` (0.33 kg m^2/s: stopped in 0.1 s, it would move the centroidal
    moment pivot at most 1 cm), both feet are on the
    floor carrying at least a fifth of the weight each, and the CoM is within 2 cm of the feet's
    middle across them; the speed bound holds at every knot from the task's ``stop`` on. The
    plans made before the end at rest stopped mid-sway at 0.29 m/s and 2.1 kg m^2/s (step) and
    with a foot in the air at 0.18 m/s (walk)."""
    plan = load_plan(PLANS_DIR / f"g1_dcc_{name}.npz")
    worst, h = _plan_vs_pinocchio(g1, plan)
    assert max(worst.values()) < 1e-6, worst
    m = g1.total_mass
    z = plan["com"][:, 2] - plan["point_positions"][0, :, 2].min()
    speed_bound = np.sqrt(G / z) * 0.01
    v = h[:, :3] / m
    assert np.linalg.norm(v[-1]) <= speed_bound[-1], (v[-1], speed_bound[-1])
    # angular momentum that, stopped in 0.1 s, moves the centroidal moment pivot at most 1 cm
    assert np.linalg.norm(h[-1, 3:]) <= 0.01 * m * G * 0.1, h[-1, 3:]
    P, F = plan["point_positions"][-1], plan["point_forces"][-1]
    assert plan["foot_contact"][-1].all() and P[:, 2].max() < 1e-3, P[:, 2]
    weight = m * G
    assert F[:4, 2].sum() >= weight / 5 and F[4:, 2].sum() >= weight / 5, F[:, 2]
    middle = 0.5 * (P[:4].mean(axis=0) + P[4:].mean(axis=0))
    across = P[:4].mean(axis=0)[:2] - P[4:].mean(axis=0)[:2]
    across /= np.linalg.norm(across)
    assert abs(np.dot(plan["com"][-1, :2] - middle[:2], across)) <= 0.02
    task = Task(**json.loads(str(plan["task_json"])))
    assert task.name == name and task.stop is not None, task
    rest = task.rest(plan["times"]) > 0
    assert rest.sum() >= 3, (task.stop, plan["times"][-1])
    assert np.all(np.linalg.norm(v[rest], axis=1) <= speed_bound[rest]), v[rest]
    assert plan["foot_contact"][rest].all(), plan["foot_contact"][rest]
