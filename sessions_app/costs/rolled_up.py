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
from typing import Any

from django.db.models import Q, QuerySet, Sum

from sessions_app import access
from sessions_app.costs import rollup
from sessions_app.costs.ranges import DateRange
from sessions_app.costs.spend import GroupSum, sum_of
from sessions_app.models import AgentSession, DailySpend, DailySpendDay
from sessions_app.models.spend import DAY, MONTH


def scope_of(user: Any) -> str | None:
    """The roll-up scope of what ``user`` sees (``None``: nothing)."""
    if access.sees_all(user):
        return rollup.EVERYONE
    if access.is_user(user):
        return rollup.user_scope(user.pk)
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class Sealed:
    """The range's days rolled up, and the months of the range (whole) summed
    too."""

    days: set[datetime.date]
    months: set[datetime.date]
    #: the sealed days' sessions not ended when rolled up: (id, day)
    pending: list[tuple[str, datetime.date]]

    def by_months(self) -> Q:
        """The sealed days as months where it can, days elsewhere."""
        rest = {day for day in self.days if day.replace(day=1) not in self.months}
        where = Q(period=DAY, **day_spans(rest)) if rest else Q(pk__in=[])
        if self.months:
            where |= Q(period=MONTH, day__in=sorted(self.months))
        return where


def sealed_days(period: DateRange) -> Sealed:
    """The range's days rolled up in the current time zone, less any with a
    session not ended that its mark does not name (a guard: rows loaded into
    the past); the sessions they name (pending); the months of the range whose
    days are all sealed."""
    days: set[datetime.date] = set()
    months: set[datetime.date] = set()
    pending: dict[str, datetime.date] = {}
    for kind, day, ids in DailySpendDay.objects.filter(
        zone=rollup.zone_name(),
        day__gte=period.start.replace(day=1),
        day__lte=period.end,
    ).values_list("period", "day", "pending"):
        if kind == MONTH:
            months.add(day)
        elif day >= period.start:
            days.add(day)
            pending.update((str(pk), day) for pk in ids or ())
    if days:
        low, high = period.bounds()
        for pk, created in AgentSession.objects.filter(
            status__in=rollup.OPEN_STATUSES, created_at__gte=low, created_at__lt=high
        ).values_list("pk", "created_at"):
            if str(pk) not in pending:
                days.discard(rollup.local_date(created))
    pending = {pk: day for pk, day in pending.items() if day in days}
    whole = {
        month
        for month in months
        if all(day in days for day in rollup.month_days(month))
    }
    return Sealed(days=days, months=whole, pending=sorted(pending.items()))


def open_spans(period: DateRange, sealed: set[datetime.date]) -> list[DateRange]:
    """The range's days not rolled up, as runs of consecutive days."""
    spans: list[DateRange] = []
    start: datetime.date | None = None
    for offset in range(period.days + 1):
        day = period.start + datetime.timedelta(days=offset)
        is_open = offset < period.days and day not in sealed
        if is_open and start is None:
            start = day
        elif not is_open and start is not None:
            spans.append(DateRange(start, day - datetime.timedelta(days=1)))
            start = None
    return spans


def day_spans(days: set[datetime.date]) -> dict[str, Any]:
    """A filter on ``day`` for ``days``: a range when they run on without a
    gap, else the list."""
    first, last = min(days), max(days)
    if (last - first).days + 1 == len(days):
        return {"day__gte": first, "day__lte": last}
    return {"day__in": sorted(days)}


def _rolled_up(scope: str, where: Q) -> QuerySet[DailySpend]:
    return DailySpend.objects.filter(
        where, zone=rollup.zone_name(), scope=scope
    ).order_by()


def rolled_up_groups(
    groups: tuple[str, ...], scope: str, sealed: Sealed
) -> dict[str, dict[Any, GroupSum]]:
    """The sealed days' sums of each group (one query) by key: a prompt,
    model, user id (``None``: no user), or (name, kind) of a tool (``None``:
    the provider calls)."""
    dimensions = [group for group in groups if group != "day"]
    if "tool" in dimensions:
        dimensions.append("tokens")
    found: dict[str, dict[Any, GroupSum]] = defaultdict(dict)
    if not dimensions or not sealed.days:
        return found
    rows = (
        _rolled_up(scope, sealed.by_months())
        .filter(dimension__in=dimensions)
        .values("dimension", "key", "kind")
        .annotate(spent=Sum("cost"), count=Sum("count"), unpriced=Sum("unpriced"))
    )
    for row in rows:
        group, key = row["dimension"], row["key"]
        if group == "tokens":
            group, key = "tool", None
        elif group == "tool":
            key = (key, row["kind"])
        elif group == "user":
            key = int(key) if key else None
        sums = found[group]
        sums[key] = sums.get(key, GroupSum()) + sum_of(row)
    return found


def rolled_up_days(
    scope: str, sealed: set[datetime.date]
) -> dict[datetime.date, GroupSum]:
    """The sealed days' sums by day (their sessions by model, summed)."""
    if not sealed:
        return {}
    return {
        row["day"]: sum_of(row)
        for row in _rolled_up(scope, Q(period=DAY, **day_spans(sealed)))
        .filter(dimension="model")
        .values("day")
        .annotate(spent=Sum("cost"), count=Sum("count"), unpriced=Sum("unpriced"))
    }
