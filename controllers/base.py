"""The controller protocol. A controller sees a :class:`~wbsim.types.RobotState` and a
:class:`~wbsim.types.ContactSchedule` and returns a :class:`~wbsim.types.Command` (the shared
vocabulary lives in :mod:`wbsim.types`).

Controllers see the Pinocchio state ``(q, v)`` and the robot's models; they never touch
``mujoco.MjData``.
"""

from __future__ import annotations

import functools
from typing import Protocol, runtime_checkable

import numpy as np

from wbsim.errors import UnknownNameError
from wbsim.types import Command, ContactSchedule, RobotState

__all__ = ["Controller", "scatter_rows"]


def _as_slice(idx) -> slice | np.ndarray:
    """The 1-D index array ``idx`` as a slice when it is a run of consecutive increasing indices (a
    view instead of a copy when indexing), else ``idx`` as an int array."""
    idx = np.asarray(idx, dtype=int)
    if idx.ndim == 1 and idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return slice(int(idx[0]), int(idx[0]) + idx.size)
    return idx


@runtime_checkable
class Controller(Protocol):
    """A controller: built with a :class:`wbsim.Robot` and options, then called every step.

    ``compute`` returns a :class:`~wbsim.types.Command` whose ``info`` holds
    :data:`wbsim.types.COMMAND_INFO_KEYS`; it reports an infeasible problem in ``Command.status``
    (with a fallback torque), never by raising.
    """

    name: str

    def reset(self, state: RobotState) -> None:
        """Start an episode from ``state`` (e.g. take its posture as the PD reference)."""

    def compute(self, state: RobotState, schedule: ContactSchedule) -> Command:
        """Torques for ``state`` under the planned contacts ``schedule``."""


@functools.lru_cache(maxsize=256)
def _row_index(all_names: tuple[str, ...], names: tuple[str, ...]) -> np.ndarray:
    index = {n: i for i, n in enumerate(all_names)}
    missing = [n for n in names if n not in index]
    if missing:
        raise UnknownNameError("contact", missing[0], all_names)
    return np.array([index[n] for n in names], dtype=np.intp)


def scatter_rows(all_names: tuple[str, ...], names: tuple[str, ...], values, width: int,
                 nan: bool = False) -> np.ndarray:
    """``(len(all_names), width)`` array holding ``values[i]`` at the row of ``names[i]`` in
    ``all_names`` and 0 elsewhere (NaN everywhere when ``nan`` and no values): per-contact results
    of a controller (e.g. the points of the feet in contact) in the robot's order.

    Raises:
        UnknownNameError: a name not in ``all_names``.
    """
    out = np.full((len(all_names), width), np.nan) if nan else np.zeros((len(all_names), width))
    if names:
        out[_row_index(tuple(all_names), tuple(names))] = np.asarray(values, dtype=float).reshape(
            len(names), width)
    return out
