"""``wbsim soak``: many seeded episodes over every registered env, controller and action mode, to
show that nothing crashes, nothing turns NaN and everything on disk loads.

The episodes go through every pair of a registered env and one of :data:`KINDS` once per cycle
of ``n_envs * n_kinds`` episodes, in an order shuffled per cycle by ``seed`` (:func:`picks`), so
a short soak with another seed tries other pairs. An episode is a controller through :func:`wbsim.rollout.run_episode` (with its log, joint noise
at reset, the env's pushes), or a Gymnasium episode in an action mode with random or zero
actions. Each is judged:

* a logged run: its status is one of ``completed``, ``fell``, ``error``, ``stopped`` (the last two
  with a reason); its log and summary load; no NaN in any column but those documented as NaN
  where nothing is commanded (``f_cmd``, ``w_cmd``, ``com_ref``); its rows are the steps it ran;
* a Gymnasium episode: every observation and reward is finite, and it ends by termination,
  truncation or ``info["simulation_error"]``.

An exception is a crash: the episode, the traceback's last line and the seed are reported.
"""

from __future__ import annotations

import math
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from wbsim.errors import WbsimError
from wbsim.jsonfile import write_json

__all__ = ["KINDS", "picks", "run_soak"]

#: What an episode runs: ``("controller", name)`` or ``("env", action mode, "random" | "zero")``.
KINDS: tuple[tuple[str, ...], ...] = (
    ("controller", "gravity_qp"),
    ("controller", "projected_id"),
    ("controller", "pd"),
    ("controller", "zero"),
    ("env", "torque", "random"),
    ("env", "torque", "zero"),
    ("env", "joint_position", "random"),
    ("env", "residual", "random"),
)
#: Columns that hold NaN by design (nothing commanded there, no CoM target).
_NAN_ALLOWED = ("f_cmd/", "w_cmd/", "com_ref_")


def picks(episodes: int, seed: int = 0) -> list[tuple[str, tuple[str, ...]]]:
    """The ``(env id, kind)`` of each of ``episodes`` episodes: every pair of a registered env and
    one of :data:`KINDS` once per cycle of ``n_envs * n_kinds`` episodes, each cycle in its own
    order drawn from ``numpy.random.default_rng(seed)`` (the same seed, the same picks)."""
    from wbsim.envs import ENV_IDS

    pairs = [(env_id, kind) for kind in KINDS for env_id in ENV_IDS]
    rng = np.random.default_rng(seed)
    out: list[tuple[str, tuple[str, ...]]] = []
    while len(out) < episodes:
        out += [pairs[k] for k in rng.permutation(len(pairs))]
    return out[:episodes]


def run_soak(
    episodes: int,
    seconds: float = 2.0,
    seed: int = 0,
    reset_noise: float = 0.02,
    json_path: str | Path | None = None,
    progress: bool = True,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Run ``episodes`` episodes (see the module docstring) of at most ``seconds`` simulated
    seconds each; return (and write to ``json_path``) the report: ``episodes``, ``crashes``
    (list), ``nan_logs`` (list), ``bad`` (list of episodes whose status or files were wrong),
    ``statuses`` (count per status), ``per_env_kind`` and ``wall_seconds``.

    Args:
        seed: picks the order of the env and kind pairs (:func:`picks`); episode ``i`` then
            runs with seed ``seed + i`` (its reset noise, its random actions).
        json_path: the report's JSON, checked before any episode runs.
        overwrite: replace an existing ``json_path``.

    Raises:
        WbsimError: ``episodes`` < 1, ``seconds`` not a positive number, ``json_path`` not
            writable or existing without ``overwrite``.
    """
    if not (isinstance(episodes, int) and episodes >= 1):
        raise WbsimError(f"episodes must be an integer >= 1, got {episodes!r}")
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
        raise WbsimError(f"seconds must be a positive number, got {seconds!r}")
    if json_path is not None:
        from wbsim.errors import check_output_file

        check_output_file(json_path, "soak JSON", overwrite)
    plan = picks(episodes, seed)
    report: dict[str, Any] = {
        "episodes": 0,
        "crashes": [],
        "nan_logs": [],
        "bad": [],
        "statuses": {},
        "per_env_kind": {},
        "seconds": seconds,
    }
    wall0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="wbsim-soak-") as tmp:
        for i, (env_id, kind) in enumerate(plan):
            label = f"{env_id} {' '.join(kind[1:])}"
            try:
                if kind[0] == "controller":
                    status, problems = _controller_episode(
                        env_id, kind[1], seconds, seed + i, reset_noise, Path(tmp) / f"run{i}"
                    )
                else:
                    status, problems = _env_episode(
                        env_id, kind[1], kind[2], seconds, seed + i, reset_noise
                    )
            except Exception as exc:  # noqa: BLE001  a crash is what the soak looks for
                status, problems = "crash", []
                last = traceback.format_exception_only(type(exc), exc)[-1].strip()
                report["crashes"].append(
                    {"episode": i, "what": label, "seed": seed + i, "error": last}
                )
            for problem in problems:
                key = "nan_logs" if problem.startswith("NaN") else "bad"
                report[key].append(
                    {"episode": i, "what": label, "seed": seed + i, "problem": problem}
                )
            report["episodes"] += 1
            report["statuses"][status] = report["statuses"].get(status, 0) + 1
            per = report["per_env_kind"].setdefault(label, {})
            per[status] = per.get(status, 0) + 1
            if progress:
                print(
                    f"wbsim soak: {i + 1}/{episodes} {label}: {status}"
                    + (f" ({'; '.join(problems)})" if problems else ""),
                    flush=True,
                )
    report["wall_seconds"] = time.perf_counter() - wall0
    if json_path is not None:
        write_json(json_path, report)
    return report


def _controller_episode(
    env_id: str, controller: str, seconds: float, seed: int, reset_noise: float, log: Path
) -> tuple[str, list[str]]:
    """A logged run; its status and what is wrong with its files."""
    from wbsim.episode_log import load_run
    from wbsim.rollout import EpisodeConfig, run_episode

    summary = run_episode(
        EpisodeConfig(
            env=env_id,
            controller=controller,
            seconds=seconds,
            seed=seed,
            log=log,
            progress=False,
            env_options={"reset_noise_scale": reset_noise},
        )
    )
    problems = []
    status = summary["status"]
    if status not in ("completed", "fell", "error", "stopped"):
        problems.append(f"status {status!r}")
    if status in ("error", "stopped") and not summary.get("stopped_reason"):
        problems.append(f"status {status!r} without a reason")
    run = load_run(log)
    if run.summary.get("status") != status:
        problems.append("summary.json does not say the status")
    if run.steps.shape[0] != summary["steps"]:
        problems.append(f"{run.steps.shape[0]} rows for {summary['steps']} steps")
    for c, name in enumerate(run.columns):
        if not name.startswith(_NAN_ALLOWED) and not np.all(np.isfinite(run.steps[:, c])):
            problems.append(f"NaN or inf in column {name}")
            break
    return status, problems


def _env_episode(
    env_id: str, mode: str, actions: str, seconds: float, seed: int, reset_noise: float
) -> tuple[str, list[str]]:
    """A Gymnasium episode; how it ended and what was wrong with its outputs."""
    from wbsim.envs import make

    env = make(env_id, action_mode=mode, max_seconds=seconds, reset_noise_scale=reset_noise)
    problems = []
    try:
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        shape = env.action_space.shape
        assert shape is not None, "a wbsim env's action space is a Box"
        status = "running"
        while status == "running":
            a = (rng.uniform(-1, 1, shape) if actions == "random" else np.zeros(shape)).astype(
                np.float32
            )
            obs, reward, terminated, truncated, info = env.step(a)
            if not (np.all(np.isfinite(obs)) and math.isfinite(reward)):
                problems.append("NaN or inf in an observation or a reward")
                status = "nan"
            elif "simulation_error" in info:
                status = "error"
            elif terminated:
                status = "fell"
            elif truncated:
                status = "completed"
    finally:
        env.close()
    return status, problems
