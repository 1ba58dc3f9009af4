"""Gymnasium environments (installed as ``wbsim.envs``), registered when ``wbsim`` is imported.

Gymnasium 1.x does not load envs from entry points, so :func:`register_envs` runs from
``wbsim/__init__.py``. :data:`ENV_IDS` lists every id with its keyword arguments.

For vector envs, pass ``info_mode="lean"`` (``gym.make_vec(env_id, num_envs, "async",
info_mode="lean")``): each step's info is then three plain numbers instead of the state, schedule and
contact objects, which an ``AsyncVectorEnv`` would otherwise pickle through its pipes and merge in the
main process every step (see :mod:`wbsim.envs.humanoid`).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from wbsim.envs.schedules import dcc_plan, one_leg_plan, stepping_plan, walking_plan

__all__ = ["ENV_IDS", "register_envs", "make", "make_humanoid"]

ENTRY_POINT = "wbsim.envs.humanoid:make_humanoid_env"

#: Registered ids -> keyword arguments of :func:`wbsim.envs.humanoid.make_humanoid_env` (any
#: :class:`~wbsim.envs.humanoid.HumanoidEnv` option, plus ``action_mode="residual"`` options).
ENV_IDS: dict[str, dict[str, Any]] = {
    "wbsim/G1Stand-v0": {"robot": "g1"},
    "wbsim/TalosStand-v0": {"robot": "talos"},
    "wbsim/G1Push-v0": {"robot": "g1", "push_magnitude": 40.0, "push_interval": 2.0},
    "wbsim/TalosPush-v0": {"robot": "talos", "push_magnitude": 100.0, "push_interval": 2.0},
    "wbsim/G1OneLeg-v0": {"robot": "g1", "plan": one_leg_plan, "max_seconds": 7.5},
    "wbsim/G1StepInPlace-v0": {"robot": "g1", "plan": stepping_plan},
    "wbsim/G1Walk-v0": {"robot": "g1", "plan": walking_plan,
                        "reward_weights": {"base_velocity": 1.0}},
    "wbsim/G1PlanReplay-v0": {"robot": "g1", "plan": dcc_plan, "max_seconds": 6.0},
    "wbsim/G1PushStep-v0": {"robot": "g1", "plan": stepping_plan, "push_magnitude": 110.0,
                            "push_interval": 3.0,
                            "plan_options": {"single_support": 0.4, "double_support": 0.15,
                                             "n_steps": 18}},
}


def register_envs() -> None:
    """Register every id of :data:`ENV_IDS` with Gymnasium (idempotent)."""
    for env_id, kwargs in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=ENTRY_POINT,
                         kwargs={**kwargs, "env_id": env_id}, disable_env_checker=False)


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """``gymnasium.make`` for wbsim ids, with an error listing the known ids for an unknown one."""
    from wbsim.errors import UnknownNameError

    if env_id not in ENV_IDS:
        raise UnknownNameError("env", env_id, ENV_IDS)
    from wbsim.envs.humanoid import HumanoidEnv, make_humanoid_env, plan_parameters

    accepted = {**{k: None for k in _params(HumanoidEnv)}, **{k: None for k in
                                                            _params(make_humanoid_env)},
                **{k: None for k in plan_parameters(kwargs.get("plan",
                                                               ENV_IDS[env_id].get("plan")))}}
    for key in kwargs:
        if key not in accepted:
            raise UnknownNameError("option", key,
                                   [k for k in accepted if k not in ("kwargs", "env_id")],
                                   context=f"of env {env_id!r}")
    return gym.make(env_id, **kwargs)


def make_humanoid(env_id: str, **kwargs: Any):
    """The :class:`~wbsim.envs.humanoid.HumanoidEnv` of a registered id, without Gymnasium's
    wrappers: for a loop that drives its simulation core directly (:func:`wbsim.rollout.run_episode`).
    ``kwargs`` override the id's options.

    Raises:
        UnknownNameError: unknown id or option (the message lists the known ones).
    """
    from wbsim.envs.humanoid import HumanoidEnv, plan_parameters, route_plan_options
    from wbsim.errors import UnknownNameError

    if env_id not in ENV_IDS:
        raise UnknownNameError("env", env_id, ENV_IDS)
    plan = kwargs.get("plan", ENV_IDS[env_id].get("plan"))
    known = _params(HumanoidEnv) + (plan_parameters(plan) if plan is not None else [])
    for key in kwargs:
        if key not in known:
            raise UnknownNameError("option", key, [k for k in known if k != "env_id"],
                                   context=f"of env {env_id!r}")
    return HumanoidEnv(**route_plan_options({"env_id": env_id, **kwargs}, ENV_IDS[env_id]))


def _params(func) -> list[str]:
    import inspect

    return [p for p in inspect.signature(func).parameters if p != "self"]
