"""The plan file: a ``.npz`` that loads with numpy alone (no pickle), written for a tracker.

Owns the file's fields, :func:`save_plan`, :func:`load_plan` and :func:`summary`. Frames: world,
z up, x forward; SI units. Every per-time array has ``T`` rows at ``times``.

Fields:
    format: ``"wbsim-dcc-plan-1"``. robot: ``"g1"``. times ``(T,)`` s. dt: knot spacing, s.
    base_position ``(T, 3)`` m; base_quaternion_wxyz ``(T, 4)``; base_linear_velocity,
    base_angular_velocity ``(T, 3)`` world frame (m/s, rad/s).
    joint_names ``(n,)``; joint_positions, joint_velocities ``(T, n)`` rad, rad/s.
    com ``(T, 3)`` m; momentum ``(T, 6)`` centroidal ``[linear; angular]`` at the CoM (kg m/s,
    kg m²/s), as Pinocchio's ``data.hg``.
    point_names ``(8,)`` (left foot first); point_positions, point_forces ``(T, 8, 3)`` (m; N, the
    force of the ground on the robot), point_velocities ``(T, 8, 3)`` m/s, point_force_rates
    ``(T, 8, 3)`` N/s. Velocities and rates at a knot are what the solve starting there chose
    for its first knot (the controls, like the base and joint velocities).
    foot_names ``(2,)``; foot_rotations ``(T, 2, 3, 3)`` foot-link orientation in the world.
    contact ``(T, 8)`` bool: ``h <= contact_height`` and ``f_n >= contact_force``;
    foot_contact ``(T, 2)`` bool: any point of the foot in contact; contact_height (m),
    contact_force (N): the thresholds.
    switch_times ``(S,)`` s, switch_points ``(S,)`` point index, switch_kinds ``(S,)`` +1 make /
    -1 break: every change of ``contact`` between consecutive knots, at the later knot's time.
    formulation, params_json, settings_json, task_json: how it was planned.
    solve_status ``(K,)``, solve_time_s (wall), solve_cpu_time_s, solve_iterations,
    solve_max_violation, solve_accuracy ``(K,)``: each receding-horizon solve.
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from wbsim.errors import WbsimError

__all__ = [
    "FORMAT",
    "complementarity_accuracy",
    "contact_set",
    "load_plan",
    "save_plan",
    "summary",
    "switches",
]

FORMAT = "wbsim-dcc-plan-1"
#: Contact thresholds of :func:`contact_set`: height, m; normal force, N.
CONTACT_HEIGHT, CONTACT_FORCE = 1e-3, 1.0


def contact_set(
    P: np.ndarray, F: np.ndarray, height: float = CONTACT_HEIGHT, force: float = CONTACT_FORCE
) -> np.ndarray:
    """``(T, 8)`` bool: a point is in contact when ``h <= height`` (m) and ``f_n >= force`` (N)."""
    return (P[..., 2] <= height) & (F[..., 2] >= force)


def switches(times: np.ndarray, contact: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Contact changes: ``(times (S,), point index (S,), kind (S,) +1 make / -1 break)``."""
    d = np.diff(contact.astype(int), axis=0)
    k, i = np.nonzero(d)
    return np.asarray(times)[k + 1], i, d[k, i]


def complementarity_accuracy(heights: np.ndarray, normal_forces: np.ndarray) -> float:
    """The planner's complementarity accuracy, ``mean_k sum_i max(h_ki, 0) max(f_ki, 0) / n``,
    N·m: the mean over time of the per-point ``h f_n`` (what
    :func:`~wbsim.planning.receding.run_receding` reports per solve as ``accuracy``), for a plan's
    knots or a simulation's steps alike.

    Args:
        heights: ``(k, n)`` height ``h`` of each point above its surface at each time, m (a
            penetration, ``h < 0``, counts as 0).
        normal_forces: ``(k, n)`` normal force ``f_n`` at each point, N (NaN: none, 0; a pull
            counts as 0).

    Returns:
        The accuracy, N·m (NaN for no rows).
    """
    h = np.clip(np.asarray(heights, dtype=float), 0.0, None)
    f = np.clip(np.nan_to_num(np.asarray(normal_forces, dtype=float)), 0.0, None)
    if h.shape != f.shape or h.ndim != 2:
        raise WbsimError(
            f"complementarity_accuracy: heights {h.shape} and normal_forces "
            f"{f.shape} must both be (k, n)"
        )
    if not len(h):
        return float("nan")
    return float(np.mean((h * f).sum(axis=1) / h.shape[1]))


def save_plan(path: str | Path, result, foot_rotations: np.ndarray | None = None) -> Path:
    """Write a :class:`~wbsim.planning.receding.RecedingResult` as a plan file (see the module
    docstring); returns the path. ``foot_rotations`` defaults to ``result.extra``'s."""
    from wbsim.planning import complementarity as cc
    from wbsim.planning.kinematics import load_kinematics

    path = Path(path)
    s, c = result.states, result.controls
    st = result.settings
    T = len(result.times)
    P, F = s["P"].reshape(T, 8, 3), s["F"].reshape(T, 8, 3)
    U = c["U_P"].reshape(T, 8, 3)
    V = np.array(
        [[cc.dcc_planar_velocity(P[t, i, 2], U[t, i], st.k_t) for i in range(8)] for t in range(T)]
    )
    if foot_rotations is None:
        foot_rotations = result.extra.get("foot_rotations")
    kin = result.extra.get("kin")
    if foot_rotations is None:
        kin = kin or load_kinematics()
        foot_rotations = np.array(
            [
                [np.array(r) for r in kin.feet(s["p_B"][t], s["rho"][t], s["s"][t])[1:]]
                for t in range(T)
            ]
        )
    contact = contact_set(P, F)
    sw_t, sw_i, sw_k = switches(result.times, contact)
    settings = {k: v for k, v in dataclasses.asdict(st).items() if k != "ipopt"}
    data: dict[str, Any] = {
        "format": np.array(FORMAT),
        "robot": np.array("g1"),
        "times": result.times,
        "dt": np.array(st.dt),
        "base_position": s["p_B"],
        "base_quaternion_wxyz": s["rho"],
        "base_linear_velocity": c["v_B"],
        "base_angular_velocity": c["omega"],
        "joint_names": np.array(result.extra.get("joint_names", [])),
        "joint_positions": s["s"],
        "joint_velocities": c["s_dot"],
        "com": s["x"],
        "momentum": s["h"],
        "point_names": np.array(result.extra.get("point_names", [])),
        "point_positions": P,
        "point_forces": F,
        "point_velocities": V,
        "point_force_rates": c["F_dot"].reshape(T, 8, 3),
        "foot_names": np.array(["left_foot", "right_foot"]),
        "foot_rotations": foot_rotations,
        "contact": contact,
        "foot_contact": np.stack([contact[:, :4].any(1), contact[:, 4:].any(1)], 1),
        "contact_height": np.array(CONTACT_HEIGHT),
        "contact_force": np.array(CONTACT_FORCE),
        "switch_times": sw_t,
        "switch_points": sw_i,
        "switch_kinds": sw_k,
        "formulation": np.array(st.formulation),
        "params_json": np.array(json.dumps(st.params)),
        "settings_json": np.array(json.dumps(settings)),
        "task_json": np.array(json.dumps(dataclasses.asdict(result.task))),
        "solve_status": np.array([x["status"] for x in result.solves]),
        "solve_time_s": np.array([x["solve_time_s"] for x in result.solves]),
        "solve_cpu_time_s": np.array([x.get("cpu_time_s", np.nan) for x in result.solves]),
        "solve_iterations": np.array([x["iterations"] for x in result.solves]),
        "solve_max_violation": np.array([x["max_violation"] for x in result.solves]),
        "solve_accuracy": np.array([x["accuracy"] for x in result.solves]),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:  # np.savez_compressed would add ".npz" to a path without it
        np.savez_compressed(fh, **data)
    return path


def load_plan(path: str | Path) -> dict[str, np.ndarray]:
    """Read a plan file with numpy only (``allow_pickle=False``): field -> array (0-d arrays for
    scalars and strings: use ``str(plan["formulation"])``, ``float(plan["dt"])``).

    Raises:
        WbsimError: missing file, not a plan file (a cut or damaged archive too), or another
            format version.
    """
    path = Path(path)
    if not path.is_file():
        raise WbsimError(f"plan file not found: {path}")
    try:
        with np.load(path, allow_pickle=False) as z:
            plan = {k: z[k] for k in z.files}
    except (
        OSError,
        ValueError,
        EOFError,
        zipfile.BadZipFile,
        zlib.error,
        NotImplementedError,
    ) as exc:
        # numpy's message may suggest pickles: no; a cut or damaged archive fails in zipfile/zlib
        raise WbsimError(
            f"{path}: not a plan file (numpy reads no .npz archive of arrays in it: "
            f"{type(exc).__name__}); expected the .npz that `wbsim dcc plan --out` writes"
        ) from None
    if str(plan.get("format", "")) != FORMAT:
        raise WbsimError(f"{path}: format {str(plan.get('format', '?'))!r}, expected {FORMAT!r}")
    return plan


def summary(plan: dict[str, np.ndarray]) -> str:
    """A few lines: duration, foot lifts, base and CoM displacement, switches, the end state (CoM
    speed, angular momentum, feet in contact), solve figures."""
    t = plan["times"]
    P = plan["point_positions"]
    lift = [P[:, :4, 2].min(axis=1).max(), P[:, 4:, 2].min(axis=1).max()]
    base = plan["base_position"]
    times = plan["solve_time_s"]
    mass = plan["point_forces"][0, :, 2].sum() / 9.81  # at rest at the start
    v_end = plan["momentum"][-1, :3] / mass
    lines = [
        (
            f"plan {plan['formulation']!s} {plan['params_json']!s}: {t[-1]:.2f} s, "
            f"{len(times)} solves"
        ),
        (
            f"  foot lift (lowest sole point, max over time): left {1000 * lift[0]:.1f} mm, right "
            f"{1000 * lift[1]:.1f} mm"
        ),
        (
            f"  base moved {100 * (base[-1, 0] - base[0, 0]):+.1f} cm in x, "
            f"{100 * (base[-1, 1] - base[0, 1]):+.1f} cm in y; CoM "
            f"{100 * (plan['com'][-1, 0] - plan['com'][0, 0]):+.1f} cm in x"
        ),
        (
            f"  contact switches: {len(plan['switch_times'])} (foot lift-offs: left "
            f"{int(np.sum(np.diff(plan['foot_contact'][:, 0].astype(int)) < 0))}, right "
            f"{int(np.sum(np.diff(plan['foot_contact'][:, 1].astype(int)) < 0))})"
        ),
        (
            f"  end ({t[-1]:.2f} s): CoM speed {100 * np.linalg.norm(v_end):.1f} cm/s, angular "
            f"momentum {np.linalg.norm(plan['momentum'][-1, 3:]):.3f} kg m^2/s, feet in contact: "
            f"left {bool(plan['foot_contact'][-1, 0])}, right {bool(plan['foot_contact'][-1, 1])}"
        ),
        (
            f"  solves: median {np.median(times):.2f} s wall, max {np.max(times):.2f} s (CPU median "
            f"{np.nanmedian(plan['solve_cpu_time_s']):.2f} s, max "
            f"{np.nanmax(plan['solve_cpu_time_s']):.2f} s); statuses "
            f"{sorted(set(map(str, plan['solve_status'])))}; max violation "
            f"{np.max(plan['solve_max_violation']):.1e}"
        ),
    ]
    return "\n".join(lines)
