"""Reusable wrappers around wbsim envs.

:class:`ControllerInTheLoop` runs a wbsim controller inside any torque-mode wbsim env and adds the
agent's action to its torques: the ``residual`` action mode, and the way to compare an RL policy with
the baseline it improves on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from wbsim.controllers import make_controller
from wbsim.controllers.base import is_real
from wbsim.errors import WbsimError

__all__ = ["ControllerInTheLoop"]


class ControllerInTheLoop(gym.Wrapper):
    """``tau = controller torque + residual_scale * action * effort limit`` (N·m), clipped to the
    effort limits.

    The controller sees only what the env publishes in ``info`` (``state``, ``schedule``), through the
    controller protocol. Its :class:`~wbsim.controllers.base.Command` of the last step is in
    ``info["command"]`` and in :attr:`command`. With a lean-info env (``info_mode="lean"``, see
    :mod:`wbsim.envs.humanoid`) the state and schedule come from the env's ``robot_state()`` and
    ``schedule()`` (the same values) and ``info`` gets no ``command``.

    Args:
        env: a wbsim env in ``torque`` action mode.
        controller: a registered controller name.
        residual_scale: fraction of the effort limit that an action of 1 adds.
        controller_options: keyword options of the controller.
    """

    def __init__(self, env: gym.Env, controller: str = "gravity_qp", residual_scale: float = 0.1,
                 controller_options: Mapping[str, Any] | None = None):
        super().__init__(env)
        base = env.unwrapped
        if getattr(base, "action_mode", "torque") != "torque":
            raise ValueError(f"{base.env_id}: ControllerInTheLoop needs a torque-mode env")
        self.controller_name = controller
        if not (is_real(residual_scale) and 0 <= residual_scale < math.inf):
            raise WbsimError(f"{base.env_id}: residual_scale must be a finite number >= 0, got "
                             f"{residual_scale!r}")
        self.residual_scale = float(residual_scale)
        self.controller_options = dict(controller_options or {})
        self.controller = make_controller(controller, base.robot, **self.controller_options)
        #: the controller's inputs for the next step: (RobotState, ContactSchedule), None before reset
        self._inputs: tuple[Any, Any] | None = None
        #: the last :class:`~wbsim.controllers.base.Command`
        self.command = None

    def _controller_inputs(self, info: dict[str, Any]) -> tuple[Any, Any]:
        if "state" in info:
            return info["state"], info["schedule"]
        base = self.env.unwrapped
        return base.robot_state(), base.schedule()

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self._inputs = self._controller_inputs(info)
        self.controller.reset(self._inputs[0])
        self.command = None
        return obs, info

    def step(self, action):
        base = self.env.unwrapped
        if self._inputs is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        a = base.check_action(action)
        cmd = self.controller.compute(*self._inputs)
        tau = np.clip(cmd.tau + self.residual_scale * a * base.effort, -base.effort, base.effort)
        base.overlay_command = cmd
        self.command = cmd
        obs, reward, terminated, truncated, info = self.env.step(base.torque_to_action(tau))
        if "state" in info:
            info["command"] = cmd
        self._inputs = self._controller_inputs(info)
        return obs, reward, terminated, truncated, info

    def __getstate__(self):
        return {"env": self.env, "controller": self.controller_name,
                "residual_scale": self.residual_scale, "controller_options": self.controller_options,
                "inputs": self._inputs}

    def __setstate__(self, st):
        self.__init__(st["env"], st["controller"], st["residual_scale"],
                      st.get("controller_options"))
        self._inputs = st["inputs"]
        if self._inputs is not None:
            self.controller.reset(self._inputs[0])
