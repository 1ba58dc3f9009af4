"""Reusable wrappers around wbsim envs.

:class:`ControllerInTheLoop` runs a wbsim controller inside any torque-mode wbsim env and adds the
agent's action to its torques: the ``residual`` action mode, and the way to compare an RL policy with
the baseline it improves on. The controller runs at every MuJoCo step (``timestep``, 2 ms for the
built-in robots) through the env's :attr:`~wbsim.envs.humanoid.HumanoidEnv.torque_hook`, whatever
the env's ``frame_skip``; the action is held over the env step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from wbsim.controllers import make_controller
from wbsim.errors import WbsimError, is_real
from wbsim.types import Command, RobotState

__all__ = ["ControllerInTheLoop"]


class ControllerInTheLoop(gym.Wrapper):
    """``tau = controller torque + residual_scale * action * effort limit`` (N·m, ``(n_joints,)``,
    ``robot.joint_names`` order; the controller's joint PD, if any, run by the actuators), clipped
    to the effort limits, recomputed at every MuJoCo step.

    The wrapper installs itself as the env's
    :attr:`~wbsim.envs.humanoid.HumanoidEnv.torque_hook`: before each of the ``frame_skip`` MuJoCo
    steps of an env step the controller computes a
    :class:`~wbsim.controllers.base.Command` from the env's ``robot_state()`` and ``schedule()`` of
    that substep (the values ``info["state"]`` and ``info["schedule"]`` hold after a step, through
    the controller protocol), the residual ``residual_scale * action * effort`` (the action checked
    and clipped to [-1, 1] as in torque mode, held over the env step) is added, and the sum is
    clipped to the effort limits. As in ``torque`` mode the torque then passes through the float32
    action (``tau / effort`` rounded to float32, times ``effort``): the torque a torque-mode agent
    sending that action would apply. With ``frame_skip=1`` this is one controller call per env step,
    at the state the env step starts from.

    The :class:`~wbsim.controllers.base.Command` of the last substep is in :attr:`command`, in
    ``info["command"]`` (full info only; ``info_mode="lean"`` leaves it out, see
    :mod:`wbsim.envs.humanoid`) and in the env's ``overlay_command``; the env's ``tau`` is the
    torque applied at the last substep.

    Pickling (``pickle``, ``copy.deepcopy``) mid-episode: the copy builds a fresh controller (the
    controllers do not pickle), resets it with the episode's reset state (which sets e.g. its
    posture reference; not the current state) and calls it once more on the inputs of the
    original's last call (result unused), so that it has seen the current support and holds the
    same last solution; the env restores its own state (:mod:`wbsim.envs.humanoid`). The copy then
    continues bit for bit as the original with ``gravity_qp`` (any plan) and with ``projected_id``
    as long as the contact set has not changed since the reset. Memory ``projected_id`` keeps
    across contact switches (foot loads at the start of an unloading, the lift-off placement a
    swing foot holds, its cached support polygon) is not reachable through the controller protocol
    and starts afresh in the copy (on ``G1OneLeg-v0`` pickled after the lift: ~1e-4 in qpos / qvel
    after 100 steps; on ``G1Walk-v0`` at ``frame_skip=10``, pickled at one phase of a step: up to
    4 mrad in joint positions and 0.5 rad/s in joint velocities over the next 30 steps).

    Args:
        env: a wbsim env in ``torque`` action mode, without a ``torque_hook``.
        controller: a registered controller name.
        residual_scale: fraction of the effort limit that an action of 1 adds.
        controller_options: keyword options of the controller.

    Raises:
        WbsimError: ``residual_scale`` not a finite number >= 0; the env not in ``torque`` mode or
            already with a ``torque_hook``.
        UnknownNameError: an unknown controller or controller option (:func:`make_controller`).
    """

    def __init__(
        self,
        env: gym.Env,
        controller: str = "gravity_qp",
        residual_scale: float = 0.1,
        controller_options: Mapping[str, Any] | None = None,
    ):
        super().__init__(env)
        # duck-typed: any env with HumanoidEnv's torque_hook, robot, action_mode (checked below)
        base: Any = env.unwrapped
        name = getattr(base, "env_id", type(base).__name__)
        if getattr(base, "action_mode", "torque") != "torque":
            raise WbsimError(
                f"{name}: ControllerInTheLoop needs a torque-mode env, got "
                f"action_mode {base.action_mode!r}"
            )
        if not hasattr(type(base), "torque_hook"):
            raise WbsimError(
                f"{name}: ControllerInTheLoop needs an env with a torque_hook "
                "(wbsim.envs.humanoid.HumanoidEnv)"
            )
        if base.torque_hook is not None:
            raise WbsimError(
                f"{name}: the env already has a torque_hook ({base.torque_hook!r}); "
                "one ControllerInTheLoop per env"
            )
        self.controller_name = controller
        if not (is_real(residual_scale) and 0 <= residual_scale < math.inf):
            raise WbsimError(
                f"{name}: residual_scale must be a finite number >= 0, got {residual_scale!r}"
            )
        self.residual_scale = float(residual_scale)
        self.controller_options = dict(controller_options or {})
        self.controller = make_controller(controller, base.robot, **self.controller_options)
        #: the state the controller was reset with at the episode's reset (None before reset)
        self._reset_state: RobotState | None = None
        #: the controller's inputs of its last call, (RobotState, ContactSchedule), for pickling
        self._last_inputs: tuple[Any, Any] | None = None
        #: residual torque (n_joints,) N·m of the current env step (zero until the first step)
        self._residual = np.zeros(base.robot.n_joints)
        #: the last :class:`~wbsim.controllers.base.Command` (of the last substep)
        self.command: Command | None = None
        base.torque_hook = self._substep_torque

    def _substep_torque(self, base) -> Command:
        """The env's torque hook: the controller's command with the residual added to its
        feed-forward torque (its joint PD, if any, runs in the actuators; MuJoCo clips the sum to
        the effort limits)."""
        inputs = self._last_inputs = (base.robot_state(), base.schedule())
        cmd = self.controller.compute(*inputs)
        self.command = base.overlay_command = cmd
        return Command(cmd.tau + self._residual, joint_targets=cmd.joint_targets)

    def reset(self, **kwargs):
        """Reset the env (same arguments and returns), then the controller at the reset state; the
        residual is zero until the first :meth:`step`."""
        obs, info = self.env.reset(**kwargs)
        base = self.env.unwrapped
        self._reset_state = base.robot_state()
        self.controller.reset(self._reset_state)
        self.command = None
        self._last_inputs = None
        self._residual[:] = 0.0
        return obs, info

    def step(self, action):
        """One env step: ``action (n_joints,)`` in [-1, 1] (checked and clipped as the env does)
        becomes the residual ``residual_scale * action * effort`` (N·m), held over the step; the
        controller runs before each MuJoCo step (the env's :attr:`torque_hook`). Returns the env's
        ``(obs, reward, terminated, truncated, info)``, ``info["command"]`` the last substep's
        command (full info). Calling the unwrapped env's ``step`` directly ignores its action and
        reuses the last residual. Raises ``gymnasium.error.ResetNeeded`` before :meth:`reset`."""
        base = self.env.unwrapped
        if self._reset_state is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        self._residual = self.residual_scale * base.check_action(action) * base.effort
        # the env checks the action again and calls _substep_torque before each MuJoCo step
        obs, reward, terminated, truncated, info = self.env.step(action)
        if "state" in info:
            info["command"] = self.command
        return obs, reward, terminated, truncated, info

    def __getstate__(self):
        return {
            "env": self.env,
            "controller": self.controller_name,
            "residual_scale": self.residual_scale,
            "controller_options": self.controller_options,
            "reset_state": self._reset_state,
            "last_inputs": self._last_inputs,
            "command": self.command,
        }

    def __setstate__(self, st):
        self.__init__(
            st["env"], st["controller"], st["residual_scale"], st.get("controller_options")
        )
        self._reset_state = st.get("reset_state")
        self.command = st.get("command")
        self._last_inputs = st.get("last_inputs")
        if self._reset_state is not None:
            # the episode's reset (e.g. the posture reference is the reset posture) ...
            self.controller.reset(self._reset_state)
            if self._last_inputs is not None:
                # ... and the original's last call again (its result unused): the copy's
                # controller has then seen the current support and holds the same last solution
                self.controller.compute(*self._last_inputs)
