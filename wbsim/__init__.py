"""wbsim: a whole-body control and RL testbed for humanoids.

MuJoCo simulates, Pinocchio models the same robot, model-based controllers run in the loop, and every
contact transition and physically forbidden command is logged, counted and drawn.

Entry points: :func:`load_robot`, the ``wbsim`` command line, the Gymnasium ids ``wbsim/...``
(registered on import), and :mod:`wbsim.controllers`.
"""

from wbsim._signals import guard_cli_start as _guard_cli_start

_guard_cli_start()  # `wbsim ...`, `python -m wbsim.cli ...`: Ctrl-C while importing, one line

from wbsim._clone_layout import install as _map_clone_layout

_map_clone_layout(__path__[0])  # python started in a clone's root: its envs/, controllers/, assets/

from wbsim._headless import choose_gl_backend as _choose_gl_backend

_choose_gl_backend()  # before MuJoCo is first imported

from wbsim.envs import register_envs as _register_envs
from wbsim.errors import NoFeetError, RobotLoadError, UnknownNameError, WbsimError
from wbsim.robot import Foot, Pose, Robot, load_robot
from wbsim.robot_config import ROBOTS, FootConfig, JointDynamics, RobotConfig
from wbsim.sim import Pushes, Simulation
from wbsim.types import (
    STANDING,
    Command,
    CommandStatus,
    ContactSchedule,
    JointTargets,
    RobotState,
)

_register_envs()

__version__ = "0.1.0"

__all__ = [
    "ROBOTS",
    "STANDING",
    "Command",
    "CommandStatus",
    "ContactSchedule",
    "Foot",
    "FootConfig",
    "JointDynamics",
    "JointTargets",
    "NoFeetError",
    "Pose",
    "Pushes",
    "Robot",
    "RobotConfig",
    "RobotLoadError",
    "RobotState",
    "Simulation",
    "UnknownNameError",
    "WbsimError",
    "load_robot",
]
