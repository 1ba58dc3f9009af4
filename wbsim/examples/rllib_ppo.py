"""Train PPO (RLlib) on ``wbsim/G1Stand-v0`` in residual mode, on a local Ray or a Ray cluster.

The env reaches RLlib through ``ray.tune.register_env``: its creator makes
``"wbsim:wbsim/G1Stand-v0"`` (module:id), so each env runner process imports wbsim, which registers
the ids, before Gymnasium makes the env. The policy acts every :data:`~wbsim.examples.train_ppo.
FRAME_SKIP` MuJoCo steps (50 Hz) on top of the gravity-compensation QP, as in
:mod:`wbsim.examples.train_ppo`. Needs ``pip install torch==2.13.0`` (the CPU build) then
``pip install "wbsim[rllib]"`` (RLlib pins its own Gymnasium, 1.2.2 for Ray 2.60, which wbsim
supports; keep it in its own environment if other packages need a newer Gymnasium).

Usage::

    python -m wbsim.examples.rllib_ppo --iterations 20 --out runs/rllib_g1_stand
    python -m wbsim.examples.rllib_ppo --address auto --env-runners 8   # on a running cluster

prints each iteration's mean episode return and length, and saves the algorithm to ``OUT``
(``Algorithm.from_checkpoint``) if given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wbsim.examples import argument_parser, interrupted
from wbsim.examples.train_ppo import FRAME_SKIP

__all__ = ["ENV_NAME", "env_creator", "train"]

#: the name under which ``ray.tune.register_env`` knows the env
ENV_NAME = "wbsim_g1_stand_residual"


def env_creator(env_config: dict[str, Any]):
    """The env of an RLlib env runner: ``gymnasium.make("wbsim:wbsim/G1Stand-v0", **env_config)``
    (the module prefix registers wbsim's ids in a fresh worker process)."""
    import gymnasium as gym

    return gym.make("wbsim:wbsim/G1Stand-v0", **dict(env_config))


def train(
    iterations: int = 1,
    out: str | Path | None = None,
    address: str | None = None,
    env_runners: int = 1,
    train_batch_size: int = 1000,
    minibatch_size: int = 250,
    num_epochs: int = 2,
    residual_scale: float = 0.05,
    seconds: float = 10.0,
    seed: int = 0,
    overwrite: bool = False,
) -> list[dict]:
    """Run ``iterations`` PPO training iterations; return per iteration ``iteration``,
    ``episode_return_mean``, ``episode_len_mean`` (env steps), ``env_steps`` (sampled in all).

    ``seconds``: the episodes' length (the env's ``max_seconds``). ``address``: an existing Ray
    cluster; otherwise a local Ray with ``env_runners + 1`` CPUs
    (one per env runner, one for the learner) is started and stopped. ``out``: a folder that
    exists and is not empty is replaced only with ``overwrite``.

    Raises:
        WbsimError: ``iterations``, ``env_runners``, ``train_batch_size``, ``minibatch_size`` or
            ``num_epochs`` not integers >= 1, ``minibatch_size`` > ``train_batch_size``, an env
            option the env refuses (``residual_scale`` < 0, ``seconds`` <= 0), ``out`` not empty
            without ``overwrite`` or not a folder, or RLlib not installed (all checked before Ray
            starts).
        KeyboardInterrupt: Ctrl-C (Ray is stopped first, if it was started here); its message
            says after how many iterations and what was saved.
    """
    from wbsim._signals import end_cli_start
    from wbsim.envs import make as make_env
    from wbsim.errors import WbsimError

    for name, value in (
        ("iterations", iterations),
        ("env_runners", env_runners),
        ("train_batch_size", train_batch_size),
        ("minibatch_size", minibatch_size),
        ("num_epochs", num_epochs),
    ):
        if not (type(value) is int and value >= 1):
            raise WbsimError(f"{name} must be an integer >= 1, got {value!r}")
    if minibatch_size > train_batch_size:
        raise WbsimError(
            f"minibatch_size ({minibatch_size}) must not exceed train_batch_size "
            f"({train_batch_size})"
        )
    out_dir = None if out is None else Path(out)
    if out_dir is not None:
        if out_dir.exists() and not out_dir.is_dir():
            raise WbsimError(f"{out_dir}: not a folder (--out)")
        if out_dir.is_dir() and any(out_dir.iterdir()) and not overwrite:
            raise WbsimError(f"{out_dir} is not empty; pick another --out, or --overwrite")
    env_config = {
        "action_mode": "residual",
        "residual_scale": residual_scale,
        "frame_skip": FRAME_SKIP,
        "info_mode": "lean",
        "max_seconds": seconds,
    }
    # the env's own checks, here rather than in an env runner
    make_env("wbsim/G1Stand-v0", **env_config).close()
    from wbsim.scaleout import check_address, prepare_local_ray, start_ray

    check_address(address)
    prepare_local_ray(address)  # before the first `import ray`
    try:  # ray.rllib's folder ships with Ray; its own dependencies come with ray[rllib]
        import ray.rllib
    except ImportError as exc:
        raise WbsimError(
            f"RLlib is not installed ({exc}): pip install torch==2.13.0, then pip install "
            '"wbsim[rllib]"'
        ) from None
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.registry import register_env

    end_cli_start()  # `python -m` starting: from here a Ctrl-C is the training's, below
    started = start_ray(env_runners + 1, address)
    try:
        register_env(ENV_NAME, env_creator)
        config = (
            PPOConfig()
            .environment(ENV_NAME, env_config=env_config)
            .env_runners(num_env_runners=env_runners)
            .training(
                train_batch_size_per_learner=train_batch_size,
                minibatch_size=minibatch_size,
                num_epochs=num_epochs,
            )
            .debugging(seed=seed)
        )
        algo = config.build_algo()
    except BaseException:
        if started:
            ray.shutdown()
        raise
    history: list[dict] = []
    saved = "nothing was saved"  # what a Ctrl-C's KeyboardInterrupt says
    try:
        for _ in range(iterations):
            result = algo.train()
            runners = result.get("env_runners", {})
            history.append(
                {
                    "iteration": int(result["training_iteration"]),
                    "episode_return_mean": float(runners.get("episode_return_mean", float("nan"))),
                    "episode_len_mean": float(runners.get("episode_len_mean", float("nan"))),
                    "env_steps": int(
                        result.get(
                            "num_env_steps_sampled_lifetime",
                            runners.get("num_env_steps_sampled_lifetime", 0),
                        )
                    ),
                }
            )
            print(history[-1], flush=True)
        if out_dir is not None:
            saved = f"{out_dir} may hold part of the algorithm's checkpoint"
            algo.save_to_path(str(out_dir.resolve()))
        return history
    except KeyboardInterrupt:
        raise KeyboardInterrupt(
            f"after {len(history)} of {iterations} iterations; {saved}"
        ) from None
    finally:
        algo.stop()
        if started:
            ray.shutdown()


def main(argv=None) -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--iterations", type=int, default=1, help="PPO training iterations")
    parser.add_argument("--out", help="folder to save the trained algorithm into")
    parser.add_argument(
        "--address",
        help="an existing Ray cluster (auto, HOST:6379, ray://HOST:10001); default: a local Ray",
    )
    parser.add_argument(
        "--env-runners",
        type=int,
        default=1,
        help="env runner processes (a local Ray gets one CPU each, and one for the learner)",
    )
    parser.add_argument(
        "--train-batch-size", type=int, default=1000, help="env steps per iteration"
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="episode length, s")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--overwrite", action="store_true", help="replace what an existing --out folder holds"
    )
    args = parser.parse_args(argv)
    from wbsim.errors import WbsimError

    try:
        train(
            args.iterations,
            args.out,
            args.address,
            args.env_runners,
            train_batch_size=args.train_batch_size,
            minibatch_size=min(250, args.train_batch_size),
            seconds=args.seconds,
            seed=args.seed,
            overwrite=args.overwrite,
        )
    except WbsimError as exc:
        parser.exit(2, f"rllib_ppo: error: {exc}\n")
    except KeyboardInterrupt as exc:
        return interrupted("rllib_ppo", exc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
