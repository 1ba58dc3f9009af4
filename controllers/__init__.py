"""Controllers (installed as ``wbsim.controllers``): one protocol, one registry, one file each.

Every controller is a small class that follows :class:`~wbsim.controllers.base.Controller`: built with a
:class:`wbsim.Robot` and keyword options, then ``reset(state)`` and ``compute(state, schedule)`` ->
:class:`~wbsim.controllers.base.Command`. :data:`CONTROLLERS` maps the command-line names to classes;
:func:`make_controller` builds one by name.

Controllers from elsewhere (plug-ins) are named the same way wherever a controller name is taken
(``wbsim run --controller``, :func:`wbsim.rollout.run_episode`, ``wbsim baseline``, the residual env
mode): ``"package.module:ClassName"`` imports that class, and installed packages register short
names in the entry-point group :data:`ENTRY_POINT_GROUP` (``wbsim.controllers``), e.g. in their
``pyproject.toml``::

    [project.entry-points."wbsim.controllers"]
    my_pd = "my_package.control:MyPD"

:func:`available_controllers` lists every name with where it comes from (``wbsim list``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import numbers
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from wbsim.controllers.base import Controller
from wbsim.errors import UnknownNameError, WbsimError
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
    "available_controllers",
    "check_controller_class",
    "check_controller_options",
    "controller_class",
    "make_controller",
    "shadowed_plugins",
]

#: Registry: controller name -> ``"module:Class"`` (imported when first used).
CONTROLLERS: dict[str, str] = {
    "gravity_qp": "wbsim.controllers.gravity_qp:GravityCompensationQP",
    "projected_id": "wbsim.controllers.contact_projected_id:ContactProjectedID",
    "pd": "wbsim.controllers.pd:PDController",
    "zero": "wbsim.controllers.pd:ZeroController",
    "stepping": "wbsim.controllers.capture_stepping:CaptureStepping",
    "push_step": "wbsim.controllers.push_stepping:PushStepping",
}


#: Entry-point group through which installed packages register controller names.
ENTRY_POINT_GROUP = "wbsim.controllers"
#: What the :class:`~wbsim.controllers.base.Controller` protocol asks of a class: methods ...
_PROTOCOL_METHODS = ("reset", "compute")
#: ... and an attribute (a class attribute, or one set by ``__init__``).
_PROTOCOL_ATTRIBUTES = ("name",)


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """Installed plug-ins: name -> entry point of the group :data:`ENTRY_POINT_GROUP`."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def available_controllers() -> dict[str, str]:
    """Every controller name -> where it comes from: ``"wbsim (module:Class)"`` for the built-in
    ones, ``"<distribution> (module:Class)"`` for a plug-in registered through
    :data:`ENTRY_POINT_GROUP` (a built-in name wins over a plug-in of the same name)."""
    out = {name: f"wbsim ({target})" for name, target in CONTROLLERS.items()}
    for name, ep in _entry_points().items():
        if name not in out:
            dist = ep.dist.name if ep.dist is not None else "?"
            out[name] = f"{dist} ({ep.value})"
    return out


def shadowed_plugins() -> dict[str, str]:
    """Plug-ins registered under a built-in controller's name (the built-in wins, so they are never
    reached by that name): name -> ``"<distribution> (module:Class)"``; reach one by its
    ``module:Class``."""
    return {
        name: f"{ep.dist.name if ep.dist is not None else '?'} ({ep.value})"
        for name, ep in _entry_points().items()
        if name in CONTROLLERS
    }


def _import_target(target: str, what: str) -> Any:
    """The object named by ``"package.module:Attr"``; :class:`WbsimError` naming what failed."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise WbsimError(f"{what}: {target!r} is not 'package.module:ClassName'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise WbsimError(
            f"{what}: cannot import module {module_name!r} of {target!r} ({exc}); "
            "is it installed or on PYTHONPATH?"
        ) from exc
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            classes = sorted(
                n for n, v in vars(module).items() if isinstance(v, type) and not n.startswith("_")
            )
            raise WbsimError(
                f"{what}: module {module_name!r} has no attribute {attr!r}; its "
                f"classes: {', '.join(classes) or '(none)'}"
            )
        obj = getattr(obj, part)
    return obj


def check_controller_class(cls: Any, what: str) -> type:
    """``cls`` if it is a class with the methods of the
    :class:`~wbsim.controllers.base.Controller` protocol (``reset``, ``compute``; its ``name`` is
    checked on the instance by :func:`make_controller`).

    Raises:
        WbsimError: not a class, or a class without them (the message names what is missing).
    """
    if not isinstance(cls, type):
        raise WbsimError(
            f"{what}: {cls!r} is not a class; a controller is a class built with "
            "(robot, **options) that follows wbsim.controllers.base.Controller"
        )
    methods = [m for m in _PROTOCOL_METHODS if not callable(getattr(cls, m, None))]
    if methods:  # then also the attributes neither the class nor an __init__ of it sets
        attributes = [a for a in _PROTOCOL_ATTRIBUTES if not _may_set(cls, a)]
        raise WbsimError(_protocol_error(what, cls, methods, attributes))
    return cls


def _may_set(cls: type, attribute: str) -> bool:
    """Whether ``cls`` has ``attribute`` or an ``__init__`` in its MRO may set it (names it as an
    attribute: ``self.name = ...``), as far as can be told without building it."""
    if hasattr(cls, attribute):
        return True
    codes = [getattr(vars(c).get("__init__"), "__code__", None) for c in cls.__mro__]
    return any(code is not None and attribute in code.co_names for code in codes)


def _protocol_error(what: str, cls: type, methods: list[str], attributes: list[str]) -> str:
    """The message of a class missing ``methods`` and ``attributes`` of the protocol."""
    missing = [f"method(s) {', '.join(methods)}"] if methods else []
    if attributes:
        missing.append(
            f"attribute(s) {', '.join(attributes)} (e.g. a class attribute name = 'my_controller')"
        )
    return (
        f"{what}: class {cls.__qualname__} does not follow the controller protocol "
        f"(wbsim.controllers.base.Controller): missing {' and '.join(missing)}; it needs "
        "reset(state), compute(state, schedule) -> Command and a name"
    )


def controller_class(name: str) -> type:
    """The controller class called ``name``: a built-in name (:data:`CONTROLLERS`), a plug-in's
    entry-point name (:data:`ENTRY_POINT_GROUP`), or ``"package.module:ClassName"``.

    Raises:
        UnknownNameError: an unknown name (the message lists the known ones and the
            ``module:Class`` form).
        WbsimError: a module that does not import, a missing attribute, or a class that does not
            follow the controller protocol (the message names what is missing).
    """
    if not isinstance(name, str):
        raise WbsimError(f"a controller is named by a string, got {name!r}")
    if name in CONTROLLERS:
        module, cls = CONTROLLERS[name].split(":")
        return getattr(importlib.import_module(module), cls)
    if ":" in name:
        return check_controller_class(
            _import_target(name, f"controller {name!r}"), f"controller {name!r}"
        )
    plugins = _entry_points()
    if name in plugins:
        try:
            obj = plugins[name].load()
        except Exception as exc:  # whatever the plug-in raises on import
            raise WbsimError(
                f"controller {name!r}: the plug-in {plugins[name].value!r} does "
                f"not load: {type(exc).__name__}: {exc}"
            ) from exc
        return check_controller_class(obj, f"controller {name!r} ({plugins[name].value})")
    module, dot, cls = name.rpartition(".")
    hint = (  # my_controllers.MyPD for my_controllers:MyPD, the most common slip
        f"(a class is named package.module:Class, with a colon: did you mean '{module}:{cls}'?)"
        if dot and module and cls
        else ""
    )
    raise UnknownNameError(
        "controller", name, [*available_controllers(), "<package.module:Class>"], hint
    )


def make_controller(name: str, robot, /, **options: Any) -> Controller:
    """Build the controller registered as ``name`` for ``robot`` with keyword ``options``.

    Raises:
        UnknownNameError: unknown controller name, or an option the controller does not take (the
            message lists the options it takes).
        WbsimError: as :func:`controller_class`; an option value not of the kind its parameter
            declares (:func:`check_options`: e.g. text for a ``float``), before the controller is
            built; an instance without a ``name`` (the protocol's attribute).
    """
    check_controller_options(name, options)
    cls = controller_class(name)
    controller = cls(robot, **options)
    missing = [a for a in _PROTOCOL_ATTRIBUTES if not hasattr(controller, a)]
    if missing:
        raise WbsimError(_protocol_error(f"controller {name!r}", cls, [], missing))
    return controller


def check_controller_options(name: str, options: Mapping[str, Any]) -> None:
    """Check ``options`` of the controller ``name`` before anything is built (what
    :func:`make_controller` checks first; the command line calls it as soon as it has parsed them).

    Raises:
        UnknownNameError: as :func:`controller_class`, or an option the controller does not take.
        WbsimError: as :func:`controller_class`, or a value not of the kind the option declares
            (see :func:`check_options`).
    """
    check_options(f"of controller {name!r}", controller_class(name), options, skip=("robot",))


#: The kinds of option value checked before a controller is built: a parameter declared as one of
#: these types (by its annotation, else by its default's type) -> (what it takes, the test).
_KINDS: dict[type, tuple[str, Callable[[Any], bool]]] = {
    bool: ("true or false", lambda v: isinstance(v, (bool, np.bool_))),
    int: ("an integer", lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool)),
    float: ("a number", lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool)),
}


def _declared_kind(param: inspect.Parameter, hint: Any) -> tuple[str, Callable[[Any], bool]] | None:
    """What ``param`` takes if it is declared a number or a flag (``float``, ``int``, ``bool``, or
    one of them ``| None``; without an annotation, a ``float``, ``int`` or ``bool`` default, where
    an ``int`` default takes any number): ``(what, test)``; ``None`` for anything else."""
    if hint is None:  # no annotation (or one that does not resolve): the default's type
        kind = type(param.default)
        return _KINDS[float] if kind is int else _KINDS.get(kind)
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    members = typing.get_args(hint) if union else (hint,)
    declared = [m for m in members if m is not type(None)]
    if len(declared) != 1 or declared[0] not in _KINDS:
        return None
    text, test = _KINDS[declared[0]]
    text = f"{text} ({declared[0].__name__})"
    if len(members) == 1 and param.default is not None:
        return text, test
    return f"{text} or null", lambda v: v is None or test(v)


def check_options(what: str, func, options: Mapping[str, Any], skip: tuple[str, ...] = ()) -> None:
    """Check ``options`` (keyword arguments) against the signature of ``func`` (a class: its
    constructor), before it is called.

    Raises:
        UnknownNameError: a key that ``func`` does not take (unless it takes ``**kwargs``).
        WbsimError: a value not of the kind its parameter declares: ``float`` a number, ``int`` an
            integer, ``bool`` true or false (``X | None``, or a ``None`` default: also null); by
            the annotation, else by the default's type. Other parameters are the callee's to check.
    """
    params = inspect.signature(func).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    known = [p for p in params if p not in skip and p != "self"]
    try:
        hints = typing.get_type_hints(
            typing.cast(Any, func).__init__ if isinstance(func, type) else func
        )
    except Exception:  # noqa: BLE001  an annotation that does not resolve: defaults decide
        hints = {}
    for key, value in options.items():
        if key not in known:
            if takes_any:
                continue
            raise UnknownNameError("option", key, known, context=what)
        kind = _declared_kind(params[key], hints.get(key))
        if kind is not None and not kind[1](value):
            raise WbsimError(f"option {key!r} {what} takes {kind[0]}, got {value!r}")


def __getattr__(attr: str):  # lazy access to the controller classes by their class names
    for target in CONTROLLERS.values():
        module, cls = target.split(":")
        if cls == attr:
            return getattr(importlib.import_module(module), cls)
    if attr == "PDController":
        return controller_class("pd")
    raise AttributeError(attr)
