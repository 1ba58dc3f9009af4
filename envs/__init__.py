"""Gymnasium environments (installed as ``wbsim.envs``), registered when ``wbsim`` is imported.

Gymnasium 1.x does not load envs from entry points, so :func:`register_envs` runs from
``wbsim/__init__.py``. :data:`ENV_IDS` lists every id with its keyword arguments.

For vector envs, pass ``info_mode="lean"`` (``gym.make_vec(env_id, num_envs, "async",
info_mode="lean")``): each step's info is then six plain values (the time, the fall flag, the reward
terms and the plan's phase: ``phase``, ``phase_index``, ``phase_time``) instead of the state, schedule
and contact objects, which an ``AsyncVectorEnv`` would otherwise pickle through its pipes and merge in
the main process every step (see :mod:`wbsim.envs.humanoid`).

In a worker process that has not imported wbsim (a spawned vector env, an RLlib or Ray worker), name
the module with the id, ``gymnasium.make("wbsim:wbsim/G1Stand-v0")``: Gymnasium imports ``wbsim``
(which registers the ids) before it makes the env.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym

from wbsim.envs.hand_wall import g1_hand_wall_config, hand_wall_plan
from wbsim.envs.schedules import dcc_plan, one_leg_plan, stepping_plan, walking_plan

__all__ = [
    "ENV_IDS",
    "RESET_NOISE_SCALE",
    "make",
    "make_humanoid",
    "register_envs",
    "register_robot_env",
    "registration",
    "time_limit",
]

ENTRY_POINT = "wbsim.envs.humanoid:make_humanoid_env"


def _gait(robot: str, plan: Any, **options: Any) -> dict[str, Any]:
    """The options of a gait env: its robot and plan, and MuJoCo's no-slip solver (5 iterations):
    without it a loaded stance sole creeps (soft friction) and the diagnostics count slips all
    through each stance (docs/locomotion.md)."""
    return {"robot": robot, "plan": plan, "noslip_iterations": 5, **options}


#: Registered ids -> keyword arguments of :func:`wbsim.envs.humanoid.make_humanoid_env` (any
#: :class:`~wbsim.envs.humanoid.HumanoidEnv` option, plus ``action_mode="residual"`` options).
ENV_IDS: dict[str, dict[str, Any]] = {
    "wbsim/G1Stand-v0": {"robot": "g1"},
    "wbsim/TalosStand-v0": {"robot": "talos"},
    "wbsim/G1Push-v0": {"robot": "g1", "push_magnitude": 40.0, "push_interval": 2.0},
    "wbsim/TalosPush-v0": {"robot": "talos", "push_magnitude": 100.0, "push_interval": 2.0},
    "wbsim/G1OneLeg-v0": {"robot": "g1", "plan": one_leg_plan, "max_seconds": 7.5},
    "wbsim/G1StepInPlace-v0": _gait("g1", stepping_plan),
    "wbsim/G1Walk-v0": _gait("g1", walking_plan, reward_weights={"base_velocity": 1.0}),
    "wbsim/TalosStepInPlace-v0": _gait("talos", stepping_plan),
    # no momentum reference: with the G1's momentum gains Talos's walk slipped 31-61 times away
    # from impacts, without 0-13 (docs/locomotion.md)
    "wbsim/TalosWalk-v0": _gait(
        "talos",
        walking_plan,
        reward_weights={"base_velocity": 1.0},
        plan_options={"momentum": False},
    ),
    "wbsim/G1PlanReplay-v0": {"robot": "g1", "plan": dcc_plan, "max_seconds": 6.0},
    "wbsim/G1PushStep-v0": _gait(
        "g1",
        stepping_plan,
        push_magnitude=110.0,
        push_interval=3.0,
        plan_options={"single_support": 0.4, "double_support": 0.15, "n_steps": 18},
    ),
    "wbsim/ICubStand-v0": {"robot": "icub"},
    "wbsim/RomeoStand-v0": {"robot": "romeo"},
    # the G1 with hands leans on a wall with its right hand and lifts its right foot
    "wbsim/G1HandWall-v0": {
        "robot": g1_hand_wall_config(),
        "plan": hand_wall_plan,
        "pose": "lean",
        "max_seconds": 8.5,
        "default_camera_config": {"azimuth": 180.0},
    },
}


#: The ids wbsim registers itself (any other id of :data:`ENV_IDS` came from :func:`register_robot_env`).
_BUILT_IN = frozenset(ENV_IDS)

#: Uniform joint noise at reset, rad, of the ids made through Gymnasium (``gymnasium.make``; their
#: ``spec.kwargs``): each seed starts from its own posture, as Gymnasium's MuJoCo envs do, with the
#: noise of ``wbsim baseline``, so that a policy's returns compare with the baselines' table.
#: :func:`make_humanoid` (``wbsim run``) keeps :class:`~wbsim.envs.humanoid.HumanoidEnv`'s 0: a
#: controller's run starts from the exact pose (``-e reset_noise_scale=0.02`` perturbs it).
RESET_NOISE_SCALE = 0.02


def register_envs() -> None:
    """Register every id of :data:`ENV_IDS` with Gymnasium (idempotent), with the joint noise
    :data:`RESET_NOISE_SCALE` and ``max_episode_steps`` = the id's ``max_seconds`` over its
    control period (``frame_skip`` MuJoCo steps of the scene's ``timestep``): 5000 steps for the
    10 s ids. Gymnasium's ``TimeLimit`` counts steps and the env truncates at ``max_seconds`` of
    simulated time, whichever comes first: ``gymnasium.make(id, max_seconds=20)`` needs
    ``max_episode_steps=10000`` too; :func:`make` passes it."""
    for env_id, kwargs in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(
                env_id,
                entry_point=ENTRY_POINT,
                kwargs={"reset_noise_scale": RESET_NOISE_SCALE, **kwargs, "env_id": env_id},
                max_episode_steps=_max_episode_steps(kwargs),
                disable_env_checker=False,
            )


def time_limit(env_id: str) -> float:
    """The time limit of a registered id, s: its ``max_seconds``, else the env's default (10 s).
    The episode length of ``wbsim run`` and ``wbsim baseline`` without ``--seconds``.

    Raises:
        UnknownNameError: an unknown id (the message lists the known ones).
    """
    from wbsim.errors import UnknownNameError

    if env_id not in ENV_IDS:
        raise UnknownNameError("env", env_id, ENV_IDS)
    return float(_max_seconds(ENV_IDS[env_id]))


def _max_seconds(kwargs: dict[str, Any]) -> Any:
    """The ``max_seconds`` of an id's ``kwargs``, or the env's default."""
    import inspect

    from wbsim.envs.humanoid import HumanoidEnv

    return kwargs.get(
        "max_seconds", inspect.signature(HumanoidEnv).parameters["max_seconds"].default
    )


def _max_episode_steps(kwargs: dict[str, Any]) -> int:
    """Control steps in the ``max_seconds`` of an id's ``kwargs`` (or the env's defaults)."""
    import inspect
    import xml.etree.ElementTree as ET

    from wbsim.assets import SCENE_XML
    from wbsim.envs.humanoid import HumanoidEnv

    defaults = inspect.signature(HumanoidEnv).parameters
    option = ET.parse(SCENE_XML).getroot().find("option")
    timestep = float(getattr(option, "attrib", {}).get("timestep", 0.002))  # MuJoCo's default
    seconds = _max_seconds(kwargs)
    frame_skip = kwargs.get("frame_skip", defaults["frame_skip"].default)
    return math.ceil(seconds / (timestep * frame_skip) - 1e-9)


def register_robot_env(env_id: str, robot: Any, *, config: Any = None, **options: Any) -> str:
    """Register ``env_id`` (e.g. ``"my/H1Stand-v0"``): a :class:`~wbsim.envs.humanoid.HumanoidEnv`
    of any robot that :func:`wbsim.load_robot` loads (``robot`` and ``config`` as its arguments:
    a name, a ``.urdf`` / ``.xml`` path with a config, a ``.toml`` config, a
    :class:`~wbsim.robot_config.RobotConfig`), standing unless ``options`` give a ``plan``. The id
    then works everywhere a registered id does (``gymnasium.make``, vector envs, ``make``,
    ``wbsim.rollout.run_episode``); its envs pickle. Registering an id again replaces it.

    Returns:
        ``env_id``.

    Raises:
        UnknownNameError: an unknown robot name or env option (the message lists the known ones).
        WbsimError: a robot without feet (the envs need soles), a missing file.
    """
    from wbsim.envs.humanoid import check_option_names
    from wbsim.errors import WbsimError
    from wbsim.robot import resolve_config

    cfg = resolve_config(robot, config)
    if not cfg.feet:
        raise WbsimError(
            f"{env_id}: robot {cfg.name!r} has no feet configured; an env needs "
            "them (a config with feet = {left_foot = LINK, right_foot = LINK})"
        )
    check_option_names(options, env_id, options.get("plan"), exclude=("robot",))
    ENV_IDS[env_id] = {"robot": cfg, **options}
    gym.registry.pop(env_id, None)
    register_envs()
    return env_id


def registration(env_id: str) -> dict[str, Any] | None:
    """What :func:`register_robot_env` was given for ``env_id``, as a run's ``config.json``
    records it (``env_registration``) so that a replay in another process registers the id again:
    its options with the robot as its config's fields (:meth:`RobotConfig.to_dict`); ``None`` for
    an id wbsim registers itself. An option that is a Python object (a plan function) is recorded
    by its ``repr`` and cannot be rebuilt from the file."""
    from wbsim.rollout import logged_env_options

    if env_id in _BUILT_IN or env_id not in ENV_IDS:
        return None
    return logged_env_options(ENV_IDS[env_id])


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """``gymnasium.make`` for wbsim ids, with an error listing the known ids for an unknown one, and
    a ``max_episode_steps`` that matches a ``max_seconds`` or ``frame_skip`` given here (unless
    ``max_episode_steps`` is given too)."""
    from wbsim.errors import UnknownNameError

    if env_id not in ENV_IDS:
        raise UnknownNameError("env", env_id, ENV_IDS)
    from wbsim.envs.humanoid import check_option_names

    check_option_names(
        {k: v for k, v in kwargs.items() if k not in ("action_mode", "max_episode_steps")},
        env_id,
        kwargs.get("plan", ENV_IDS[env_id].get("plan")),
    )
    if "max_episode_steps" not in kwargs and {"max_seconds", "frame_skip"} & set(kwargs):
        try:
            kwargs["max_episode_steps"] = _max_episode_steps({**ENV_IDS[env_id], **kwargs})
        except (TypeError, ValueError, ZeroDivisionError):
            pass  # a bad max_seconds or frame_skip: the env's own check names it
    return gym.make(env_id, **kwargs)


def make_humanoid(env_id: str, **kwargs: Any):
    """The :class:`~wbsim.envs.humanoid.HumanoidEnv` of a registered id, without Gymnasium's
    wrappers: for a loop that drives its simulation core directly (:func:`wbsim.rollout.run_episode`).
    ``kwargs`` override the id's options.

    Raises:
        UnknownNameError: unknown id or option (the message lists the known ones).
    """
    from wbsim.envs.humanoid import HumanoidEnv, check_option_names, route_plan_options
    from wbsim.errors import UnknownNameError

    if env_id not in ENV_IDS:
        raise UnknownNameError("env", env_id, ENV_IDS)
    check_option_names(
        kwargs, env_id, kwargs.get("plan", ENV_IDS[env_id].get("plan")), residual=False
    )
    return HumanoidEnv(**route_plan_options({"env_id": env_id, **kwargs}, ENV_IDS[env_id]))
