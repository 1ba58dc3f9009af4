"""Off-screen frames and the video file: sizes, odd sizes, not blank."""

import numpy as np
import pytest

from wbsim.errors import WbsimError
from wbsim.render import FrameRenderer, VideoWriter, even_frame


def test_frames_have_documented_shape_and_show_the_robot(g1):
    d = g1.make_data("stand")
    frame = FrameRenderer(g1.mj_model, 160, 120).render(d)
    assert frame.shape == (120, 160, 3) and frame.dtype == np.uint8
    # the robot is in the middle of the frame: its pixels differ from the floor and sky around it
    centre = frame[30:90, 60:100].astype(float)
    assert centre.std() > 10 and frame.mean() > 20


def test_odd_sizes_are_padded_for_the_codec(tmp_path, g1):
    import imageio.v2 as imageio

    d = g1.make_data("stand")
    frame = FrameRenderer(g1.mj_model, 161, 121).render(d)
    assert frame.shape == (121, 161, 3)
    assert even_frame(frame).shape == (122, 162, 3)
    path = tmp_path / "odd.mp4"
    with VideoWriter(path, fps=10) as w:
        for _ in range(3):
            w.append(frame)
    frames = [f for f in imageio.get_reader(str(path))]  # list() asks len(): inf
    assert len(frames) == 3 and frames[0].shape == (122, 162, 3)


def test_bad_sizes_and_cameras_are_reported(g1):
    with pytest.raises(WbsimError, match="off-screen buffer"):
        FrameRenderer(g1.mj_model, 5000, 100)
    with pytest.raises(WbsimError, match="known cameras: track, front"):
        FrameRenderer(g1.mj_model, 64, 48, camera="nope")


def test_renderer_is_lazy(g1):
    r = FrameRenderer(g1.mj_model, 64, 48)
    assert r._renderer is None


def test_mujoco_gl_chosen_before_import():
    import subprocess
    import sys

    code = (
        "import os; os.environ.pop('MUJOCO_GL', None); os.environ.pop('DISPLAY', None); "
        "import wbsim, sys; print(os.environ.get('MUJOCO_GL'))"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("MUJOCO_GL", "DISPLAY")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert out.stdout.strip() == "egl", out.stderr


def test_force_arrows_scale_with_force_and_are_capped(g1):
    """An arrow is drawn force_scale * |f| long (m) up to max_arrow, then max_arrow, along the force,
    from the point's marker surface. MuJoCo 4 draws an mjGEOM_ARROW over half its size[2] (see
    wbsim.overlay; tests/test_overlay_render.py measures it in pixels), so size[2] is twice the
    drawn length."""
    import mujoco

    from wbsim.overlay import MARKER_RADIUS, OverlayData, draw_geoms

    def arrow(force):
        scene = mujoco.MjvScene(g1.mj_model, maxgeom=50)
        p = np.array([0.1, 0.2, 0.0])
        data = OverlayData(
            points=p[None],
            modes=np.array([1]),
            f_cmd=np.zeros((1, 3)),
            f_sim=np.array([force], float),
            violating=np.array([False]),
            com=np.zeros(3),
            support=np.zeros((0, 2)),
        )
        draw_geoms(scene, data)
        g = scene.geoms[1]  # [point sphere, simulated-force arrow, ...]
        assert g.type == mujoco.mjtGeom.mjGEOM_ARROW
        assert scene.geoms[0].size[0] == pytest.approx(MARKER_RADIUS)
        return float(g.size[2]) / 2, g.mat.reshape(3, 3)[:, 2].copy(), g.pos.copy()

    length, axis, start = arrow([0.0, 30.0, 40.0])  # 50 N: 0.2 m
    assert length == pytest.approx(0.004 * 50.0)
    np.testing.assert_allclose(axis, [0.0, 0.6, 0.8], atol=1e-7)
    np.testing.assert_allclose(start, np.array([0.1, 0.2, 0.0]) + MARKER_RADIUS * axis, atol=1e-7)
    length, axis, _ = arrow([3000.0, 0.0, -4000.0])  # 5 kN: capped at 1 m, same direction
    assert length == pytest.approx(1.0)
    np.testing.assert_allclose(axis, [0.6, 0.0, -0.8], atol=1e-7)


def test_a_violating_point_is_drawn_red(g1):
    """A violation at a point turns its marker red as well as its arrows: a commanded pull points
    into the floor, where its arrow is hidden, so the marker is what shows it."""
    import mujoco

    from wbsim.overlay import COMMANDED, MODE_COLORS, VIOLATION, OverlayData, draw_geoms

    def geoms(violating):
        scene = mujoco.MjvScene(g1.mj_model, maxgeom=50)
        data = OverlayData(
            points=np.zeros((1, 3)),
            modes=np.array([1]),
            f_cmd=np.array([[0.0, 0.0, -5.0]]),
            f_sim=np.array([[0.0, 0.0, 40.0]]),
            violating=np.array([violating]),
            com=np.zeros(3),
            support=np.zeros((0, 2)),
        )
        draw_geoms(scene, data)
        return [g.rgba.copy() for g in scene.geoms[:3]]  # marker, simulated, commanded

    marker, sim, cmd = geoms(True)
    assert all(np.array_equal(c, VIOLATION) for c in (marker, sim, cmd))
    marker, sim, cmd = geoms(False)
    assert np.array_equal(marker, MODE_COLORS[1]) and np.array_equal(cmd, COMMANDED)


# -- video files that cannot be written: one-line WbsimError naming the file and the cause --------


def _noise(n, rng, shape=(48, 64, 3)):
    """Frames H.264 cannot compress much (a few KB each)."""
    return [rng.integers(0, 256, shape, dtype=np.uint8) for _ in range(n)]


def _write(path, frames, **kwargs):
    """Write ``frames`` (closing in any case); return (the writer, the WbsimError or None)."""
    from wbsim.render import VideoWriter

    w = None
    try:
        w = VideoWriter(path, **kwargs)
        try:
            for f in frames:
                w.append(f)
        finally:
            w.close()
    except WbsimError as exc:
        return w, exc
    return w, None


def _one_line_naming(exc, path, *causes):
    msg = str(exc)
    assert "\n" not in msg and str(path) in msg, msg
    assert any(c in msg for c in causes), msg
    assert "FFMPEG COMMAND" not in msg and "Broken pipe" not in msg.split(":")[-1], msg


@pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("n_frames", [3, 200])
def test_video_on_a_full_device_is_an_error(tmp_path, n_frames):
    """A video onto /dev/full (every write: ENOSPC), as a full disk: with 3 frames ffmpeg fails
    while finishing the file (close), with 200 it stops while frames come (append); either way a
    one-line WbsimError names the file and "No space left on device", ffmpeg has exited, and a
    second close does nothing."""
    path = tmp_path / "full.mp4"
    path.symlink_to("/dev/full")
    w, exc = _write(path, _noise(n_frames, np.random.default_rng(0)))
    assert exc is not None, "a video on a full device was reported written"
    _one_line_naming(exc, path, "No space left on device")
    assert ("writing frame" in str(exc)) == (n_frames == 200)
    assert w._proc is not None and w._proc.poll() is not None  # no ffmpeg left running
    w.close()
    with pytest.raises(WbsimError, match="closed after an error: video"):
        w.append(_noise(1, np.random.default_rng(1))[0])


@pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="needs /dev/full")
def test_broken_video_found_by_opening_it_without_ffmpeg_exit_status(tmp_path, monkeypatch):
    """close() opens the file and counts its frames, so a broken video is reported even when the
    ffmpeg process (read from imageio-ffmpeg's internals only to name the cause) is not found."""
    from wbsim import render

    monkeypatch.setattr(render, "_ffmpeg_process", lambda *a, **k: None)
    path = tmp_path / "full.mp4"
    path.symlink_to("/dev/full")
    _, exc = _write(path, _noise(3, np.random.default_rng(0)))
    assert exc is not None and "the written file cannot be opened" in str(exc)
    assert "\n" not in str(exc) and str(path) in str(exc)


def test_video_over_the_file_size_limit_is_an_error(tmp_path):
    """``ulimit -f`` (RLIMIT_FSIZE of 20 KB, set in a child Python that writes the video): ffmpeg
    is killed by SIGXFSZ; the writer raises a one-line WbsimError naming the file and the limit,
    whether it happens during the frames (300) or at the end (30)."""
    import json
    import subprocess
    import sys

    resource = pytest.importorskip("resource")
    if not hasattr(resource, "RLIMIT_FSIZE"):
        pytest.skip("no RLIMIT_FSIZE here")
    code = r"""
import json, resource, sys
import numpy as np
from wbsim.errors import WbsimError
from wbsim.render import VideoWriter
path, n = sys.argv[1], int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))
rng = np.random.default_rng(0)
w, out = VideoWriter(path), {"error": None}
try:
    try:
        for _ in range(n):
            w.append(rng.integers(0, 256, (120, 160, 3), dtype=np.uint8))
    finally:
        w.close()
except WbsimError as exc:
    out["error"] = str(exc)
out["ffmpeg_exited"] = w._proc is None or w._proc.poll() is not None
print(json.dumps(out))
"""
    for n in (30, 300):
        path = tmp_path / f"limit{n}.mp4"
        res = subprocess.run(
            [sys.executable, "-c", code, str(path), str(n)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert res.returncode == 0, res.stderr[-2000:]
        out = json.loads(res.stdout.strip().splitlines()[-1])
        assert out["error"] is not None, f"{n} frames over a 20 KB limit were reported written"
        _one_line_naming(out["error"], path, "ulimit -f")
        assert out["ffmpeg_exited"]


def test_an_odd_frame_size_is_a_note_naming_the_video_size(tmp_path):
    """161x121 asked: the frames are drawn at that size, the video is 162x122 (padded), and the
    run says so before it starts (the CLI prints it as a note)."""
    import imageio.v2 as imageio

    from wbsim.rollout import EpisodeConfig, run_episode

    video = tmp_path / "odd.mp4"
    with pytest.warns(UserWarning, match=r"will be 162x122: H.264 needs even sizes"):
        run_episode(EpisodeConfig(seconds=0.1, video=video, width=161, height=121, progress=False))
    assert imageio.get_reader(str(video)).get_data(0).shape == (122, 162, 3)


def test_a_video_cut_by_the_file_size_limit_still_plays_its_first_seconds(tmp_path):
    """Fragmented MP4, a keyframe a second: 600 frames over a 300 KB limit (a full disk, in a child
    Python) leave a file whose whole seconds decode, and the error says how many frames play (an
    ordinary MP4 cut short has no index: nothing plays)."""
    import json
    import subprocess
    import sys

    import imageio.v2 as imageio

    resource = pytest.importorskip("resource")
    if not hasattr(resource, "RLIMIT_FSIZE"):
        pytest.skip("no RLIMIT_FSIZE here")
    code = r"""
import json, resource, sys
import numpy as np
from wbsim.errors import WbsimError
from wbsim.render import VideoWriter
resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000))
base = np.random.default_rng(0).integers(0, 256, (120, 160, 3), dtype=np.uint8)
w, out = VideoWriter(sys.argv[1]), {"error": None}
try:
    try:
        for i in range(600):
            w.append(np.roll(base, i, axis=1))
    finally:
        w.close()
except WbsimError as exc:
    out["error"] = str(exc)
print(json.dumps(out))
"""
    path = tmp_path / "cut.mp4"
    res = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    error = json.loads(res.stdout.strip().splitlines()[-1])["error"]
    assert error is not None and "ulimit -f" in error
    frames = sum(1 for _ in imageio.get_reader(str(path)))
    assert 30 <= frames < 600
    assert f"its first {frames} frames" in error or f"its first {frames - 1} frames" in error


def test_video_on_a_full_tmpfs_is_an_error(tmp_path):
    """The report's case: a 64 KB tmpfs (needs root and mount). Opt-in (WBSIM_TEST_MOUNT=1): a
    test should not mount filesystems on a machine by default; /dev/full and the file-size limit
    above cover the same paths."""
    import os
    import subprocess

    if os.environ.get("WBSIM_TEST_MOUNT") != "1":
        pytest.skip("mounts a tmpfs: opt in with WBSIM_TEST_MOUNT=1 (needs root)")
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "fullfs"
    mnt.mkdir()
    if (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
            capture_output=True,
            check=False,
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a tmpfs here")
    try:
        path = mnt / "v.mp4"
        w, exc = _write(path, _noise(30, np.random.default_rng(0), shape=(120, 160, 3)))
        assert exc is not None, "a video on a full disk was reported written"
        _one_line_naming(exc, path, "No space left on device")
        assert w._proc is not None and w._proc.poll() is not None
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_video_folder_removed_after_start_is_an_error(tmp_path):
    """ffmpeg cannot open its output (the folder went away after the checks): one line naming the
    file and "No such file or directory", from append or close (ffmpeg may take the first frames
    before it exits)."""
    import shutil

    from wbsim.render import VideoWriter

    folder = tmp_path / "gone"
    w = VideoWriter(folder / "v.mp4")
    shutil.rmtree(folder)
    with pytest.raises(WbsimError) as info:
        try:
            for f in _noise(5, np.random.default_rng(0)):
                w.append(f)
        finally:
            w.close()
    _one_line_naming(info.value, folder / "v.mp4", "No such file or directory", "no longer exists")


def test_video_writer_that_cannot_start_is_a_one_line_error(tmp_path, monkeypatch):
    import imageio_ffmpeg

    from wbsim.render import VideoWriter

    def missing():
        raise RuntimeError("No ffmpeg exe could be found.\nInstall ffmpeg on your system")

    monkeypatch.setattr(imageio_ffmpeg, "get_ffmpeg_exe", missing)
    with pytest.raises(WbsimError) as info:
        VideoWriter(tmp_path / "v.mp4")
    msg = str(info.value)
    assert msg == (
        f"video {tmp_path / 'v.mp4'}: cannot start the ffmpeg writer (No ffmpeg exe "
        "could be found.)"
    )


def test_context_manager_keeps_the_error_in_flight(tmp_path):
    """An exception inside ``with VideoWriter(...)`` is not replaced by the video's own failure;
    that failure is a note on it."""
    from wbsim.render import VideoWriter

    if not __import__("os").path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    path = tmp_path / "full.mp4"
    path.symlink_to("/dev/full")
    with pytest.raises(KeyError) as info, VideoWriter(path) as w:
        w.append(_noise(1, np.random.default_rng(0))[0])
        raise KeyError("stop")
    assert any("No space left on device" in n for n in info.value.__notes__)


# -- paths refused before a run builds anything (check_video_path) --------------------------------


def test_unwritable_video_locations_are_refused_before_the_run(tmp_path):
    import os

    from wbsim.render import VideoWriter, check_video_path

    blocker = tmp_path / "afile"
    blocker.write_text("x")
    cases = [(blocker / "sub" / "x.mp4", f"{blocker} is not a folder")]
    if os.path.isdir("/proc"):
        cases += [
            ("/proc/x.mp4", "cannot write in /proc ("),
            ("/proc/nope/x.mp4", "cannot write in /proc ("),
        ]
    for path, message in cases:
        for make in (check_video_path, VideoWriter):
            with pytest.raises(WbsimError) as info:
                make(path)
            msg = str(info.value)
            assert "\n" not in msg and msg.startswith(f"video {path}: ") and message in msg, msg
    # nothing left behind: no probe file, no folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
    # a writable place passes, and its probe file is gone
    assert check_video_path(tmp_path / "new" / "deeper" / "v.mp4") == tmp_path / "new/deeper/v.mp4"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


@pytest.mark.skipif(
    not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() == 0,
    reason="root writes into read-only folders",
)
def test_read_only_folder_is_refused(tmp_path):
    from wbsim.render import check_video_path

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        for path in (ro / "x.mp4", ro / "sub" / "x.mp4"):
            with pytest.raises(WbsimError, match="Permission denied"):
                check_video_path(path)
    finally:
        ro.chmod(0o755)


def test_cli_reports_an_unwritable_video_in_one_line(tmp_path, capsys):
    """``wbsim run --video`` onto a location that cannot be written stops before the run with one
    line (was: "[Errno 32] Broken pipe" and ffmpeg's command)."""
    from wbsim.cli import main

    blocker = tmp_path / "afile"
    blocker.write_text("x")
    code = main(["run", "--seconds", "0.1", "--video", str(blocker / "x.mp4"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1 and "is not a folder" in err, err


def test_an_interrupt_in_the_middle_of_a_frame_leaves_a_playable_video(tmp_path, ctrl_c_raises):
    """Ctrl-C or SIGTERM arriving while a frame is going down ffmpeg's pipe is held until the
    frame is written (an interrupt inside imageio's write leaves it unable to finish the MP4):
    the interrupt then raises, and the video closes with every frame."""
    import os
    import signal

    import imageio_ffmpeg

    path = tmp_path / "v.mp4"
    w = VideoWriter(path, fps=10)
    frame = np.zeros((32, 48, 3), np.uint8)
    w.append(frame)
    real = w._writer.append_data

    def interrupted_write(data):
        os.kill(os.getpid(), signal.SIGINT)  # arrives while the frame is being written
        real(data)

    w._writer.append_data = interrupted_write
    import threading

    done = threading.Event()  # another thread alive, as in a real run (ffmpeg's reader, Ray, ...):
    threading.Thread(target=done.wait, daemon=True).start()  # a signal may be handed to it
    try:
        with pytest.raises(KeyboardInterrupt):
            w.append(frame)
    finally:
        done.set()
    assert w.n_frames == 2  # the frame was written before the interrupt was raised
    w.close()
    assert imageio_ffmpeg.count_frames_and_secs(str(path))[0] == 2


def test_a_ctrl_c_during_a_frame_waits_for_the_frame(g1, ctrl_c_raises):
    """An interrupt inside the GL calls (PyOpenGL's ctypes) came out as ctypes.ArgumentError; it is
    held until the frame is done, then raised as the KeyboardInterrupt it is."""
    import signal

    import mujoco

    d = mujoco.MjData(g1.mj_model)
    mujoco.mj_forward(g1.mj_model, d)
    fr = FrameRenderer(g1.mj_model, 64, 48)
    real = fr.renderer.render
    done = []

    def interrupted_render():
        signal.raise_signal(signal.SIGINT)  # Ctrl-C while the GL call runs
        done.append(real())
        return done[-1]

    fr.renderer.render = interrupted_render
    with pytest.raises(KeyboardInterrupt):
        fr.render(d)
    assert len(done) == 1 and done[0].shape == (48, 64, 3)
    fr.close()
