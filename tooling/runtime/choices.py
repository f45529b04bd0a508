"""The choice sets the catalog shares with the runtime, as (value, label) pairs.

The runtime's enums and literals define the values; the labels people read in
the admin and the API are written here, once. ``tooling.models``, the forms and
the serializers derive their choices from these tuples, so a new trust level,
planning strategy or search context size is added in the runtime alone (a
strategy without a label here fails at import).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, get_args

from .hosted.web_search import SearchContextSize
from .planning import PlanningStrategy
from .trust import TrustLevel

Choices = tuple[tuple[str, str], ...]

#: ``("untrusted", "Untrusted")`` ..., lowest first: a session's trust level
#: and a hosted tool's minimum, as stored.
TRUST_LEVEL_CHOICES: Final[Choices] = tuple(
    (level.label, level.label.capitalize()) for level in TrustLevel
)

_PLANNING_STRATEGY_LABELS: Final[Mapping[PlanningStrategy, str]] = {
    PlanningStrategy.REACT: "ReAct: reason, act, observe",
    PlanningStrategy.PLAN_ACT_REFLECT: "Plan, act, reflect",
    PlanningStrategy.GOAL_DECOMPOSE_ROUTE_SYNTHESISE: (
        "Goal, decompose, route, synthesise"
    ),
}

#: A planning section's strategy, as stored (``PlanningStrategy`` values).
PLANNING_STRATEGY_CHOICES: Final[Choices] = tuple(
    (strategy.value, _PLANNING_STRATEGY_LABELS[strategy])
    for strategy in PlanningStrategy
)

#: Web search's ``search_context_size`` values, from ``SearchContextSize``.
SEARCH_CONTEXT_SIZES: Final[tuple[str, ...]] = get_args(SearchContextSize)

#: The same as choices (the value is its own label, as the API spells it).
SEARCH_CONTEXT_SIZE_CHOICES: Final[Choices] = tuple(
    (size, size) for size in SEARCH_CONTEXT_SIZES
)

__all__ = [
    "PLANNING_STRATEGY_CHOICES",
    "SEARCH_CONTEXT_SIZES",
    "SEARCH_CONTEXT_SIZE_CHOICES",
    "TRUST_LEVEL_CHOICES",
    "Choices",
]
