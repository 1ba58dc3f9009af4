"""What a frame shows beyond the robot: contact modes, forces, CoM, support polygon, a status line.

The same :class:`OverlayData` is drawn into MuJoCo's off-screen renderer (video frames) and into the
passive viewer (``user_scn``), so the two always show the same things. Geometry is added with
``mujoco.mjv_initGeom`` / ``mujoco.mjv_connector``; the status line is drawn on the video frame with
Pillow and handed to the viewer with ``Handle.set_texts``.

Colours: sole points grey = ``open``, green = ``sticking``, orange = ``sliding``; force arrows thin blue =
commanded, thick yellow = simulated (drawn from the same point, so agreement shows as blue inside
yellow), red = a violation at that point (either kind: both arrows and the point's marker, so that
a commanded pull, whose arrow points into the floor, still shows); CoM magenta with its
ground projection and a vertical line; support polygon cyan on the floor.

Sizes: a sole point's marker is a sphere of radius :data:`MARKER_RADIUS` (20 mm) at the point; its
force arrows start on the marker's surface, in the force's direction, and are
``force_scale * |f|`` long (at most ``max_arrow``), so the tip is at
``p + (MARKER_RADIUS + length) * f / |f|``. Starting on the surface keeps the mode colour visible
under a loaded point (an arrow from the point's centre hid the whole marker inside its shaft), and
the shafts (radius 8 mm simulated, 4 mm commanded; heads 1.75x wider) are thinner than the marker, so
it also shows around the arrow when the camera looks along the force.

Arrow length in MuJoCo 4: the renderer draws an ``mjGEOM_ARROW`` of ``size[2] = s`` from ``pos`` over
``[0, s/2]`` along the geom's z axis (shaft to ``s/3``, cone from ``s/3`` to ``s/2``), while
``mujoco.mjv_connector(geom, mjGEOM_ARROW, width, a, b)`` sets ``s = |b - a|``: an arrow made that way
ends halfway to ``b``. :func:`_arrow` therefore hands ``mjv_connector`` the point ``a + 2 (tip - a)``
(:data:`ARROW_DRAWN_FRACTION`); ``tests/test_overlay_render.py`` checks the drawn tip's pixel row
against the camera's projection.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

__all__ = ["MARKER_RADIUS", "MODE_COLORS", "OverlayData", "draw_geoms", "draw_text"]

#: RGBA per contact mode index (0 open, 1 sticking, 2 sliding).
MODE_COLORS = np.array(
    [[0.6, 0.6, 0.6, 1.0], [0.1, 0.85, 0.2, 1.0], [1.0, 0.55, 0.0, 1.0]], dtype=np.float32
)
COMMANDED, SIMULATED, VIOLATION = (
    np.array([0.15, 0.35, 1.0, 0.9], np.float32),
    np.array([1.0, 0.9, 0.1, 0.9], np.float32),
    np.array([1.0, 0.05, 0.05, 1.0], np.float32),
)
#: The simulated arrows' yellow darkened for a white page (the web viewer): lit by the page's
#: environment light, :data:`SIMULATED` renders cream on white (about 1.2:1 against it); this one
#: is the same hue, about 2.8:1 before shading, and stays apart from the sliding marker's orange.
SIMULATED_ON_WHITE = np.array([0.7, 0.6, 0.0, 0.9], np.float32)
COM_COLOR = np.array([0.9, 0.1, 0.9, 1.0], np.float32)
POLYGON_COLOR = np.array([0.0, 0.9, 0.9, 1.0], np.float32)
#: Radius of a sole point's mode marker, m.
MARKER_RADIUS = 0.02
#: Shaft radius (``mjvGeom.size[0]``) of the simulated and the commanded force arrows, m.
SIMULATED_WIDTH, COMMANDED_WIDTH = 0.008, 0.004
#: Fraction of ``mjvGeom.size[2]`` over which MuJoCo 4 draws an ``mjGEOM_ARROW`` (see the module
#: docstring): the drawn arrow is ``ARROW_DRAWN_FRACTION * size[2]`` long.
ARROW_DRAWN_FRACTION = 0.5


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
        force_scale: drawn arrow length per newton, m/N (0.004: a G1 sole point's 40 N is 16 cm).
        max_arrow: longest arrow drawn, m (1.0: 250 N at the default scale, above a Talos sole
            point's load in single support); a longer one is drawn at this length in its direction
            (a falling robot's commands can reach kN; the log holds every magnitude). Arrows
            start on the point's marker (:data:`MARKER_RADIUS` from the point, along the force).
        extra: free-form data of the caller (not drawn).
        cmd_wrench_arrows: ``[(p (3,), f (3,))]``: for each foot commanded as a wrench (wrench
            contact model; its points' ``f_cmd`` are then zero), the commanded force ``f`` (N, world)
            drawn as a thin blue arrow from ``p``, the wrench's centre of pressure on the sole plane
            (world, m). The wrench's moment about the sole normal is not drawn.
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
    cmd_wrench_arrows: list = field(default_factory=list)


def _add(scene: mujoco.MjvScene) -> mujoco.MjvGeom | None:
    if scene.ngeom >= scene.maxgeom:
        return None
    geom = scene.geoms[scene.ngeom]
    scene.ngeom += 1
    return geom


def _sphere(scene, pos, radius, rgba):
    g = _add(scene)
    if g is not None:
        mujoco.mjv_initGeom(
            g,
            mujoco.mjtGeom.mjGEOM_SPHERE,
            np.array([radius, 0, 0]),
            np.asarray(pos, float),
            np.eye(3).ravel(),
            rgba,
        )


def _connector(scene, kind, width, a, b, rgba):
    g = _add(scene)
    if g is not None:
        mujoco.mjv_initGeom(g, kind, np.zeros(3), np.zeros(3), np.eye(3).ravel(), rgba)
        mujoco.mjv_connector(g, kind, width, np.asarray(a, float), np.asarray(b, float))


def _arrow(scene, width, start, tip, rgba):
    """An ``mjGEOM_ARROW`` drawn from ``start`` to ``tip`` (world, m); shaft radius ``width``, m.

    ``mjv_connector`` stores ``size[2] = |b - a|`` and MuJoCo 4 draws the arrow over
    ``ARROW_DRAWN_FRACTION * size[2]`` (module docstring), so ``b`` is placed beyond ``tip``.
    """
    start = np.asarray(start, float)
    _connector(
        scene,
        mujoco.mjtGeom.mjGEOM_ARROW,
        width,
        start,
        start + (np.asarray(tip, float) - start) / ARROW_DRAWN_FRACTION,
        rgba,
    )


def _force_arrow(
    scene, data: OverlayData, p: np.ndarray, offset: float, force, width: float, rgba
) -> None:
    """The arrow of ``force`` (N, world) from ``offset`` m beyond ``p`` along the force,
    ``data.force_scale * |f|`` long, at most ``data.max_arrow`` (m); none below 1e-3 N."""
    force = np.asarray(force, float)
    norm = float(np.linalg.norm(force))
    if norm > 1e-3:
        u = force / norm
        start = p + offset * u
        _arrow(scene, width, start, start + min(data.force_scale * norm, data.max_arrow) * u, rgba)


def draw_geoms(scene: mujoco.MjvScene, data: OverlayData, label: str = "") -> None:
    """Append the overlay's geometry to ``scene`` (stops quietly when the scene is full).

    ``label``, if given, is shown next to the CoM marker (the viewer's status line).
    """
    for i, p in enumerate(data.points):
        p = np.asarray(p, float)
        # a violation at the point: the marker turns red too (a commanded pull points into the
        # floor, where its arrow cannot be seen)
        _sphere(
            scene,
            p,
            MARKER_RADIUS,
            VIOLATION if data.violating[i] else MODE_COLORS[int(data.modes[i]) % 3],
        )
        # simulated thick, commanded thin on top of it, so both show when they agree; both start
        # on the marker's surface so that the mode colour stays visible
        for force, color, width in (
            (data.f_sim[i], SIMULATED, SIMULATED_WIDTH),
            (data.f_cmd[i], COMMANDED, COMMANDED_WIDTH),
        ):
            _force_arrow(
                scene,
                data,
                p,
                MARKER_RADIUS,
                force,
                width,
                VIOLATION if data.violating[i] else color,
            )
    # feet commanded as wrenches: the force at its centre of pressure, as a commanded arrow
    for p, force in data.cmd_wrench_arrows:
        _force_arrow(scene, data, np.asarray(p, float), 0.0, force, COMMANDED_WIDTH, COMMANDED)
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
        _connector(
            scene,
            mujoco.mjtGeom.mjGEOM_CAPSULE,
            0.003,
            [a[0], a[1], 0.002],
            [b[0], b[1], 0.002],
            POLYGON_COLOR,
        )


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
