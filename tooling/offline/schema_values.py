"""Deterministic sample values for JSON schemas.

The offline model fills function-call arguments and structured answers with
these values, so they must satisfy the schemas OpenAI strict mode accepts:
every property present, ``enum``/``const`` honoured, nullable branches
resolved to their non-null side, numeric bounds and string lengths respected.
``$ref`` into ``$defs``/``definitions`` is followed (pydantic emits it).

``check_value`` is the matching small validator, for the same subset.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["check_value", "sample_string", "sample_value"]

_MAX_DEPTH = 12

# Property name -> sample string. Anything else gets "example".
_NAMED_STRINGS: Mapping[str, str] = {
    "path": "notes.md",
    "file_path": "notes.md",
    "filename": "notes.md",
    "content": "Drafted by the offline model.",
    "text": "Drafted by the offline model.",
    "target": ".",
    "objective": "Complete the task",
    "initial_step": "Draft the document",
    "step": "Review the draft",
    "title": "Draft the document",
    "new": "Revised by the offline model.",
    "prefix": "",
}

_FORMATS: Mapping[str, str] = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "duration": "P1D",
    "email": "offline@example.com",
    "hostname": "example.com",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


def sample_string(name: str | None) -> str:
    """The sample text used for a string property called ``name``."""
    return _NAMED_STRINGS.get(name or "", "example")


def sample_value(schema: Mapping[str, Any] | bool, *, name: str | None = None) -> Any:
    """A JSON value valid for ``schema``; ``name`` is the property it fills."""
    root = schema if isinstance(schema, Mapping) else {}
    return _Generator(root).value(schema, name, 0)


class _Generator:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def value(
        self, schema: Mapping[str, Any] | bool, name: str | None, depth: int
    ) -> Any:
        if not isinstance(schema, Mapping):
            return sample_string(name)
        schema = _merged(resolve(schema, self.root), self.root)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            options = list(schema["enum"])
            non_null = [option for option in options if option is not None]
            return (non_null or options or [None])[0]
        for key in ("anyOf", "oneOf"):
            if key in schema:
                branches = [resolve(b, self.root) for b in schema[key]]
                if depth >= _MAX_DEPTH and any(_is_null(b) for b in branches):
                    return None  # stop a recursive schema where it may stop
                chosen = [b for b in branches if not _is_null(b)] or branches
                base = {k: v for k, v in schema.items() if k != key}
                return self.value({**base, **chosen[0]}, name, depth)
        kind = _primary_type(schema)
        if depth >= _MAX_DEPTH and _allows_null(schema):
            return None
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, name, depth)
        if kind == "integer":
            return _integer(schema)
        if kind == "number":
            return _number(schema)
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return _string(schema, name)

    def _object(self, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        return {key: self.value(sub, key, depth + 1) for key, sub in properties.items()}

    def _array(
        self, schema: Mapping[str, Any], name: str | None, depth: int
    ) -> list[Any]:
        low = int(schema.get("minItems", 1 if depth < _MAX_DEPTH else 0))
        high = schema.get("maxItems")
        count = max(low, 1) if depth < _MAX_DEPTH else low
        if isinstance(high, int):
            count = min(count, high)
        prefix = list(schema.get("prefixItems") or [])
        items = schema.get("items", {})
        values: list[Any] = []
        for index in range(count):
            sub = prefix[index] if index < len(prefix) else items
            value = self.value(sub, _singular(name), depth + 1)
            if schema.get("uniqueItems") and value in values and isinstance(value, str):
                value = f"{value} {index + 1}"
            values.append(value)
        return values


def resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    """Follow local ``$ref`` pointers (``#/$defs/X``) until a real schema."""
    seen: set[str] = set()
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
        ref: str = schema["$ref"]
        if ref in seen or not ref.startswith("#"):
            break
        seen.add(ref)
        target: Any = root
        for part in ref[1:].split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, Mapping) else None
        if not isinstance(target, Mapping):
            break
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **extra}
    return schema


def _merged(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    if "allOf" not in schema:
        return schema
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema["allOf"]:
        part = _merged(resolve(part, root), root)
        for key, value in part.items():
            if key == "properties":
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required":
                merged["required"] = [*merged.get("required", []), *value]
            else:
                merged.setdefault(key, value)
    return merged


def _types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, Sequence):
        return [str(k) for k in kind]
    return []


def _is_null(schema: Any) -> bool:
    return isinstance(schema, Mapping) and _types(schema) == ["null"]


def _allows_null(schema: Mapping[str, Any]) -> bool:
    return "null" in _types(schema)


def _primary_type(schema: Mapping[str, Any]) -> str:
    kinds = [k for k in _types(schema) if k != "null"]
    if kinds:
        return kinds[0]
    if _types(schema):
        return "null"
    if "properties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return "string"


def _singular(name: str | None) -> str | None:
    if name and name.endswith("s") and len(name) > 1:
        return name[:-1]
    return name


def _integer(schema: Mapping[str, Any]) -> int:
    low = _bound(schema, "minimum", "exclusiveMinimum", integer=True)
    high = _bound(schema, "maximum", "exclusiveMaximum", integer=True)
    value = 1
    if low is not None:
        value = max(value, math.ceil(low))
    if high is not None:
        value = min(value, math.floor(high))
    step = schema.get("multipleOf")
    if isinstance(step, int) and step > 0 and value % step:
        value += step - value % step
    return value


def _number(schema: Mapping[str, Any]) -> float:
    low = _bound(schema, "minimum", "exclusiveMinimum", integer=False)
    high = _bound(schema, "maximum", "exclusiveMaximum", integer=False)
    value = 1.0
    if low is not None:
        value = max(value, low)
    if high is not None:
        value = min(value, high)
    return float(value)


def _bound(
    schema: Mapping[str, Any], inclusive: str, exclusive: str, *, integer: bool
) -> float | None:
    lower = inclusive == "minimum"
    result: float | None = None
    if isinstance(schema.get(inclusive), int | float):
        result = float(schema[inclusive])
    raw = schema.get(exclusive)
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        nudge = 1.0 if integer else 0.5
        candidate = float(raw) + (nudge if lower else -nudge)
        if result is None:
            result = candidate
        else:
            result = max(result, candidate) if lower else min(result, candidate)
    return result


def _string(schema: Mapping[str, Any], name: str | None) -> str:
    text = _FORMATS.get(str(schema.get("format", "")), sample_string(name))
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and not _matches(pattern, text):
        text = _from_pattern(pattern, text)
    low = int(schema.get("minLength", 0))
    if len(text) < low:
        text = text + "x" * (low - len(text))
    high = schema.get("maxLength")
    if isinstance(high, int) and len(text) > high:
        text = text[:high]
    return text


def _matches(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return True


def _from_pattern(pattern: str, fallback: str) -> str:
    """The shortest string the regex parser says ``pattern`` accepts."""
    for candidate in (fallback, "example", "a", "1", "A", "a1"):
        if _matches(pattern, candidate):
            return candidate
    try:
        parser: Any = importlib.import_module("re._parser")
        text = _emit(parser, parser.parse(pattern))
    except Exception:
        return fallback
    return text if _matches(pattern, text) else fallback


def _emit(parser: Any, parsed: Any) -> str:
    constants: Any = importlib.import_module("re._constants")
    out: list[str] = []
    for op, arg in parsed:
        if op == constants.LITERAL:
            out.append(chr(arg))
        elif op == constants.ANY:
            out.append("a")
        elif op == constants.IN:
            out.append(_emit_class(constants, arg))
        elif op in (constants.MAX_REPEAT, constants.MIN_REPEAT):
            low, _high, sub = arg
            out.append(_emit(parser, sub) * max(low, 0))
        elif op == constants.SUBPATTERN:
            out.append(_emit(parser, arg[-1]))
        elif op == constants.BRANCH:
            out.append(_emit(parser, arg[1][0]))
        elif op == constants.CATEGORY:
            out.append(_emit_category(constants, arg))
        elif op == constants.NOT_LITERAL:
            out.append("a" if arg != ord("a") else "b")
    return "".join(out)


def _emit_class(constants: Any, items: Any) -> str:
    negated = False
    for op, arg in items:
        if op == constants.NEGATE:
            negated = True
        elif negated:
            continue
        elif op == constants.LITERAL:
            return chr(arg)
        elif op == constants.RANGE:
            return chr(arg[0])
        elif op == constants.CATEGORY:
            return _emit_category(constants, arg)
    return "a"


def _emit_category(constants: Any, category: Any) -> str:
    if category == constants.CATEGORY_DIGIT:
        return "1"
    if category == constants.CATEGORY_SPACE:
        return " "
    return "a"


def check_value(value: Any, schema: Mapping[str, Any] | bool) -> list[str]:
    """Problems with ``value`` against ``schema`` (empty when it is valid).

    Covers the subset ``sample_value`` understands; used to verify generated
    structured answers after the offline model edits them.
    """
    root = schema if isinstance(schema, Mapping) else {}
    errors: list[str] = []
    _check(value, schema, root, "$", errors)
    return errors


def _check(
    value: Any, schema: Any, root: Mapping[str, Any], where: str, errors: list[str]
) -> None:
    if not isinstance(schema, Mapping):
        return
    schema = _merged(resolve(schema, root), root)
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: expected const {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} not in enum")
    for key in ("anyOf", "oneOf"):
        if key in schema:
            if not any(not check_value_in(value, b, root) for b in schema[key]):
                errors.append(f"{where}: matches no {key} branch")
            return
    kinds = _types(schema)
    if kinds and not any(_is_kind(value, kind) for kind in kinds):
        errors.append(f"{where}: {type(value).__name__} is not {'/'.join(kinds)}")
        return
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties") or {}
        for key in schema.get("required") or []:
            if key not in value:
                errors.append(f"{where}: missing required {key!r}")
        if schema.get("additionalProperties") is False:
            for key in value:
                if key not in properties:
                    errors.append(f"{where}: unexpected property {key!r}")
        for key, item in value.items():
            if key in properties:
                _check(item, properties[key], root, f"{where}.{key}", errors)
    elif isinstance(value, list):
        if len(value) < int(schema.get("minItems", 0)):
            errors.append(f"{where}: too few items")
        if isinstance(schema.get("maxItems"), int) and len(value) > schema["maxItems"]:
            errors.append(f"{where}: too many items")
        for index, item in enumerate(value):
            _check(item, schema.get("items", {}), root, f"{where}[{index}]", errors)
    elif isinstance(value, str):
        _check_string(value, schema, where, errors)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(value, schema, where, errors)


def check_value_in(value: Any, schema: Any, root: Mapping[str, Any]) -> list[str]:
    """``check_value`` against a sub-schema that may ``$ref`` into ``root``."""
    errors: list[str] = []
    _check(value, schema, root, "$", errors)
    return errors


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True


def _check_string(
    value: str, schema: Mapping[str, Any], where: str, errors: list[str]
) -> None:
    if len(value) < int(schema.get("minLength", 0)):
        errors.append(f"{where}: shorter than minLength")
    if isinstance(schema.get("maxLength"), int) and len(value) > schema["maxLength"]:
        errors.append(f"{where}: longer than maxLength")
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and not _matches(pattern, value):
        errors.append(f"{where}: does not match {pattern!r}")


def _check_number(
    value: float, schema: Mapping[str, Any], where: str, errors: list[str]
) -> None:
    if isinstance(schema.get("minimum"), int | float) and value < schema["minimum"]:
        errors.append(f"{where}: below minimum")
    if isinstance(schema.get("maximum"), int | float) and value > schema["maximum"]:
        errors.append(f"{where}: above maximum")
    low = schema.get("exclusiveMinimum")
    if isinstance(low, int | float) and not isinstance(low, bool) and value <= low:
        errors.append(f"{where}: not above exclusiveMinimum")
    high = schema.get("exclusiveMaximum")
    if isinstance(high, int | float) and not isinstance(high, bool) and value >= high:
        errors.append(f"{where}: not below exclusiveMaximum")
