"""What produced a run: the versions of the software that computed it and, when wbsim runs from a
git checkout, the commit. :func:`wbsim.rollout.run_episode` stores both in ``config.json``.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["git_commit", "software_versions"]


def software_versions() -> dict[str, str]:
    """``{"wbsim", "mujoco", "pinocchio", "numpy", "gymnasium", "python"}`` -> version string
    (the installed packages' own ``__version__``)."""
    import gymnasium
    import mujoco
    import numpy
    import pinocchio

    import wbsim

    return {
        "wbsim": wbsim.__version__,
        "mujoco": mujoco.__version__,
        "pinocchio": pinocchio.__version__,
        "numpy": numpy.__version__,
        "gymnasium": gymnasium.__version__,
        "python": platform.python_version(),
    }


def git_commit(path: str | Path | None = None, timeout: float = 10.0) -> dict[str, Any] | None:
    """The git commit of the work tree holding ``path`` (default: wbsim's own source folder):
    ``{"commit": 40 hex digits, "dirty": bool}`` (``dirty``: tracked files differ from the
    commit); ``None`` when ``path`` is not in a git work tree or git is not installed.

    Read-only: git is asked not to take its optional locks, so a run never blocks a commit.
    """
    if path is None:
        import wbsim

        path = Path(wbsim.__file__).resolve().parent
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", "-C", str(path), *args],
                capture_output=True,
                text=True,
                check=False,
                timeout=timeout,
                env=env,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def scene(env) -> dict[str, Any]:
    """What rebuilds the scene of an env just reset (a :class:`wbsim.envs.humanoid.HumanoidEnv`):
    ``robot`` (its name), ``robot_config`` (:meth:`wbsim.robot_config.RobotConfig.to_dict`: description path,
    feet, sole points, poses, joint dynamics), ``joints`` (name ->
    ``effort_limit`` N·m, ``lower``/``upper`` rad, in ``robot.joint_names`` order), ``timestep``
    (s), ``frame_skip``, ``control_dt`` (s), ``reset_qpos`` (MuJoCo's ``qpos`` after the reset,
    reset noise included) and ``reset_time`` (s)."""
    robot = env.robot
    joints = {
        name: {"effort_limit": float(limit), "lower": float(lo), "upper": float(hi)}
        for name, limit, (lo, hi) in zip(robot.joint_names, robot.effort_limits, robot.joint_limits)
    }
    return {
        "robot": robot.name,
        "robot_config": robot.config.to_dict(),
        "joints": joints,
        "timestep": env.sim.timestep,
        "frame_skip": env.frame_skip,
        "control_dt": env.dt,
        "reset_qpos": env.data.qpos.tolist(),
        "reset_time": float(env.data.time),
    }
