"""The complementarity formulations: hand values, signs, limits, and one definition for numpy and
CasADi."""

import math

import numpy as np
import pytest

cs = pytest.importorskip("casadi")

from wbsim.planning import complementarity as cc


def test_sech_values_match_the_definition_and_do_not_overflow():
    for x in (0.0, 0.3, -1.7, 5.0, 30.0):
        assert cc.sech(x) == pytest.approx(1.0 / math.cosh(x), rel=1e-14)
    assert cc.sech(0.0) == 1.0
    with np.errstate(over="raise"):
        assert cc.sech(np.array([800.0, -1e4])) == pytest.approx([0.0, 0.0], abs=1e-300)
    # the same function on a CasADi symbol, evaluated
    x = cs.SX.sym("x")
    f = cs.Function("f", [x], [cc.sech(x)])
    assert float(f(2.5)) == pytest.approx(1.0 / math.cosh(2.5), rel=1e-14)


def test_sech_gradient_is_finite_where_one_over_cosh_gives_nan():
    x = cs.SX.sym("x")
    ours = cs.Function("g", [x], [cs.gradient(cc.sech(x), x)])
    naive = cs.Function("n", [x], [cs.gradient(1 / cs.cosh(x), x)])
    assert math.isnan(float(naive(800.0)))  # the failure this form avoids
    for value in (0.0, 0.7, -2.0, 800.0, -800.0):
        expected = -math.tanh(value) / math.cosh(value) if abs(value) < 700 else 0.0
        assert float(ours(value)) == pytest.approx(expected, abs=1e-14)
    # and by central differences at a moderate argument
    d = (cc.sech(1.3 + 1e-6) - cc.sech(1.3 - 1e-6)) / 2e-6
    assert float(ours(1.3)) == pytest.approx(d, rel=1e-8)


def test_classical_and_relaxed_hand_values():
    assert cc.classical(0.02, 50.0) == pytest.approx(1.0)
    assert cc.relaxed(0.02, 50.0, 0.004) == pytest.approx(0.996)  # violated: positive
    assert cc.relaxed(0.0, 50.0, 0.004) == pytest.approx(-0.004)  # on the ground, satisfied
    assert cc.relaxed(0.1, 0.0, 0.004) < 0  # in the air, unloaded, satisfied


def test_relaxed_planar_allows_sliding_only_without_load():
    g = cc.relaxed_planar(40.0, np.array([0.1, -0.2]), 0.01)
    assert g == pytest.approx([4.0 - 0.01, -8.0 - 0.01, -4.0 - 0.01, 8.0 - 0.01])
    assert np.all(cc.relaxed_planar(0.0, np.array([0.5, 0.5]), 0.01) <= 0)
    assert np.any(cc.relaxed_planar(10.0, np.array([0.5, 0.0]), 0.01) > 0)


def test_zeta_is_the_time_derivative_of_h_f_n():
    # h(t) = 0.05 + 0.3 t, f(t) = 20 - 40 t: d(hf)/dt at t = 0.1 by finite differences
    def hf(t):
        return (0.05 + 0.3 * t) * (20 - 40 * t)

    fd = (hf(0.1 + 1e-7) - hf(0.1 - 1e-7)) / 2e-7
    assert cc.zeta(0.05 + 0.03, 20 - 4.0, 0.3, -40.0) == pytest.approx(fd, rel=1e-7)


def test_baumgarte_sign_and_steady_state():
    # resting on the ground with a constant force: zeta = 0, g = -eps (satisfied)
    assert cc.dcc_baumgarte(0.0, 9.81, 0.0, 0.0, 20.0, 0.05) == pytest.approx(-0.05)
    # hovering 1 cm with 9.81 N held: h f = 0.0981 > eps / K = 0.0025 -> violated
    assert cc.dcc_baumgarte(0.01, 9.81, 0.0, 0.0, 20.0, 0.05) == pytest.approx(20 * 0.0981 - 0.05)
    # a decaying product (zeta = -K h f exactly) sits at -eps
    h, f, K = 0.01, 5.0, 20.0
    fdot = -K * f  # hdot = 0, so zeta = h fdot = -K h f
    assert cc.dcc_baumgarte(h, f, 0.0, fdot, K, 0.05) == pytest.approx(-0.05)
    # the largest product that a steady state allows is eps / K_bs
    assert cc.dcc_baumgarte(0.05 / 20 / 4.0, 4.0, 0.0, 0.0, 20.0, 0.05) == pytest.approx(0.0)


def test_sech_form_limits():
    M, K = 100.0, 250.0
    # on the ground delta = 1: fdot free in [-M, M]
    up, lo = cc.dcc_sech(0.0, 30.0, 0.0, 500.0, K, M)
    assert up == pytest.approx(-M) and lo == pytest.approx(-M)
    assert cc.dcc_sech(0.0, 30.0, M, 500.0, K, M)[0] == pytest.approx(0.0)  # +M on the bound
    assert cc.dcc_sech(0.0, 30.0, -M, 500.0, K, M)[1] == pytest.approx(0.0)  # -M on the bound
    # far in the air delta ~ 0: fdot <= -K f
    up, lo = cc.dcc_sech(0.5, 2.0, -K * 2.0, 500.0, K, M)
    assert up == pytest.approx(0.0, abs=1e-9)
    assert cc.dcc_sech(0.5, 2.0, -K * 2.0 + 1.0, 500.0, K, M)[0] > 0
    # in between: the hand value at k_h h = 1
    d = 1 / math.cosh(1.0)
    assert cc.dcc_sech(1 / 500.0, 3.0, 7.0, 500.0, K, M)[0] == pytest.approx(
        7.0 + K * (1 - d) * 3.0 - d * M
    )


def test_planar_velocity_scaling():
    u = np.array([0.4, -0.2, 0.3])
    assert cc.dcc_planar_velocity(0.0, u, 20.0) == pytest.approx([0.0, 0.0, 0.3])
    v = cc.dcc_planar_velocity(0.05, u, 20.0)
    assert v == pytest.approx([0.4 * math.tanh(1.0), -0.2 * math.tanh(1.0), 0.3])
    assert cc.dcc_planar_velocity(10.0, u, 20.0) == pytest.approx(u)


@pytest.mark.parametrize("name", ["relaxed", "baumgarte", "sech", "planar"])
def test_one_definition_gives_the_same_numbers_on_casadi(name):
    rng = np.random.default_rng(3)
    h, f, hd, fd = (cs.SX.sym(s) for s in ("h", "f", "hd", "fd"))
    u = cs.SX.sym("u", 3)
    exprs = {
        "relaxed": lambda a, b, c, d, w: cc.relaxed(a, b, 0.004),
        "baumgarte": lambda a, b, c, d, w: cc.dcc_baumgarte(a, b, c, d, 20.0, 0.05),
        "sech": lambda a, b, c, d, w: cc.dcc_sech(a, b, d, 500.0, 250.0, 100.0),
        "planar": lambda a, b, c, d, w: cc.dcc_planar_velocity(a, w, 20.0),
    }
    fun = cs.Function("g", [h, f, hd, fd, u], [exprs[name](h, f, hd, fd, u)])
    for _ in range(5):
        a, b, c, d = rng.uniform(0, 0.05), rng.uniform(0, 50), rng.normal(), rng.normal(0, 50)
        w = rng.normal(size=3)
        np.testing.assert_allclose(
            np.asarray(fun(a, b, c, d, w)).ravel(),
            np.ravel(exprs[name](a, b, c, d, w)),
            rtol=1e-13,
            atol=1e-13,
        )
