"""One frame of a run, rebuilt from recorded values: the robot's state and the overlay on it.

A frame at time ``t`` (a control step's start) shows MuJoCo's state at ``t`` (``qpos``, the state
after the step before) and the overlay of that step: each sole point's contact mode and simulated
force (MuJoCo's contact solution of the step), the commanded forces or foot wrenches, the CoM and
the planned support polygon of the drawn state, and a status line (time, planned and sensed
contacts, running counts of mode switches and violations). Everything it draws is a
:class:`FrameValues`: the values of one step-table row (:class:`StepRows`), or of the reset state
(:meth:`FrameValues.at_reset`), with the event counts of :func:`frame_events`.

The live video of :func:`wbsim.rollout.run_episode`, ``wbsim replay`` (:mod:`wbsim.replay`) and the
web viewer (:mod:`wbsim.web_viewer`) all build their overlay here, from the same values, so a run
replayed from its log draws the frames of its live video, pixel for pixel. The env's own
``render()`` (Gymnasium's ``rgb_array``, MuJoCo's viewer) uses :func:`overlay_of` on its MjData too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from wbsim.contacts import sole_points_in_world, support_polygon
from wbsim.errors import WbsimError
from wbsim.overlay import OverlayData, draw_geoms, draw_text

__all__ = [
    "FrameClock",
    "FrameValues",
    "Scene",
    "StepRows",
    "frame_events",
    "overlay_of",
    "status_line",
]

#: A point stays red this long (s) after the last step of a violation event there.
LINGER = 0.25


@dataclass
class FrameValues:
    """What one frame shows (``n`` sole points in ``robot.contact_point_names`` order, ``m`` feet
    in ``robot.foot_names`` order, then the hands: ``robot.contact_names``).

    Attributes:
        t: time of the drawn state, s.
        qpos: ``(nq,)`` MuJoCo's state drawn.
        mode: ``(n,)`` contact mode per point (0 open, 1 sticking, 2 sliding) of the last physics
            step.
        f_sim: ``(n, 3)`` simulated contact force on the robot per point, world, N.
        f_cmd: ``(n, 3)`` commanded force per point, world, N; NaN where not commanded.
        w_cmd: ``(m, 6)`` commanded foot wrench ``[f; tau]`` at the foot frame origin,
            world-aligned, N and N·m; NaN where not commanded.
        sensed: feet with a loaded point in that step.
        planned: the schedule's contact set at ``t``.
        switches, violations: mode switch and violation events so far (``None``: not counted,
            left out of the status line).
        violating: ``(n,)`` bool, the point is in a violation (drawn red).
    """

    t: float
    qpos: np.ndarray
    mode: np.ndarray
    f_sim: np.ndarray
    f_cmd: np.ndarray
    w_cmd: np.ndarray
    sensed: frozenset[str]
    planned: frozenset[str]
    switches: int | None = None
    violations: int | None = None
    violating: np.ndarray | None = None

    @classmethod
    def at_reset(
        cls, robot, sensing, qpos: np.ndarray, t: float, planned: Iterable[str]
    ) -> FrameValues:
        """The values of a state no step has led to yet (the reset state): ``sensing`` is its
        :class:`~wbsim.contacts.ContactSensing` (MuJoCo's ``mj_forward`` at reset), nothing is
        commanded and no event has happened."""
        n, m = len(robot.contact_point_names), len(robot.contact_names)
        return cls(
            float(t),
            np.array(qpos, dtype=float),
            np.asarray(sensing.mode).copy(),
            np.asarray(sensing.force_world, dtype=float).copy(),
            np.full((n, 3), np.nan),
            np.full((m, 6), np.nan),
            frozenset(sensing.feet_in_contact),
            frozenset(planned),
            0,
            0,
            np.zeros(n, dtype=bool),
        )


class StepRows:
    """Reads :class:`FrameValues` out of step-table rows (:class:`wbsim.episode_log.StepTable`):
    the frame after row ``s`` shows the state after step ``s`` (``qpos/*`` at ``t_after``) with
    that step's contacts and command.

    Args:
        columns: the step table's column names.
        robot: the :class:`wbsim.Robot` of the run.

    Raises:
        WbsimError: a column is missing (a log written before wbsim logged MuJoCo's state cannot
            be drawn); the message names the first one.
    """

    def __init__(self, columns: Sequence[str], robot):
        idx = {c: i for i, c in enumerate(columns)}
        points, feet = robot.contact_point_names, robot.contact_names
        need = [
            "t_after",
            *(f"mode/{p}" for p in points),
            *(f"{k}/{p}/{a}" for k in ("f_sim", "f_cmd") for p in points for a in "xyz"),
            *(f"w_cmd/{f}/{a}" for f in feet for a in ("fx", "fy", "fz", "tx", "ty", "tz")),
            *(f"sensed_{f}" for f in feet),
        ]
        missing = [c for c in need if c not in idx]
        qpos = [i for i, c in enumerate(columns) if c.startswith("qpos/")]
        if missing or len(qpos) != robot.mj_model.nq:
            what = missing[0] if missing else f"qpos/* ({len(qpos)} of {robot.mj_model.nq})"
            raise WbsimError(
                f"the step table has no column {what}: the log was written by an "
                "older wbsim, before it logged MuJoCo's state, and cannot be drawn"
            )
        self._t = idx["t_after"]
        self._qpos = np.array(qpos)
        self._mode = np.array([idx[f"mode/{p}"] for p in points])
        self._f = {
            k: np.array([[idx[f"{k}/{p}/{a}"] for a in "xyz"] for p in points])
            for k in ("f_sim", "f_cmd")
        }
        self._w = np.array(
            [[idx[f"w_cmd/{f}/{a}"] for a in ("fx", "fy", "fz", "tx", "ty", "tz")] for f in feet]
        )
        self._sensed = [(f, idx[f"sensed_{f}"]) for f in feet]

    def values(
        self,
        row: np.ndarray,
        planned: Iterable[str],
        switches: int | None = None,
        violations: int | None = None,
        violating: np.ndarray | None = None,
    ) -> FrameValues:
        """The values of the frame after ``row`` ``(n_columns,)``, with the schedule's
        ``planned`` contact set at that time and the event counts (:func:`frame_events`)."""
        row = np.asarray(row, dtype=float)
        return FrameValues(
            float(row[self._t]),
            row[self._qpos],
            row[self._mode].astype(int),
            row[self._f["f_sim"]],
            row[self._f["f_cmd"]],
            row[self._w],
            frozenset(f for f, i in self._sensed if row[i] > 0.5),
            frozenset(planned),
            switches,
            violations,
            violating,
        )


def emitted_step(event: Mapping) -> int:
    """The step at which the event detector emitted ``event`` (an event dict,
    :meth:`wbsim.diagnostics.Event.to_dict`): its ``confirmed_step`` (a contact mismatch, a
    debounced mode switch), else its first step."""
    return int(event.get("detail", {}).get("confirmed_step", event["step"]))


def frame_events(
    events: Iterable[Mapping], robot, last_step: int, t: float, linger: float = LINGER
) -> tuple[int, int, np.ndarray]:
    """The event counts and red points of a frame at time ``t`` (s) after step ``last_step``.

    Args:
        events: event dicts (``kind``, ``step``, ``where``, ``end_t``, ``detail``; the loop's own
            kinds, ``fall`` and the like, are not counted).
        robot: the :class:`wbsim.Robot`.
        last_step: the last step the detector had checked (-1: none).
        t: the frame's time, s.
        linger: a point stays red this long after its violation's last step, s.

    Returns:
        ``(switches, violations, violating)``: the ``mode_switch`` and violation events emitted
        by ``last_step``; ``(n,)`` bool, the points (or the points of a foot) named by a
        violation event that held within ``linger`` before ``t``.

    Live, the detector's events are as they stand at the frame; replayed, as they ended. The
    two agree when an event that stopped holding ``linger`` before a frame had ended by then,
    i.e. whenever ``rearm_time`` + the control step < ``linger`` (0.02 s + 2 ms by default).
    """
    from wbsim.diagnostics import EVENT_KINDS

    names = robot.contact_point_names
    feet = {f: set(robot.contact(f).point_names) for f in robot.contact_names}
    switches = violations = 0
    violating = np.zeros(len(names), dtype=bool)
    for e in events:
        if e["kind"] not in EVENT_KINDS or emitted_step(e) > last_step:
            continue
        if e["kind"] == "mode_switch":
            switches += 1
            continue
        violations += 1
        if e["end_t"] + linger < t:
            continue
        for where in str(e["where"]).split(","):
            for i, p in enumerate(names):
                if p == where or p in feet.get(where, ()):
                    violating[i] = True
    return switches, violations, violating


def status_line(values: FrameValues) -> str:
    """The frame's status line: time, planned and sensed contacts, and the counts if any."""
    text = (
        f"t {values.t:5.2f} s   planned {'+'.join(sorted(values.planned)) or 'none'}   "
        f"sensed {'+'.join(sorted(values.sensed)) or 'none'}"
    )
    if values.switches is not None:
        text += f"   switches {values.switches}   violations {values.violations}"
    return text


def overlay_of(robot, data: mujoco.MjData, values: FrameValues) -> OverlayData:
    """The :class:`~wbsim.overlay.OverlayData` of ``values`` on ``data`` (its kinematics current:
    the sole points, CoM, foot frames and support polygon are read from it).

    The support polygon is that of the planned feet (all feet when none is planned); a foot
    commanded as a wrench gets its force drawn at the wrench's centre of pressure on its sole's
    plane (where the force's moment about the horizontal axes is the wrench's); an unknown
    commanded force (NaN) draws no arrow."""
    points = sole_points_in_world(robot, data)
    arrows = []
    for j, foot in enumerate(robot.foot_names):
        cop = _centre_of_pressure(robot, data, foot, np.asarray(values.w_cmd[j], dtype=float))
        if cop is not None:
            arrows.append((cop, np.asarray(values.w_cmd[j][:3], dtype=float)))
    violating = (
        values.violating if values.violating is not None else np.zeros(len(points), dtype=bool)
    )
    return OverlayData(
        points=points,
        modes=np.asarray(values.mode),
        f_cmd=np.nan_to_num(values.f_cmd),
        f_sim=np.asarray(values.f_sim, dtype=float),
        violating=violating,
        com=data.subtree_com[1].copy(),
        support=support_polygon(
            robot, data, sorted(set(values.planned) & set(robot.foot_names)) or None
        ),
        text=status_line(values),
        cmd_wrench_arrows=arrows,
    )


def _centre_of_pressure(
    robot, data: mujoco.MjData, foot: str, wrench: np.ndarray
) -> np.ndarray | None:
    """World point ``(3,)``, m, on the plane of ``foot``'s sole points (their mean height) where
    the force of ``wrench`` ``[f; tau]`` (N, N·m; on the robot at the foot frame origin,
    world-aligned) has the wrench's moment about the horizontal axes: ``r x f = tau`` in x, y
    with ``r_z`` fixed. ``None`` when ``f_z`` <= 1e-6 N or NaN (no centre of pressure)."""
    f, tau = wrench[:3], wrench[3:]
    if not f[2] > 1e-6:
        return None
    origin = data.xpos[robot.foot(foot).mj_body_id]  # the foot link's frame
    rz = float(np.mean(sole_points_in_world(robot, data, [foot])[:, 2])) - origin[2]
    rx = (rz * f[0] - tau[1]) / f[2]
    ry = (tau[0] + rz * f[1]) / f[2]
    return origin + np.array([rx, ry, rz])


class FrameClock:
    """When a frame is due: the first state at or after each multiple of ``period`` s (from 0),
    one frame per state at most.

    Args:
        period: s between frames (``1 / fps``).
    """

    def __init__(self, period: float):
        self.period = float(period)
        self.next = 0.0

    def due(self, t: float) -> bool:
        """Whether the state at time ``t`` (s; called for consecutive states) gets a frame."""
        if t + 1e-9 >= self.next:
            self.next += self.period
            return True
        return False


class Scene:
    """A robot's MjData that shows recorded values, and the frames of it.

    Args:
        robot: the :class:`wbsim.Robot`.
        width, height: frame size, pixels (:class:`wbsim.render.FrameRenderer`).
        camera: ``"track"`` (follows the base at the distance that frames the robot at
            ``reset_qpos``) or a camera of the model (``"front"``, ``"side"``).
        reset_qpos: ``(nq,)`` the episode's first state (sets the tracking distance, so that any
            stretch of a run is framed as its whole video is).
        track_body, distance, azimuth, elevation: the ``"track"`` camera's body, distance (m;
            default: from ``reset_qpos``, else the renderer's), azimuth and elevation (deg)
            (:class:`wbsim.render.FrameRenderer`; an env's ``camera_options``).

    Raises:
        WbsimError: a size or camera the renderer refuses (when the scene is made); no OpenGL
            context (at the first :meth:`frame`; :meth:`show` alone needs none).
    """

    def __init__(
        self,
        robot,
        width: int = 640,
        height: int = 480,
        camera: str = "track",
        reset_qpos: np.ndarray | None = None,
        track_body: int = 1,
        distance: float | None = None,
        azimuth: float = 135.0,
        elevation: float = -15.0,
    ):
        from wbsim.render import FrameRenderer, track_distance

        self.robot = robot
        self.model = robot.mj_model
        self.data = mujoco.MjData(self.model)
        if reset_qpos is not None:
            self.data.qpos[:] = reset_qpos
            mujoco.mj_kinematics(self.model, self.data)
            if distance is None:
                distance = track_distance(self.data.xpos[track_body][2])
        self.renderer = FrameRenderer(
            self.model,
            width,
            height,
            camera=camera,
            track_body=track_body,
            distance=distance,
            azimuth=azimuth,
            elevation=elevation,
        )
        self._warm = False

    def show(self, values: FrameValues) -> OverlayData:
        """Put the state of ``values`` in :attr:`data` (kinematics, CoM, cameras) and return its
        overlay."""
        m, d = self.model, self.data
        d.qpos[:] = values.qpos
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_camlight(m, d)
        return overlay_of(self.robot, d, values)

    def frame(self, values: FrameValues) -> np.ndarray:
        """The RGB frame ``(height, width, 3)`` ``uint8`` of ``values``, overlay and status line
        drawn."""
        overlay = self.show(values)
        if not self._warm:
            # a renderer's first frame differs from the same frame drawn later (by 1 in a few
            # pixels: state MuJoCo or Mesa set up in the first draw); a first frame drawn and
            # dropped makes every frame the same whichever frame a scene starts with (a replay
            # from mid-run)
            self.renderer.render(self.data)
            self._warm = True
        image = self.renderer.render(self.data, lambda scene, _: draw_geoms(scene, overlay))
        return draw_text(image, overlay.text)

    def close(self) -> None:
        self.renderer.close()
