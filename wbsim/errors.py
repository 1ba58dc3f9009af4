"""The exception hierarchy of wbsim: one root, :class:`WbsimError`, and a few named cases.

Messages name what was asked for and list the valid choices; exceptions carry the failing object where
there is one (``UnknownNameError.known``, ``NoFeetError.robot``).
"""

from __future__ import annotations

from collections.abc import Iterable


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
        super().__init__(f"unknown {kind} {name!r}{where}; known {plural}: "
                         f"{', '.join(self.known) or '(none)'}")

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
