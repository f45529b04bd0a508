"""What a report merged with the roll-ups reads from the rows: the days not
rolled up (today, a day not rolled up yet) and the sealed days' sessions that
had not ended when rolled up (ADR 0027), with the queries of the rows path
restricted to them.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from sessions_app.costs.from_rows import ROW_SLACK
from sessions_app.costs.ranges import DateRange
from sessions_app.costs.spend import GroupSum, sum_of
from sessions_app.models import AgentSession, ProviderCall, ToolInvocation


@dataclasses.dataclass(frozen=True, slots=True)
class Live:
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


def live_groups(group: str, user: Any, live: Live) -> dict[Any, GroupSum]:
    """The open days' sums by group key (as ``rolled_up.rolled_up_groups``),
    from the rows."""
    if not live:
        return {}
    if group == "tool":
        slack = {"created_at__gte": live.rows_since()}
        in_spans = live.sessions("session__")
        no_price = Q(cost__isnull=True)
        found: dict[Any, GroupSum] = {
            (row["name"], row["kind"]): sum_of(row)
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
            found[None] = sum_of(tokens)
        return found
    field = {"prompt": "prompt_ref", "model": "model", "user": "created_by_id"}[group]
    return {
        row[field]: sum_of(row)
        for row in AgentSession.objects.visible_to(user)
        .filter(live.sessions())
        .order_by()
        .values(field)
        .annotate(spent=Sum("cost"), count=Count("*"), unpriced=Sum("unpriced_calls"))
    }


def live_days(user: Any, live: Live) -> dict[datetime.date, GroupSum]:
    """The open days' sums by day, from the rows."""
    if not live:
        return {}
    zone = timezone.get_current_timezone()
    return {
        row["day"]: sum_of(row)
        for row in AgentSession.objects.visible_to(user)
        .filter(live.sessions())
        .order_by()
        .values(day=TruncDate("created_at", tzinfo=zone))
        .annotate(spent=Sum("cost"), count=Count("*"), unpriced=Sum("unpriced_calls"))
    }
