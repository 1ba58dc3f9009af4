"""The overlay as drawn, in pixels: force arrows have the documented length (4 mm per newton, at
most 1 m) in the rendered frame, not only in ``mjvGeom.size``; sole-point mode markers show under
the force arrows of a standing G1.

The arrow test projects the expected tip into the image with the pinhole model of the scene's fixed
``side`` camera (``cam_xpos``, ``cam_xmat``, ``cam_fovy``) and compares it with the arrow's pixels
(pixels that change when the overlay is drawn). Reference spheres at the expected tips check the
projection itself. The PNGs are saved in the test's ``tmp_path`` for a look.
"""

import mujoco
import numpy as np
import pytest
from PIL import Image

from wbsim.overlay import MARKER_RADIUS, MODE_COLORS, OverlayData, _sphere, draw_geoms
from wbsim.render import FrameRenderer

W, H = 640, 480
RED = np.array([1.0, 0.0, 0.0, 1.0], np.float32)


def _projector(model, data, camera):
    """World point (m) -> (column, row) of the pixel centre it falls on, for a fixed camera of the
    model: pinhole with vertical field of view ``cam_fovy``, the camera looking along its -z axis,
    image rows growing downwards (MuJoCo's frames as ``FrameRenderer`` returns them)."""
    cam = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
    R, c = data.cam_xmat[cam].reshape(3, 3), data.cam_xpos[cam].copy()
    f = (H / 2) / np.tan(np.deg2rad(model.cam_fovy[cam]) / 2)

    def project(x):
        p = R.T @ (np.asarray(x, float) - c)  # camera frame: x right, y up, z backwards
        return np.array([W / 2 + f * p[0] / -p[2] - 0.5, H / 2 - f * p[1] / -p[2] - 0.5])

    return project


def _overlay(points, forces):
    n = len(points)
    return OverlayData(
        points=np.asarray(points, float),
        modes=np.ones(n, dtype=int),
        f_cmd=np.zeros((n, 3)),
        f_sim=np.asarray(forces, float),
        violating=np.zeros(n, dtype=bool),
        com=np.array([5.0, 5.0, 0.0]),
        support=np.zeros((0, 2)),
    )


def test_drawn_arrows_have_the_documented_length_and_direction(g1, tmp_path):
    """Arrows seen from the side: a 100 N vertical arrow is 0.4 m long, a 3 kN one is capped at
    1 m, a 150 N arrow at 45 degrees is 0.6 m long along its force; each starts on its point's
    marker. The tips found in the frame are where the camera's projection puts them: half a
    length (what MuJoCo 4 draws for ``mjv_connector(from, tip)``) is 45-110 px off.

    The tip is measured to 2 px (0.9 cm) as the apex of the head's silhouette; the topmost drawn
    pixel may be up to 12 px short of it (the head's last millimetres are thinner than a pixel)."""
    m, d = g1.mj_model, g1.make_data("stand")
    project = _projector(m, d, "side")
    px_per_m = project([0, -1, 0.0])[1] - project([0, -1, 1.0])[1]
    assert px_per_m == pytest.approx(222.9, abs=1.0)  # 1 m at 2.6 m from the camera
    # in front of the robot (y = 0), 2.6 m from the camera, all in one plane facing it
    points = [[-0.9, -1.0, 0.1], [-0.6, -1.0, 0.1], [-0.3, -1.0, 0.1]]
    forces = [[0.0, 0.0, 100.0], [0.0, 0.0, 3000.0], [150.0 / np.sqrt(2), 0.0, 150.0 / np.sqrt(2)]]
    lengths = [0.4, 1.0, 0.6]
    data = _overlay(points, forces)
    starts, tips = [], []
    for p, f, L in zip(points, forces, lengths):
        u = np.asarray(f) / np.linalg.norm(f)
        starts.append(np.asarray(p) + MARKER_RADIUS * u)
        tips.append(starts[-1] + L * u)
    refs = [tips[0] + [0.1, 0, 0], tips[1] + [0.1, 0, 0]]  # red spheres level with the tips

    def draw(scene, _):
        draw_geoms(scene, data)
        for r in refs:
            _sphere(scene, r, 0.01, RED)

    renderer = FrameRenderer(m, W, H, camera="side")
    try:
        plain = renderer.render(d).astype(int)
        frame = renderer.render(d, draw)
    finally:
        renderer.close()
    Image.fromarray(frame).save(tmp_path / "arrows_side.png")
    changed = np.abs(frame.astype(int) - plain).sum(axis=2) > 30
    rows, cols = np.mgrid[0:H, 0:W]

    # the projection is right: the reference spheres are where it puts them
    red = (frame[..., 0] > 150) & (frame[..., 1] < 60) & (frame[..., 2] < 60)
    for r in refs:
        u, v = project(r)
        blob = red & (np.abs(cols - u) < 8) & (np.abs(rows - v) < 8)
        assert blob.sum() > 10
        np.testing.assert_allclose([cols[blob].mean(), rows[blob].mean()], [u, v], atol=1.0)

    # vertical arrows: the tip is the apex of the head's silhouette, a triangle whose rows narrow
    # linearly to the tip (its last pixels are thinner than one pixel and partly not drawn:
    # up to 12 px of the 1 m arrow's slender head)
    for k in (0, 1):
        u_tip, v_tip = project(tips[k])
        band = changed & (np.abs(cols - u_tip) <= 6)
        top = rows[band].min()
        assert v_tip - 1.5 <= top <= v_tip + 12, (k, top, v_tip)
        assert _apex_row(rows[band]) == pytest.approx(v_tip, abs=2.0), k

    # the tilted arrow: the changed pixel farthest along the projected force is the tip (up to
    # the head's thinnest pixels, as above)
    s_px, t_px = project(starts[2]), project(tips[2])
    axis = (t_px - s_px) / np.linalg.norm(t_px - s_px)
    np.testing.assert_allclose(axis, [np.sqrt(0.5), -np.sqrt(0.5)], atol=0.01)  # 45 deg in image
    region = changed & (cols > project(points[1])[0] + 20)  # right of the 3 kN arrow
    rel = np.stack([cols[region] - s_px[0], rows[region] - s_px[1]], axis=1)
    along, across = rel @ axis, np.abs(rel @ np.array([-axis[1], axis[0]]))
    reach = along[across < 6].max()
    expected = np.linalg.norm(t_px - s_px)  # 134 px
    assert expected - 8 <= reach <= expected + 1.5, (reach, expected)


def _apex_row(arrow_rows):
    """The row of a vertical (upward) arrow's tip, sub-pixel: a line fitted to the head's width
    (pixels per row) against the row, from the topmost row down to the head's base (where the
    width drops by 2 px or more to the shaft's), extrapolated to width 0."""
    top = arrow_rows.min()
    width = np.bincount(arrow_rows - top)
    n = next(i for i in range(1, len(width)) if width[i] <= width[i - 1] - 2)
    slope, intercept = np.polyfit(np.arange(n) + top, width[:n], 1)
    return -intercept / slope


def _green(frame):
    """Pixels of the sticking marker colour (``MODE_COLORS[1]``, shaded): green well above red and
    blue (the floor, the robot, the yellow and blue arrows and the cyan polygon are not)."""
    r, g, b = (frame[..., i].astype(int) for i in range(3))
    return (g >= 90) & (r < 0.5 * g) & (b < 0.6 * g)


def test_sticking_markers_show_under_force_arrows_of_a_standing_g1(tmp_path):
    """A real frame of the G1 standing on the gravity-compensation QP (all 8 sole points sticking
    and loaded): the green markers keep at least half of the pixels they show without the arrows,
    and over 100 px in all (the old 12 mm markers inside 12 mm arrows kept none of their 52)."""
    from wbsim.controllers import make_controller
    from wbsim.envs import make as make_env

    assert MODE_COLORS[1][1] > 0.8 and MODE_COLORS[1][0] < 0.2  # what _green looks for
    env = make_env("wbsim/G1Stand-v0", render_mode="rgb_array", width=W, height=H)
    try:
        uenv = env.unwrapped
        _, info = env.reset(seed=0)
        controller = make_controller("gravity_qp", uenv.robot)
        controller.reset(info["state"])
        for _ in range(25):
            state = info["state"]
            cmd = controller.compute(state, info["schedule"])
            uenv.overlay_command = cmd
            conv = uenv.robot.converter
            tau = cmd.torque_at(state.q[conv.pin_qidx], state.v[conv.pin_vidx])
            _, _, terminated, _, info = env.step(uenv.torque_to_action(tau))
            assert not terminated
        s = uenv.sensing
        assert len(s.mode) == 8 and np.all(s.mode == 1)  # all sticking
        assert np.all(s.force_world[:, 2] > 10.0)  # and loaded: every point has its arrow
        frame = env.render()
        data = uenv.overlay_data()
        data.f_sim[:] = 0.0
        data.f_cmd[:] = 0.0
        bare = uenv.frame_renderer.render(uenv.data, lambda scn, _: draw_geoms(scn, data))
    finally:
        env.close()
    Image.fromarray(frame).save(tmp_path / "g1_stand_markers.png")
    Image.fromarray(bare).save(tmp_path / "g1_stand_markers_no_arrows.png")
    n_with, n_without = int(_green(frame).sum()), int(_green(bare).sum())
    assert n_without >= 30, n_without  # the markers are in view at all
    print(f"green marker pixels: {n_with} with the arrows, {n_without} without")
    assert n_with >= 0.5 * n_without, (n_with, n_without)
    assert n_with >= 100, n_with  # about 25 px for each of the 6 markers in view


def test_a_wrench_command_is_drawn_at_its_centre_of_pressure():
    """The wrench contact model commands a wrench per foot, not point forces: the overlay draws its
    force from the centre of pressure on the sole plane, the point whose moment arm gives the
    wrench's horizontal moments about the foot frame origin (Pinocchio's foot frame, an independent
    source), and draws one commanded arrow per foot (it drew none)."""
    import gymnasium as gym
    import pinocchio as pin

    from wbsim.controllers import make_controller
    from wbsim.overlay import COMMANDED

    env = gym.make("wbsim/G1Stand-v0")
    u = env.unwrapped
    _, info = env.reset(seed=0)
    ctrl = make_controller("gravity_qp", u.robot, contact_model="wrench")
    ctrl.reset(info["state"])
    for _ in range(20):  # off the exact stand pose: the wrenches carry moments
        seen = info["state"]
        cmd = ctrl.compute(seen, info["schedule"])
        conv = u.robot.converter
        tau = cmd.torque_at(seen.q[conv.pin_qidx], seen.v[conv.pin_vidx])
        _, _, _, _, info = env.step(u.torque_to_action(tau + 2.0))
    u.overlay_command = cmd
    data = u.overlay_data()
    assert len(data.cmd_wrench_arrows) == 2 and not np.any(data.f_cmd)
    robot = u.robot
    pdata = robot.pin_model.createData()
    # after mj_step, MjData's kinematics and the sensing describe the state the step started from:
    # the one the controller saw when it computed the wrench
    pin.framesForwardKinematics(robot.pin_model, pdata, seen.q)
    for foot, (p, f) in zip(("left_foot", "right_foot"), data.cmd_wrench_arrows):
        w = cmd.foot_wrenches[robot.foot_names.index(foot)]
        o = pdata.oMf[robot.foot(foot).pin_frame_id].translation
        np.testing.assert_allclose(np.cross(p - o, w[:3])[:2], w[3:5], atol=1e-9)
        np.testing.assert_array_equal(f, w[:3])
        sole_z = [
            u.sensing.position_world[i, 2]
            for i, ft in enumerate(u.sensing.point_foot)
            if ft == foot
        ]
        assert p[2] == pytest.approx(np.mean(sole_z), abs=1e-12)
    scene = mujoco.MjvScene(u.model, maxgeom=200)
    draw_geoms(scene, data)
    arrows = [
        g
        for g in scene.geoms[: scene.ngeom]
        if g.type == mujoco.mjtGeom.mjGEOM_ARROW and np.array_equal(g.rgba, COMMANDED)
    ]
    assert len(arrows) == 2
    env.close()
