"""Deadlines, token usage and budgets (tokens and money)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal, localcontext
from typing import Any, Protocol

from .errors import BudgetExceededError, WinkError


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


SYSTEM_CLOCK = SystemClock()


@dataclasses.dataclass(slots=True)
class FakeClock:
    """A clock tests move by hand."""

    current: datetime = dataclasses.field(
        default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC)
    )

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


@dataclasses.dataclass(frozen=True, slots=True)
class Deadline:
    """A point in time after which no more work starts."""

    expires_at: datetime
    clock: Clock = dataclasses.field(default=SYSTEM_CLOCK, compare=False)

    def __post_init__(self) -> None:
        if self.expires_at.tzinfo is None:
            raise ValueError("Deadline expires_at must be timezone-aware.")

    @classmethod
    def after(cls, seconds: float, *, clock: Clock = SYSTEM_CLOCK) -> Deadline:
        if seconds <= 0:
            raise ValueError("A deadline must be in the future.")
        return cls(clock.now() + timedelta(seconds=seconds), clock=clock)

    def remaining(self) -> timedelta:
        return self.expires_at - self.clock.now()

    def expired(self) -> bool:
        return self.remaining() <= timedelta(0)

    def payload(self) -> dict[str, str]:
        return {"deadline_expires_at": self.expires_at.isoformat()}


@dataclasses.dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token counts of one provider call (or a sum of several).

    ``cached_tokens`` and ``cache_write_tokens`` are parts of ``input_tokens``
    (read from ``input_tokens_details``), ``reasoning_tokens`` part of
    ``output_tokens``. ``as_dict`` leaves ``cache_write_tokens`` out: the
    audit keeps the four classic counts (and the raw usage in the response).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @classmethod
    def from_payload(cls, usage: Any) -> TokenUsage:
        if not usage:
            return cls()

        def count(value: Any) -> int:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            return value if ok else 0

        if not isinstance(usage, Mapping):
            return cls()
        input_details = usage.get("input_tokens_details")
        output_details = usage.get("output_tokens_details")
        if not isinstance(input_details, Mapping):
            input_details = {}
        if not isinstance(output_details, Mapping):
            output_details = {}
        return cls(
            input_tokens=count(usage.get("input_tokens", usage.get("prompt_tokens"))),
            output_tokens=count(
                usage.get("output_tokens", usage.get("completion_tokens"))
            ),
            cached_tokens=count(input_details.get("cached_tokens")),
            reasoning_tokens=count(output_details.get("reasoning_tokens")),
            cache_write_tokens=count(input_details.get("cache_write_tokens")),
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Budget:
    """Limits for one evaluation: tokens, and ``max_cost`` (USD, a
    ``Decimal``; 0 allows no request). At least one must be set."""

    max_total_tokens: int | None = None
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_cost: Decimal | None = None

    def __post_init__(self) -> None:
        limits = (self.max_total_tokens, self.max_input_tokens, self.max_output_tokens)
        if all(limit is None for limit in limits) and self.max_cost is None:
            raise ValueError("A budget needs at least one token or cost limit.")
        if any(limit is not None and limit <= 0 for limit in limits):
            raise ValueError("Token limits must be positive.")
        if self.max_cost is not None and (
            not isinstance(self.max_cost, Decimal)
            or not self.max_cost.is_finite()
            or self.max_cost < 0
        ):
            raise ValueError("max_cost must be a finite, non-negative Decimal.")


def _at(amount: Decimal, places: int) -> Decimal:
    """``amount`` with ``places`` decimals, however large (absurd usage from a
    provider must still stop the run with its message, not overflow the
    default context's 28 digits)."""
    with localcontext() as context:
        context.prec = max(context.prec, amount.adjusted() + places + 2)
        return amount.quantize(Decimal(1).scaleb(-places))


def usd(amount: Decimal, places: int = 4) -> str:
    """``amount`` as dollars with ``places`` decimals: ``$0.0123``."""
    return f"${_at(amount, places):f}"


def _reads_right(
    spent: Decimal, limit: Decimal, next_at_least: Decimal | None, places: int
) -> bool:
    """Whether amounts shown with ``places`` decimals still tell the story:
    spent at or over the limit, or spent plus the next request over it."""

    def shown(amount: Decimal) -> Decimal:
        return _at(amount, places)

    if next_at_least is None:
        return (spent == limit) == (shown(spent) == shown(limit))
    return shown(spent) + shown(next_at_least) > shown(limit) and (
        shown(next_at_least) > 0
    )


class CostBudgetExceededError(BudgetExceededError):
    """The run spent its money budget, or its next request would pass it.

    ``next_at_least`` is the least the next request would cost (``None``
    when the budget is already spent)."""

    def __init__(
        self, spent: Decimal, limit: Decimal, next_at_least: Decimal | None
    ) -> None:
        places = 4
        while places < 10 and not _reads_right(spent, limit, next_at_least, places):
            places += 1
        message = (
            f"The run spent {usd(spent, places)} of its {usd(limit, places)} "
            "budget; stopped before the next request"
        )
        if next_at_least is not None:
            message += f" (which would cost at least {usd(next_at_least, places)})"
        WinkError.__init__(self, message + ".")
        self.dimension = "cost"
        self.spent = spent
        self.limit = limit
        self.next_at_least = next_at_least


class UnpricedBudgetError(BudgetExceededError):
    """A run with a money budget on a model that has no price: what it spends
    cannot be counted, so it does not start (fail closed)."""

    def __init__(self, model: str, limit: Decimal) -> None:
        WinkError.__init__(
            self,
            f"The run has a budget of {usd(limit)} but its model '{model}' has no "
            "price in effect, so what it spends cannot be counted; add the "
            "model's price to the price list.",
        )
        self.dimension = "cost"
        self.model = model
        self.limit = limit


class BudgetTracker:
    """Sums usage and money across every provider call of an evaluation.

    ``check`` (before every step) enforces the token limits;
    ``check_cost`` (before every request) the money limit."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._usage = TokenUsage()
        self._spent = Decimal(0)
        self._lock = threading.Lock()

    @property
    def usage(self) -> TokenUsage:
        return self._usage

    @property
    def spent(self) -> Decimal:
        return self._spent

    def record(self, usage: TokenUsage) -> None:
        with self._lock:
            self._usage = self._usage + usage

    def record_cost(self, amount: Decimal) -> None:
        with self._lock:
            self._spent += amount

    def check(self) -> None:
        usage, budget = self._usage, self.budget
        if budget.max_input_tokens is not None and (
            usage.input_tokens > budget.max_input_tokens
        ):
            raise BudgetExceededError("input tokens")
        if budget.max_output_tokens is not None and (
            usage.output_tokens > budget.max_output_tokens
        ):
            raise BudgetExceededError("output tokens")
        if budget.max_total_tokens is not None and (
            usage.total_tokens > budget.max_total_tokens
        ):
            raise BudgetExceededError("total tokens")

    def check_cost(self, next_at_least: Decimal = Decimal(0)) -> None:
        """Refuse the next request when the money is spent (``spent >=
        max_cost``) or when ``next_at_least``, the least that request costs,
        would take the run past its budget."""
        limit, spent = self.budget.max_cost, self._spent
        if limit is None:
            return
        if spent >= limit:
            raise CostBudgetExceededError(spent, limit, None)
        if spent + next_at_least > limit:
            raise CostBudgetExceededError(spent, limit, next_at_least)
