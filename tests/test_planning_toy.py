"""The point-mass toy: every setting of the seed's grid solves, each constraint holds at every knot
(recomputed here with numpy), the collocation is the trapezoidal rule, and the accuracy ordering of
the seed holds."""

import json

import numpy as np
import pytest

pytest.importorskip("casadi")

from wbsim.errors import UnknownNameError, WbsimError
from wbsim.planning import toy

TOL = 1e-6  # IPOPT's bound relaxation is 1e-8 and its constraint tolerance 1e-8


@pytest.fixture(scope="module")
def results():
    return toy.sweep(repeats=1)


def test_every_setting_solves_or_is_reported_as_a_local_minimum(results):
    assert len(results) == 12
    for r in results:
        assert r.success or r.local_minimum, (r.formulation, r.params, r.status)
        assert r.iterations > 0 and r.solve_time_s > 0
        if r.local_minimum:
            assert "propeller holds the mass" in r.cause


def test_constraints_hold_at_every_knot(results):
    pb = toy.ToyProblem()
    for r in results:
        t = {k: np.asarray(v) for k, v in r.trajectory.items()}
        x, f, v, p, fd = t["x"], t["f"], t["v"], t["p"], t["fdot"]
        assert x[0] == pytest.approx(0.1, abs=TOL) and f[0] == pytest.approx(0, abs=TOL)
        assert v[0] == pytest.approx(0, abs=TOL)
        assert x.min() >= -TOL and f.min() >= -TOL and np.abs(fd).max() <= 100 + TOL
        # the formulation, written out here (not through the library's functions)
        prm = r.params
        if r.formulation == "relaxed":
            g = x * f - prm["eps"]
        elif r.formulation == "baumgarte":
            g = v * f + x * fd + prm["K_bs"] * x * f - prm["eps"]
        else:
            d = 1 / np.cosh(prm["k_h"] * x)  # no overflow at these heights (k_h x <= 50)
            g = np.maximum(fd + prm["K_fz"] * (1 - d) * f - d * 100.0, -100.0 - fd)
        assert g.max() <= TOL, (r.formulation, r.params, g.max())
        assert r.max_violation <= TOL
        # trapezoidal collocation of x' = v, f' = fdot, v' = (f + p)/m - g
        dt = pb.dt
        a = (f + p) / pb.mass - pb.g
        for s, sdot in ((x, v), (f, fd), (v, a)):
            np.testing.assert_allclose(s[1:] - s[:-1], 0.5 * dt * (sdot[1:] + sdot[:-1]), atol=TOL)
        assert r.accuracy == pytest.approx(np.mean(x * f))
        assert r.cost == pytest.approx(np.sum(p**2))


def test_baumgarte_more_accurate_than_relaxed(results):
    by = {(r.formulation, tuple(r.params.values())): r for r in results}
    assert by[("baumgarte", (0.05, 20))].accuracy < by[("relaxed", (0.004,))].accuracy


def test_the_mass_rests_on_the_ground_at_the_end(results):
    for r in results:
        if not r.local_minimum:  # the ground carries it: contact force near the weight
            assert r.trajectory["x"][-1] < 5e-3
            assert r.final_force > 0.5 * 9.81


def test_local_minimum_is_flagged_with_ipopt_defaults():
    r = toy.solve_toy("sech", {"k_h": 400, "K_fz": 125}, ipopt_options=toy.IPOPT_DEFAULTS)
    assert r.local_minimum and "propeller holds the mass" in r.cause


def test_bad_input_is_a_clear_error():
    with pytest.raises(UnknownNameError, match="baumgarte"):
        toy.solve_toy("bogus", {"eps": 0.1})
    with pytest.raises(WbsimError, match="K_bs"):
        toy.solve_toy("baumgarte", {"eps": 0.1})
    with pytest.raises(WbsimError, match="positive"):
        toy.solve_toy("relaxed", {"eps": -1.0})
    # the parameter it does not take is named, not the whole set given
    with pytest.raises(UnknownNameError, match=r"'foo' of formulation 'baumgarte'; known.*K_bs"):
        toy.solve_toy("baumgarte", {"eps": 0.1, "K_bs": 20.0, "foo": 1.0})


def test_cli_writes_the_json(tmp_path, capsys):
    from wbsim.cli import main

    out = tmp_path / "toy.json"
    assert main(["dcc", "toy", "--repeats", "1", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    row = doc["results"][0]
    for key in (
        "formulation",
        "params",
        "status",
        "iterations",
        "solve_time_s",
        "accuracy",
        "final_force",
        "cost",
        "local_minimum",
        "cause",
    ):
        assert key in row
    assert "whole sweep" in capsys.readouterr().out
