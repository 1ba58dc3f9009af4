"""``wbsim baseline``: a controller's statistics over seeded episodes of an env.

Each episode is one :func:`wbsim.rollout.run_episode` (no video, no log) with its own seed; the env's
``reset_noise_scale`` (default here :data:`wbsim.envs.RESET_NOISE_SCALE`, 0.02 rad of uniform joint
noise at reset) makes episodes differ. Success = the episode ran to its time limit without a fall.
With ``workers`` the episodes run as Ray tasks (:mod:`wbsim.scaleout`), with the same results.
:func:`format_comparison` puts baselines (a user's and the shipped ``docs/baselines/``) side by side
in the README's table form (``wbsim baseline --compare``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from wbsim.envs import RESET_NOISE_SCALE
from wbsim.jsonfile import write_json

if TYPE_CHECKING:  # the loop (and the controllers) load when a baseline runs, not on import
    from wbsim.rollout import EpisodeConfig

__all__ = [
    "DEFAULT_EPISODES",
    "STOPPED",
    "default_json_path",
    "format_comparison",
    "load_baseline",
    "run_baseline",
    "run_name",
]

#: Episodes of :func:`run_baseline` (and ``wbsim baseline``) unless told.
DEFAULT_EPISODES = 20

#: The statuses of an episode that ended neither at its time limit nor by a fall: the loop stopped
#: it (a command MuJoCo cannot apply: NaN, wrong shape) or MuJoCo failed (:func:`run_episode`).
STOPPED = ("stopped", "error")


def default_json_path(
    env: str,
    controller: str,
    controller_options: Mapping[str, Any] | None = None,
    env_options: Mapping[str, Any] | None = None,
    tolerances: Mapping[str, Any] | None = None,
    *,
    episodes: int = DEFAULT_EPISODES,
    seconds: float | None = None,
    reset_noise_scale: float = RESET_NOISE_SCALE,
    seed: int = 0,
) -> str:
    """``baselines/<env>_<controller>[-key=value...].json`` (:func:`run_name`), then
    ``episodes``, ``seconds``, ``reset_noise`` and ``seed`` where they differ from
    :func:`run_baseline`'s defaults (``seconds``: the env's time limit; e.g.
    ``baselines/G1Stand-v0_gravity_qp-episodes=2-seconds=3.json``), so runs of two variants do not
    overwrite each other and a short run does not take a full run's name."""
    from wbsim.envs import ENV_IDS, time_limit

    limit = time_limit(env) if env in ENV_IDS else None
    name = run_name(
        env,
        controller,
        controller_options,
        env_options,
        tolerances,
        settings=(
            ("episodes", episodes, DEFAULT_EPISODES),
            ("seconds", seconds, limit if seconds is not None else None),
            ("reset_noise", reset_noise_scale, RESET_NOISE_SCALE),
            ("seed", seed, 0),
        ),
    )
    return f"baselines/{name}.json"


def run_name(
    env: str,
    controller: str,
    controller_options: Mapping[str, Any] | None = None,
    env_options: Mapping[str, Any] | None = None,
    tolerances: Mapping[str, Any] | None = None,
    settings: Sequence[tuple[str, Any, Any]] = (),
) -> str:
    """The file name (without folder or suffix) of a run of ``controller`` on ``env``, as
    ``wbsim baseline`` and ``wbsim pushtest`` name their outputs: ``<env>_<controller>`` (the env
    id without its namespace; a ``module:Class`` controller with a dot, ``module.Class``, since
    a colon is not safe in file names), then ``-key=value`` for each controller option that differs
    from the controller's default (values as ``-c`` takes them, e.g.
    ``G1OneLeg-v0_projected_id-variant=pinv``), the env options and the event tolerances, each
    sorted by key, then each ``(key, value, default)`` of ``settings`` (the command's own, e.g.
    ``episodes``) whose value differs from its default."""
    import inspect

    from wbsim.controllers import controller_class

    defaults = {
        name: p.default
        for name, p in inspect.signature(controller_class(controller)).parameters.items()
    }
    parts = [f"{env.split('/')[-1]}_{controller.replace(':', '.')}"]
    for key, value in sorted(dict(controller_options or {}).items()):
        if key in defaults and _same(value, defaults[key]):
            continue
        parts.append(_option_text(key, value))
    parts += [_option_text(k, v) for k, v in sorted(dict(env_options or {}).items())]
    parts += [_option_text(k, v) for k, v in sorted(dict(tolerances or {}).items())]
    for key, value, default in settings:
        if not _same(value, default):
            parts.append(f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}")
    return "-".join(parts)


def _option_text(key: str, value: Any) -> str:
    """``key=value`` as ``-c`` / ``-e`` take it, safe in a file name."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return f"{key}={text}".replace("/", "_")


def _episode(cfg: EpisodeConfig) -> dict[str, Any]:
    """One episode's entry of ``per_episode`` (a Ray task with ``workers``)."""
    from wbsim.rollout import run_episode

    s = run_episode(cfg)
    return {
        "seed": cfg.seed,
        "return": s["return"],
        "steps": s["steps"],
        "seconds": s["seconds"],
        "fell": s["fell"],
        "status": s["status"],
        **({"stopped_reason": s["stopped_reason"]} if s["status"] in STOPPED else {}),
        "events": s["events"],
        **{
            key: s[key]
            for key in ("base_displacement_m", "feet_displacement_m", "gait", "com_tracking_rms_m")
            if key in s
        },
    }


def _same(value: Any, default: Any) -> bool:
    try:
        # 3 == 3.0, but True is not 1
        return (type(value) is bool) == (type(default) is bool) and bool(value == default)
    except (TypeError, ValueError):  # arrays
        return False


def run_baseline(
    env: str,
    controller: str,
    episodes: int = DEFAULT_EPISODES,
    seed: int = 0,
    seconds: float | None = None,
    reset_noise_scale: float = RESET_NOISE_SCALE,
    controller_options: Mapping[str, Any] | None = None,
    env_options: Mapping[str, Any] | None = None,
    tolerances: Mapping[str, float] | None = None,
    json_path: str | Path | None = None,
    progress: bool = True,
    workers: int | None = None,
    address: str | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Run ``episodes`` episodes (seeds ``seed``, ``seed + 1``, ...) and aggregate.

    Returns (and writes to ``json_path`` if given) a dict with ``env``, ``controller``,
    ``controller_options`` (as given; baselines written before it was recorded lack it),
    ``env_options`` (as given, the reset noise apart), ``tolerances`` (the event tolerances
    given, :class:`wbsim.diagnostics.Tolerances`, which set the event counts), ``episodes``,
    ``seconds``, ``return_mean``, ``return_std``, ``success_rate``, ``length_mean``, ``length_std``
    (steps), ``fell``, ``stopped`` (episodes the loop stopped or MuJoCo failed, :data:`STOPPED`:
    not successes, and not falls either), ``events`` (kind -> count summed over the episodes),
    ``per_episode`` (each with its ``status``, and the ``stopped_reason`` of a stopped one).

    ``workers``: run the episodes as Ray tasks, ``workers`` at a time, on a local Ray or on the
    cluster at ``address`` (:func:`wbsim.scaleout.map_calls`); the result is the sequential one.
    An existing ``json_path`` is replaced only with ``overwrite``. A Ctrl-C writes the episodes
    already run to ``json_path``, with ``interrupted``, before it propagates (with ``workers``,
    those whose Ray task had finished, in seed order; ``interrupted`` names their seeds).

    Raises:
        WbsimError: ``episodes`` < 1, a negative or non-integer ``seed``, ``seconds`` not a
            positive number, a ``json_path`` that cannot be written (or exists, without
            ``overwrite``), an unknown env or
            controller, an unknown tolerance, bad ``workers`` (:func:`wbsim.scaleout.check_workers`; all checked before
            the first episode); what :func:`wbsim.rollout.run_episode` raises.
    """
    from wbsim.controllers import controller_class
    from wbsim.envs import ENV_IDS, time_limit
    from wbsim.errors import UnknownNameError, WbsimError
    from wbsim.scaleout import check_workers, map_calls

    if episodes < 1:
        raise WbsimError(f"episodes must be >= 1, got {episodes}")
    from wbsim.rollout import EpisodeConfig, check_seed

    check_seed(seed)  # before the first episode, as everything below
    if env not in ENV_IDS:
        raise UnknownNameError("env", env, ENV_IDS)
    controller_class(controller)
    from wbsim.diagnostics import Tolerances

    Tolerances.from_dict(dict(tolerances or {}))
    check_workers(workers, address)
    if json_path:  # before the episodes, not after them
        from wbsim.errors import check_output_file

        check_output_file(json_path, "baseline JSON", overwrite)
    if seconds is not None and not (np.isfinite(seconds) and seconds > 0):
        raise WbsimError(f"seconds must be a positive number, got {seconds}")
    env_kwargs = {"reset_noise_scale": reset_noise_scale, **dict(env_options or {})}
    if seconds is None:
        seconds = time_limit(env)
    calls = [
        {
            "cfg": EpisodeConfig(
                env=env,
                controller=controller,
                seconds=seconds,
                seed=seed + k,
                controller_options=dict(controller_options or {}),
                env_options=env_kwargs,
                tolerances=dict(tolerances or {}),
                progress=progress and workers is None,
            )
        }
        for k in range(episodes)
    ]
    head = {
        "env": env,
        "controller": controller,
        "controller_options": dict(controller_options or {}),
        "env_options": dict(env_options or {}),
        "tolerances": dict(tolerances or {}),
    }
    per: list[dict[str, Any]] = []
    try:
        if workers is None:  # one by one, so that a Ctrl-C keeps the episodes already run
            for call in calls:
                per.append(_episode(**call))
        else:
            per = map_calls(_episode, calls, workers, address, progress)
    except KeyboardInterrupt as exc:
        if workers is not None:  # the Ray tasks finished by then, in seed order
            per = [r for _, r in sorted(getattr(exc, "done", {}).items())]
        if per and json_path:
            out = {**head, **_aggregate(per, seed, seconds, reset_noise_scale)}
            out["interrupted"] = f"Ctrl-C after {len(per)} of {episodes} episodes"
            if workers is not None:
                out["interrupted"] += f" (seeds {', '.join(str(p['seed']) for p in per)})"
            write_json(json_path, out)
        raise
    out = {**head, **_aggregate(per, seed, seconds, reset_noise_scale)}
    if json_path:
        write_json(json_path, out)
    return out


def _aggregate(
    per: list[dict[str, Any]], seed: int, seconds: float, reset_noise_scale: float
) -> dict[str, Any]:
    """The statistics of :func:`run_baseline` over the episodes ``per`` (:func:`_episode`)."""
    returns = np.array([p["return"] for p in per])
    lengths = np.array([p["steps"] for p in per])
    success = [not p["fell"] and p["seconds"] >= seconds - 1e-6 for p in per]
    violations: dict[str, int] = {}
    for p in per:
        for kind, n in p["events"].items():
            violations[kind] = violations.get(kind, 0) + n
    return {
        "episodes": len(per),
        "seed": seed,
        "seconds": seconds,
        "reset_noise_scale": reset_noise_scale,
        "return_mean": float(returns.mean()),
        "return_std": float(returns.std()),
        "success_rate": float(np.mean(success)),
        "length_mean": float(lengths.mean()),
        "length_std": float(lengths.std()),
        "fell": int(sum(p["fell"] for p in per)),
        "stopped": int(sum(p.get("status") in STOPPED for p in per)),
        "events": violations,
        "per_episode": per,
    }


#: The keys every baseline JSON has (:func:`run_baseline`), which :func:`load_baseline` checks.
_BASELINE_KEYS = (
    "env",
    "controller",
    "episodes",
    "seconds",
    "return_mean",
    "return_std",
    "success_rate",
    "length_mean",
    "length_std",
    "events",
)


def load_baseline(path: str | Path) -> dict[str, Any]:
    """A JSON that :func:`run_baseline` wrote (``wbsim baseline``, or one of ``docs/baselines/``),
    checked to be one.

    Raises:
        WbsimError: the file is missing, is not JSON, or is JSON of another kind.
    """
    from wbsim.errors import WbsimError

    p = Path(path)
    if not p.is_file():
        raise WbsimError(f"baseline JSON not found: {p}")
    try:
        out = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        out = None
    if not (isinstance(out, dict) and all(k in out for k in _BASELINE_KEYS)):
        raise WbsimError(
            f"{p} is not a baseline JSON (wbsim baseline writes one: "
            f"{', '.join(_BASELINE_KEYS[:4])}, ...)"
        )
    return out


def _label(out: Mapping[str, Any]) -> str:
    """The controller with the options of the row: ``projected_id (variant=pinv)``."""
    parts = [_option_text(k, v) for k, v in sorted(out.get("controller_options", {}).items())]
    parts += [f"-e {_option_text(k, v)}" for k, v in sorted(out.get("env_options", {}).items())]
    parts += [f"-t {_option_text(k, v)}" for k, v in sorted(out.get("tolerances", {}).items())]
    return f"`{out['controller']}`" + (f" ({', '.join(parts)})" if parts else "")


def format_comparison(results: Sequence[Mapping[str, Any]]) -> str:
    """Baselines side by side as a Markdown table, one row per result, the columns of the README's
    Baselines table: env, controller (with its ``-c``, ``-e``, ``-t`` options), episodes and their
    length, return (mean ± std over the episodes, per control step summed), success (with the
    episodes the loop stopped, :data:`STOPPED`), length (steps), mode switches and violation
    events (every kind but ``mode_switch`` and ``fall``, by kind), both summed over the episodes.
    Notes under it say where the rows were measured differently (episode length, count, reset
    noise, first seed), which the figures depend on."""
    head = (
        "| env | controller | episodes | return (mean ± std) | success | length (steps) "
        "| mode switches | violation events |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for out in results:
        events = out["events"]
        kinds = {k: n for k, n in events.items() if k not in ("mode_switch", "fall") and n}
        violations = f"{sum(kinds.values())}" + (
            f" ({', '.join(f'{k} {n}' for k, n in kinds.items())})" if kinds else ""
        )
        stopped = out.get("stopped", 0)
        success = f"{100 * out['success_rate']:.0f} %" + (
            f" ({stopped} stopped)" if stopped else ""
        )
        lines.append(
            f"| {out['env'].split('/')[-1]} | {_label(out)} | {out['episodes']} x "
            f"{out['seconds']:g} s | {out['return_mean']:.1f} ± {out['return_std']:.1f} | "
            f"{success} | {out['length_mean']:.0f} ± {out['length_std']:.0f} | "
            f"{events.get('mode_switch', 0)} | {violations} |"
        )
    notes = []
    for key, what in (
        ("seconds", "episode lengths (s): returns, lengths and event counts grow with them"),
        ("episodes", "episode counts: mode switches and events are sums over a row's episodes"),
        ("reset_noise_scale", "reset noises (rad)"),
        ("seed", "first seeds"),
    ):
        values = sorted({out.get(key) for out in results}, key=lambda v: (v is None, v or 0))
        if len(values) > 1:
            notes.append(f"note: the rows differ in {what}: {', '.join(map(str, values))}")
    return "\n".join(lines + notes)
