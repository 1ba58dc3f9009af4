"""Controllers as plug-ins: ``package.module:ClassName`` wherever a controller is named, entry
points, the protocol check, and the README's example run through the command line."""

import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import imageio.v2 as imageio
import numpy as np
import pytest

import wbsim
from wbsim.controllers import available_controllers, controller_class, make_controller
from wbsim.errors import UnknownNameError, WbsimError

README = Path(__file__).resolve().parents[1] / "README.md"


def _readme_controller() -> str:
    """The first Python block of the README's "Write your own controller" section."""
    text = README.read_text()
    section = text[text.index("## Write your own controller") :]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def _env_with_path(*paths) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A folder on ``sys.path`` holding the README's ``my_controllers.py`` and broken ones."""
    (tmp_path / "my_controllers.py").write_text(_readme_controller())
    (tmp_path / "bad_controllers.py").write_text(
        textwrap.dedent("""
        import numpy as np
        from wbsim.types import Command, JointTargets

        class NoCompute:
            name = "no_compute"
            def __init__(self, robot):
                pass
            def reset(self, state):
                pass

        class NoName:
            def __init__(self, robot):
                self.robot = robot
            def reset(self, state):
                pass
            def compute(self, state, schedule):
                return Command(np.zeros(self.robot.n_joints))

        class Unfinished:  # neither reset nor name
            def __init__(self, robot):
                self.robot = robot
            def compute(self, state, schedule):
                return Command(np.zeros(self.robot.n_joints))

        class UnfinishedNamedInInit(Unfinished):  # no reset; a name set by __init__
            def __init__(self, robot):
                super().__init__(robot)
                self.name = "unfinished"

        class BareTorque:
            name = "bare_torque"
            def __init__(self, robot):
                self.robot = robot
            def reset(self, state):
                pass
            def compute(self, state, schedule):
                return np.zeros(self.robot.n_joints)

        class UndeclaredGain:
            # a PD gain of no declared kind (no annotation, default None): used as given
            name = "undeclared_gain"
            def __init__(self, robot, kp=None):
                self.robot, self.kp = robot, kp
            def reset(self, state):
                pass
            def compute(self, state, schedule):
                n = self.robot.n_joints
                pd = JointTargets(np.zeros(n), np.zeros(n), np.full(n, self.kp), np.zeros(n))
                return Command(np.zeros(n), joint_targets=pd)

        class RaisesAtStep5:
            # a bug of the user's, five steps into the episode
            name = "raises"
            def __init__(self, robot):
                self.robot = robot
            def reset(self, state):
                self.steps = 0
            def compute(self, state, schedule):
                self.steps += 1
                if self.steps > 5:
                    raise IndexError("my task's index 7 is out of range")
                return Command(np.zeros(self.robot.n_joints))

        class RaisesInReset(RaisesAtStep5):
            def reset(self, state):
                1 / 0

        BUILT = []

        class Declared:
            # options declared by annotation, and (no annotation) by the default's type
            name = "declared"
            def __init__(self, robot, gain: float = 1.0, steps: int = 3, fast: bool = True,
                         limit: float | None = None, untyped_gain=2.0, untyped_count=1,
                         untyped_flag=False, anything=None, label: str = "a"):
                BUILT.append(self)
            def reset(self, state):
                pass
            def compute(self, state, schedule):
                return None
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for mod in ("my_controllers", "bad_controllers"):
        sys.modules.pop(mod, None)


def test_readme_controller_runs_from_the_cli_with_log_video_and_events(tmp_path):
    (tmp_path / "my_controllers.py").write_text(_readme_controller())
    run, video = tmp_path / "run", tmp_path / "mine.mp4"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "wbsim.cli",
            "run",
            "--controller",
            "my_controllers:PostureGravityPD",
            "-c",
            "kp=400",
            "--seconds",
            "1",
            "--log",
            str(run),
            "--video",
            str(video),
            "--width",
            "160",
            "--height",
            "120",
            "--no-progress",
        ],
        env=_env_with_path(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((run / "summary.json").read_text())
    assert summary["controller"] == "my_controllers:PostureGravityPD"
    assert summary["status"] == "completed" and not summary["fell"]
    assert summary["steps"] == 500 and summary["logged_rows"] == 500
    config = json.loads((run / "config.json").read_text())
    assert config["controller"] == "my_controllers:PostureGravityPD"
    assert config["controller_options"] == {"kp": 400}
    from wbsim.diagnostics import EVENT_KINDS

    assert set(summary["events"]) >= set(EVENT_KINDS)  # the event detector ran
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    assert len(events) == sum(summary["events"].values())
    frames = [f for f in imageio.get_reader(str(video))]  # (list() asks its len: inf)
    assert len(frames) == 31 and frames[0].shape[:2] == (120, 160)
    # the controller's torques are Pinocchio's gravity torques plus the PD: on the logged
    # step table the PD part vanishes at the first step (the reset posture is the target)
    cols = json.loads((run / "columns.json").read_text())["columns"]
    steps = np.fromfile(run / "steps.f64", "<f8").reshape(-1, len(cols))
    robot = wbsim.load_robot("g1")
    import pinocchio as pin

    q0 = robot.pose_q("stand")
    g = pin.computeGeneralizedGravity(robot.pin_model, robot.pin_model.createData(), q0)
    tau0 = steps[0, [cols.index(f"tau/{j}") for j in robot.joint_names]]
    np.testing.assert_allclose(tau0, g[robot.converter.pin_vidx], atol=1e-9)


def test_module_class_string_everywhere(plugin_dir, g1, tmp_path):
    from wbsim.baseline import default_json_path, run_baseline
    from wbsim.rollout import EpisodeConfig, run_episode

    name = "my_controllers:PostureGravityPD"
    ctrl = make_controller(name, g1, kp=100.0)
    assert ctrl.name == "posture_gravity_pd" and ctrl.kp == 100.0
    s = run_episode(EpisodeConfig(controller=name, seconds=0.2, progress=False))
    assert s["status"] == "completed" and s["controller"] == name
    assert default_json_path("wbsim/G1Stand-v0", name, {"kp": 100.0}) == (
        "baselines/G1Stand-v0_my_controllers.PostureGravityPD-kp=100.0.json"
    )
    out = run_baseline(
        "wbsim/G1Stand-v0",
        name,
        episodes=1,
        seconds=0.1,
        progress=False,
        json_path=tmp_path / "b.json",
    )
    assert out["controller"] == name and out["success_rate"] == 1.0
    # the residual env mode, and its pickled copy (rebuilt from the name)
    env = gym.make("wbsim/G1Stand-v0", action_mode="residual", controller=name)
    env.reset(seed=0)
    from wbsim.envs.wrappers import ControllerInTheLoop

    wrapper = env
    while not isinstance(wrapper, ControllerInTheLoop):
        wrapper = wrapper.env
    assert type(wrapper.controller).__name__ == "PostureGravityPD"
    a = np.zeros(env.action_space.shape, dtype=np.float32)
    env.step(a)
    copy = pickle.loads(pickle.dumps(env))
    o1, *_ = env.step(a)
    o2, *_ = copy.step(a)
    np.testing.assert_array_equal(o1, o2)


def test_protocol_check_names_what_is_missing(plugin_dir, g1):
    with pytest.raises(WbsimError, match="missing method.*compute"):
        controller_class("bad_controllers:NoCompute")
    with pytest.raises(WbsimError, match="missing attribute.*name"):
        make_controller("bad_controllers:NoName", g1)
    # everything missing at once, as far as the class tells before it is built
    with pytest.raises(WbsimError, match=r"missing method\(s\) reset and attribute\(s\) name"):
        controller_class("bad_controllers:Unfinished")
    with pytest.raises(WbsimError, match=r"missing method\(s\) reset; it needs") as info:
        controller_class("bad_controllers:UnfinishedNamedInInit")
    assert "attribute" not in str(info.value)
    with pytest.raises(WbsimError, match="not a class"):
        controller_class("wbsim.controllers.pd:inertia_scaled_gains")
    with pytest.raises(WbsimError, match="has no attribute 'Nope'.*NoCompute"):
        controller_class("bad_controllers:Nope")
    with pytest.raises(WbsimError, match="cannot import module 'not_a_module'"):
        controller_class("not_a_module:X")
    with pytest.raises(UnknownNameError, match="gravity_qp.*package.module:Class|package.*gravity"):
        controller_class("no_such_controller")


def test_run_refuses_a_bad_plugin_before_writing(plugin_dir, tmp_path, capsys):
    from wbsim.cli import main

    assert (
        main(
            [
                "run",
                "--controller",
                "bad_controllers:NoCompute",
                "--seconds",
                "0.1",
                "--log",
                str(tmp_path / "run"),
                "--no-progress",
            ]
        )
        == 2
    )
    assert "missing method(s) compute" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_entry_point_plugins_are_found_and_listed(plugin_dir, g1, capsys):
    """A distribution on ``sys.path`` that registers ``mine`` in the group wbsim.controllers."""
    dist = plugin_dir / "my_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[wbsim.controllers]\nmine = my_controllers:PostureGravityPD\nbroken = not_a_module:X\n"
        "pd = my_controllers:PostureGravityPD\n"
    )
    assert available_controllers()["mine"] == "my-plugin (my_controllers:PostureGravityPD)"
    assert available_controllers()["gravity_qp"].startswith("wbsim (")
    assert make_controller("mine", g1).name == "posture_gravity_pd"
    with pytest.raises(WbsimError, match="plug-in 'not_a_module:X' does not load"):
        controller_class("broken")
    from wbsim.cli import main

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  mine +my-plugin \(my_controllers:PostureGravityPD\)$", out, re.MULTILINE)
    # a plug-in named like a built-in: the built-in wins, and the list says so
    assert available_controllers()["pd"].startswith("wbsim (")
    assert controller_class("pd").__name__ == "PDController"
    assert "the plug-in 'pd' of my-plugin (my_controllers:PostureGravityPD) is named like" in out
    assert "--controller my_controllers:PostureGravityPD" in out


def test_a_text_gain_that_reaches_the_pd_stops_the_run_with_a_clear_reason(plugin_dir, tmp_path):
    """A gain of no declared kind (``kp=None`` in the signature) reaches the controller as text,
    and its PD gains are then not numbers: the loop stops at the first step with an
    ``invalid_command`` event naming them, not a numpy traceback from inside the simulation."""
    from wbsim.rollout import EpisodeConfig, run_episode

    s = run_episode(
        EpisodeConfig(
            controller="bad_controllers:UndeclaredGain",
            controller_options={"kp": "abc"},
            seconds=0.1,
            progress=False,
            log=tmp_path / "run",
        )
    )
    assert s["status"] == "stopped" and "non-numeric PD kp" in s["stopped_reason"]
    assert s["events"]["invalid_command"] == 1


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("gain", "abc", "a number (float)"),
        ("gain", True, "a number (float)"),
        ("gain", None, "a number (float)"),
        ("steps", 2.5, "an integer (int)"),
        ("steps", "3", "an integer (int)"),
        ("fast", "abc", "true or false (bool)"),
        ("fast", 1, "true or false (bool)"),
        ("limit", "abc", "a number (float) or null"),
        ("untyped_gain", "abc", "a number"),
        ("untyped_count", "abc", "a number"),
        ("untyped_flag", "yes", "true or false"),
    ],
)
def test_a_custom_controllers_option_of_the_wrong_kind_is_refused_before_it_is_built(
    plugin_dir, g1, option, value, expected
):
    """By the parameter's annotation, else by its default's type: one line naming the option,
    the controller and what it takes; the class is not even built."""
    import bad_controllers

    name = "bad_controllers:Declared"
    with pytest.raises(WbsimError) as raised:
        make_controller(name, g1, **{option: value})
    assert str(raised.value) == (
        f"option {option!r} of controller {name!r} takes {expected}, got {value!r}"
    )
    assert bad_controllers.BUILT == []


def test_a_custom_controllers_options_of_the_right_kind_pass(plugin_dir, g1):
    import bad_controllers

    ok = {
        "gain": 2,  # an integer is a number
        "steps": np.int64(4),
        "fast": False,
        "limit": None,
        "untyped_gain": np.float32(0.5),
        "untyped_count": 1.5,  # without an annotation, an int default takes any number
        "untyped_flag": np.bool_(True),
        "anything": "abc",  # no declared kind: the controller's to check
        "label": 3,  # only numbers and flags are checked
    }
    make_controller("bad_controllers:Declared", g1, **ok)
    assert len(bad_controllers.BUILT) == 1


@pytest.mark.parametrize("command", [["run", "--seconds", "0.1"], ["baseline", "--episodes", "1"]])
def test_the_cli_refuses_a_text_gain_of_a_custom_controller_before_any_work(
    plugin_dir, tmp_path, monkeypatch, capsys, command
):
    """`-c kp=abc` for the README's controller (``kp: float``): exit 2 and one line, checked as
    the options are parsed, before the episode (the env, the log folder) starts."""
    import wbsim.rollout
    from wbsim.cli import main

    def no_episode(cfg):
        raise AssertionError("an episode started")

    monkeypatch.setattr(wbsim.rollout, "run_episode", no_episode)
    outputs = ["--log", str(tmp_path / "run")] if command[0] == "run" else []
    outputs = outputs or ["--json", str(tmp_path / "b.json")]
    args = [*command, "--controller", "my_controllers:PostureGravityPD", "-c", "kp=abc"]
    assert main([*args, *outputs, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"wbsim {command[0]}: error: option 'kp' of controller "
        "'my_controllers:PostureGravityPD' takes a number (float), got 'abc'"
    )
    assert not (tmp_path / "run").exists() and not (tmp_path / "b.json").exists()


def test_a_controller_that_returns_no_command_stops_the_run_with_a_clear_reason(
    plugin_dir, tmp_path
):
    """``compute`` returning a bare torque array: the loop stops at the first step with an
    ``invalid_command`` event saying what came back, not an AttributeError from inside it."""
    from wbsim.rollout import EpisodeConfig, run_episode

    s = run_episode(
        EpisodeConfig(
            controller="bad_controllers:BareTorque",
            seconds=0.1,
            progress=False,
            log=tmp_path / "run",
        )
    )
    assert s["status"] == "stopped" and s["events"]["invalid_command"] == 1
    assert s["stopped_reason"] == (
        "controller returned a value of type ndarray instead of a wbsim.types.Command at step 0 "
        "(t = 0.000 s)"
    )


def test_a_controller_that_raises_says_where_and_keeps_the_steps_before(plugin_dir, tmp_path):
    """A user's controller that raises at its sixth call: the exception goes on (its traceback is
    the user's), carrying a note that names the controller's compute, the step, the time, the env
    and seed, and what was kept on disk; the log holds the five steps before it and says where it
    stopped, the video its frames (it said none of this: a bare traceback)."""
    from wbsim.episode_log import load_run
    from wbsim.rollout import EpisodeConfig, run_episode

    run, video = tmp_path / "run", tmp_path / "v.mp4"
    cfg = EpisodeConfig(
        controller="bad_controllers:RaisesAtStep5",
        seconds=0.1,
        progress=False,
        log=run,
        video=video,
        width=64,
        height=48,
        fps=500,
    )
    with pytest.raises(IndexError, match="index 7") as info:
        run_episode(cfg)
    where = "the controller's compute (bad_controllers:RaisesAtStep5) at step 5 (t = 0.010 s)"
    (note,) = info.value.__notes__
    assert note == (
        f"wbsim: raised in {where} of wbsim/G1Stand-v0, seed 0; the log {run} holds the 5 step(s)"
        " before it, closed and readable (summary.json: status error); the video "
        f"{video} holds 6 frame(s)"  # one a step, drawn before its compute: t = 0 to 0.010 s
    )
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "error" and summary["logged_rows"] == 5
    assert (
        summary["stopped_reason"]
        == f"IndexError: my task's index 7 is out of range (raised in {where})"
    )
    assert len(load_run(run)["t"]) == 5
    assert len(imageio.mimread(video)) == 6
    # raised in reset, before the first step: said so, the log holds no step
    cfg.log, cfg.video, cfg.controller = tmp_path / "run2", None, "bad_controllers:RaisesInReset"
    with pytest.raises(ZeroDivisionError) as info:
        run_episode(cfg)
    assert info.value.__notes__ == [
        (
            "wbsim: raised in the controller's reset (bad_controllers:RaisesInReset) of "
            f"wbsim/G1Stand-v0, seed 0; the log {tmp_path / 'run2'} holds the 0 step(s) before "
            "it, closed and readable (summary.json: status error)"
        )
    ]


def test_a_dotted_class_name_suggests_the_colon(plugin_dir):
    """``my_controllers.PostureGravityPD`` (a dot where the colon goes) is unknown, and the
    message says which name was meant."""
    with pytest.raises(UnknownNameError) as info:
        controller_class("my_controllers.PostureGravityPD")
    assert "did you mean 'my_controllers:PostureGravityPD'?" in str(info.value)
    assert "known controllers: <package.module:Class>, gravity_qp" in str(info.value)
    with pytest.raises(UnknownNameError) as info:
        controller_class("gravity_q")
    assert "did you mean" not in str(info.value)
