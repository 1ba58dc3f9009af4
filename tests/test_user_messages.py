"""Messages a fresh user got that named the wrong cause or nothing: a replay without config.json,
an empty or unknown plan_file, baseline's JSON path, dcc compare's help and its checks."""

import pytest

from wbsim.cli import build_parser, main


def _one_line(capsys, status, *needles):
    """The error line (stdout is kept in ``_one_line.out``)."""
    out, err = capsys.readouterr()
    _one_line.out, err = out, err.strip()
    assert status == 2 and err.count("\n") == 0, (status, err)
    for needle in needles:
        assert needle in err, err
    return err


def test_replay_without_config_json_says_it_is_missing(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["run", "--seconds", "0.01", "--no-progress", "--log", str(run)]) == 0
    (run / "config.json").unlink()
    capsys.readouterr()
    err = _one_line(capsys, main(["replay", str(run)]), f"{run / 'config.json'} is missing")
    assert "older wbsim" not in err
    assert not (run / "replay.mp4").exists()


@pytest.mark.parametrize(
    "value, needles",
    [
        ("", ("plan_file is empty", "step, walk")),
        ("jump", ("plan_file 'jump'", "(step, walk)", "no such file")),
    ],
)
def test_plan_file_empty_or_unknown_lists_the_shipped_plans(capsys, value, needles):
    args = ["run", "--env", "wbsim/G1PlanReplay-v0", "-e", f"plan_file={value}"]
    status = main([*args, "--seconds", "0.01", "--no-progress"])
    err = _one_line(capsys, status, *needles)
    assert "not found: ." not in err


def test_baseline_prints_where_it_wrote_its_json(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["baseline", "--episodes", "1", "--seconds", "0.02", "--no-progress"]
    assert main(args) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "written to" in x)
    path = tmp_path / line.split("written to", 1)[1].strip()
    assert path.is_file() and path.parent == tmp_path / "baselines"


def _subparser(*names):
    parser = build_parser()
    for name in names:
        parser = next(a for a in parser._actions if a.dest and a.choices and name in a.choices)
        parser = parser.choices[name]
    return parser


def test_dcc_help_names_only_options_that_exist():
    from wbsim.planning.receding import Task

    for name in ("plan", "compare"):
        sub = _subparser("dcc", name)
        flags = {f for a in sub._actions for f in a.option_strings}
        for action in sub._actions:
            for word in (action.help or "").split():
                if word.startswith("--"):
                    assert word.strip(".,;:()") in flags, (name, action.help)
    task_help = next(a.help for a in _subparser("dcc", "compare")._actions if a.dest == "task")
    assert f"{Task().speed:g} m/s" in task_help


@pytest.mark.parametrize(
    "args, needle", [(["--steps", "0"], "--steps must be"), (["--knots", "0"], "knots must be")]
)
def test_dcc_compare_checks_before_the_table(capsys, args, needle):
    _one_line(capsys, main(["dcc", "compare", *args]), needle)
    assert _one_line.out == ""  # no header before the error
