"""``Cls[T](...)``: generic classes whose subscript is also an argument.

``typing`` sets a subscript's type arguments on the new instance only after
``__init__`` has run, so ``__init__`` cannot use them. ``SubscriptAlias``
stores them on the instance before ``__init__`` runs; the class reads them
with ``subscript_args(self)``. A class opts in by returning a
``SubscriptAlias`` from ``__class_getitem__`` for the subscripts it gives a
meaning to.
"""

from __future__ import annotations

import contextlib
import types
from typing import Any, TypeVar, get_args

_ARGS = "_subscript_args"


class SubscriptAlias(types.GenericAlias):
    """A generic alias whose call hands its type arguments to ``__init__``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        origin: Any = self.__origin__
        if origin.__new__ is object.__new__:
            instance = origin.__new__(origin)
        else:
            instance = origin.__new__(origin, *args, **kwargs)
        with contextlib.suppress(AttributeError, TypeError):  # a slots class
            object.__setattr__(instance, _ARGS, get_args(self))
        if isinstance(instance, origin):
            instance.__init__(*args, **kwargs)
        with contextlib.suppress(AttributeError, TypeError):
            instance.__orig_class__ = self
        return instance


def subscript_args(instance: object) -> tuple[Any, ...]:
    """The type arguments ``instance`` was created with (``()`` if none)."""
    args: tuple[Any, ...] = getattr(instance, "__dict__", {}).get(_ARGS, ())
    return args


def is_concrete(argument: Any) -> bool:
    """A class given as a type argument, as opposed to ``Any``, ``object`` or
    a type variable (which leave the type open)."""
    return (
        isinstance(argument, type)
        and argument is not Any
        and argument is not object
        and not isinstance(argument, TypeVar)
    )


def type_name(value: Any) -> str:
    if value is None or value is type(None):
        return "None"
    return str(getattr(value, "__name__", None) or repr(value))
