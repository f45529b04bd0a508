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

Money is ``Decimal``: on SQLite a ``SUM`` is computed in floating point, so
every amount is rounded to the stored ten places here.
"""

from __future__ import annotations

import dataclasses
import datetime
from decimal import Decimal
from typing import Any, Final

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

from sessions_app.costs.ranges import DateRange
from sessions_app.models import AgentSession, ProviderCall, ToolInvocation

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


def spend_by(
    group: str, *, user: Any, start: datetime.date, end: datetime.date
) -> Spend:
    """What the sessions ``user`` may see, created from ``start`` to ``end``
    (local dates, both included), spent by ``group`` (one of ``GROUPS``)."""
    if group not in GROUPS:
        raise InvalidGroup(f"Choose a grouping: {', '.join(GROUPS)}.")
    period = DateRange(start, end)
    if group == "tool":
        rows, totals = _by_tool(user, period)
    elif group == "day":
        rows, totals = _by_day(user, period)
    else:
        rows, totals = _by_session_field(group, user, period)
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
