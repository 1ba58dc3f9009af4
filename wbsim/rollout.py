"""The one loop: it wires an env's simulation core, a controller, the recorder, the diagnostics,
the episode log and the video together, and holds no physics and no control law.

:func:`run_episode` is what ``wbsim run``, ``wbsim baseline`` and ``wbsim bench`` call. Each control
step it computes a command, steps the simulation and records raw arrays
(:class:`~wbsim.recorder.StepRecorder`); every chunk of steps (and before each video frame, and at
the end) it hands them to the event detector, the momentum balance, the metrics and the log.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import signal
import sys
import time
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wbsim._signals import signals_deferred
from wbsim.controllers import make_controller
from wbsim.errors import WbsimError, joint_list, nonfinite_joints
from wbsim.types import Command

__all__ = ["LOW_LEVELS", "SUMMARY_KEYS", "EpisodeConfig", "run_episode"]

#: Keys every ``summary.json`` holds (scripts read these names).
SUMMARY_KEYS = (
    "robot",
    "env",
    "controller",
    "seconds",
    "fell",
    "base_drift_m",
    "max_base_tilt_deg",
    "max_joint_error_rad",
    "events",
    "status",
)
#: What runs between two controller steps (the env's ``frame_skip`` physics steps apart):
#: ``"pd"``, the command's joint PD (:class:`wbsim.types.JointTargets`) at every physics step, its
#: feed-forward torque held; ``"hold"``, the whole torque of the control step held.
LOW_LEVELS = ("pd", "hold")
#: Control steps per chunk of the diagnostics and the log.
CHUNK = 256


@dataclass
class EpisodeConfig:
    """What :func:`run_episode` runs.

    Attributes:
        env: a registered env id (``wbsim/G1Stand-v0``).
        controller: a registered controller name (``gravity_qp``, ``pd``, ...).
        seconds: simulated time, s (the env is built with ``max_seconds=seconds``, so its time
            limit never cuts the episode short), or ``None``: the env's time limit
            (:func:`wbsim.envs.time_limit`, as ``wbsim run`` without ``--seconds``).
        video: ``.mp4`` path, or ``None`` for no video (an existing file needs ``overwrite``).
        log: episode folder, or ``None`` for no log.
        seed: reset seed.
        fps: video frames per second.
        width, height: video frame size, pixels.
        controller_options: keyword options of the controller.
        env_options: keyword options of the env (``frame_skip``: physics steps per controller
            step).
        progress: show a progress bar on stderr.
        viewer: show MuJoCo's passive viewer (real time, with the overlay) instead of rendering
            off-screen; needs a display.
        tolerances: overrides of :class:`wbsim.diagnostics.Tolerances`.
        overwrite: allow a ``log`` folder that already holds files (a previous run's are replaced)
            and an existing ``video`` file (replaced); otherwise either is an error
            (:func:`wbsim.episode_log.check_run_dir`, :func:`wbsim.render.check_video_path`).
        low_level: one of :data:`LOW_LEVELS`.
        web: a :class:`wbsim.web_viewer.WebViewer` that shows the run live (paced to real time,
            frames at ``fps``), or ``None``; it stays open after the episode (its owner closes it).
    """

    env: str = "wbsim/G1Stand-v0"
    controller: str = "gravity_qp"
    seconds: float | None = None
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
    low_level: str = "pd"
    web: Any = None


def run_episode(cfg: EpisodeConfig) -> dict[str, Any]:
    """Run one episode; write the video and the log if asked; return the summary.

    The summary (also ``summary.json``) holds :data:`SUMMARY_KEYS` and more: ``steps``,
    ``wall_seconds``, ``realtime_factor``, ``base_height_drop_m``, ``stopped_reason``, ``return``,
    ``diagnostics`` (worst magnitudes and first times per event kind), ``momentum_residual_max``
    (relative to m g), ``pushes`` (each push's start ``t`` s, ``force`` (3,) N world, scheduled
    ``duration`` s, and ``impulse`` N s: what acted before the episode ended),
    ``base_displacement_m`` (the base's last position minus its first, world, m),
    ``feet_displacement_m`` (the same for the mean of the sole points: where the feet stand,
    without the body's sway), ``gait`` when the plan has contact switches
    (:func:`wbsim.gait.gait_summary`: planned switches sensed within 20 ms, touch-downs, slips at
    impacts or elsewhere), and, where the schedule has a CoM target,
    ``com_tracking_rms_m``, ``swing_clearance_max_m`` (highest lowest-sole-point of a foot planned
    off the floor) and ``swing_clearance_min_hold_m`` (lowest during a ``hold`` phase), and for a
    replayed DCC plan ``dcc_complementarity`` (the plan's mean ``h f_n`` per point and the
    simulation's over the plan's horizon) (:class:`wbsim.metrics.EpisodeMetrics`).

    A controller that returns a non-finite torque stops the episode at that step: the event
    ``invalid_command`` is logged with the step, the log and the video are closed, and the summary
    says ``status: "stopped"``. A MuJoCo warning (:class:`wbsim.sim.SimulatorWarning`) is a
    ``simulator_warning`` event of its step; one after which MuJoCo reset the state ends the
    episode before that step is recorded, with ``status: "error"`` and a ``stopped_reason`` naming
    the step and the warning (the log holds the steps before it). Ctrl-C and exceptions close the
    log and video too (status ``"interrupted"`` / ``"error"``) and re-raise; the
    ``KeyboardInterrupt`` carries the summary of the steps run as its ``summary`` attribute, any
    other exception a note (``__notes__``, printed under its traceback) that names where it was
    raised (the controller's ``compute``, with the step and time, or its ``reset``), the env and
    seed, and what the log and the video hold; ``stopped_reason`` says the same place.

    Raises:
        UnknownNameError: unknown env or controller (the message lists the known ones).
        WbsimError: ``viewer`` without a display (the message says how to run headless); a ``log``
            folder that is not empty, or an existing ``video`` file, without ``overwrite``; a
            ``video`` path that does not end in ``.mp4``; an unknown ``low_level``. All are
            checked before anything is built.
    """
    from wbsim.controllers import controller_class
    from wbsim.diagnostics import EVENT_KINDS, Event, EventDetector
    from wbsim.envs import ENV_IDS, make_humanoid, registration, time_limit
    from wbsim.episode_log import StepTable
    from wbsim.errors import UnknownNameError
    from wbsim.metrics import EpisodeMetrics
    from wbsim.momentum import MomentumBalance
    from wbsim.recorder import StepRecorder
    from wbsim.scene import FrameClock, FrameValues, Scene, StepRows, frame_events

    if cfg.env not in ENV_IDS:  # unknown names fail before anything is built
        raise UnknownNameError("env", cfg.env, ENV_IDS)
    _check_env_options(dict(cfg.env_options))
    check_seed(cfg.seed)
    if cfg.seconds is None:
        cfg = dataclasses.replace(cfg, seconds=time_limit(cfg.env))
    if not (
        isinstance(cfg.seconds, (int, float)) and math.isfinite(cfg.seconds) and cfg.seconds > 0
    ):
        raise WbsimError(f"seconds must be a positive number, got {cfg.seconds!r}")
    if cfg.low_level not in LOW_LEVELS:
        raise UnknownNameError("low level", cfg.low_level, LOW_LEVELS)
    if cfg.viewer and cfg.video:
        raise WbsimError(
            "the viewer and a video cannot be combined: the viewer shows the run "
            "live; record the video in a headless run (without --viewer)"
        )
    if cfg.viewer and cfg.web is not None:
        raise WbsimError("MuJoCo's viewer and the web viewer cannot be combined: pick one")
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
    render_mode = "human" if cfg.viewer else None  # video frames: wbsim.scene.Scene
    drawing = bool(cfg.viewer or cfg.video or cfg.web is not None)
    env = make_humanoid(
        cfg.env,
        **{
            "max_seconds": cfg.seconds,
            "render_mode": render_mode,
            "width": cfg.width,
            "height": cfg.height,
            **dict(cfg.env_options),
        },
    )
    robot, sim = env.robot, env.sim
    n_steps = round(cfg.seconds / env.dt)
    problem = None
    if n_steps < 1:
        problem = (
            f"seconds = {cfg.seconds:g} is shorter than one control step ({env.dt:g} s): "
            "nothing would run"
        )
    elif (cfg.video or cfg.web is not None) and not (
        isinstance(cfg.fps, (int, float)) and 0 < cfg.fps <= 1.0 / env.dt
    ):
        problem = (
            f"fps = {cfg.fps!r}: a video frame can be drawn at most once a control step, "
            f"so fps must be in (0, {1.0 / env.dt:g}] (1 / the control step of "
            f"{env.dt:g} s)"
        )
    elif cfg.video:
        vis = sim.model.vis.global_
        if not (0 < cfg.width <= vis.offwidth and 0 < cfg.height <= vis.offheight):
            problem = (
                f"frame size {cfg.width}x{cfg.height}: the renderer's off-screen buffer "
                f"holds up to {vis.offwidth}x{vis.offheight} pixels"
            )
    if problem is not None:  # before any file is written
        env.close()
        raise WbsimError(problem)
    if cfg.video and (cfg.width % 2 or cfg.height % 2):  # the frames keep the size asked for
        warnings.warn(
            f"the video {cfg.video} will be {cfg.width + cfg.width % 2}x"
            f"{cfg.height + cfg.height % 2}: H.264 needs even sizes (the last column or row of "
            f"each {cfg.width}x{cfg.height} frame is repeated)",
            stacklevel=1,
        )
    end = n_steps * env.dt
    for start, _, _ in sim.pushes.script:  # not an error: the user may shorten a scripted run
        if start >= end:
            warnings.warn(
                f"the scripted push at {start:g} s falls after the run's end ({end:g} s): "
                "it will not act",
                stacklevel=1,
            )
    controller = make_controller(cfg.controller, robot, **dict(cfg.controller_options))
    detector = EventDetector(dict(cfg.tolerances), dt=env.dt)
    momentum = MomentumBalance(robot)
    table = StepTable(robot)
    step_rows = StepRows(table.columns, robot)
    recorder = StepRecorder(sim, CHUNK)
    k_physics = env.frame_skip
    hold = cfg.low_level == "hold"
    conv = robot.converter

    log = video = bar = scene = None
    metrics: EpisodeMetrics | None = None
    last_row, last_step = (
        None,
        -1,
    )  # the step table's row of the last step processed: frames draw it
    t_reached = 0.0  # simulated time of the last recorded step's end, s
    own_events: list[Event] = []  # the loop's own events: fall, invalid_command
    summary: dict[str, Any] = {
        "robot": robot.name,
        "env": cfg.env,
        "controller": cfg.controller,
        "seconds": 0.0,
        "fell": False,
        "base_drift_m": 0.0,
        "max_base_tilt_deg": 0.0,
        "max_joint_error_rad": 0.0,
        "base_height_drop_m": 0.0,
        "events": {},
        "status": "running",
        "stopped_reason": "",
        "steps": 0,
        "seed": cfg.seed,
        "return": 0.0,
        "momentum_residual_max": 0.0,
    }

    def own_event(
        kind: str,
        step: int,
        t: float,
        where: str = "",
        magnitude: float = float("nan"),
        **detail: Any,
    ) -> None:
        """An event of the loop, of one step, with every field of the detector's."""
        own_events.append(
            Event(
                kind,
                t,
                step,
                where,
                magnitude,
                detail,
                duration=env.dt,
                n_steps=1,
                end_t=t,
                end_step=step,
                ongoing=False,
            )
        )
        if log is not None:
            log.add_event(own_events[-1].to_dict())

    def process(fell: bool = False) -> None:
        """Everything derived from the steps recorded since the last call (a Ctrl-C or SIGTERM
        arriving meanwhile is raised after it: the metrics and the log count the same steps)."""
        with signals_deferred():
            _process(fell)

    def _process(fell: bool) -> None:
        nonlocal last_row, last_step
        steps = recorder.take()
        if not len(steps):
            return
        assert metrics is not None  # made before the first step is recorded
        sensing = sim.sensor.decode(steps.sensordata, steps.friction, steps.cone)
        events = detector.update(steps.step_chunk(sensing, robot))
        relative = momentum.relative(
            momentum.residuals(
                steps.qpos0, steps.qvel0, steps.qacc, sensing, steps.push, steps.push_point
            )
        )
        fell_flags = np.zeros(len(steps), dtype=bool)
        fell_flags[-1] = fell
        reward = env.reward(steps.qpos, steps.qvel, steps.tau, fell_flags, steps.t + env.dt)
        metrics.update(steps, sensing, relative, reward)
        if log is not None or drawing:
            rows = table.rows(steps, sensing, metrics, relative, reward)
            last_row, last_step = rows[-1], int(steps.step[-1])
        if log is not None:
            for event in events:
                log.add_event(event.to_dict())
            log.add_rows(rows)

    def frame_values(t: float):
        """What a frame of the current state (time ``t``, s) shows (:mod:`wbsim.scene`): the
        last step's row with the events so far, or the reset state before any step."""
        planned = env.plan.at(t).contact_set
        if last_row is None:
            return FrameValues.at_reset(robot, sim.sensing(), sim.data.qpos, t, planned)
        return step_rows.values(
            last_row,
            planned,
            *frame_events((vars(e) for e in detector.events), robot, last_step, t),
        )

    wall0 = time.perf_counter()
    pending: BaseException | None = None  # the exception in flight, for the finally clause
    raised_in = ""  # where in the loop it came from, when it came from the controller
    try:
        env.reset(seed=cfg.seed)
        if cfg.log:
            from wbsim import provenance
            from wbsim.episode_log import EpisodeLog

            config = {
                "env": cfg.env,
                "controller": cfg.controller,
                "seconds": cfg.seconds,
                "seed": cfg.seed,
                "controller_options": dict(cfg.controller_options),
                "env_options": logged_env_options(cfg.env_options),
                # absolute: a report made from another folder finds this video, not a
                # file of the same relative name there
                "video": str(Path(cfg.video).resolve()) if cfg.video else "",
                "fps": cfg.fps,
                "width": cfg.width,
                "height": cfg.height,
                "low_level": cfg.low_level,
                **provenance.scene(env),
                "env_registration": registration(cfg.env),
                "tolerances": detector.tolerances.to_dict(),
                "versions": provenance.software_versions(),
                "git": provenance.git_commit(),
            }
            log = EpisodeLog(cfg.log, table.columns, table.units, config, overwrite=cfg.overwrite)
        if cfg.video:
            from wbsim.render import VideoWriter

            video = VideoWriter(cfg.video, fps=cfg.fps)
        if cfg.video or cfg.web is not None:
            # the env's camera (-e camera_name / camera_id / default_camera_config)
            scene = Scene(
                robot, cfg.width, cfg.height, reset_qpos=sim.data.qpos, **env.camera_options
            )
        if cfg.web is not None:
            cfg.web.load(robot)
            cfg.web.look_at(sim.data.subtree_com[1])
        metrics = EpisodeMetrics(robot, sim.data.qpos, getattr(env.plan, "dcc", None))
        feet_middle0 = _feet_middle(robot, sim.data)
        state = sim.state()
        try:
            controller.reset(state)
        except Exception:
            raised_in = f"the controller's reset ({cfg.controller})"
            raise
        clock = FrameClock(1.0 / (60.0 if cfg.viewer else cfg.fps))
        if cfg.progress and sys.stderr.isatty():
            from tqdm import tqdm

            bar = tqdm(
                total=n_steps,
                unit="step",
                desc=f"{cfg.env} {cfg.controller}",
                mininterval=0.5,
                leave=False,
            )
        n_warnings, t_reached = 0, sim.time
        loop0, loop_cpu0 = time.perf_counter(), time.process_time()
        for step in range(n_steps):
            state = sim.state()
            schedule = env.plan.at(state.t)
            if drawing and clock.due(state.t):
                process()  # the overlay's status line counts the events up to this frame
                if not _frame(env, scene, video, cfg.web, frame_values(state.t)):
                    summary["stopped_reason"] = "viewer closed"
                    break
            c0 = time.perf_counter()
            try:
                cmd = controller.compute(state, schedule)
            except Exception:
                raised_in = (
                    f"the controller's compute ({cfg.controller}) at step {step} "
                    f"(t = {state.t:.3f} s)"
                )
                raise
            c_time = time.perf_counter() - c0
            invalid = _invalid_command(cmd, robot.joint_names)
            if invalid:
                what, bad = invalid
                process()
                own_event(
                    "invalid_command",
                    step,
                    state.t,
                    where=",".join(bad),
                    status=what,
                )
                summary["status"], summary["stopped_reason"] = (
                    "stopped",
                    (
                        f"controller returned a {what} at step {step} (t = {state.t:.3f} s)"
                        + (f" on {joint_list(bad)}" if bad else "")
                    ),
                )
                break
            env.overlay_command = cmd
            if hold:
                sim.step(cmd.torque_at(state.q[conv.pin_qidx], state.v[conv.pin_vidx]), k_physics)
            else:
                sim.step_command(cmd, k_physics)
            if len(sim.warnings) != n_warnings:  # MuJoCo warned: an event of its step
                for w in sim.warnings[n_warnings:]:
                    own_event(
                        "simulator_warning",
                        step,
                        state.t,
                        where=w.name,
                        magnitude=w.info,
                        reset=w.reset,
                        message=str(w),
                    )
                n_warnings = len(sim.warnings)
                if sim.failed is not None:  # MuJoCo reset the state: this step is not recorded
                    process()
                    summary["status"] = "error"
                    summary["stopped_reason"] = f"step {step}: {sim.failed}"
                    break
            recorder.record(step, state, cmd, schedule, c_time)
            t_reached = sim.time
            if bar is not None:
                bar.update(1)
            if env.has_fallen():
                summary["fell"] = True
                process(fell=True)
                # t: the step's start, as every event; magnitude: the base height after it, m;
                # t_after: the time of the state judged fallen, where the run stops (its seconds)
                own_event(
                    "fall",
                    step,
                    state.t,
                    where=",".join(sim.sensing().non_sole_contacts),
                    magnitude=float(sim.data.qpos[2]),
                    t_after=sim.time,
                )
                summary["stopped_reason"] = f"fell at t = {sim.time:.3f} s"
                break
            if recorder.full:
                process()
        process()
        summary["loop_wall_seconds"] = time.perf_counter() - loop0
        summary["loop_cpu_seconds"] = time.process_time() - loop_cpu0
        if scene is not None and metrics.steps and summary["status"] == "running":
            _frame(env, scene, video, cfg.web, frame_values(sim.time))  # the state it ended in
        if summary["status"] == "running":
            summary["status"] = "fell" if summary["fell"] else "completed"
    except KeyboardInterrupt as exc:
        summary["status"] = "interrupted"
        summary["stopped_reason"] = "SIGTERM" if str(exc) == _SIGTERM else "KeyboardInterrupt"
        exc.summary = summary  # type: ignore[attr-defined]  # completed by the close-out below
        pending = exc
        raise
    except BaseException as exc:
        summary["status"] = "error"
        summary["stopped_reason"] = f"{type(exc).__name__}: {exc}" + (
            f" (raised in {raised_in})" if raised_in else ""
        )
        pending = exc
        raise
    finally:
        # a second Ctrl-C (or SIGTERM) is held until the log and the video are closed: an
        # impatient user would otherwise cut the summary and the log's table short
        with (
            _carrying(summary),  # the KeyboardInterrupt raised, also by a held second Ctrl-C
            signals_deferred("wbsim: closing the log and the video first"),
        ):
            wall = time.perf_counter() - wall0
            try:  # what was recorded before an exception still counts
                process()
            except Exception as exc:  # noqa: BLE001  reported with the first error below
                if pending is not None:
                    pending.add_note(f"(while processing the last steps: {exc})")
            if metrics is not None:
                summary.update(metrics.summary())
            detector.finish()
            counts = dict.fromkeys(EVENT_KINDS, 0)
            counts.update(detector.counts())
            for e in own_events:
                counts[e.kind] = counts.get(e.kind, 0) + 1
            summary["seconds"] = round(t_reached, 9)
            summary["events"] = counts
            summary["diagnostics"] = {k: v for k, v in detector.summary().items() if k != "counts"}
            summary["pushes"] = [
                {
                    "t": float(t_push),
                    "force": np.asarray(f).tolist(),
                    "duration": duration,
                    "impulse": float(np.linalg.norm(f)) * min(duration, t_reached - t_push),
                }
                for t_push, f, duration in sim.pushes_done
            ]
            if metrics is not None and metrics.steps:
                summary["base_displacement_m"] = (
                    np.asarray(sim.data.qpos[0:3]) - metrics.base0
                ).tolist()
                summary["feet_displacement_m"] = (
                    _feet_middle(robot, sim.data) - feet_middle0
                ).tolist()
            # the plan's switches once the env was reset (a reset that failed, e.g. on a missing
            # plan file, built no reference: its error is the one to report, not a second one here)
            planned = (
                env.plan.switch_times(t_reached)
                if metrics is not None and hasattr(env.plan, "switch_times")
                else []
            )
            if planned:
                from wbsim.gait import gait_summary

                summary["gait"] = gait_summary(
                    planned,
                    [e.to_dict() for e in detector.events],
                    robot.foot_names,
                    t_reached,
                    slide=detector.tolerances.slide,
                )
            summary["wall_seconds"] = wall
            summary["realtime_factor"] = summary["seconds"] / wall if wall > 0 else float("nan")
            if scene is not None:
                scene.close()
            _close(summary, pending, video, bar, log, env, cfg, detector, own_events)
            if pending is not None and not isinstance(pending, KeyboardInterrupt):
                pending.add_note(_what_was_kept(summary, cfg, raised_in))
    return summary


def _what_was_kept(summary: dict[str, Any], cfg: EpisodeConfig, raised_in: str) -> str:
    """The note an exception leaving :func:`run_episode` carries: where it was raised (the
    controller's ``compute``, with the step and time, when it came from there), the episode (env,
    seed), and what is on disk (the log's rows, the video's frames), so that the traceback of a
    user's controller says that the steps before it were kept."""
    kept = []
    if "logged_rows" in summary:  # the log was opened (and is closed now)
        kept.append(
            f"the log {cfg.log} holds the {summary['logged_rows']} step(s) before it, closed and "
            "readable (summary.json: status error)"
        )
    elif cfg.log:
        kept.append(f"no log was written ({cfg.log}: raised before the episode)")
    if summary.get("video"):
        kept.append(f"the video {cfg.video} holds {summary['video_frames']} frame(s)")
    elif cfg.video:
        kept.append(f"no video was written ({cfg.video})")
    return f"wbsim: raised in {raised_in or 'the episode'} of {cfg.env}, seed {cfg.seed}; " + (
        "; ".join(kept) if kept else "nothing was logged (no log asked)"
    )


_FLOAT64 = np.dtype(np.float64)
#: MuJoCo's largest control value; ``mj_step`` zeroes every control when one reaches it
_MAXVAL = 1e10  # mujoco.mjMAXVAL (checked in tests/test_rollout.py)
_max_reduce, _min_reduce = np.maximum.reduce, np.minimum.reduce  # without ndarray.max's wrapper


def _invalid_command(cmd, joint_names) -> tuple[str, list[str]] | None:
    """What is wrong with a command the simulation cannot apply, and on which joints: not a
    :class:`~wbsim.types.Command` (no joint named), a torque or
    a joint-PD array (``q``, ``v``, ``kp``, ``kd``) that is not numbers of shape ``(n_joints,)``
    (e.g. an option given as text; no joint named), not finite, or of magnitude
    ``mujoco.mjMAXVAL`` (1e10) or more (MuJoCo would set every control to 0: ``mjWARN_BADCTRL``);
    ``None`` if nothing is."""
    n = len(joint_names)
    if not isinstance(cmd, Command):  # e.g. a bare torque array
        return f"value of type {type(cmd).__name__} instead of a wbsim.types.Command", []
    tau, jt = cmd.tau, cmd.joint_targets
    # the common case in a few calls: float arrays of the right shape whose largest and smallest
    # entries lie within +-mjMAXVAL (a NaN propagates through both reductions and compares false,
    # an infinity is out of range: both are looked at closer below)
    arrays_in = (tau,) if jt is None else (tau, jt.q, jt.v, jt.kp, jt.kd)
    for a in arrays_in:
        if type(a) is not np.ndarray or a.dtype is not _FLOAT64 or a.shape != (n,):
            break  # (looked at closer below)
    else:
        c = np.concatenate(arrays_in)
        if _max_reduce(c) < _MAXVAL and _min_reduce(c) > -_MAXVAL:
            return None
    arrays = {"torque": cmd.tau}
    if cmd.joint_targets is not None:
        jt = cmd.joint_targets
        arrays.update(
            {"joint target": jt.q, "joint target velocity": jt.v, "PD kp": jt.kp, "PD kd": jt.kd}
        )
    for what, values in arrays.items():
        try:
            a = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            return f"non-numeric {what}", []
        if a.shape != (len(joint_names),):
            return f"{what} of shape {a.shape} (expected ({len(joint_names)},))", []
        bad = nonfinite_joints(a, joint_names)
        if bad:
            return f"non-finite {what}", bad
        huge = np.flatnonzero(np.abs(a) >= _MAXVAL).tolist()
        if huge:
            return (
                f"{what} of {_MAXVAL:g} or more (MuJoCo would set every control to 0)",
                [joint_names[i] for i in huge],
            )
    return None


def _feet_middle(robot, data) -> np.ndarray:
    """``(3,)`` the mean of every sole point, world, m (where the feet stand: walking distance and
    drift without the body's sway)."""
    from wbsim.contacts import sole_points_in_world

    return sole_points_in_world(robot, data).mean(axis=0)


def _frame(env, scene, video, web, values) -> bool:
    """Draw one frame of ``values`` (:class:`wbsim.scene.FrameValues`) into the video and the
    web viewer, or into MuJoCo's viewer; ``False`` if that viewer was closed."""
    from wbsim.scene import status_line

    if web is not None:
        web.show(scene.data, scene.show(values), values.t)
    if video is not None:
        video.append(scene.frame(values))
    if scene is not None:
        return True
    env.overlay_status, env.overlay_violating = status_line(values), values.violating
    env.render()
    return env.viewer_is_open


def _close(summary, pending, video, bar, log, env, cfg, detector, own_events) -> None:
    """Close the outputs: each failure is kept, the rest still runs; the first one is raised at
    the end (or added as a note to the exception already in flight)."""
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
        # no frame: ffmpeg never started and no file exists (e.g. Ctrl-C before the first);
        # a failed write (full disk, in append or close) leaves no usable file either
        summary["video"] = str(cfg.video) if video.n_frames and not video.error else ""
        summary["video_frames"] = video.n_frames
    if bar is not None:
        bar.close()
    if log is not None:
        summary["log"] = str(cfg.log)
        try:
            log.close()  # and steps.parquet: a failure there still rewrites the events below
        except (WbsimError, OSError) as exc:
            failed(exc)
        try:
            # the final form of every event (worst magnitude, duration), replacing the
            # start-of-event lines written as they happened
            log.rewrite_events([e.to_dict() for e in detector.events + own_events])
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
        for other in closing:
            if other is not first:
                first.add_note(str(other))
        if pending is None:
            raise first


def logged_env_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` as a run's ``config.json`` records them, so that the env can be rebuilt from
    them (``wbsim replay``): a ``robot`` given as a :class:`~wbsim.robot_config.RobotConfig` (or a
    :class:`wbsim.Robot`: its config) becomes the config's fields
    (:meth:`~wbsim.robot_config.RobotConfig.to_dict`, which :func:`wbsim.load_robot` takes back),
    a robot file its absolute path; a name stays a name."""
    import os

    from wbsim.robot import Robot, is_robot_path
    from wbsim.robot_config import RobotConfig

    out = dict(options)
    robot = out.get("robot")
    if isinstance(robot, Robot):
        robot = robot.config
    if isinstance(robot, RobotConfig):
        out["robot"] = robot.to_dict()
    elif isinstance(robot, (str, os.PathLike)) and is_robot_path(str(robot)):
        out["robot"] = str(Path(robot).expanduser().resolve())
    return out


#: env options that :func:`run_episode` sets itself or that its loop cannot drive, with the reason
_RUN_OWNS = {
    "max_seconds": "the episode's length is `seconds` (--seconds)",
    "render_mode": "run_episode picks it (--video renders off-screen, --viewer shows the viewer)",
    "width": "the frame size is `width` / `height` (--width, --height)",
    "height": "the frame size is `width` / `height` (--width, --height)",
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
        raise WbsimError(
            f"env option action_mode={mode!r}: run_episode applies the controller's "
            "torques, so the env must be in 'torque' mode ('joint_position' and "
            "'residual' are for RL agents, through gymnasium.make)"
        )
    if options.get("info_mode", "full") != "full":
        raise WbsimError(
            "run_episode reads the env's full info (state, schedule, contacts): "
            f"env option info_mode must be 'full', got {options['info_mode']!r} "
            "('lean' is for vector envs)"
        )
    if "robot" in options:  # a name, a path, a config: resolved (not built) to fail early
        from wbsim.robot import Robot, resolve_config

        robot = options["robot"]
        cfg = robot.config if isinstance(robot, Robot) else resolve_config(robot)
        if not cfg.feet:
            raise WbsimError(
                f"env option robot: robot {cfg.name!r} has no feet configured, and "
                "the loop senses the soles; give a config with feet (--robot-config "
                "CFG.toml, or a .toml that names its description)"
            )
    if "plan" in options and not callable(options["plan"]):
        raise WbsimError(
            f"env option plan must be a callable returning a PhasePlan (Python API), "
            f"got {options['plan']!r}; the env id picks the plan"
        )


#: The message of the KeyboardInterrupt that SIGTERM raises (_install_sigint_as_keyboard_interrupt).
_SIGTERM = f"signal {signal.SIGTERM.value}"


@contextlib.contextmanager
def _carrying(summary: dict[str, Any]) -> Iterator[None]:
    """Hang ``summary`` on a ``KeyboardInterrupt`` leaving the block, as ``.summary``."""
    try:
        yield
    except KeyboardInterrupt as exc:
        exc.summary = summary  # type: ignore[attr-defined]
        raise


def _install_sigint_as_keyboard_interrupt() -> None:
    """Make ``kill -INT`` and ``kill -TERM`` (e.g. from ``timeout``) raise KeyboardInterrupt, so
    :func:`run_episode`'s ``finally`` closes the log and the video and writes the summary."""
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def _term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _term)
