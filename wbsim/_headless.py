"""Choose MuJoCo's OpenGL backend before MuJoCo is first imported.

MuJoCo reads ``MUJOCO_GL`` once, when ``mujoco`` is imported. Without a display (no ``DISPLAY`` and no
``WAYLAND_DISPLAY``) wbsim sets ``MUJOCO_GL=egl`` (Mesa's EGL renders off-screen with no X server) and
``PYOPENGL_PLATFORM=egl`` to match. A value the user set is never changed.

A value MuJoCo cannot use (an unknown name, ``osmesa`` without the OSMesa library) makes
``import mujoco`` raise. wbsim then imports MuJoCo with its OpenGL disabled (the physics needs none),
restores the user's value, and keeps the reason: :func:`check_gl_backend` raises it as one
:class:`~wbsim.errors.WbsimError` (the ``wbsim`` command line calls it before every command, and
rendering before it opens a context).
"""

from __future__ import annotations

import os
import sys

# what choose_gl_backend found: whether wbsim set MUJOCO_GL, and why the user's value cannot work
_set_by_wbsim = False
_problem: str | None = None

# MuJoCo's accepted values on Linux (mujoco/rendering/classic/gl_context.py)
_MUJOCO_GL_OFF = ("disable", "disabled", "off", "false", "0")
_MUJOCO_GL_LINUX = ("enable", "enabled", "on", "true", "1", "glfw", "", "glx", "egl", "osmesa")


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def working_gl_values() -> list[str]:
    """The ``MUJOCO_GL`` values that can render on this machine: ``egl`` if libEGL is installed,
    ``glfw`` if there is a display, ``osmesa`` if libOSMesa is installed."""
    import ctypes.util

    values = []
    if ctypes.util.find_library("EGL"):
        values.append("egl")
    if _has_display():
        values.append("glfw")
    if ctypes.util.find_library("OSMesa"):
        values.append("osmesa")
    return values


def _gl_problem(value: str) -> str | None:
    """Why MuJoCo cannot import with ``MUJOCO_GL=value`` here, or ``None``."""
    import platform

    v = value.lower().strip()
    if v in _MUJOCO_GL_OFF or platform.system() != "Linux":
        return None  # MuJoCo checks other systems' values itself
    if v not in _MUJOCO_GL_LINUX:
        why = "is not a value MuJoCo knows"
    elif v == "osmesa":
        import ctypes.util

        if ctypes.util.find_library("OSMesa"):
            return None
        why = "needs the OSMesa library, which is not installed (apt-get install libosmesa6)"
    else:
        return None
    works = working_gl_values()
    return (
        f"environment variable MUJOCO_GL={value!r} {why}; values that work here: "
        + (", ".join(works) if works else "none (install Mesa's EGL: apt-get install libegl1)")
        + " (or unset it: wbsim picks egl when there is no display)"
    )


def choose_gl_backend() -> str | None:
    """Set ``MUJOCO_GL`` (and ``PYOPENGL_PLATFORM``) to ``egl`` when there is no display.

    Returns the backend in force, or ``None`` when a display is present and nothing is set. Has no
    effect (and warns nothing) if ``mujoco`` was already imported: the caller imported it first.
    A value MuJoCo cannot import with is kept for :func:`check_gl_backend` (see the module).
    """
    global _set_by_wbsim, _problem
    if "MUJOCO_GL" in os.environ:
        value = os.environ["MUJOCO_GL"]
        if "mujoco" not in sys.modules:
            _problem = _gl_problem(value)
            if _problem is not None:
                os.environ["MUJOCO_GL"] = "disable"
                try:
                    import mujoco  # noqa: F401  the physics, without OpenGL
                finally:
                    os.environ["MUJOCO_GL"] = value
        return value
    if _has_display():
        return None
    if "mujoco" in sys.modules:
        return None
    os.environ["MUJOCO_GL"] = "egl"
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
    _set_by_wbsim = True
    return "egl"


def check_gl_backend() -> None:
    """Raise :class:`~wbsim.errors.WbsimError` if ``MUJOCO_GL`` holds a value MuJoCo cannot use
    here (the message names the variable, its value and the values that work)."""
    if _problem is not None:
        from wbsim.errors import WbsimError

        raise WbsimError(_problem)


def describe_gl_backend() -> str:
    """How ``MUJOCO_GL`` came to be what it is, for messages about a failed OpenGL context."""
    value = os.environ.get("MUJOCO_GL")
    if value is None:
        return "MUJOCO_GL is not set (MuJoCo uses glfw, which needs a display)"
    if _set_by_wbsim and value == "egl":
        return "MUJOCO_GL=egl (set by wbsim when there is no display)"
    if not value.strip():
        return "MUJOCO_GL is set but empty (MuJoCo then uses glfw, which needs a display)"
    return f"MUJOCO_GL={value} (set in the environment)"
