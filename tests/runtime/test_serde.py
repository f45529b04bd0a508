"""``tooling.runtime.serde``: strict dataclass <-> JSON conversion."""

import collections.abc
import dataclasses
import enum
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any, Literal

import pytest

from tooling.runtime.serde import (
    SerdeError,
    dump,
    fields_of,
    is_instance_of,
    parse,
    split_optional,
    type_name,
)


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass(frozen=True)
class Inner:
    value: int


@dataclasses.dataclass(frozen=True)
class Search:
    query: str = dataclasses.field(metadata={"description": "What to look for"})
    limit: int = 10
    tags: tuple[str, ...] = ()
    note: str | None = None


@dataclasses.dataclass
class Everything:
    flag: bool
    count: int
    ratio: float
    name: str
    mode: Literal["fast", "slow"]
    colour: Colour
    inner: Inner
    items: list[int]
    pair: tuple[int, str]
    labels: frozenset[str]
    unique: set[str]
    seq: Sequence[int]
    mapping: dict[str, int]
    anything: Any
    either: int | str


EVERYTHING_JSON: dict[str, Any] = {
    "flag": True,
    "count": 3,
    "ratio": 1,
    "name": "n",
    "mode": "fast",
    "colour": "red",
    "inner": {"value": 1},
    "items": [1, 2],
    "pair": [1, "a"],
    "labels": ["x", "y", "x"],
    "unique": ["u"],
    "seq": [4, 5],
    "mapping": {"a": 1},
    "anything": {"free": ["form"]},
    "either": "text",
}


@dataclasses.dataclass
class Constrained:
    low: int = dataclasses.field(default=5, metadata={"minimum": 1, "maximum": 9})
    word: str = dataclasses.field(
        default="ab", metadata={"min_length": 2, "max_length": 4, "pattern": "[a-z]+"}
    )
    values: list[int] = dataclasses.field(
        default_factory=list, metadata={"max_length": 2}
    )
    maybe: int | None = dataclasses.field(default=None, metadata={"minimum": 1})


@dataclasses.dataclass
class Validated:
    size: int

    def __post_init__(self) -> None:
        if self.size < 0:
            raise ValueError("size must not be negative")


@dataclasses.dataclass
class WithFactory:
    items: list[str] = dataclasses.field(default_factory=lambda: ["default"])
    hidden: int = dataclasses.field(default=0, init=False)
    described: int = dataclasses.field(default=0, metadata={"description": 42})


@dataclasses.dataclass
class BareContainers:
    plain_list: list
    plain_tuple: tuple
    plain_dict: dict


def parse_error(cls: type[Any], data: Any) -> SerdeError:
    with pytest.raises(SerdeError) as info:
        parse(cls, data)
    return info.value


# -- parse: the object level -----------------------------------------------------


def test_serde_parse_builds_every_supported_type() -> None:
    value = parse(Everything, EVERYTHING_JSON)
    assert value == Everything(
        flag=True,
        count=3,
        ratio=1.0,
        name="n",
        mode="fast",
        colour=Colour.RED,
        inner=Inner(1),
        items=[1, 2],
        pair=(1, "a"),
        labels=frozenset({"x", "y"}),
        unique={"u"},
        seq=(4, 5),
        mapping={"a": 1},
        anything={"free": ["form"]},
        either="text",
    )
    assert type(value.ratio) is float
    assert type(value.labels) is frozenset
    assert type(value.unique) is set
    assert type(value.seq) is tuple


def test_serde_parse_rejects_unknown_keys_sorted() -> None:
    error = parse_error(Search, {"query": "q", "zeta": 1, "alpha": 2})
    assert str(error) == "Extra keys not permitted: ['alpha', 'zeta']"
    assert error.path == ""
    assert error.detail == "Extra keys not permitted: ['alpha', 'zeta']"


def test_serde_parse_rejects_missing_required_field() -> None:
    error = parse_error(Search, {"limit": 3})
    assert str(error) == "Missing required field: 'query'"


def test_serde_parse_rejects_null_for_required_field() -> None:
    error = parse_error(Search, {"query": None})
    assert str(error) == "query: value cannot be None"
    assert error.path == "query"
    assert error.detail == "value cannot be None"


def test_serde_parse_null_means_default_for_fields_with_defaults() -> None:
    value = parse(Search, {"query": "q", "limit": None, "tags": None})
    assert value == Search(query="q", limit=10, tags=())


def test_serde_parse_null_means_default_factory_value() -> None:
    assert parse(WithFactory, {"items": None}).items == ["default"]


def test_serde_parse_null_for_optional_field_is_none() -> None:
    assert parse(Search, {"query": "q", "note": None}).note is None


def test_serde_parse_rejects_non_object() -> None:
    assert str(parse_error(Search, ["q"])) == "expected an object, got array"


def test_serde_parse_nested_error_has_dotted_path() -> None:
    error = parse_error(Everything, {**EVERYTHING_JSON, "inner": {"value": "x"}})
    assert str(error) == "inner.value: expected integer, got string"


def test_serde_parse_nested_unknown_key_has_path() -> None:
    error = parse_error(Everything, {**EVERYTHING_JSON, "inner": {"value": 1, "x": 0}})
    assert str(error) == "inner: Extra keys not permitted: ['x']"


def test_serde_parse_wraps_constructor_value_errors() -> None:
    error = parse_error(Validated, {"size": -1})
    assert str(error) == "size must not be negative"


def test_serde_parse_skips_init_false_fields() -> None:
    error = parse_error(WithFactory, {"hidden": 1})
    assert str(error) == "Extra keys not permitted: ['hidden']"


# -- parse: scalar types ---------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "raw", "message"),
    [
        ("flag", 1, "flag: expected boolean, got integer"),
        ("count", True, "count: expected integer, got boolean"),
        ("count", 1.5, "count: expected integer, got number"),
        ("count", "3", "count: expected integer, got string"),
        ("ratio", "1", "ratio: expected number, got string"),
        ("ratio", False, "ratio: expected number, got boolean"),
        ("name", 5, "name: expected string, got integer"),
        ("mode", "medium", "mode: expected one of ['fast', 'slow'], got 'medium'"),
        ("colour", "green", "colour: expected one of ['red', 'blue'], got 'green'"),
        ("items", "1,2", "items: expected array, got string"),
        ("items", [1, "2"], "items[1]: expected integer, got string"),
        ("pair", [1, "a", 2], "pair: expected 2 items, got 3"),
        ("pair", [1, 2], "pair[1]: expected string, got integer"),
        ("mapping", [1], "mapping: expected object, got array"),
        ("mapping", {"k": "v"}, "mapping.k: expected integer, got string"),
        (
            "either",
            [1],
            "either: expected integer, got array; expected string, got array",
        ),
        ("items", [None], "items[0]: value cannot be None"),
    ],
)
def test_serde_parse_rejects_wrong_types(field: str, raw: Any, message: str) -> None:
    assert str(parse_error(Everything, {**EVERYTHING_JSON, field: raw})) == message


def test_serde_parse_integral_float_becomes_int() -> None:
    value = parse(Everything, {**EVERYTHING_JSON, "count": 3.0})
    assert value.count == 3
    assert type(value.count) is int


def test_serde_parse_literal_requires_exact_type() -> None:
    @dataclasses.dataclass
    class Flagged:
        level: Literal[1, 2]

    assert parse(Flagged, {"level": 1}).level == 1
    error = parse_error(Flagged, {"level": True})
    assert str(error) == "level: expected one of [1, 2], got True"


def test_serde_parse_union_tries_each_option() -> None:
    assert parse(Everything, {**EVERYTHING_JSON, "either": 7}).either == 7


def test_serde_parse_any_passes_values_through() -> None:
    @dataclasses.dataclass
    class Loose:
        value: Any
        other: object = None

    raw = {"value": [1, {"a": None}], "other": 3}
    assert parse(Loose, raw) == Loose(value=[1, {"a": None}], other=3)


def test_serde_parse_bare_containers() -> None:
    value = parse(
        BareContainers,
        {"plain_list": [1, "a"], "plain_tuple": [1], "plain_dict": {"a": [1]}},
    )
    assert value == BareContainers([1, "a"], (1,), {"a": [1]})


def test_serde_parse_mapping_and_sequence_abcs() -> None:
    @dataclasses.dataclass
    class Abstract:
        table: Mapping[str, int]
        row: collections.abc.Sequence[str]

    value = parse(Abstract, {"table": {"a": 1}, "row": ["x"]})
    assert value == Abstract(table={"a": 1}, row=("x",))


def test_serde_parse_optional_nested_dataclass() -> None:
    @dataclasses.dataclass
    class Holder:
        inner: Inner | None = None

    assert parse(Holder, {"inner": {"value": 2}}).inner == Inner(2)
    assert parse(Holder, {"inner": None}).inner is None


def test_serde_parse_rejects_unsupported_annotation() -> None:
    @dataclasses.dataclass
    class Odd:
        value: complex

    assert str(parse_error(Odd, {"value": 1})) == (
        "value: unsupported type <class 'complex'>"
    )


@pytest.mark.parametrize(
    "annotation",
    [frozenset, collections.abc.Set[str]],
    ids=["frozenset", "Set"],
)
def test_serde_parse_bare_frozenset_and_abstract_set_give_frozenset(
    annotation: Any,
) -> None:
    holder = dataclasses.make_dataclass("Holder", [("tags", annotation)], frozen=True)
    value: Any = parse(holder, {"tags": ["a", "a"]})
    assert isinstance(value.tags, frozenset)
    assert value.tags == frozenset({"a"})


# -- parse: constraints ----------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"low": 0}, "low: must be >= 1"),
        ({"low": 10}, "low: must be <= 9"),
        ({"word": "a"}, "word: length must be >= 2"),
        ({"word": "abcde"}, "word: length must be <= 4"),
        ({"word": "AB"}, "word: must match pattern '[a-z]+'"),
        ({"values": [1, 2, 3]}, "values: length must be <= 2"),
        ({"maybe": 0}, "maybe: must be >= 1"),
    ],
)
def test_serde_parse_enforces_metadata_constraints(
    data: dict[str, Any], message: str
) -> None:
    assert str(parse_error(Constrained, data)) == message


def test_serde_parse_constraints_accept_boundaries_and_null() -> None:
    value = parse(
        Constrained, {"low": 9, "word": "abcd", "values": [1, 2], "maybe": None}
    )
    assert value == Constrained(low=9, word="abcd", values=[1, 2], maybe=None)
    assert parse(Constrained, {"low": 1, "word": "ab"}).low == 1


# -- fields_of / split_optional / type_name --------------------------------------


def test_serde_fields_of_describes_init_fields() -> None:
    infos = {info.name: info for info in fields_of(WithFactory)}
    assert set(infos) == {"items", "described"}
    assert infos["items"].required is False
    assert infos["items"].default_value() == ["default"]
    assert infos["described"].description == "42"
    assert infos["described"].default_value() == 0


def test_serde_fields_of_reports_required_and_descriptions() -> None:
    infos = {info.name: info for info in fields_of(Search)}
    assert infos["query"].required is True
    assert infos["query"].description == "What to look for"
    assert infos["limit"].required is False
    assert infos["limit"].description is None
    assert infos["note"].annotation == str | None


def test_serde_fields_of_rejects_non_dataclasses() -> None:
    with pytest.raises(TypeError, match="is not a dataclass type"):
        fields_of(dict)
    with pytest.raises(TypeError, match="is not a dataclass type"):
        fields_of(Inner(1))  # an instance, not a type


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (int, (int, False)),
        (int | None, (int, True)),
        (int | str, (int | str, False)),
        (type(None), (type(None), True)),
    ],
)
def test_serde_split_optional(annotation: Any, expected: tuple[Any, bool]) -> None:
    assert split_optional(annotation) == expected


def test_serde_split_optional_keeps_multi_member_unions() -> None:
    inner, nullable = split_optional(int | str | None)
    assert nullable is True
    assert set(inner.__args__) == {int, str}


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (None, "null"),
        (True, "boolean"),
        (1, "integer"),
        (1.5, "number"),
        ("s", "string"),
        ([1], "array"),
        ((1,), "array"),
        ({}, "object"),
        (b"x", "bytes"),
    ],
)
def test_serde_type_name(value: Any, name: str) -> None:
    assert type_name(value) == name


# -- dump ------------------------------------------------------------------------


def test_serde_dump_dataclass_recursively() -> None:
    data = dump(Search(query="q", tags=("a", "b")))
    assert data == {"query": "q", "limit": 10, "tags": ["a", "b"], "note": None}


def test_serde_dump_exclude_none() -> None:
    assert dump(Search(query="q"), exclude_none=True) == {
        "query": "q",
        "limit": 10,
        "tags": [],
    }


def test_serde_dump_enum_mapping_bytes_sets_and_fallback() -> None:
    data = dump(
        {
            1: Colour.BLUE,
            "raw": b"caf\xc3\xa9 \xff",
            "set": {"b", "a"},
            "frozen": frozenset({3, 1}),
            "path": PurePosixPath("/tmp/x"),
            "nested": [Inner(2), None],
            "flt": 1.5,
        }
    )
    assert data == {
        "1": "blue",
        "raw": "café \ufffd",
        "set": ["a", "b"],
        "frozen": [1, 3],
        "path": "/tmp/x",
        "nested": [{"value": 2}, None],
        "flt": 1.5,
    }


def test_serde_dump_round_trips_through_parse() -> None:
    original = parse(Everything, EVERYTHING_JSON)
    assert parse(Everything, dump(original)) == original


def test_serde_is_instance_of() -> None:
    assert is_instance_of(Inner(1), Inner) is True
    assert is_instance_of(Search(query="q"), Inner) is False
    assert is_instance_of([1, 2], list[int]) is True
    assert is_instance_of(["x"], list[int]) is False
