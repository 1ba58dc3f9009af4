"""The one loop that wires env, controller, diagnostics, episode log and video together.

:func:`run_episode` is what ``wbsim run`` calls (and later ``wbsim baseline`` and ``wbsim bench``);
nothing else wires these pieces. It holds no physics and no control law.
"""

from __future__ import annotations

import math
import platform
import signal
import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

import wbsim
from wbsim.errors import WbsimError
from wbsim.controllers import make_controller
from wbsim.envs import make as make_env

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
        seconds: simulated time, s (the env is built with ``max_seconds=seconds``, so its time
            limit never cuts the episode short).
        video: MP4 path, or ``None`` for no video.
        log: episode folder, or ``None`` for no log.
        seed: reset seed.
        fps: video frames per second.
        width, height: video frame size, pixels.
        controller_options: keyword options of the controller.
        env_options: keyword options of the env.
        progress: show a progress bar on stderr.
        viewer: show MuJoCo's passive viewer (real time, with the overlay) instead of rendering
            off-screen; needs a display.
        tolerances: overrides of :class:`wbsim.diagnostics.Tolerances`.
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
    viewer: bool = False
    tolerances: Mapping[str, float] = field(default_factory=dict)


class _Accumulators:
    """Running episode metrics of :func:`run_episode` (plain floats, cheap to update per step)."""

    __slots__ = ("steps", "ret", "tilt", "qerr", "drift", "drop", "momentum", "com_err_sq",
                 "com_err_n", "swing_max", "hold_min")

    def __init__(self) -> None:
        self.steps, self.ret, self.com_err_n = 0, 0.0, 0
        self.tilt = self.qerr = self.drift = self.drop = self.momentum = self.com_err_sq = 0.0
        self.swing_max, self.hold_min = -math.inf, math.inf


def _columns(robot) -> tuple[list[str], dict[str, str]]:
    cols = ["t", "base_x", "base_y", "base_z", "base_qw", "base_qx", "base_qy", "base_qz",
            "base_tilt_deg", "com_x", "com_y", "com_z", "com_ref_x", "com_ref_y", "com_ref_z",
            "phase_index", "controller_time_s", "feasible", "assumed_left_foot",
            "assumed_right_foot", "sensed_left_foot", "sensed_right_foot", "sole_min_z_left_foot",
            "sole_min_z_right_foot", "momentum_residual", "reward"]
    units = {c: "m" for c in cols if c.startswith(("base_x", "base_y", "base_z", "com_", "sole_"))}
    units.update(t="s", base_tilt_deg="deg", controller_time_s="s",
                 momentum_residual="|dh/dt - external wrench - weight| / (m g), 1")
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
    for p in robot.contact_point_names:
        cols.append(f"gap/{p}")
        units[f"gap/{p}"] = "m"
    for p in robot.contact_point_names:
        cols.append(f"mode/{p}")
        units[f"mode/{p}"] = "0 open, 1 sticking, 2 sliding"
    return cols, units


def run_episode(cfg: EpisodeConfig) -> dict[str, Any]:
    """Run one episode; write the video and the log if asked; return the summary.

    Each step: the controller computes a :class:`~wbsim.controllers.base.Command` from the env's
    ``info`` (state, schedule); the env steps; the env's contact sensing and the command go through
    :class:`wbsim.diagnostics.EventDetector` and :class:`wbsim.diagnostics.MomentumBalance`; a row goes
    to the log; frames (with the overlay) go to the video at ``cfg.fps`` or to the viewer at 60 Hz.

    The summary (also ``summary.json``) holds :data:`SUMMARY_KEYS` and more: ``steps``,
    ``wall_seconds``, ``realtime_factor``, ``base_height_drop_m``, ``stopped_reason``, ``return``,
    ``diagnostics`` (worst magnitudes and first times per event kind), ``momentum_residual_max``
    (relative to m g), and, where the schedule has a CoM target, ``com_tracking_rms_m`` and
    ``swing_clearance_max_m`` (highest lowest-sole-point of a foot planned off the floor) with
    ``swing_clearance_min_hold_m`` (lowest during a ``hold`` phase).

    A controller that returns a non-finite torque stops the episode at that step: the event
    ``invalid_command`` is logged with the step, the log and the video are closed, and the summary
    says ``status: "stopped"``. Ctrl-C and exceptions close the log and video too (status
    ``"interrupted"`` / ``"error"``) and re-raise.

    Raises:
        UnknownNameError: unknown env or controller (the message lists the known ones).
        WbsimError: ``viewer`` without a display (the message says how to run headless).
    """
    from wbsim.controllers import controller_class
    from wbsim.diagnostics import EVENT_KINDS, EventDetector, MomentumBalance
    from wbsim.envs import ENV_IDS
    from wbsim.errors import UnknownNameError

    if cfg.env not in ENV_IDS:  # unknown names fail before anything is built
        raise UnknownNameError("env", cfg.env, ENV_IDS)
    if dict(cfg.env_options).get("info_mode", "full") != "full":
        raise WbsimError("run_episode reads the env's full info (state, schedule, contacts): "
                         f"env option info_mode must be 'full', got "
                         f"{cfg.env_options['info_mode']!r} ('lean' is for vector envs)")
    controller_class(cfg.controller)
    if cfg.viewer:
        import os

        from wbsim.viewer import NO_DISPLAY_MESSAGE

        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            raise WbsimError(NO_DISPLAY_MESSAGE)
    render_mode = "human" if cfg.viewer else ("rgb_array" if cfg.video else None)
    env = make_env(cfg.env, **{"max_seconds": cfg.seconds, "render_mode": render_mode,
                               "width": cfg.width, "height": cfg.height, **dict(cfg.env_options)})
    uenv = env.unwrapped
    robot = uenv.robot
    controller = make_controller(cfg.controller, robot, **dict(cfg.controller_options))
    detector = EventDetector(dict(cfg.tolerances), dt=uenv.dt)
    momentum = MomentumBalance(robot)

    log = video = bar = None
    own_counts: Counter[str] = Counter()
    own_events: list[dict[str, Any]] = []
    summary: dict[str, Any] = {
        "robot": robot.name, "env": cfg.env, "controller": cfg.controller, "seconds": 0.0,
        "fell": False, "base_drift_m": 0.0, "max_base_tilt_deg": 0.0, "max_joint_error_rad": 0.0,
        "base_height_drop_m": 0.0, "events": {}, "status": "running", "stopped_reason": "",
        "steps": 0, "seed": cfg.seed, "return": 0.0, "momentum_residual_max": 0.0,
    }
    cols, units = _columns(robot)
    n_j, n_p = robot.n_joints, len(robot.contact_point_names)
    point_index = {p: i for i, p in enumerate(robot.contact_point_names)}
    foot_points = {f: np.array([point_index[p] for p in robot.foot(f).point_names])
                   for f in ("left_foot", "right_foot")}
    f_cmd = np.zeros((n_p, 3))
    violating_until = np.full(n_p, -1.0)
    acc = _Accumulators()

    def own_event(kind: str, step: int, t: float, where: str = "", magnitude: float = float("nan"),
                  **detail: Any) -> None:
        own_counts[kind] += 1
        own_events.append({"kind": kind, "t": t, "step": step, "where": where,
                           "magnitude": magnitude, "detail": detail})
        if log is not None:
            log.add_event(own_events[-1])

    wall0 = time.perf_counter()
    try:
        if cfg.log:
            from wbsim.episode_log import EpisodeLog

            config = {"env": cfg.env, "controller": cfg.controller, "seconds": cfg.seconds,
                      "seed": cfg.seed, "controller_options": dict(cfg.controller_options),
                      "env_options": dict(cfg.env_options), "video": str(cfg.video or ""),
                      "robot": robot.name, "timestep": robot.mj_model.opt.timestep,
                      "tolerances": detector.tolerances.to_dict(),
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
        frame_period = 1.0 / (60.0 if cfg.viewer else cfg.fps)
        next_frame = 0.0
        if cfg.progress and sys.stderr.isatty():
            from tqdm import tqdm

            bar = tqdm(total=n_steps, unit="step", desc=f"{cfg.env} {cfg.controller}",
                       mininterval=0.5, leave=False)
        # per-step bookkeeping on Python floats and preallocated arrays (the loop's own cost is
        # measured by ``wbsim bench``); written into ``summary`` in ``finally``
        qadr = np.asarray(robot.converter.mj_qadr)
        feet_names = tuple(foot_points)
        idx_all = np.concatenate([foot_points[f] for f in feet_names])
        contiguous = bool(np.array_equal(idx_all, np.arange(n_p))) and len(
            {len(foot_points[f]) for f in feet_names}) == 1
        bx, by, bz = (float(x) for x in base0)
        lr = ("left_foot", "right_foot")
        loop0 = time.perf_counter()
        for step in range(n_steps):
            d = uenv.data
            t = float(d.time)
            schedule = info["schedule"]
            if render_mode is not None and t + 1e-9 >= next_frame:
                uenv.overlay_violating = violating_until >= t
                counts = detector.counts()
                uenv.overlay_status = (
                    f"t {t:5.2f} s   planned {'+'.join(sorted(schedule.contact_set)) or 'none'}   "
                    f"sensed {'+'.join(sorted(info['sensed_contacts'])) or 'none'}   "
                    f"switches {counts['mode_switch']}   violations {detector.n_violations}")
                frame = env.render()
                if video is not None:
                    video.append(frame)
                elif not uenv._viewer.is_running:
                    summary["stopped_reason"] = "viewer closed"
                    break
                next_frame += frame_period
            c0 = time.perf_counter()
            cmd = controller.compute(state, schedule)
            c_time = time.perf_counter() - c0
            if not np.isfinite(cmd.tau).all():
                bad = [robot.joint_names[i] for i in np.flatnonzero(~np.isfinite(cmd.tau))]
                own_event("invalid_command", step, t, where=",".join(bad), status="non-finite torque")
                summary["status"], summary["stopped_reason"] = (
                    "stopped", f"controller returned a non-finite torque at step {step} "
                               f"(t = {t:.3f} s) on {', '.join(bad[:5])}")
                break
            uenv.overlay_command = cmd
            q, v = state.q, state.v
            obs, reward, terminated, truncated, info = env.step(uenv.torque_to_action(cmd.tau))
            state = info["state"]
            acc.ret += float(reward)

            sensing = info["contacts"]
            contact_set = schedule.contact_set
            for event in detector.update(sensing, cmd, t, step, assumed_contacts=contact_set):
                if log is not None:
                    log.add_event(event.to_dict())
                if event.kind != "mode_switch":
                    hit = [point_index[w] for w in event.where.split(",") if w in point_index]
                    hit += [i for w in event.where.split(",") if w in foot_points
                            for i in foot_points[w]]
                    violating_until[hit] = t + 0.25  # drawn red for a quarter second
            residual = momentum.relative(momentum.residual_from_data(d, q, v, sensing))
            if residual > acc.momentum:
                acc.momentum = residual

            qpos = d.qpos
            bx1, by1, bz1, qw, qx, qy, qz = qpos[0:7].tolist()
            # angle between the base z axis and the vertical: R[2, 2] of the (normalised) quaternion
            zz = 1.0 - 2.0 * (qx * qx + qy * qy) / (qw * qw + qx * qx + qy * qy + qz * qz)
            tilt = math.degrees(math.acos(max(-1.0, min(1.0, zz))))
            qerr = qpos[qadr]
            qerr -= q_ref
            qerr_max = float(np.abs(qerr).max())
            if tilt > acc.tilt:
                acc.tilt = tilt
            if qerr_max > acc.qerr:
                acc.qerr = qerr_max
            drift = math.sqrt((bx1 - bx) ** 2 + (by1 - by) ** 2 + (bz1 - bz) ** 2)
            if drift > acc.drift:
                acc.drift = drift
            if bz - bz1 > acc.drop:
                acc.drop = bz - bz1
            com = d.subtree_com[1]
            com_ref = schedule.targets.get("com")
            if com_ref is not None:
                e = com - com_ref
                acc.com_err_sq += float(e @ e)
                acc.com_err_n += 1
            sole_z = sensing.position_world[:, 2]
            if contiguous:
                mins = sole_z.reshape(len(feet_names), -1).min(axis=1).tolist()
            else:
                mins = [float(sole_z[foot_points[f]].min()) for f in feet_names]
            sole_min = dict(zip(feet_names, mins))
            for foot, z in zip(feet_names, mins):
                if foot not in contact_set:
                    if z > acc.swing_max:
                        acc.swing_max = z
                    if schedule.phase == "hold" and z < acc.hold_min:
                        acc.hold_min = z
            if log is not None:
                f_cmd[:] = 0.0
                for name, f in cmd.contact_forces.items():
                    i = point_index.get(name)
                    if i is not None:
                        f_cmd[i] = f[:3]
                row = log.row_buffer()
                row[0] = t
                row[1:8] = qpos[0:7]
                row[8] = tilt
                row[9:12] = com
                row[12:15] = com_ref if com_ref is not None else np.nan
                row[15], row[16], row[17] = schedule.phase_index, c_time, float(cmd.feasible)
                cset, sensed = cmd.contact_set, sensing.feet_in_contact
                row[18] = lr[0] in cset
                row[19] = lr[1] in cset
                row[20] = lr[0] in sensed
                row[21] = lr[1] in sensed
                row[22] = sole_min["left_foot"]
                row[23] = sole_min["right_foot"]
                row[24], row[25] = residual, reward
                k = 26
                row[k:k + n_j] = qerr
                row[k + n_j:k + 2 * n_j] = uenv.tau
                k += 2 * n_j
                row[k:k + 3 * n_p] = f_cmd.ravel()
                row[k + 3 * n_p:k + 6 * n_p] = sensing.force_world.ravel()
                k += 6 * n_p
                row[k:k + n_p] = sensing.gap
                row[k + n_p:k + 2 * n_p] = sensing.mode
                log.commit_row()
            acc.steps = step + 1
            if bar is not None:
                bar.update(1)
            if terminated:
                summary["fell"] = True
                own_event("fall", step, float(d.time), where=",".join(info["non_sole_contacts"]),
                          magnitude=float(d.qpos[2]))
                summary["stopped_reason"] = f"fell at t = {d.time:.3f} s"
                break
        summary["loop_wall_seconds"] = time.perf_counter() - loop0
        if video is not None and acc.steps and summary["status"] == "running":
            video.append(env.render())
        if summary["status"] == "running":
            summary["status"] = "fell" if summary["fell"] else "completed"
    except KeyboardInterrupt:
        summary["status"], summary["stopped_reason"] = "interrupted", "KeyboardInterrupt"
        raise
    except BaseException as exc:
        summary["status"], summary["stopped_reason"] = "error", f"{type(exc).__name__}: {exc}"
        raise
    finally:
        wall = time.perf_counter() - wall0
        summary.update(steps=acc.steps, max_base_tilt_deg=acc.tilt, max_joint_error_rad=acc.qerr,
                       base_drift_m=acc.drift, base_height_drop_m=acc.drop,
                       momentum_residual_max=acc.momentum)
        summary["return"] = acc.ret
        detector.finish()
        counts = {k: 0 for k in EVENT_KINDS}
        counts.update(detector.counts())
        counts.update(own_counts)
        summary["seconds"] = round(float(uenv.data.time), 9)
        summary["events"] = counts
        summary["diagnostics"] = {k: v for k, v in detector.summary().items() if k != "counts"}
        if acc.com_err_n:
            summary["com_tracking_rms_m"] = float(np.sqrt(acc.com_err_sq / acc.com_err_n))
        if np.isfinite(acc.swing_max):
            summary["swing_clearance_max_m"] = acc.swing_max
        if np.isfinite(acc.hold_min):
            summary["swing_clearance_min_hold_m"] = acc.hold_min
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
                # the final form of every event (worst magnitude, duration), replacing the
                # start-of-event lines written as they happened
                log.rewrite_events([e.to_dict() for e in detector.events] + own_events)
            finally:
                log.write_summary(summary)
        env.close()
    return summary


def _install_sigint_as_keyboard_interrupt() -> None:
    """Make ``kill -INT`` and ``kill -TERM`` (e.g. from ``timeout``) raise KeyboardInterrupt, so
    :func:`run_episode`'s ``finally`` closes the log and the video and writes the summary."""
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def _term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _term)


