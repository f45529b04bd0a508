"""Deadlines, clocks, token usage and budgets."""

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tooling.runtime.deadlines import (
    SYSTEM_CLOCK,
    Budget,
    BudgetTracker,
    Deadline,
    FakeClock,
    SystemClock,
    TokenUsage,
)
from tooling.runtime.errors import BudgetExceededError

START = datetime(2026, 1, 1, tzinfo=UTC)

# -- clocks and deadlines ----------------------------------------------------------


def test_deadlines_fake_clock_starts_fixed_and_advances() -> None:
    clock = FakeClock()
    assert clock.now() == START
    clock.advance(1.5)
    assert clock.now() == START + timedelta(seconds=1.5)


def test_deadlines_system_clock_is_timezone_aware() -> None:
    now = SystemClock().now()
    assert now.tzinfo is not None
    assert abs(now - datetime.now(UTC)) < timedelta(seconds=5)


def test_deadlines_deadline_requires_timezone_aware_time() -> None:
    with pytest.raises(
        ValueError, match=r"^Deadline expires_at must be timezone-aware\.$"
    ):
        Deadline(datetime(2026, 1, 1))


@pytest.mark.parametrize("seconds", [0, -1])
def test_deadlines_after_requires_a_future_time(seconds: float) -> None:
    with pytest.raises(ValueError, match=r"^A deadline must be in the future\.$"):
        Deadline.after(seconds, clock=FakeClock())


def test_deadlines_after_uses_the_clock() -> None:
    deadline = Deadline.after(30, clock=FakeClock())
    assert deadline.expires_at == START + timedelta(seconds=30)
    assert deadline.remaining() == timedelta(seconds=30)


def test_deadlines_after_defaults_to_system_clock() -> None:
    deadline = Deadline.after(60)
    assert deadline.clock is SYSTEM_CLOCK
    assert deadline.expired() is False


def test_deadlines_expire_when_remaining_reaches_zero() -> None:
    clock = FakeClock()
    deadline = Deadline.after(10, clock=clock)
    clock.advance(9.999)
    assert deadline.expired() is False
    clock.advance(0.001)
    assert deadline.expired() is True
    clock.advance(5)
    assert deadline.remaining() == timedelta(seconds=-5)


def test_deadlines_past_expiry_is_allowed_and_expired() -> None:
    clock = FakeClock()
    assert Deadline(START - timedelta(seconds=1), clock=clock).expired() is True


def test_deadlines_payload_is_iso_timestamp() -> None:
    deadline = Deadline.after(90, clock=FakeClock())
    assert deadline.payload() == {"deadline_expires_at": "2026-01-01T00:01:30+00:00"}


def test_deadlines_equality_ignores_the_clock() -> None:
    assert Deadline(START, clock=FakeClock()) == Deadline(START)


# -- token usage -------------------------------------------------------------------


def test_deadlines_usage_total_and_addition() -> None:
    total = TokenUsage(10, 5, 2, 1) + TokenUsage(1, 2, 3, 4)
    assert total == TokenUsage(11, 7, 5, 5)
    assert total.total_tokens == 18


def test_deadlines_usage_from_responses_payload() -> None:
    usage = TokenUsage.from_payload(
        {
            "input_tokens": 100,
            "output_tokens": 40,
            "total_tokens": 140,
            "input_tokens_details": {"cached_tokens": 30},
            "output_tokens_details": {"reasoning_tokens": 12},
        }
    )
    assert usage == TokenUsage(100, 40, 30, 12)


def test_deadlines_usage_from_chat_style_payload() -> None:
    usage = TokenUsage.from_payload({"prompt_tokens": 7, "completion_tokens": 3})
    assert usage == TokenUsage(7, 3, 0, 0)


@pytest.mark.parametrize("payload", [None, {}])
def test_deadlines_usage_from_empty_payload_is_zero(
    payload: dict[str, int] | None,
) -> None:
    assert TokenUsage.from_payload(payload) == TokenUsage()


def test_deadlines_usage_ignores_invalid_counts() -> None:
    usage = TokenUsage.from_payload(
        {
            "input_tokens": True,
            "output_tokens": -4,
            "input_tokens_details": {"cached_tokens": "3"},
            "output_tokens_details": None,
        }
    )
    assert usage == TokenUsage()


def test_deadlines_usage_as_dict() -> None:
    assert TokenUsage(3, 4, 1, 2).as_dict() == {
        "input_tokens": 3,
        "output_tokens": 4,
        "cached_tokens": 1,
        "reasoning_tokens": 2,
        "total_tokens": 7,
    }


# -- budgets -----------------------------------------------------------------------


def test_deadlines_budget_needs_a_limit() -> None:
    with pytest.raises(
        ValueError, match=r"^A budget needs at least one token or cost limit\.$"
    ):
        Budget()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_total_tokens": 0},
        {"max_input_tokens": -1},
        {"max_total_tokens": 10, "max_output_tokens": 0},
    ],
)
def test_deadlines_budget_limits_must_be_positive(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"^Token limits must be positive\.$"):
        Budget(**kwargs)


def test_deadlines_tracker_sums_usage_across_records() -> None:
    tracker = BudgetTracker(Budget(max_total_tokens=1000))
    tracker.record(TokenUsage(10, 5))
    tracker.record(TokenUsage(20, 7, 3))
    assert tracker.usage == TokenUsage(30, 12, 3)
    assert tracker.budget == Budget(max_total_tokens=1000)


def test_deadlines_tracker_at_the_limit_passes() -> None:
    tracker = BudgetTracker(
        Budget(max_total_tokens=15, max_input_tokens=10, max_output_tokens=5)
    )
    tracker.record(TokenUsage(10, 5))
    tracker.check()


@pytest.mark.parametrize(
    ("budget", "usage", "dimension"),
    [
        (Budget(max_input_tokens=10), TokenUsage(11, 0), "input tokens"),
        (Budget(max_output_tokens=10), TokenUsage(0, 11), "output tokens"),
        (Budget(max_total_tokens=10), TokenUsage(6, 5), "total tokens"),
        (
            Budget(max_total_tokens=1, max_input_tokens=1, max_output_tokens=1),
            TokenUsage(5, 5),
            "input tokens",
        ),
        (
            Budget(max_total_tokens=1, max_output_tokens=1),
            TokenUsage(5, 5),
            "output tokens",
        ),
    ],
)
def test_deadlines_tracker_check_order_and_dimension(
    budget: Budget, usage: TokenUsage, dimension: str
) -> None:
    tracker = BudgetTracker(budget)
    tracker.record(usage)
    with pytest.raises(BudgetExceededError) as info:
        tracker.check()
    assert str(info.value) == f"Budget exceeded: {dimension}"
    assert info.value.dimension == dimension


def test_deadlines_tracker_sums_accumulate_into_a_breach() -> None:
    tracker = BudgetTracker(Budget(max_total_tokens=20))
    tracker.record(TokenUsage(5, 5))
    tracker.check()
    tracker.record(TokenUsage(5, 6))
    with pytest.raises(BudgetExceededError, match="total tokens"):
        tracker.check()


def test_deadlines_tracker_record_is_thread_safe() -> None:
    tracker = BudgetTracker(Budget(max_total_tokens=10**9))

    def work() -> None:
        for _ in range(500):
            tracker.record(TokenUsage(1, 1))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert tracker.usage == TokenUsage(4000, 4000)
