"""Controllers (installed as ``wbsim.controllers``): one protocol, one registry, one file each.

Every controller is a small class that follows :class:`~wbsim.controllers.base.Controller`: built with a
:class:`wbsim.Robot` and keyword options, then ``reset(state)`` and ``compute(state, schedule)`` ->
:class:`~wbsim.controllers.base.Command`. :data:`CONTROLLERS` maps the command-line names to classes;
:func:`make_controller` builds one by name.
"""

from __future__ import annotations

import importlib
from typing import Any

from wbsim.controllers.base import Controller

from wbsim.errors import UnknownNameError
from wbsim.types import STANDING, Command, ContactSchedule, RobotState

__all__ = [
    "CONTROLLERS",
    "STANDING",
    "CaptureStepping",
    "Command",
    "ContactProjectedID",
    "ContactSchedule",
    "Controller",
    "GravityCompensationQP",
    "PDController",
    "RobotState",
    "ZeroController",
    "make_controller",
]

#: Registry: controller name -> ``"module:Class"`` (imported when first used).
CONTROLLERS: dict[str, str] = {
    "gravity_qp": "wbsim.controllers.gravity_qp:GravityCompensationQP",
    "projected_id": "wbsim.controllers.contact_projected_id:ContactProjectedID",
    "pd": "wbsim.controllers.pd:PDController",
    "zero": "wbsim.controllers.pd:ZeroController",
    "stepping": "wbsim.controllers.capture_stepping:CaptureStepping",
}


def controller_class(name: str) -> type:
    """The class registered as ``name``; raises :class:`UnknownNameError` listing the known names."""
    if name not in CONTROLLERS:
        raise UnknownNameError("controller", name, CONTROLLERS)
    module, cls = CONTROLLERS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def make_controller(name: str, robot, /, **options: Any) -> Controller:
    """Build the controller registered as ``name`` for ``robot`` with keyword ``options``.

    Raises:
        UnknownNameError: unknown controller name, or an option the controller does not take (the
            message lists the options it takes).
    """
    cls = controller_class(name)
    check_options(f"of controller {name!r}", cls, options, skip=("robot",))
    return cls(robot, **options)


def check_options(what: str, func, options: dict, skip: tuple[str, ...] = ()) -> None:
    """Raise :class:`UnknownNameError` for keys of ``options`` that ``func`` does not accept."""
    import inspect

    params = inspect.signature(func).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    known = [p for p in params if p not in skip and p != "self"]
    for key in options:
        if key not in known:
            raise UnknownNameError("option", key, known, context=what)


def __getattr__(attr: str):  # lazy access to the controller classes by their class names
    for target in CONTROLLERS.values():
        module, cls = target.split(":")
        if cls == attr:
            return getattr(importlib.import_module(module), cls)
    if attr == "PDController":
        return controller_class("pd")
    raise AttributeError(attr)
