"""A session's events as one ordered timeline, read page by page.

Every audit row has a position ``(turn, step, order, id)``:

- a provider call: ``(turn, 0, 0, id)``; its citations right after it:
  ``(turn, 1, 0, id)``;
- a tool call's policy denial, the call itself, then its state changes:
  ``(turn, 2, 4·sequence + 0|1|2, id)``.

A page is read with one keyset query per kind (rows after the cursor, in
position order, ``limit + 1`` each), merged; the cursor is the last position,
so a page costs the same at the start and at the end of a long session.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from typing import Any

from django.db.models import F, IntegerField, Q, QuerySet, Value

from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    StateChange,
    ToolInvocation,
)

Position = tuple[int, int, int, int]

KINDS = (
    "provider_call",
    "citation",
    "policy_denial",
    "tool_invocation",
    "state_change",
)


class InvalidCursor(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Event:
    kind: str
    position: Position
    row: Any

    @property
    def turn(self) -> int:
        return self.position[0]


def encode_cursor(position: Position) -> str:
    raw = json.dumps(list(position), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> Position:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeEncodeError) as error:
        raise InvalidCursor("The cursor is not one this API gave out.") from error
    if (
        not isinstance(values, list)
        or len(values) != 4
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in values)
        or not all(0 <= v < 2**62 for v in values)
    ):
        raise InvalidCursor("The cursor is not one this API gave out.")
    return (values[0], values[1], values[2], values[3])


def _keyed(queryset: QuerySet[Any], turn: Any, step: int, order: Any) -> QuerySet[Any]:
    return queryset.annotate(
        k_turn=turn,
        k_step=Value(step, output_field=IntegerField()),
        k_order=order,
    )


def _after(position: Position | None) -> Q:
    """Rows whose ``(k_turn, k_step, k_order, pk)`` comes after ``position``."""
    if position is None:
        return Q()
    turn, step, order, pk = position
    return (
        Q(k_turn__gt=turn)
        | Q(k_turn=turn, k_step__gt=step)
        | Q(k_turn=turn, k_step=step, k_order__gt=order)
        | Q(k_turn=turn, k_step=step, k_order=order, pk__gt=pk)
    )


def _sources(session: AgentSession) -> list[tuple[str, QuerySet[Any]]]:
    integer = IntegerField()
    by_call = F("sequence") * 4
    return [
        (
            "provider_call",
            _keyed(
                ProviderCall.objects.filter(session=session).defer(
                    "request", "response"
                ),
                F("turn"),
                0,
                Value(0, output_field=integer),
            ),
        ),
        (
            "citation",
            _keyed(
                Citation.objects.filter(session=session).annotate(
                    turn=F("provider_call__turn")
                ),
                F("provider_call__turn"),
                1,
                Value(0, output_field=integer),
            ),
        ),
        (
            "policy_denial",
            _keyed(PolicyDenial.objects.filter(session=session), F("turn"), 2, by_call),
        ),
        (
            "tool_invocation",
            _keyed(
                ToolInvocation.objects.filter(session=session),
                F("turn"),
                2,
                by_call + 1,
            ),
        ),
        (
            "state_change",
            _keyed(
                StateChange.objects.filter(session=session), F("turn"), 2, by_call + 2
            ),
        ),
    ]


def events_page(
    session: AgentSession, *, after: Position | None, limit: int
) -> tuple[list[Event], Position | None]:
    """Up to ``limit`` events after ``after``, and the cursor of the next page
    (``None`` on the last). One query per kind of row."""
    candidates: list[Event] = []
    for kind, queryset in _sources(session):
        rows = queryset.filter(_after(after)).order_by(
            "k_turn", "k_step", "k_order", "pk"
        )[: limit + 1]
        candidates.extend(
            Event(kind, (row.k_turn, row.k_step, row.k_order, row.pk), row)
            for row in rows
        )
    candidates.sort(key=lambda event: event.position)
    page = candidates[:limit]
    more = len(candidates) > limit
    return page, (page[-1].position if more and page else None)
