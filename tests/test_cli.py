"""The command line: statics JSON schema, report, baseline, bad input."""

import json

import numpy as np
import pytest

from wbsim.cli import main


def _statics(capsys, *args):
    code = main(["statics", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_statics_json_schema_and_physics(capsys, tmp_path, g1):
    pose = {
        "base_position": [0.0, 0.0, 0.7567],
        "base_quaternion_wxyz": [1, 0, 0, 0],
        "joints": dict(g1.pose("stand").joints),
    }
    path = tmp_path / "pose.json"
    path.write_text(json.dumps(pose))
    code, out = _statics(
        capsys,
        "--robot",
        "g1",
        "--config",
        str(path),
        "--support",
        "left_foot,right_foot",
        "--contact-model",
        "points",
        "--method",
        "qp",
    )
    assert code == 0
    assert set(out) >= {"tau", "contact_forces", "feasible", "residual", "method"}
    assert list(out["tau"]) == list(g1.joint_names) and out["feasible"] is True
    assert out["method"] == "qp" and out["residual"] < 1e-8
    assert set(out["contact_forces"]) == set(g1.contact_point_names)
    fz = sum(f[2] for f in out["contact_forces"].values())
    assert all(len(f) == 3 for f in out["contact_forces"].values())
    assert fz == pytest.approx(g1.total_mass * 9.81, rel=1e-6)


def test_statics_wrench_single(capsys):
    code, out = _statics(
        capsys,
        "--pose",
        "stand",
        "--support",
        "left_foot",
        "--contact-model",
        "wrench",
        "--method",
        "single",
    )
    # the stand pose's CoM is between the feet: one foot alone cannot carry it
    assert code == 1 and out["feasible"] is False
    assert len(out["contact_forces"]["left_foot"]) == 6


def test_statics_bad_input(capsys, tmp_path):
    assert main(["statics", "--robot", "r2d2"]) == 2
    assert "g1" in capsys.readouterr().err
    assert main(["statics", "--support", "left_foot,nose"]) == 2
    assert "known feet: left_foot, right_foot" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"base_pos": [0, 0, 1]}))
    assert main(["statics", "--config", str(bad)]) == 2
    assert "base_pos" in capsys.readouterr().err


def test_report_prints_rows_and_writes_plots(tmp_path, capsys):
    for ctrl in ("gravity_qp", "zero"):
        assert (
            main(
                [
                    "run",
                    "--controller",
                    ctrl,
                    "--seconds",
                    "0.3",
                    "--log",
                    str(tmp_path / ctrl),
                    "--no-progress",
                ]
            )
            == 0
        )
    capsys.readouterr()
    assert main(["report", str(tmp_path / "gravity_qp"), str(tmp_path / "zero")]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith(("| gravity_qp", "| zero"))]
    assert len(rows) == 2
    # every violation kind of the diagnostics has a column, and the slides one number per run
    head = next(line for line in out.splitlines() if line.startswith("| run"))
    cols = [c.strip() for c in head.strip("|").split("|")]
    assert {"slip", "slide", "lim"} <= set(cols), cols
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[cols.index("slide")].isdigit(), row
    for ctrl in ("gravity_qp", "zero"):
        png = tmp_path / ctrl / "normal_forces.png"
        assert png.stat().st_size > 10_000
        from PIL import Image

        img = np.asarray(Image.open(png).convert("L"), dtype=float)
        assert img.std() > 10  # axes, curves and labels, not a blank canvas


def test_baseline_json(tmp_path, capsys):
    out = tmp_path / "b.json"
    assert (
        main(
            [
                "baseline",
                "--env",
                "wbsim/G1Stand-v0",
                "--controller",
                "zero",
                "--episodes",
                "2",
                "--seconds",
                "1",
                "--json",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    data = json.loads(out.read_text())
    assert data["episodes"] == 2 and data["success_rate"] == 0.0 and data["fell"] == 2
    assert data["return_std"] >= 0 and len(data["per_episode"]) == 2
    # seeded reset noise: two episodes differ
    assert data["per_episode"][0]["return"] != data["per_episode"][1]["return"]


def test_run_without_env_picks_the_robots_stand_env():
    """``wbsim run --robot icub`` runs iCub's registered stand env (the summary names it); a robot
    without one gets G1Stand-v0's scene with the robot swapped in."""
    from wbsim.cli import _default_env

    assert _default_env(None) == "wbsim/G1Stand-v0"
    assert _default_env("icub") == "wbsim/ICubStand-v0"
    assert _default_env("talos") == "wbsim/TalosStand-v0"
    assert _default_env("g1_hands") == "wbsim/G1Stand-v0"


def test_the_loaders_notes_are_lines_not_python_warnings(capsys, monkeypatch):
    """A run of iCub prints its loader's note (inertias made physical) as one ``note:`` line on
    stderr, not a Python warning with a source line."""
    import wbsim.robot

    monkeypatch.setattr(wbsim.robot, "_BUILD_CACHE", {})  # built (and noted) again
    assert main(["run", "--robot", "icub", "--seconds", "0.01", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "wbsim run: note: icub: the inertia tensors" in err
    assert "UserWarning" not in err and "read_description(" not in err
