"""Plans that end at rest: the task reference's clock (numpy, no CasADi needed)."""

import numpy as np
import pytest

from wbsim.errors import WbsimError
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
