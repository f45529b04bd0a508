"""What a cost report is made of: the groupings, a breakdown (``Spend``) and its
rows (``SpendRow``), and the sums they are built from, in ``Decimal``.

No database here: ``from_rows`` (the rows alone), ``rolled_up`` and ``live``
(the roll-ups and the open days' rows) read, ``reports`` puts a breakdown
together, and the pages, the API and the charts show it.
"""

from __future__ import annotations

import dataclasses
import datetime
from decimal import Decimal
from typing import Any, Final

from sessions_app.costs.ranges import DateRange

GROUPS: Final = ("prompt", "tool", "model", "user", "day", "month")
GROUP_LABELS: Final = {
    "prompt": "Prompt",
    "tool": "Tool",
    "model": "Model",
    "user": "User",
    "day": "Day",
    "month": "Month",
}
#: The groupings by time: every day (month) of the range is a row, in order,
#: none folded.
PERIOD_GROUPS: Final = ("day", "month")
#: How many groups a breakdown lists before folding the rest into "other".
TOP_GROUPS: Final = 10
PLACES: Final = Decimal("1e-10")
ZERO: Final = Decimal(0).quantize(PLACES)
MODEL_TOKENS_KEY: Final = "(model tokens)"
MODEL_TOKENS_LABEL: Final = "Model tokens (provider calls, all tools)"
NO_USER_LABEL: Final = "(no user: a command, a task or a deleted user)"
NO_MODEL_LABEL: Final = "(no model)"
ONE_DAY: Final = datetime.timedelta(days=1)


class InvalidGroup(ValueError):
    """A grouping the report does not know."""


def check_groups(groups: tuple[str, ...]) -> None:
    """Raises ``InvalidGroup`` unless each of ``groups`` is one of ``GROUPS``."""
    for group in groups:
        if group not in GROUPS:
            raise InvalidGroup(f"Choose a grouping: {', '.join(GROUPS)}.")


@dataclasses.dataclass(frozen=True, slots=True)
class SpendRow:
    """One group's spend.

    ``kind``: "group" (a prompt, tool, model, user, day or month; a month's
    key is ``YYYY-MM``), "other" (the groups
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
    """A breakdown: its rows (largest first; days and months in order) and
    totals.

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
    def by_time(self) -> bool:
        """Every day (month) of the range, in order, none folded."""
        return self.group in PERIOD_GROUPS

    @property
    def largest(self) -> Decimal:
        return max((row.cost for row in self.rows), default=ZERO)


@dataclasses.dataclass(slots=True)
class Totals:
    """A breakdown's totals over every group, folded or not."""

    total: Decimal = ZERO
    count: int = 0
    unpriced: int = 0
    groups: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class GroupSum:
    """What one group adds up: cost, count, calls without a price."""

    cost: Decimal = ZERO
    count: int = 0
    unpriced: int = 0

    def __add__(self, other: GroupSum) -> GroupSum:
        return GroupSum(
            self.cost + other.cost,
            self.count + other.count,
            self.unpriced + other.unpriced,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class SessionGroup:
    """The sums of the sessions with one prompt, model, author and day (of
    one session, or of a grouped read)."""

    prompt_ref: str
    model: str
    created_by_id: int | None
    day: datetime.date
    sums: GroupSum


def money(value: Any) -> Decimal:
    """An amount from the database, to the stored ten places (on SQLite a
    ``SUM`` is computed in floating point)."""
    if value is None:
        return ZERO
    return Decimal(value).quantize(PLACES)


def sum_of(row: dict[str, Any]) -> GroupSum:
    """A grouped query's row (``spent``, ``count``, ``unpriced``) as a ``GroupSum``."""
    return GroupSum(
        money(row.get("spent")),
        int(row.get("count") or 0),
        int(row.get("unpriced") or 0),
    )


def other_row(rows: list[SpendRow], totals: Totals) -> SpendRow | None:
    """The "other" row for the groups past ``rows`` (``None``: there are none)."""
    if totals.groups <= len(rows):
        return None
    folded = totals.groups - len(rows)
    return SpendRow(
        key="(other)",
        label=f"Other ({folded} more)",
        cost=totals.total - sum((row.cost for row in rows), ZERO),
        count=totals.count - sum(row.count for row in rows),
        unpriced=totals.unpriced - sum(row.unpriced for row in rows),
        kind="other",
        folded=folded,
    )


def fold(
    rows: list[SpendRow], all_groups: list[GroupSum]
) -> tuple[list[SpendRow], Totals]:
    """The first ``TOP_GROUPS`` rows and one "other" row for the rest."""
    totals = Totals(
        total=sum((g.cost for g in all_groups), ZERO),
        count=sum(g.count for g in all_groups),
        unpriced=sum(g.unpriced for g in all_groups),
        groups=len(all_groups),
    )
    shown = rows[:TOP_GROUPS]
    other = other_row(shown, totals)
    if other is not None:
        shown.append(other)
    return shown, totals


def tokens_row(tokens: GroupSum) -> SpendRow:
    """The tool breakdown's row for the provider calls."""
    return SpendRow(
        key=MODEL_TOKENS_KEY,
        label=MODEL_TOKENS_LABEL,
        cost=tokens.cost,
        count=tokens.count,
        unpriced=tokens.unpriced,
        kind="tokens",
    )


def spend_of(
    group: str, period: DateRange, rows: list[SpendRow], totals: Totals
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


def month_of(day: datetime.date) -> datetime.date:
    return day.replace(day=1)


def period_rows(
    group: str, period: DateRange, found: dict[datetime.date, GroupSum]
) -> tuple[list[SpendRow], Totals]:
    """Every day (``group`` "day") or month ("month", the part of it in the
    range) of ``period`` in order, from the sums by day (or by the month's
    first day); ``groups`` counts those with sessions."""
    rows = []
    day = period.start
    while day <= period.end:
        key = month_of(day) if group == "month" else day
        value = found.get(key, GroupSum())
        text = key.isoformat()[:7] if group == "month" else key.isoformat()
        rows.append(
            SpendRow(
                key=text,
                label=text,
                cost=value.cost,
                count=value.count,
                unpriced=value.unpriced,
            )
        )
        day = next_month(day) if group == "month" else day + ONE_DAY
    totals = Totals(
        total=sum((row.cost for row in rows), ZERO),
        count=sum(row.count for row in rows),
        unpriced=sum(row.unpriced for row in rows),
        groups=sum(1 for row in rows if row.count),
    )
    return rows, totals


def next_month(day: datetime.date) -> datetime.date:
    """The first day of the month after ``day``'s."""
    return (day.replace(day=28) + datetime.timedelta(days=4)).replace(day=1)
