"""`wbsim run --viewer`: runs under a virtual display (xvfb-run, installed by .ci/run) and fails with a
message that says how to run headless when there is no display."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from wbsim.cli import main


def test_viewer_without_display_says_how_to_run_headless(monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert main(["run", "--viewer", "--seconds", "0.1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "display" in err and "without --viewer" in err and "xvfb-run" in err
    # from Python (render_mode="human"): the message names the Python way too
    import gymnasium as gym

    from wbsim.errors import WbsimError

    with pytest.raises(WbsimError, match="render_mode='rgb_array'"):
        env = gym.make("wbsim/G1Stand-v0", render_mode="human")
        env.reset(seed=0)
        env.render()


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="xvfb is not installed (.ci/run does)")
def test_viewer_runs_under_xvfb(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY")
    }
    out = subprocess.run(
        [
            "xvfb-run",
            "-a",
            sys.executable,
            "-m",
            "wbsim.cli",
            "run",
            "--viewer",
            "--seconds",
            "0.6",
            "--controller",
            "gravity_qp",
            "--log",
            str(tmp_path),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    summary = json.loads(out.stdout)
    assert summary["status"] == "completed" and summary["steps"] == 300 and not summary["fell"]


def test_viewer_paces_each_episode_from_its_reset(monkeypatch):
    """Real-time pacing compares simulated with wall time since the viewer opened; after a reset
    (simulated time back to 0) the wall clock was ahead for good, so every later episode of a
    ``render_mode="human"`` loop ran unpaced, as fast as the machine goes. A fake clock: no
    display, no timing."""
    from types import SimpleNamespace

    import wbsim.viewer as viewer_module
    from wbsim.viewer import Viewer

    clock = [100.0]
    slept = []

    def sleep(s):
        slept.append(round(s, 9))
        clock[0] += s

    monkeypatch.setattr(viewer_module.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(viewer_module.time, "sleep", sleep)

    class Handle:
        user_scn = SimpleNamespace(ngeom=0)

        def lock(self):
            import contextlib

            return contextlib.nullcontext()

        def sync(self):
            pass

    v = Viewer.__new__(Viewer)  # what __init__ sets, without a window
    v.handle, v.data, v.realtime, v.frames = Handle(), SimpleNamespace(time=0.0), True, 0
    v._wall0, v._sim0, v._last_time = clock[0], 0.0, 0.0
    for t in (0.0, 0.1, 0.2, 0.0, 0.1):  # an episode to 0.2 s, a reset, 0.1 s of the next
        v.data.time = t
        v.sync()
    assert slept == [0.1, 0.1, 0.1]  # the second episode too, in real time
