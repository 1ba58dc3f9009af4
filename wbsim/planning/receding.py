"""Receding-horizon planning with the whole-body DCC planner, and the commands ``wbsim dcc plan``
and ``wbsim dcc compare``.

Owns: the initial state at the G1's stand pose, the task references (step in place, walk), the
loop that solves, executes the first knot interval and warm-starts the next solve from the shifted
solution, and the comparison over formulations.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wbsim.errors import UnknownNameError, WbsimError
from wbsim.planning.kinematics import G1Kinematics, load_kinematics
from wbsim.planning.whole_body import (
    CONTROL_FIELDS,
    DEFAULT_PARAMS,
    STATE_FIELDS,
    Planner,
    PlannerSettings,
    SolveResult,
    build_planner,
)

__all__ = [
    "COMPARE_GRID",
    "TASKS",
    "RecedingResult",
    "Task",
    "com_reference",
    "initial_state",
    "run_compare",
    "run_plan",
    "run_receding",
    "task_clock",
]

#: ``step``: the CoM sways from one foot to the other (period ``period`` s, amplitude
#: ``sway`` m to each side, just beyond the feet centres at +-0.118 m), so that one foot at a time
#: can be unloaded, and the soles are drawn to their stand positions in x and y; the planner is
#: told nothing of contacts, the swing cost lifts an unloaded foot. ``walk``: the CoM also goes
#: forward at ``speed`` m/s, and the soles are drawn to their lateral stand positions only.
TASKS = ("step", "walk")


@dataclass
class Task:
    """A CoM reference: ``name`` (:data:`TASKS`), ``speed`` (m/s, walk), ``sway`` (m),
    ``period`` (s), ``settle`` (s of standing still before the sway starts: the first solve,
    cold-started from rest, is then cheap, and later solves see the sway enter the horizon
    0.1 s at a time; with 0.3 s the first step solve took 240 iterations).

    The end at rest: after ``half_periods`` half-periods of sway (``None``: the sway never
    ends) the reference comes to rest at the feet's middle. The sway's phase runs on a task
    clock (:func:`task_clock`) whose rate falls from 1 to 0 over the last ``taper`` s (a quintic
    smoothstep: zero slope and curvature at both ends), ending when the phase has made exactly
    ``half_periods`` half-periods, at the middle, at :attr:`stop` (s). The walk's forward travel
    runs on the same clock stopped a quarter period earlier, mid-way through the last step
    (``speed (half_periods period / 2 - period / 4)`` m in all), so that the last foot lands
    level with the CoM and the CoM ends between the feet, not ahead of them (on the clock of
    the sway it ended 6 cm ahead of the feet's middle, on the front edge of the rear sole). The
    CoM reference arrives with zero velocity and acceleration and stays there. Knots at or after
    ``stop`` are *rest knots* (:meth:`rest`): the planner's swing target drops to the floor there
    and their centroidal momentum is penalised (``rest_momentum`` weight), so both feet come down
    and the robot stops.
    """

    name: str = "step"
    speed: float = 0.1
    sway: float = 0.14
    period: float = 2.8
    settle: float = 1.0
    half_periods: int | None = None
    taper: float = 0.8

    def __post_init__(self):
        if self.name not in TASKS:
            raise UnknownNameError("task", self.name, TASKS)
        if not (np.isfinite(self.speed) and abs(self.speed) <= 0.5):
            raise WbsimError(f"speed must be in [-0.5, 0.5] m/s, got {self.speed}")
        if self.half_periods is None:
            return
        if not (isinstance(self.half_periods, int) and self.half_periods >= 1):
            raise WbsimError(
                f"half_periods must be an integer >= 1 or None, got {self.half_periods!r}"
            )
        longest = (self.half_periods - 0.5) * self.period  # the walk's clock starts its taper
        if not (np.isfinite(self.taper) and 0 < self.taper <= longest):  # after settle
            raise WbsimError(
                f"taper must be in (0, (half_periods - 1/2) period] = (0, {longest:g}] s, "
                f"got {self.taper}"
            )

    @property
    def stop(self) -> float | None:
        """When the reference comes to rest, s: ``settle + half_periods period / 2 + taper /
        2`` (the taper runs the clock at half speed on average); ``None`` without an end."""
        if self.half_periods is None:
            return None
        return self.settle + self.half_periods * self.period / 2 + self.taper / 2

    def rest(self, t: np.ndarray) -> np.ndarray:
        """``(len(t),)`` 1.0 at rest knots (``t >= stop``, s), else 0.0 (all 0 without an end)."""
        t = np.asarray(t, float)
        stop = self.stop
        if stop is None:
            return np.zeros(t.shape)
        return (t >= stop - 1e-9).astype(float)


def task_clock(task: Task, t: np.ndarray, early: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The task clock of :class:`Task` at times ``t`` (s), stopped ``early`` s before ``stop``:
    its rate ``w`` (1 until ``stop - early - taper``, then ``1 - S(u)``, ``S(u) = 10 u^3 - 15 u^4
    + 6 u^5``, ``u`` from 0 to 1 over the taper, 0 from ``stop - early`` on) and its time since
    ``settle``, s (0 before it; ``half_periods period / 2 - early`` at the end). Without an end:
    ``w = 1`` and ``t - settle``."""
    t = np.asarray(t, float)
    tt = np.maximum(t, task.settle) - task.settle
    stop = task.stop
    if stop is None:
        return np.ones(t.shape), tt
    a = stop - early - task.taper - task.settle  # the taper's start on the clock (>= 0)
    u = np.clip((tt - a) / task.taper, 0.0, 1.0)
    w = 1.0 - (10 * u**3 - 15 * u**4 + 6 * u**5)
    return w, np.minimum(tt, a) + task.taper * (u - 2.5 * u**4 + 3 * u**5 - u**6)


def initial_state(kin: G1Kinematics, robot=None) -> dict[str, np.ndarray]:
    """The stand pose at rest: states of :data:`~wbsim.planning.whole_body.STATE_FIELDS`, with
    the weight shared by the 8 points (``P``, ``F``: ``(8, 3)``)."""
    import wbsim

    robot = robot if robot is not None else wbsim.load_robot("g1")
    pose = robot.pose("stand")
    s = np.array([pose.joints[j] for j in kin.joint_names])
    p_B, rho = np.array(pose.base_position, float), np.array([1.0, 0, 0, 0])
    P = np.array(kin.feet(p_B, rho, s)[0]).T
    F = np.zeros((8, 3))
    F[:, 2] = kin.mass * 9.81 / 8
    return {
        "p_B": p_B,
        "rho": rho,
        "s": s,
        "x": np.array(kin.com(p_B, rho, s)).ravel(),
        "h": np.zeros(6),
        "P": P,
        "F": F,
    }


def com_reference(task: Task, t: np.ndarray, start: dict[str, np.ndarray]) -> np.ndarray:
    """CoM reference ``(len(t), 3)`` (m, world) at times ``t`` (s) from the initial state
    ``start`` (its CoM; the feet centre gives the sway's centre), on the task clock
    (:func:`task_clock`: with ``half_periods`` the sway and the walk slow to a stop)."""
    centre = start["P"].mean(axis=0)
    x0 = start["x"]
    t = np.asarray(t, float)
    _, tt = task_clock(task, t)
    ref = np.tile(x0, (len(tt), 1))
    ref[:, 1] = centre[1] + task.sway * np.sin(2 * np.pi * tt / task.period)
    if task.name == "walk":
        ref[:, 0] = x0[0] + task.speed * task_clock(task, t, early=task.period / 4)[1]
    return ref


@dataclass
class RecedingResult:
    """A receding-horizon run: the executed knots and each solve's figures.

    Attributes:
        times: ``(K + 1,)`` s. states: field -> ``(K + 1, ...)``. controls: field -> ``(K + 1,
            ...)`` (the last repeats the last solve's knot 1). solves: per solve ``status``,
            ``iterations``, ``solve_time_s``, ``max_violation``, ``accuracy`` (the solve's
            ``mean_k sum_i h_i f_z,i / 8``, N m). settings, task. build_time_s.
    """

    times: np.ndarray
    states: dict[str, np.ndarray]
    controls: dict[str, np.ndarray]
    solves: list[dict[str, Any]]
    settings: PlannerSettings
    task: Task
    build_time_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def _shift(res: SolveResult) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The solution moved one knot earlier, the last knot repeated (the next solve's guess)."""
    st = {n: np.concatenate([v[1:], v[-1:]]) for n, v in res.states.items()}
    ct = {n: np.concatenate([v[1:], v[-1:]]) for n, v in res.controls.items()}
    return st, ct


def _rest_guess(start: dict[str, np.ndarray], knots: int, n: int):
    states = {k: np.repeat(np.asarray(v, float)[None], knots, axis=0) for k, v in start.items()}
    controls = {
        "v_B": np.zeros((knots, 3)),
        "omega": np.zeros((knots, 3)),
        "s_dot": np.zeros((knots, n)),
        "U_P": np.zeros((knots, 8, 3)),
        "F_dot": np.zeros((knots, 8, 3)),
    }
    return states, controls


def run_receding(
    steps: int,
    settings: PlannerSettings | None = None,
    task: Task | None = None,
    kin: G1Kinematics | None = None,
    planner: Planner | None = None,
    progress: bool = False,
) -> RecedingResult:
    """Solve ``steps`` times, each from the previous solve's knot 1, warm-started from the shifted
    previous solution (primal and multipliers).

    Raises:
        WbsimError: ``steps < 1``.
    """
    if steps < 1:
        raise WbsimError(f"steps must be >= 1, got {steps}")
    task = task or Task()
    kin = kin or load_kinematics()
    if planner is None:
        settings = settings or PlannerSettings()
        if task.name == "walk":  # no forward target for the feet: they find their steps
            settings.weights = {**settings.weights, "foot_forward": 0.0}
        planner = build_planner(kin, settings)
    st = planner.settings
    N, dt = st.knots, st.dt
    start = initial_state(kin)
    s_ref = start["s"].copy()
    state = {k: v.copy() for k, v in start.items()}
    guess_s, guess_c = _rest_guess(start, N, kin.n_joints)
    lam = None
    rows_s: dict[str, list] = {k: [state[k]] for k in STATE_FIELDS}
    rows_c: dict[str, list] = {k: [] for k in CONTROL_FIELDS}
    solves = []
    for j in range(steps):
        t = (j + np.arange(N)) * dt
        planner.set_parameters(
            state, com_reference(task, t, start), s_ref, start["P"], rest=task.rest(t)
        )
        planner.set_guess(guess_s, guess_c, lam)
        res = planner.solve()
        hf = np.clip(res.states["P"][:, :, 2], 0, None) * np.clip(res.states["F"][:, :, 2], 0, None)
        solves.append(
            {
                "status": res.status,
                "success": res.success,
                "iterations": res.iterations,
                "solve_time_s": res.solve_time_s,
                "cpu_time_s": res.cpu_time_s,
                "max_violation": res.max_violation,
                "accuracy": float(np.mean(hf.sum(axis=1) / 8)),
                "cost": res.cost,
            }
        )
        if progress:
            print(
                f"  solve {j + 1}/{steps}: {res.status} {res.iterations} it "
                f"{res.solve_time_s:.1f} s wall, {res.cpu_time_s:.1f} s CPU, violation "
                f"{res.max_violation:.1e}",
                file=sys.stderr,
                flush=True,
            )
        for k in CONTROL_FIELDS:
            rows_c[k].append(res.controls[k][0])
        state = {k: res.states[k][1].copy() for k in STATE_FIELDS}
        for k in STATE_FIELDS:
            rows_s[k].append(state[k])
        guess_s, guess_c = _shift(res)
        lam = res.lam_g if res.success else None  # a failed solve's multipliers mislead
        last = res
    for k in CONTROL_FIELDS:
        rows_c[k].append(last.controls[k][1])
    states = {k: np.array(v) for k, v in rows_s.items()}
    rotations = np.array(
        [
            [np.array(r) for r in kin.feet(states["p_B"][t], states["rho"][t], states["s"][t])[1:]]
            for t in range(steps + 1)
        ]
    )
    return RecedingResult(
        times=np.arange(steps + 1) * dt,
        states=states,
        controls={k: np.array(v) for k, v in rows_c.items()},
        solves=solves,
        settings=st,
        task=task,
        build_time_s=planner.build_time_s,
        extra={
            "foot_rotations": rotations,
            "joint_names": list(kin.joint_names),
            "point_names": list(kin.point_names),
        },
    )


def run_plan(
    out: str,
    task: str = "step",
    formulation: str = "baumgarte",
    params: dict[str, float] | None = None,
    seconds: float = 4.5,
    knots: int = 10,
    speed: float = 0.1,
    video: str | None = None,
    rest: float | None = 0.3,
    overwrite: bool = False,
    progress: bool = True,
) -> int:
    """``wbsim dcc plan``: plan ``seconds`` of motion, write the plan file (and the video); an
    existing plan file or video is replaced only with ``overwrite`` (checked before the work).
    With ``progress``, a line on stderr per solve.

    ``rest``: the plan ends at rest, its reference still for at least the last ``rest`` s: the
    sway makes as many half-periods as fit (:class:`Task` ``half_periods``; none: the plan
    stands still); ``None``: the sway runs to the end (the plan stops mid-motion, as the plans
    before the end at rest did).

    Returns 0 when every solve succeeded, 1 otherwise (the plan is written either way, its
    ``solve_status`` says which failed).

    Raises:
        WbsimError: bad ``seconds`` or ``rest``; ``out`` not a ``.npz`` or ``video`` not an
            ``.mp4``, either not writable or existing without ``overwrite``: all before any solve.
    """
    from wbsim.errors import check_output_file
    from wbsim.planning import plan_file

    if not str(out).endswith(".npz"):
        raise WbsimError(f"--out must name a .npz file (numpy's archive), got {out!r}")
    check_output_file(out, "plan file", overwrite)
    if video:
        from wbsim.render import check_video_path

        check_video_path(video, overwrite)  # an .mp4, as the video writer wants, before the solves
    if not (np.isfinite(seconds) and 0 < seconds <= 20):
        raise WbsimError(f"--seconds must be in (0, 20], got {seconds}")
    settings = PlannerSettings(
        knots=knots,
        formulation=formulation,  # given params override
        params={**DEFAULT_PARAMS.get(formulation, {}), **(params or {})},
    )
    settings.check()
    steps = round(seconds / settings.dt)
    if steps < 1:
        raise WbsimError(
            f"--seconds {seconds} is under one knot interval ({settings.dt} s): nothing to plan"
        )
    if rest is not None and not (np.isfinite(rest) and rest >= 0):
        raise WbsimError(f"--rest must be a number of seconds >= 0, got {rest}")
    the_task = Task(task, speed=speed)
    if rest is not None:
        room = steps * settings.dt - rest - the_task.settle - the_task.taper / 2
        halves = math.floor(room / (the_task.period / 2) + 1e-9)
        if halves >= 1:
            the_task = Task(task, speed=speed, half_periods=halves)
        else:  # too short for half a sway: stand
            need = rest + the_task.settle + the_task.taper / 2 + the_task.period / 2
            print(
                f"wbsim dcc plan: note: {seconds:g} s hold no half sway after "
                f"{the_task.settle:g} s of standing and before the {rest:g} s at rest (that "
                f"takes {need:g} s or more; --no-rest sways until the end): the plan stands "
                "still, no foot lifts",
                file=sys.stderr,
            )
            the_task = Task(task, speed=0.0, sway=0.0)
    res = run_receding(steps, settings, the_task, progress=progress)
    path = plan_file.save_plan(out, res)
    print(plan_file.summary(plan_file.load_plan(path)))
    if video:
        from wbsim.planning.video import render_plan

        render_plan(path, video)
        print(f"video: {video}")
    return 0 if all(s["success"] for s in res.solves) else 1


#: The comparison's formulations and parameters: the issue's pair (relaxed 0.004, Baumgarte
#: (0.05, 20)) and one more setting of each DCC form (each setting costs minutes on 2 cores).
COMPARE_GRID: list[tuple[str, dict[str, float]]] = [
    ("relaxed", {"eps": 0.004}),
    ("baumgarte", {"eps": 0.05, "K_bs": 20.0}),
    ("baumgarte", {"eps": 0.1, "K_bs": 10.0}),
    ("sech", {"k_h": 500.0, "K_fz": 250.0}),
]


def run_compare(
    json_path: str | None = None,
    task: str = "step",
    steps: int = 20,
    knots: int = 10,
    grid=None,
    overwrite: bool = False,
) -> int:
    """``wbsim dcc compare``: the planner in receding horizon for ``steps`` solves per setting of
    :data:`COMPARE_GRID`; a table (median solve time, iterations, accuracy ``mean(sum_i h_i
    f_z,i / 8)``) and the JSON.

    Raises:
        WbsimError: ``steps`` < 1, ``knots`` outside [3, 40], an unknown task, or ``json_path``
            not writable or existing without ``overwrite``: all before the table's header.
    """
    from wbsim.errors import check_output_file
    from wbsim.jsonfile import write_json

    if not (isinstance(steps, int) and steps >= 1):
        raise WbsimError(f"--steps must be an integer >= 1, got {steps!r}")
    for formulation, params in grid or COMPARE_GRID:  # checked before the header is printed
        PlannerSettings(knots=knots, formulation=formulation, params=dict(params)).check()
    Task(task)
    if json_path:
        check_output_file(json_path, "--json", overwrite)
    kin = load_kinematics()
    rows: list[dict[str, Any]] = []
    print(
        f"{'formulation':<10} {'params':<20} {'status':<18} {'iter':>5} {'time s':>8} "
        f"{'mean h f_n/8':>12} {'max viol':>9} {'L lift':>6} {'R lift':>6}   (median over "
        f"{steps} solves of {knots} knots; accuracy in N m, lifts in mm)",
        flush=True,
    )
    for formulation, params in grid or COMPARE_GRID:
        settings = PlannerSettings(knots=knots, formulation=formulation, params=dict(params))
        res = run_receding(steps, settings, Task(task), kin=kin)
        times = [s["solve_time_s"] for s in res.solves]
        hf = np.clip(res.states["P"][:, :, 2], 0, None) * np.clip(res.states["F"][:, :, 2], 0, None)
        rows.append(
            {
                "formulation": formulation,
                "params": params,
                "steps": steps,
                "knots": knots,
                "status": _status_summary(res.solves),
                "iterations": int(statistics.median(s["iterations"] for s in res.solves)),
                "solve_time_s": float(statistics.median(times)),
                "solve_times_s": times,
                "cpu_time_s": float(statistics.median(s["cpu_time_s"] for s in res.solves)),
                "max_solve_time_s": float(max(times)),
                "accuracy": float(np.mean(hf.sum(axis=1) / 8)),
                "accuracy_per_solve": [s["accuracy"] for s in res.solves],
                "max_violation": float(max(s["max_violation"] for s in res.solves)),
                "max_foot_lift_m": _foot_lifts(res.states["P"]),
                "build_time_s": res.build_time_s,
            }
        )
        print(_row(rows[-1]), flush=True)
    if json_path:
        write_json(json_path, {"task": task, "rows": rows}, indent=1)
    return 0 if all(r["status"].startswith("all ") for r in rows) else 1


def _status_summary(solves) -> str:
    ok = sum(s["success"] for s in solves)
    return f"all {ok} succeeded" if ok == len(solves) else f"{ok}/{len(solves)} succeeded"


def _foot_lifts(P: np.ndarray) -> list[float]:
    """Largest height of each foot's lowest sole point over the run, m."""
    return [float(P[:, :4, 2].min(axis=1).max()), float(P[:, 4:, 2].min(axis=1).max())]


def _row(r) -> str:
    params = ", ".join(f"{k}={v:g}" for k, v in r["params"].items())
    return (
        f"{r['formulation']:<10} {params:<20} {r['status']:<18} {r['iterations']:>5} "
        f"{r['solve_time_s']:>8.2f} {r['accuracy']:>12.3e} {r['max_violation']:>9.1e} "
        f"{1000 * r['max_foot_lift_m'][0]:>6.1f} {1000 * r['max_foot_lift_m'][1]:>6.1f}"
    )
