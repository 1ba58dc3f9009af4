r"""Train PPO (stable-baselines3) on a wbsim env in residual mode, save the policy and a video.

The policy's action is added to a controller's torques (``action_mode="residual"``,
``residual_scale`` of the effort limits; ``--controller``, default the gravity-compensation QP),
so an untrained policy already does the task (``--env``, default ``wbsim/G1Stand-v0``) and the
agent learns a correction, at 50 Hz (:data:`FRAME_SKIP`). Walking needs the walking controller:
``--env wbsim/G1Walk-v0 --controller projected_id``. Needs the ``[rl]`` extra: ``pip install torch==2.13.0`` (the CPU build) then
``pip install -e ".[rl]"``.

Usage::

    python -m wbsim.examples.train_ppo --steps 200000 --out runs/ppo_g1_stand
    python -m wbsim.examples.train_ppo --env wbsim/G1Walk-v0 --controller projected_id \
        --steps 200000 --out runs/ppo_g1_walk

writes ``OUT/model.zip`` (reload with ``stable_baselines3.PPO.load``) and ``OUT/policy.mp4``.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

import wbsim  # noqa: F401  (registers the envs)
from wbsim.examples import argument_parser, interrupted

if TYPE_CHECKING:
    from wbsim.envs.humanoid import HumanoidEnv

#: MuJoCo steps (2 ms) per policy step: the policy acts at 50 Hz, while the controller it corrects
#: runs inside the env at every MuJoCo step (500 Hz). 50 Hz is the rate of learned humanoid
#: policies on hardware (the G1's among them); PPO's discount 0.99 then looks about 100 steps, 2 s,
#: ahead (the time scale of keeping balance; 0.2 s at 500 Hz), an episode of 10 s is 500 steps,
#: and each env step carries 10 physics steps, which amortises the per-step cost of vector envs
#: and RL libraries.
FRAME_SKIP = 10

#: PPO's mini-batch size (stable-baselines3's default), used whenever it divides the rollout
BATCH_SIZE = 64


def minibatch_size(rollout: int, target: int = BATCH_SIZE) -> int:
    """The mini-batch size for a rollout of ``rollout`` env steps (``n_steps``, one env): the
    divisor of ``rollout`` nearest ``target`` (the smaller on a tie; above 1, as
    stable-baselines3 requires; ``rollout`` itself for a prime), so that every epoch splits the
    rollout into whole mini-batches. ``target`` whenever it divides ``rollout`` (the default
    1024 steps: 16 mini-batches of 64). A size that does not divide it leaves a truncated
    mini-batch every epoch, which stable-baselines3 warns about (``--steps 100``: 64 + 36)."""
    divisors = [d for d in range(2, rollout + 1) if rollout % d == 0]
    return min(divisors, key=lambda d: (abs(d - target), d)) if divisors else rollout


def train(
    steps: int = 2048,
    out: str | Path = "runs/ppo_g1_stand",
    seed: int = 0,
    env_id: str = "wbsim/G1Stand-v0",
    residual_scale: float = 0.05,
    video_seconds: float = 2.0,
    n_steps: int = 1024,
    overwrite: bool = False,
    controller: str = "gravity_qp",
    progress: bool = False,
) -> Path:
    """Train for ``steps`` environment steps on ``env_id`` with ``controller`` in the loop; returns
    the folder with ``model.zip`` and the video.

    PPO collects rollouts of ``min(n_steps, steps)`` env steps and learns from each in
    mini-batches of :func:`minibatch_size` of it (64 for the default 1024-step rollouts; 50 for
    ``steps=100``), so that no mini-batch is truncated.

    Everything is checked before ``out`` is created and training starts; ``model.zip`` is
    written atomically (a temporary file renamed over it: a full disk leaves no partial model).
    With ``progress``, a line on stdout about every 5 % of ``steps`` (at the end of a rollout):
    the steps done and the mean return of the last episodes.

    Raises:
        UnknownNameError: an unknown env or controller (the message lists the known ones).
        WbsimError: ``steps`` or ``n_steps`` not an integer >= 2; ``seed`` not an integer from
            0 to 2**32 - 1; ``video_seconds`` not a finite number > 0; ``out`` already holds a
            model or a video and ``overwrite`` is false; an env option the env refuses (e.g.
            ``residual_scale`` < 0); ``out`` cannot be written; the model or the video cannot be
            written (e.g. a full disk).
        KeyboardInterrupt: Ctrl-C; its message says what was saved: nothing, the model, or the
            model and the video up to the Ctrl-C (closed, it plays).
    """
    import gymnasium as gym
    from stable_baselines3 import PPO

    from wbsim._signals import end_cli_start
    from wbsim.controllers import controller_class
    from wbsim.envs import ENV_IDS
    from wbsim.errors import UnknownNameError, WbsimError, check_output_file
    from wbsim.jsonfile import write_file
    from wbsim.render import check_video_path

    if env_id not in ENV_IDS:
        raise UnknownNameError("env", env_id, ENV_IDS)
    controller_class(controller)
    for name, value in (("steps", steps), ("n_steps", n_steps)):
        if not (type(value) is int and value >= 2):
            raise WbsimError(
                f"{name} must be an integer >= 2 (PPO's rollout buffer holds at least 2), "
                f"got {value!r}"
            )
    if not (type(seed) is int and 0 <= seed < 2**32):
        raise WbsimError(f"seed must be an integer from 0 to 2**32 - 1 (NumPy's), got {seed!r}")
    real = isinstance(video_seconds, int | float) and not isinstance(video_seconds, bool)
    if not (real and 0 < video_seconds < math.inf):
        raise WbsimError(f"video_seconds must be a finite number > 0 (s), got {video_seconds!r}")
    out = Path(out)
    if (out / "model.zip").exists() and not overwrite:
        raise WbsimError(f"{out / 'model.zip'} exists; pick another --out, or --overwrite")
    check_output_file(out / "model.zip", "model file (--out)")
    check_video_path(out / "policy.mp4", overwrite)
    env = gym.make(  # checks the env options before anything is created
        env_id,
        action_mode="residual",
        residual_scale=residual_scale,
        controller=controller,
        frame_skip=FRAME_SKIP,
    )
    end_cli_start()  # `python -m` starting: from here a Ctrl-C is the training's, below
    saved = "nothing was saved"  # what a Ctrl-C's KeyboardInterrupt says
    try:
        try:
            model = PPO(
                "MlpPolicy",
                env,
                n_steps=min(n_steps, steps),
                batch_size=minibatch_size(min(n_steps, steps)),
                seed=seed,
                verbose=0,
                device="cpu",
            )
            model.learn(total_timesteps=steps, callback=_progress(steps) if progress else None)
            buffer = io.BytesIO()
            model.save(buffer)
            made = [d for d in (out, *out.parents) if not d.exists()]  # removed if the save fails
            out.mkdir(parents=True, exist_ok=True)
            try:
                write_file(out / "model.zip", buffer.getvalue())
            except BaseException:
                for d in made:  # innermost first; only while empty
                    if any(d.iterdir()):
                        break
                    d.rmdir()
                raise
            saved = f"saved {out / 'model.zip'}; no video was recorded"
        finally:
            env.close()

        from wbsim.render import VideoWriter

        env = gym.make(
            env_id,
            action_mode="residual",
            residual_scale=residual_scale,
            controller=controller,
            frame_skip=FRAME_SKIP,
            render_mode="rgb_array",
        )
        obs, _ = env.reset(seed=seed)
        fps, dt = 30.0, cast("HumanoidEnv", env.unwrapped).dt
        next_frame = 0.0  # frames by simulated time (as wbsim run): the video plays in real time
        with VideoWriter(out / "policy.mp4", fps=fps) as video:
            saved = f"saved {out / 'model.zip'} and the video up to the Ctrl-C, {video.path}"
            for k in range(round(video_seconds / dt)):
                if k * dt + 1e-9 >= next_frame:
                    video.append(np.asarray(env.render()))  # rgb_array: (h, w, 3) uint8
                    next_frame += 1.0 / fps
                action, _ = model.predict(obs, deterministic=True)
                obs, _, terminated, truncated, _ = env.step(np.asarray(action, np.float32))
                if terminated or truncated:
                    break
        env.close()
    except KeyboardInterrupt:
        raise KeyboardInterrupt(saved) from None
    return out


def _progress(steps: int):
    """A stable-baselines3 callback printing ``steps done / steps`` and the mean return of the
    last episodes at the end of a rollout, about every 5 % of ``steps``."""
    import time

    from stable_baselines3.common.callbacks import BaseCallback

    class Progress(BaseCallback):
        def _on_training_start(self) -> None:
            self.every, self.next, self.t0 = max(1, steps // 20), max(1, steps // 20), time.time()

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            done = self.num_timesteps
            if done < self.next and done < steps:
                return
            self.next = (done // self.every + 1) * self.every
            returns = [e["r"] for e in self.model.ep_info_buffer or []]
            mean = f"{np.mean(returns):.1f} over {len(returns)} episodes" if returns else "-"
            print(
                f"train_ppo: {done}/{steps} steps, mean episode return {mean}, "
                f"{time.time() - self.t0:.0f} s",
                flush=True,
            )

    return Progress()


def main(argv=None) -> int:
    parser = argument_parser(__doc__)  # a raw docstring: its examples' continuations stay
    parser.add_argument("--env", default="wbsim/G1Stand-v0", help="env id (wbsim list shows them)")
    parser.add_argument(
        "--controller",
        default="gravity_qp",
        help="the controller the policy's action is added to (projected_id for "
        "wbsim/G1Walk-v0 and G1StepInPlace-v0)",
    )
    parser.add_argument("--steps", type=int, default=2048, help="environment steps to train")
    parser.add_argument("--out", default="runs/ppo_g1_stand")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--residual-scale",
        type=float,
        default=0.05,
        help="the policy's action range, as a fraction of each joint's effort limit",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace the model and the video in --out"
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="no line per 5 %% of the training steps"
    )
    args = parser.parse_args(argv)
    from wbsim.errors import WbsimError

    try:
        out = train(
            args.steps,
            args.out,
            args.seed,
            env_id=args.env,
            residual_scale=args.residual_scale,
            overwrite=args.overwrite,
            controller=args.controller,
            progress=not args.no_progress,
        )
    except (WbsimError, OSError) as exc:  # OSError: a file the libraries write (a full disk)
        parser.exit(2, f"train_ppo: error: {exc}\n")
    except KeyboardInterrupt as exc:
        return interrupted("train_ppo", exc)
    print(f"saved {out / 'model.zip'} and {out / 'policy.mp4'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
