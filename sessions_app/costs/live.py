"""What a report merged with the roll-ups reads from the rows: the days not
rolled up (today, a day not rolled up yet) and the sealed days' sessions that
had not ended when rolled up (ADR 0027).

Three reads at most, whatever the breakdowns: the open days' sessions' sums by
prompt, model, user and day together (``live_sessions``; each breakdown adds
up its own from them; the pending sessions' come with the roll-ups' guard),
and the tool breakdown's native calls by tool and provider calls
(``live_tools``).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable
from typing import Any

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from sessions_app.costs.ranges import DateRange
from sessions_app.costs.spend import GroupSum, SessionGroup, sum_of
from sessions_app.models import AgentSession, ProviderCall, ToolInvocation
from sessions_app.models.audit import UNPRICED_CALL

#: The fields a live session's sums are grouped by, for each breakdown.
SESSION_FIELDS = {"prompt": "prompt_ref", "model": "model", "user": "created_by_id"}


@dataclasses.dataclass(frozen=True, slots=True)
class Live:
    """What is read from the rows: the open days, and the sealed days'
    sessions that had not ended when rolled up."""

    spans: list[DateRange]
    pending: list[tuple[str, datetime.date]]
    #: the pending sessions' own sums, those the reader may see (read with
    #: the roll-ups' guard, ``rolled_up.sealed_days``)
    pending_sums: list[SessionGroup] = dataclasses.field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.spans or self.pending)

    def sessions(self) -> Q:
        """The live sessions: pending, or created in an open span."""
        return Q(pk__in=[pk for pk, _ in self.pending]) | created_in(self.spans)

    def rows(self) -> Q:
        """The live sessions' calls, found through their sessions (a
        semi-join on ``session_id``): one condition whatever the spans and
        pending sessions, so the calls are read by their session's index.
        (An ``OR`` of the spans' joins and the pending ids was planned as a
        scan of every call: 0.7 s at 1,000,000 tool calls.)"""
        return Q(session__in=AgentSession.objects.filter(self.sessions()).values("pk"))


def created_in(spans: list[DateRange]) -> Q:
    """The sessions created in one of ``spans``."""
    where = Q(pk__in=[])
    for span in spans:
        low, high = span.bounds()
        where |= Q(created_at__gte=low, created_at__lt=high)
    return where


def live_sessions(user: Any, live: Live) -> list[SessionGroup]:
    """The live sessions ``user`` may see, summed by prompt, model, user and
    day together: the pending ones as read already, the open spans' in one
    query (at most one row per session)."""
    if not live.spans:
        return list(live.pending_sums)
    zone = timezone.get_current_timezone()
    in_spans = created_in(live.spans)
    return [
        *live.pending_sums,
        *(
            SessionGroup(
                row["prompt_ref"],
                row["model"],
                row["created_by_id"],
                row["day"],
                sum_of(row),
            )
            for row in AgentSession.objects.visible_to(user)
            .filter(in_spans)
            .order_by()
            .values(
                "prompt_ref",
                "model",
                "created_by_id",
                day=TruncDate("created_at", tzinfo=zone),
            )
            .annotate(
                spent=Sum("cost"), count=Count("*"), unpriced=Sum("unpriced_calls")
            )
        ),
    ]


def sums_by(group: str, found: Iterable[SessionGroup]) -> dict[Any, GroupSum]:
    """The live sessions' sums by a prompt, model or user id (``group``) or by
    day (``"day"``)."""
    field = SESSION_FIELDS.get(group, group)
    sums: dict[Any, GroupSum] = {}
    for live_group in found:
        key = getattr(live_group, field)
        sums[key] = sums.get(key, GroupSum()) + live_group.sums
    return sums


def live_tools(user: Any, live: Live) -> dict[Any, GroupSum]:
    """The live sessions' native calls' sums by (name, kind), and their
    provider calls' under ``None`` (when there are some)."""
    if not live:
        return {}
    no_price = Q(cost__isnull=True)
    sums = {
        "spent": Sum("cost"),
        "count": Count("*"),
        "unpriced": Count("pk", filter=no_price),
    }
    found: dict[Any, GroupSum] = {
        (row["name"], row["kind"]): sum_of(row)
        for row in ToolInvocation.objects.visible_to(user)
        .filter(live.rows(), native=True)
        .order_by()
        .values("name", "kind")
        .annotate(**sums)
    }
    calls = (
        ProviderCall.objects.visible_to(user)
        .filter(live.rows())
        .aggregate(**{**sums, "unpriced": Count("pk", filter=UNPRICED_CALL)})
    )
    if calls["count"]:
        found[None] = sum_of(calls)
    return found
