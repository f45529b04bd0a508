"""``sample_value``: values valid for the schemas strict function tools use."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tooling.offline.schema_values import check_value, sample_value


def _obj(**properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def test_sample_value_uses_property_name_hints() -> None:
    schema = _obj(
        path={"type": "string"},
        file_path={"type": "string"},
        content={"type": "string"},
        text={"type": "string"},
        objective={"type": "string"},
        title={"type": "string"},
        other={"type": "string"},
    )
    assert sample_value(schema) == {
        "path": "notes.md",
        "file_path": "notes.md",
        "content": "Drafted by the offline model.",
        "text": "Drafted by the offline model.",
        "objective": "Complete the task",
        "title": "Draft the document",
        "other": "example",
    }


def test_sample_value_scalars_enum_and_bounds() -> None:
    schema = _obj(
        status={"type": "string", "enum": ["pending", "done"]},
        count={"type": "integer"},
        bounded={"type": "integer", "minimum": 5, "maximum": 9},
        capped={"type": "integer", "maximum": 0},
        above={"type": "integer", "exclusiveMinimum": 1},
        ratio={"type": "number", "minimum": 0, "maximum": 0.5},
        flag={"type": "boolean"},
        fixed={"const": "v1"},
    )
    value = sample_value(schema)
    assert value == {
        "status": "pending",
        "count": 1,
        "bounded": 5,
        "capped": 0,
        "above": 2,
        "ratio": 0.5,
        "flag": True,
        "fixed": "v1",
    }
    assert check_value(value, schema) == []


def test_sample_value_resolves_nullable_branches_to_non_null() -> None:
    schema = _obj(
        a={"anyOf": [{"type": "string"}, {"type": "null"}]},
        b={"type": ["integer", "null"]},
        c={"type": ["string", "null"], "enum": [None, "x"]},
        d={"anyOf": [{"type": "null"}, _obj(inner={"type": "boolean"})]},
    )
    assert sample_value(schema) == {
        "a": "example",
        "b": 1,
        "c": "x",
        "d": {"inner": True},
    }


def test_sample_value_arrays_have_one_item_unless_bounded() -> None:
    schema = _obj(
        paths={"type": "array", "items": {"type": "string"}},
        pair={"type": "array", "items": {"type": "integer"}, "minItems": 2},
        empty={"type": "array", "items": {"type": "string"}, "maxItems": 0},
        steps={"type": "array", "items": _obj(title={"type": "string"})},
    )
    assert sample_value(schema) == {
        "paths": ["notes.md"],
        "pair": [1, 1],
        "empty": [],
        "steps": [{"title": "Draft the document"}],
    }


def test_sample_value_follows_refs_and_all_of() -> None:
    schema = {
        "$defs": {
            "Step": _obj(title={"type": "string"}, done={"type": "boolean"}),
        },
        **_obj(
            step={"$ref": "#/$defs/Step"},
            merged={"allOf": [_obj(x={"type": "integer"}), _obj(y={"type": "string"})]},
        ),
    }
    value = sample_value(schema)
    assert value == {
        "step": {"title": "Draft the document", "done": True},
        "merged": {"x": 1, "y": "example"},
    }
    assert check_value(value, schema) == []


def test_sample_value_recursive_ref_terminates() -> None:
    schema = {
        "$defs": {
            "Node": _obj(
                name={"type": "string"},
                child={"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
            )
        },
        "$ref": "#/$defs/Node",
    }
    value = sample_value(schema)
    assert value["name"] == "example"
    assert check_value(value, schema) == []


@pytest.mark.parametrize(
    "string_schema",
    [
        {"type": "string", "pattern": r"^[A-Z]{3}-\d{2}$"},
        {"type": "string", "pattern": r"^(alpha|beta)$"},
        {"type": "string", "minLength": 12},
        {"type": "string", "maxLength": 3},
        {"type": "string", "format": "date-time"},
        {"type": "string", "format": "uri"},
    ],
)
def test_sample_value_strings_meet_constraints(string_schema: dict[str, Any]) -> None:
    value = sample_value(string_schema)
    assert isinstance(value, str)
    assert check_value(value, string_schema) == []
    if "pattern" in string_schema:
        assert re.search(string_schema["pattern"], value)


def test_check_value_reports_problems() -> None:
    schema = _obj(a={"type": "integer", "maximum": 3}, b={"type": "string"})
    errors = check_value({"a": 4, "c": 1}, schema)
    assert "$: missing required 'b'" in errors
    assert "$: unexpected property 'c'" in errors
    assert "$.a: above maximum" in errors
