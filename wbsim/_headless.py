"""Choose MuJoCo's OpenGL backend before MuJoCo is first imported.

MuJoCo reads ``MUJOCO_GL`` once, when ``mujoco`` is imported. Without a display (no ``DISPLAY`` and no
``WAYLAND_DISPLAY``) wbsim sets ``MUJOCO_GL=egl`` (Mesa's EGL renders off-screen with no X server) and
``PYOPENGL_PLATFORM=egl`` to match. A value the user set is never changed.
"""

from __future__ import annotations

import os
import sys


def choose_gl_backend() -> str | None:
    """Set ``MUJOCO_GL`` (and ``PYOPENGL_PLATFORM``) to ``egl`` when there is no display.

    Returns the backend in force, or ``None`` when a display is present and nothing is set. Has no
    effect (and warns nothing) if ``mujoco`` was already imported: the caller imported it first.
    """
    if "MUJOCO_GL" in os.environ:
        return os.environ["MUJOCO_GL"]
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    if "mujoco" in sys.modules:
        return None
    os.environ["MUJOCO_GL"] = "egl"
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
    return "egl"
