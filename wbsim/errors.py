"""The exception hierarchy of wbsim: one root, :class:`WbsimError`, and a few named cases.

Messages name what was asked for and list the valid choices; exceptions carry the failing object where
there is one (``UnknownNameError.known``, ``NoFeetError.robot``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = [
    "NoFeetError",
    "RobotLoadError",
    "UnknownNameError",
    "WbsimError",
    "check_keys",
    "check_output_file",
    "check_writable_folder",
    "is_real",
    "joint_list",
    "nonfinite_joints",
]


class WbsimError(Exception):
    """Root of every error that wbsim raises on purpose."""


class UnknownNameError(WbsimError, KeyError):
    """A name (robot, env, controller, pose, foot, ...) that is not registered.

    Attributes:
        kind: what was looked up, e.g. ``"robot"``.
        name: the name that was asked for.
        known: the valid names, sorted.
    """

    def __init__(self, kind: str, name: object, known: Iterable[str], context: str = ""):
        self.kind = kind
        self.name = name
        self.known = sorted(known)
        plural = {"foot": "feet"}.get(kind, f"{kind}s")
        where = f" {context}" if context else ""
        super().__init__(
            f"unknown {kind} {name!r}{where}; known {plural}: {', '.join(self.known) or '(none)'}"
        )

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def check_keys(owner: str, data, known: Iterable[str]) -> None:
    """Raise :class:`WbsimError` naming ``owner`` if ``data`` (a mapping) has keys not in ``known``;
    the message lists the unknown and the known keys. The one key check of every ``from_dict``."""
    known = sorted(known)
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise WbsimError(f"{owner}: unknown keys {unknown}; known: {known}")


class RobotLoadError(WbsimError):
    """A robot description could not be found, downloaded or parsed."""


class NoFeetError(WbsimError):
    """The robot was loaded without a foot configuration, so it has no feet or sole contact points."""

    def __init__(self, robot_name: str):
        self.robot = robot_name
        super().__init__(
            f"robot {robot_name!r} has no feet configured: pass a RobotConfig with 'feet' "
            "(foot name -> link and sole contact points) to wbsim.load_robot to use contacts"
        )


def check_writable_folder(folder, what: str, target=None) -> None:
    """Raise unless files can be written in ``folder``: it is a writable folder, or it can be
    created (its nearest existing ancestor is a writable folder). Nothing is left behind (a
    temporary file probes the folder).

    Raises:
        WbsimError: one line naming ``what`` and ``target`` (default ``folder``) and why.
    """
    import tempfile
    from pathlib import Path

    target = Path(folder) if target is None else Path(target)
    parent = Path(folder)
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise WbsimError(f"{what} {target}: {parent} is not a folder")
    try:  # a real probe (root passes os.access even on read-only mounts): a temporary file
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        how = "cannot be created" if target == Path(folder) != parent else ""
        raise WbsimError(
            f"{what} {target}: {how + ', ' if how else ''}cannot write in {parent} "
            f"({exc.strerror or exc})"
        ) from None


def check_output_file(path, what: str = "output file", overwrite: bool = True):
    """``path`` as a ``Path`` if a file can be written there: not a folder, and its folder either
    exists and is writable or can be created (its nearest existing ancestor is a writable folder);
    with ``overwrite=False``, not an existing file either (a result is never replaced silently).
    Nothing is left behind (a temporary file probes the folder): a command checks its output
    before the work, not after it.

    Raises:
        WbsimError: one line naming ``what`` and ``path``: a folder, a parent that is a file, or
            a location this process may not write; an existing file without ``overwrite``.
    """
    import os
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        raise WbsimError(f"{what} {p}: is a folder; expected a file path")
    check_writable_folder(p.parent, what, p)
    if p.exists() and not overwrite:
        raise WbsimError(
            f"{what} {p} exists; pick another path, or overwrite it (--overwrite on the "
            "command line, overwrite=True in Python)"
        )
    if p.exists() and not os.access(p, os.W_OK):
        raise WbsimError(f"{what} {p}: the file exists and is not writable")
    return p


def is_real(value: object) -> bool:
    """True for a real number (``int``, ``float``, a numpy integer or float); False for anything else,
    ``bool`` included (``-c frequency_hz=true`` is a mistake, not 1). Option checks call it before
    comparing a value, so a string gives a clear error instead of a ``TypeError``."""
    import numbers

    import numpy as np

    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def nonfinite_joints(values, joint_names) -> list[str] | None:
    """``None`` if every entry of ``values (n_joints,)`` is finite; else the names of the joints
    (``joint_names`` order) whose entries are NaN or infinite."""
    import numpy as np

    a = np.asarray(values)
    # the sum is finite iff every entry is (or it overflowed: then look closer)
    if a.ndim == 1 and a.dtype.kind == "f" and math.isfinite(a.sum()):
        return None
    bad = ~np.isfinite(a)
    if not bad.any():
        return None
    return [joint_names[i] for i in np.flatnonzero(bad)]


def joint_list(names, first: int = 5) -> str:
    """``"a, b, c, d, e and 3 more"``: the first ``first`` names and how many follow."""
    more = f" and {len(names) - first} more" if len(names) > first else ""
    return ", ".join(names[:first]) + more
