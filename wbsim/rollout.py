"""The one loop that wires env, controller, diagnostics, episode log and video together.

:func:`run_episode` is what ``wbsim run`` calls (and later ``wbsim baseline`` and ``wbsim bench``);
nothing else wires these pieces. It holds no physics and no control law.
"""

from __future__ import annotations

import math
import platform
import signal
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

import wbsim
from wbsim.controllers import make_controller
from wbsim.envs import make as make_env
from wbsim.errors import WbsimError

__all__ = ["EpisodeConfig", "run_episode", "SUMMARY_KEYS"]

#: Keys every ``summary.json`` holds (scripts read these names).
SUMMARY_KEYS = ("robot", "env", "controller", "seconds", "fell", "base_drift_m", "max_base_tilt_deg",
                "max_joint_error_rad", "events", "status")


@dataclass
class EpisodeConfig:
    """What :func:`run_episode` runs.

    Attributes:
        env: a registered env id (``wbsim/G1Stand-v0``).
        controller: a registered controller name (``gravity_qp``, ``pd``, ...).
        seconds: simulated time, s (at most the env's time limit is not enforced: the env is built
            with ``max_seconds=seconds``).
        video: MP4 path, or ``None`` for no video.
        log: episode folder, or ``None`` for no log.
        seed: reset seed.
        fps: video frames per second.
        width, height: video frame size, pixels.
        controller_options: keyword options of the controller.
        env_options: keyword options of the env.
        progress: show a progress bar on stderr.
    """

    env: str = "wbsim/G1Stand-v0"
    controller: str = "gravity_qp"
    seconds: float = 10.0
    video: str | Path | None = None
    log: str | Path | None = None
    seed: int = 0
    fps: float = 30.0
    width: int = 640
    height: int = 480
    controller_options: Mapping[str, Any] = field(default_factory=dict)
    env_options: Mapping[str, Any] = field(default_factory=dict)
    progress: bool = True


def _tilt_deg(quat_wxyz: np.ndarray) -> float:
    """Angle between the base z axis and the world vertical, degrees."""
    w, x, y, _ = quat_wxyz / np.linalg.norm(quat_wxyz)
    zz = 1.0 - 2.0 * (x * x + y * y)  # R[2, 2]
    return math.degrees(math.acos(max(-1.0, min(1.0, zz))))


def _columns(robot) -> tuple[list[str], dict[str, str]]:
    cols = ["t", "base_x", "base_y", "base_z", "base_qw", "base_qx", "base_qy", "base_qz",
            "base_tilt_deg", "com_x", "com_y", "com_z", "controller_time_s", "feasible",
            "assumed_left_foot", "assumed_right_foot", "sensed_left_foot", "sensed_right_foot"]
    units = {c: "m" for c in cols[1:4] + cols[9:12]}
    units.update(t="s", base_tilt_deg="deg", controller_time_s="s")
    for j in robot.joint_names:
        cols.append(f"qerr/{j}")
        units[f"qerr/{j}"] = "rad"
    for j in robot.joint_names:
        cols.append(f"tau/{j}")
        units[f"tau/{j}"] = "N.m"
    for kind in ("f_cmd", "f_sim"):
        for p in robot.contact_point_names:
            for ax in "xyz":
                cols.append(f"{kind}/{p}/{ax}")
                units[f"{kind}/{p}/{ax}"] = "N (world frame, on the robot)"
    return cols, units


def _simulated_point_forces(robot, model: mujoco.MjModel, data: mujoco.MjData,
                            geom_to_point: np.ndarray, out: np.ndarray) -> None:
    """World-frame contact force ON THE ROBOT at each sole point ``out (n_points, 3)``, N."""
    out[:] = 0.0
    f6 = np.zeros(6)
    for i in range(data.ncon):
        c = data.contact[i]
        g1, g2 = c.geom[0], c.geom[1]
        p = geom_to_point[g1] if geom_to_point[g1] >= 0 else geom_to_point[g2]
        if p < 0:
            continue
        mujoco.mj_contactForce(model, data, i, f6)
        frame = c.frame.reshape(3, 3)  # rows: normal, tangent 1, tangent 2 (world)
        f_world = frame.T @ f6[:3]  # force geom1 exerts... on geom2 along the normal (geom1 -> geom2)
        # MuJoCo's contact force acts on geom2 in the +normal direction (normal points geom1 -> geom2)
        out[p] += f_world if geom_to_point[g2] >= 0 else -f_world


def run_episode(cfg: EpisodeConfig) -> dict[str, Any]:
    """Run one episode headless; write the video and the log if asked; return the summary.

    The summary (also ``summary.json``) holds :data:`SUMMARY_KEYS` and more: ``steps``,
    ``wall_seconds``, ``realtime_factor``, ``base_height_drop_m``, ``stopped_reason``.

    A controller that returns a non-finite torque stops the episode at that step: the event
    ``invalid_command`` is logged with the step, the log and the video are closed, and the summary
    says ``status: "stopped"``. Ctrl-C and exceptions close the log and video too (status
    ``"interrupted"`` / ``"error"``) and re-raise.

    Raises:
        UnknownNameError: unknown env or controller (the message lists the known ones).
    """
    from wbsim.controllers import controller_class

    from wbsim.envs import ENV_IDS
    from wbsim.errors import UnknownNameError

    if cfg.env not in ENV_IDS:  # unknown names fail before anything is built
        raise UnknownNameError("env", cfg.env, ENV_IDS)
    controller_class(cfg.controller)
    env = make_env(cfg.env, max_seconds=cfg.seconds,
                   render_mode="rgb_array" if cfg.video else None, width=cfg.width,
                   height=cfg.height, **dict(cfg.env_options))
    uenv = env.unwrapped
    robot = uenv.robot
    controller = make_controller(cfg.controller, robot, **dict(cfg.controller_options))

    log = video = bar = None
    counts: Counter[str] = Counter()
    summary: dict[str, Any] = {
        "robot": robot.name, "env": cfg.env, "controller": cfg.controller, "seconds": 0.0,
        "fell": False, "base_drift_m": 0.0, "max_base_tilt_deg": 0.0, "max_joint_error_rad": 0.0,
        "base_height_drop_m": 0.0, "events": {}, "status": "running", "stopped_reason": "",
        "steps": 0, "seed": cfg.seed, "return": 0.0,
    }
    cols, units = _columns(robot)
    n_j, n_p = robot.n_joints, len(robot.contact_point_names)
    point_index = {p: i for i, p in enumerate(robot.contact_point_names)}
    geom_to_point = np.full(robot.mj_model.ngeom, -1, dtype=int)
    for f in robot.feet.values():
        for g, p in zip(f.mj_geom_ids, f.point_names):
            geom_to_point[g] = point_index[p]
    f_cmd, f_sim = np.zeros((n_p, 3)), np.zeros((n_p, 3))

    def event(kind: str, step: int, t: float, where: str = "", magnitude: float = float("nan"),
              **detail: Any) -> None:
        counts[kind] += 1
        if log is not None:
            log.add_event({"kind": kind, "t": t, "step": step, "where": where,
                           "magnitude": magnitude, **detail})

    wall0 = time.perf_counter()
    try:
        if cfg.log:
            from wbsim.episode_log import EpisodeLog

            config = {"env": cfg.env, "controller": cfg.controller, "seconds": cfg.seconds,
                      "seed": cfg.seed, "controller_options": dict(cfg.controller_options),
                      "env_options": dict(cfg.env_options), "video": str(cfg.video or ""),
                      "robot": robot.name, "timestep": robot.mj_model.opt.timestep,
                      "versions": {"wbsim": wbsim.__version__, "mujoco": mujoco.__version__,
                                   "python": platform.python_version()}}
            log = EpisodeLog(cfg.log, cols, units, config)
        if cfg.video:
            from wbsim.render import VideoWriter

            video = VideoWriter(cfg.video, fps=cfg.fps)
        obs, info = env.reset(seed=cfg.seed)
        state = info["state"]
        controller.reset(state)
        q_ref = state.q[robot.converter.pin_qidx].copy()
        base0 = uenv.data.qpos[0:3].copy()
        n_steps = int(round(cfg.seconds / uenv.dt))
        frame_period, next_frame = 1.0 / cfg.fps, 0.0
        if cfg.progress:
            from tqdm import tqdm

            bar = tqdm(total=n_steps, unit="step", desc=f"{cfg.env} {cfg.controller}",
                       mininterval=0.5, leave=False)
        prev_assumed: frozenset[str] | None = None
        loop0 = time.perf_counter()
        for step in range(n_steps):
            t = float(uenv.data.time)
            if video is not None and t + 1e-9 >= next_frame:
                video.append(env.render())
                next_frame += frame_period
            schedule = info["schedule"]
            c0 = time.perf_counter()
            cmd = controller.compute(state, schedule)
            c_time = time.perf_counter() - c0
            if not np.all(np.isfinite(cmd.tau)):
                bad = [robot.joint_names[i] for i in np.flatnonzero(~np.isfinite(cmd.tau))]
                event("invalid_command", step, t, where=",".join(bad), detail="non-finite torque")
                summary["status"], summary["stopped_reason"] = (
                    "stopped", f"controller returned a non-finite torque at step {step} "
                               f"(t = {t:.3f} s) on {', '.join(bad[:5])}")
                break
            if cmd.fallback:
                event("fallback", step, t, where=cmd.fallback, status=cmd.status)
            if not cmd.feasible:
                event("solver_failure", step, t, status=cmd.status)
            if prev_assumed is not None and cmd.contact_set != prev_assumed:
                event("mode_switch", step, t, source="assumed", before=prev_assumed,
                      after=cmd.contact_set)
            prev_assumed = cmd.contact_set
            obs, reward, terminated, truncated, info = env.step(uenv.torque_to_action(cmd.tau))
            state = info["state"]
            summary["return"] += float(reward)

            d = uenv.data
            qerr = d.qpos[robot.converter.mj_qadr] - q_ref
            tilt = _tilt_deg(d.qpos[3:7])
            summary["max_base_tilt_deg"] = max(summary["max_base_tilt_deg"], tilt)
            summary["max_joint_error_rad"] = max(summary["max_joint_error_rad"],
                                                 float(np.max(np.abs(qerr))))
            summary["base_drift_m"] = max(summary["base_drift_m"],
                                          float(np.linalg.norm(d.qpos[0:3] - base0)))
            summary["base_height_drop_m"] = max(summary["base_height_drop_m"],
                                                float(base0[2] - d.qpos[2]))
            if log is not None:
                f_cmd[:] = 0.0
                for name, f in cmd.contact_forces.items():
                    if name in point_index:
                        f_cmd[point_index[name]] = f[:3]
                _simulated_point_forces(robot, uenv.model, d, geom_to_point, f_sim)
                row = log.row_buffer()
                row[0] = d.time
                row[1:4], row[4:8], row[8] = d.qpos[0:3], d.qpos[3:7], tilt
                row[9:12] = d.subtree_com[1]
                row[12], row[13] = c_time, float(cmd.feasible)
                row[14:16] = [f in cmd.contact_set for f in ("left_foot", "right_foot")]
                row[16:18] = [f in info["sensed_contacts"] for f in ("left_foot", "right_foot")]
                k = 18
                row[k:k + n_j] = qerr
                row[k + n_j:k + 2 * n_j] = uenv.tau
                k += 2 * n_j
                row[k:k + 3 * n_p] = f_cmd.ravel()
                row[k + 3 * n_p:k + 6 * n_p] = f_sim.ravel()
                log.commit_row()
            summary["steps"] = step + 1
            if bar is not None:
                bar.update(1)
            if terminated:
                summary["fell"] = True
                event("fall", step, float(d.time), where=",".join(info["non_sole_contacts"]),
                      magnitude=float(d.qpos[2]))
                summary["stopped_reason"] = f"fell at t = {d.time:.3f} s"
                break
        summary["loop_wall_seconds"] = time.perf_counter() - loop0
        if video is not None and summary["steps"] and summary["status"] == "running":
            video.append(env.render())
        if summary["status"] == "running":
            summary["status"] = "completed"
    except KeyboardInterrupt:
        summary["status"], summary["stopped_reason"] = "interrupted", "KeyboardInterrupt"
        raise
    except BaseException as exc:
        summary["status"], summary["stopped_reason"] = "error", f"{type(exc).__name__}: {exc}"
        raise
    finally:
        wall = time.perf_counter() - wall0
        summary["seconds"] = float(uenv.data.time)
        summary["events"] = dict(sorted(counts.items()))
        summary["wall_seconds"] = wall
        summary["realtime_factor"] = summary["seconds"] / wall if wall > 0 else float("nan")
        if video is not None:
            video.close()
            summary["video"] = str(cfg.video)
            summary["video_frames"] = video.n_frames
        if bar is not None:
            bar.close()
        if log is not None:
            summary["log"] = str(cfg.log)
            try:
                log.close()
            finally:
                log.write_summary(summary)
        env.close()
    return summary


def _install_sigint_as_keyboard_interrupt() -> None:
    """Make ``kill -INT`` raise KeyboardInterrupt (the default handler) even under runners that
    ignore SIGINT, so :func:`run_episode`'s ``finally`` closes the files."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


