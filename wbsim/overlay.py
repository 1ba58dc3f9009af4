"""What a frame shows beyond the robot: contact modes, forces, CoM, support polygon, a status line.

The same :class:`OverlayData` is drawn into MuJoCo's off-screen renderer (video frames) and into the
passive viewer (``user_scn``), so the two always show the same things. Geometry is added with
``mujoco.mjv_initGeom`` / ``mujoco.mjv_connector``; the status line is drawn on the video frame with
Pillow and handed to the viewer with ``Handle.set_texts``.

Colours: sole points grey = ``open``, green = ``sticking``, orange = ``sliding``; force arrows thin blue =
commanded, thick yellow = simulated (drawn from the same point, so agreement shows as blue inside
yellow), red = a violation at that point (either kind); CoM magenta with its
ground projection and a vertical line; support polygon cyan on the floor.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

__all__ = ["OverlayData", "draw_geoms", "draw_text", "MODE_COLORS"]

#: RGBA per contact mode index (0 open, 1 sticking, 2 sliding).
MODE_COLORS = np.array([[0.6, 0.6, 0.6, 1.0], [0.1, 0.85, 0.2, 1.0], [1.0, 0.55, 0.0, 1.0]],
                       dtype=np.float32)
COMMANDED, SIMULATED, VIOLATION = (
    np.array([0.15, 0.35, 1.0, 0.9], np.float32), np.array([1.0, 0.9, 0.1, 0.9], np.float32),
    np.array([1.0, 0.05, 0.05, 1.0], np.float32))
COM_COLOR = np.array([0.9, 0.1, 0.9, 1.0], np.float32)
POLYGON_COLOR = np.array([0.0, 0.9, 0.9, 1.0], np.float32)


@dataclass
class OverlayData:
    """Everything an overlay draws for one instant.

    Attributes:
        points: ``(n, 3)`` sole contact points, world, m.
        modes: ``(n,)`` contact mode index per point (0 open, 1 sticking, 2 sliding).
        f_cmd: ``(n, 3)`` commanded force on the robot per point, world, N.
        f_sim: ``(n, 3)`` simulated contact force on the robot per point, world, N.
        violating: ``(n,)`` bool, a violation at the point this step.
        com: ``(3,)`` centre of mass, world, m.
        support: ``(k, 2)`` support polygon (x, y), counter-clockwise, m.
        text: the status line.
        force_scale: arrow length per newton, m/N (0.004: a G1 sole point's 40 N is 16 cm).
        max_arrow: longest arrow drawn, m (1.0: 250 N at the default scale, above a Talos sole
            point's load in single support); a longer one is drawn at this length in its direction
            (a falling robot's commands can reach kN; the log holds every magnitude).
    """

    points: np.ndarray
    modes: np.ndarray
    f_cmd: np.ndarray
    f_sim: np.ndarray
    violating: np.ndarray
    com: np.ndarray
    support: np.ndarray
    text: str = ""
    force_scale: float = 0.004
    max_arrow: float = 1.0
    extra: dict = field(default_factory=dict)


def _add(scene: mujoco.MjvScene) -> mujoco.MjvGeom | None:
    if scene.ngeom >= scene.maxgeom:
        return None
    geom = scene.geoms[scene.ngeom]
    scene.ngeom += 1
    return geom


def _sphere(scene, pos, radius, rgba):
    g = _add(scene)
    if g is not None:
        mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_SPHERE, np.array([radius, 0, 0]),
                            np.asarray(pos, float), np.eye(3).ravel(), rgba)


def _connector(scene, kind, width, a, b, rgba):
    g = _add(scene)
    if g is not None:
        mujoco.mjv_initGeom(g, kind, np.zeros(3), np.zeros(3), np.eye(3).ravel(), rgba)
        mujoco.mjv_connector(g, kind, width, np.asarray(a, float), np.asarray(b, float))


def draw_geoms(scene: mujoco.MjvScene, data: OverlayData, label: str = "") -> None:
    """Append the overlay's geometry to ``scene`` (stops quietly when the scene is full).

    ``label``, if given, is shown next to the CoM marker (the viewer's status line).
    """
    arrow = mujoco.mjtGeom.mjGEOM_ARROW
    for i, p in enumerate(data.points):
        _sphere(scene, p, 0.012, MODE_COLORS[int(data.modes[i]) % 3])
        # simulated thick, commanded thin on top of it, so both show when they agree
        for force, color, width in ((data.f_sim[i], SIMULATED, 0.012), (data.f_cmd[i], COMMANDED,
                                                                         0.006)):
            norm = float(np.linalg.norm(force))
            if norm > 1e-3:
                length = min(data.force_scale * norm, data.max_arrow)
                tip = p + (length / norm) * np.asarray(force, float)
                _connector(scene, arrow, width, p, tip, VIOLATION if data.violating[i] else color)
    com = np.asarray(data.com, float)
    _sphere(scene, com, 0.03, COM_COLOR)
    if label and scene.ngeom:
        scene.geoms[scene.ngeom - 1].label = label[:99]  # mjvGeom.label holds 100 characters
    ground = np.array([com[0], com[1], 0.002])
    _sphere(scene, ground, 0.015, COM_COLOR)
    _connector(scene, mujoco.mjtGeom.mjGEOM_LINE, 2.0, com, ground, COM_COLOR)
    poly = np.asarray(data.support, float)
    for k in range(len(poly)):
        a, b = poly[k], poly[(k + 1) % len(poly)]
        _connector(scene, mujoco.mjtGeom.mjGEOM_CAPSULE, 0.003, [a[0], a[1], 0.002],
                   [b[0], b[1], 0.002], POLYGON_COLOR)


def draw_text(frame: np.ndarray, text: str) -> np.ndarray:
    """Write ``text`` (lines split on newlines) at the top-left of an RGB frame; returns the frame."""
    if not text:
        return frame
    from PIL import Image, ImageDraw

    img = Image.fromarray(frame)
    draw = ImageDraw.Draw(img)
    lines = text.split("\n")
    height = 14 * len(lines) + 8
    draw.rectangle([0, 0, frame.shape[1], height], fill=(0, 0, 0))
    for k, line in enumerate(lines):
        draw.text((6, 4 + 14 * k), line, fill=(255, 255, 255))
    return np.asarray(img)
