"""Dataclass <-> JSON conversion with strict validation.

``parse`` turns decoded JSON into a dataclass instance, rejecting unknown keys
and values of the wrong type; ``dump`` turns dataclasses (and the values they
hold) back into JSON-ready data. Both understand the types tool authors use:
``str``, ``int``, ``float``, ``bool``, ``None``, ``Literal``, ``Enum``,
``Optional``/unions with ``None``, ``tuple[T, ...]``, ``list[T]``,
``Sequence[T]``, ``dict[str, T]``/``Mapping[str, T]`` and nested dataclasses.
Field metadata may carry constraints: ``minimum``, ``maximum``, ``min_length``,
``max_length`` and ``pattern``.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import re
import types
import typing
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Literal, TypeVar, get_args, get_origin

T = TypeVar("T")

_MISSING = dataclasses.MISSING
_NONE_TYPE = type(None)
_SEQUENCE_ORIGINS = (
    list,
    tuple,
    frozenset,
    set,
    collections.abc.Sequence,
    collections.abc.Set,
)
_MAPPING_ORIGINS = (dict, collections.abc.Mapping)


class SerdeError(ValueError):
    """A value does not fit the declared type. ``path`` locates it."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.detail = message


@dataclasses.dataclass(frozen=True, slots=True)
class FieldInfo:
    """What serde and the schema builder need to know about one field."""

    name: str
    annotation: Any
    required: bool
    default: Any
    description: str | None
    metadata: Mapping[str, Any]

    def default_value(self) -> Any:
        return self.default() if callable(self.default) else self.default


def fields_of(cls: Any) -> tuple[FieldInfo, ...]:
    """The init fields of a dataclass type, with resolved annotations."""
    return _fields_of(cls)


@lru_cache(maxsize=512)
def _fields_of(cls: Any) -> tuple[FieldInfo, ...]:
    """The init fields of a dataclass type, with resolved annotations."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"{cls!r} is not a dataclass type.")
    hints = typing.get_type_hints(cls, include_extras=False)
    infos = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not _MISSING:
            default: Any = f.default
            required = False
        elif f.default_factory is not _MISSING:
            default = f.default_factory
            required = False
        else:
            default = None
            required = True
        description = f.metadata.get("description")
        infos.append(
            FieldInfo(
                name=f.name,
                annotation=hints.get(f.name, Any),
                required=required,
                default=default,
                description=str(description) if description is not None else None,
                metadata=f.metadata,
            )
        )
    return tuple(infos)


def split_optional(annotation: Any) -> tuple[Any, bool]:
    """Return ``(inner, nullable)`` for ``X | None`` / ``Optional[X]``."""
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not _NONE_TYPE]
        nullable = len(args) != len(get_args(annotation))
        if len(args) == 1:
            return args[0], nullable
        return typing.Union[tuple(args)], nullable  # noqa: UP007
    return annotation, annotation is _NONE_TYPE


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def parse(cls: type[T], data: Any, *, path: str = "") -> T:
    """Build ``cls`` from decoded JSON ``data``; unknown keys are rejected."""
    if not isinstance(data, Mapping):
        raise SerdeError(path, f"expected an object, got {type_name(data)}")
    infos = fields_of(cls)
    known = {info.name for info in infos}
    extra = sorted(str(key) for key in data if key not in known)
    if extra:
        raise SerdeError(path, f"Extra keys not permitted: {extra}")
    values: dict[str, Any] = {}
    for info in infos:
        field_path = f"{path}.{info.name}" if path else info.name
        if info.name not in data:
            if info.required:
                raise SerdeError(path, f"Missing required field: '{info.name}'")
            continue
        raw = data[info.name]
        _, nullable = split_optional(info.annotation)
        if raw is None and not nullable:
            if info.required:
                raise SerdeError(field_path, "value cannot be None")
            # Strict function calling sends null for "not given": use the default.
            continue
        value = _parse_value(info.annotation, raw, field_path)
        _check_constraints(info.metadata, value, field_path)
        values[info.name] = value
    try:
        return cls(**values)
    except (TypeError, ValueError) as error:
        raise SerdeError(path, str(error)) from error


def _parse_value(annotation: Any, raw: Any, path: str) -> Any:
    if annotation is Any or annotation is object:
        return raw
    inner, nullable = split_optional(annotation)
    if raw is None:
        if nullable:
            return None
        raise SerdeError(path, "value cannot be None")
    annotation = inner
    origin = get_origin(annotation)
    if origin is Literal:
        choices = get_args(annotation)
        for choice in choices:
            if raw == choice and type(raw) is type(choice):
                return choice
        raise SerdeError(path, f"expected one of {list(choices)!r}, got {raw!r}")
    if origin in (typing.Union, types.UnionType):
        errors = []
        for option in get_args(annotation):
            try:
                return _parse_value(option, raw, path)
            except SerdeError as error:
                errors.append(error.detail)
        raise SerdeError(path, "; ".join(errors))
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return parse(annotation, raw, path=path)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        try:
            return annotation(raw)
        except ValueError:
            values = [member.value for member in annotation]
            raise SerdeError(path, f"expected one of {values!r}, got {raw!r}") from None
    if annotation is bool:
        if isinstance(raw, bool):
            return raw
        raise SerdeError(path, f"expected boolean, got {type_name(raw)}")
    if annotation is int:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, float) and raw.is_integer():
            return int(raw)
        raise SerdeError(path, f"expected integer, got {type_name(raw)}")
    if annotation is float:
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            return float(raw)
        raise SerdeError(path, f"expected number, got {type_name(raw)}")
    if annotation is str:
        if isinstance(raw, str):
            return raw
        raise SerdeError(path, f"expected string, got {type_name(raw)}")
    if origin in _SEQUENCE_ORIGINS or annotation in (list, tuple, frozenset, set):
        if not isinstance(raw, list | tuple):
            raise SerdeError(path, f"expected array, got {type_name(raw)}")
        args = get_args(annotation)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(raw):
                raise SerdeError(path, f"expected {len(args)} items, got {len(raw)}")
            return tuple(
                _parse_value(kind, item, f"{path}[{i}]")
                for i, (kind, item) in enumerate(zip(args, raw, strict=True))
            )
        item_type = args[0] if args else Any
        items = [
            _parse_value(item_type, item, f"{path}[{i}]") for i, item in enumerate(raw)
        ]
        if frozenset in (origin, annotation) or origin is collections.abc.Set:
            return frozenset(items)
        if set in (origin, annotation):
            return set(items)
        return list(items) if origin is list or annotation is list else tuple(items)
    if origin in _MAPPING_ORIGINS or annotation in (dict,):
        if not isinstance(raw, Mapping):
            raise SerdeError(path, f"expected object, got {type_name(raw)}")
        args = get_args(annotation)
        value_type = args[1] if len(args) == 2 else Any
        return {
            str(k): _parse_value(value_type, v, f"{path}.{k}") for k, v in raw.items()
        }
    raise SerdeError(path, f"unsupported type {annotation!r}")


def _check_constraints(metadata: Mapping[str, Any], value: Any, path: str) -> None:
    if value is None or not metadata:
        return
    minimum = metadata.get("minimum")
    if minimum is not None and isinstance(value, int | float) and value < minimum:
        raise SerdeError(path, f"must be >= {minimum}")
    maximum = metadata.get("maximum")
    if maximum is not None and isinstance(value, int | float) and value > maximum:
        raise SerdeError(path, f"must be <= {maximum}")
    if isinstance(value, str | list | tuple):
        min_length = metadata.get("min_length")
        if min_length is not None and len(value) < min_length:
            raise SerdeError(path, f"length must be >= {min_length}")
        max_length = metadata.get("max_length")
        if max_length is not None and len(value) > max_length:
            raise SerdeError(path, f"length must be <= {max_length}")
    pattern = metadata.get("pattern")
    if (
        pattern is not None
        and isinstance(value, str)
        and not re.fullmatch(pattern, value)
    ):
        raise SerdeError(path, f"must match pattern {pattern!r}")


def dump(value: Any, *, exclude_none: bool = False) -> Any:
    """Turn a value (dataclasses included) into JSON-ready data."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if exclude_none and item is None:
                continue
            out[f.name] = dump(item, exclude_none=exclude_none)
        return out
    if isinstance(value, enum.Enum):
        return dump(value.value, exclude_none=exclude_none)
    if isinstance(value, Mapping):
        return {str(k): dump(v, exclude_none=exclude_none) for k, v in value.items()}
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [dump(item, exclude_none=exclude_none) for item in items]
    return str(value)


def is_instance_of(value: Any, annotation: Any) -> bool:
    """A light structural check used for example validation."""
    try:
        _parse_value(annotation, dump(value), "")
    except SerdeError:
        return False
    return True
