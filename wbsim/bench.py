"""``wbsim bench``: how fast the simulator, the controllers and the closed loop run, against raw
``mujoco.mj_step`` and Gymnasium's ``Humanoid-v5``, measured in one process and one run.

What is measured (each key is one entry of the JSON and one row of the table; "unit" is what one
timed unit is):

* ``mj_step``: one ``mujoco.mj_step`` of the robot's stand scene (``robot.make_data("stand")``) held
  up by the constant gravity-compensation torques of the stand pose (``gravity_qp`` statics, both
  feet); the state is restored (``mj_setState``) at the start of each block, so the contacts stay
  those of standing. The limit every ratio is taken against.
* ``compute/<controller>[/<option>]``: one ``controller.compute(state, schedule)`` call, on the
  states of a short closed-loop stand (``gravity_qp`` with each installed QP solver of daqp / proxqp
  / osqp, ``projected_id`` variants ``pinv`` and ``qp``, ``pd``).
* ``loop/<controller>/log|nolog``: one step of :func:`wbsim.rollout.run_episode` (controller + env
  step + the rollout's diagnostics + the episode log, or none; no video): ``loop_wall_seconds /
  steps`` of a run of ``seconds`` simulated seconds.
* ``compute/<yours>`` and ``loop/<yours>/log|nolog``: the same for the controller given to
  :func:`run_bench` (``wbsim bench --controller NAME -c key=value``: a built-in name, a plug-in's,
  or ``package.module:Class``), with its options, on the same states and beside the same
  ``mj_step`` blocks as the built-in controllers, so its ratios compare with theirs.
* ``env_step/wbsim``: one ``env.step`` of the robot's stand env (``gym.make``; torque actions, the
  constant gravity-compensation action) at Humanoid-v5's ``frame_skip`` (5), so both wrappers
  spread their per-step Python over the same number of ``mj_step``; ``env_step/wbsim/fs1``: the
  same at wbsim's default ``frame_skip`` 1 (one env step per 2 ms physics step, what the
  controllers in the loop use); ``env_step/humanoid_v5``: one ``env.step`` of Gymnasium's
  ``Humanoid-v5`` (zero torque action); ``env_step/<env>/mj_step``: one raw ``mj_step`` on that
  env's own model and data, replaying the same trajectory (same start state, controls). The three
  envs' blocks are interleaved (:func:`bench_env_pairs`), so the two sides of the target see the
  same stretch of a shared machine.
* ``vec/async_<k>``: one env step of ``gym.make_vec(env, num_envs=k, vectorization_mode="async",
  info_mode="lean")`` (total env steps over wall time); ``vec/full/async_<k>``: the same with the
  full per-step info (state, schedule and contact objects pickled through the pipe each step).
* ``render/<w>x<h>``: one off-screen frame of :class:`wbsim.render.FrameRenderer` with the
  :mod:`wbsim.overlay` geometry (sole points, zero forces, CoM, support polygon).

Statistics of an entry (times in seconds per unit):

* ``median``: the median over the repeated blocks of each block's mean time per unit; every ratio
  uses it (so ratios compare throughputs);
* ``spread``: ``[min, max]`` over the blocks of the same block means;
* ``p95``: 95th percentile of the individual units when each is timed on its own (``p95_of =
  "calls"``: ``mj_step``, ``compute``, env steps, frames), else over the blocks (``"blocks"``);
* ``call_median``: median of the individually timed units (when they are);
* ``rate``: ``1 / median``, units per second;
* ``ratio`` and ``ratio_to``: paired ratios, robust to a machine whose load changes during the run:
  each block of a measurement is paired with a block of its reference timed right next to it
  (``ref_values``: a block of raw ``mj_step`` of the stand scene, or the env's own ``mj_step``
  replay, or the 1-worker vector env), ``block_ratios`` are the per-block ratios and ``ratio`` is
  their median (``ratio_spread``: min, max). So ``ratio`` is close to, but not exactly,
  ``median / mj_step median``;
* ``cpu_median``, ``cpu_spread``, ``cpu_ratio`` (with ``cpu_block_ratios``, ``cpu_ref_values``):
  the same figures in CPU time of this process (``time.process_time``), which time spent waiting
  for the CPU while other processes run does not inflate; so on a shared machine the CPU ratios are
  the steadier ones. In-process entries only (not ``vec``, not ``render``). For the closed loop it
  is the CPU time of the loop (``loop_cpu_seconds`` of the summary), per physics step;
* ``target`` (text), ``target_value`` and ``pass`` (``True`` / ``False``, ``None`` without target),
  judged on the wall-clock ``ratio`` (the issue's figure); ``cpu_pass`` judges ``cpu_ratio``.

* ``lean/gravity_qp``: one step of a hand-written loop with nothing but the work itself: read the
  state (``Robot.mj_to_pin``), ``gravity_qp`` compute, write the torque, ``mj_step``. What the
  closed loop's glue is measured against.
* ``multirate/<controller>/k<k>/<low level>``: :func:`wbsim.rollout.run_episode` (with its log)
  with the controller every ``k`` physics steps (``frame_skip``), between them its torque held
  (``hold``) or its joint PD run at every physics step (``pd``): the cost of one simulated second
  against that of raw ``mj_step`` (``ratio``: loop wall time per physics step over ``mj_step``).

Targets (the lead's goals, judged on the figures of this run, never in a test): ``gravity_qp``
(points model, fastest solver) ``compute`` <= 2 ``mj_step``; ``projected_id`` (``qp``)
``compute`` <= 5; the ``gravity_qp`` closed loop with logging <= 4 ``mj_step``; the
``projected_id`` (``qp``) closed loop with logging <= 8 ``mj_step``;
the wbsim env-step overhead ratio (``env.step / (own mj_step * frame_skip)``) <= Humanoid-v5's;
2 async workers >= 1.7x the throughput of 1.

Timing: ``time.perf_counter`` (wall clock: a busy machine inflates every absolute figure, the
table warns when the load average exceeds the usable CPUs; the paired ratios suffer much less); one
untimed warm-up block before each measurement; the garbage collector stays on (it is part of what a
user sees). Optional parts that cannot run (a controller that does not import, no OpenGL for the
renderer, ...) are skipped with the reason in ``skipped``; the bench still exits 0. ``quick`` runs
few, short blocks (a smoke test, not figures).
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import mujoco
import numpy as np

from wbsim.errors import WbsimError
from wbsim.jsonfile import write_json

if TYPE_CHECKING:
    from wbsim.envs.humanoid import HumanoidEnv

__all__ = [
    "FULL",
    "QP_SOLVERS",
    "QUICK",
    "TARGETS",
    "BenchSettings",
    "MjStepReference",
    "format_table",
    "machine_info",
    "measure",
    "paired_ratio",
    "run_bench",
]

#: The QP solvers benchmarked for ``gravity_qp`` (those installed).
QP_SOLVERS = ("daqp", "proxqp", "osqp")

#: Target name -> (text, value). Values are ratios (see the module docstring).
TARGETS: dict[str, tuple[str, float]] = {
    "gravity_qp_compute": ("<= 2x mj_step", 2.0),
    "projected_id_qp_compute": ("<= 5x mj_step", 5.0),
    "gravity_qp_loop_log": ("<= 4x mj_step", 4.0),
    "projected_id_qp_loop_log": ("<= 8x mj_step", 8.0),
    "env_step_overhead": ("<= Humanoid-v5's overhead ratio", math.nan),
    "async_scaling": (">= 1.7x 1 worker", 1.7),
}


@dataclass(frozen=True)
class BenchSettings:
    """Repetitions and sizes of the blocks (``*_blocks`` blocks of ``*_steps`` units each)."""

    mj_blocks: int = 40
    mj_steps: int = 200  # 0.4 s at 2 ms: the open-loop stand stays up (< 1 mm)
    states: int = 200  # closed-loop states the controllers are timed on (one block)
    ctrl_blocks: int = 10
    loop_seconds: float = 2.0
    loop_repeats: int = 5
    lean_blocks: int = 10
    multirate_seconds: float = 2.0
    multirate_repeats: int = 3
    env_blocks: int = 20
    env_steps: int = 200  # wbsim mj_steps per block (env steps x frame_skip)
    humanoid_steps: int = 40  # Humanoid-v5 env steps per block (frame_skip 5: 200 mj_steps)
    vec_blocks: int = 6
    vec_steps: int = 150
    render_blocks: int = 8
    render_frames: int = 10
    width: int = 640
    height: int = 480


#: The full bench (about a minute or two on 2 cores).
FULL = BenchSettings()
#: ``--quick``: few, short blocks (seconds): checks the bench runs; its figures are rough.
QUICK = BenchSettings(
    mj_blocks=4,
    mj_steps=100,
    states=30,
    ctrl_blocks=2,
    loop_seconds=0.2,
    loop_repeats=2,
    lean_blocks=2,
    multirate_seconds=0.1,
    multirate_repeats=1,
    env_blocks=3,
    env_steps=40,
    humanoid_steps=10,
    vec_blocks=2,
    vec_steps=20,
    render_blocks=2,
    render_frames=2,
)


# ------------------------------------------------------------------------------------------------
# statistics
# ------------------------------------------------------------------------------------------------
def measure(
    what: str,
    per: str,
    block_values: Sequence[float],
    calls: Sequence[float] | None = None,
    cpu_values: Sequence[float] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """An entry from per-block mean wall times per unit (s), the unit times if each unit was timed,
    and the per-block mean CPU times per unit (s) if measured."""
    blocks = np.asarray(block_values, dtype=float)
    if blocks.size == 0 or not np.all(np.isfinite(blocks)) or np.any(blocks <= 0):
        raise WbsimError(f"bench {what}: no valid timing ({blocks.tolist()})")
    median = float(np.median(blocks))
    entry: dict[str, Any] = {
        "what": what,
        "per": per,
        "unit": f"s per {per}",
        "median": median,
        "spread": [float(blocks.min()), float(blocks.max())],
    }
    if calls is not None and len(calls):
        c = np.asarray(calls, dtype=float)
        entry.update(
            p95=float(np.percentile(c, 95)),
            p95_of="calls",
            call_median=float(np.median(c)),
            n_calls=int(c.size),
        )
    else:
        entry.update(p95=float(np.percentile(blocks, 95)), p95_of="blocks")
    entry.update(
        rate=1.0 / median,
        n_blocks=int(blocks.size),
        block_values=blocks.tolist(),
        ratio=None,
        ratio_to=None,
        target=None,
        target_value=None,
        **{"pass": None},
    )
    if cpu_values is not None:
        cpu = np.asarray(cpu_values, dtype=float)
        if cpu.size == blocks.size and np.all(np.isfinite(cpu)) and np.all(cpu > 0):
            entry.update(
                cpu_median=float(np.median(cpu)),
                cpu_spread=[float(cpu.min()), float(cpu.max())],
                cpu_block_values=cpu.tolist(),
            )
    entry.update(extra)
    return entry


def paired_ratio(
    entry: dict[str, Any],
    numerator: Sequence[float],
    denominator: Sequence[float],
    to: str,
    ref_values: Sequence[float] | None = None,
    cpu: bool = False,
) -> None:
    """Set ``entry["ratio"]`` (``entry["cpu_ratio"]`` with ``cpu``) to the median of the per-block
    ratios ``numerator / denominator``; with ``cpu``, a missing or bad CPU figure sets nothing."""
    p = "cpu_" if cpu else ""
    r = np.asarray(numerator, dtype=float) / np.asarray(denominator, dtype=float)
    if r.size == 0 or not np.all(np.isfinite(r)) or np.any(r <= 0):
        if cpu:
            return
        raise WbsimError(f"bench {entry['what']}: no valid ratio ({r.tolist()})")
    entry.update(
        {
            f"{p}ratio": float(np.median(r)),
            f"{p}block_ratios": r.tolist(),
            f"{p}ratio_spread": [float(r.min()), float(r.max())],
        }
    )
    entry["ratio_to"] = to
    if ref_values is not None:
        entry[f"{p}ref_values"] = [float(x) for x in ref_values]


def _target(
    entry: dict[str, Any],
    key: str,
    value: float | None = None,
    cpu_value: float | None = None,
    at_least: bool = False,
) -> None:
    """Judge ``entry["ratio"]`` against the target ``key`` (``pass``); ``cpu_pass`` judges
    ``entry["cpu_ratio"]`` the same way (against ``cpu_value`` when the target is relative)."""
    text, default = TARGETS[key]
    value = default if value is None else value
    cpu_value = value if cpu_value is None else cpu_value

    def ok(ratio: float, v: float) -> bool:
        return bool(ratio >= v if at_least else ratio <= v)

    entry["target"], entry["target_value"] = text, float(value)
    entry["pass"] = ok(entry["ratio"], value)
    if entry.get("cpu_ratio") is not None and math.isfinite(cpu_value):
        entry["cpu_target_value"] = float(cpu_value)
        entry["cpu_pass"] = ok(entry["cpu_ratio"], cpu_value)


# ------------------------------------------------------------------------------------------------
# machine
# ------------------------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _load() -> list[float] | None:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def machine_info() -> dict[str, Any]:
    """Platform, CPU, CPU count (and usable CPUs), load, Python, library versions, date."""
    import gymnasium
    import pinocchio
    import qpsolvers

    import wbsim

    usable: int | None
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count()
    return {
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "python": platform.python_version(),
        "mujoco": mujoco.__version__,
        "numpy": np.__version__,
        "gymnasium": gymnasium.__version__,
        "pinocchio": pinocchio.__version__,
        "qpsolvers": qpsolvers.__version__,
        "wbsim": wbsim.__version__,
        "load_average": _load(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


# ------------------------------------------------------------------------------------------------
# pieces
# ------------------------------------------------------------------------------------------------
def _stand_env_id(robot_name: str) -> str:
    from wbsim.envs import ENV_IDS

    for env_id, kwargs in ENV_IDS.items():
        if kwargs.get("robot") == robot_name and env_id.endswith("Stand-v0"):
            return env_id
    stands = [e for e in ENV_IDS if e.endswith("Stand-v0")]
    raise WbsimError(f"no stand env for robot {robot_name!r}; stand envs: {', '.join(stands)}")


def _holding_torque(robot) -> np.ndarray:
    """Gravity-compensation torques ``(n_joints,)`` N·m of the stand pose, all feet (gravity_qp)."""
    from wbsim.controllers.gravity_qp import GravityCompensationQP

    res = GravityCompensationQP(robot).solve(robot.pose_q("stand"), list(robot.feet))
    tau = np.asarray(res.tau_array, dtype=float)
    if not np.all(np.isfinite(tau)):
        raise WbsimError(f"bench: no gravity-compensation torque at the stand pose ({res.status})")
    return tau


def _get_state(model, data) -> np.ndarray:
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    state = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, state, spec)
    return state


def _set_state(model, data, state: np.ndarray) -> None:
    mujoco.mj_setState(model, data, state, mujoco.mjtState.mjSTATE_INTEGRATION)


class MjStepReference:
    """Raw ``mj_step`` of the stand scene held by constant torques ``tau``: the reference of every
    ratio. Each block starts from the same state (``mj_setState``), so the contacts stay those of
    standing (the open-loop stand is unstable but moves < 1 mm in 0.4 s)."""

    def __init__(self, robot, tau: np.ndarray, steps: int):
        self.model = robot.mj_model
        self.data = robot.make_data("stand")
        self.data.ctrl[:] = tau
        self.start = _get_state(self.model, self.data)
        self.steps = steps
        self.z0 = float(self.data.qpos[2])

    def sample(self) -> tuple[float, float]:
        """Mean wall time and mean CPU time of one ``mj_step`` over one block, s."""
        model, data, step = self.model, self.data, mujoco.mj_step
        _set_state(model, data, self.start)
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(self.steps):
            step(model, data)
        c1, t1 = time.process_time(), time.perf_counter()
        return (t1 - t0) / self.steps, (c1 - c0) / self.steps

    def measure(self, blocks: int) -> dict[str, Any]:
        """The ``mj_step`` entry: blocks of individually timed steps (one warm-up block first)."""
        model, data, step, clock = self.model, self.data, mujoco.mj_step, time.perf_counter
        calls: list[float] = []
        means: list[float] = []
        cpus: list[float] = []
        ncon_min, ncon_max, dz_max = 10**9, 0, 0.0
        for b in range(blocks + 1):
            _set_state(model, data, self.start)
            times = np.empty(self.steps)
            c0 = time.process_time()
            for i in range(self.steps):
                t0 = clock()
                step(model, data)
                times[i] = clock() - t0
                ncon_min, ncon_max = min(ncon_min, data.ncon), max(ncon_max, data.ncon)
            cpu = (time.process_time() - c0) / self.steps
            dz_max = max(dz_max, abs(float(data.qpos[2]) - self.z0))
            if b:  # block 0 is the warm-up
                calls.extend(times.tolist())
                means.append(float(times.mean()))
                cpus.append(cpu)
        e = measure(
            "mj_step, stand pose, constant gravity-compensation torques",
            "step",
            means,
            calls,
            cpus,
            per_block=self.steps,
            timestep=float(model.opt.timestep),
            contacts=[ncon_min, ncon_max],
            max_base_z_change_m=dz_max,
        )
        e.update(ratio=1.0, ratio_to="mj_step", cpu_ratio=1.0)
        return e


def _record_states(env_id: str, n: int) -> list[tuple[Any, Any]]:
    """``n`` (state, schedule) pairs of the stand env under gravity_qp (closed-loop inputs)."""
    from wbsim.controllers import make_controller
    from wbsim.envs import make as make_env

    env = make_env(env_id, max_seconds=1e6)
    try:
        uenv = cast("HumanoidEnv", env.unwrapped)
        ctrl = make_controller("gravity_qp", uenv.robot)
        conv = uenv.robot.converter
        _, info = env.reset(seed=0)
        ctrl.reset(info["state"])
        pairs = []
        for _ in range(n):
            pairs.append((info["state"], info["schedule"]))
            state = info["state"]
            cmd = ctrl.compute(state, info["schedule"])
            tau = cmd.torque_at(state.q[conv.pin_qidx], state.v[conv.pin_vidx])
            _, _, terminated, _, info = env.step(uenv.torque_to_action(tau))
            if terminated:
                break
        return pairs
    finally:
        env.close()


def bench_controller(
    what: str, controller, pairs: Sequence[tuple[Any, Any]], blocks: int, ref: MjStepReference
) -> dict[str, Any]:
    """Per-call time of ``controller.compute`` over ``pairs`` (reset before each block)."""
    clock = time.perf_counter
    calls: list[float] = []
    means: list[float] = []
    cpus: list[float] = []
    refs: list[tuple[float, float]] = []
    feasible = fallbacks = 0
    for b in range(blocks + 1):
        controller.reset(pairs[0][0])
        if b:
            refs.append(ref.sample())
        times = np.empty(len(pairs))
        c0 = time.process_time()
        for i, (state, schedule) in enumerate(pairs):
            t0 = clock()
            cmd = controller.compute(state, schedule)
            times[i] = clock() - t0
            if b:
                feasible += bool(cmd.feasible)
                fallbacks += bool(cmd.fallback)
        cpu = (time.process_time() - c0) / len(pairs)
        if b:
            calls.extend(times.tolist())
            means.append(float(times.mean()))
            cpus.append(cpu)
    e = measure(
        what,
        "call",
        means,
        calls,
        cpus,
        per_block=len(pairs),
        feasible_fraction=feasible / len(calls),
        fallback_fraction=fallbacks / len(calls),
    )
    _paired_with_reference(e, means, cpus, refs)
    return e


def _paired_with_reference(
    entry: dict[str, Any],
    walls: Sequence[float],
    cpus: Sequence[float],
    refs: Sequence[tuple[float, float]],
) -> None:
    ref_wall, ref_cpu = [r[0] for r in refs], [r[1] for r in refs]
    paired_ratio(entry, walls, ref_wall, "mj_step", ref_wall)
    paired_ratio(entry, cpus, ref_cpu, "mj_step", ref_cpu, cpu=True)


def bench_loop(
    env_id: str,
    controller: str,
    options: dict[str, Any],
    log: bool,
    s: BenchSettings,
    tmp: Path,
    ref: MjStepReference,
    frame_skip: int = 1,
    low_level: str = "pd",
    seconds: float | None = None,
    repeats: int | None = None,
) -> dict[str, Any]:
    """Time per physics step of :func:`run_episode` (``loop_wall_seconds / steps /
    frame_skip``), with or without a log, the controller every ``frame_skip`` physics steps;
    one warm-up run first."""
    from wbsim.rollout import EpisodeConfig, run_episode

    seconds = s.loop_seconds if seconds is None else seconds
    repeats = s.loop_repeats if repeats is None else repeats

    def run(seconds: float) -> dict[str, Any]:
        folder = tmp / f"{controller}-{len(options)}-{log}-{time.monotonic_ns()}"
        cfg = EpisodeConfig(
            env=env_id,
            controller=controller,
            controller_options=options,
            seconds=seconds,
            log=folder if log else None,
            progress=False,
            env_options={"frame_skip": frame_skip},
            low_level=low_level,
        )
        summary = run_episode(cfg)
        if summary["steps"] == 0:
            raise WbsimError(f"bench: {controller} ran no step ({summary['stopped_reason']})")
        return summary

    warm = run(min(0.2, seconds))  # warm-up
    dt = warm["seconds"] / warm["steps"]
    per_step, cpus, refs, fell, steps = [], [], [], False, 0
    for _ in range(repeats):
        refs.append(ref.sample())
        summary = run(seconds)
        n = int(summary["steps"])
        per_step.append(summary["loop_wall_seconds"] / n / frame_skip)
        cpus.append(summary["loop_cpu_seconds"] / n / frame_skip)
        fell = fell or bool(summary["fell"])
        steps += n
    opts = "".join(f" {k}={v}" for k, v in options.items())
    rate = "" if frame_skip == 1 else f", controller every {frame_skip} physics steps ({low_level})"
    e = measure(
        f"closed loop run_episode {env_id} {controller}{opts}, "
        f"{'logging' if log else 'no log'}{rate}",
        "physics step",
        per_step,
        None,
        cpus,
        per_block=steps // repeats,
        env_dt=dt,
        frame_skip=frame_skip,
        low_level=low_level,
        realtime_factor=dt / frame_skip / float(np.median(per_step)),
        fell=fell,
    )
    _paired_with_reference(e, per_step, cpus, refs)
    return e


def bench_lean_loop(robot, controller, s: BenchSettings, ref: MjStepReference) -> dict[str, Any]:
    """Time per step of the leanest loop: ``mj_to_pin``, ``controller.compute``, the torque
    (``Command.torque_at``) into ``ctrl``, ``mj_step``; from the stand pose, each block from the
    same state."""
    from wbsim.types import STANDING, RobotState

    model, data = robot.mj_model, robot.make_data("stand")
    start = _get_state(model, data)
    qadr, vadr = robot.converter.mj_qadr, robot.converter.mj_vadr
    means, cpus, refs = [], [], []
    for b in range(s.lean_blocks + 1):
        _set_state(model, data, start)
        mujoco.mj_forward(model, data)
        q, v = robot.mj_to_pin(data.qpos, data.qvel)
        controller.reset(RobotState(float(data.time), q, v))
        if b:
            refs.append(ref.sample())
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(s.mj_steps):
            q, v = robot.mj_to_pin(data.qpos, data.qvel)
            cmd = controller.compute(RobotState(float(data.time), q, v), STANDING)
            data.ctrl[:] = cmd.torque_at(data.qpos[qadr], data.qvel[vadr])
            mujoco.mj_step(model, data)
        c1, t1 = time.process_time(), time.perf_counter()
        if b:
            means.append((t1 - t0) / s.mj_steps)
            cpus.append((c1 - c0) / s.mj_steps)
    e = measure(
        f"lean hand-written loop: state, {controller.name} compute, torque, mj_step",
        "step",
        means,
        None,
        cpus,
        per_block=s.mj_steps,
    )
    _paired_with_reference(e, means, cpus, refs)
    return e


def _env_pair_block(env, action: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    """One block of :func:`bench_env_pairs`: ``n`` individually timed ``env.step(action)`` from
    ``reset(seed=0)``, then the same trajectory replayed with raw ``mj_step`` on the env's model
    and data (same start state, same controls). Returns the env-step times ``(n,)``, the
    ``mj_step`` times ``(n * frame_skip,)`` (s) and the CPU seconds of each part."""
    uenv = env.unwrapped
    model, data = uenv.model, uenv.data
    fs = int(uenv.frame_skip)
    clock, step, cpu_clock = time.perf_counter, mujoco.mj_step, time.process_time
    env.reset(seed=0)
    start = _get_state(model, data)
    times = np.empty(n)
    ctrls = np.empty((n, model.nu))
    c0 = cpu_clock()
    for i in range(n):
        t0 = clock()
        env.step(action)
        times[i] = clock() - t0
        ctrls[i] = data.ctrl
    c1 = cpu_clock()
    _set_state(model, data, start)
    raw = np.empty(n * fs)
    for i in range(n):
        data.ctrl[:] = ctrls[i]
        for k in range(fs):
            t0 = clock()
            step(model, data)
            raw[i * fs + k] = clock() - t0
    c2 = cpu_clock()
    return times, raw, c1 - c0, c2 - c1


def bench_env_pairs(
    runs: Sequence[tuple[Any, np.ndarray, int]], blocks: int, optional: Sequence[int] = ()
) -> list[tuple[dict[str, Any], dict[str, Any]] | Exception]:
    """For each ``(env, action, n)`` of ``runs``: blocks of ``n`` individually timed
    ``env.step(action)``, each followed by the same trajectory replayed with raw ``mj_step``
    (:func:`_env_pair_block`), the envs' blocks interleaved (block 1 of every env, then block 2,
    ...), so that every env sees the same stretch of a shared, noisy machine. Returns, per env, the
    ``env.step`` entry, whose ratio is the overhead ratio ``env.step / (own mj_step *
    frame_skip)`` (paired per block), and the raw entry. A run whose index is in ``optional`` and
    that raises is dropped from the later blocks; its place in the result holds the exception (the
    others go on); any other run's exception propagates."""
    # per run: env.step call times and block means, mj_step call times and block means, env.step
    # CPU and mj_step CPU per block
    acc: list[tuple[list[float], ...]] = [([], [], [], [], [], []) for _ in runs]
    failed: dict[int, Exception] = {}
    for b in range(blocks + 1):  # block 0 warms up
        for k, ((env, action, n), (e_calls, e_means, m_calls, m_means, e_cpu, m_cpu)) in enumerate(
            zip(runs, acc)
        ):
            if k in failed:
                continue
            try:
                times, raw, cpu_env, cpu_raw = _env_pair_block(env, action, n)
            except Exception as exc:  # an optional run: reported by the caller
                if k not in optional:
                    raise
                failed[k] = exc
                continue
            if b:
                e_calls.extend(times.tolist())
                e_means.append(float(times.mean()))
                m_calls.extend(raw.tolist())
                m_means.append(float(raw.mean()))
                e_cpu.append(cpu_env / n)
                m_cpu.append(cpu_raw / raw.size)
    out: list[tuple[dict[str, Any], dict[str, Any]] | Exception] = []
    for k, ((env, action, n), (e_calls, e_means, m_calls, m_means, e_cpu, m_cpu)) in enumerate(
        zip(runs, acc)
    ):
        if k in failed:
            out.append(failed[k])
            continue
        uenv = env.unwrapped
        fs = int(uenv.frame_skip)
        env_id = env.spec.id if getattr(env, "spec", None) is not None else type(uenv).__name__
        raw_e = measure(
            f"raw mj_step on {env_id}'s model and data (same trajectory)",
            "step",
            m_means,
            m_calls,
            m_cpu,
            per_block=n * fs,
            timestep=float(uenv.model.opt.timestep),
        )
        e = measure(
            f"env.step of {env_id} (gym.make), torque actions, frame_skip {fs}",
            "env step",
            e_means,
            e_calls,
            e_cpu,
            per_block=n,
            frame_skip=fs,
        )
        to = "own mj_step x frame_skip"
        paired_ratio(e, e_means, [m * fs for m in m_means], to, [m * fs for m in m_means])
        paired_ratio(e, e_cpu, [m * fs for m in m_cpu], to, [m * fs for m in m_cpu], cpu=True)
        out.append((e, raw_e))
    return out


def bench_vec(
    env_id: str,
    action: np.ndarray,
    s: BenchSettings,
    ref: MjStepReference,
    info_mode: str = "lean",
    frame_skip: int = 1,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Total env steps per second of ``gym.make_vec(env_id, num_envs=k, "async",
    info_mode=info_mode, frame_skip=frame_skip)`` for k = 1, 2, their blocks interleaved (so the
    2-worker speed-up is paired per block). ``"lean"`` is the info recommended for vector envs (what
    crosses the pipe is ~150 bytes instead of ~3.8 kB of state, schedule and contact objects).

    The speed-up is bounded by Gymnasium's per-step machinery and the machine's inter-process
    wake-ups (on a 2-vCPU VM ~150-180 us per cross-CPU pipe round trip, ~150-270 us of main-process
    CPU per vector step), not by the env: the more physics per env step (``frame_skip``), the
    closer to 2x."""
    import gymnasium as gym

    venvs = {}
    try:
        for k in (1, 2):
            venvs[k] = gym.make_vec(
                env_id,
                num_envs=k,
                vectorization_mode="async",
                info_mode=info_mode,
                frame_skip=frame_skip,
            )
        acts = {k: np.tile(np.asarray(action, dtype=np.float32), (k, 1)) for k in venvs}
        clock = time.perf_counter
        per_step: dict[int, list[float]] = {1: [], 2: []}
        refs = []
        for b in range(s.vec_blocks + 1):
            if b:
                refs.append(ref.sample())
            for k, venv in venvs.items():
                venv.reset(seed=0)  # each block from the stand pose: no fall, no autoreset
                t0 = clock()
                for _ in range(s.vec_steps):
                    venv.step(acts[k])
                if b:
                    per_step[k].append((clock() - t0) / (k * s.vec_steps))
    finally:
        for venv in venvs.values():
            venv.close()
    e = {
        k: measure(
            f"gym.make_vec({env_id}, num_envs={k}, async, info_mode={info_mode!r}, "
            f"frame_skip={frame_skip}): total env steps",
            "env step",
            per_step[k],
            None,
            per_block=k * s.vec_steps,
            num_envs=k,
            frame_skip=frame_skip,
        )
        for k in (1, 2)
    }
    paired_ratio(e[1], per_step[1], [r[0] for r in refs], "mj_step", [r[0] for r in refs])
    paired_ratio(e[2], per_step[1], per_step[2], "throughput of 1 worker", per_step[1])
    return e[1], e[2]


def bench_render(robot, s: BenchSettings) -> dict[str, Any]:
    """Frames per second of :class:`FrameRenderer` with the overlay geometry."""
    from wbsim.contacts import sole_points_in_world, support_polygon
    from wbsim.overlay import OverlayData, draw_geoms
    from wbsim.render import FrameRenderer

    data = robot.make_data("stand")
    points = sole_points_in_world(robot, data)
    n = len(points)
    overlay = OverlayData(
        points=points,
        modes=np.ones(n, dtype=int),
        f_cmd=np.zeros((n, 3)),
        f_sim=np.zeros((n, 3)),
        violating=np.zeros(n, dtype=bool),
        com=data.subtree_com[1].copy(),
        support=support_polygon(robot, data),
    )

    def draw(scene, _data):
        draw_geoms(scene, overlay)

    renderer = FrameRenderer(robot.mj_model, s.width, s.height)
    clock = time.perf_counter
    try:
        calls, means = [], []
        for b in range(s.render_blocks + 1):
            times = np.empty(s.render_frames)
            for i in range(s.render_frames):
                t0 = clock()
                frame = renderer.render(data, overlay=draw)
                times[i] = clock() - t0
            if b:
                calls.extend(times.tolist())
                means.append(float(times.mean()))
        shape = list(frame.shape)
    finally:
        renderer.close()
    return measure(
        f"off-screen frame {s.width}x{s.height} with overlay",
        "frame",
        means,
        calls,
        per_block=s.render_frames,
        frame_shape=shape,
        mujoco_gl=os.environ.get("MUJOCO_GL", ""),
    )


# ------------------------------------------------------------------------------------------------
# the run
# ------------------------------------------------------------------------------------------------
def _note(msg: str) -> None:
    print(f"wbsim bench: {msg}", file=sys.stderr, flush=True)


def _collect(
    robot_name: str,
    s: BenchSettings,
    progress: bool = True,
    controller: str | None = None,
    controller_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The bench's figures; with ``progress``, a line on stderr as each stage starts (the notes
    on skipped or clipped parts are printed either way); ``controller`` (with its options) is
    measured too (:func:`run_bench`)."""
    import gymnasium as gym
    import qpsolvers

    import wbsim
    from wbsim.controllers import make_controller

    robot = wbsim.load_robot(robot_name)
    env_id = _stand_env_id(robot.name)
    result: dict[str, Any] = {
        "machine": machine_info(),
        "settings": {"robot": robot.name, "env": env_id, "quick": s == QUICK, **asdict(s)},
    }
    skipped: dict[str, str] = {}
    stage = _note if progress else lambda what: None

    def optional(key: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001  an optional measurement: note why, go on
            skipped[key] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            _note(f"skipped {key}: {skipped[key]}")
            return None

    tau = _holding_torque(robot)
    ref = MjStepReference(robot, tau, s.mj_steps)
    stage("mj_step")
    result["mj_step"] = ref.measure(s.mj_blocks)

    # -- controllers ------------------------------------------------------------------------------
    stage("controllers")
    pairs = _record_states(env_id, s.states)
    solvers = [x for x in QP_SOLVERS if x in qpsolvers.available_solvers]
    runs = [
        (
            f"compute/gravity_qp/{x}",
            f"gravity_qp compute, points model, solver {x}",
            "gravity_qp",
            {"contact_model": "points", "solver": x},
        )
        for x in solvers
    ]
    runs += [
        (
            f"compute/projected_id/{v}",
            f"projected_id compute, variant {v}",
            "projected_id",
            {"variant": v},
        )
        for v in ("pinv", "qp")
    ]
    runs += [("compute/pd", "pd compute", "pd", {})]

    def controller_entry(what, name, options):
        return bench_controller(
            what, make_controller(name, robot, **options), pairs, s.ctrl_blocks, ref
        )

    for key, what, name, options in runs:
        e = optional(key, controller_entry, what, name, options)
        if e is not None:
            result[key] = e
    gq = [f"compute/gravity_qp/{x}" for x in solvers if f"compute/gravity_qp/{x}" in result]
    if gq:
        _target(result[min(gq, key=lambda k: result[k]["median"])], "gravity_qp_compute")
    if "compute/projected_id/qp" in result:
        _target(result["compute/projected_id/qp"], "projected_id_qp_compute")
    if controller is not None:  # the user's own: not optional, an error is theirs to see
        options = dict(controller_options or {})
        opts = "".join(f" {k}={v}" for k, v in options.items())
        stage(f"controller {controller}{opts}")
        result[f"compute/{controller}"] = bench_controller(
            f"{controller} compute{opts}",
            make_controller(controller, robot, **options),
            pairs,
            s.ctrl_blocks,
            ref,
        )
        with tempfile.TemporaryDirectory(prefix="wbsim-bench-") as tmp:
            for log in (True, False):
                result[f"loop/{controller}/{'log' if log else 'nolog'}"] = bench_loop(
                    env_id, controller, options, log, s, Path(tmp), ref
                )
    stage("lean loop")
    e = optional(
        "lean/gravity_qp", bench_lean_loop, robot, make_controller("gravity_qp", robot), s, ref
    )
    if e is not None:
        result["lean/gravity_qp"] = e

    # -- closed loop ------------------------------------------------------------------------------
    stage("closed loop")
    loops = [
        ("gravity_qp", "gravity_qp", {}, "gravity_qp_loop_log"),
        ("projected_id/qp", "projected_id", {"variant": "qp"}, "projected_id_qp_loop_log"),
    ]
    with tempfile.TemporaryDirectory(prefix="wbsim-bench-") as tmp:
        for label, name, options, target in loops:
            if name == "projected_id" and "compute/projected_id/qp" in skipped:
                skipped[f"loop/{label}"] = "projected_id did not run (see compute/projected_id/qp)"
                continue
            for log in (True, False):
                key = f"loop/{label}/{'log' if log else 'nolog'}"
                e = optional(key, bench_loop, env_id, name, options, log, s, Path(tmp), ref)
                if e is not None:
                    if log:
                        _target(e, target)
                    result[key] = e
        stage("multi-rate loops")
        for label, name, options, _ in loops:
            if f"loop/{label}/log" not in result:
                continue
            for k in (1, 2, 5):
                for low_level in ("pd",) if k == 1 else ("hold", "pd"):
                    key = f"multirate/{label}/k{k}/{low_level}"
                    e = optional(
                        key,
                        bench_loop,
                        env_id,
                        name,
                        options,
                        True,
                        s,
                        Path(tmp),
                        ref,
                        frame_skip=k,
                        low_level=low_level,
                        seconds=s.multirate_seconds,
                        repeats=s.multirate_repeats,
                    )
                    if e is not None:
                        result[key] = e

    # -- env.step against Humanoid-v5 -----------------------------------------------------------
    # Humanoid-v5 made first, for its frame_skip: the target compares wbsim at the same frame_skip
    # (the Python cost of one env step is spread over the same number of mj_steps); wbsim's own
    # default (frame_skip 1, one env step per 2 ms physics step) is measured too.
    stage("env.step")
    from wbsim.envs import make as make_env

    henv = optional("env_step/humanoid_v5", gym.make, "Humanoid-v5")
    peer_fs = int(henv.unwrapped.frame_skip) if henv is not None else 5
    env_runs, keys, envs = [], [], []
    try:
        if henv is not None:
            envs.append(henv)
            env_runs.append(
                (henv, np.zeros(henv.action_space.shape, dtype=np.float32), s.humanoid_steps)
            )
            keys.append("env_step/humanoid_v5")
        action = None
        for fs in sorted({1, peer_fs}):
            env = make_env(env_id, max_seconds=1e6, frame_skip=fs)
            envs.append(env)
            action = cast("HumanoidEnv", env.unwrapped).torque_to_action(tau)
            if fs == 1 and np.any(np.abs(action) > 1.0):
                _note("the holding torque exceeds an effort limit; its action is clipped")
            env_runs.append((env, action, max(1, s.env_steps // fs)))
            keys.append("env_step/wbsim" if fs == peer_fs else f"env_step/wbsim/fs{fs}")
        # the envs' blocks interleaved: wbsim and Humanoid-v5 see the same stretch of the machine
        env_pairs = dict(
            zip(
                keys,
                bench_env_pairs(
                    env_runs,
                    s.env_blocks,
                    optional=[keys.index("env_step/humanoid_v5")]
                    if "env_step/humanoid_v5" in keys
                    else (),
                ),
            )
        )
        for key in sorted(env_pairs, key=lambda k: k.startswith("env_step/humanoid")):  # wbsim 1st
            pair = env_pairs[key]
            if isinstance(pair, Exception):  # the peer failed part-way: note, go on
                skipped[key] = f"{type(pair).__name__}: {pair}".splitlines()[0][:300]
                _note(f"skipped {key}: {skipped[key]}")
                continue
            result[key], result[f"{key}/mj_step"] = pair
    finally:
        for env in envs:
            env.close()
    if "env_step/humanoid_v5" in result:
        peer = result["env_step/humanoid_v5"]
        _target(
            result["env_step/wbsim"],
            "env_step_overhead",
            value=peer["ratio"],
            cpu_value=peer.get("cpu_ratio", math.nan),
        )

    # -- vectorised -----------------------------------------------------------------------------
    stage("vector envs")
    vec = optional("vec", bench_vec, env_id, action, s, ref)
    if vec is not None:
        result["vec/async_1"], result["vec/async_2"] = vec
        _target(result["vec/async_2"], "async_scaling", at_least=True)
    vec = optional("vec/full", bench_vec, env_id, action, s, ref, info_mode="full")
    if vec is not None:
        result["vec/full/async_1"], result["vec/full/async_2"] = vec
    # at the peer's frame_skip (as env_step): more physics per pipe round trip
    vec = optional(f"vec/fs{peer_fs}", bench_vec, env_id, action, s, ref, frame_skip=peer_fs)
    if vec is not None:
        result[f"vec/fs{peer_fs}/async_1"], result[f"vec/fs{peer_fs}/async_2"] = vec

    # -- rendering ------------------------------------------------------------------------------
    stage("rendering")
    e = optional(f"render/{s.width}x{s.height}", bench_render, robot, s)
    if e is not None:
        result[f"render/{s.width}x{s.height}"] = e

    result["machine"]["load_average_end"] = _load()
    result["skipped"] = skipped
    by_text = {text: name for name, (text, _) in TARGETS.items()}
    result["targets"] = {
        by_text[v["target"]]: {
            "entry": key,
            "measured": v["ratio"],
            "target": v["target"],
            "target_value": v["target_value"],
            "pass": v["pass"],
            "cpu_measured": v.get("cpu_ratio"),
            "cpu_target_value": v.get("cpu_target_value"),
            "cpu_pass": v.get("cpu_pass"),
        }
        for key, v in result.items()
        if isinstance(v, dict) and v.get("target")
    }
    return result


# ------------------------------------------------------------------------------------------------
# output
# ------------------------------------------------------------------------------------------------
def _fmt_time(x: float) -> str:
    if not math.isfinite(x):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x / 1e-9:.3g} ns"


def _fmt_rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.3g} M/s"
    if x >= 1e3:
        return f"{x / 1e3:.3g} k/s"
    return f"{x:.3g} /s"


def format_table(result: dict[str, Any]) -> str:
    """The printed table of a :func:`run_bench` result."""
    m = result["machine"]
    st = result["settings"]
    lines = [
        (
            f"wbsim bench  robot {st['robot']}  env {st['env']}"
            f"{'  QUICK (rough figures)' if st['quick'] else ''}"
        ),
        (
            f"{m['date']}  {m['platform']}  {m['cpu']}  {m['cpu_count']} CPUs "
            f"({m['cpus_usable']} usable)"
            + (f"  load {m['load_average'][0]:.2f} at start" if m.get("load_average") else "")
        ),
        (
            f"Python {m['python']}  MuJoCo {m['mujoco']}  Pinocchio {m['pinocchio']}  "
            f"qpsolvers {m['qpsolvers']}  Gymnasium {m['gymnasium']}  numpy {m['numpy']}"
        ),
        (
            "median: of block means (wall clock); call med.: median of single calls; spread: min-max "
            "of block means; p95: of single calls (*) or of blocks"
        ),
        (
            "ratio: median [min-max] of per-block wall-time ratios to a reference block timed next "
            "to each block; cpu: the same with CPU time (immune to other processes' preemption); "
            "targets are judged on the wall ratio, (cpu) in brackets"
        ),
    ]
    loads = [x[0] for x in (m.get("load_average"), m.get("load_average_end")) if x]
    if loads and max(loads) > (m["cpus_usable"] or 1):
        lines.append(
            f"WARNING: the machine was busy (1-min load up to {max(loads):.1f} on "
            f"{m['cpus_usable']} CPUs): wall-clock figures are inflated and noisy"
        )
    lines.append("")
    # the first column fits every key (a user's package.module:Class controller is a long one)
    w = max([36, *(len(k) for k, e in result.items() if isinstance(e, dict) and "median" in e)])
    head = (
        f"{'measurement':<{w}} {'median':>9} {'call med.':>9} {'p95':>10} {'spread':>19} "
        f"{'rate':>10}  "
        f"{'ratio [block min-max]':<44} {'cpu':>6}  {'target':<16} result"
    )
    lines += [head, "-" * len(head)]
    for key, e in result.items():
        if not (isinstance(e, dict) and "median" in e):
            continue
        spread = f"{_fmt_time(e['spread'][0])}-{_fmt_time(e['spread'][1])}"
        p95 = _fmt_time(e["p95"]) + ("*" if e["p95_of"] == "calls" else " ")
        ratio = ""
        if e["ratio"] is not None:
            ratio = f"{e['ratio']:.2f}x {e['ratio_to']}"
            if "ratio_spread" in e:
                ratio += f" [{e['ratio_spread'][0]:.2f}-{e['ratio_spread'][1]:.2f}]"
        cpu = f"{e['cpu_ratio']:.2f}x" if e.get("cpu_ratio") is not None else ""
        if e.get("target"):
            tv = e["target_value"]
            target = e["target"].replace("Humanoid-v5's overhead ratio", f"{tv:.2f} (Humanoid-v5)")
            verdict = "PASS" if e["pass"] else "MISS"
            if e.get("cpu_pass") is not None:
                verdict += f" ({'PASS' if e['cpu_pass'] else 'MISS'})"
        else:
            target = verdict = ""
        call_med = _fmt_time(e["call_median"]) if "call_median" in e else ""
        lines.append(
            f"{key:<{w}} {_fmt_time(e['median']):>9} {call_med:>9} {p95:>10} {spread:>19} "
            f"{_fmt_rate(e['rate']):>10}  {ratio:<44} {cpu:>6}  {target:<16} {verdict}"
        )
    extras = []
    for key, e in result.items():
        if isinstance(e, dict) and "realtime_factor" in e:
            extras.append(
                f"  {key}: real-time factor {e['realtime_factor']:.2f} at "
                f"{e['env_dt'] * 1e3:.3g} ms" + ("  (the robot FELL in a run)" if e["fell"] else "")
            )
        if isinstance(e, dict) and e.get("fallback_fraction"):
            extras.append(f"  {key}: {e['fallback_fraction']:.0%} of the calls returned a fallback")
    mj = result["mj_step"]
    extras.append(
        f"  mj_step: contacts {mj['contacts'][0]}-{mj['contacts'][1]}, base height "
        f"moved at most {mj['max_base_z_change_m'] * 1e3:.2f} mm per block"
    )
    lines += ["", "notes:", *extras]
    if result["skipped"]:
        lines += ["skipped:", *(f"  {k}: {v}" for k, v in result["skipped"].items())]
    lines += ["", "targets:"]
    for name, t in result["targets"].items():
        cpu = ""
        if t.get("cpu_pass") is not None:
            cpu = (
                f"   cpu {t['cpu_measured']:.2f} vs {t['cpu_target_value']:.2f}: "
                f"{'PASS' if t['cpu_pass'] else 'MISS'}"
            )
        lines.append(
            f"  {name:<26} {t['measured']:.2f} vs {t['target_value']:.2f} "
            f"({t['entry']}, target {t['target']}): {'PASS' if t['pass'] else 'MISS'}" + cpu
        )
    missing = [n for n in TARGETS if n not in result["targets"]]
    if missing:
        lines.append(f"  not measured: {', '.join(missing)}")
    return "\n".join(lines)


def _json_ready(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_ready(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def run_bench(
    robot: str = "g1",
    json_path: str | Path | None = None,
    quick: bool = False,
    progress: bool = True,
    controller: str | None = None,
    controller_options: Mapping[str, Any] | None = None,
) -> int:
    """Measure everything of the module docstring in this process, print the table, write the JSON.

    Args:
        robot: robot name (its stand env, e.g. ``wbsim/G1Stand-v0``, is used for the env figures).
        json_path: where to write the result as JSON (``None``: not written).
        quick: few, short blocks (:data:`QUICK`): a smoke test whose figures are rough.
        progress: a line on stderr as each stage starts (``wbsim bench: mj_step``, ...).
        controller: a controller of your own (or any name :func:`wbsim.controllers.make_controller`
            takes) measured as the built-in ones are: ``compute/<controller>`` and
            ``loop/<controller>/log|nolog``.
        controller_options: its keyword options (``-c key=value``).

    Returns:
        0 when the bench ran (targets missed or optional parts skipped included).

    Raises:
        WbsimError: unknown robot, no stand env for it, the raw ``mj_step`` figure failed, or
            ``json_path`` cannot be written; an unknown ``controller`` or options it does not
            take, or ``controller_options`` without a ``controller`` (all checked first).
        Exception: what ``controller`` raises while it is measured.
    """
    from wbsim.errors import WbsimError

    if controller_options and controller is None:
        raise WbsimError("controller options (-c) need a controller to measure (--controller)")
    if controller is not None:  # before the bench, not minutes into it
        from wbsim.controllers import check_controller_options

        check_controller_options(controller, dict(controller_options or {}))
    if json_path is not None:  # before the bench, not after it
        from wbsim.errors import check_output_file

        check_output_file(json_path, "bench JSON")
    result = _json_ready(
        _collect(robot, QUICK if quick else FULL, progress, controller, controller_options)
    )
    print(format_table(result))
    if json_path is not None:
        write_json(json_path, result, allow_nan=False)
    return 0
