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
from wbsim.controllers import make_controller
from wbsim.errors import joint_list, nonfinite_joints
from wbsim.conventions import base_tilt
from wbsim.errors import WbsimError
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
        video: ``.mp4`` path, or ``None`` for no video (an existing file needs ``overwrite``).
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
        overwrite: allow a ``log`` folder that already holds files (a previous run's are replaced)
            and an existing ``video`` file (replaced); otherwise either is an error
            (:func:`wbsim.episode_log.check_run_dir`, :func:`wbsim.render.check_video_path`).
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
    overwrite: bool = False


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
            "sole_min_z_right_foot", "momentum_residual", "reward", "push_x", "push_y", "push_z"]
    units = {c: "m" for c in cols if c.startswith(("base_x", "base_y", "base_z", "com_", "sole_"))}
    units.update(t="s", base_tilt_deg="deg", controller_time_s="s", push_x="N", push_y="N",
                 push_z="N",
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
    # a foot commanded as a wrench (wrench contact model): its points' f_cmd are NaN, the wrench here
    for foot in ("left_foot", "right_foot"):
        for ax in ("fx", "fy", "fz", "tx", "ty", "tz"):
            cols.append(f"w_cmd/{foot}/{ax}")
            units[f"w_cmd/{foot}/{ax}"] = ("N, N.m (commanded wrench on the robot at the foot frame "
                                           "origin, world-aligned; NaN unless so commanded)")
    return cols, units


def _direct_step(env):
    """The unwrapped env's ``step`` once every wrapper around it passes ``step`` through unchanged
    (Gymnasium's ``OrderEnforcing`` after a reset, ``PassiveEnvChecker`` after its checks of the
    first two steps), else ``None`` (keep calling ``env.step``)."""
    from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

    e = env
    while e is not e.unwrapped:
        if type(e) is OrderEnforcing:
            if not e.has_reset:
                return None
        elif type(e) is PassiveEnvChecker:
            if not (e.checked_step and e.checked_data_reuse):
                return None
        else:
            return None
        e = e.env
    return e.step


def _action_buffer(uenv, n_joints: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(effort, buffer)`` to map torques to actions in one call, ``np.divide(tau, effort,
    out=buffer)``: what :meth:`wbsim.envs.humanoid.HumanoidEnv.torque_to_action` computes (``tau /
    effort`` as float32, bit for bit; ``tests/test_rollout.py`` compares the two) into a reused
    float32 buffer (``step`` copies its action). ``(None, None)`` for an env without that method
    (then ``torque_to_action`` is called)."""
    from wbsim.envs.humanoid import HumanoidEnv

    effort = getattr(uenv, "effort", None)
    space = getattr(uenv, "action_space", None)
    if (type(uenv).torque_to_action is HumanoidEnv.torque_to_action
            and isinstance(effort, np.ndarray) and effort.dtype == np.float64
            and effort.shape == (n_joints,) and space is not None
            and space.shape == (n_joints,) and space.dtype == np.float32):
        return effort, np.empty(n_joints, dtype=np.float32)
    return None, None


def _step_chunk(sensing, cmd, t: float, step: int, schedule_set: frozenset[str],
                foot_names: tuple[str, ...]):
    """One loop step as a one-step :class:`wbsim.types.StepChunk` for the event detector (NaN
    where nothing is commanded; the assumed feet are the command's contact set, or the schedule's
    ``schedule_set`` when the command states neither a contact set nor a force)."""
    from wbsim.types import StepChunk

    n, m = len(sensing.names), len(foot_names)
    stated = cmd.contact_set or cmd.point_forces is not None or cmd.foot_wrenches is not None
    assumed = cmd.contact_set if stated else schedule_set
    forces = np.full((n, 3), math.nan) if cmd.point_forces is None else cmd.point_forces
    wrenches = np.full((m, 6), math.nan) if cmd.foot_wrenches is None else cmd.foot_wrenches
    return StepChunk(
        step=np.array([step]), t=np.array([t]), point_names=sensing.names,
        point_foot=sensing.point_foot, foot_names=foot_names,
        floor_normal=sensing.floor_normal_world, gap=sensing.gap[None],
        force=sensing.force_world[None], normal_force=sensing.normal_force[None],
        tangential_force=sensing.tangential_force[None],
        slip_velocity=sensing.slip_velocity[None], friction=sensing.friction[None],
        mode=sensing.mode[None],
        sensed_feet=np.array([[f in sensing.feet_in_contact for f in foot_names]]),
        non_sole=[(0, name, float(f)) for name, f in sensing.non_sole_contacts.items()],
        point_forces=np.asarray(forces, dtype=float)[None],
        foot_wrenches=np.asarray(wrenches, dtype=float)[None],
        assumed=np.array([[f in assumed for f in foot_names]]),
        status=np.array([int(cmd.status)], dtype=np.int8), fallback=(str(cmd.fallback),),
        message=(cmd.message,))


def run_episode(cfg: EpisodeConfig) -> dict[str, Any]:
    """Run one episode; write the video and the log if asked; return the summary.

    Each step: the controller computes a :class:`~wbsim.controllers.base.Command` from the env's
    ``info`` (state, schedule); the env steps; the env's contact sensing and the command go through
    :class:`wbsim.diagnostics.EventDetector` and :class:`wbsim.momentum.MomentumBalance`; a row goes
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
        WbsimError: ``viewer`` without a display (the message says how to run headless); a ``log``
            folder that is not empty, or an existing ``video`` file, without ``overwrite``; a
            ``video`` path that does not end in ``.mp4``. All are checked before anything is built.
    """
    from wbsim.controllers import controller_class
    from wbsim.diagnostics import EVENT_KINDS, Event, EventDetector
    from wbsim.momentum import MomentumBalance
    from wbsim.envs import ENV_IDS
    from wbsim.errors import UnknownNameError

    if cfg.env not in ENV_IDS:  # unknown names fail before anything is built
        raise UnknownNameError("env", cfg.env, ENV_IDS)
    _check_env_options(dict(cfg.env_options))
    check_seed(cfg.seed)
    if not (isinstance(cfg.seconds, (int, float)) and math.isfinite(cfg.seconds)
            and cfg.seconds > 0):
        raise WbsimError(f"seconds must be a positive number, got {cfg.seconds!r}")
    if cfg.viewer and cfg.video:
        raise WbsimError("the viewer and a video cannot be combined: the viewer shows the run "
                         "live; record the video in a headless run (without --viewer)")
    controller_class(cfg.controller)
    if cfg.log:  # before anything is built: a logged run is never replaced silently
        from wbsim.episode_log import check_run_dir

        check_run_dir(cfg.log, cfg.overwrite)
    if cfg.video:  # the same for the video: never replaced silently, and an .mp4 path
        from wbsim.render import check_video_path

        check_video_path(cfg.video, cfg.overwrite)
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
    if int(round(cfg.seconds / uenv.dt)) < 1:
        env.close()
        raise WbsimError(f"seconds = {cfg.seconds:g} is shorter than one env step "
                         f"({uenv.dt:g} s): nothing would run")
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
    # NaN where the controller commands no point forces (or no wrenches)
    nan_points = np.full(3 * n_p, math.nan)
    no_wrench = np.full(12, math.nan)
    violating_until = np.full(n_p, -1.0)
    # joint errors go to a block of rows, folded into the per-joint maximum of |error| every
    # len(qerr_block) steps and at the end (fmax: a NaN entry is ignored)
    qerr_block = np.empty((256, n_j))
    qerr_max = np.zeros(n_j)
    n_qerr = 0
    acc = _Accumulators()

    def own_event(kind: str, step: int, t: float, where: str = "", magnitude: float = float("nan"),
                  **detail: Any) -> None:
        own_counts[kind] += 1  # an event of one step, with every field of the detector's
        own_events.append(Event(kind, t, step, where, magnitude, detail, duration=uenv.dt,
                                n_steps=1, end_t=t, end_step=step, ongoing=False).to_dict())
        if log is not None:
            log.add_event(own_events[-1])

    wall0 = time.perf_counter()
    pending: BaseException | None = None  # the exception in flight, for the finally clause
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
            log = EpisodeLog(cfg.log, cols, units, config, overwrite=cfg.overwrite)
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
        # the joints' qpos entries: a slice when they are one run in joint order (a view, no copy)
        qsl = (slice(int(qadr[0]), int(qadr[0]) + n_j)
               if n_j and np.array_equal(qadr, np.arange(qadr[0], qadr[0] + n_j)) else None)
        lr = ("left_foot", "right_foot")  # the order of the sole_min_z columns
        foot_l, foot_r = (foot_points[f].tolist() for f in lr)
        # a foot's points in one run of indices: its lowest point is min over a slice
        sl_l, sl_r = (slice(ix[0], ix[-1] + 1) if ix == list(range(ix[0], ix[-1] + 1)) else None
                      for ix in (foot_l, foot_r))
        bx, by, bz = (float(x) for x in base0)
        nan3 = [math.nan] * 3
        pin_qidx, pin_vidx = robot.converter.pin_qidx, robot.converter.pin_vidx
        d_views = None  # MjData views, built once (MjData's buffers do not move)
        action_fast, action = _action_buffer(uenv, n_j)
        # the env's own step once the wrappers only pass it through (tried for the first steps)
        env_step, direct_tries = env.step, 3
        loop0 = time.perf_counter()
        for step in range(n_steps):
            d = uenv.data
            if d is not d_views:
                d_views, qpos_v, com_v, xfrc_v = d, d.qpos, d.subtree_com, d.xfrc_applied
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
            tau = np.asarray(cmd.torque_at(state.q[pin_qidx], state.v[pin_vidx]), dtype=float)
            bad = nonfinite_joints(tau, robot.joint_names)
            if bad:
                own_event("invalid_command", step, t, where=",".join(bad), status="non-finite torque")
                summary["status"], summary["stopped_reason"] = (
                    "stopped", f"controller returned a non-finite torque at step {step} "
                               f"(t = {t:.3f} s) on {joint_list(bad)}")
                break
            uenv.overlay_command = cmd
            q, v = state.q, state.v
            obs, reward, terminated, truncated, info = env_step(
                np.divide(tau, action_fast, out=action) if action is not None
                else uenv.torque_to_action(tau))
            if direct_tries:
                direct_tries -= 1
                direct_step = _direct_step(env)
                if direct_step is not None:
                    env_step, direct_tries = direct_step, 0
            state = info["state"]
            acc.ret += float(reward)

            sensing = info["contacts"]
            contact_set = schedule.contact_set
            for event in detector.update(_step_chunk(sensing, cmd, t, step, contact_set,
                                                     robot.foot_names)):
                if log is not None:
                    log.add_event(event.to_dict())
                if event.kind != "mode_switch":
                    hit = [point_index[w] for w in event.where.split(",") if w in point_index]
                    hit += [i for w in event.where.split(",") if w in foot_points
                            for i in foot_points[w]]
                    violating_until[hit] = t + 0.25  # drawn red for a quarter second
            residual = momentum.relative_from_data(d, q, v, sensing)
            if residual > acc.momentum:
                acc.momentum = residual

            qpos7 = qpos_v[0:7].tolist()
            bx1, by1, bz1, qw, qx, qy, qz = qpos7
            tilt = math.degrees(base_tilt(qw, qx, qy, qz))  # NaN for a NaN state
            if n_qerr == len(qerr_block):
                np.fmax(qerr_max, np.fmax.reduce(np.abs(qerr_block), axis=0), out=qerr_max)
                n_qerr = 0
            qerr = qerr_block[n_qerr]
            np.subtract(qpos_v[qsl] if qsl is not None else qpos_v.take(qadr), q_ref, out=qerr)
            n_qerr += 1
            if tilt > acc.tilt:
                acc.tilt = tilt
            drift = math.sqrt((bx1 - bx) ** 2 + (by1 - by) ** 2 + (bz1 - bz) ** 2)
            if drift > acc.drift:
                acc.drift = drift
            if bz - bz1 > acc.drop:
                acc.drop = bz - bz1
            com = com_v[1]
            com_ref = schedule.targets.get("com")
            if com_ref is not None:
                e = com - com_ref
                acc.com_err_sq += float(e @ e)
                acc.com_err_n += 1
            sole_z = sensing.position_world[:, 2].tolist()
            z_l = min(sole_z[sl_l]) if sl_l is not None else min([sole_z[i] for i in foot_l])
            z_r = min(sole_z[sl_r]) if sl_r is not None else min([sole_z[i] for i in foot_r])
            if lr[0] not in contact_set or lr[1] not in contact_set:  # a foot planned off
                for foot, z in ((lr[0], z_l), (lr[1], z_r)):
                    if foot not in contact_set:
                        if z > acc.swing_max:
                            acc.swing_max = z
                        if schedule.phase == "hold" and z < acc.hold_min:
                            acc.hold_min = z
            if log is not None:
                # the row in one concatenate: the scalars, then the arrays (see _columns)
                cset, sensed = cmd.contact_set, sensing.feet_in_contact
                head = [t, *qpos7, tilt, *com.tolist(),
                        *(com_ref.tolist() if com_ref is not None else nan3),
                        schedule.phase_index, c_time, float(cmd.feasible),
                        lr[0] in cset, lr[1] in cset, lr[0] in sensed, lr[1] in sensed,
                        z_l, z_r, residual, reward, *xfrc_v[:, 0:3].sum(axis=0).tolist()]
                F, W = cmd.point_forces, cmd.foot_wrenches
                log.add_row_parts((head, qerr, uenv.tau,
                                   F.reshape(-1) if F is not None else nan_points,
                                   sensing.force_world.reshape(-1), sensing.gap, sensing.mode,
                                   W.reshape(-1) if W is not None else no_wrench))
            acc.steps = step + 1
            if bar is not None:
                bar.update(1)
            if terminated:
                summary["fell"] = True
                # t: the step's start, as every event; magnitude: the base height after it, m
                own_event("fall", step, t, where=",".join(info["non_sole_contacts"]),
                          magnitude=float(d.qpos[2]))
                summary["stopped_reason"] = f"fell at t = {d.time:.3f} s"
                break
        summary["loop_wall_seconds"] = time.perf_counter() - loop0
        if video is not None and acc.steps and summary["status"] == "running":
            video.append(env.render())
        if summary["status"] == "running":
            summary["status"] = "fell" if summary["fell"] else "completed"
    except KeyboardInterrupt as exc:
        summary["status"], summary["stopped_reason"] = "interrupted", "KeyboardInterrupt"
        pending = exc
        raise
    except BaseException as exc:
        summary["status"], summary["stopped_reason"] = "error", f"{type(exc).__name__}: {exc}"
        pending = exc
        raise
    finally:
        wall = time.perf_counter() - wall0
        if n_qerr:
            np.fmax(qerr_max, np.fmax.reduce(np.abs(qerr_block[:n_qerr]), axis=0), out=qerr_max)
        acc.qerr = float(qerr_max.max()) if n_j else 0.0
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
        summary["pushes"] = [{"t": float(t_push), "force": np.asarray(f).tolist()}
                             for t_push, f in getattr(uenv, "pushes", ())]
        summary["wall_seconds"] = wall
        summary["realtime_factor"] = summary["seconds"] / wall if wall > 0 else float("nan")
        # closing the outputs: each failure is kept, the rest still runs; the first one is
        # raised at the end (or added as a note to the exception already in flight)
        closing: list[BaseException] = []

        def failed(exc: BaseException) -> None:
            closing.append(exc)
            if summary["status"] not in ("interrupted", "error"):
                summary["status"], summary["stopped_reason"] = "error", str(exc)

        if video is not None:
            try:
                video.close()  # raises if ffmpeg failed or the file is incomplete (full disk)
            except WbsimError as exc:
                failed(exc)
            # no frame: ffmpeg never started and no file exists (e.g. Ctrl-C before the first)
            # a failed write (full disk, in append or close) leaves no usable file either
            summary["video"] = str(cfg.video) if video.n_frames and not video.error else ""
            summary["video_frames"] = video.n_frames
        if bar is not None:
            bar.close()
        if log is not None:
            summary["log"] = str(cfg.log)
            try:
                log.close()  # the last rows: a full disk shows here
                # the final form of every event (worst magnitude, duration), replacing the
                # start-of-event lines written as they happened
                log.rewrite_events([e.to_dict() for e in detector.events] + own_events)
            except (WbsimError, OSError) as exc:
                failed(exc)
            summary["logged_rows"] = log.rows_written  # whole rows in steps.f64
            try:
                log.write_summary(summary)
            except (WbsimError, OSError) as exc:
                closing.append(exc)
        try:
            env.close()
        except Exception as exc:  # noqa: BLE001  reported with the others below
            closing.append(exc)
        if closing:  # after everything that could be written is on disk
            first = pending if pending is not None else closing[0]
            for exc in closing:
                if exc is not first:
                    first.add_note(str(exc))
            if pending is None:
                raise first
    return summary


#: env options that :func:`run_episode` sets itself or that its loop cannot drive, with the reason
_RUN_OWNS = {
    "max_seconds": "the episode's length is `seconds` (--seconds)",
    "render_mode": "run_episode picks it (--video renders off-screen, --viewer shows the viewer)",
    "width": "the frame size is `width` / `height` (--width, --height)",
    "height": "the frame size is `width` / `height` (--width, --height)",
    "robot": "the env id picks the robot (e.g. wbsim/TalosStand-v0; wbsim list shows them)",
}


def check_seed(seed: Any) -> None:
    """Raise :class:`WbsimError` unless ``seed`` is an ``int`` >= 0 (what Gymnasium's ``reset``
    takes; it raises a bare error otherwise)."""
    if not (type(seed) is int and seed >= 0):
        raise WbsimError(f"seed must be an integer >= 0, got {seed!r}")


def _check_env_options(options: dict[str, Any]) -> None:
    """Refuse env options that :func:`run_episode` cannot honour, before anything is built: the
    ones it sets itself (:data:`_RUN_OWNS`), an ``action_mode`` other than ``torque`` (the
    controller's torques are the action), lean info, and a ``plan`` that is not callable.

    Raises:
        WbsimError: one line naming the option and what to use instead.
    """
    for key, why in _RUN_OWNS.items():
        if key in options:
            raise WbsimError(f"env option {key} is not for run_episode: {why}")
    mode = options.get("action_mode", "torque")
    if mode != "torque":
        raise WbsimError(f"env option action_mode={mode!r}: run_episode applies the controller's "
                         "torques, so the env must be in 'torque' mode ('joint_position' and "
                         "'residual' are for RL agents, through gymnasium.make)")
    if options.get("info_mode", "full") != "full":
        raise WbsimError("run_episode reads the env's full info (state, schedule, contacts): "
                         f"env option info_mode must be 'full', got {options['info_mode']!r} "
                         "('lean' is for vector envs)")
    if "plan" in options and not callable(options["plan"]):
        raise WbsimError(f"env option plan must be a callable returning a PhasePlan (Python API), "
                         f"got {options['plan']!r}; the env id picks the plan")


def _install_sigint_as_keyboard_interrupt() -> None:
    """Make ``kill -INT`` and ``kill -TERM`` (e.g. from ``timeout``) raise KeyboardInterrupt, so
    :func:`run_episode`'s ``finally`` closes the log and the video and writes the summary."""
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def _term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _term)


