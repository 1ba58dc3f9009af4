"""Off-screen frames and H.264 video.

Owns: MuJoCo's off-screen :class:`mujoco.Renderer` (created lazily, on the first frame asked for), the
camera that follows the robot, the hook through which overlays add geometry to a frame, and the
MP4 writer. It never steps the simulation.

Headless: ``import wbsim`` sets ``MUJOCO_GL=egl`` when there is no display (see ``wbsim._headless``).

Speed: MuJoCo renders off-screen with Mesa's software rasteriser here (no GPU). Shadows cost about
two thirds of a frame and multisampling most of the rest, so video frames are drawn without either by
default (``shadows=False``; the scene sets ``offsamples=0``): about 0.05 s per 640x480 frame instead
of 0.2-0.35 s, which makes a 10 s video at 30 fps cost ~15 s instead of ~100 s.

Files: fragmented MP4 (``-movflags frag_keyframe+empty_moov``) with a keyframe every second, so
whatever was written before a full disk, a file-size limit or a killed process plays (up to its
last whole second); a file cut short otherwise has no index and plays nothing.

Frame sizes: H.264 in ``yuv420p`` needs even width and height. :class:`VideoWriter` pads an odd
dimension by one pixel (the last row or column repeated), so a 641x481 request gives a 642x482 video;
:class:`FrameRenderer` itself returns exactly ``(height, width, 3)`` ``uint8`` frames.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Self

import mujoco
import numpy as np

from wbsim._signals import signals_deferred
from wbsim.errors import WbsimError, check_output_file

__all__ = ["FrameRenderer", "VideoWriter", "check_video_path", "even_frame", "track_distance"]

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

    def __init__(
        self,
        model: mujoco.MjModel,
        width: int = 640,
        height: int = 480,
        camera: str = "track",
        track_body: int = 1,
        distance: float | None = None,
        azimuth: float = 135.0,
        elevation: float = -15.0,
        shadows: bool = False,
    ):
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
            from wbsim._headless import check_gl_backend, describe_gl_backend

            check_gl_backend()  # a MUJOCO_GL that MuJoCo could not import with
            try:
                with signals_deferred():  # (see render)
                    self._renderer = mujoco.Renderer(self.model, self.height, self.width)
            except Exception as exc:  # GL context failures come as several types
                raise WbsimError(
                    f"cannot create an off-screen OpenGL context ({exc}); "
                    f"{describe_gl_backend()}; headless machines need MUJOCO_GL=egl (unset it and "
                    "wbsim sets it when there is no display) and Mesa's EGL "
                    "(apt-get install libegl1 libgl1-mesa-dri)"
                ) from exc
        return self._renderer

    def render(self, data: mujoco.MjData, overlay: Overlay | None = None) -> np.ndarray:
        """An RGB frame ``(height, width, 3)`` ``uint8`` of ``data`` (kinematics must be current).

        A Ctrl-C or SIGTERM waits for the frame: raised inside one of PyOpenGL's ctypes calls
        (``eglMakeCurrent``) it came out as ``ctypes.ArgumentError: argument 1:
        KeyboardInterrupt``, which no interrupt handler recognises."""
        with signals_deferred():
            return self._render(data, overlay)

    def _render(self, data: mujoco.MjData, overlay: Overlay | None) -> np.ndarray:
        r = self.renderer
        if self.camera_name == "track":
            base = data.xpos[self.track_body]
            if self._auto_distance:
                self.camera.distance = track_distance(base[2])
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
        with contextlib.suppress(Exception):
            self.close()


def track_distance(base_height: float) -> float:
    """The ``"track"`` camera's distance, m, that frames a whole robot whose base is
    ``base_height`` m above the floor: about 3.3 times that, within [1.5, 4] m. Without an explicit
    ``distance``, :class:`FrameRenderer` takes it from the base in its first frame."""
    return float(np.clip(3.3 * base_height, 1.5, 4.0))


def even_frame(frame: np.ndarray) -> np.ndarray:
    """Pad a ``(h, w, 3)`` frame to even ``h`` and ``w`` by repeating the last row / column."""
    h, w = frame.shape[:2]
    if h % 2 == 0 and w % 2 == 0:
        return frame
    return np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")


def check_video_path(path: str | Path, overwrite: bool = False) -> Path:
    """``path`` as a ``Path`` if a video may be written there: an ``.mp4`` path (H.264; any case of
    the suffix) that does not exist yet, or an existing file with ``overwrite``, in a folder that
    exists and can be written into, or that can be created. :func:`wbsim.rollout.run_episode` calls
    it before anything is built, next to :func:`wbsim.episode_log.check_run_dir`, so that a recorded
    video is never replaced silently and a video that cannot be written stops the run before it
    starts.

    The location is checked by :func:`wbsim.errors.check_output_file` (a temporary file probes the
    folder, or its nearest existing ancestor when the folder is still to be created; permission
    bits alone do not tell: root may write anywhere but in ``/proc``, a read-only mount, ...).
    Nothing is left behind; the folders themselves are created by :class:`VideoWriter`. A full
    disk is not detected here (an empty file still fits): :class:`VideoWriter` reports it.

    Raises:
        WbsimError: the suffix is not ``.mp4`` (a ``.gif`` or ``.avi`` would quietly get another
            format); ``path`` is a folder; ``path`` exists and ``overwrite`` is false; an ancestor
            of ``path`` is a file; the folder cannot be written into, or cannot be created there;
            the existing file is not writable. Each is one line naming ``path``.
    """
    p = Path(path)
    if p.suffix.lower() != ".mp4":
        raise WbsimError(
            f"video {p}: expected an .mp4 path (H.264 video), got "
            f"{repr(p.suffix) if p.suffix else 'no suffix'}"
        )
    if p.is_dir():
        raise WbsimError(f"video {p}: is a folder; expected an .mp4 file path")
    if p.exists() and not overwrite:
        raise WbsimError(
            f"video {p} exists; pick another path, or overwrite it (--overwrite on "
            "the command line, overwrite=True in Python)"
        )
    check_output_file(p, "video")
    return p


#: errno values a failed ffmpeg may report for its output file (see :func:`_describe_exit`)
_FILE_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EFBIG,
        errno.EDQUOT,
        errno.EACCES,
        errno.EROFS,
        errno.ENOENT,
        errno.EIO,
        errno.ENOTDIR,
        errno.EISDIR,
    }
)


def _describe_exit(returncode: int | None) -> str:
    """ffmpeg's exit status in words: a signal (e.g. ``SIGXFSZ`` from ``ulimit -f``), or the errno
    behind ffmpeg's ``AVERROR(errno)`` exit code (``-errno & 0xff``: 228 is ``ENOSPC``, "No space
    left on device"), decoded only for the errnos of a failed file write; "" when it exited 0 or is
    unknown."""
    if not returncode:
        return ""
    if returncode < 0:
        sig = -returncode
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        text = signal.strsignal(sig) or name
        hint = " (ulimit -f)" if name == "SIGXFSZ" else ""
        return f"ffmpeg was killed by {name}: {text}{hint}"
    code = 256 - returncode
    if code in _FILE_ERRNOS:
        return f"{os.strerror(code)} (ffmpeg exit status {returncode})"
    return f"ffmpeg exit status {returncode}"


def _file_system_hint(path: Path) -> str:
    """What the file system says about writing more to ``path``: a full disk, or the file at the
    process's file size limit (``RLIMIT_FSIZE``, ``ulimit -f``); "" when neither."""
    if not path.parent.is_dir():
        return f"folder {path.parent} no longer exists"
    hints = []
    try:
        if shutil.disk_usage(path.parent).free == 0:
            hints.append(f"{os.strerror(errno.ENOSPC)} ({path.parent} has 0 bytes free)")
    except OSError:
        pass
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY and path.exists() and path.stat().st_size >= limit:
            hints.append(f"the file reached the file size limit of {limit} bytes (ulimit -f)")
    except (ImportError, OSError, ValueError):
        pass
    return "; ".join(hints)


def _ffmpeg_process(writer=None, exc: BaseException | None = None) -> subprocess.Popen | None:
    """The ffmpeg process behind an imageio v2 ffmpeg writer, or ``None``.

    Neither imageio nor imageio-ffmpeg exposes it: imageio-ffmpeg (0.8) keeps it in the local ``p``
    of its ``write_frames`` generator (imageio's ``Writer._write_gen``). Between frames the
    generator waits at a ``yield`` and its frame holds ``p``; when a write failed (``exc``), the
    generator has finished and the frame is reached through the exception's traceback. Only the
    exit status is read, to name the cause of a failure; :meth:`VideoWriter.close` detects a broken
    file without it (it opens the file).
    """
    frames = []
    gen_frame = getattr(getattr(writer, "_write_gen", None), "gi_frame", None)
    if gen_frame is not None:
        frames.append(gen_frame)
    tb = exc.__traceback__ if exc is not None else None
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in frames:
        proc = frame.f_locals.get("p")
        if isinstance(proc, subprocess.Popen):
            return proc
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class VideoWriter:
    """H.264 MP4 writer (imageio + imageio-ffmpeg), usable as a context manager.

    Frames are ``(h, w, 3)`` ``uint8``; odd sizes are padded (see the module docstring). The file is
    complete and playable once :meth:`close` has returned without an error; the context manager
    closes it after an exception or Ctrl-C too.

    Failures are one-line :class:`~wbsim.errors.WbsimError` naming the file and the cause (a full
    disk, ``ulimit -f``, a folder that went away, ...): from the constructor when the writer cannot
    start, from :meth:`append` when ffmpeg has stopped (the frame cannot be handed over), from
    :meth:`close` when ffmpeg failed while finishing the file or the file does not open with every
    frame. ffmpeg is always stopped and waited for first (no process is left behind); after a failed
    :meth:`append`, :meth:`close` does nothing (the error was raised once).

    Args:
        path: output ``.mp4`` path (folders are created; an existing file is replaced: see
            :func:`check_video_path` for the check before a run).
        fps: frames per second.
        quality: imageio's quality, 0-10.

    Raises:
        WbsimError: ``path`` fails :func:`check_video_path` (with ``overwrite=True``: not ``.mp4``,
            a folder, a folder that cannot be written or created); its folder cannot be created;
            the ffmpeg writer cannot be set up (e.g. no ffmpeg binary).
    """

    def __init__(self, path: str | Path, fps: float = 30.0, quality: float = 7.0):
        self.path = check_video_path(path, overwrite=True)
        self.fps = fps
        self.n_frames = 0
        self._writer = None
        self._proc: subprocess.Popen | None = None
        self._error = ""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WbsimError(
                f"video {self.path}: cannot create folder {self.path.parent} "
                f"({exc.strerror or _first_line(exc)})"
            ) from None
        try:
            import imageio.v2 as imageio
            import imageio_ffmpeg

            imageio_ffmpeg.get_ffmpeg_exe()  # no binary: fail here, not at the first frame
            self._writer = imageio.get_writer(
                str(self.path),
                fps=fps,
                codec="libx264",
                quality=quality,
                macro_block_size=1,
                pixelformat="yuv420p",
                ffmpeg_log_level="error",
                # fragments from each keyframe, one a second: a cut file plays (module docstring)
                output_params=[
                    "-movflags",
                    "+frag_keyframe+empty_moov+default_base_moof",
                    "-g",
                    str(max(1, round(fps))),
                ],
            )
        except Exception as exc:
            raise WbsimError(
                f"video {self.path}: cannot start the ffmpeg writer ({_first_line(exc)})"
            ) from exc

    @property
    def error(self) -> str:
        """The one-line error of a failed :meth:`append` or :meth:`close` (the file is then
        incomplete); ``""`` while the video is fine."""
        return self._error

    def append(self, frame: np.ndarray) -> None:
        """Add one frame ``(h, w, 3)`` ``uint8`` (every frame of a video has the same size).

        Raises:
            WbsimError: a frame of another shape or type; the writer is closed; ffmpeg has stopped
                (the file is incomplete; ffmpeg has been waited for, :meth:`close` does nothing).
        """
        frame = np.asarray(frame)
        if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
            raise WbsimError(f"frames must be (h, w, 3) uint8, got {frame.shape} {frame.dtype}")
        if self._writer is None:
            raise WbsimError(
                f"video {self.path}: the writer is closed"
                + (f" after an error: {self._error}" if self._error else "")
            )
        try:
            with signals_deferred():  # the frame and its count, before an interrupt raises
                self._writer.append_data(even_frame(frame))
                if self._proc is None:
                    self._proc = _ffmpeg_process(self._writer)
                self.n_frames += 1
        except OSError as exc:  # imageio-ffmpeg: "[Errno 32] Broken pipe" + the ffmpeg command
            self._stop(exc)
            raise self._failure(
                f"ffmpeg stopped after {self.n_frames} frame(s); writing frame "
                f"{self.n_frames + 1} failed ({_first_line(exc)})"
            ) from exc

    def close(self) -> None:
        """Finish the file: stop ffmpeg, wait for it, then open the file and count its frames
        (``imageio_ffmpeg.count_frames_and_secs``). Does nothing when already closed, after a failed
        :meth:`append`, or without frames (ffmpeg never started and there is no file).

        Raises:
            WbsimError: ffmpeg failed while finishing the file (its exit status), or the file does
                not open or holds fewer frames than were appended: the message names the file and
                the cause (e.g. "No space left on device", "SIGXFSZ ... (ulimit -f)").
        """
        writer, self._writer = self._writer, None
        if writer is None:
            return
        try:
            with signals_deferred():
                writer.close()
        except Exception as exc:
            raise self._failure(f"closing ffmpeg failed ({_first_line(exc)})") from exc
        if self.n_frames == 0:
            return
        status = _describe_exit(self._proc.poll() if self._proc is not None else None)
        if status:
            raise self._failure("ffmpeg failed")
        import imageio_ffmpeg

        try:
            n, _ = imageio_ffmpeg.count_frames_and_secs(str(self.path))
        except (RuntimeError, OSError) as exc:
            raise self._failure("the written file cannot be opened") from exc
        if n != self.n_frames:
            raise self._failure(f"the file holds {n} of the {self.n_frames} frames written")

    def _cause(self) -> str:
        status = _describe_exit(self._proc.poll() if self._proc is not None else None)
        return status or _file_system_hint(self.path) or "see ffmpeg's messages above"

    def _failure(self, what: str) -> WbsimError:
        """The one-line error for ``what`` went wrong, with the cause and how much of the file
        still plays (its whole fragments); remembered for append."""
        self._error = f"video {self.path}: {what}: {self._cause()}; the file is incomplete"
        playable = self._playable()
        if playable:
            self._error += f" (its first {playable[0]} frames, {playable[1]:.1f} s, play)"
        return WbsimError(self._error)

    def _playable(self) -> tuple[int, float] | None:
        """``(frames, seconds)`` of the file that decode (``imageio_ffmpeg``), or ``None``."""
        import imageio_ffmpeg

        try:
            n, secs = imageio_ffmpeg.count_frames_and_secs(str(self.path))
        except Exception:  # noqa: BLE001  no file, or nothing in it decodes
            return None
        return (int(n), float(secs)) if n > 0 else None

    def _stop(self, exc: BaseException) -> None:
        """After a failed write: stop ffmpeg (imageio-ffmpeg closes its input and waits for it; a
        second error while closing is not reported over the first)."""
        writer, self._writer = self._writer, None
        if self._proc is None:
            self._proc = _ffmpeg_process(writer, exc)
        with contextlib.suppress(Exception):
            if writer is not None:  # always: append calls this with its writer
                writer.close()
        if self._proc is not None and self._proc.poll() is None:  # not with imageio-ffmpeg 0.8
            self._proc.kill()
            self._proc.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is None:
            self.close()
            return
        try:  # keep the exception in flight; a failure to finish the file becomes a note on it
            self.close()
        except WbsimError as err:
            exc.add_note(str(err))
