"""``wbsim replay``: a logged run drawn again, frame for frame as its live video.

:class:`LoggedRun` rebuilds a run's scene from its folder (the env from ``config.json``: env id,
options and seed, reset as the run was) and gives, for each state of the run, the
:class:`~wbsim.scene.FrameValues` the live loop drew: state 0 is the reset state (its contact
sensing recomputed by the rebuilt env's reset, as live), state ``s >= 1`` the state after step
``s - 1`` (row ``s - 1`` of the step table: ``qpos/*``, contacts and commands), with the events the
detector had emitted by then (:func:`wbsim.scene.frame_events`). Frames are due at the states the
live loop drew them (:class:`wbsim.scene.FrameClock` on the logged times, plus the final state of a
run that completed or fell), so :func:`replay_video` with the run's own fps, size and camera (the
defaults) writes the frames of the live video, pixel for pixel (``tests/test_replay.py``).

Where a replay can differ from the live video: an interrupted run (Ctrl-C, an exception) may or
may not have drawn its last state; a run whose ``rearm_time`` is not below 0.25 s minus a control
step may colour a point red for a few frames longer (see :func:`wbsim.scene.frame_events`); a run
logged with another MuJoCo or wbsim version may have another reset state (a warning says so).
"""

from __future__ import annotations

import math
import re
import time
import warnings
from collections.abc import Generator
from pathlib import Path
from typing import Any

import numpy as np

from wbsim.episode_log import (
    CONFIG_FILE,
    PYTHON_OBJECT_KEY,
    RunData,
    check_run_folder,
    load_run,
)
from wbsim.errors import WbsimError
from wbsim.scene import FrameClock, FrameValues, Scene, StepRows, frame_events

__all__ = ["LoggedRun", "drawn_states", "replay_video", "replay_web", "state_times"]

#: the statuses after which the live loop drew the state the episode ended in
_FINAL_FRAME = ("completed", "fell")

#: how a log written before :data:`~wbsim.episode_log.PYTHON_OBJECT_KEY` held a Python object
_OLD_OBJECT_REPR = re.compile(r"<[^<>]* at 0x[0-9a-fA-F]+>")


def _python_object(value: Any) -> str | None:
    """The repr of the first Python object that ``value`` (a config.json value) holds in place of
    data, or ``None``."""
    if isinstance(value, dict):
        if set(value) == {PYTHON_OBJECT_KEY}:
            return str(value[PYTHON_OBJECT_KEY])
        value = list(value.values())
    if isinstance(value, list):
        return next((r for r in map(_python_object, value) if r is not None), None)
    if isinstance(value, str) and _OLD_OBJECT_REPR.search(value):
        return value
    return None


def _check_data(run_dir: Path, options: dict[str, Any], given_to: str) -> None:
    """Raise :class:`WbsimError` naming the first of ``options`` that the log holds only as a
    Python object's repr: the env cannot be rebuilt from it."""
    for key, value in options.items():
        logged = _python_object(value)
        if logged is not None:
            raise WbsimError(
                f"{run_dir}: the env cannot be rebuilt from config.json: its {given_to} option "
                f"{key!r} was a Python object, which the log holds only as its repr ({logged}); "
                "a run replays when those options are data (names, numbers, a robot config)"
            )


class LoggedRun:
    """A logged run with its scene rebuilt.

    Args:
        run_dir: the run folder (``wbsim run --log``).

    Attributes:
        run: the :class:`~wbsim.episode_log.RunData`.
        env: the env rebuilt from ``config.json`` and reset with the run's seed.
        robot: its robot.
        times: ``(n + 1,)`` the time of each state, s: the reset, then after each logged step.
        fps, width, height: the live video's frame rate and size (``config.json``; 30 fps,
            640x480 for a run that had none).

    Raises:
        WbsimError: not a run folder; a run with no logged step; a log without MuJoCo's state
            (written by an older wbsim); a config the env cannot be rebuilt from (an env option
            given as a Python object). Raised before any file is written.
    """

    def __init__(self, run_dir: str | Path):
        self.run: RunData = load_run(run_dir)
        cfg = self.run.config
        if not len(self.run.steps):
            raise WbsimError(f"{self.run.dir}: no logged step to replay")
        if not (self.run.dir / CONFIG_FILE).is_file():
            raise WbsimError(
                f"{self.run.dir / CONFIG_FILE} is missing (deleted or not copied with the run): "
                "the run cannot be rebuilt without it"
            )
        for key in ("env", "seed", "env_options", "seconds"):
            if key not in cfg:
                raise WbsimError(
                    f"{self.run.dir}/config.json has no {key!r}: the run cannot be "
                    "rebuilt (logged by an older wbsim)"
                )
        from wbsim.envs import ENV_IDS, make_humanoid, register_robot_env

        registered = cfg.get("env_registration")
        if cfg["env"] not in ENV_IDS and isinstance(registered, dict):
            _check_data(self.run.dir, registered, "register_robot_env")
            try:  # an id that register_robot_env made in the recording process
                options = dict(registered)
                register_robot_env(cfg["env"], options.pop("robot"), **options)
            except (KeyError, WbsimError, TypeError, ValueError) as exc:
                raise WbsimError(
                    f"{self.run.dir}: the env {cfg['env']!r} cannot be registered again from "
                    f"config.json ({exc})"
                ) from None
        env_options = dict(cfg["env_options"])
        _check_data(self.run.dir, env_options, "env")
        robot = env_options.get("robot")
        if (
            isinstance(robot, str)
            and robot.startswith("RobotConfig(")
            and isinstance(cfg.get("robot_config"), dict)
        ):  # logged by an older wbsim as the repr of a config: the loaded robot's config rebuilds it
            env_options["robot"] = cfg["robot_config"]
        try:
            self.env = make_humanoid(cfg["env"], max_seconds=cfg["seconds"], **env_options)
        except (WbsimError, TypeError, ValueError) as exc:
            raise WbsimError(
                f"{self.run.dir}: the env cannot be rebuilt from config.json ({exc})"
            ) from None
        self.robot = self.env.robot
        self.rows = StepRows(self.run.columns, self.robot)  # raises on an old log
        self.env.reset(seed=cfg["seed"])
        logged = np.asarray(cfg.get("reset_qpos", self.env.data.qpos), dtype=float)
        if not np.array_equal(logged, self.env.data.qpos):
            warnings.warn(
                f"{self.run.dir}: the rebuilt reset state differs from the logged one "
                f"by up to {np.max(np.abs(logged - self.env.data.qpos)):.3g} (another "
                "wbsim or MuJoCo version?): the first frame may differ",
                stacklevel=2,
            )
        self.times = state_times(self.run)
        self.fps = float(cfg.get("fps", 30.0))
        self.width, self.height = int(cfg.get("width", 640)), int(cfg.get("height", 480))
        self._reset = FrameValues.at_reset(
            self.robot,
            self.env.sensing,
            self.env.data.qpos,
            self.times[0],
            self._planned(self.times[0]),
        )

    @property
    def n_states(self) -> int:
        """Logged steps + 1 (the reset state)."""
        return len(self.times)

    def _planned(self, t: float) -> frozenset[str]:
        return frozenset(self.env.plan.at(float(t)).contact_set)

    def values(self, state: int) -> FrameValues:
        """The :class:`~wbsim.scene.FrameValues` of state ``state`` (0: the reset; ``s``: after
        step ``s - 1``)."""
        if state == 0:
            return self._reset
        t = float(self.times[state])
        return self.rows.values(
            self.run.steps[state - 1],
            self._planned(t),
            *frame_events(self.run.events, self.robot, state - 1, t),
        )

    def frame_states(
        self, fps: float | None = None, start: float | None = None, end: float | None = None
    ) -> list[int]:
        """The states that get a frame at ``fps`` (default: the live video's): those the live
        loop drew (the first state at or after each multiple of ``1 / fps`` s, and the state the
        run ended in when it completed or fell), whose time is within ``[start, end]`` s."""
        states = drawn_states(self.times, fps or self.fps, self.run.summary.get("status"))
        lo = -math.inf if start is None else start - 1e-9
        hi = math.inf if end is None else end + 1e-9
        return [s for s in states if lo <= self.times[s] <= hi]

    def frames(
        self, states: list[int], camera: str | None = None
    ) -> Generator[np.ndarray, None, None]:
        """The RGB frames ``(height, width, 3)`` ``uint8`` of ``states``, drawn by
        :class:`~wbsim.scene.Scene` as the live video's are: with the run's camera (its env's
        ``camera_options``), or ``camera`` (``"track"``, with the run's tracking distance and
        angles, or a camera of the model)."""
        view = self.env.camera_options
        if camera is not None:
            view["camera"] = camera
        scene = Scene(self.robot, self.width, self.height, reset_qpos=self._reset.qpos, **view)
        try:
            for s in states:
                yield scene.frame(self.values(s))
        finally:
            scene.close()

    def close(self) -> None:
        self.env.close()


def state_times(run: RunData) -> np.ndarray:
    """``(n + 1,)`` the time of each state of a run with ``n >= 1`` logged steps, s: the reset
    (the first step's ``t``), then the state after each step (``t_after``; a log older than that
    column: the next step's ``t``, and for the last state ``t`` plus the control step)."""
    t = run["t"]
    if "t_after" in run:
        return np.concatenate([t, run["t_after"][-1:]])
    dt = float(t[-1] - t[-2]) if len(t) > 1 else float(run.config.get("control_dt", 0.0))
    return np.concatenate([t, [t[-1] + dt]])


def drawn_states(times: np.ndarray, fps: float, status: str | None) -> list[int]:
    """The states of ``times`` (:func:`state_times`) that the live loop drew into a video of
    ``fps`` frames a second: the first state at or after each multiple of ``1 / fps`` s, and the
    state the run ended in when it completed or fell (``status``), or when that one was due."""
    clock = FrameClock(1.0 / fps)
    n = len(times) - 1  # logged steps
    states = [s for s in range(n) if clock.due(float(times[s]))]
    if status in _FINAL_FRAME or clock.due(float(times[n])):
        states.append(n)  # stopped, error: the loop reached that state and drew it when due
    return states


def check_window(
    fps: float | None, start: float | None, end: float | None, duration: float, control_dt: float
) -> None:
    """Raise :class:`WbsimError` unless ``fps`` is in ``(0, 1 / control_dt]`` (a frame per
    control step at most) and ``0 <= start < end`` within the run's ``duration`` (s)."""
    if fps is not None and not (math.isfinite(fps) and 0 < fps <= 1.0 / control_dt + 1e-9):
        raise WbsimError(
            f"fps = {fps!r}: a frame can be drawn at most once a control step, so "
            f"fps must be in (0, {1.0 / control_dt:g}]"
        )
    for name, value in (("start", start), ("end", end)):
        if value is not None and not (math.isfinite(value) and 0 <= value <= duration + 1e-9):
            raise WbsimError(
                f"--{name} {value!r}: the run lasts {duration:g} s; expected a time "
                f"in [0, {duration:g}] s"
            )
    if start is not None and end is not None and not start < end:
        raise WbsimError(f"--start {start:g} must be before --end {end:g}")


def replay_video(
    run_dir: str | Path,
    video: str | Path | None = None,
    camera: str | None = None,
    start: float | None = None,
    end: float | None = None,
    fps: float | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Write the replay of a logged run to an MP4 (H.264, :class:`wbsim.render.VideoWriter`).

    Args:
        run_dir: the run folder.
        video: ``.mp4`` path (default ``RUN_DIR/replay.mp4``); an existing file needs
            ``overwrite``.
        camera: ``None`` (the live video's: the run's env options ``camera_name``,
            ``camera_id``, ``default_camera_config``), ``"track"`` or a camera of the model.
        start, end: the stretch of the run, s (default: all of it).
        fps: frames per second (default: the live video's).
        overwrite: replace an existing video file.

    Returns:
        ``{"video": path, "frames": count, "fps": fps, "start": s, "end": s}``.

    Raises:
        WbsimError: as :class:`LoggedRun`; a bad ``fps``, ``start``/``end`` or video path; an
            unknown camera. All before the video file is created.
    """
    from wbsim.render import VideoWriter, check_video_path

    run_dir = check_run_folder(run_dir)  # first: the default video goes in it
    path = Path(video) if video else run_dir / "replay.mp4"
    check_video_path(path, overwrite)
    logged = LoggedRun(run_dir)
    try:
        cfg = logged.run.config
        control_dt = float(cfg.get("control_dt", logged.env.dt))
        check_window(fps, start, end, float(logged.times[-1]), control_dt)
        states = logged.frame_states(fps, start, end)
        if not states:
            raise WbsimError(f"no frame between {start} s and {end} s at {fps or logged.fps:g} fps")
        frames = logged.frames(states, camera)
        first = next(frames)  # an unknown camera fails here, before the file exists
        with VideoWriter(path, fps=fps or logged.fps) as writer:
            writer.append(first)
            for frame in frames:
                writer.append(frame)
        frames.close()
    finally:
        logged.close()
    times = logged.times[states]
    return {
        "video": str(path),
        "frames": len(states),
        "fps": fps or logged.fps,
        "start": float(times[0]),
        "end": float(times[-1]),
    }


def replay_web(
    run_dir: str | Path,
    web,
    start: float | None = None,
    end: float | None = None,
    fps: float | None = None,
    duration: float | None = None,
) -> int:
    """Show a logged run in the web viewer (``wbsim replay RUN --web``): the frames of
    :meth:`LoggedRun.frame_states` under a time slider and a play button (playing in real time,
    looping), until Ctrl-C or for ``duration`` s of wall time.

    Args:
        run_dir: the run folder.
        web: a :class:`wbsim.web_viewer.WebViewer` (its owner closes it).
        start, end, fps: the frames, as for :func:`replay_video`.
        duration: stop after this many seconds (default: run until interrupted).

    Returns:
        The number of frames shown.

    Raises:
        WbsimError: as :func:`replay_video`, before anything is shown.
    """
    logged = LoggedRun(run_dir)
    try:
        cfg = logged.run.config
        check_window(
            fps, start, end, float(logged.times[-1]), float(cfg.get("control_dt", logged.env.dt))
        )
        states = logged.frame_states(fps, start, end)
        if not states:
            raise WbsimError(f"no frame between {start} s and {end} s")
        scene = Scene(logged.robot, reset_qpos=logged.values(0).qpos)
        web.load(logged.robot)
        web.look_at(scene.show(logged.values(states[0])).com)
        player = web.add_player(logged.times[states])
        period = 1.0 / (fps or logged.fps)
        shown, n_shown = -1, 0
        wall0 = last = time.perf_counter()
        while duration is None or time.perf_counter() - wall0 < duration:
            now = time.perf_counter()
            k = player.index
            if player.playing and now - last >= period:
                k = (k + 1) % len(states)
                player.index, last = k, now
            if k != shown:
                web.show(scene.data, scene.show(logged.values(states[k])))
                shown, n_shown = k, n_shown + 1
            time.sleep(min(period, 0.02))
    finally:
        logged.close()
    return n_shown
