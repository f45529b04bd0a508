"""Stored hosted configs of the wrong shape (written through the API, a
fixture or by hand) are refused with a ``PromptValidationError`` naming the
option, for every registered kind: never an ``AttributeError`` or another
exception the admin and the API would turn into a 500."""

from __future__ import annotations

import contextlib
from typing import Any, get_args

import pytest

from tooling import assembly
from tooling.models import HostedToolDefinition
from tooling.runtime import GeoHint, PromptError, PromptValidationError
from tooling.runtime.hosted.spec import OPTION_SHAPES, OptionShape, hosted_kinds

WRONG_VALUES: tuple[Any, ...] = (
    0,
    -1,
    10**30,
    1.5e308,
    float("nan"),
    True,
    "\x00",
    "x" * 100_000,
    ["\x00"],
    [1, 2],
    [[1]],
    {"a": 1},
    {"x": [None]},
)


def definition(kind: str, config: Any) -> HostedToolDefinition:
    return HostedToolDefinition(name="t", kind=kind, description="D.", config=config)


@pytest.mark.parametrize(
    ("kind", "option"),
    [(spec.kind, option.name) for spec in hosted_kinds() for option in spec.options],
)
def test_every_option_refuses_wrong_values_as_a_prompt_error(
    kind: str, option: str
) -> None:
    for value in WRONG_VALUES:
        # refused (or accepted) with a message the form and the API show
        with contextlib.suppress(PromptError):
            assembly.build_hosted_tool(definition(kind, {option: value}))


@pytest.mark.parametrize("kind", [spec.kind for spec in hosted_kinds()])
@pytest.mark.parametrize("config", [[1], "text", 3, 0, False, [], ""])
def test_a_config_that_is_not_an_object_is_refused(kind: str, config: Any) -> None:
    with pytest.raises(PromptValidationError, match="Config must be a JSON object"):
        assembly.build_hosted_tool(definition(kind, config))


@pytest.mark.parametrize("option", ["country", "city", "region", "timezone"])
def test_web_search_location_that_is_not_text_names_the_option(option: str) -> None:
    with pytest.raises(PromptValidationError) as info:
        assembly.build_hosted_tool(definition("web_search", {option: ["Oslo"]}))
    assert "must be a string, not list" in info.value.message


def test_geo_hint_refuses_non_text_fields() -> None:
    with pytest.raises(PromptValidationError) as info:
        GeoHint(city=12)  # type: ignore[arg-type]
    assert info.value.message == "city must be a string, not int."
    assert info.value.placeholder == "city"
    assert GeoHint(city="Oslo", country_code=" no ").country_code == "NO"


def test_option_shapes_are_the_literal_s_values() -> None:
    assert get_args(OptionShape) == OPTION_SHAPES
    assert "executor" in OPTION_SHAPES
