"""The controller protocol and what every controller shares.

A controller sees a :class:`~wbsim.types.RobotState` and a :class:`~wbsim.types.ContactSchedule`
and returns a :class:`~wbsim.types.Command` (the shared vocabulary lives in :mod:`wbsim.types`).
Controllers see the Pinocchio state ``(q, v)`` and the robot's models; they never touch
``mujoco.MjData``. This module also owns :func:`solve_qp` (a built ``qpsolvers.Problem`` to its
solution, for every controller) and :func:`scatter_rows` (per-contact results in the robot's order).
"""

from __future__ import annotations

import functools
import time
import warnings
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np
import qpsolvers
import scipy.sparse as spa

from wbsim.errors import UnknownNameError
from wbsim.types import Command, ContactSchedule, RobotState

__all__ = ["Controller", "QPSolution", "scatter_rows", "solve_qp"]


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


def scatter_rows(
    all_names: tuple[str, ...], names: tuple[str, ...], values, width: int, nan: bool = False
) -> np.ndarray:
    """``(len(all_names), width)`` array holding ``values[i]`` at the row of ``names[i]`` in
    ``all_names`` and 0 elsewhere (NaN everywhere when ``nan`` and no values): per-contact results
    of a controller (e.g. the points of the feet in contact) in the robot's order.

    Raises:
        UnknownNameError: a name not in ``all_names``.
    """
    out = np.full((len(all_names), width), np.nan) if nan else np.zeros((len(all_names), width))
    if names:
        out[_row_index(tuple(all_names), tuple(names))] = np.asarray(values, dtype=float).reshape(
            len(names), width
        )
    return out


class QPSolution(NamedTuple):
    """What :func:`solve_qp` returns.

    Attributes:
        x: the solution, or ``None`` when the solver found none or raised.
        error: the exception the solver raised (``None`` if it did not).
        detail: the solver's own status when it found no solution (``""`` if none).
        seconds: time spent in the solver, s.
    """

    x: np.ndarray | None
    error: Exception | None
    detail: str
    seconds: float


def solve_qp(problem: qpsolvers.Problem, solver: str, **options: Any) -> QPSolution:
    """Solve a built QP with ``qpsolvers.solve_problem(problem, solver=solver, **options)``.

    OSQP gets its matrices as ``scipy.sparse`` CSC (its native form) and its failure warnings are
    silenced (the returned solution says it failed). Never raises for a solver's failure: an
    exception from the solver is returned in ``error``; a solution with non-finite entries counts as
    none.
    """
    if solver == "osqp":
        P, q, G, h, A, b, lb, ub = problem.unpack()
        problem = qpsolvers.Problem(
            spa.csc_matrix(P),
            q,
            None if G is None else spa.csc_matrix(G),
            h,
            None if A is None else spa.csc_matrix(A),
            b,
            lb,
            ub,
        )
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            if solver == "osqp":
                warnings.simplefilter("ignore")
            sol = qpsolvers.solve_problem(problem, solver=solver, **options)
    except Exception as exc:  # noqa: BLE001  a solver may raise on a degenerate problem
        return QPSolution(None, exc, "", time.perf_counter() - t0)
    dt = time.perf_counter() - t0
    x = sol.x
    if sol.found and x is not None and np.isfinite(x).all():
        return QPSolution(x, None, "", dt)
    info = (sol.extras or {}).get("info")
    return QPSolution(None, None, "" if info is None else str(getattr(info, "status", info)), dt)
