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

    code = ("import os; os.environ.pop('MUJOCO_GL', None); os.environ.pop('DISPLAY', None); "
            "import wbsim, sys; print(os.environ.get('MUJOCO_GL'))")
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("MUJOCO_GL", "DISPLAY")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "egl", out.stderr


def test_force_arrows_scale_with_force_and_are_capped(g1):
    """An arrow is force_scale * |f| long (m) up to max_arrow, then max_arrow, along the force."""
    import mujoco

    from wbsim.overlay import OverlayData, draw_geoms

    def arrow(force):
        scene = mujoco.MjvScene(g1.mj_model, maxgeom=50)
        p = np.array([0.1, 0.2, 0.0])
        data = OverlayData(points=p[None], modes=np.array([1]), f_cmd=np.zeros((1, 3)),
                           f_sim=np.array([force], float), violating=np.array([False]),
                           com=np.zeros(3), support=np.zeros((0, 2)))
        draw_geoms(scene, data)
        g = scene.geoms[1]  # [point sphere, simulated-force arrow, ...]
        assert g.type == mujoco.mjtGeom.mjGEOM_ARROW
        return float(g.size[2]), g.mat.reshape(3, 3)[:, 2].copy(), g.pos.copy()

    length, axis, start = arrow([0.0, 30.0, 40.0])  # 50 N: 0.2 m
    assert length == pytest.approx(0.004 * 50.0)
    np.testing.assert_allclose(axis, [0.0, 0.6, 0.8], atol=1e-12)
    np.testing.assert_allclose(start, [0.1, 0.2, 0.0], atol=1e-12)
    length, axis, _ = arrow([3000.0, 0.0, -4000.0])  # 5 kN: capped at 1 m, same direction
    assert length == pytest.approx(1.0)
    np.testing.assert_allclose(axis, [0.6, 0.0, -0.8], atol=1e-12)
