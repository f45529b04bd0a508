"""JSON schemas for dataclasses, compatible with OpenAI strict function calling.

Strict mode wants every property listed in ``required`` and
``additionalProperties: false`` on every object. A field with a default is
therefore emitted as *nullable*: the model sends ``null`` for "not given" and
``serde.parse`` substitutes the default. Field descriptions come from
``field(metadata={"description": ...})`` and can be overridden per field.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, get_args, get_origin

from .serde import fields_of, split_optional

EMPTY_OBJECT_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {},
    "required": [],
    "additionalProperties": False,
}

_PRIMITIVES: Mapping[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
}
_CONSTRAINTS: Mapping[str, str] = {
    "minimum": "minimum",
    "maximum": "maximum",
    "min_length": "minLength",
    "max_length": "maxLength",
    "pattern": "pattern",
}


def dataclass_schema(
    cls: type[Any] | None,
    *,
    descriptions: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The object schema of ``cls`` (``None`` gives an empty object schema)."""
    if cls is None:
        return {
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": False,
        }
    overrides = descriptions or {}
    properties: dict[str, Any] = {}
    for info in fields_of(cls):
        inner, nullable = split_optional(info.annotation)
        schema = _type_schema(inner)
        if nullable or not info.required:
            schema = _nullable(schema)
        for key, schema_key in _CONSTRAINTS.items():
            if key in info.metadata:
                schema[schema_key] = info.metadata[key]
        description = overrides.get(info.name, info.description)
        if description:
            schema = {"description": description, **schema}
        properties[info.name] = schema
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str) and kind not in ("object", "array"):
        nullable = {**schema, "type": [kind, "null"]}
        if "enum" in schema and None not in schema["enum"]:
            nullable["enum"] = [*schema["enum"], None]
        return nullable
    if isinstance(kind, list):
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    if "anyOf" in schema:
        options = schema["anyOf"]
        if any(option.get("type") == "null" for option in options):
            return schema
        return {"anyOf": [*options, {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


def _type_schema(annotation: Any) -> dict[str, Any]:
    if annotation is Any or annotation is object:
        return {}
    inner, nullable = split_optional(annotation)
    if nullable:
        return _nullable(_type_schema(inner))
    origin = get_origin(annotation)
    if origin is Literal:
        return _enum_schema(list(get_args(annotation)))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_schema([member.value for member in annotation])
    if annotation in _PRIMITIVES:
        return {"type": _PRIMITIVES[annotation]}
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return dataclass_schema(annotation)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_type_schema(option) for option in get_args(annotation)]}
    sequences = (list, tuple, set, frozenset, collections.abc.Sequence)
    if origin in sequences or annotation in sequences:
        items = [a for a in get_args(annotation) if a is not Ellipsis]
        return {"type": "array", "items": _type_schema(items[0]) if items else {}}
    if origin in (dict, collections.abc.Mapping) or annotation is dict:
        args = get_args(annotation)
        values = _type_schema(args[1]) if len(args) == 2 else {}
        return {"type": "object", "additionalProperties": values}
    raise TypeError(f"Unsupported type for a JSON schema: {annotation!r}")


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    kinds = {_PRIMITIVES.get(type(value)) for value in values}
    schema: dict[str, Any] = {"enum": values}
    if len(kinds) == 1 and None not in kinds:
        schema = {"type": kinds.pop(), "enum": values}
    return schema


def is_strict_compatible(schema: Mapping[str, Any]) -> bool:
    """True when every object lists all properties and forbids extra keys."""
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required", [])) != set(properties):
            return False
        return all(is_strict_compatible(value) for value in properties.values())
    if "items" in schema:
        return is_strict_compatible(schema["items"])
    if "anyOf" in schema:
        return all(is_strict_compatible(option) for option in schema["anyOf"])
    return True
