"""``tooling.runtime.schema``: strict-mode JSON schemas for params dataclasses."""

import dataclasses
import enum
from collections.abc import Sequence
from typing import Any, Literal

import pytest

from tooling.runtime.schema import (
    EMPTY_OBJECT_SCHEMA,
    _nullable,
    dataclass_schema,
    is_strict_compatible,
)


class Size(enum.Enum):
    SMALL = "s"
    LARGE = "l"


@dataclasses.dataclass
class Location:
    city: str = dataclasses.field(metadata={"description": "City name"})
    zip_code: str | None = None


@dataclasses.dataclass
class Lookup:
    query: str = dataclasses.field(metadata={"description": "Search text"})
    limit: int = dataclasses.field(
        default=5,
        metadata={"description": "Maximum hits", "minimum": 1, "maximum": 50},
    )
    status: Literal["pending", "done"] | None = None
    mode: Literal["fast", "slow"] = "fast"
    location: Location | None = None
    home: Location = dataclasses.field(default_factory=lambda: Location("x"))
    tags: list[str] = dataclasses.field(default_factory=list)
    code: str = dataclasses.field(
        default="ab", metadata={"min_length": 2, "max_length": 8, "pattern": "^[a-z]+$"}
    )


def prop(cls: type[Any], name: str) -> dict[str, Any]:
    return dataclass_schema(cls)["properties"][name]


def single(annotation: Any) -> dict[str, Any]:
    """The property schema of one required field with ``annotation``."""
    holder = dataclasses.make_dataclass("Holder", [("value", annotation)])
    return prop(holder, "value")


def test_schema_none_params_gives_empty_object() -> None:
    assert dataclass_schema(None) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }
    assert dataclass_schema(None) == dict(EMPTY_OBJECT_SCHEMA)


def test_schema_lists_every_property_as_required() -> None:
    schema = dataclass_schema(Lookup)
    assert schema["type"] == "object"
    assert schema["required"] == list(schema["properties"])
    assert schema["required"][:2] == ["query", "limit"]
    assert schema["additionalProperties"] is False


def test_schema_emits_field_descriptions() -> None:
    assert prop(Lookup, "query") == {"description": "Search text", "type": "string"}


def test_schema_defaulted_field_is_nullable_type_list() -> None:
    assert prop(Lookup, "limit") == {
        "description": "Maximum hits",
        "type": ["integer", "null"],
        "minimum": 1,
        "maximum": 50,
    }


def test_schema_optional_field_has_type_list_and_no_any_of() -> None:
    schema = prop(Location, "zip_code")
    assert schema == {"type": ["string", "null"]}
    assert "anyOf" not in schema


def test_schema_literal_gives_typed_enum() -> None:
    assert single(Literal["a", "b"]) == {"type": "string", "enum": ["a", "b"]}


def test_schema_defaulted_literal_gives_nullable_enum() -> None:
    assert prop(Lookup, "mode") == {
        "type": ["string", "null"],
        "enum": ["fast", "slow", None],
    }


def test_schema_optional_literal_gives_enum_with_null() -> None:
    assert prop(Lookup, "status") == {
        "type": ["string", "null"],
        "enum": ["pending", "done", None],
    }


def test_schema_mixed_literal_gives_untyped_enum() -> None:
    assert single(Literal[1, "a"]) == {"enum": [1, "a"]}


def test_schema_nullable_mixed_literal_uses_any_of() -> None:
    assert single(Literal[1, "a"] | None) == {
        "anyOf": [{"enum": [1, "a"]}, {"type": "null"}]
    }


def test_schema_enum_class_gives_value_enum() -> None:
    assert single(Size) == {"type": "string", "enum": ["s", "l"]}


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (Any, {}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (tuple[str, ...], {"type": "array", "items": {"type": "string"}}),
        (Sequence[bool], {"type": "array", "items": {"type": "boolean"}}),
        (list, {"type": "array", "items": {}}),
        (
            dict[str, int],
            {"type": "object", "additionalProperties": {"type": "integer"}},
        ),
        (dict, {"type": "object", "additionalProperties": {}}),
        (int | str, {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
        (
            int | str | None,
            {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
        ),
        (
            list[int] | None,
            {
                "anyOf": [
                    {"type": "array", "items": {"type": "integer"}},
                    {"type": "null"},
                ]
            },
        ),
        (list[int | None], {"type": "array", "items": {"type": ["integer", "null"]}}),
    ],
)
def test_schema_type_mapping(annotation: Any, expected: dict[str, Any]) -> None:
    assert single(annotation) == expected


def test_schema_nested_dataclass_is_a_full_strict_object() -> None:
    assert prop(Lookup, "home") == {
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "city": {"description": "City name", "type": "string"},
                    "zip_code": {"type": ["string", "null"]},
                },
                "required": ["city", "zip_code"],
                "additionalProperties": False,
            },
            {"type": "null"},
        ]
    }


def test_schema_nullable_object_has_no_type_beside_any_of() -> None:
    schema = prop(Lookup, "location")
    assert set(schema) == {"anyOf"}
    assert schema["anyOf"][1] == {"type": "null"}


def test_schema_additional_properties_false_on_every_object() -> None:
    def objects(node: Any) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        if isinstance(node, dict):
            if node.get("type") == "object":
                found.append(node)
            for value in node.values():
                found.extend(objects(value))
        elif isinstance(node, list):
            for value in node:
                found.extend(objects(value))
        return found

    found = objects(dataclass_schema(Lookup))
    assert len(found) == 3
    assert all(obj["additionalProperties"] is False for obj in found)


def test_schema_emits_string_constraints() -> None:
    assert prop(Lookup, "code") == {
        "type": ["string", "null"],
        "minLength": 2,
        "maxLength": 8,
        "pattern": "^[a-z]+$",
    }


def test_schema_description_overrides_replace_and_add() -> None:
    schema = dataclass_schema(
        Lookup, descriptions={"query": "Overridden", "tags": "Labels to match"}
    )
    assert schema["properties"]["query"]["description"] == "Overridden"
    assert schema["properties"]["tags"]["description"] == "Labels to match"
    assert schema["properties"]["limit"]["description"] == "Maximum hits"


def test_schema_defaulted_list_is_nullable_array() -> None:
    assert prop(Lookup, "tags") == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]
    }


def test_schema_rejects_unsupported_types() -> None:
    with pytest.raises(TypeError, match=r"Unsupported type for a JSON schema: "):
        single(complex)


def test_schema_frozenset_field_is_an_array() -> None:
    assert single(frozenset[str]) == {"type": "array", "items": {"type": "string"}}


def test_schema_nullable_keeps_existing_null() -> None:
    assert _nullable({"type": ["string", "null"]}) == {"type": ["string", "null"]}
    assert _nullable({"type": ["string", "integer"]}) == {
        "type": ["string", "integer", "null"]
    }
    already = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert _nullable(already) == already
    assert _nullable({"enum": ["a", None], "type": "string"}) == {
        "enum": ["a", None],
        "type": ["string", "null"],
    }


def test_schema_generated_schemas_are_strict_compatible() -> None:
    assert is_strict_compatible(dataclass_schema(Lookup)) is True
    assert is_strict_compatible(dataclass_schema(None)) is True


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "object", "properties": {"a": {"type": "string"}}}, False),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "required": [],
                "additionalProperties": False,
            },
            False,
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "object", "additionalProperties": {}}},
                "required": ["a"],
                "additionalProperties": False,
            },
            False,
        ),
        ({"type": "array", "items": {"type": "object", "properties": {}}}, False),
        ({"anyOf": [{"type": "null"}, {"type": "object"}]}, False),
        ({"anyOf": [{"type": "null"}, {"type": "string"}]}, True),
        ({"type": "string"}, True),
        ({"properties": {}, "required": [], "additionalProperties": False}, True),
    ],
)
def test_schema_is_strict_compatible(schema: dict[str, Any], expected: bool) -> None:
    assert is_strict_compatible(schema) is expected


def test_schema_dict_field_is_not_strict_compatible() -> None:
    holder = dataclasses.make_dataclass("Holder", [("table", dict[str, int])])
    assert is_strict_compatible(dataclass_schema(holder)) is False
