"""The fast check of ``storable``/``sendable`` (``_is_clean``) against the
conversion it short-cuts (``_clean``), on generated and boundary values: the
same result, the same ``altered`` flag, and the very value when unaltered."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooling.runtime.text import (
    _SURROGATES,
    _UNSTORABLE,
    MAX_DEPTH,
    _clean,
    sendable,
    storable,
)

CONVERSIONS = ((storable, _UNSTORABLE, True), (sendable, _SURROGATES, False))

# text with the characters that matter, and without
TEXT = st.text(
    alphabet=st.sampled_from(["a", "%", "\\", "'", "\x00", "\ud800", "\udfff", "é"]),
    max_size=6,
)


class Text(str):
    pass


class Object(dict):  # the adapter's attribute-readable JSON objects
    pass


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and the infinities included
    TEXT,
    TEXT.map(Text),
)


def containers(children: Any) -> Any:
    keys = st.one_of(TEXT, TEXT.map(Text), st.integers(-2, 2), st.none())
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(keys, children, max_size=4),
        st.dictionaries(TEXT, children, max_size=4).map(Object),
        st.dictionaries(TEXT, children, max_size=4).map(OrderedDict),
    )


VALUES = st.recursive(SCALARS, containers, max_leaves=30)


def assert_agree(value: Any) -> None:
    for convert, pattern, finite in CONVERSIONS:
        expected, expected_altered = _clean(value, pattern, finite=finite, depth=0)
        result, altered = convert(value)
        assert altered == expected_altered
        assert type(result) is type(expected)
        assert repr(result) == repr(expected)
        if not altered:
            assert result is value


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES)
def test_the_check_and_the_conversion_agree_on_any_value(value: Any) -> None:
    assert_agree(value)


def nest(levels: int, innermost: Any, kind: str) -> Any:
    value = innermost
    for level in range(levels):
        if kind == "list" or (kind == "mixed" and level % 2):
            value = [value]
        else:
            value = {"k": value}
    return value


@pytest.mark.parametrize("kind", ["list", "dict", "mixed"])
@pytest.mark.parametrize("innermost", ["leaf", [], {}, "\x00", float("nan")])
@pytest.mark.parametrize("levels", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
def test_the_check_and_the_conversion_agree_at_the_depth_limit(
    levels: int, innermost: Any, kind: str
) -> None:
    assert_agree(nest(levels, innermost, kind))
