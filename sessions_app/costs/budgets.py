"""Daily spending limits per user (docs/costs.md).

A user's limit is their ``UserBudget`` row, else ``WINK_DAILY_BUDGET_USD``
(unset: no limit). What they spent today is the cost of the sessions they
started since the last local midnight (``TIME_ZONE``). A start is refused once
that reaches the limit; otherwise the run may spend at most what is left
(``cost_budget``, with its template's own budget).

A session's cost is written when its run ends or pauses, so a run still in
flight (queued, running, or waiting for an approval) counts for its whole
``cost_budget``, the most it may spend: what is left of the day is shared
between the runs in flight, never given to each of them. Starts at the same
moment share it too (``reserving``): each reads the day and writes its session
in one transaction that holds a lock on the user's row, so the next start of
the same user reads the day with that session in it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime, time, timedelta
from decimal import ROUND_DOWN, Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Case, DecimalField, F, Q, Sum, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from sessions_app.models import AgentSession
from tooling.models import UserBudget
from tooling.runtime.deadlines import usd
from tooling.runtime.pricing import COST_PLACES

# A run in one of these may still spend (its cost is written when it stops).
IN_FLIGHT = (
    AgentSession.Status.QUEUED,
    AgentSession.Status.RUNNING,
    AgentSession.Status.AWAITING_APPROVAL,
)
# what the cost_budget column holds
BUDGET_PLACES = Decimal("0.0001")
# what the cost columns hold (SQLite sums in floating point: rounded back)
AMOUNT: DecimalField[Decimal, Decimal] = DecimalField(max_digits=18, decimal_places=10)


class DailyBudgetExceeded(Exception):
    """The user spent their daily budget; ``message`` says how much, and
    ``retry_after`` is the number of seconds to the next local midnight."""

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


def _user_id(user: Any) -> Any:
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return user.pk


def daily_limit(user: Any) -> Decimal | None:
    """The most ``user``'s runs may spend per day (USD), ``None``: no limit.
    One query for an authenticated user; none for an anonymous one (no
    limit: only authenticated users start runs)."""
    user_id = _user_id(user)
    if user_id is None:
        return None
    row = UserBudget.objects.filter(user_id=user_id).values("daily_limit").first()
    if row is not None:
        return Decimal(row["daily_limit"])
    limit = settings.WINK_DAILY_BUDGET_USD
    return Decimal(limit) if limit is not None else None


def _local(now: datetime | None) -> datetime:
    # the project's TIME_ZONE, whatever zone a request may have activated
    return timezone.localtime(now, timezone.get_default_timezone())


def day_start(now: datetime | None = None) -> datetime:
    """The last local midnight (the project's ``TIME_ZONE``), DST-safe."""
    today = _local(now).date()
    return timezone.make_aware(
        datetime.combine(today, time.min), timezone.get_default_timezone()
    )


def next_midnight(now: datetime | None = None) -> datetime:
    """The next local midnight, DST-safe (built from the next day's date)."""
    tomorrow = _local(now).date() + timedelta(days=1)
    return timezone.make_aware(
        datetime.combine(tomorrow, time.min), timezone.get_default_timezone()
    )


def _day(user: Any, now: datetime | None) -> tuple[Decimal, Decimal]:
    """``(spent, reserved)`` today by ``user``'s sessions, in one query on the
    ``(created_by, created_at)`` index: their costs, and what the runs in
    flight may still spend (their ``cost_budget`` beyond their cost)."""
    user_id = _user_id(user)
    if user_id is None:
        return Decimal(0), Decimal(0)
    in_flight = Q(
        status__in=IN_FLIGHT, cost_budget__isnull=False, cost_budget__gt=F("cost")
    )
    sums = AgentSession.objects.filter(
        created_by_id=user_id, created_at__gte=day_start(now)
    ).aggregate(
        spent=Coalesce(Sum("cost"), Value(Decimal(0)), output_field=AMOUNT),
        reserved=Coalesce(
            Sum(
                Case(
                    When(in_flight, then=F("cost_budget") - F("cost")),
                    default=Value(Decimal(0)),
                    output_field=AMOUNT,
                )
            ),
            Value(Decimal(0)),
            output_field=AMOUNT,
        ),
    )
    return (
        Decimal(sums["spent"]).quantize(COST_PLACES),
        Decimal(sums["reserved"]).quantize(COST_PLACES),
    )


def spent_today(user: Any, *, now: datetime | None = None) -> Decimal:
    """The cost of the sessions ``user`` started today, as written so far
    (one query, on the ``(created_by, created_at)`` index)."""
    return _day(user, now)[0]


def left_today(user: Any, limit: Decimal, *, now: datetime | None = None) -> Decimal:
    """What a new run of ``user`` may still spend today under ``limit``: the
    limit less what they spent and what their runs in flight may still
    spend, never below 0 (what a start checks, without refusing)."""
    spent, reserved = _day(user, now)
    return max(limit - spent - reserved, Decimal(0))


def check_daily_budget(user: Any, *, now: datetime | None = None) -> Decimal | None:
    """What ``user`` may still spend today (``None``: no limit): the limit
    less what they spent and what their runs in flight may still spend;
    raises ``DailyBudgetExceeded`` when nothing is left. For an authenticated
    user one query (the budget row), two with a limit (and today's spend).
    A start reads it with ``reserving``, which holds it until its session is
    written."""
    limit = daily_limit(user)
    if limit is None:
        return None
    return _left(user, limit, now)


@contextlib.contextmanager
def reserving(
    user: Any,
    *,
    limit: Decimal,
    template_budget: Decimal | None,
    now: datetime | None = None,
) -> Iterator[Decimal | None]:
    """For a start by ``user``, whose daily ``limit`` applies: the new run's
    ``cost_budget`` (``session_budget`` of its template's and what is left of
    the day), for the caller to write its session inside the block.

    The block is one transaction holding a lock on the user's row, taken by
    every start of theirs with a limit before it reads the day (PostgreSQL:
    ``SELECT ... FOR NO KEY UPDATE``, which leaves rows that refer to the
    user free to be written; SQLite: the transaction holds the database's
    write lock from its ``BEGIN IMMEDIATE``). So simultaneous starts read the
    day one after the other, each with the sessions of those before it, and
    what is left is shared between them. Raises ``DailyBudgetExceeded`` (and
    releases the lock) when nothing is left."""
    with transaction.atomic():
        _lock_user(user)
        left = _left(user, limit, now)
        yield session_budget(template_budget, left)


def _lock_user(user: Any) -> None:
    """Lock ``user``'s row until the transaction ends (where the database
    locks rows: SQLite's transactions take the whole database's)."""
    features = connection.features
    if not features.has_select_for_update:
        return
    rows = get_user_model().objects.filter(pk=_user_id(user))
    list(
        rows.select_for_update(
            no_key=features.has_select_for_no_key_update
        ).values_list("pk", flat=True)
    )


def _left(user: Any, limit: Decimal, now: datetime | None) -> Decimal:
    """What is left of ``limit`` today; ``DailyBudgetExceeded`` if nothing."""
    spent, reserved = _day(user, now)
    left = limit - spent - reserved
    # less than the cost_budget column can hold (a cent of a cent) is nothing
    if left.quantize(BUDGET_PLACES, rounding=ROUND_DOWN) <= 0:
        now = now or timezone.now()
        retry_after = max(1, int((next_midnight(now) - now).total_seconds()))
        message = f"You have spent {usd(spent)} of your {usd(limit)} daily budget today"
        if reserved > 0:
            message += (
                f", and your runs in progress may spend {usd(reserved)} more; new "
                "runs can start when they end, or after midnight "
                f"({settings.TIME_ZONE})."
            )
        else:
            message += f"; new runs can start after midnight ({settings.TIME_ZONE})."
        raise DailyBudgetExceeded(message, retry_after=retry_after)
    return left


def session_budget(
    template_budget: Decimal | None, daily_left: Decimal | None
) -> Decimal | None:
    """A run's ``cost_budget``: the smaller of its template's budget and the
    user's daily budget left (rounded down to the column's cents of cents),
    ``None`` when neither limits it."""
    limits = [amount for amount in (template_budget, daily_left) if amount is not None]
    if not limits:
        return None
    return min(limits).quantize(BUDGET_PLACES, rounding=ROUND_DOWN)


__all__ = [
    "DailyBudgetExceeded",
    "check_daily_budget",
    "daily_limit",
    "day_start",
    "next_midnight",
    "reserving",
    "session_budget",
    "spent_today",
]
