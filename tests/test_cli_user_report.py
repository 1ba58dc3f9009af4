"""What a fresh user hit from the README: `wbsim run --log` on a folder holding a run, bad option
values, baselines of two controller variants overwriting each other, `wbsim run` arguments without
help."""

import argparse
import json
import math
import signal
from pathlib import Path

import numpy as np
import pytest

from wbsim.cli import build_parser, main
from wbsim.errors import WbsimError


def _run(*args):
    return main(["run", "--seconds", "0.01", "--no-progress", *args])


def test_run_refuses_a_folder_holding_a_run(tmp_path, capsys):
    run_dir = tmp_path / "g1_stand"
    assert _run("--log", str(run_dir)) == 0  # a missing folder: created
    (run_dir / "normal_forces.png").write_bytes(b"a plot of wbsim report")
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    capsys.readouterr()
    assert _run("--log", str(run_dir)) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "error:" in err
    assert str(run_dir) in err and "--overwrite" in err
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before  # nothing touched
    # --overwrite: today's behaviour, the run is replaced and report's stale plot removed
    assert _run("--log", str(run_dir), "--overwrite") == 0
    assert not (run_dir / "normal_forces.png").exists()
    assert (run_dir / "summary.json").is_file()


def test_run_refuses_an_existing_video_and_a_non_mp4_path(tmp_path, capsys):
    """A recorded video is never replaced silently, and a .gif path is an error, not a GIF: both
    are one-line errors before anything is built (the log folder stays empty, the file untouched);
    --overwrite replaces the video with a playable MP4."""
    video, run_dir = tmp_path / "v.mp4", tmp_path / "run"
    video.write_bytes(b"an earlier video")
    capsys.readouterr()
    assert (
        _run("--video", str(video), "--log", str(run_dir), "--width", "64", "--height", "48") == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(video) in err and "--overwrite" in err
    assert video.read_bytes() == b"an earlier video" and not run_dir.exists()
    for bad in ("v.gif", "v", "v.mp4.avi"):
        assert _run("--video", str(tmp_path / bad)) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and ".mp4" in err
        assert not (tmp_path / bad).exists()
    assert _run("--video", str(video), "--overwrite", "--width", "64", "--height", "48") == 0
    import imageio.v2 as imageio

    assert imageio.get_reader(str(video)).get_data(0).shape == (48, 64, 3)


def test_check_video_path(tmp_path):
    from wbsim.render import VideoWriter, check_video_path

    assert check_video_path(tmp_path / "new.MP4") == tmp_path / "new.MP4"  # any case of .mp4
    assert not (tmp_path / "new.MP4").exists()  # nothing is created
    (tmp_path / "old.mp4").write_bytes(b"x")
    with pytest.raises(WbsimError, match="exists"):
        check_video_path(tmp_path / "old.mp4")
    assert check_video_path(tmp_path / "old.mp4", overwrite=True) == tmp_path / "old.mp4"
    (tmp_path / "dir.mp4").mkdir()
    with pytest.raises(WbsimError, match="folder"):
        check_video_path(tmp_path / "dir.mp4", overwrite=True)
    with pytest.raises(WbsimError, match="expected an .mp4 path"):
        VideoWriter(tmp_path / "x.gif")
    assert not (tmp_path / "x.gif").exists()


def test_run_into_an_empty_existing_folder(tmp_path):
    assert _run("--log", str(tmp_path)) == 0
    assert (tmp_path / "summary.json").is_file()


@pytest.mark.parametrize(
    "args, name",
    [
        (["-c", "frequency_hz=abc"], "frequency_hz"),
        (["--controller", "pd", "-c", "frequency_hz=abc"], "frequency_hz"),
        (["--controller", "projected_id", "-c", "mu=abc"], "mu"),
        (["-e", "push_magnitude=abc"], "push_magnitude"),
        (["-e", "frame_skip=0"], "frame_skip"),
    ],
)
def test_bad_option_values_are_one_line_errors(capsys, args, name):
    assert _run(*args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "error:" in err and "Traceback" not in err
    assert name in err and ("'abc'" in err or "got 0" in err)


@pytest.mark.parametrize(
    "option, value",
    [
        ("frame_skip", 0),
        ("frame_skip", 2.5),
        ("frame_skip", "2"),
        ("max_seconds", 0.0),
        ("max_seconds", "abc"),
        ("push_magnitude", "abc"),
        ("push_magnitude", -1.0),
        ("push_interval", 0.0),
        ("push_duration", float("nan")),
        ("fall_height", "abc"),
        ("fall_height", 1.5),
        ("joint_position_scale", "abc"),
        ("pd_frequency_hz", "abc"),
        ("pd_frequency_hz", 0.0),
        ("reset_noise_scale", -0.1),
        ("reset_noise_scale", True),
        ("width", 0),
        ("height", "480"),
    ],
)
def test_env_rejects_bad_numeric_options(g1, option, value):
    from wbsim.envs.humanoid import HumanoidEnv

    with pytest.raises(WbsimError, match=rf"{option} must be .*, got {value!r}"):
        HumanoidEnv(g1, **{option: value})


def test_env_rejects_reward_weights_that_are_not_a_mapping(g1, capsys):
    from wbsim.envs.humanoid import HumanoidEnv

    with pytest.raises(WbsimError, match="reward_weights must be a mapping .* got 'foo'"):
        HumanoidEnv(g1, reward_weights="foo")
    capsys.readouterr()
    _one_line_error(capsys, _run("-e", "reward_weights=foo"), "reward_weights must be a mapping")


def test_env_accepts_numpy_numbers(g1):
    from wbsim.envs.humanoid import HumanoidEnv

    env = HumanoidEnv(g1, frame_skip=np.int64(2), max_seconds=np.float64(1.0), width=64, height=48)
    assert env.frame_skip == 2 and env.dt == pytest.approx(2 * g1.mj_model.opt.timestep)


@pytest.mark.parametrize(
    "controller, option",
    [
        ("gravity_qp", "frequency_hz"),
        ("gravity_qp", "eps"),
        ("gravity_qp", "mu"),
        ("projected_id", "mu"),
        ("projected_id", "force_weight"),
        ("projected_id", "release_time"),
        ("projected_id", "com_margin"),
        ("pd", "frequency_hz"),
        ("pd", "damping_ratio"),
    ],
)
def test_controllers_reject_non_numbers(g1, controller, option):
    from wbsim.controllers import make_controller

    with pytest.raises(WbsimError, match=rf"{option}.*'abc'"):
        make_controller(controller, g1, **{option: "abc"})


@pytest.mark.parametrize(
    ("controller", "options", "message"),
    [
        # the first two used to crash with a TypeError inside the constructor
        (
            "stepping",
            {"dcm_gain": "abc"},
            "option 'dcm_gain' of controller 'stepping' takes a number (float), got 'abc'",
        ),
        (
            "push_step",
            {"cmp_reach": "abc"},
            "option 'cmp_reach' of controller 'push_step' takes a number (float), got 'abc'",
        ),
        (
            "push_step",
            {"max_steps": 2.5},
            "option 'max_steps' of controller 'push_step' takes an integer (int), got 2.5",
        ),
        # and projected_id ran with fast="abc" (a text is true)
        (
            "projected_id",
            {"fast": "abc"},
            "option 'fast' of controller 'projected_id' takes true or false (bool), got 'abc'",
        ),
        (
            "gravity_qp",
            {"mu": "abc"},
            "option 'mu' of controller 'gravity_qp' takes a number (float) or null, got 'abc'",
        ),
        (
            "stepping",
            {"wbc_options": {"fast": "abc"}},
            "option 'fast' of projected_id (wbc_options) takes true or false (bool), got 'abc'",
        ),
    ],
)
def test_controller_options_of_the_wrong_kind_are_one_line_errors(g1, controller, options, message):
    from wbsim.controllers import make_controller

    with pytest.raises(WbsimError) as raised:
        make_controller(controller, g1, **options)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    "command",
    [
        ["run", "--seconds", "0.1", "--controller", "stepping"],
        ["baseline", "--episodes", "1", "--controller", "stepping"],
        ["pushtest", "--directions", "1", "--controller", "stepping"],
    ],
)
def test_the_cli_refuses_a_controller_option_of_the_wrong_kind_before_any_work(
    command, tmp_path, monkeypatch, capsys
):
    """Checked as the options are parsed: no episode, no push trial, no output starts."""
    import wbsim.pushtest
    import wbsim.rollout

    def no_work(*args, **kwargs):
        raise AssertionError("work started")

    monkeypatch.setattr(wbsim.rollout, "run_episode", no_work)
    monkeypatch.setattr(wbsim.pushtest, "run_push_test", no_work)
    out = str(tmp_path / "out")
    outputs = ["--log", out] if command[0] == "run" else ["--json", out + ".json"]
    assert main([*command, "-c", "dcm_gain=abc", *outputs, "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"wbsim {command[0]}: error: option 'dcm_gain' of controller 'stepping' takes a number "
        "(float), got 'abc'"
    )
    assert list(tmp_path.iterdir()) == []


def test_task_gains_reject_non_numbers():
    from wbsim.controllers.tasks import TaskGains

    with pytest.raises(WbsimError, match="frequency_hz .*'abc'"):
        TaskGains.from_value({"frequency_hz": "abc"})
    with pytest.raises(WbsimError, match="weight .*'abc'"):
        TaskGains.from_value([2.0, 1.0, "abc"])


def test_baseline_default_path_names_non_default_options():
    from wbsim.baseline import default_json_path

    assert (
        default_json_path("wbsim/G1OneLeg-v0", "projected_id")
        == "baselines/G1OneLeg-v0_projected_id.json"
    )
    assert (
        default_json_path("wbsim/G1OneLeg-v0", "projected_id", {"variant": "qp"})
        == "baselines/G1OneLeg-v0_projected_id.json"
    )  # the default variant
    assert (
        default_json_path("wbsim/G1OneLeg-v0", "projected_id", {"variant": "pinv"})
        == "baselines/G1OneLeg-v0_projected_id-variant=pinv.json"
    )
    assert (
        default_json_path("wbsim/G1Stand-v0", "pd", {"frequency_hz": 4, "damping_ratio": 1.0})
        == "baselines/G1Stand-v0_pd-frequency_hz=4.json"
    )


def test_baseline_records_controller_options(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = [
        "baseline",
        "--controller",
        "pd",
        "--episodes",
        "1",
        "--seconds",
        "0.05",
        "--no-progress",
    ]
    short = "-episodes=1-seconds=0.05"  # a short run's name says so (after the options)
    assert main([*args, "-c", "frequency_hz=4"]) == 0
    assert main(args) == 0
    tuned = json.loads(
        (tmp_path / f"baselines/G1Stand-v0_pd-frequency_hz=4{short}.json").read_text()
    )
    default = json.loads((tmp_path / f"baselines/G1Stand-v0_pd{short}.json").read_text())
    assert tuned["controller_options"] == {"frequency_hz": 4}
    assert default["controller_options"] == {}
    # env options (-e) reach the episodes, are recorded and name the default file
    assert main([*args, "-e", "noslip_iterations=5"]) == 0
    noslip = json.loads(
        (tmp_path / f"baselines/G1Stand-v0_pd-noslip_iterations=5{short}.json").read_text()
    )
    assert noslip["env_options"] == {"noslip_iterations": 5} and default["env_options"] == {}
    assert noslip["per_episode"][0]["return"] != default["per_episode"][0]["return"]
    capsys.readouterr()
    assert main([*args, "-e", "noslip_iterations=-1"]) != 0
    assert "noslip_iterations must be an integer in [0, 1000]" in capsys.readouterr().err
    # event tolerances (-t) set the counts, are recorded and name the default file
    assert main([*args, "-t", "planar_complementarity=1000"]) == 0
    lax = json.loads(
        (tmp_path / f"baselines/G1Stand-v0_pd-planar_complementarity=1000{short}.json").read_text()
    )
    assert lax["tolerances"] == {"planar_complementarity": 1000} and default["tolerances"] == {}
    assert lax["per_episode"][0]["return"] == default["per_episode"][0]["return"]
    slips = [d["events"].get("planar_complementarity", 0) for d in (default, lax)]
    assert slips[0] > 0 and slips[1] == 0, slips
    capsys.readouterr()
    assert main([*args, "-t", "slip=1"]) != 0
    err = capsys.readouterr().err
    assert "slip" in err and "planar_complementarity" in err  # the known ones listed
    assert not (tmp_path / f"baselines/G1Stand-v0_pd-slip=1{short}.json").exists()


def test_every_run_argument_has_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    run = sub.choices["run"]
    missing = [a.option_strings[0] for a in run._actions if a.help is None]
    assert missing == []


@pytest.mark.parametrize(
    "name, value",
    [
        ("force_weight", 0.0),
        ("relax_weight", -1.0),
        ("regularization", float("inf")),
        ("mu", float("nan")),
    ],
)
def test_projected_id_weights_name_the_option_and_value(g1, name, value):
    from wbsim.controllers import make_controller

    with pytest.raises(WbsimError, match=rf"^{name} must be a finite number > 0, got {value!r}$"):
        make_controller("projected_id", g1, **{name: value})


@pytest.mark.parametrize("value", [-0.1, float("inf"), float("nan"), "abc", True])
def test_residual_scale_is_checked(value):
    import gymnasium as gym

    with pytest.raises(WbsimError, match="residual_scale must be a finite number >= 0"):
        gym.make("wbsim/G1Stand-v0", action_mode="residual", residual_scale=value)


# --- a second user's trial (session 4) ---------------------------------------------------------


def _one_line_error(capsys, code, *needles):
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "error:" in err, (code, err)
    for n in needles:
        assert n in err, err
    return err


def test_run_refuses_what_it_cannot_honour_before_building(tmp_path, capsys):
    """Options that used to give a wrong run or a traceback are one-line errors, and nothing is
    written (the log folder is not created): the viewer with a video, an env option the run sets
    itself or cannot drive (action_mode, max_seconds, an unknown robot, render_mode, width, plan),
    a negative seed, a run shorter than one step."""
    run_dir = tmp_path / "run"
    cases = [
        (["--viewer", "--video", str(tmp_path / "v.mp4")], "viewer"),
        (["-e", "action_mode=joint_position"], "action_mode"),
        (["-e", "action_mode=residual"], "action_mode"),
        (["-e", "max_seconds=1"], "max_seconds"),
        (["-e", "robot=r2d2"], "unknown robot"),  # a known robot runs (tests/test_new_robots.py)
        (["-e", "render_mode=human"], "render_mode"),
        (["-e", "width=100"], "width"),
        (["-e", "plan=foo"], "plan"),
        (["--seed", "-1"], "seed"),
    ]
    capsys.readouterr()
    for args, needle in cases:
        _one_line_error(capsys, _run("--log", str(run_dir), *args), needle)
        assert not run_dir.exists(), args
        assert not (tmp_path / "v.mp4").exists()
    code = main(["run", "--seconds", "1e-4", "--no-progress", "--log", str(run_dir)])
    _one_line_error(capsys, code, "shorter than one control step")
    assert not run_dir.exists()


def test_ctrl_c_message_says_only_what_is_on_disk(tmp_path, capsys, monkeypatch):
    """Ctrl-C before the episode started: the message says no log and no video were written
    (the user was told of files that did not exist); a video with no frame is not named in the
    summary either."""
    import wbsim.rollout as R

    def interrupted(cfg):
        raise KeyboardInterrupt

    monkeypatch.setattr(R, "run_episode", interrupted)
    capsys.readouterr()
    code = _run("--log", str(tmp_path / "run"), "--video", str(tmp_path / "v.mp4"))
    err = capsys.readouterr().err
    assert code == 130 and "no log was written" in err and "no video was written" in err, err
    # the same with --overwrite over an earlier run's files: they are not this run's
    import os

    (tmp_path / "old").mkdir()
    for f in (tmp_path / "old" / "summary.json", tmp_path / "old.mp4"):
        f.write_text("an earlier run")
        os.utime(f, (1e9, 1e9))
    code = _run("--log", str(tmp_path / "old"), "--video", str(tmp_path / "old.mp4"), "--overwrite")
    err = capsys.readouterr().err
    assert code == 130 and "no log was written" in err and "no video was written" in err, err
    monkeypatch.undo()
    # interrupted at the first frame: the summary does not name a video file that does not exist
    from wbsim.render import VideoWriter

    def first_frame(self, frame):
        raise KeyboardInterrupt

    monkeypatch.setattr(VideoWriter, "append", first_frame)
    with pytest.raises(KeyboardInterrupt):
        R.run_episode(
            R.EpisodeConfig(
                seconds=0.1,
                log=tmp_path / "run2",
                progress=False,
                video=tmp_path / "v2.mp4",
                width=64,
                height=48,
            )
        )
    summary = json.loads((tmp_path / "run2" / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["video_frames"] == 0
    assert summary["video"] == "" and not (tmp_path / "v2.mp4").exists()


@pytest.mark.parametrize(
    ("interrupt", "code", "reason"),
    [
        (KeyboardInterrupt(), 130, "KeyboardInterrupt"),
        (KeyboardInterrupt(f"signal {signal.SIGTERM.value}"), 143, "SIGTERM"),  # as SIGTERM's
    ],
)
def test_ctrl_c_during_the_episode_prints_the_summary_of_the_steps_run(
    capsys, monkeypatch, interrupt, code, reason
):
    """Ctrl-C in the middle of ``wbsim run`` without --log: the summary of the steps run still
    reaches stdout (it was lost: only the log's summary.json had it). A SIGTERM (``timeout``,
    a batch system) is said as such, with the shell's exit code 143."""
    from wbsim.controllers import controller_class

    cls = controller_class("gravity_qp")
    compute, calls = cls.compute, []

    def interrupted_at_the_tenth_step(self, state, schedule):
        calls.append(state.t)
        if len(calls) == 10:
            raise interrupt
        return compute(self, state, schedule)

    monkeypatch.setattr(cls, "compute", interrupted_at_the_tenth_step)
    capsys.readouterr()
    returned = main(["run", "--seconds", "1", "--no-progress", "--controller", "gravity_qp"])
    out, err = capsys.readouterr()
    assert returned == code and ("SIGTERM" in err) == (reason == "SIGTERM"), err
    summary = json.loads(out)
    assert summary["status"] == "interrupted" and summary["steps"] == 9, summary
    assert summary["stopped_reason"] == reason


def test_unwritable_json_is_refused_before_the_work(tmp_path, capsys, monkeypatch):
    """baseline and bench check their --json path first (it used to fail after all the work, or
    create folders at the root): a path under a file, a folder, and a place nobody may write."""
    import wbsim.bench as BE
    import wbsim.rollout

    def never(*a, **k):
        raise AssertionError("the work ran before the output was checked")

    monkeypatch.setattr(wbsim.rollout, "run_episode", never)  # baseline's loop
    monkeypatch.setattr(BE, "_collect", never)
    (tmp_path / "file").write_text("x")
    bad = [tmp_path / "file" / "x.json", tmp_path]
    if Path("/proc/self").is_dir():
        bad.append(Path("/proc/x.json"))
    capsys.readouterr()
    for path in bad:
        _one_line_error(
            capsys,
            main(["baseline", "--episodes", "1", "--no-progress", "--json", str(path)]),
            str(path),
        )
        _one_line_error(capsys, main(["bench", "--quick", "--json", str(path)]), str(path))
    _one_line_error(capsys, main(["baseline", "--seed", "-5", "--no-progress"]), "seed")
    from wbsim.errors import check_output_file

    new = tmp_path / "a" / "b" / "x.json"
    assert check_output_file(new) == new and not (tmp_path / "a").exists()  # nothing left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_statics_config_checks_the_joints(tmp_path, capsys, g1):
    """--config joints: an object of finite numbers within the joint limits; a list, a string,
    NaN and a knee at 10 rad are one-line errors naming the file (they were a traceback, silently
    parsed, an unnamed error, and a 'feasible' answer)."""
    lo, hi = g1.joint_limits[g1.joint_names.index("left_knee_joint")]
    cases = [
        ({"joints": [1, 2, 3]}, "joints must be an object"),
        ({"joints": {"left_knee_joint": "1.0"}}, "finite number"),
        ({"joints": {"left_knee_joint": float("nan")}}, "finite number"),
        ({"joints": {"left_knee_joint": 10.0}}, "outside its limits"),
    ]
    capsys.readouterr()
    for pose, needle in cases:
        path = tmp_path / "pose.json"
        path.write_text(json.dumps(pose))
        _one_line_error(
            capsys, main(["statics", "--robot", "g1", "--config", str(path)]), needle, str(path)
        )
    path.write_text(json.dumps({"joints": {"left_knee_joint": float(0.5 * (lo + hi))}}))
    assert main(["statics", "--robot", "g1", "--config", str(path)]) == 0


def test_report_of_a_missing_folder_says_so(tmp_path, capsys):
    capsys.readouterr()
    _one_line_error(capsys, main(["report", str(tmp_path / "nope")]), "does not exist")


def test_full_disk_while_logging_leaves_whole_rows(tmp_path):
    """A file-size limit (as a full disk) hit while writing the step table: `wbsim run` fails with
    one line naming steps.f64, the table holds whole rows only (np.fromfile + reshape, the README's
    recipe, and load_run both read it), and the summary says the run ended in an error."""
    import resource
    import subprocess
    import sys

    from wbsim.episode_log import load_run

    run_dir = tmp_path / "run"
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000)); "
        "from wbsim.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    try:
        resource.getrlimit(resource.RLIMIT_FSIZE)
    except (AttributeError, ValueError):
        pytest.skip("no RLIMIT_FSIZE here")
    p = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "run",
            "--seconds",
            "2",
            "--no-progress",
            "--log",
            str(run_dir),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    err = p.stderr.strip()
    assert p.returncode == 2 and err.count("\n") == 0 and "steps.f64" in err, (p.returncode, err)
    cols = json.loads((run_dir / "columns.json").read_text())["columns"]
    raw = np.fromfile(run_dir / "steps.f64", dtype="<f8")
    assert raw.size and raw.size % len(cols) == 0
    run = load_run(run_dir)
    assert run.steps.shape == (raw.size // len(cols), len(cols))
    assert np.array_equal(run.steps, raw.reshape(-1, len(cols)), equal_nan=True)
    assert run.summary["status"] == "error" and "steps.f64" in run.summary["stopped_reason"]


def test_a_video_that_fails_to_write_fails_the_run(tmp_path, capsys):
    """A video whose writes fail (a link to /dev/full: every write is 'No space left on device')
    is an error, not 'completed': run_episode raises a one-line WbsimError naming the file after
    the log and the summary are written, and the summary says error and names no video."""
    import os

    from wbsim.rollout import EpisodeConfig, run_episode

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    link = tmp_path / "full.mp4"
    link.symlink_to("/dev/full")
    with pytest.raises(WbsimError, match="full.mp4"):
        run_episode(
            EpisodeConfig(
                seconds=0.2,
                video=link,
                overwrite=True,
                log=tmp_path / "run",
                progress=False,
                width=64,
                height=48,
            )
        )
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "error" and "full.mp4" in summary["stopped_reason"]
    assert summary["video"] == "" and 1 <= summary["steps"] < 100  # stopped at the failed frame
    # one frame: ffmpeg fails only when it finishes the file (close, in run_episode's finally)
    with pytest.raises(WbsimError, match="full.mp4"):
        run_episode(
            EpisodeConfig(
                seconds=0.02,
                video=link,
                overwrite=True,
                log=tmp_path / "run",
                progress=False,
                width=64,
                height=48,
            )
        )
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "error" and "full.mp4" in summary["stopped_reason"]
    assert summary["video"] == "" and summary["steps"] == 10  # the episode itself completed
    capsys.readouterr()
    code = main(
        [
            "run",
            "--seconds",
            "0.2",
            "--no-progress",
            "--video",
            str(link),
            "--overwrite",
            "--width",
            "64",
            "--height",
            "48",
        ]
    )
    _one_line_error(capsys, code, "full.mp4")


def test_report_table_gives_com_tracking_in_mm():
    """The CoM tracking column is in mm with two decimals (in m with four, 0.65 mm read 0.0007)."""
    from wbsim.report import VIOLATION_KINDS, format_table

    row = {
        "run": "r",
        "controller": "projected_id",
        "env": "wbsim/G1OneLeg-v0",
        "seconds": 7.5,
        "switches": 4,
        **dict.fromkeys(VIOLATION_KINDS, 0),
        "max_joint_error_rad": 0.2954,
        "com_tracking_rms_m": 0.000654,
        "fell": False,
        "status": "completed",
    }
    table = format_table([row])
    assert "CoM rms mm" in table and "| 0.65 |" in table
    # a summary stores NaN as "nan": a dash, as before
    assert "| - |" in format_table([{**row, "com_tracking_rms_m": "nan"}])


def test_a_log_that_fails_at_its_last_write_fails_the_run(tmp_path, monkeypatch):
    """The last rows are written after the last step: a failure there (a full disk) makes the run
    an error (it said 'completed'), the summary still gets written with the rows the table holds,
    the env is still closed, and the log's error is the one raised."""
    from wbsim.envs.humanoid import HumanoidEnv
    from wbsim.episode_log import EpisodeLog
    from wbsim.rollout import EpisodeConfig, run_episode

    closed = []
    close_env = HumanoidEnv.close
    monkeypatch.setattr(HumanoidEnv, "close", lambda self: closed.append(1) or close_env(self))
    add_rows = EpisodeLog.add_rows

    def full_at_the_end(self, rows):
        if self.n_rows + len(rows) == 100:  # the last chunk of a 0.2 s run
            raise WbsimError(f"{self.dir / 'steps.f64'}: writing the step table failed (disk full)")
        add_rows(self, rows)

    monkeypatch.setattr(EpisodeLog, "add_rows", full_at_the_end)
    with pytest.raises(WbsimError, match="steps.f64"):
        run_episode(EpisodeConfig(seconds=0.2, log=tmp_path / "run", progress=False))
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "error" and "steps.f64" in summary["stopped_reason"]
    assert summary["steps"] == 100 and summary["logged_rows"] == 0 and closed


# -- a new user's error paths: each a one-line error (or note) that names the real cause ----------


def test_missing_plan_file_is_the_error_shown(capsys):
    """The plan file's own error, not a second one from summarising a run that never reset."""
    code = main(
        [
            "run",
            "--env",
            "wbsim/G1PlanReplay-v0",
            "--controller",
            "projected_id",
            "-e",
            "plan_file=nope",
            "--seconds",
            "0.02",
            "--no-progress",
        ]
    )
    err = _one_line_error(capsys, code, "plan_file 'nope': no shipped plan")
    assert "no reference yet" not in err


def _cli_subprocess(args, **env):
    import os
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "wbsim.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
        timeout=300,
    )


#: a stand-in for Gymnasium that ``import wbsim`` meets (wbsim.envs imports it): Ctrl-C arrives
#: while the command line is still importing its libraries, at the same point every run
_CTRL_C_WHILE_IMPORTING = (
    "import os, signal, time\n"
    "os.kill(os.getpid(), signal.SIGINT)\n"
    "time.sleep(30)  # the signal's handler runs at once\n"
)


@pytest.mark.parametrize("entry", ["python -m wbsim.cli", "console script"])
def test_ctrl_c_while_the_command_line_starts_is_one_line_and_130(tmp_path, entry):
    """Ctrl-C in the second or so that ``import wbsim`` takes (MuJoCo, Pinocchio, Gymnasium)
    ended in a ``KeyboardInterrupt`` traceback from whatever module was loading (or MuJoCo's
    ``ImportError: initialization failed``); both doors of the command line now end with one
    line and status 130, as after the command's own Ctrl-C. A program that imports wbsim keeps
    Python's Ctrl-C."""
    import os
    import signal
    import subprocess
    import sys

    (tmp_path / "gymnasium.py").write_text(_CTRL_C_WHILE_IMPORTING)
    path = os.pathsep.join([str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path}
    if entry == "console script":  # what pip writes into bin/wbsim
        script = tmp_path / "bin" / "wbsim"
        script.parent.mkdir()
        script.write_text(
            "import re\nimport sys\nfrom wbsim.cli import main\nif __name__ == '__main__':\n"
            "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
            "    sys.exit(main())\n"
        )
        command = [sys.executable, str(script), "list"]
    else:
        command = [sys.executable, "-m", "wbsim.cli", "list"]

    def run(argv):
        return subprocess.run(
            argv, capture_output=True, text=True, env=env, check=False, timeout=300
        )

    out = run(command)
    err = out.stderr.strip()
    assert out.returncode == 130 and err.count("\n") == 0, (out.returncode, err)
    assert err == "wbsim list: interrupted (Ctrl-C) while starting; nothing was run"
    library = run([sys.executable, "-c", "import wbsim"])
    assert library.returncode == -signal.SIGINT and "KeyboardInterrupt" in library.stderr


@pytest.mark.parametrize(
    ("example", "library"),
    [
        ("train_ppo", "gymnasium"),  # `import wbsim`, while runpy finds the module
        ("train_ppo", "stable_baselines3"),  # train's own imports (PyTorch: seconds)
        ("rllib_ppo", "gymnasium"),
        ("rllib_ppo", "ray"),  # before Ray starts: no Ray process to leave behind
    ],
)
def test_ctrl_c_while_an_rl_example_starts_is_one_line_and_130(tmp_path, example, library):
    """``python -m wbsim.examples.train_ppo`` (or ``rllib_ppo``) ended a Ctrl-C in its first
    seconds in a ``KeyboardInterrupt`` traceback from the library being imported; now as the
    ``wbsim`` command line, one line naming the example and status 130, until training starts."""
    import os
    import subprocess
    import sys

    (tmp_path / f"{library}.py").write_text(_CTRL_C_WHILE_IMPORTING)
    path = os.pathsep.join([str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, "HOME": str(tmp_path / "home")}
    out = subprocess.run(
        [sys.executable, "-m", f"wbsim.examples.{example}", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    err = out.stderr.strip()
    assert out.returncode == 130 and err.count("\n") == 0, (out.returncode, err)
    assert err == f"{example}: interrupted (Ctrl-C) while starting; nothing was run"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("value", "args", "why"),
    [
        ("bogus", ["list"], "is not a value MuJoCo knows"),
        ("osmesa", ["run", "--seconds", "0.02", "--no-progress"], "OSMesa library"),
    ],
)
def test_an_unusable_mujoco_gl_is_a_one_line_error(value, args, why):
    import ctypes.util

    if value == "osmesa" and ctypes.util.find_library("OSMesa"):
        pytest.skip("OSMesa is installed here: MUJOCO_GL=osmesa works")
    out = _cli_subprocess(args, MUJOCO_GL=value)
    err = out.stderr.strip()
    assert out.returncode == 2 and err.count("\n") == 0, err
    assert err.startswith(f"wbsim {args[0]}: error:") and f"MUJOCO_GL={value!r}" in err
    assert why in err and "values that work here: egl" in err


def test_a_failed_gl_context_says_how_mujoco_gl_was_set(g1, monkeypatch):
    """MUJOCO_GL set but empty (MuJoCo then uses glfw): the message says so, not that wbsim set
    egl."""
    import mujoco

    from wbsim.render import FrameRenderer

    def no_context(*args, **kwargs):
        raise RuntimeError("no display")

    monkeypatch.setenv("MUJOCO_GL", "")
    monkeypatch.setattr(mujoco, "Renderer", no_context)
    with pytest.raises(WbsimError) as info:
        _ = FrameRenderer(g1.mj_model, 64, 48).renderer
    assert "MUJOCO_GL is set but empty" in str(info.value)
    assert "set by wbsim" not in str(info.value)


def test_pushtest_compare_refuses_other_files(tmp_path, capsys):
    (tmp_path / "summary.json").write_text(json.dumps({"status": "completed"}))
    (tmp_path / "notes.md").write_text("# not JSON\n")
    for path in ("summary.json", "notes.md"):
        args = ["pushtest", "--compare", str(tmp_path / path), "--plot", str(tmp_path / "p.png")]
        _one_line_error(capsys, main(args), f"{tmp_path / path} is not a push-test JSON")
    assert not (tmp_path / "p.png").exists()


def test_pushtest_names_its_files_as_baseline_does(tmp_path, capsys, monkeypatch):
    """A ``module:Class`` controller gives a dot, not a colon, in the file name, and ``-c`` /
    ``-e`` options and protocol settings that differ from the defaults are in it, so two variants
    do not collide: the name is baseline's (wbsim.baseline.run_name). A result written under the
    old name (a colon) is still read by --compare."""
    import wbsim.pushtest
    from wbsim.baseline import run_name

    def trial(cfg, angle, impulse):  # survives up to 10 N s
        return {"impulse": impulse, "survived": impulse < 10, "fell_at": None, "wall_s": 0.0}

    monkeypatch.setattr(wbsim.pushtest, "_trial", trial)
    monkeypatch.chdir(tmp_path)
    pd = "wbsim.controllers.pd:PDController"
    base = ["pushtest", "--controller", pd, "--directions", "1", "--no-progress"]
    assert main(base) == 0
    assert main([*base, "-c", "frequency_hz=4", "-e", "noslip_iterations=5"]) == 0
    names = sorted(p.name for p in (tmp_path / "pushtests").iterdir())
    stem = "G1Stand-v0_wbsim.controllers.pd.PDController"
    assert names == [
        f"{stem}-directions=1.json",
        f"{stem}-directions=1.png",
        f"{stem}-frequency_hz=4-noslip_iterations=5-directions=1.json",
        f"{stem}-frequency_hz=4-noslip_iterations=5-directions=1.png",
    ]
    assert f"{stem}-directions=1" == run_name(
        "wbsim/G1Stand-v0", pd, settings=[("directions", 1, 8)]
    )
    assert "pushtests/" + names[0] in capsys.readouterr().out
    old = tmp_path / f"G1Stand-v0_{pd}.json"  # as pushtest named it before
    old.write_bytes((tmp_path / "pushtests" / names[0]).read_bytes())
    assert main(["pushtest", "--compare", str(old), "--plot", str(tmp_path / "c.png")]) == 0
    assert (tmp_path / "c.png").is_file()


def test_pushtest_limit_below_start_names_limit(capsys):
    err = _one_line_error(capsys, main(["pushtest", "--limit", "1"]), "invalid limit = 1.0")
    assert ">= start = 4.0" in err


def test_missing_robot_config_alone_is_named_as_a_config(tmp_path, capsys):
    missing = tmp_path / "nope.toml"
    _one_line_error(
        capsys, _run("--robot-config", str(missing)), f"robot config file not found: {missing}"
    )


def test_log_folder_that_cannot_be_created_names_the_option(capsys):
    _one_line_error(
        capsys,
        _run("--log", "/proc/wbsim-no-such-folder"),
        "log folder (--log) /proc/wbsim-no-such-folder: cannot be created",
        "cannot write in /proc",
    )


def test_push_script_that_is_not_a_list(capsys):
    _one_line_error(
        capsys,
        _run("-e", "push_script=garbage"),
        "push_script must be a list of [start s >= 0, [fx, fy, fz] N, duration s > 0]",
        "got 'garbage'",
    )


def test_a_scripted_push_after_the_end_is_a_note(capsys):
    assert _run("-e", "push_script=[[100,[150,0,0],0.1]]", "--seconds", "0.02") == 0
    err = capsys.readouterr().err
    assert "wbsim run: note: the scripted push at 100 s falls after the run's end" in err


def test_hand_wall_env_with_a_robot_without_hands(capsys):
    _one_line_error(
        capsys,
        _run("--robot", "talos", "--env", "wbsim/G1HandWall-v0"),
        "wbsim/G1HandWall-v0 needs a robot with the contacts right_hand",
        "robot talos has left_foot, right_foot",
    )


def test_replay_of_a_file_says_the_run_folder_is_not_a_folder(tmp_path, capsys):
    f = tmp_path / "README.md"
    f.write_text("# a file\n")
    err = _one_line_error(
        capsys, main(["replay", str(f)]), f"run folder {f} is not a folder", "run log folder"
    )
    assert "replay.mp4" not in err


def test_id_variant_needs_projected_id(capsys):
    _one_line_error(
        capsys, _run("--id-variant", "pinv"), "--id-variant applies to projected_id only"
    )


def test_statics_says_the_com_is_outside_the_support_polygon(capsys):
    code = main(["statics", "--support", "left_foot", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["physically_possible"] is False
    assert "outside the support polygon of left_foot" in data["reasons"][0]
    assert "outside the support polygon" in data["status"]


@pytest.mark.parametrize("command", ["baseline", "pushtest"])
def test_baseline_and_pushtest_refuse_an_existing_json(command, tmp_path, capsys, monkeypatch):
    """As run, replay and train_ppo: an existing result is replaced only with --overwrite (the
    refusal comes before any episode)."""
    import wbsim.baseline
    import wbsim.pushtest

    out = tmp_path / "result.json"
    out.write_text('{"an": "earlier result"}')

    def no_episode(*args, **kwargs):
        raise AssertionError("an episode ran")

    monkeypatch.setattr(wbsim.baseline, "_episode", no_episode)
    monkeypatch.setattr(wbsim.pushtest, "_trial", no_episode)
    args = [command, "--json", str(out), "--no-progress"]
    if command == "pushtest":
        args += ["--plot", str(tmp_path / "p.png")]
    _one_line_error(capsys, main(args), f"{out} exists", "--overwrite")
    assert out.read_text() == '{"an": "earlier result"}'


def test_baseline_overwrite_replaces_the_json(tmp_path, capsys):
    out = tmp_path / "b.json"
    out.write_text("{}")
    args = ["baseline", "--controller", "zero", "--episodes", "1", "--seconds", "0.05"]
    assert main([*args, "--json", str(out), "--no-progress", "--overwrite"]) == 0
    assert json.loads(out.read_text())["episodes"] == 1


def test_help_texts_name_one_default_and_the_readme_section():
    parser = build_parser()
    run = next(
        a.choices["run"] for a in parser._actions if isinstance(a, argparse._SubParsersAction)
    )
    helps = {a.dest: a.help for a in run._actions}
    assert "default" not in helps["web_host"]
    assert "README: Use your own robot" in helps["robot_config"]


def test_report_shows_a_dash_for_counts_an_older_log_lacks(tmp_path):
    """A log whose summary predates a count (here torque_limit and the slides) shows a dash in
    those columns, not 0; a count the summary holds shows its number."""
    from wbsim.episode_log import load_run
    from wbsim.report import format_table, report_rows

    assert _run("--log", str(tmp_path / "run")) == 0
    path = tmp_path / "run" / "summary.json"
    summary = json.loads(path.read_text())
    del summary["events"]["torque_limit"], summary["diagnostics"]["slides"]
    path.write_text(json.dumps(summary))
    (row,) = report_rows([load_run(tmp_path / "run")])
    assert row["torque_limit"] is None and row["slides"] is None and row["force_sign"] == 0
    table = format_table([row]).splitlines()
    cols = [c.strip() for c in table[0].strip("|").split("|")]
    cells = [c.strip() for c in table[2].strip("|").split("|")]
    assert (cells[cols.index("lim")], cells[cols.index("slide")], cells[cols.index("f<0")]) == (
        "-",
        "-",
        "0",
    )


def test_report_counts_the_slides_of_a_killed_run_from_its_events(tmp_path):
    """A run killed before its summary: the slides are its ``planar_complementarity`` events
    whose ``friction_used`` reaches the run's ``slide`` tolerance (config.json)."""
    from wbsim.episode_log import load_run
    from wbsim.report import format_table, report_rows

    assert _run("--log", str(tmp_path / "run")) == 0
    (tmp_path / "run" / "summary.json").unlink()
    slip = {"kind": "planar_complementarity", "t": 0.1, "where": "left_foot_front_left"}
    events = [
        {**slip, "detail": {"friction_used": used}} for used in (1.0, 0.995, 0.5, float("nan"))
    ]
    (tmp_path / "run" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (row,) = report_rows([load_run(tmp_path / "run")])
    assert row["slides"] == 2 and row["planar_complementarity"] == 4  # slide tolerance 0.99
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    config["tolerances"]["slide"] = 0.4
    (tmp_path / "run" / "config.json").write_text(json.dumps(config))
    assert report_rows([load_run(tmp_path / "run")])[0]["slides"] == 3
    # an event still going when it was written (a kill leaves it so) may have reached the cone
    # later: the count is then a lower bound
    events[2] = {**events[2], "detail": {"friction_used": 0.3}, "ongoing": True}
    (tmp_path / "run" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (row,) = report_rows([load_run(tmp_path / "run")])
    assert row["slides"] == "2+"
    assert "| 2+ |" in format_table([row]) and "N+ = at least N" in format_table([row])
    events[2]["detail"]["friction_used"] = 0.45  # already a slide: the count is exact
    (tmp_path / "run" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert report_rows([load_run(tmp_path / "run")])[0]["slides"] == 3
    events[0]["detail"] = {}  # a log older than friction_used: no count
    (tmp_path / "run" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert report_rows([load_run(tmp_path / "run")])[0]["slides"] is None


def test_pushtest_ladder_bisection_and_a_ctrl_c_keeps_the_directions_done(
    tmp_path, monkeypatch, capsys
):
    """The protocol on a stand-in trial (survives below 10 + 4 x direction N s): the ladder
    4, 6, 9, 13.5 ... then bisections find each threshold; a Ctrl-C in the third direction
    leaves a JSON with the first two, marked ``interrupted``, and ``wbsim pushtest`` ends with
    one line and status 130."""
    from wbsim import pushtest

    def trial(cfg, angle, impulse):
        k = round(angle / (2 * math.pi / cfg.directions))
        if k == 2:
            raise KeyboardInterrupt
        return {"impulse": impulse, "survived": impulse < 10.0 + 4.0 * k}

    monkeypatch.setattr(pushtest, "_trial", trial)
    out = tmp_path / "p.json"
    args = ["pushtest", "--directions", "4", "--json", str(out)]
    assert main(args) == 130
    assert "interrupted (Ctrl-C)" in capsys.readouterr().err
    kept = json.loads(out.read_text())
    assert kept["interrupted"] == "Ctrl-C after 2 of 4 directions"
    assert kept["directions_deg"] == [0.0, 90.0]
    # 9 survived, 13.5 fell: 3 bisections (the default) end within 4.5 / 8 below the threshold
    assert 10.0 - 4.5 / 8 <= kept["max_impulse"][0] < 10.0
    assert 14.0 - 6.75 / 8 <= kept["max_impulse"][1] < 14.0  # 13.5 survived, 20.25 fell
    assert [r["impulse"] for r in kept["trials"][0]][:4] == [4.0, 6.0, 9.0, 13.5]


def test_pushtest_says_where_no_push_up_to_the_limit_felled_the_robot(
    tmp_path, monkeypatch, capsys
):
    """The ladder stops at --limit: a direction where no trial fell has a lower bound, the last
    rung, not a threshold; the JSON (``no_fall``) and both printed tables say which."""
    from wbsim import pushtest

    def trial(cfg, angle, impulse):  # falls from 5 N s forward only
        return {"impulse": impulse, "survived": angle > 0 or impulse < 5.0}

    monkeypatch.setattr(pushtest, "_trial", trial)
    out = tmp_path / "p.json"
    args = ["pushtest", "--directions", "2", "--limit", "7", "--json", str(out)]
    assert main([*args, "--plot", str(tmp_path / "p.png")]) == 0
    res = json.loads(out.read_text())
    assert res["max_impulse"][1] == 6.0 and res["no_fall"] == [False, True]
    printed = capsys.readouterr()
    for text in (printed.out, printed.err):
        lines = [line for line in text.splitlines() if "180.0 deg" in line]
        assert len(lines) == 1 and "no fall up to --limit 7" in lines[0], text
        assert "no fall" not in next(line for line in text.splitlines() if "  0.0 deg" in line)
