"""Daily spend roll-ups: each closed day's sums, so that a cost report over a
year reads a few rows per day or month instead of every session (ADR 0027).

A day is rolled up (``roll_up_day``) once it is over in the current time zone
(``SETTLE`` after midnight), from the sessions created that day that have
ended (succeeded, failed or cancelled): an ended session's cost and rows never
change again, so their sums are final. The sessions not ended yet are left
out and named in the day's mark (``pending``): reports read them from the
rows, and the next run rolls the day up again. A day's rows (``DailySpend``)
are computed from the session rows in Python ``Decimal`` (exact on every
database), per scope: every session ("*") and each user's own ("u<id>", what
``sessions_app.access`` lets a user see); the day's mark (``DailySpendDay``)
says they are there. A month whose days are all rolled up is summed from
them (``roll_up_month``). Rolling a day up again recomputes it whole (and
forgets its month), so it is idempotent, and two jobs at once wait for each
other on the marks' row locks.

Nothing on the write path of a run changes: the job runs apart (``manage.py
roll_up_spend``; on a thread of each worker that sweeps on a thread,
``rollup_thread``, started by ``wink_project.celery``; the Celery beat task
``sessions_app.roll_up_spend`` for prefork workers), and a report reads every
day without a mark (today, a day not rolled up yet) from the rows. A purge
removes the marks of the days and months it touches
(``AgentSession.objects.purge``).
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal
from typing import Any, Final

from django.db import DatabaseError, transaction
from django.db.models import Case, Min, When
from django.utils import timezone

from sessions_app.costs.ranges import EARLIEST, DateRange
from sessions_app.models import (
    AgentSession,
    DailySpend,
    DailySpendDay,
    ProviderCall,
    ToolInvocation,
)
from sessions_app.models.audit import UNPRICED_CALL
from sessions_app.models.spend import DAY, MONTH

logger = logging.getLogger(__name__)

#: The Celery task (beat: ``WINK_SPEND_ROLLUP_INTERVAL``).
ROLL_UP_TASK: Final = "sessions_app.roll_up_spend"
#: The scope of every session (those who see all sessions read it).
EVERYONE: Final = "*"
#: The statuses a session may still leave (its cost may still change).
OPEN_STATUSES: Final = tuple(
    sorted(set(AgentSession.Status.values) - set(AgentSession.TERMINAL))
)
#: How long after midnight a day is rolled up: a session created just before
#: may commit a little after.
SETTLE: Final = datetime.timedelta(hours=1)
#: The most days one run of the job rolls up (the oldest first); the next run
#: goes on where it stopped.
MAX_DAYS_PER_RUN: Final = 800
#: How much earlier than its session a row may say it was created
#: (``reports.ROW_SLACK``).
ROW_SLACK: Final = datetime.timedelta(days=1)

_ZERO: Final = Decimal(0)


def user_scope(user_id: Any) -> str:
    return f"u{user_id}"


def local_date(moment: datetime.datetime) -> datetime.date:
    """The day of ``moment`` in the current time zone (naive: as it is)."""
    if timezone.is_aware(moment):
        return timezone.localtime(moment).date()
    return moment.date()


def zone_name() -> str:
    """The current time zone's name: a day is a day of this zone."""
    return timezone.get_current_timezone_name()


@dataclasses.dataclass(slots=True)
class _Sum:
    cost: Decimal = _ZERO
    count: int = 0
    unpriced: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class RollUpReport:
    rolled_up: tuple[datetime.date, ...]
    skipped: tuple[datetime.date, ...]  # not over yet
    months: tuple[datetime.date, ...] = ()
    pending: tuple[datetime.date, ...] = ()  # rolled up but for a session

    def __str__(self) -> str:
        return (
            f"Rolled up {len(self.rolled_up)} day(s) and {len(self.months)} "
            f"month(s); {len(self.pending)} day(s) with sessions not ended "
            f"(read from the rows; rolled up again next time), "
            f"{len(self.skipped)} not over yet."
        )


def _sums_of_day(
    low: datetime.datetime, high: datetime.datetime, pending: list[str]
) -> tuple[dict[tuple[str, str, str, str], _Sum], int]:
    """The day's sums but for its ``pending`` sessions, keyed by (scope,
    dimension, key, kind), and how many sessions they are."""
    sums: dict[tuple[str, str, str, str], _Sum] = defaultdict(_Sum)
    sessions = (
        AgentSession.objects.filter(created_at__gte=low, created_at__lt=high)
        .exclude(pk__in=pending)
        .order_by()
    )
    count = 0
    for user_id, prompt, model, cost, unpriced in sessions.values_list(
        "created_by_id", "prompt_ref", "model", "cost", "unpriced_calls"
    ):
        count += 1
        scopes = [EVERYONE] if user_id is None else [EVERYONE, user_scope(user_id)]
        user_key = "" if user_id is None else str(user_id)
        for scope in scopes:
            for dimension, key in (
                ("prompt", prompt),
                ("model", model),
                ("user", user_key),
            ):
                row = sums[(scope, dimension, key, "")]
                row.cost += cost or _ZERO
                row.count += 1
                row.unpriced += unpriced or 0
    in_day = {
        "session__created_at__gte": low,
        "session__created_at__lt": high,
        "created_at__gte": low - ROW_SLACK,
    }
    tools = (
        ToolInvocation.objects.filter(native=True, **in_day)
        .exclude(session_id__in=pending)
        .order_by()
        .values_list("session__created_by_id", "name", "kind", "cost")
    )
    calls = (
        ProviderCall.objects.filter(**in_day)
        .exclude(session_id__in=pending)
        .order_by()
        .annotate(unpriced=Case(When(UNPRICED_CALL, then=True), default=False))
        .values_list("session__created_by_id", "cost", "unpriced")
    )
    rows: Iterable[tuple[str, Any, str, str, Any, bool]] = (
        *(
            ("tool", user_id, name, kind, cost, cost is None)
            for user_id, name, kind, cost in tools
        ),
        # (a failed request has no cost and is not unpriced: UNPRICED_CALL)
        *(("tokens", user_id, "", "", cost, no) for user_id, cost, no in calls),
    )
    for dimension, user_id, name, kind, cost, unpriced in rows:
        scopes = [EVERYONE] if user_id is None else [EVERYONE, user_scope(user_id)]
        for scope in scopes:
            row = sums[(scope, dimension, name, kind)]
            row.count += 1
            row.unpriced += unpriced
            if cost is not None:
                row.cost += cost
    return sums, count


def day_bounds(day: datetime.date) -> tuple[datetime.datetime, datetime.datetime]:
    return DateRange(day, day).bounds()


def last_closed_day(now: datetime.datetime | None = None) -> datetime.date:
    """The last day that is over, ``SETTLE`` ago at least: a session created
    just before midnight may commit a little after it."""
    return local_date((now or timezone.now()) - SETTLE) - datetime.timedelta(days=1)


def _month_of(day: datetime.date) -> datetime.date:
    return day.replace(day=1)


def month_days(month: datetime.date) -> list[datetime.date]:
    """The days of the month starting on ``month``."""
    days = []
    day = month
    while day.month == month.month:
        days.append(day)
        day += datetime.timedelta(days=1)
    return days


def _forget_month(zone: str, day: datetime.date) -> None:
    """The month of ``day`` is summed again once its days are all there."""
    month = {"zone": zone, "period": MONTH, "day": _month_of(day)}
    DailySpendDay.objects.filter(**month).delete()
    DailySpend.objects.filter(**month).delete()


def _write(
    zone: str,
    period: str,
    day: datetime.date,
    sums: dict[tuple[str, str, str, str], _Sum],
) -> None:
    DailySpend.objects.bulk_create(
        DailySpend(
            zone=zone,
            period=period,
            day=day,
            scope=scope,
            dimension=dimension,
            key=key,
            kind=kind,
            cost=total.cost,
            count=total.count,
            unpriced=total.unpriced,
        )
        for (scope, dimension, key, kind), total in sums.items()
    )


def roll_up_day(day: datetime.date, *, now: datetime.datetime | None = None) -> bool:
    """Roll ``day`` (a day of the current time zone) up from the rows, again
    if it was; ``False`` (and no mark) when it is not over yet. The sessions
    of the day not ended are left out and named in the mark (``pending``)."""
    if day > last_closed_day(now):
        return False
    low, high = day_bounds(day)
    zone = zone_name()
    with transaction.atomic():
        mark, _ = DailySpendDay.objects.select_for_update().get_or_create(
            zone=zone, period=DAY, day=day, defaults={"computed_at": timezone.now()}
        )
        _forget_month(zone, day)
        # First: a session ended now has its final rows (it never runs again);
        # one that ends after this is pending, so never counted twice.
        pending = sorted(
            str(pk)
            for pk in AgentSession.objects.filter(
                status__in=OPEN_STATUSES, created_at__gte=low, created_at__lt=high
            ).values_list("pk", flat=True)
        )
        DailySpend.objects.filter(zone=zone, period=DAY, day=day).delete()
        sums, sessions = _sums_of_day(low, high, pending)
        _write(zone, DAY, day, sums)
        mark.sessions = sessions
        mark.pending = pending
        mark.pending_count = len(pending)
        mark.computed_at = timezone.now()
        mark.save(update_fields=["sessions", "pending", "pending_count", "computed_at"])
    return True


def roll_up_month(month: datetime.date) -> bool:
    """Sum the month starting on ``month`` from its days' roll-ups (exactly,
    in ``Decimal``), again if it was; ``False`` (and no mark) unless every day
    of it is rolled up."""
    zone = zone_name()
    days = month_days(month)
    with transaction.atomic():
        # The days first, then the month: the order ``roll_up_day`` locks in.
        marks = list(
            DailySpendDay.objects.select_for_update()
            .filter(zone=zone, period=DAY, day__gte=days[0], day__lte=days[-1])
            .order_by("day")
            .values_list("sessions", flat=True)
        )
        if len(marks) != len(days):
            _forget_month(zone, month)
            return False
        mark, _ = DailySpendDay.objects.select_for_update().get_or_create(
            zone=zone,
            period=MONTH,
            day=month,
            defaults={"computed_at": timezone.now()},
        )
        DailySpend.objects.filter(zone=zone, period=MONTH, day=month).delete()
        sums: dict[tuple[str, str, str, str], _Sum] = defaultdict(_Sum)
        for scope, dimension, key, kind, cost, count, unpriced in (
            DailySpend.objects.filter(
                zone=zone, period=DAY, day__gte=days[0], day__lte=days[-1]
            )
            .order_by()
            .values_list(
                "scope", "dimension", "key", "kind", "cost", "count", "unpriced"
            )
        ):
            row = sums[(scope, dimension, key, kind)]
            row.cost += cost
            row.count += count
            row.unpriced += unpriced
        _write(zone, MONTH, month, sums)
        mark.sessions = sum(marks)
        mark.computed_at = timezone.now()
        mark.save(update_fields=["sessions", "computed_at"])
    return True


def days_to_roll_up(
    *, now: datetime.datetime | None = None, limit: int = MAX_DAYS_PER_RUN
) -> list[datetime.date]:
    """The closed days, since the first session, without a mark in the
    current time zone (the oldest first, at most ``limit``)."""
    first = AgentSession.objects.order_by().aggregate(first=Min("created_at"))["first"]
    if first is None:
        return []
    # No report reads a day before EARLIEST (and its bounds may overflow).
    start = max(local_date(first), EARLIEST)
    end = last_closed_day(now)
    marked = set(
        DailySpendDay.objects.filter(
            zone=zone_name(), period=DAY, day__gte=start, day__lte=end, pending_count=0
        ).values_list("day", flat=True)
    )
    days: list[datetime.date] = []
    day = start
    while day <= end and len(days) < limit:
        if day not in marked:
            days.append(day)
        day += datetime.timedelta(days=1)
    return days


def months_to_roll_up(now: datetime.datetime | None = None) -> list[datetime.date]:
    """The months over whose days are all rolled up, without a month mark."""
    zone = zone_name()
    end = last_closed_day(now)
    days: dict[datetime.date, int] = defaultdict(int)
    for day in DailySpendDay.objects.filter(
        zone=zone, period=DAY, day__lte=end
    ).values_list("day", flat=True):
        days[_month_of(day)] += 1
    marked = set(
        DailySpendDay.objects.filter(zone=zone, period=MONTH).values_list(
            "day", flat=True
        )
    )
    return sorted(
        month
        for month, count in days.items()
        if month not in marked and count == len(month_days(month))
    )


def roll_up(
    days: Iterable[datetime.date] | None = None, *, limit: int = MAX_DAYS_PER_RUN
) -> RollUpReport:
    """Roll up ``days`` (default: every closed day not rolled up yet), then
    every month whose days are all rolled up."""
    chosen = list(days) if days is not None else days_to_roll_up(limit=limit)
    done: list[datetime.date] = []
    skipped: list[datetime.date] = []
    for day in chosen:
        try:
            rolled = roll_up_day(day)
        except DatabaseError:
            # that day stays read from the rows; the days after it go on
            logger.exception("Rolling up the spend of %s failed", day)
            rolled = False
        (done if rolled else skipped).append(day)
    pending = tuple(
        DailySpendDay.objects.filter(
            zone=zone_name(), period=DAY, day__in=done, pending_count__gt=0
        )
        .order_by("day")
        .values_list("day", flat=True)
    )
    months = tuple(month for month in months_to_roll_up() if roll_up_month(month))
    return RollUpReport(
        rolled_up=tuple(done), skipped=tuple(skipped), months=months, pending=pending
    )
