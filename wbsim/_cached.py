"""``cached_property`` without a lock: Python 3.11's ``functools.cached_property`` takes an
``RLock`` at each first access, which costs more than most of the properties it caches (a
``ContactSensing`` is made every physics step); 3.12 dropped the lock, and this is its
behaviour."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

__all__ = ["cached_property"]

T = TypeVar("T")


class cached_property(Generic[T]):
    """The value of ``func(instance)``, computed at the first access and stored in the
    instance's ``__dict__`` under the property's name (later accesses read it from there)."""

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.attrname: str | None = None
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.attrname = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> cached_property[T]: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...
    def __get__(self, instance: object | None, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = self.func(instance)
        instance.__dict__[self.attrname] = value  # type: ignore[index]
        return value
