"""The whole-body DCC planner: a short receding-horizon run from the stand pose; every constraint
recomputed here at every knot (numpy, Pinocchio), the plan file read back with numpy alone."""

import json

import numpy as np
import pytest

pytest.importorskip("casadi")
pytest.importorskip("adam")

from wbsim.errors import UnknownNameError, WbsimError
from wbsim.planning import plan_file
from wbsim.planning.kinematics import load_kinematics, pinocchio_reference
from wbsim.planning.receding import Task, run_receding
from wbsim.planning.whole_body import PlannerSettings, build_planner

TOL = 1e-6


@pytest.fixture(scope="module")
def kin(g1):
    return load_kinematics(g1)


@pytest.fixture(scope="module")
def run(kin):
    settings = PlannerSettings(knots=6)
    return run_receding(3, settings, Task("step"), kin=kin), build_planner(kin, settings)


def _check_knot_constraints(g1, st, s, c, T, one_solve=False):
    """Every planner constraint at every knot, recomputed without the planner's code.

    ``one_solve``: the knots are one solve's horizon, so the collocation of the controlled
    states holds too (across receding solves, knot k's control comes from solve k and the
    interval k -> k+1 used solve k's knot-1 control)."""
    m = g1.total_mass
    P, F = s["P"].reshape(T, 8, 3), s["F"].reshape(T, 8, 3)
    U, Fd = c["U_P"].reshape(T, 8, 3), c["F_dot"].reshape(T, 8, 3)
    worst = {}
    for k in range(T):
        ref = pinocchio_reference(
            g1, s["p_B"][k], s["rho"][k], s["s"][k], c["v_B"][k], c["omega"][k], c["s_dot"][k]
        )
        worst["points"] = max(worst.get("points", 0), np.abs(ref["points"] - P[k]).max())
        worst["com"] = max(worst.get("com", 0), np.abs(ref["com"] - s["x"][k]).max())
        worst["momentum"] = max(worst.get("momentum", 0), np.abs(ref["h"] - s["h"][k]).max())
        assert abs(np.linalg.norm(s["rho"][k]) - 1) < TOL
        h, fz = P[k, :, 2], F[k, :, 2]
        assert h.min() >= -TOL and fz.min() >= -TOL
        assert np.all(np.abs(F[k, :, :2]) <= st.mu * fz[:, None] + TOL)
        assert np.abs(U[k]).max() <= st.M_V + TOL and np.abs(Fd[k]).max() <= st.M_f + TOL
        hdot = U[k, :, 2]  # DCC planar: the normal velocity is the control
        if st.formulation == "baumgarte":
            g = hdot * fz + h * Fd[k, :, 2] + st.params["K_bs"] * h * fz - st.params["eps"]
        elif st.formulation == "relaxed":
            g = h * fz - st.params["eps"]
        else:
            d = 1 / np.cosh(st.params["k_h"] * h)
            g = Fd[k, :, 2] + st.params["K_fz"] * (1 - d) * fz - d * st.M_f
        assert g.max() <= TOL, (k, g.max())
        c_l, c_r = P[k, :4].mean(0), P[k, 4:].mean(0)
        assert abs(c_l[2] - c_r[2]) <= st.M_hf + TOL
        assert s["x"][k][2] >= st.com_z_min - TOL
        assert np.abs(s["h"][k][3:]).max() <= st.M_homega + TOL
    # momentum balance, trapezoidal: h_{k+1} - h_k = dt/2 (hdot_k + hdot_{k+1})
    hdot = []
    for k in range(T):
        lin = F[k].sum(0) + [0, 0, -m * 9.81]
        ang = np.cross(P[k] - s["x"][k], F[k]).sum(0)
        hdot.append(np.concatenate([lin, ang]))
    hdot = np.array(hdot)
    np.testing.assert_allclose(
        np.diff(s["h"], axis=0), 0.5 * st.dt * (hdot[1:] + hdot[:-1]), atol=1e-6
    )
    if not one_solve:
        return worst
    # DCC planar, trapezoidal: pdot = [tanh(k_t h) u_x, tanh(k_t h) u_y, u_z]
    tau = np.tanh(st.k_t * P[..., 2])[..., None]
    pdot = np.concatenate([tau * U[..., :2], U[..., 2:]], axis=-1)
    np.testing.assert_allclose(np.diff(P, axis=0), 0.5 * st.dt * (pdot[1:] + pdot[:-1]), atol=1e-6)
    return worst


def test_every_solve_succeeds_and_every_constraint_holds(run, g1):
    res, _ = run
    assert all(x["success"] for x in res.solves), res.solves
    assert all(x["max_violation"] < 1e-7 for x in res.solves)
    worst = _check_knot_constraints(g1, res.settings, res.states, res.controls, len(res.times))
    assert worst["points"] < TOL and worst["com"] < TOL and worst["momentum"] < TOL, worst


def test_a_solve_checked_at_all_its_knots(kin, g1):
    """One solve's whole horizon (not only the executed knots), with the sech formulation."""
    from wbsim.planning.receding import _rest_guess, com_reference, initial_state

    st = PlannerSettings(knots=5, formulation="sech", params={"k_h": 500.0, "K_fz": 250.0})
    pl = build_planner(kin, st)
    start = initial_state(kin, g1)
    pl.set_parameters(
        start,
        com_reference(Task("step", settle=0.0), np.arange(5) * 0.1, start),
        start["s"],
        start["P"],
    )
    pl.set_guess(*_rest_guess(start, 5, kin.n_joints))
    r = pl.solve()
    assert r.success, r.status
    worst = _check_knot_constraints(g1, st, r.states, r.controls, 5, one_solve=True)
    assert max(worst.values()) < TOL, worst


def test_rest_flags_reach_the_planner(run, kin, g1):
    """Rest knots (``Task.stop``) are a parameter of the built NLP: flags outside [0, 1] are
    refused, and the rest term is part of the cost."""
    from wbsim.planning.receding import com_reference, initial_state

    _, pl = run
    assert "rest_momentum" in pl.terms and pl.settings.weights["rest_momentum"] > 0
    start = initial_state(kin, g1)
    t = np.arange(6) * 0.1
    ref = com_reference(Task("step"), t, start)
    with pytest.raises(WbsimError, match="rest flags"):
        pl.set_parameters(start, ref, start["s"], start["P"], rest=np.full(6, 2.0))
    pl.set_parameters(
        start, ref, start["s"], start["P"], rest=Task("step", half_periods=1).rest(t + 2.5)
    )


def test_plan_file_loads_with_numpy_alone(run, tmp_path):
    res, _ = run
    path = plan_file.save_plan(tmp_path / "plan.npz", res)
    with np.load(path, allow_pickle=False) as z:  # no wbsim needed to read it
        assert str(z["format"]) == plan_file.FORMAT
        T = len(z["times"])
        assert z["base_quaternion_wxyz"].shape == (T, 4)
        assert z["joint_positions"].shape == (T, 29) and len(z["joint_names"]) == 29
        assert z["point_positions"].shape == (T, 8, 3) and z["point_forces"].shape == (T, 8, 3)
        assert z["contact"].shape == (T, 8) and z["contact"].dtype == bool
        assert z["foot_rotations"].shape == (T, 2, 3, 3)
        # the DCC normal condition from the file's fields alone (Baumgarte 0.05, 20)
        h, fz = z["point_positions"][..., 2], z["point_forces"][..., 2]
        hdot, fdot = z["point_velocities"][..., 2], z["point_force_rates"][..., 2]
        assert (hdot * fz + h * fdot + 20.0 * h * fz - 0.05).max() <= TOL
        assert json.loads(str(z["params_json"])) == {"eps": 0.05, "K_bs": 20.0}
        # standing at the start: every point in contact, the weight shared
        assert z["contact"][0].all()
        assert z["point_forces"][0, :, 2].sum() == pytest.approx(33.34114202 * 9.81, rel=1e-6)
    plan = plan_file.load_plan(path)
    assert "foot lift" in plan_file.summary(plan)


def test_contact_set_and_switches():
    P = np.zeros((3, 8, 3))
    F = np.zeros((3, 8, 3))
    F[:, :, 2] = 40.0
    P[1, 0, 2], F[1, 0, 2] = 0.02, 0.0  # point 0 lifts at knot 1, lands at knot 2
    c = plan_file.contact_set(P, F)
    assert c[0].all() and not c[1, 0] and c[2].all()
    t, i, kind = plan_file.switches(np.array([0.0, 0.1, 0.2]), c)
    assert list(t) == [0.1, 0.2] and list(i) == [0, 0] and list(kind) == [-1, 1]


def test_bad_settings_are_clear_errors(kin):
    with pytest.raises(UnknownNameError, match="baumgarte"):
        build_planner(kin, PlannerSettings(formulation="soft"))
    with pytest.raises(WbsimError, match="eps"):
        build_planner(kin, PlannerSettings(formulation="relaxed", params={"K_bs": 1.0}))
    with pytest.raises(UnknownNameError, match="task"):
        Task("run")
    with pytest.raises(WbsimError, match="plan file"):
        plan_file.load_plan("/nonexistent/plan.npz")


@pytest.mark.slow
def test_cli_plan_and_compare(tmp_path, capsys):
    """``wbsim dcc plan`` writes a plan file; ``run_compare`` writes its JSON (tiny horizons)."""
    from wbsim.cli import main
    from wbsim.planning.receding import run_compare

    out = tmp_path / "p.npz"
    code = main(
        [
            "dcc",
            "plan",
            "--out",
            str(out),
            "--seconds",
            "0.1",
            "--knots",
            "4",
            "--formulation",
            "relaxed",
            "--param",
            "eps=0.004",
        ]
    )
    assert code == 0 and "foot lift" in capsys.readouterr().out
    assert str(plan_file.load_plan(out)["formulation"]) == "relaxed"
    assert main(["dcc", "plan", "--out", str(out), "--formulation", "bogus", "--overwrite"]) == 2
    assert "bogus" in capsys.readouterr().err
    # an existing plan is never replaced silently; a plan is a .npz (checked before the work)
    before = out.read_bytes()
    assert main(["dcc", "plan", "--out", str(out), "--seconds", "0.1", "--knots", "4"]) == 2
    assert "exists" in capsys.readouterr().err and out.read_bytes() == before
    assert main(["dcc", "plan", "--out", str(tmp_path / "p.txt")]) == 2
    assert ".npz" in capsys.readouterr().err and not (tmp_path / "p.txt").exists()
    js = tmp_path / "c.json"
    assert (
        run_compare(str(js), steps=1, knots=4, grid=[("baumgarte", {"eps": 0.05, "K_bs": 20.0})])
        == 0
    )
    row = json.loads(js.read_text())["rows"][0]
    for key in ("formulation", "params", "status", "iterations", "solve_time_s", "accuracy"):
        assert key in row


@pytest.mark.parametrize("command", ["toy", "compare"])
def test_dcc_json_outputs_are_not_replaced_silently(command, tmp_path, capsys):
    """``wbsim dcc toy|compare --json F`` with ``F`` existing: refused before any solve, the file
    left as it was."""
    from wbsim.cli import main

    out = tmp_path / "r.json"
    out.write_text('{"mine": 1}')
    assert main(["dcc", command, "--json", str(out)]) == 2
    assert "exists" in capsys.readouterr().err and out.read_text() == '{"mine": 1}'


@pytest.mark.parametrize("video", ["v.avi", "v", "sub"])
def test_dcc_plan_video_path_is_checked_before_the_solves(video, tmp_path, monkeypatch, capsys):
    """``wbsim dcc plan --video`` that the video writer would refuse (not ``.mp4``, a folder)
    stops the command before the first solve, not after minutes of planning."""
    from wbsim.cli import main
    from wbsim.planning import receding

    def no_solve(*args, **kwargs):
        raise AssertionError("the planner ran before the video path was checked")

    monkeypatch.setattr(receding, "run_receding", no_solve)
    (tmp_path / "sub").mkdir()
    out = tmp_path / "p.npz"
    assert main(["dcc", "plan", "--out", str(out), "--video", str(tmp_path / video)]) == 2
    err = capsys.readouterr().err
    assert "video" in err and str(tmp_path / video) in err
    assert not out.exists()


class _Planned(Exception):
    """Stops ``run_plan`` at the planner, with the task it was given."""


@pytest.mark.parametrize("seconds,moves", [(None, True), ("2.5", False), ("3.1", True)])
def test_dcc_plan_default_sways_and_a_short_plan_says_it_stands(
    seconds, moves, tmp_path, monkeypatch, capsys
):
    """``wbsim dcc plan`` as typed, without ``--seconds``, plans a step (its default was 2.5 s,
    which with the end at rest leaves no room for half a sway: a stand, said nowhere). A plan
    too short for a sway says so before the solves; 3.1 s (1 s standing, half a period 1.4 s,
    half the taper 0.4 s, 0.3 s at rest) is the shortest that sways."""
    from wbsim.cli import main
    from wbsim.planning import receding

    def planner(steps, settings, task, progress=False):
        raise _Planned(task)

    monkeypatch.setattr(receding, "run_receding", planner)
    args = ["dcc", "plan", "--out", str(tmp_path / "p.npz")]
    with pytest.raises(_Planned) as info:
        main(args + (["--seconds", seconds] if seconds else []))
    task = info.value.args[0]
    assert (task.sway > 0 and task.half_periods >= 1) == moves
    assert ("stands still" in capsys.readouterr().err) == (not moves)


def test_dcc_plan_under_one_knot_names_seconds(tmp_path, capsys):
    """``--seconds`` shorter than one knot interval: the error names the option and the knot,
    not the internal step count ("steps must be >= 1, got 0")."""
    from wbsim.cli import main

    assert main(["dcc", "plan", "--out", str(tmp_path / "p.npz"), "--seconds", "0.05"]) == 2
    err = capsys.readouterr().err
    assert "--seconds 0.05 is under one knot interval (0.1 s)" in err
    assert "stands still" not in err and not (tmp_path / "p.npz").exists()
