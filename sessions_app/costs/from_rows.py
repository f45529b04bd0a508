"""A cost report from the rows alone (``spend_from_rows``): every session of
the range read, as before the roll-ups (ADR 0027). It is the reference the
roll-ups are tested against, and the answer for a user who sees nothing.

- Prompt, model, user and day sum ``AgentSession.cost`` (provider calls and
  native fees of each session) over the sessions *created* in the range, read
  through the ``created_at`` indexes; each breakdown's total is the same figure.
- Tool sums ``ToolInvocation.cost`` (the native calls' fees) of those sessions,
  plus one row, "model tokens", for their provider calls' cost.
- Bounded: one query per breakdown (the tool breakdown reads the provider
  calls' total with a second one), whatever the number of rows. The largest
  ``TOP_GROUPS`` groups are listed; a window sum over all groups gives the rest
  as one "other" row without reading them. Day (month) lists every day
  (month) of the range.
"""

from __future__ import annotations

import datetime
from typing import Any, Final

from django.db.models import (
    Count,
    DateField,
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
from django.db.models.functions import Coalesce, TruncDate, TruncMonth
from django.utils import timezone

from sessions_app.costs.ranges import DateRange
from sessions_app.costs.spend import (
    NO_MODEL_LABEL,
    NO_USER_LABEL,
    PERIOD_GROUPS,
    TOP_GROUPS,
    ZERO,
    GroupSum,
    Spend,
    SpendRow,
    Totals,
    check_groups,
    money,
    other_row,
    period_rows,
    spend_of,
    sum_of,
    tokens_row,
)
from sessions_app.models import AgentSession, ProviderCall, ToolInvocation
from sessions_app.models.audit import UNPRICED_CALL

#: How much earlier than its session a row may say it was created.
ROW_SLACK: Final = datetime.timedelta(days=1)


def money_field() -> DecimalField[Any, Any]:
    return DecimalField(max_digits=30, decimal_places=10)


class _WindowSum(Func):
    """``SUM(<aggregate>) OVER ()``: a total over every group of a grouped
    query, read with its first rows (Django's ``Sum`` refuses an aggregate
    inside)."""

    function = "SUM"
    window_compatible = True


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
            all_cost=Window(_WindowSum(cost, output_field=money_field())),
            all_count=Window(_WindowSum(count, output_field=IntegerField())),
            all_unpriced=Window(_WindowSum(unpriced, output_field=IntegerField())),
            groups=Window(Count("*")),
        )
        .order_by("-spent", *order)[:TOP_GROUPS]
    )


def _rows(
    found: list[dict[str, Any]], key: Any, label: Any
) -> tuple[list[SpendRow], Totals]:
    rows = [
        SpendRow(
            key=key(row),
            label=label(row),
            cost=money(row["spent"]),
            count=int(row["count"] or 0),
            unpriced=int(row["unpriced"] or 0),
        )
        for row in found
    ]
    first = found[0] if found else {}
    totals = Totals(
        total=money(first.get("all_cost")),
        count=int(first.get("all_count") or 0),
        unpriced=int(first.get("all_unpriced") or 0),
        groups=int(first.get("groups") or 0),
    )
    other = other_row(rows, totals)
    if other is not None:
        rows.append(other)
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
) -> tuple[list[SpendRow], Totals]:
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


def _by_tool(user: Any, period: DateRange) -> tuple[list[SpendRow], Totals]:
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
        cost=Coalesce(Sum("cost"), Value(ZERO), output_field=money_field()),
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
            unpriced_calls=Count("pk", filter=UNPRICED_CALL),
        )
    )
    token_row = tokens_row(
        GroupSum(
            money(tokens["spent"]),
            int(tokens["calls"] or 0),
            int(tokens["unpriced_calls"] or 0),
        )
    )
    if token_row.count:
        rows.insert(0, token_row)
        totals.total += token_row.cost
        totals.count += token_row.count
        totals.unpriced += token_row.unpriced
    return rows, totals


def _by_period(
    group: str, user: Any, period: DateRange
) -> tuple[list[SpendRow], Totals]:
    """By day or by month (``group``), every one of the range in order."""
    zone = timezone.get_current_timezone()
    start: TruncDate | TruncMonth = TruncDate("created_at", tzinfo=zone)
    if group == "month":
        start = TruncMonth("created_at", tzinfo=zone, output_field=DateField())
    found = {
        row["start"]: sum_of(row)
        for row in _sessions(user, period)
        .order_by()
        .values(start=start)
        .annotate(spent=Sum("cost"), count=Count("*"), unpriced=Sum("unpriced_calls"))
    }
    return period_rows(group, period, found)


def spend_from_rows(
    group: str, *, user: Any, start: datetime.date, end: datetime.date
) -> Spend:
    """``reports.spend_by`` computed from the rows alone (every session of the
    range read): the reference the roll-ups are checked against."""
    check_groups((group,))
    period = DateRange(start, end)
    if group == "tool":
        rows, totals = _by_tool(user, period)
    elif group in PERIOD_GROUPS:
        rows, totals = _by_period(group, user, period)
    else:
        rows, totals = _by_session_field(group, user, period)
    return spend_of(group, period, rows, totals)
