"""The money side of one run: each provider call's cost, each native call's
fee, the total so far and the money budget.

``Run`` keeps one ``RunCosts``. Costs are computed where usage is accounted,
so a resumed run, which replays its recorded responses through the same
accounting, counts them again: its total and its budget start from what the
interrupted run had spent, not from zero. Containers are remembered the same
way (a replayed native call marks its container as seen again, its fee is
not charged twice).

Without a ``PriceSheet`` nothing is priced and every cost is ``None``; a
money budget then refuses the first request, as it does for a model with no
price (``UnpricedBudgetError``): what the run spends could not be counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ...deadlines import BudgetTracker, TokenUsage, UnpricedBudgetError
from ...hosted.base import HostedTool
from ...pricing import ZERO, PriceSheet


class RunCosts:
    """What a run has spent so far (USD), and the containers it was charged
    for; ``unpriced`` counts the calls that had no price."""

    def __init__(
        self,
        pricing: PriceSheet | None,
        model: str,
        tracker: BudgetTracker | None = None,
    ) -> None:
        self.pricing = pricing
        self.model = model
        self.tracker = tracker
        self.spent = ZERO
        self.unpriced = 0
        self.containers: set[str] = set()
        self._last_input_tokens = 0

    def _add(self, amount: Decimal | None) -> Decimal | None:
        if amount is None:
            self.unpriced += 1
            return None
        self.spent += amount
        if self.tracker is not None:
            self.tracker.record_cost(amount)
        return amount

    def provider_call(self, usage: TokenUsage) -> Decimal | None:
        """The cost of one response with ``usage``, added to the total."""
        self._last_input_tokens = usage.input_tokens
        if self.pricing is None:
            return None
        return self._add(self.pricing.cost_of_usage(self.model, usage))

    def native_call(
        self, hosted: HostedTool[Any], params: Mapping[str, Any]
    ) -> Decimal | None:
        """The fee of one native call of ``hosted``, added to the total."""
        if self.pricing is None:
            return None
        fee = self.pricing.fee_of_native(
            hosted.kind, params, hosted.config, self.containers
        )
        if fee.container is not None:
            self.containers.add(fee.container)
        return self._add(fee.amount)

    def nothing_ran(self) -> Decimal | None:
        """The fee of a native call that ran nothing: 0 (``None`` unpriced)."""
        return None if self.pricing is None else ZERO

    def next_request_floor(self) -> Decimal:
        """The least the next request costs: it resends at least the previous
        request's input, billed at the model's cheapest input rate."""
        if self.pricing is None:
            return ZERO
        return self.pricing.least_input_cost(self.model, self._last_input_tokens)

    def check_before_request(self) -> None:
        """Raise ``CostBudgetExceededError`` when the next request would
        pass the budget (see ``BudgetTracker.check_cost``), and
        ``UnpricedBudgetError`` when the model has no price (a budget that
        cannot count must not let the run spend)."""
        if self.tracker is None or self.tracker.budget.max_cost is None:
            return
        if self.pricing is None or self.pricing.rate_for(self.model) is None:
            raise UnpricedBudgetError(self.model, self.tracker.budget.max_cost)
        self.tracker.check_cost(self.next_request_floor())


__all__ = ["RunCosts"]
