"""Spend over a date range, grouped by prompt, tool, model, user, day or month: what
the cost page, its CSV export and ``GET /api/costs/`` show (docs/costs.md,
"Where costs show").

- Prompt, model, user, day and month sum ``AgentSession.cost`` (provider calls and
  native fees of each session) over the sessions *created* in the range; each
  breakdown's total is the same figure.
- Tool sums ``ToolInvocation.cost`` (the native calls' fees) of those sessions,
  plus one row, "model tokens", for their provider calls' cost: a tool's fee is
  what its provider charges per call, while the tokens its results add to the
  conversation are billed on the provider calls and cannot be split by tool.
- Who sees what: the sessions ``user`` may see (``sessions_app.access``), so a
  user's "by user" breakdown holds only themselves unless they see all.
- The largest ``TOP_GROUPS`` groups are listed, the rest as one "other" row.
  Day lists every day of the range (at most ``ranges.MAX_DAYS``), month every
  month (the first and the last may be cut by the range).

Rolled up (``sessions_app.costs.rollup``, ADR 0027): ``spend_report`` reads
the days and months rolled up from their sums (``rolled_up``) and the rest
(today, a day not rolled up yet, a rolled-up day's sessions that had not
ended) from the rows (``live``); ``from_rows.spend_from_rows`` is the answer
from the rows alone, which the roll-ups are tested against.

Money is ``Decimal``, to the stored ten places (``spend.money``).
"""

from __future__ import annotations

import datetime
from typing import Any

from django.contrib.auth import get_user_model

from sessions_app.costs.from_rows import spend_from_rows
from sessions_app.costs.live import Live, live_sessions, live_tools, sums_by
from sessions_app.costs.ranges import DateRange
from sessions_app.costs.rolled_up import (
    in_scope,
    open_spans,
    rolled_up_days,
    rolled_up_groups,
    scope_of,
    sealed_days,
)
from sessions_app.costs.spend import (
    NO_MODEL_LABEL,
    NO_USER_LABEL,
    PERIOD_GROUPS,
    GroupSum,
    Spend,
    SpendRow,
    Totals,
    check_groups,
    fold,
    month_of,
    period_rows,
    spend_of,
    tokens_row,
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
    sums: their marks and the guard (which brings the pending sessions'
    sums), one query for every breakdown (by month too) whatever the range,
    one more by day. The others (today, a day not rolled up yet) are read
    from the rows: their sessions in one query, by tool their calls in two.
    The same figures as ``from_rows.spend_from_rows``."""
    check_groups(groups)
    period = DateRange(start, end)
    scope = scope_of(user)
    if scope is None:
        return [
            spend_from_rows(group, user=user, start=start, end=end) for group in groups
        ]
    sealed = sealed_days(period)
    live = Live(
        open_spans(period, sealed.days),
        sealed.pending,
        [s for s in sealed.pending_sums if in_scope(scope, s.created_by_id)],
    )
    rolled = rolled_up_groups(groups, scope, sealed)
    by_session = [group for group in groups if group != "tool"]
    sessions = live_sessions(user, live) if by_session else []
    spends = []
    for group in groups:
        if group in PERIOD_GROUPS:
            found = (
                dict(rolled.get("month", {}))
                if group == "month"
                else rolled_up_days(scope, sealed)
            )
            _add(found, sums_by("day", sessions), month=group == "month")
            rows, totals = period_rows(group, period, found)
        elif group == "tool":
            found = dict(rolled.get(group, {}))
            _add(found, live_tools(user, live))
            rows, totals = _tool_rows(found)
        else:
            found = dict(rolled.get(group, {}))
            _add(found, sums_by(group, sessions))
            rows, totals = _ranked_rows(group, found)
        spends.append(spend_of(group, period, rows, totals))
    return spends


def _add(
    found: dict[Any, GroupSum], more: dict[Any, GroupSum], *, month: bool = False
) -> None:
    """Adds ``more`` into ``found`` (days into their months with ``month``)."""
    for key, value in more.items():
        into = month_of(key) if month else key
        found[into] = found.get(into, GroupSum()) + value


def _ranked_rows(
    group: str, found: dict[Any, GroupSum]
) -> tuple[list[SpendRow], Totals]:
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
            found[None] = found.get(None, GroupSum()) + found.pop(key)
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
    return fold(rows, list(found.values()))


def _tool_rows(found: dict[Any, GroupSum]) -> tuple[list[SpendRow], Totals]:
    tokens = found.pop(None, None)
    order = sorted(found, key=lambda k: (-found[k].cost, k))
    rows, totals = fold(
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
        rows.insert(0, tokens_row(tokens))
        totals.total += tokens.cost
        totals.count += tokens.count
        totals.unpriced += tokens.unpriced
    return rows, totals
