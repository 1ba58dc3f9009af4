"""MuJoCo's passive viewer, with the same overlay as the video, paced to real time.

``wbsim run --viewer`` and ``render_mode="human"`` use it. It needs a display: without one,
:class:`Viewer` raises :class:`~wbsim.errors.WbsimError` with the way to run headless (or under
``xvfb-run``).
"""

from __future__ import annotations

import os
import threading
import time

import mujoco

from wbsim.errors import WbsimError
from wbsim.overlay import OverlayData, draw_geoms

__all__ = ["NO_DISPLAY_MESSAGE", "Viewer"]

#: longest wait, s, for the viewer's render thread to finish in :meth:`Viewer.close`
CLOSE_TIMEOUT_S = 10.0

NO_DISPLAY_MESSAGE = (
    "the viewer needs a display, and there is none (DISPLAY is not set). Run headless instead "
    "(wbsim run without --viewer, --video out.mp4 to record; in Python render_mode='rgb_array' or "
    "None), or give it a virtual display: apt-get install -y xvfb && xvfb-run -a wbsim run "
    "--viewer ... (or xvfb-run -a python your_script.py)"
)


class Viewer:
    """A passive viewer on ``(model, data)`` with an overlay, synced in real time.

    Raises:
        WbsimError: no display, or the viewer cannot start (the message says how to run headless).
    """

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, realtime: bool = True):
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            raise WbsimError(NO_DISPLAY_MESSAGE)
        if os.environ.get("MUJOCO_GL", "glfw") not in ("glfw", ""):
            raise WbsimError(
                f"the viewer needs MUJOCO_GL=glfw (it is {os.environ['MUJOCO_GL']!r});"
                " unset MUJOCO_GL when a display is present"
            )
        import mujoco.viewer

        before = set(threading.enumerate())
        try:
            self.handle = mujoco.viewer.launch_passive(
                model, data, show_left_ui=False, show_right_ui=False
            )
        except Exception as exc:
            raise WbsimError(f"cannot open MuJoCo's viewer ({exc}). {NO_DISPLAY_MESSAGE}") from exc
        # the render thread launch_passive started (it does not hand it out): close() joins it
        self._threads = [t for t in threading.enumerate() if t not in before]
        self.model, self.data, self.realtime = model, data, realtime
        self._wall0 = time.perf_counter()
        self._sim0 = data.time
        self._last_time = data.time  # simulated time of the last sync: a reset goes back
        self.frames = 0

    @property
    def is_running(self) -> bool:
        return self.handle.is_running()

    def sync(self, overlay: OverlayData | None = None) -> None:
        """Draw the current state (and overlay), then sleep to keep simulated time = wall time;
        after a reset (simulated time went back) the pace restarts from the new episode's start."""
        with self.handle.lock():
            scn = self.handle.user_scn
            scn.ngeom = 0
            if overlay is not None:
                # the status line rides on the CoM marker's label: Handle.set_texts blocks until the
                # render thread draws, and deadlocked under Xvfb in our tests (MuJoCo 4.0)
                draw_geoms(scn, overlay, label=overlay.text.replace("\n", "  "))
        self.handle.sync()
        self.frames += 1
        if self.realtime:
            if self.data.time < self._last_time:  # a reset: pace the new episode from here
                self._sim0, self._wall0 = self.data.time, time.perf_counter()
            self._last_time = self.data.time
            ahead = (self.data.time - self._sim0) - (time.perf_counter() - self._wall0)
            if ahead > 0:
                time.sleep(ahead)

    def close(self) -> None:
        if getattr(self, "handle", None) is not None:
            self.handle.close()
            self.handle = None
            # wait until the render thread has torn down its GLFW window: a process that exits
            # while it still runs segfaults (google-deepmind/mujoco#790; a fixed 0.3 s pause here
            # was not always enough on a loaded machine)
            for thread in self._threads:
                thread.join(timeout=CLOSE_TIMEOUT_S)
