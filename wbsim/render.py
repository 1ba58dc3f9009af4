"""Off-screen frames and H.264 video.

Owns: MuJoCo's off-screen :class:`mujoco.Renderer` (created lazily, on the first frame asked for), the
camera that follows the robot, the hook through which overlays add geometry to a frame, and the
MP4 writer. It never steps the simulation.

Headless: ``import wbsim`` sets ``MUJOCO_GL=egl`` when there is no display (see ``wbsim._headless``).

Speed: MuJoCo renders off-screen with Mesa's software rasteriser here (no GPU). Shadows cost about
two thirds of a frame and multisampling most of the rest, so video frames are drawn without either by
default (``shadows=False``; the scene sets ``offsamples=0``): about 0.05 s per 640x480 frame instead
of 0.2-0.35 s, which makes a 10 s video at 30 fps cost ~15 s instead of ~100 s.

Frame sizes: H.264 in ``yuv420p`` needs even width and height. :class:`VideoWriter` pads an odd
dimension by one pixel (the last row or column repeated), so a 641x481 request gives a 642x482 video;
:class:`FrameRenderer` itself returns exactly ``(height, width, 3)`` ``uint8`` frames.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np

from wbsim.errors import WbsimError

__all__ = ["FrameRenderer", "VideoWriter", "check_video_path", "even_frame"]

#: An overlay adds geometry to a scene before it is rendered: ``overlay(scene, data)``.
Overlay = Callable[[mujoco.MjvScene, mujoco.MjData], None]


class FrameRenderer:
    """Renders RGB frames of a model, following the robot's base with a free camera.

    Args:
        model: the MuJoCo model.
        width, height: frame size in pixels (at most the model's off-screen buffer, 1920x1080 in the
            wbsim scene).
        camera: ``"track"`` (default: a camera that follows body ``track_body`` at ``distance``,
            ``azimuth``, ``elevation``) or the name of a camera of the model (``"front"``, ``"side"``).
        track_body: body id followed by the ``"track"`` camera (default 1, the robot's root).
        shadows: draw shadows (about 3x slower in software rendering; see the module docstring).
    """

    def __init__(self, model: mujoco.MjModel, width: int = 640, height: int = 480,
                 camera: str = "track", track_body: int = 1, distance: float | None = None,
                 azimuth: float = 135.0, elevation: float = -15.0, shadows: bool = False):
        if width <= 0 or height <= 0:
            raise WbsimError(f"frame size must be positive, got {width}x{height}")
        if width > model.vis.global_.offwidth or height > model.vis.global_.offheight:
            raise WbsimError(
                f"frame {width}x{height} exceeds the model's off-screen buffer "
                f"{model.vis.global_.offwidth}x{model.vis.global_.offheight}"
            )
        if camera != "track" and mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera) < 0:
            cams = ["track"] + [model.camera(i).name for i in range(model.ncam)]
            raise WbsimError(f"unknown camera {camera!r}; known cameras: {', '.join(cams)}")
        self.model, self.width, self.height = model, width, height
        self.camera_name = camera
        self._renderer: mujoco.Renderer | None = None
        self.camera = mujoco.MjvCamera()
        self.camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        self.camera.distance = distance if distance is not None else 2.0
        self.camera.azimuth, self.camera.elevation = azimuth, elevation
        self.track_body = track_body
        self._auto_distance = distance is None
        self.option = mujoco.MjvOption()
        self.shadows = shadows

    @property
    def renderer(self) -> mujoco.Renderer:
        """The MuJoCo renderer, created on first use (so envs that never render never open GL)."""
        if self._renderer is None:
            try:
                self._renderer = mujoco.Renderer(self.model, self.height, self.width)
            except Exception as exc:  # GL context failures come as several types
                raise WbsimError(
                    f"cannot create an off-screen OpenGL context ({exc}); headless machines need "
                    "MUJOCO_GL=egl (set by wbsim when there is no display) and Mesa's EGL "
                    "(apt-get install libegl1 libgl1-mesa-dri)"
                ) from exc
        return self._renderer

    def render(self, data: mujoco.MjData, overlay: Overlay | None = None) -> np.ndarray:
        """An RGB frame ``(height, width, 3)`` ``uint8`` of ``data`` (kinematics must be current)."""
        r = self.renderer
        if self.camera_name == "track":
            base = data.xpos[self.track_body]
            if self._auto_distance:  # frame the whole robot: about 3.3x the base height
                self.camera.distance = float(np.clip(3.3 * base[2], 1.5, 4.0))
                self._auto_distance = False
            self.camera.lookat[:] = [base[0], base[1], 0.6 * base[2]]
            r.update_scene(data, self.camera, self.option)
        else:
            r.update_scene(data, self.camera_name, self.option)
        r.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = self.shadows
        if overlay is not None:
            overlay(r.scene, data)
        return r.render()

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def even_frame(frame: np.ndarray) -> np.ndarray:
    """Pad a ``(h, w, 3)`` frame to even ``h`` and ``w`` by repeating the last row / column."""
    h, w = frame.shape[:2]
    if h % 2 == 0 and w % 2 == 0:
        return frame
    return np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")


def check_video_path(path: str | Path, overwrite: bool = False) -> Path:
    """``path`` as a ``Path`` if a video may be written there: an ``.mp4`` path (H.264; any case of
    the suffix) that does not exist yet, or an existing file with ``overwrite`` (nothing is touched
    here). :func:`wbsim.rollout.run_episode` calls it before anything is built, next to
    :func:`wbsim.episode_log.check_run_dir`, so that a recorded video is never replaced silently.

    Raises:
        WbsimError: the suffix is not ``.mp4`` (a ``.gif`` or ``.avi`` would quietly get another
            format); ``path`` is a folder; ``path`` exists and ``overwrite`` is false.
    """
    p = Path(path)
    if p.suffix.lower() != ".mp4":
        raise WbsimError(f"video {p}: expected an .mp4 path (H.264 video), got "
                         f"{repr(p.suffix) if p.suffix else 'no suffix'}")
    if p.is_dir():
        raise WbsimError(f"video {p}: is a folder; expected an .mp4 file path")
    if p.exists() and not overwrite:
        raise WbsimError(f"video {p} exists; pick another path, or overwrite it (overwrite=True; "
                         "wbsim run --overwrite)")
    return p


class VideoWriter:
    """H.264 MP4 writer (imageio + imageio-ffmpeg), usable as a context manager.

    Frames are ``(h, w, 3)`` ``uint8``; odd sizes are padded (see the module docstring). The file is
    complete and playable once :meth:`close` has run, which the context manager guarantees after an
    exception or Ctrl-C.

    Args:
        path: output ``.mp4`` path (folders are created; an existing file is replaced: see
            :func:`check_video_path` for the check before a run).
        fps: frames per second.
        quality: imageio's quality, 0-10.

    Raises:
        WbsimError: ``path`` does not end in ``.mp4``, or is a folder.
    """

    def __init__(self, path: str | Path, fps: float = 30.0, quality: float = 7.0):
        import imageio.v2 as imageio

        self.path = check_video_path(path, overwrite=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fps = fps
        self.n_frames = 0
        self._writer = imageio.get_writer(
            str(self.path), fps=fps, codec="libx264", quality=quality, macro_block_size=1,
            pixelformat="yuv420p", ffmpeg_log_level="error",
        )

    def append(self, frame: np.ndarray) -> None:
        frame = np.asarray(frame)
        if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
            raise WbsimError(f"frames must be (h, w, 3) uint8, got {frame.shape} {frame.dtype}")
        self._writer.append_data(even_frame(frame))
        self.n_frames += 1

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
