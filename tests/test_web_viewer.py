"""The web viewer draws the robot and the overlay in a real browser (headless Chromium), live
(``wbsim run --web``) and for a logged run (``wbsim replay RUN --web``); it listens on the loopback
interface only."""

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np
import pytest

pytest.importorskip("viser")

from wbsim.errors import WbsimError
from wbsim.web_viewer import WebViewer

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def screenshot(url: str, path, width: int = 900, height: int = 650) -> np.ndarray:
    """A PNG of ``url`` in headless Chromium (software WebGL), after 10 s of the page's time;
    returns it as ``(h, w, 3)`` uint8."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Chromium for the web viewer's test (apt-get install chromium)")
        pytest.skip("no Chromium (apt-get install chromium)")
    from PIL import Image

    # Headless Chromium sometimes hangs on a page that keeps its websocket open (seen once in
    # ~20 CI runs: no screenshot after 240 s); a second start with a fresh profile takes it.
    for attempt in (1, 2):
        with tempfile.TemporaryDirectory() as profile:
            try:
                subprocess.run(
                    [
                        CHROMIUM,
                        "--headless",
                        "--no-sandbox",
                        "--disable-gpu",
                        "--disable-quic",
                        "--no-first-run",
                        "--disable-background-networking",
                        "--disable-component-update",
                        "--disable-sync",
                        f"--user-data-dir={profile}",
                        f"--window-size={width},{height}",
                        "--hide-scrollbars",
                        "--virtual-time-budget=10000",
                        f"--screenshot={path}",
                        url,
                    ],
                    check=True,
                    capture_output=True,
                    timeout=120,
                    # its crash reporter writes under $XDG_CONFIG_HOME (~/.config) whatever the
                    # profile: a test never writes into the user's home
                    env={**os.environ, "XDG_CONFIG_HOME": profile},
                )
                break
            except subprocess.TimeoutExpired:
                if attempt == 2:
                    raise
    return np.asarray(Image.open(path).convert("RGB"))


@pytest.fixture(scope="module")
def standing(g1):
    """The G1 standing at reset, as a frame's scene and overlay."""
    from wbsim.envs import make_humanoid
    from wbsim.scene import FrameValues, Scene

    env = make_humanoid("wbsim/G1Stand-v0")
    env.reset(seed=0)
    values = FrameValues.at_reset(
        env.robot, env.sensing, env.data.qpos, 0.0, env.schedule().contact_set
    )
    scene = Scene(env.robot, reset_qpos=env.data.qpos)
    overlay = scene.show(values)
    yield env.robot, scene, overlay
    env.close()


def test_the_page_draws_the_robot_and_the_overlay(standing, tmp_path):
    """Screenshots with the robot shown and hidden (the page's "Robot" checkbox, set from here):
    the robot's pixels are those that change, in the middle of the page; with it hidden, the
    overlay (the magenta CoM marker and its line) is still drawn."""
    robot, scene, overlay = standing
    web = WebViewer(port=_free_port(), realtime=False)
    try:
        web.load(robot)
        web.look_at(overlay.com, 2.2)
        web.show(scene.data, overlay, 0.0)
        shown = robot_page(web.url, tmp_path / "web_robot.png")
        web.robot_visible = False
        hidden = screenshot(web.url, tmp_path / "web_no_robot.png")
    finally:
        web.close()
    h, w, _ = shown.shape
    left = slice(0, int(0.55 * w))  # left of the controls, whose checkbox changed too
    changed = np.abs(shown[:, left].astype(int) - hidden[:, left].astype(int)).max(axis=-1) > 40
    rows, cols = np.nonzero(changed)
    print(
        f"robot pixels: {changed.sum()}, rows {rows.min()}-{rows.max()}, "
        f"columns {cols.min()}-{cols.max()} of {w}x{h}"
    )
    assert changed.sum() > 3000  # a standing G1 at 2.2 m fills tens of thousands of pixels
    assert 0.4 * w < np.median(cols) < 0.55 * w and rows.max() - rows.min() > 0.3 * h  # upright
    assert dark_middle(shown) > 1000 and dark_middle(hidden) < 300
    r, g, b = np.moveaxis(hidden.astype(int), -1, 0)
    magenta = ((r - g > 60) & (b - g > 60)).sum()  # the CoM marker and line, lit
    assert magenta > 50, magenta


def _contrast_with_white(rgb) -> float:
    """WCAG's contrast ratio of an sRGB colour (components 0-1) against white."""
    c = np.asarray(rgb, dtype=float)
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    luminance = float(linear @ [0.2126, 0.7152, 0.0722])
    return 1.05 / (luminance + 0.05)


def _hue_deg(rgb) -> float:
    import colorsys

    return 360.0 * colorsys.rgb_to_hsv(*np.asarray(rgb, dtype=float))[0]


def test_simulated_force_arrows_read_on_the_white_page(standing):
    """The page is white and lit by an environment light that brightens every colour: the
    simulated force arrows are drawn in a yellow dark enough to read on it (the video's bright
    yellow is 1.2:1 against white), still yellow (the video's hue, apart from the orange of a
    sliding point), while the commanded ones stay the video's blue."""
    from wbsim.overlay import COMMANDED, MODE_COLORS, SIMULATED

    _, _, overlay = standing
    sent = {}

    class Recorder:  # stands for viser's scene: keeps what the overlay hands it
        def add_arrows(self, name, points, colors, **kw):
            sent[name] = (np.asarray(points), np.asarray(colors) / 255.0)

        def __getattr__(self, name):
            return lambda *a, **k: None

    loaded = np.linalg.norm(overlay.f_sim, axis=1) > 1e-3
    assert loaded.sum() >= 4 and not np.any(overlay.violating)  # standing: every sole point
    f_cmd = np.where(loaded[:, None], overlay.f_sim, 0.0)  # a command equal to the forces
    web = WebViewer(port=_free_port(), realtime=False)
    try:
        web._overlay(Recorder(), dataclasses.replace(overlay, f_cmd=f_cmd))
    finally:
        web.close()
    _, colors = sent["/overlay/forces"]
    commanded, simulated = colors[: loaded.sum()], colors[loaded.sum() :]
    np.testing.assert_allclose(commanded, np.tile(COMMANDED[:3], (loaded.sum(), 1)), atol=0.01)
    assert _contrast_with_white(SIMULATED[:3]) < 1.3  # the video's yellow: pale on white
    for rgb in simulated:
        assert _contrast_with_white(rgb) > 2.5, rgb
        assert abs(_hue_deg(rgb) - _hue_deg(SIMULATED[:3])) < 5, rgb
        assert _hue_deg(rgb) - _hue_deg(MODE_COLORS[2, :3]) > 15, rgb  # not the sliding orange


def test_a_taken_port_is_a_one_line_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(WbsimError, match=f"cannot listen on 127.0.0.1:{port}"):
            WebViewer(port=port)


def test_a_port_a_stopped_viewer_left_in_time_wait_is_taken_again():
    # a viewer stopped (Ctrl-C) after a browser's visit leaves its end of that connection in
    # TIME_WAIT on the port for a minute; a restart on the same port must listen there, as
    # viser's own server (SO_REUSEADDR) can: only a port something listens on is refused
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            conn, _ = server.accept()
            conn.close()  # the server closes first: its end goes to TIME_WAIT
            client.recv(1)  # the server's FIN
    web = WebViewer(port=port, realtime=False)
    try:
        assert web.server.get_port() == port  # not another port picked silently
    finally:
        web.close()


def dark_middle(image: np.ndarray) -> int:
    """Pixels darker than the floor's grid lines in the middle of the page, where the camera
    looks at the robot: its shaded body, head and feet (a few dozen without it: the overlay)."""
    h, w, _ = image.shape
    return int(
        (image[int(0.3 * h) : int(0.8 * h), int(0.3 * w) : int(0.6 * w)].mean(-1) < 150).sum()
    )


def robot_page(url: str, path) -> np.ndarray:
    """A screenshot of ``url`` that shows the robot (:func:`dark_middle`); a page still loading
    its meshes on a busy machine is shot again, three times at most."""
    for _ in range(3):
        image = screenshot(url, path)
        if dark_middle(image) > 500:
            break
    return image


def _serve(args, ready: str, tmp_path):
    """Start ``wbsim ARGS`` and wait for ``ready`` on its stderr; returns the process."""
    err = (tmp_path / "stderr.txt").open("w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "wbsim.cli", *args],
        stdout=subprocess.PIPE,
        stderr=err,
        env={**os.environ, "MUJOCO_GL": "egl"},
    )
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None:
        err.seek(0)
        if ready in err.read():
            return proc, err
        time.sleep(0.3)
    proc.kill()
    err.seek(0)
    pytest.fail(f"wbsim {' '.join(args)} did not get ready: {err.read()[-2000:]}")


@pytest.mark.slow
def test_run_web_shows_the_run_and_keeps_the_page_until_ctrl_c(tmp_path):
    port = _free_port()
    proc, err = _serve(
        [
            "run",
            "--seconds",
            "0.3",
            "--web",
            "--web-port",
            str(port),
            "--log",
            str(tmp_path / "run"),
            "--no-progress",
        ],
        "the episode ended",
        tmp_path,
    )
    try:
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}", timeout=30).read()
        assert b"<html" in page.lower()  # (what the page draws: the test above)
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.read()
    assert b'"status": "completed"' in out
    with pytest.raises(OSError):  # the port is free again
        urllib.request.urlopen(f"http://127.0.0.1:{port}", timeout=5)


@pytest.mark.slow
def test_replay_web_serves_a_logged_run(tmp_path):
    from wbsim.rollout import EpisodeConfig, run_episode

    run_episode(EpisodeConfig(seconds=0.2, log=tmp_path / "run", progress=False))
    port = _free_port()
    proc, _ = _serve(
        ["replay", str(tmp_path / "run"), "--web", "--web-port", str(port)],
        "web viewer: http://127.0.0.1",
        tmp_path,
    )
    try:
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}", timeout=30).read()
        assert b"<html" in page.lower()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 0
