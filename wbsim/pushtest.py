"""The push-recovery protocol (``wbsim pushtest``): the largest impulse on the torso an env and a
controller survive, from each of ``directions`` horizontal directions, pushed at a set time.

Protocol (the same for every controller, and for a policy through the residual env): for each
direction ``theta_k = 2 pi k / directions`` (0 = the robot's forward, +x; pi/2 = its left, +y;
world frame, the robot faces +x at reset), a horizontal force ``impulse / duration`` acts on the
torso's centre of mass from ``at`` s for ``duration`` s; the episode runs on to ``at + settle`` s
(no reset noise, none of the env's own periodic pushes, seed ``seed``) and the push is survived when the robot has not fallen
(:meth:`wbsim.envs.humanoid.HumanoidEnv.has_fallen`) by then. Impulses climb a ladder
(``start``, times ``growth`` each rung) to the first fall, or to ``limit``; then ``refine``
bisections between the last survived and the first fallen impulse. The result per direction is the
largest impulse survived (0 if even ``start`` fails); where no rung up to ``limit`` fell, only a
lower bound (``no_fall``).

Each trial is one :func:`wbsim.rollout.run_episode` without log or video. Owns only the protocol and
its outputs (JSON, polar plot); the physics and the control are the rollout's.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wbsim.errors import WbsimError
from wbsim.jsonfile import write_json

__all__ = ["PushTestConfig", "default_paths", "plot_push_test", "run_push_test"]


@dataclass(frozen=True)
class PushTestConfig:
    """What :func:`run_push_test` runs (module docstring).

    Attributes:
        env: registered env id.
        controller: registered controller name.
        directions: number of push directions (>= 1), evenly spaced from +x.
        at: push start, s (the phase of the env's plan at that time is reported).
        duration: push duration, s.
        settle: time after the push start the robot must stay up, s.
        start, growth, limit: the impulse ladder, N·s (``growth`` > 1).
        refine: bisections after the ladder.
        seed: episode seed.
        controller_options, env_options: as ``wbsim run``'s ``-c`` / ``-e``.
    """

    env: str = "wbsim/G1Stand-v0"
    controller: str = "projected_id"
    directions: int = 8
    at: float = 2.5
    duration: float = 0.1
    settle: float = 3.0
    start: float = 4.0
    growth: float = 1.5
    limit: float = 80.0
    refine: int = 3
    seed: int = 0
    controller_options: Mapping[str, Any] = field(default_factory=dict)
    env_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        checks = (  # (field, holds, the rule it breaks)
            ("directions", self.directions >= 1 and float(self.directions).is_integer(), ">= 1"),
            ("at", self.at >= 0, ">= 0"),
            ("duration", self.duration > 0, "> 0"),
            ("settle", self.settle > self.duration, f"> duration = {self.duration!r}"),
            ("start", self.start > 0, "> 0"),
            ("limit", self.limit >= self.start, f">= start = {self.start!r}"),
            ("growth", self.growth > 1, "> 1"),
            ("refine", self.refine >= 0, ">= 0"),
        )
        for name, ok, rule in checks:
            if not ok:
                raise WbsimError(
                    f"pushtest: invalid {name} = {getattr(self, name)!r} (it must be {rule})"
                )
        for key in ("push_script", "reset_noise_scale", "push_magnitude"):
            if key in self.env_options:
                raise WbsimError(f"pushtest: env option {key} is the protocol's own")


def default_paths(cfg: PushTestConfig) -> tuple[str, str]:
    """``wbsim pushtest``'s JSON and plot without ``--json`` / ``--plot``:
    ``pushtests/<name>.json`` and ``.png``, ``<name>`` as ``wbsim baseline`` names its JSONs
    (:func:`wbsim.baseline.run_name`: env, controller, its ``-c`` options that differ from its
    defaults, the ``-e`` options), then each protocol setting that differs from
    :class:`PushTestConfig`'s default (e.g.
    ``pushtests/G1Stand-v0_my_controllers.PostureGravityPD-kp=500-directions=4.json``), so that
    two variants do not take each other's name."""
    from dataclasses import fields

    from wbsim.baseline import run_name

    settings = [
        (f.name, getattr(cfg, f.name), f.default)
        for f in fields(PushTestConfig)
        if f.name not in ("env", "controller", "controller_options", "env_options")
    ]
    name = run_name(
        cfg.env, cfg.controller, cfg.controller_options, cfg.env_options, settings=settings
    )
    return f"pushtests/{name}.json", f"pushtests/{name}.png"


def _trial(cfg: PushTestConfig, angle: float, impulse: float) -> dict[str, Any]:
    """One episode with one push; returns ``{"impulse", "survived", "fell_at", "wall_s"}``."""
    from wbsim.rollout import EpisodeConfig, run_episode

    force = impulse / cfg.duration
    push = [(cfg.at, (force * math.cos(angle), force * math.sin(angle), 0.0), cfg.duration)]
    t0 = time.perf_counter()
    s = run_episode(
        EpisodeConfig(
            env=cfg.env,
            controller=cfg.controller,
            seconds=cfg.at + cfg.settle,
            seed=cfg.seed,
            controller_options=dict(cfg.controller_options),
            progress=False,
            env_options={
                **dict(cfg.env_options),
                "push_script": push,
                "reset_noise_scale": 0.0,
                "push_magnitude": 0.0,
            },
        )
    )
    return {
        "impulse": float(impulse),
        "survived": not s["fell"] and s["status"] == "completed",
        "fell_at": float(s["seconds"]) if s["fell"] else None,
        "wall_s": time.perf_counter() - t0,
    }


def run_push_test(
    cfg: PushTestConfig,
    json_path: str | Path | None = None,
    plot_path: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Run the protocol; write the JSON and the polar plot if asked; return the result. An
    existing JSON is replaced only with ``overwrite`` (the plot, drawn from it, always is). A
    Ctrl-C writes the directions already done to the JSON, with ``interrupted``, before it
    propagates (no plot).

    Returns:
        ``{"config": ..., "phase": the plan's phase at the push, "directions_deg": [...],
        "max_impulse": [...] N·s per direction, "max_force": [...] N, "no_fall": [...] (true
        where no trial fell up to ``limit``: ``max_impulse`` is then a lower bound, the ladder's
        last rung), "trials": [[...], ...], "min_over_directions": N·s, "wall_seconds": s}``.

    Raises:
        WbsimError: a bad config; outputs that cannot be written, an existing JSON without
            ``overwrite`` (checked first); what
            :func:`wbsim.rollout.run_episode` raises.
    """
    from wbsim.envs import ENV_IDS, make_humanoid
    from wbsim.errors import UnknownNameError, check_output_file

    if cfg.env not in ENV_IDS:
        raise UnknownNameError("env", cfg.env, ENV_IDS)
    if json_path:
        check_output_file(json_path, "push-test JSON", overwrite)
    if plot_path:
        check_output_file(plot_path, "push-test plot")
    env = make_humanoid(cfg.env, **dict(cfg.env_options))
    env.reset(seed=cfg.seed)
    sched = env.plan.at(cfg.at)
    env.close()
    phase = {
        "name": sched.phase,
        "time_in_phase_s": sched.phase_time,
        "contact_set": sorted(sched.contact_set),
    }
    wall0 = time.perf_counter()
    n = int(cfg.directions)
    angles = [2.0 * math.pi * k / n for k in range(n)]
    best: list[float] = []
    trials: list[list[dict[str, Any]]] = []
    no_fall: list[bool] = []

    def result() -> dict[str, Any]:
        return {
            "config": {
                **asdict(cfg),
                "controller_options": dict(cfg.controller_options),
                "env_options": dict(cfg.env_options),
            },
            "phase": phase,
            "directions_deg": [math.degrees(a) for a in angles[: len(best)]],
            "max_impulse": best,
            "max_force": [b / cfg.duration for b in best],
            "no_fall": no_fall,
            "min_over_directions": float(min(best)),
            "trials": trials,
            "wall_seconds": time.perf_counter() - wall0,
        }

    try:
        for angle in angles:
            best_k, runs = _direction(cfg, angle)
            best.append(best_k)
            trials.append(runs)
            no_fall.append(all(r["survived"] for r in runs))
            if progress is not None:
                progress(
                    f"direction {math.degrees(angle):5.1f} deg: {best_k:6.2f} N s survived "
                    f"({len(runs)} trials){no_fall_note(cfg.limit) if no_fall[-1] else ''}"
                )
    except KeyboardInterrupt:  # keep the directions already done
        if best and json_path:
            partial = result()
            partial["interrupted"] = f"Ctrl-C after {len(best)} of {n} directions"
            write_json(json_path, partial)
        raise
    out = result()
    if json_path:
        write_json(json_path, out)
    if plot_path:
        plot_push_test([out], plot_path)
    return out


def no_fall_note(limit: float) -> str:
    """What a direction's line adds where no push up to ``limit`` (N·s) felled the robot."""
    return f"; no fall up to --limit {limit:g} N s: a lower bound"


def _direction(cfg: PushTestConfig, angle: float) -> tuple[float, list[dict[str, Any]]]:
    """The largest impulse survived from ``angle`` (rad) and the trials that found it: the
    ladder from ``cfg.start`` to the first fall, then ``cfg.refine`` bisections."""
    runs: list[dict[str, Any]] = []
    good, bad = 0.0, None
    impulse = cfg.start
    while impulse <= cfg.limit + 1e-9:
        r = _trial(cfg, angle, impulse)
        runs.append(r)
        if not r["survived"]:
            bad = impulse
            break
        good = impulse
        impulse *= cfg.growth
    if bad is not None:
        lo, hi = good, bad
        for _ in range(cfg.refine):
            mid = 0.5 * (lo + hi)
            r = _trial(cfg, angle, mid)
            runs.append(r)
            lo, hi = (mid, hi) if r["survived"] else (lo, mid)
        good = lo
    return good, runs


def load_push_test(path: str | Path) -> dict[str, Any]:
    """A result JSON that :func:`run_push_test` wrote, checked to be one.

    Raises:
        WbsimError: the file is missing, is not JSON, or is JSON of another kind.
    """
    p = Path(path)
    if not p.is_file():
        raise WbsimError(f"push-test JSON not found: {p}")
    try:
        res = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        res = None
    keys = ("config", "directions_deg", "max_impulse")
    if not (
        isinstance(res, dict)
        and all(k in res for k in keys)
        and isinstance(res["config"], dict)
        and all(k in res["config"] for k in ("env", "controller", "duration"))
    ):
        raise WbsimError(
            f"{p} is not a push-test JSON (wbsim pushtest --json writes one: "
            f"{', '.join(keys)}, ...)"
        )
    return res


def plot_push_test(
    results: Sequence[Mapping[str, Any]], path: str | Path, labels: Sequence[str] | None = None
) -> Path:
    """A polar plot of the largest impulse survived per direction (N·s; 0 deg = the robot's
    forward, counter-clockwise = to its left) of one or more :func:`run_push_test` results."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(5.5, 5.5))
    ax = fig.add_subplot(projection="polar")
    for i, res in enumerate(results):
        th = np.radians(np.append(res["directions_deg"], res["directions_deg"][0]))
        r = np.append(res["max_impulse"], res["max_impulse"][0])
        c = res["config"]
        label = (
            labels[i]
            if labels
            else f"{c['env'].split('/')[-1]} + {c['controller']} (min {min(res['max_impulse']):.1f})"
        )
        ax.plot(th, r, marker="o", label=label)
    ax.set_title(
        f"largest impulse survived, N·s (push {results[0]['config']['duration']:g} s on the torso)",
        fontsize=9,
    )
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, -0.2), fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
