"""The choice sets the catalog derives from the runtime
(``tooling/runtime/choices.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from tooling.runtime import PlanningStrategy, TrustLevel, WebSearchConfig
from tooling.runtime.choices import (
    PLANNING_STRATEGY_CHOICES,
    SEARCH_CONTEXT_SIZE_CHOICES,
    SEARCH_CONTEXT_SIZES,
    TRUST_LEVEL_CHOICES,
)
from tooling.runtime.errors import PromptValidationError


def test_trust_levels_lowest_first_with_values_the_runtime_parses() -> None:
    assert TRUST_LEVEL_CHOICES == (
        ("untrusted", "Untrusted"),
        ("standard", "Standard"),
        ("trusted", "Trusted"),
    )
    assert [TrustLevel.parse(value) for value, _ in TRUST_LEVEL_CHOICES] == list(
        TrustLevel
    )


def test_every_planning_strategy_has_one_labelled_choice() -> None:
    assert [PlanningStrategy(value) for value, _ in PLANNING_STRATEGY_CHOICES] == list(
        PlanningStrategy
    )
    assert dict(PLANNING_STRATEGY_CHOICES) == {
        "react": "ReAct: reason, act, observe",
        "plan_act_reflect": "Plan, act, reflect",
        "goal_decompose_route_synthesise": "Goal, decompose, route, synthesise",
    }


def test_search_context_sizes_are_what_web_search_accepts() -> None:
    assert SEARCH_CONTEXT_SIZES == ("low", "medium", "high")
    assert SEARCH_CONTEXT_SIZE_CHOICES == (
        ("low", "low"),
        ("medium", "medium"),
        ("high", "high"),
    )
    choice: Any  # a choice value is a plain string, as a form submits it
    for choice in SEARCH_CONTEXT_SIZES:
        config = WebSearchConfig(search_context_size=choice)
        assert config.search_context_size == choice
    unknown: Any = "huge"
    with pytest.raises(PromptValidationError, match="search_context_size"):
        WebSearchConfig(search_context_size=unknown)
