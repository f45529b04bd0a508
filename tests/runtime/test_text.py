"""Making untrusted values sendable and storable (``tooling.runtime.text``):
the check that finds nothing to change agrees with the conversion."""

from __future__ import annotations

import enum
import math
from collections import UserDict
from typing import Any

import pytest

from tooling.runtime.text import (
    _SURROGATES,
    _UNSTORABLE,
    MAX_DEPTH,
    REPLACEMENT,
    TOO_DEEP,
    TOO_LONG,
    _clean,
    sendable,
    storable,
)


class Colour(enum.IntEnum):
    RED = 1


class Name(str):
    pass


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"next": [value]}
    return value


CLEAN = [
    None,
    True,
    0,
    -7,
    1.5,
    "plain text, ünïcode, emoji \U0001f600",
    {"a": [1, 2.0, {"b": None}], "c": ("t", "u")},
    [],
    {},
    nested(MAX_DEPTH // 2 - 1),
]

ALTERED = [
    10**5000,
    {"n": [-(10**5000)]},
    "nul \x00 byte",
    "lone \ud800 surrogate",
    {"key \x00": 1},
    {"k": ["deep", {"x": "\udfff"}]},
    {1: "int key"},
    float("nan"),
    [float("inf"), float("-inf")],
    nested(MAX_DEPTH + 1),
]

ODD = [  # not plain JSON types: the conversion decides, as before
    Colour.RED,
    Name("a str subclass"),
    {Name("key"): "value"},
    UserDict({"a": "\x00"}),
    b"bytes",
]


@pytest.mark.parametrize("value", CLEAN, ids=lambda value: type(value).__name__)
def test_a_clean_value_is_returned_as_it_is(value: Any) -> None:
    for convert in (storable, sendable):
        result, altered = convert(value)
        assert result is value and not altered


@pytest.mark.parametrize(
    "value", ALTERED + ODD + CLEAN, ids=lambda value: type(value).__name__
)
def test_the_check_agrees_with_the_conversion(value: Any) -> None:
    for convert, pattern, finite in (
        (storable, _UNSTORABLE, True),
        (sendable, _SURROGATES, False),
    ):
        expected = _clean(value, pattern, finite=finite, depth=0)
        result = convert(value)
        assert result[1] == expected[1]
        assert repr(result[0]) == repr(expected[0])


def test_what_is_replaced() -> None:
    assert storable({"k": "a\x00b\ud800"}) == (
        {"k": f"a{REPLACEMENT}b{REPLACEMENT}"},
        True,
    )
    assert sendable("a\x00b\ud800") == (f"a\x00b{REPLACEMENT}", True)
    assert storable([math.nan, math.inf, -math.inf])[0] == [
        "NaN",
        "Infinity",
        "-Infinity",
    ]
    assert sendable(math.nan)[1] is False  # finite numbers are storable's concern
    deep = storable(nested(MAX_DEPTH + 1))[0]
    for _ in range(MAX_DEPTH // 2):
        deep = deep["next"][0]
    assert TOO_DEEP in repr(deep)


def test_an_integer_too_long_to_write_is_replaced() -> None:
    huge = 10**5000
    assert storable({"n": huge, "m": 10**4000}) == (
        {"n": TOO_LONG, "m": 10**4000},
        True,
    )
    assert sendable([huge])[0] == [TOO_LONG]
    assert storable(-huge)[0] == TOO_LONG
