"""Kinematic replay of a plan file in MuJoCo, with the planned point forces drawn by
:mod:`wbsim.overlay` (the only module of :mod:`wbsim.planning` that imports MuJoCo).

Owns :func:`render_plan`: per video frame, the plan is interpolated (linear; quaternion
normalised), ``qpos`` is set, ``mj_forward`` runs, and the frame is rendered with the overlay:
planned forces as the commanded (thin blue) arrows, sole points green in contact and grey open,
the planned CoM, the support polygon of the points in contact.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["plan_qpos", "render_plan"]


def _interp(times: np.ndarray, values: np.ndarray, t: float) -> np.ndarray:
    k = int(np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 2))
    a = float(np.clip((t - times[k]) / (times[k + 1] - times[k]), 0.0, 1.0))
    return (1 - a) * values[k] + a * values[k + 1]


def plan_qpos(robot, plan: dict, t: float) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """MuJoCo ``qpos`` of the plan at time ``t`` (s), and the interpolated points, forces, CoM
    and contact flags (nearest knot)."""
    times = plan["times"]
    quat = _interp(times, plan["base_quaternion_wxyz"], t)
    joints = dict(zip(map(str, plan["joint_names"]), _interp(times, plan["joint_positions"], t)))
    q = robot.configuration(
        _interp(times, plan["base_position"], t), quat / np.linalg.norm(quat), joints
    )
    k = int(np.argmin(np.abs(times - t)))
    extra = {
        "points": _interp(times, plan["point_positions"], t),
        "forces": _interp(times, plan["point_forces"], t),
        "com": _interp(times, plan["com"], t),
        "contact": plan["contact"][k],
    }
    return robot.pin_to_mj(q)[0], extra


def _support(points: np.ndarray, contact: np.ndarray) -> np.ndarray:
    pts = points[contact][:, :2]
    if len(pts) < 3:
        return pts
    from scipy.spatial import ConvexHull, QhullError

    try:
        return pts[ConvexHull(pts).vertices]
    except QhullError:  # collinear points
        return pts


def render_plan(
    plan_path: str | Path,
    video_path: str | Path,
    fps: float = 30.0,
    width: int = 640,
    height: int = 480,
    png_every: float | None = None,
    png_prefix: str | Path | None = None,
) -> list[Path]:
    """Write the replay of ``plan_path`` to ``video_path`` (MP4, H.264, :class:`wbsim.render.
    VideoWriter`); with ``png_every`` (s) also PNG frames ``{png_prefix}_{t:.2f}s.png``.

    Returns the PNG paths. Raises :class:`~wbsim.errors.WbsimError` on a bad plan or video path.
    """
    import mujoco

    import wbsim
    from wbsim.overlay import OverlayData, draw_geoms, draw_text
    from wbsim.planning.plan_file import load_plan
    from wbsim.render import FrameRenderer, VideoWriter

    plan = load_plan(plan_path)
    robot = wbsim.load_robot(str(plan["robot"]))
    data = mujoco.MjData(robot.mj_model)
    renderer = FrameRenderer(
        robot.mj_model, width, height, distance=2.6, azimuth=150.0, elevation=-12.0
    )
    pngs: list[Path] = []
    t_end = float(plan["times"][-1])
    n_frames = int(np.floor(t_end * fps)) + 1
    label = f"{plan['formulation']!s} {plan['params_json']!s}"
    png_stride = max(1, round(png_every * fps)) if png_every else 0
    try:
        with VideoWriter(video_path, fps=fps) as writer:
            for j in range(n_frames):
                t = j / fps
                qpos, ex = plan_qpos(robot, plan, t)
                data.qpos[:] = qpos
                mujoco.mj_forward(robot.mj_model, data)
                n = len(ex["points"])
                od = OverlayData(
                    points=ex["points"],
                    modes=ex["contact"].astype(int),
                    f_cmd=ex["forces"],
                    f_sim=np.zeros((n, 3)),
                    violating=np.zeros(n, bool),
                    com=ex["com"],
                    support=_support(ex["points"], ex["contact"]),
                )

                def overlay(scene, _data, od: OverlayData = od) -> None:
                    draw_geoms(scene, od)

                frame = renderer.render(data, overlay)
                frame = draw_text(
                    np.ascontiguousarray(frame),
                    f"planned (kinematic replay)  t = {t:4.2f} s  {label}\n"
                    "blue: planned point forces; green: point in contact",
                )
                writer.append(frame)
                if png_stride and j % png_stride == 0:
                    from PIL import Image

                    p = Path(f"{png_prefix}_{t:.2f}s.png")
                    p.parent.mkdir(parents=True, exist_ok=True)
                    Image.fromarray(frame).save(p)
                    pngs.append(p)
    finally:
        renderer.close()
    return pngs
