"""Deadlines, token usage and budgets."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from .errors import BudgetExceededError


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
    """Token counts of one provider call (or a sum of several)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
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
    """Token limits for one evaluation; at least one must be set."""

    max_total_tokens: int | None = None
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None

    def __post_init__(self) -> None:
        limits = (self.max_total_tokens, self.max_input_tokens, self.max_output_tokens)
        if all(limit is None for limit in limits):
            raise ValueError("A budget needs at least one token limit.")
        if any(limit is not None and limit <= 0 for limit in limits):
            raise ValueError("Token limits must be positive.")


class BudgetTracker:
    """Sums usage across every provider call of an evaluation."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._usage = TokenUsage()
        self._lock = threading.Lock()

    @property
    def usage(self) -> TokenUsage:
        return self._usage

    def record(self, usage: TokenUsage) -> None:
        with self._lock:
            self._usage = self._usage + usage

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
