"""The command line's defaults: episode lengths, output names, help texts (no physics: the
episodes are stubbed where only the arguments matter)."""

import json

import pytest

import wbsim.baseline
import wbsim.rollout
from wbsim.cli import main
from wbsim.envs import ENV_IDS, time_limit


def _fake_summary(cfg) -> dict:
    return {
        "status": "completed",
        "stopped_reason": "",
        "return": 1.0,
        "steps": 1,
        "seconds": cfg.seconds,
        "fell": False,
        "events": {},
    }


@pytest.mark.parametrize(
    "env_id",
    ["wbsim/G1HandWall-v0", "wbsim/G1OneLeg-v0", "wbsim/G1PlanReplay-v0", "wbsim/G1Stand-v0"],
)
def test_run_and_baseline_default_to_the_envs_time_limit(env_id, monkeypatch, tmp_path, capsys):
    expected = ENV_IDS[env_id].get("max_seconds", 10.0)
    assert time_limit(env_id) == expected
    seen = []

    def fake(cfg):
        seen.append(cfg.seconds)
        return _fake_summary(cfg)

    monkeypatch.setattr(wbsim.rollout, "run_episode", fake)  # the CLI's and baseline's loop
    assert main(["run", "--env", env_id, "--no-progress"]) == 0
    out = tmp_path / "b.json"
    args = ["baseline", "--env", env_id, "--episodes", "1", "--json", str(out), "--no-progress"]
    assert main(args) == 0
    assert seen == [expected, expected]
    assert json.loads(out.read_text())["seconds"] == expected
    assert main(["run", "--env", env_id, "--seconds", "0.5", "--no-progress"]) == 0
    assert seen[-1] == 0.5  # given, it wins
    capsys.readouterr()


def test_run_with_an_unknown_env_names_it(capsys):
    assert main(["run", "--env", "wbsim/Nope-v0", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "wbsim/Nope-v0" in err and "wbsim/G1Stand-v0" in err and len(err.splitlines()) == 1


def test_baseline_default_name_holds_non_default_episodes_seconds_noise_and_seed():
    """A short or otherwise different baseline does not take the name of a default run (which
    stays as it was: the names of docs/baselines)."""
    from wbsim.baseline import default_json_path

    assert default_json_path("wbsim/G1Stand-v0", "gravity_qp") == (
        "baselines/G1Stand-v0_gravity_qp.json"
    )
    # the defaults given explicitly (seconds: the env's limit) keep the default name
    assert default_json_path(
        "wbsim/G1HandWall-v0", "gravity_qp", episodes=20, seconds=8.5, reset_noise_scale=0.02
    ) == ("baselines/G1HandWall-v0_gravity_qp.json")
    assert default_json_path("wbsim/G1Stand-v0", "gravity_qp", episodes=2, seconds=3.0) == (
        "baselines/G1Stand-v0_gravity_qp-episodes=2-seconds=3.json"
    )
    assert default_json_path(
        "wbsim/G1OneLeg-v0",
        "projected_id",
        {"variant": "pinv"},
        {"noslip_iterations": 5},
        reset_noise_scale=0.05,
        seed=7,
        seconds=2.5,
    ) == (
        "baselines/G1OneLeg-v0_projected_id-variant=pinv-noslip_iterations=5-seconds=2.5"
        "-reset_noise=0.05-seed=7.json"
    )


def test_cli_baseline_writes_a_short_run_under_its_own_name(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(wbsim.rollout, "run_episode", _fake_summary)
    monkeypatch.chdir(tmp_path)
    args = ["baseline", "--episodes", "2", "--seconds", "3", "--no-progress"]
    assert main(args) == 0
    assert (tmp_path / "baselines/G1Stand-v0_gravity_qp-episodes=2-seconds=3.json").is_file()
    assert not (tmp_path / "baselines/G1Stand-v0_gravity_qp.json").exists()
    assert ": 2 episodes of 3 s" in capsys.readouterr().out
    assert main(["baseline", "--episodes", "1", "--no-progress"]) == 0
    assert ": 1 episode of 10 s" in capsys.readouterr().out  # not "1 episodes"
    assert (tmp_path / "baselines/G1Stand-v0_gravity_qp-episodes=1.json").is_file()


@pytest.mark.parametrize(
    ("command", "defaults"),
    [
        ("baseline", ["wbsim/G1Stand-v0", "gravity_qp", "20", "0"]),
        ("pushtest", ["wbsim/G1Stand-v0", "projected_id", "0"]),
    ],
)
def test_baseline_and_pushtest_help_show_their_defaults(command, defaults, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for value in defaults:
        assert f"(default: {value})" in text, value


def test_pushtest_compare_writes_its_documented_default_and_keeps_an_existing_plot(
    tmp_path, monkeypatch, capsys
):
    import json

    from wbsim.cli import COMPARE_PLOT

    results = []  # two small results of the protocol's form (an sdist ships no videos/)
    for name, impulses in (("projected_id", [10.7, 15.2, 16.9, 11.3]), ("push_step", [22.8] * 4)):
        path = tmp_path / f"{name}.json"
        config = {"env": "wbsim/G1Stand-v0", "controller": name, "duration": 0.1}
        path.write_text(
            json.dumps(
                {"config": config, "directions_deg": [0, 90, 180, 270], "max_impulse": impulses}
            )
        )
        results.append(str(path))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        main(["pushtest", "--help"])
    assert COMPARE_PLOT in " ".join(capsys.readouterr().out.split())  # the help names it
    assert main(["pushtest", "--compare", *results]) == 0
    assert (tmp_path / COMPARE_PLOT).stat().st_size > 10_000
    assert not (tmp_path / "pushtest.png").exists()
    before = (tmp_path / COMPARE_PLOT).stat().st_mtime_ns
    capsys.readouterr()
    assert main(["pushtest", "--compare", results[0]]) == 2  # not replaced silently
    assert "exists" in capsys.readouterr().err
    assert (tmp_path / COMPARE_PLOT).stat().st_mtime_ns == before
    assert main(["pushtest", "--compare", results[0], "--overwrite"]) == 0


def test_run_refuses_the_web_viewer_with_mujocos_before_serving(monkeypatch, capsys):
    import wbsim.web_viewer

    def no_server(*args, **kwargs):
        raise AssertionError("the web server was started")

    monkeypatch.setattr(wbsim.web_viewer, "WebViewer", no_server)
    assert main(["run", "--web", "--viewer", "--seconds", "0.1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "cannot be combined" in err and "web viewer:" not in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--log", ""],
        ["run", "--video", ""],
        ["run", "--video", " "],
        ["run", "--robot", ""],
        ["replay", "somewhere", "--video", ""],
        ["baseline", "--json", ""],
        ["pushtest", "--json", ""],
        ["pushtest", "--compare", "a.json", "--plot", ""],
    ],
)
def test_an_empty_output_path_is_refused(args, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(wbsim.rollout, "run_episode", _fake_summary)  # nothing would run anyway
    monkeypatch.chdir(tmp_path)
    assert main([*args, "--no-progress"] if args[0] in ("run", "baseline") else args) == 2
    err = capsys.readouterr().err
    flag = args[[a.strip() for a in args].index("") - 1]  # the option given the empty path
    assert f"{flag} is an empty path" in err and len(err.splitlines()) == 1
    assert not any(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize(
    "command",
    ["run", "statics", "baseline", "bench", "soak", "pushtest", "report", "replay", "dcc"],
)
def test_help_gives_no_empty_default(command, capsys):
    """argparse's "(default: None)" says nothing: an unset option gets none, and an option whose
    help gives its default in words gets it once."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for empty in ("(default: None)", "(default: [])", "(default: False)"):
        assert empty not in text
    assert "time limit) (default" not in text


#: The subcommands that show progress while they work (a bar, or a line per episode, direction,
#: stage or solve): each takes --no-progress. The others show none and take nothing. A new
#: subcommand goes into one of the two (the test below lists them all).
SHOWS_PROGRESS = [("run",), ("baseline",), ("soak",), ("pushtest",), ("bench",), ("dcc", "plan")]
NO_PROGRESS = [
    ("list",),
    ("statics",),
    ("report",),
    ("replay",),
    ("dcc", "toy"),
    ("dcc", "compare"),
]


def _subcommands(parser, prefix=()) -> list[tuple[str, ...]]:
    """Every leaf subcommand of ``parser``, e.g. ``("run",)``, ``("dcc", "plan")``."""
    import argparse

    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _subcommands(sub, (*prefix, name)) or [(*prefix, name)]
    return out


def test_every_subcommand_is_listed_as_showing_progress_or_not():
    from wbsim.cli import build_parser

    assert sorted(_subcommands(build_parser())) == sorted(SHOWS_PROGRESS + NO_PROGRESS)


@pytest.mark.parametrize("command", SHOWS_PROGRESS, ids=" ".join)
def test_every_subcommand_with_progress_takes_no_progress_and_says_what_it_hides(command, capsys):
    from wbsim.cli import build_parser

    parser = build_parser()
    assert parser.parse_args([*command, "--no-progress"]).no_progress is True
    assert parser.parse_args(list(command)).no_progress is False
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--no-progress no " in text  # "no progress bar ...", "no line per ..."


class _Stop(Exception):
    """Ends a stubbed command once its arguments arrived."""


@pytest.mark.parametrize("flag", [[], ["--no-progress"]])
def test_bench_no_progress_reaches_the_bench(flag, monkeypatch):
    import wbsim.bench

    seen = []

    def collect(robot, settings, progress=True, controller=None, controller_options=None):
        seen.append(progress)
        raise _Stop

    monkeypatch.setattr(wbsim.bench, "_collect", collect)
    with pytest.raises(_Stop):
        main(["bench", "--quick", *flag])
    assert seen == [not flag]


@pytest.mark.parametrize("flag", [[], ["--no-progress"]])
def test_dcc_plan_no_progress_reaches_the_solves(flag, monkeypatch, tmp_path):
    pytest.importorskip("casadi")
    from wbsim.planning import receding

    seen = []

    def run_receding(steps, settings=None, task=None, kin=None, planner=None, progress=False):
        seen.append(progress)
        raise _Stop

    monkeypatch.setattr(receding, "run_receding", run_receding)
    with pytest.raises(_Stop):
        main(["dcc", "plan", "--out", str(tmp_path / "plan.npz"), *flag])
    assert seen == [not flag]


def test_a_closed_stdout_pipe_stops_quietly():
    """``wbsim list | head -3``: once the reader of standard output is gone, the command stops
    with 141 (as one killed by SIGPIPE) and prints no error; it said '[Errno 32] Broken pipe'
    and exited 2."""
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-m", "wbsim.cli", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # before the child prints (its imports take about a second)
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 141, err
    assert "Broken pipe" not in err and "Traceback" not in err


def test_another_broken_pipe_is_an_error(capsys):
    """A broken pipe that is not standard output's (a socket, a child's pipe) is reported."""
    import wbsim.cli

    def broken(args):
        raise BrokenPipeError(32, "Broken pipe")

    args = wbsim.cli.build_parser().parse_args(["list"])
    args.func = broken
    assert wbsim.cli._run_command(args) == 2
    assert "wbsim list: error: [Errno 32] Broken pipe" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("run", "in the web browser (viser): show the run live, in real time; the page stays up"),
        ("replay", "in the web browser (viser): show the run (a time slider and a play button)"),
    ],
)
def test_web_help_says_where_before_what(command, says, capsys):
    """``--web``'s help reads as one sentence: it once said "instead of writing a video in the
    web browser", as if the video were written there."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert says in text
    assert "video in the web browser" not in text
