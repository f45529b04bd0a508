"""Spend over a date range, grouped by prompt, tool, model, user or day: what
the cost page, its CSV export and ``GET /api/costs/`` show (docs/costs.md,
"Where costs show").

- Prompt, model, user and day sum ``AgentSession.cost`` (provider calls and
  native fees of each session) over the sessions *created* in the range, read
  through the ``created_at`` indexes; each breakdown's total is the same figure.
- Tool sums ``ToolInvocation.cost`` (the native calls' fees) of those sessions,
  plus one row, "model tokens", for their provider calls' cost: a tool's fee is
  what its provider charges per call, while the tokens its results add to the
  conversation are billed on the provider calls and cannot be split by tool.
- Who sees what: the sessions ``user`` may see (``sessions_app.access``), so a
  user's "by user" breakdown holds only themselves unless they see all.
- Bounded: one query per breakdown (the tool breakdown reads the provider
  calls' total with a second one), whatever the number of rows. The largest
  ``TOP_GROUPS`` groups are listed; a window sum over all groups gives the rest
  as one "other" row without reading them. Day lists every day of the range
  (at most ``ranges.MAX_DAYS``).

Rolled up (``sessions_app.costs.rollup``, ADR 0027): ``spend_report`` reads
the days and months rolled up from their sums and the rest (today, a day not
rolled up yet, a rolled-up day's sessions that had not ended) from the rows,
with the queries above restricted to them; ``spend_from_rows`` is the answer
from the rows alone, which the roll-ups are tested against.

Money is ``Decimal``: on SQLite a ``SUM`` is computed in floating point, so
every amount is rounded to the stored ten places here.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections import defaultdict
from decimal import Decimal
from typing import Any, Final

from django.contrib.auth import get_user_model
from django.db.models import (
    Count,
    DecimalField,
    F,
    Func,
    IntegerField,
    Q,
    QuerySet,
    Sum,
    Value,
    Window,
)
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from sessions_app import access
from sessions_app.costs import rollup
from sessions_app.costs.ranges import DateRange
from sessions_app.models import (
    AgentSession,
    DailySpend,
    DailySpendDay,
    ProviderCall,
    ToolInvocation,
)
from sessions_app.models.spend import DAY, MONTH

GROUPS: Final = ("prompt", "tool", "model", "user", "day")
GROUP_LABELS: Final = {
    "prompt": "Prompt",
    "tool": "Tool",
    "model": "Model",
    "user": "User",
    "day": "Day",
}
#: How many groups a breakdown lists before folding the rest into "other".
TOP_GROUPS: Final = 10
#: How much earlier than its session a row may say it was created.
ROW_SLACK: Final = datetime.timedelta(days=1)
PLACES: Final = Decimal("1e-10")
ZERO: Final = Decimal(0).quantize(PLACES)
MODEL_TOKENS_KEY: Final = "(model tokens)"
MODEL_TOKENS_LABEL: Final = "Model tokens (provider calls, all tools)"
NO_USER_LABEL: Final = "(no user: a command or a task)"
NO_MODEL_LABEL: Final = "(no model)"


def _money_field() -> DecimalField[Any, Any]:
    return DecimalField(max_digits=30, decimal_places=10)


class InvalidGroup(ValueError):
    """A grouping the report does not know."""


@dataclasses.dataclass(frozen=True, slots=True)
class SpendRow:
    """One group's spend.

    ``kind``: "group" (a prompt, tool, model, user or day), "other" (the groups
    past ``TOP_GROUPS``, ``count`` of them folded) or "tokens" (the tool
    breakdown's provider calls)."""

    key: str
    label: str
    cost: Decimal
    count: int
    unpriced: int
    kind: str = "group"
    folded: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class Spend:
    """A breakdown: its rows (largest first; days in order) and totals.

    ``count_label`` names what ``count`` counts: sessions, or (by tool) calls.
    ``groups`` is how many groups there were before folding."""

    group: str
    range: DateRange
    rows: tuple[SpendRow, ...]
    total: Decimal
    count: int
    unpriced: int
    groups: int
    count_label: str

    @property
    def label(self) -> str:
        return GROUP_LABELS[self.group]

    @property
    def largest(self) -> Decimal:
        return max((row.cost for row in self.rows), default=ZERO)


class _WindowSum(Func):
    """``SUM(<aggregate>) OVER ()``: a total over every group of a grouped
    query, read with its first rows (Django's ``Sum`` refuses an aggregate
    inside)."""

    function = "SUM"
    window_compatible = True


@dataclasses.dataclass(slots=True)
class _Totals:
    total: Decimal = ZERO
    count: int = 0
    unpriced: int = 0
    groups: int = 0


def _money(value: Any) -> Decimal:
    if value is None:
        return ZERO
    return Decimal(value).quantize(PLACES)


def _sessions(user: Any, period: DateRange) -> QuerySet[AgentSession]:
    low, high = period.bounds()
    return AgentSession.objects.visible_to(user).filter(
        created_at__gte=low, created_at__lt=high
    )


def _ranked(
    rows: QuerySet[Any], *, cost: Any, count: Any, unpriced: Any, order: tuple[str, ...]
) -> list[dict[str, Any]]:
    """The first ``TOP_GROUPS`` groups by cost, each with the totals over
    every group (one query)."""
    return list(
        rows.annotate(spent=cost, count=count, unpriced=unpriced)
        .annotate(
            all_cost=Window(_WindowSum(cost, output_field=_money_field())),
            all_count=Window(_WindowSum(count, output_field=IntegerField())),
            all_unpriced=Window(_WindowSum(unpriced, output_field=IntegerField())),
            groups=Window(Count("*")),
        )
        .order_by("-spent", *order)[:TOP_GROUPS]
    )


def _rows(
    found: list[dict[str, Any]], key: Any, label: Any
) -> tuple[list[SpendRow], _Totals]:
    rows = [
        SpendRow(
            key=key(row),
            label=label(row),
            cost=_money(row["spent"]),
            count=int(row["count"] or 0),
            unpriced=int(row["unpriced"] or 0),
        )
        for row in found
    ]
    first = found[0] if found else {}
    totals = _Totals(
        total=_money(first.get("all_cost")),
        count=int(first.get("all_count") or 0),
        unpriced=int(first.get("all_unpriced") or 0),
        groups=int(first.get("groups") or 0),
    )
    if totals.groups > len(rows):
        folded = totals.groups - len(rows)
        rows.append(
            SpendRow(
                key="(other)",
                label=f"Other ({folded} more)",
                cost=totals.total - sum((row.cost for row in rows), ZERO),
                count=totals.count - sum(row.count for row in rows),
                unpriced=totals.unpriced - sum(row.unpriced for row in rows),
                kind="other",
                folded=folded,
            )
        )
    return rows, totals


def _session_sums() -> dict[str, Any]:
    """What each group of sessions adds up."""
    return {
        "cost": Sum("cost"),
        "count": Count("*"),
        "unpriced": Sum("unpriced_calls"),
    }


def _by_session_field(
    group: str, user: Any, period: DateRange
) -> tuple[list[SpendRow], _Totals]:
    sessions = _sessions(user, period).order_by()
    if group == "prompt":
        found = _ranked(
            sessions.values("prompt_ref"), **_session_sums(), order=("prompt_ref",)
        )
        return _rows(found, lambda r: r["prompt_ref"], lambda r: r["prompt_ref"])
    if group == "model":
        found = _ranked(sessions.values("model"), **_session_sums(), order=("model",))
        return _rows(
            found, lambda r: r["model"], lambda r: r["model"] or NO_MODEL_LABEL
        )
    found = _ranked(
        sessions.values("created_by_id", username=F("created_by__username")),
        **_session_sums(),
        order=("username",),
    )
    return _rows(
        found,
        lambda r: r["username"] or "",
        lambda r: r["username"] or NO_USER_LABEL,
    )


def _by_tool(user: Any, period: DateRange) -> tuple[list[SpendRow], _Totals]:
    low, high = period.bounds()
    in_range = {
        "session__created_at__gte": low,
        "session__created_at__lt": high,
        # Redundant, to bound the scan: a session's rows are recorded after it
        # is created (a day's slack for clocks that disagree), so their own
        # created_at index skips the older rows instead of joining them all.
        # No upper bound: a run paused for approvals records calls days
        # later, so a range in the past still reads every call since.
        "created_at__gte": low - ROW_SLACK,
    }
    no_price = Q(cost__isnull=True)
    found = _ranked(
        ToolInvocation.objects.visible_to(user)
        .filter(native=True, **in_range)
        .order_by()
        .values("name", "kind"),
        cost=Coalesce(Sum("cost"), Value(ZERO), output_field=_money_field()),
        count=Count("*"),
        unpriced=Count("pk", filter=no_price),
        order=("name", "kind"),
    )
    rows, totals = _rows(
        found, lambda r: r["name"], lambda r: f"{r['name']} ({r['kind']})"
    )
    tokens = (
        ProviderCall.objects.visible_to(user)
        .filter(**in_range)
        .order_by()
        .aggregate(
            spent=Sum("cost"),
            calls=Count("*"),
            unpriced_calls=Count("pk", filter=no_price),
        )
    )
    token_row = SpendRow(
        key=MODEL_TOKENS_KEY,
        label=MODEL_TOKENS_LABEL,
        cost=_money(tokens["spent"]),
        count=int(tokens["calls"] or 0),
        unpriced=int(tokens["unpriced_calls"] or 0),
        kind="tokens",
    )
    if token_row.count:
        rows.insert(0, token_row)
        totals.total += token_row.cost
        totals.count += token_row.count
        totals.unpriced += token_row.unpriced
    return rows, totals


def _by_day(user: Any, period: DateRange) -> tuple[list[SpendRow], _Totals]:
    zone = timezone.get_current_timezone()
    found = {
        row["day"]: row
        for row in _sessions(user, period)
        .order_by()
        .values(day=TruncDate("created_at", tzinfo=zone))
        .annotate(spent=Sum("cost"), count=Count("*"), unpriced=Sum("unpriced_calls"))
    }
    rows = []
    for offset in range(period.days):
        day = period.start + datetime.timedelta(days=offset)
        row = found.get(day, {})
        rows.append(
            SpendRow(
                key=day.isoformat(),
                label=day.isoformat(),
                cost=_money(row.get("spent")),
                count=int(row.get("count") or 0),
                unpriced=int(row.get("unpriced") or 0),
            )
        )
    totals = _Totals(
        total=sum((row.cost for row in rows), ZERO),
        count=sum(row.count for row in rows),
        unpriced=sum(row.unpriced for row in rows),
        groups=len(found),
    )
    return rows, totals


def spend_from_rows(
    group: str, *, user: Any, start: datetime.date, end: datetime.date
) -> Spend:
    """``spend_by`` computed from the rows alone (every session of the range
    read): the reference the roll-ups are checked against."""
    if group not in GROUPS:
        raise InvalidGroup(f"Choose a grouping: {', '.join(GROUPS)}.")
    period = DateRange(start, end)
    if group == "tool":
        rows, totals = _by_tool(user, period)
    elif group == "day":
        rows, totals = _by_day(user, period)
    else:
        rows, totals = _by_session_field(group, user, period)
    return _spend(group, period, rows, totals)


def _spend(
    group: str, period: DateRange, rows: list[SpendRow], totals: _Totals
) -> Spend:
    return Spend(
        group=group,
        range=period,
        rows=tuple(rows),
        total=totals.total,
        count=totals.count,
        unpriced=totals.unpriced,
        groups=totals.groups,
        count_label="calls" if group == "tool" else "sessions",
    )


def spend_by(
    group: str, *, user: Any, start: datetime.date, end: datetime.date
) -> Spend:
    """What the sessions ``user`` may see, created from ``start`` to ``end``
    (local dates, both included), spent by ``group`` (one of ``GROUPS``)."""
    return spend_report((group,), user=user, start=start, end=end)[0]


def spend_report(
    groups: tuple[str, ...], *, user: Any, start: datetime.date, end: datetime.date
) -> list[Spend]:
    """``spend_by`` for each of ``groups``, reading what they share once.

    The days rolled up (``sessions_app.costs.rollup``) are read from their
    sums (two queries for every breakdown, whatever the range), the others
    (today, a day with a session still running, a day not rolled up yet) from
    the rows: the same figures as ``spend_from_rows``."""
    for group in groups:
        if group not in GROUPS:
            raise InvalidGroup(f"Choose a grouping: {', '.join(GROUPS)}.")
    period = DateRange(start, end)
    scope = _scope(user)
    if scope is None:
        return [
            spend_from_rows(group, user=user, start=start, end=end) for group in groups
        ]
    sealed = _sealed(period)
    live = _Live(_open_spans(period, sealed.days), sealed.pending)
    rolled = _rolled_up_groups(groups, scope, sealed)
    found_days = _rolled_up_days(scope, sealed.days) if "day" in groups else {}
    spends = []
    for group in groups:
        if group == "day":
            rows, totals = _days_merged(user, period, found_days, live)
        else:
            found = dict(rolled.get(group, {}))
            for key, value in _row_groups(group, user, live).items():
                found[key] = found.get(key, _Sum()) + value
            if group == "tool":
                rows, totals = _tool_rows(found)
            else:
                rows, totals = _ranked_rows(group, found)
        spends.append(_spend(group, period, rows, totals))
    return spends


# -- from the roll-ups and the open days' rows -------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Sum:
    cost: Decimal = ZERO
    count: int = 0
    unpriced: int = 0

    def __add__(self, other: _Sum) -> _Sum:
        return _Sum(
            self.cost + other.cost,
            self.count + other.count,
            self.unpriced + other.unpriced,
        )


def _sum(row: dict[str, Any]) -> _Sum:
    return _Sum(
        _money(row.get("spent")),
        int(row.get("count") or 0),
        int(row.get("unpriced") or 0),
    )


def _scope(user: Any) -> str | None:
    """The roll-up scope of what ``user`` sees (``None``: nothing)."""
    if access.sees_all(user):
        return rollup.EVERYONE
    if access.is_user(user):
        return rollup.user_scope(user.pk)
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class _Sealed:
    """The range's days rolled up, and the months of the range (whole) summed
    too."""

    days: set[datetime.date]
    months: set[datetime.date]
    #: the sealed days' sessions not ended when rolled up: (id, day)
    pending: list[tuple[str, datetime.date]]

    def by_months(self) -> Q:
        """The sealed days as months where it can, days elsewhere."""
        rest = {day for day in self.days if day.replace(day=1) not in self.months}
        where = Q(period=DAY, **_day_spans(rest)) if rest else Q(pk__in=[])
        if self.months:
            where |= Q(period=MONTH, day__in=sorted(self.months))
        return where


def _sealed(period: DateRange) -> _Sealed:
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
    return _Sealed(days=days, months=whole, pending=sorted(pending.items()))


def _open_spans(period: DateRange, sealed: set[datetime.date]) -> list[DateRange]:
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


def _day_spans(days: set[datetime.date]) -> dict[str, Any]:
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


def _rolled_up_groups(
    groups: tuple[str, ...], scope: str, sealed: _Sealed
) -> dict[str, dict[Any, _Sum]]:
    """The sealed days' sums of each group (one query) by key: a prompt,
    model, user id (``None``: no user), or (name, kind) of a tool (``None``:
    the provider calls)."""
    dimensions = [group for group in groups if group != "day"]
    if "tool" in dimensions:
        dimensions.append("tokens")
    found: dict[str, dict[Any, _Sum]] = defaultdict(dict)
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
        sums[key] = sums.get(key, _Sum()) + _sum(row)
    return found


def _rolled_up_days(
    scope: str, sealed: set[datetime.date]
) -> dict[datetime.date, _Sum]:
    """The sealed days' sums by day (their sessions by model, summed)."""
    if not sealed:
        return {}
    return {
        row["day"]: _sum(row)
        for row in _rolled_up(scope, Q(period=DAY, **_day_spans(sealed)))
        .filter(dimension="model")
        .values("day")
        .annotate(spent=Sum("cost"), count=Sum("count"), unpriced=Sum("unpriced"))
    }


@dataclasses.dataclass(frozen=True, slots=True)
class _Live:
    """What is read from the rows: the open days, and the sealed days'
    sessions that had not ended when rolled up."""

    spans: list[DateRange]
    pending: list[tuple[str, datetime.date]]

    def __bool__(self) -> bool:
        return bool(self.spans or self.pending)

    def sessions(self, prefix: str = "") -> Q:
        where = Q(pk__in=[])
        for span in self.spans:
            low, high = span.bounds()
            where |= Q(
                **{f"{prefix}created_at__gte": low, f"{prefix}created_at__lt": high}
            )
        if self.pending:
            ids = [pk for pk, _ in self.pending]
            where |= Q(**{f"{prefix}pk__in" if prefix else "pk__in": ids})
        return where

    def rows_since(self) -> datetime.datetime:
        """The earliest a row read may have been created (a day's slack)."""
        days = [span.start for span in self.spans] + [d for _, d in self.pending]
        first = min(days)
        return DateRange(first, first).bounds()[0] - ROW_SLACK


def _row_groups(group: str, user: Any, live: _Live) -> dict[Any, _Sum]:
    """The open days' sums by group key (as ``_rolled_up_groups``), from the
    rows."""
    if not live:
        return {}
    if group == "tool":
        slack = {"created_at__gte": live.rows_since()}
        in_spans = live.sessions("session__")
        no_price = Q(cost__isnull=True)
        found: dict[Any, _Sum] = {
            (row["name"], row["kind"]): _sum(row)
            for row in ToolInvocation.objects.visible_to(user)
            .filter(in_spans, native=True, **slack)
            .order_by()
            .values("name", "kind")
            .annotate(
                spent=Sum("cost"),
                count=Count("*"),
                unpriced=Count("pk", filter=no_price),
            )
        }
        tokens = (
            ProviderCall.objects.visible_to(user)
            .filter(in_spans, **slack)
            .order_by()
            .aggregate(
                spent=Sum("cost"),
                count=Count("*"),
                unpriced=Count("pk", filter=no_price),
            )
        )
        if tokens["count"]:
            found[None] = _sum(tokens)
        return found
    field = {"prompt": "prompt_ref", "model": "model", "user": "created_by_id"}[group]
    return {
        row[field]: _sum(row)
        for row in AgentSession.objects.visible_to(user)
        .filter(live.sessions())
        .order_by()
        .values(field)
        .annotate(spent=Sum("cost"), count=Count("*"), unpriced=Sum("unpriced_calls"))
    }


def _fold(
    rows: list[SpendRow], all_groups: list[_Sum]
) -> tuple[list[SpendRow], _Totals]:
    """The first ``TOP_GROUPS`` rows and one "other" row for the rest."""
    totals = _Totals(
        total=sum((g.cost for g in all_groups), ZERO),
        count=sum(g.count for g in all_groups),
        unpriced=sum(g.unpriced for g in all_groups),
        groups=len(all_groups),
    )
    shown = rows[:TOP_GROUPS]
    if totals.groups > len(shown):
        folded = totals.groups - len(shown)
        shown.append(
            SpendRow(
                key="(other)",
                label=f"Other ({folded} more)",
                cost=totals.total - sum((row.cost for row in shown), ZERO),
                count=totals.count - sum(row.count for row in shown),
                unpriced=totals.unpriced - sum(row.unpriced for row in shown),
                kind="other",
                folded=folded,
            )
        )
    return shown, totals


def _ranked_rows(group: str, found: dict[Any, _Sum]) -> tuple[list[SpendRow], _Totals]:
    """Prompt, model or user groups, the largest first (ties by name, as the
    database orders them: no user last)."""
    if group == "user":
        names = dict(
            get_user_model()
            .objects.filter(pk__in=[k for k in found if k is not None])
            .values_list("pk", "username")
        )
        for key in [k for k in found if k is not None and k not in names]:
            # A user deleted since the day was rolled up: their sessions have
            # no user now (SET_NULL).
            found[None] = found.get(None, _Sum()) + found.pop(key)
        named = {key: names[key] if key is not None else None for key in found}
        order = sorted(
            found,
            key=lambda k: (-found[k].cost, named[k] is None, named[k] or ""),
        )
        rows = [
            SpendRow(
                key=named[k] or "",
                label=named[k] or NO_USER_LABEL,
                cost=found[k].cost,
                count=found[k].count,
                unpriced=found[k].unpriced,
            )
            for k in order
        ]
    else:
        order = sorted(found, key=lambda k: (-found[k].cost, k))
        rows = [
            SpendRow(
                key=k,
                label=(k or NO_MODEL_LABEL) if group == "model" else k,
                cost=found[k].cost,
                count=found[k].count,
                unpriced=found[k].unpriced,
            )
            for k in order
        ]
    return _fold(rows, list(found.values()))


def _tool_rows(found: dict[Any, _Sum]) -> tuple[list[SpendRow], _Totals]:
    tokens = found.pop(None, None)
    order = sorted(found, key=lambda k: (-found[k].cost, k))
    rows, totals = _fold(
        [
            SpendRow(
                key=k[0],
                label=f"{k[0]} ({k[1]})",
                cost=found[k].cost,
                count=found[k].count,
                unpriced=found[k].unpriced,
            )
            for k in order
        ],
        list(found.values()),
    )
    if tokens is not None and tokens.count:
        rows.insert(
            0,
            SpendRow(
                key=MODEL_TOKENS_KEY,
                label=MODEL_TOKENS_LABEL,
                cost=tokens.cost,
                count=tokens.count,
                unpriced=tokens.unpriced,
                kind="tokens",
            ),
        )
        totals.total += tokens.cost
        totals.count += tokens.count
        totals.unpriced += tokens.unpriced
    return rows, totals


def _days_merged(
    user: Any,
    period: DateRange,
    rolled: dict[datetime.date, _Sum],
    live: _Live,
) -> tuple[list[SpendRow], _Totals]:
    found = dict(rolled)
    if live:
        zone = timezone.get_current_timezone()
        for row in (
            AgentSession.objects.visible_to(user)
            .filter(live.sessions())
            .order_by()
            .values(day=TruncDate("created_at", tzinfo=zone))
            .annotate(
                spent=Sum("cost"), count=Count("*"), unpriced=Sum("unpriced_calls")
            )
        ):
            found[row["day"]] = found.get(row["day"], _Sum()) + _sum(row)
    rows = []
    for offset in range(period.days):
        day = period.start + datetime.timedelta(days=offset)
        value = found.get(day, _Sum())
        rows.append(
            SpendRow(
                key=day.isoformat(),
                label=day.isoformat(),
                cost=value.cost,
                count=value.count,
                unpriced=value.unpriced,
            )
        )
    totals = _Totals(
        total=sum((row.cost for row in rows), ZERO),
        count=sum(row.count for row in rows),
        unpriced=sum(row.unpriced for row in rows),
        groups=sum(1 for value in found.values() if value.count),
    )
    return rows, totals
