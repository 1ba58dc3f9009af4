"""A viewer in the web browser, for machines without a display: the robot, the overlay and the
status line, served by `viser <https://viser.studio>`_ (three.js in the page, a websocket to this
process).

``wbsim run --web`` shows a run live (paced to real time) and ``wbsim replay RUN --web`` a logged
run with a time slider and a play button. The page is at ``http://127.0.0.1:8080`` by default:
bound to the loopback interface, so only this machine reaches it; from a laptop, forward the port
(``ssh -L 8080:127.0.0.1:8080 server``), or bind another interface with ``--web-host`` on a
trusted network.

What it draws is what the video frames draw (:mod:`wbsim.scene`): MuJoCo's visible geoms (groups
0-2, as MuJoCo's renderer shows them) placed at each body's pose, sole points as dots coloured by
contact mode (grey open, green sticking, orange sliding, red in a violation), force arrows from
each point (yellow simulated, a darker yellow than the video's to read on the white page; blue
commanded, red at a violation; 4 mm per newton, at most 1 m), the
CoM (magenta) with its ground projection, the planned support polygon (cyan) and the status line.

Needs the ``[web]`` extra (``pip install "wbsim[web]"``: viser).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from wbsim.errors import WbsimError
from wbsim.overlay import (
    COM_COLOR,
    COMMANDED,
    MARKER_RADIUS,
    MODE_COLORS,
    POLYGON_COLOR,
    SIMULATED_ON_WHITE,
    VIOLATION,
    OverlayData,
)

__all__ = ["Player", "WebViewer"]

#: MuJoCo's geom groups drawn by default (``mjvOption.geomgroup``): groups 0, 1, 2.
VISIBLE_GROUPS = 3


def _rgb(rgba: np.ndarray) -> tuple[int, int, int]:
    r, g, b = (round(255 * float(c)) for c in rgba[:3])
    return r, g, b


def _geom_mesh(model: mujoco.MjModel, g: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(vertices (k, 3), faces (f, 3))`` of geom ``g`` in its own frame, m; ``None`` for a type
    not drawn (planes, height fields, lines)."""
    import trimesh

    kind, size = model.geom_type[g], model.geom_size[g]
    geom = mujoco.mjtGeom
    if kind == geom.mjGEOM_MESH:
        mid = model.geom_dataid[g]
        v0, nv = model.mesh_vertadr[mid], model.mesh_vertnum[mid]
        f0, nf = model.mesh_faceadr[mid], model.mesh_facenum[mid]
        return model.mesh_vert[v0 : v0 + nv].copy(), model.mesh_face[f0 : f0 + nf].copy()
    if kind == geom.mjGEOM_SPHERE:
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=size[0])
    elif kind == geom.mjGEOM_ELLIPSOID:
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
        mesh.apply_scale(size)
    elif kind == geom.mjGEOM_CAPSULE:
        mesh = trimesh.creation.capsule(height=2 * size[1], radius=size[0])
    elif kind == geom.mjGEOM_CYLINDER:
        mesh = trimesh.creation.cylinder(radius=size[0], height=2 * size[1])
    elif kind == geom.mjGEOM_BOX:
        mesh = trimesh.creation.box(extents=2 * size)
    else:
        return None
    return np.asarray(mesh.vertices), np.asarray(mesh.faces)


@dataclass
class Player:
    """The replay controls on the page: a time slider and a play button.

    Attributes:
        times: ``(k,)`` the time of each frame, s.
    """

    times: np.ndarray
    _slider: Any  # viser's slider handle
    _play: Any  # viser's checkbox handle

    @property
    def index(self) -> int:
        """The frame the slider is on."""
        return int(
            np.searchsorted(self.times, float(self._slider.value) - 1e-9).clip(
                0, len(self.times) - 1
            )
        )

    @index.setter
    def index(self, k: int) -> None:
        self._slider.value = float(self.times[int(k)])

    @property
    def playing(self) -> bool:
        return bool(self._play.value)


class WebViewer:
    """A page served over HTTP that shows a robot, the overlay and a status line.

    Args:
        host: the interface to bind (default the loopback: this machine only).
        port: the TCP port.
        realtime: :meth:`show` paces the calls to simulated time (a live run).

    Raises:
        WbsimError: viser is not installed; the port cannot be bound (in use, or a privileged
            port); both before anything is served.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 8080, realtime: bool = True):
        try:
            import viser
        except ImportError:
            raise WbsimError(
                "the web viewer needs viser: pip install 'wbsim[web]' (or pip install viser)"
            ) from None
        if not (isinstance(port, int) and 0 < port < 65536):
            raise WbsimError(f"web port must be an integer in 1-65535, got {port!r}")
        import socket

        try:  # viser would pick another port silently: a taken port is an error here
            with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
                # as viser's server binds: a port left in TIME_WAIT by a viewer just stopped
                # after a browser's visit is free; one that something listens on is not
                if os.name == "posix":  # (on Windows the option lets a port be taken over)
                    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind((host, port))
        except OSError as exc:
            raise WbsimError(
                f"web viewer: cannot listen on {host}:{port} ({exc.strerror or exc})"
                "; pick another --web-port"
            ) from None
        self.host, self.port, self.realtime = host, port, realtime
        self.server = viser.ViserServer(host=host, port=port, verbose=False)
        self.server.gui.configure_theme(control_width="large")
        self._status = self.server.gui.add_markdown("waiting for the first frame")
        self._show_robot: Any = self.server.gui.add_checkbox("Robot", initial_value=True)
        self._show_robot.on_update(lambda _: self._set_robot_visible(self._show_robot.value))
        self.server.scene.add_grid(
            "/floor",
            width=20.0,
            height=20.0,
            cell_size=0.5,
            section_size=1.0,
            position=(0.0, 0.0, -0.001),
        )
        self._bodies: dict[int, Any] = {}  # body id -> viser frame handle
        self._model: mujoco.MjModel | None = None
        self._wall0: float | None = None
        self._sim0 = 0.0

    @property
    def url(self) -> str:
        """The page's address."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def load(self, robot) -> None:
        """Put ``robot``'s visible geoms on the page (a frame per body, its geoms as meshes in it;
        the world's own geoms, the floor, are left to the page's grid)."""
        model = robot.mj_model
        scene = self.server.scene
        for handle in self._bodies.values():
            handle.remove()
        self._bodies = {}
        for g in range(model.ngeom):
            b = int(model.geom_bodyid[g])
            if b == 0 or model.geom_group[g] >= VISIBLE_GROUPS or model.geom_rgba[g][3] == 0:
                continue
            mesh = _geom_mesh(model, g)
            if mesh is None:
                continue
            if b not in self._bodies:
                self._bodies[b] = scene.add_frame(f"/robot/body{b}", show_axes=False)
            rgba = (
                model.mat_rgba[model.geom_matid[g]]
                if model.geom_matid[g] >= 0
                else (model.geom_rgba[g])
            )
            scene.add_mesh_simple(
                f"/robot/body{b}/geom{g}",
                mesh[0],
                mesh[1],
                color=_rgb(rgba),
                position=model.geom_pos[g],
                wxyz=model.geom_quat[g],
                flat_shading=False,
            )
        self._model = model
        self._wall0 = None

    def _set_robot_visible(self, visible: bool) -> None:
        for handle in self._bodies.values():
            handle.visible = visible

    @property
    def robot_visible(self) -> bool:
        """Whether the robot's geoms are drawn (the page's "Robot" checkbox)."""
        return bool(self._show_robot.value)

    @robot_visible.setter
    def robot_visible(self, visible: bool) -> None:
        self._show_robot.value = bool(visible)
        self._set_robot_visible(bool(visible))

    def show(self, data: mujoco.MjData, overlay: OverlayData, t: float | None = None) -> None:
        """Draw the state in ``data`` (its kinematics current: body poses ``xpos``, ``xquat``)
        with ``overlay``; with ``realtime``, first sleep until wall time has caught up with the
        simulated time ``t`` (s) since the first call.

        Raises:
            WbsimError: no robot loaded (:meth:`load`).
        """
        if self._model is None:
            raise WbsimError("web viewer: load(robot) before show()")
        if self.realtime and t is not None:
            if self._wall0 is None:
                self._wall0, self._sim0 = time.perf_counter(), t
            ahead = (t - self._sim0) - (time.perf_counter() - self._wall0)
            if ahead > 0:
                time.sleep(ahead)
        scene = self.server.scene
        with self.server.atomic():
            for b, handle in self._bodies.items():
                handle.position = data.xpos[b]
                handle.wxyz = data.xquat[b]
            self._overlay(scene, overlay)
            self._status.content = f"`{overlay.text}`"

    def _overlay(self, scene, ov: OverlayData) -> None:
        """The overlay's markers, arrows, CoM and support polygon (replacing the last ones)."""
        points = np.asarray(ov.points, dtype=float)
        modes = np.asarray(ov.modes, dtype=int) % 3
        colors = np.where(np.asarray(ov.violating)[:, None], VIOLATION[:3], MODE_COLORS[modes, :3])
        import trimesh

        ball = trimesh.creation.icosphere(subdivisions=2, radius=MARKER_RADIUS)
        scene.add_batched_meshes_simple(
            "/overlay/points",
            np.asarray(ball.vertices),
            np.asarray(ball.faces),
            np.tile([1.0, 0.0, 0.0, 0.0], (len(points), 1)),
            points,
            batched_colors=(255 * colors).astype(np.uint8),
            lod="off",
        )
        segments: list[list[np.ndarray]] = []
        seg_colors: list[np.ndarray] = []
        arrows: list[tuple[np.ndarray, Any, np.ndarray, float]] = [
            (p, f, COMMANDED if not bad else VIOLATION, MARKER_RADIUS)
            for p, f, bad in zip(points, ov.f_cmd, ov.violating)
        ]
        arrows += [
            (p, f, SIMULATED_ON_WHITE if not bad else VIOLATION, MARKER_RADIUS)
            for p, f, bad in zip(points, ov.f_sim, ov.violating)
        ]
        arrows += [(np.asarray(p), np.asarray(f), COMMANDED, 0.0) for p, f in ov.cmd_wrench_arrows]
        for p, f, color, offset in arrows:
            f = np.asarray(f, dtype=float)
            norm = float(np.linalg.norm(f))
            if norm > 1e-3:
                u = f / norm
                start = p + offset * u
                segments.append([start, start + min(ov.force_scale * norm, ov.max_arrow) * u])
                seg_colors.append(color[:3])
        if segments:
            scene.add_arrows(
                "/overlay/forces",
                np.asarray(segments, dtype=np.float32),
                (255 * np.asarray(seg_colors)).astype(np.uint8),
                shaft_radius=0.006,
                head_radius=0.014,
                head_length=0.04,
            )
        else:
            scene.add_arrows("/overlay/forces", np.zeros((0, 2, 3), np.float32), (255, 255, 255))
        com = np.asarray(ov.com, dtype=float)
        ground = np.array([com[0], com[1], 0.002])
        scene.add_icosphere("/overlay/com", radius=0.03, color=_rgb(COM_COLOR), position=com)
        scene.add_icosphere(
            "/overlay/com_ground", radius=0.015, color=_rgb(COM_COLOR), position=ground
        )
        poly = np.asarray(ov.support, dtype=float)
        edges: list[list[Any]] = [[com, ground]]
        edges += [
            [[*poly[k], 0.002], [*poly[(k + 1) % len(poly)], 0.002]] for k in range(len(poly))
        ]
        line_colors = [COM_COLOR[:3]] + [POLYGON_COLOR[:3]] * (len(edges) - 1)
        rgb = (255 * np.repeat(np.asarray(line_colors)[:, None], 2, axis=1)).astype(np.uint8)
        scene.add_line_segments(
            "/overlay/lines",
            np.asarray(edges, dtype=np.float32),
            rgb,
            thickness=3.0,
            thickness_units="screen",
        )

    def look_at(self, target: Sequence[float], distance: float = 3.0) -> None:
        """Point the page's initial camera at ``target`` (world, m) from ``distance`` m, from
        the front-left and above, as the video's camera."""
        at = np.asarray(target, dtype=float)
        az, el = np.radians(135.0), np.radians(15.0)
        offset = distance * np.array(
            [-np.cos(el) * np.cos(az), -np.cos(el) * np.sin(az), np.sin(el)]
        )
        self.server.initial_camera.look_at = at
        self.server.initial_camera.position = at + offset
        self.server.initial_camera.up = (0.0, 0.0, 1.0)

    def add_player(self, times: np.ndarray) -> Player:
        """A time slider over ``times`` (s) and a play button (:class:`Player`)."""
        times = np.asarray(times, dtype=float)
        step = float(np.min(np.diff(times))) if len(times) > 1 else 0.01
        slider = self.server.gui.add_slider(
            "time (s)",
            min=float(times[0]),
            max=float(max(times[-1], times[0] + step)),
            step=step,
            initial_value=float(times[0]),
        )
        play = self.server.gui.add_checkbox("Play", initial_value=True)
        return Player(times, slider, play)

    def close(self) -> None:
        """Stop serving."""
        self.server.stop()
