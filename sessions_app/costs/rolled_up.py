"""Reading the roll-ups (``sessions_app.costs.rollup``, ADR 0027): which days
of a range are sealed (rolled up, and their sums trusted), which of its months
are whole, and their sums by group and by day.

A rolled-up day's sums leave out the sessions that had not ended (its mark
names them: ``pending``); ``live`` reads those, and the days not rolled up,
from the rows.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from django.db.models import (
    Case,
    DateField,
    F,
    JSONField,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)

from sessions_app import access
from sessions_app.costs import rollup
from sessions_app.costs.ranges import DateRange
from sessions_app.costs.spend import (
    ONE_DAY,
    PERIOD_GROUPS,
    GroupSum,
    SessionGroup,
    money,
    month_of,
    next_month,
    sum_of,
)
from sessions_app.models import AgentSession, DailySpend, DailySpendDay
from sessions_app.models.spend import DAY, MONTH


def scope_of(user: Any) -> str | None:
    """The roll-up scope of what ``user`` sees (``None``: nothing)."""
    if access.sees_all(user):
        return rollup.EVERYONE
    if access.is_user(user):
        return rollup.user_scope(user.pk)
    return None


def in_scope(scope: str, created_by_id: int | None) -> bool:
    """Whether a session by ``created_by_id`` counts in ``scope``, as the
    roll-up counts it (every session in ``EVERYONE``, one's own in one's
    scope: what ``access.py`` lets each see)."""
    return scope == rollup.EVERYONE or (
        created_by_id is not None and scope == rollup.user_scope(created_by_id)
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Sealed:
    """The range's days rolled up, and the months of the range (whole) summed
    too."""

    days: set[datetime.date]
    months: set[datetime.date]
    #: the sealed days' sessions not ended when rolled up: (id, day)
    pending: list[tuple[str, datetime.date]]
    #: and their sums, each session's own (whoever may see it)
    pending_sums: list[SessionGroup] = dataclasses.field(default_factory=list)

    def by_months(self) -> Q:
        """The sealed days as months where it can, days elsewhere."""
        rest = {day for day in self.days if month_of(day) not in self.months}
        return Q(period=DAY) & days_filter(rest, next_day) | Q(
            period=MONTH
        ) & days_filter(self.months, next_month)


def sealed_days(period: DateRange) -> Sealed:
    """The range's days rolled up in the current time zone, less any with a
    session not ended that its mark does not name (a guard: rows loaded into
    the past); the sessions they name (pending) and their sums, read with the
    guard; the months of the range whose days are all sealed."""
    days: set[datetime.date] = set()
    months: set[datetime.date] = set()
    pending: dict[str, datetime.date] = {}
    for kind, day, ids in DailySpendDay.objects.filter(
        zone=rollup.zone_name(),
        day__gte=period.start.replace(day=1),
        day__lte=period.end,
    ).values_list(
        "period",
        "day",
        # Most days name none: their "[]" is not decoded.
        Case(
            When(pending_count__gt=0, then=F("pending")),
            default=Value(None),
            output_field=JSONField(),
        ),
    ):
        if kind == MONTH:
            months.add(day)
        elif day >= period.start:
            days.add(day)
            pending.update((str(pk), day) for pk in ids or ())
    found: dict[str, SessionGroup] = {}
    if days:
        low, high = period.bounds()
        sessions = AgentSession.objects.order_by().values_list(*_SESSION_FIELDS)
        # The sessions not ended (most of the pending ones), and the pending
        # ones that have ended since they were rolled up, if any.
        for row in sessions.filter(
            status__in=rollup.OPEN_STATUSES, created_at__gte=low, created_at__lt=high
        ):
            pk = str(row[0])
            if pk in pending:
                found[pk] = _session_group(row)
            else:
                days.discard(rollup.local_date(row[1]))
        ended = [pk for pk in pending if pk not in found]
        if ended:
            found.update(
                (str(row[0]), _session_group(row))
                for row in sessions.filter(pk__in=ended)
            )
    pending = {pk: day for pk, day in pending.items() if day in days}
    sealed_in: dict[datetime.date, int] = defaultdict(int)
    for day in days:
        sealed_in[month_of(day)] += 1
    whole = {
        month
        for month in months
        if sealed_in[month] == (next_month(month) - month).days
    }
    return Sealed(
        days=days,
        months=whole,
        pending=sorted(pending.items()),
        pending_sums=[found[pk] for pk in sorted(pending) if pk in found],
    )


_SESSION_FIELDS = (
    "pk",
    "created_at",
    "prompt_ref",
    "model",
    "created_by_id",
    "cost",
    "unpriced_calls",
)


def _session_group(row: tuple[Any, ...]) -> SessionGroup:
    _, created, prompt_ref, model, created_by_id, cost, unpriced = row
    return SessionGroup(
        prompt_ref,
        model,
        created_by_id,
        rollup.local_date(created),
        GroupSum(money(cost), 1, unpriced or 0),
    )


def open_spans(period: DateRange, sealed: set[datetime.date]) -> list[DateRange]:
    """The range's days not rolled up, as runs of consecutive days."""
    spans: list[DateRange] = []
    start: datetime.date | None = None
    days = period.days
    day = period.start
    for offset in range(days + 1):
        is_open = offset < days and day not in sealed
        if is_open and start is None:
            start = day
        elif not is_open and start is not None:
            spans.append(DateRange(start, day - ONE_DAY))
            start = None
        day += ONE_DAY
    return spans


#: Above this many runs of consecutive days, a filter lists the days.
MOST_RUNS = 4


def days_filter(
    days: set[datetime.date], step: Callable[[datetime.date], datetime.date]
) -> Q:
    """A filter on ``day`` for ``days`` (months, with ``step`` ``next_month``):
    a range for each run of consecutive ones (a few index ranges read fewer
    rows' worth of planning than a long list), or the list when there are
    many runs; nothing for none."""
    if not days:
        return Q(pk__in=[])
    runs: list[list[datetime.date]] = []
    for day in sorted(days):
        if runs and step(runs[-1][-1]) == day:
            runs[-1][-1] = day
        else:
            runs.append([day, day])
    if len(runs) > MOST_RUNS:
        return Q(day__in=sorted(days))
    where = Q(pk__in=[])
    for first, last in runs:
        where |= Q(day__gte=first, day__lte=last)
    return where


def next_day(day: datetime.date) -> datetime.date:
    return day + ONE_DAY


def _rolled_up(scope: str, where: Q) -> QuerySet[DailySpend]:
    return DailySpend.objects.filter(
        where, zone=rollup.zone_name(), scope=scope
    ).order_by()


def rolled_up_groups(
    groups: tuple[str, ...], scope: str, sealed: Sealed
) -> dict[str, dict[Any, GroupSum]]:
    """The sealed days' sums of each group (one query) by key: a prompt,
    model, user id (``None``: no user), or (name, kind) of a tool (``None``:
    the provider calls); by month, the month's first day (the sessions by
    model, read by the period each row sums: a month, or a day at the range's
    edges)."""
    dimensions = [group for group in groups if group not in PERIOD_GROUPS]
    if "tool" in dimensions:
        dimensions.append("tokens")
    by_month = "month" in groups
    if by_month and "model" not in dimensions:
        dimensions.append("model")
    found: dict[str, dict[Any, GroupSum]] = defaultdict(dict)
    if not dimensions or not sealed.days:
        return found
    rows = _rolled_up(scope, sealed.by_months()).filter(dimension__in=dimensions)
    period = Case(
        When(dimension="model", then=F("day")),
        default=Value(None),
        output_field=DateField(),
    )
    grouped = (
        rows.values("dimension", "key", "kind", summed=period)
        if by_month
        else rows.values("dimension", "key", "kind")
    ).annotate(spent=Sum("cost"), count=Sum("count"), unpriced=Sum("unpriced"))
    for row in grouped:
        group, key = row["dimension"], row["key"]
        value = sum_of(row)
        if by_month and group == "model":
            sums = found["month"]
            month = month_of(row["summed"])
            sums[month] = sums.get(month, GroupSum()) + value
        if group == "tokens":
            group, key = "tool", None
        elif group == "tool":
            key = (key, row["kind"])
        elif group == "user":
            key = int(key) if key else None
        sums = found[group]
        sums[key] = sums.get(key, GroupSum()) + value
    return found


def rolled_up_days(scope: str, sealed: Sealed) -> dict[datetime.date, GroupSum]:
    """The sealed days' sums by day (one query: the sessions by model,
    summed)."""
    if not sealed.days:
        return {}
    return {
        row["day"]: sum_of(row)
        for row in _rolled_up(scope, Q(period=DAY) & days_filter(sealed.days, next_day))
        .filter(dimension="model")
        .values("day")
        .annotate(spent=Sum("cost"), count=Sum("count"), unpriced=Sum("unpriced"))
    }
