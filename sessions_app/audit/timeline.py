"""A session's events as one ordered timeline, read page by page.

Every audit row has a position ``(turn, step, order, id)``:

- a provider call: ``(turn, 0, 0, id)``; a hosted tool its request no longer
  offered (a quota decision) right after it: ``(turn, 0, 1, id)``; its
  citations: ``(turn, 1, 0, id)``;
- a tool call's policy denial, the call itself, then its state changes:
  ``(turn, 2, 4·sequence + 0|1|2, id)``; its approval request just before
  them: ``(turn, 2, 4·sequence - 1, t)``; an MCP approval request after the
  turn's citations: ``(turn, 1, 1, t)`` (``t``: when it was requested, in
  microseconds, the tie-break of approvals, whose ids are UUIDs).

A page is read with one keyset query per kind (the positions after the
cursor, in index order, ``limit + 1`` each), merged; then the page's rows,
one query per kind on it. The cursor is the last position, so a page costs
the same at the start and at the end of a long session, and for a session of
20 events as for one of 10,000 (``(session, turn, sequence)`` indexes).

The first rows of each list (a session's detail in the API) are ``trail``'s.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime
import json
from typing import Any

from django.db.models import F, Func, IntegerField, Q, QuerySet, Value

from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    QuotaDecision,
    StateChange,
    ToolInvocation,
)
from tooling.storable_json import loads

Position = tuple[int, int, int, int]

KINDS = (
    "provider_call",
    "quota_decision",
    "citation",
    "policy_denial",
    "tool_invocation",
    "state_change",
    "approval",
)


#: The timeline's filters by kind (the page's checkboxes, the API's ``kind``):
#: each name, the kinds of rows it shows, and for tool calls which ones
#: (``native``: True, False, or None for both).
FILTERS: dict[str, tuple[tuple[str, ...], bool | None]] = {
    "provider": (("provider_call", "quota_decision"), None),
    "tool": (("tool_invocation",), False),
    "native": (("tool_invocation",), True),
    "denial": (("policy_denial",), None),
    "approval": (("approval",), None),
    "state": (("state_change",), None),
    "citation": (("citation",), None),
}


#: What the API's ``kind`` also takes: an event's own ``kind`` (each kind of
#: row alone; ``tool_invocation``: every tool call, local and native).
API_FILTERS: dict[str, tuple[tuple[str, ...], bool | None]] = {
    **FILTERS,
    **{kind: ((kind,), None) for kind in KINDS},
}


def filtered_kinds(
    names: list[str], filters: dict[str, tuple[tuple[str, ...], bool | None]] = FILTERS
) -> tuple[tuple[str, ...], bool | None]:
    """The kinds and the tool calls (``native``) the filter ``names`` show:
    every kind when ``names`` is empty. Unknown names raise ``ValueError``."""
    unknown = [name for name in names if name not in filters]
    if unknown:
        choices = ", ".join(FILTERS)
        if filters is not FILTERS:
            choices += f", or an event's kind: {', '.join(KINDS)}"
        raise ValueError(f"Unknown kind '{unknown[0][:40]}'; choose from {choices}.")
    if not names:
        return KINDS, None
    kinds: list[str] = []
    native: set[bool] = set()
    for name in names:
        chosen, tools = filters[name]
        kinds.extend(kind for kind in chosen if kind not in kinds)
        if "tool_invocation" in chosen:
            native.update((True, False) if tools is None else (tools,))
    return (
        tuple(kind for kind in KINDS if kind in kinds),
        native.pop() if len(native) == 1 else None,
    )


class InvalidCursor(ValueError):
    pass


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MICROSECOND = datetime.timedelta(microseconds=1)


def _as_key(value: Any) -> int:
    """A tie-break value as the integer a position holds."""
    if isinstance(value, datetime.datetime):
        return (value - _EPOCH) // _MICROSECOND
    return int(value)


@dataclasses.dataclass(frozen=True)
class Event:
    kind: str
    position: Position
    row: Any

    @property
    def turn(self) -> int:
        return self.position[0]


CURSOR_MAX_LENGTH = 512


def encode_cursor(position: Position) -> str:
    raw = json.dumps(list(position), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> Position:
    try:
        if len(cursor) > CURSOR_MAX_LENGTH:  # 4 numbers: about 40 characters
            raise ValueError("too long")
        padded = cursor + "=" * (-len(cursor) % 4)
        # (nesting too deep for the decoder is a ValueError there)
        values = loads(base64.urlsafe_b64decode(padded.encode("ascii")))
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


def _unseen(value: int) -> Func:
    """``(SELECT value)``: a value PostgreSQL's planner does not look at.

    Its statistics say a session's late turns are rare (most sessions have a
    few turns); in a long session they are not, and for a page after the
    cursor the planner would sort the rest of the session instead of reading
    the next rows from the ``(session, turn, sequence)`` index. Unseen, the
    comparison gets the default estimate and the index is read in order.
    """
    return Func(
        Value(value), template="(SELECT %(expressions)s)", output_field=IntegerField()
    )


@dataclasses.dataclass(frozen=True)
class _Source:
    """One kind of row on the timeline: its rows, where the turn is read,
    its step, and its order within the step (``4 * sequence + offset``, or
    ``order`` when ``offset`` is None)."""

    kind: str
    queryset: QuerySet[Any]
    turn: str
    step: int
    offset: int | None
    ordering: tuple[Any, ...]
    order: int = 0
    # The column that breaks ties within an order: the id, or for rows with
    # UUID ids a timestamp (its microseconds are the position's last value).
    tiebreak: str = "pk"

    def _tie_after(self, key: int) -> Q:
        if self.tiebreak == "pk":
            return Q(pk__gt=key)
        return Q(**{f"{self.tiebreak}__gt": _EPOCH + key * _MICROSECOND})

    def position_of(self, turn: int, sequence: int, pk: int) -> Position:
        order = self.order if self.offset is None else 4 * sequence + self.offset
        return (turn, self.step, order, pk)

    def after(self, position: Position | None) -> Q:
        """Rows whose position comes after ``position``, in the columns' own
        terms, so an index on ``(session, turn, sequence)`` serves it."""
        if position is None:
            return Q()
        turn_value, step, order, pk = position
        turn = _unseen(turn_value)
        column = self.turn
        later = Q(**{f"{column}__gt": turn})
        if self.step != step:
            return Q(**{f"{column}__gte": turn}) if self.step > step else later
        if self.offset is None:  # the order is always self.order
            if order > self.order:
                return later
            within = self._tie_after(pk) if order == self.order else Q()
        else:
            # 4 * sequence + offset > order  <=>  sequence > (order - offset) / 4
            gap = order - self.offset
            within = Q(sequence__gt=gap // 4)
            if gap % 4 == 0:
                within |= Q(sequence=gap // 4) & self._tie_after(pk)
        # The first condition bounds the index range; the rest picks the rows.
        return Q(**{f"{column}__gte": turn}) & (later | (Q(**{column: turn}) & within))


@dataclasses.dataclass(frozen=True)
class _ApprovalSource(_Source):
    """Approval requests, one query for both places they take: a function
    call's just before the call (``4 * sequence - 1`` in step 2), an MCP
    request's (no sequence) after its turn's citations (step 1, order 1).
    Read by turn, MCP requests first, then by sequence: position order."""

    def _as(self, **changes: Any) -> _Source:
        fields = {field.name: getattr(self, field.name) for field in _FIELDS}
        return _Source(**{**fields, **changes})

    def _mcp(self) -> _Source:
        return self._as(step=1, offset=None, order=1)

    def _function(self) -> _Source:
        return self._as()

    def position_of(self, turn: int, sequence: Any, pk: int) -> Position:
        if sequence is None:
            return self._mcp().position_of(turn, 0, pk)
        return self._function().position_of(turn, sequence, pk)

    def after(self, position: Position | None) -> Q:
        if position is None:
            return Q()
        return (Q(sequence__isnull=False) & self._function().after(position)) | (
            Q(sequence__isnull=True) & self._mcp().after(position)
        )


_FIELDS = dataclasses.fields(_Source)


def _sources(session: AgentSession, native: bool | None = None) -> list[_Source]:
    tools = ToolInvocation.objects.filter(session=session)
    if native is not None:
        tools = tools.filter(native=native)
    return [
        _Source(
            "provider_call",
            ProviderCall.objects.filter(session=session).defer("request", "response"),
            "turn",
            0,
            None,
            ("turn", "pk"),
        ),
        _Source(
            "quota_decision",
            QuotaDecision.objects.filter(session=session),
            "turn",
            0,
            None,
            ("turn", "pk"),
            order=1,
        ),
        _Source(
            "citation",
            Citation.objects.filter(session=session).annotate(
                turn=F("provider_call__turn")
            ),
            "provider_call__turn",
            1,
            None,
            ("provider_call__turn", "pk"),
        ),
        _Source(
            "policy_denial",
            PolicyDenial.objects.filter(session=session),
            "turn",
            2,
            0,
            ("turn", "sequence", "pk"),
        ),
        _Source(
            "tool_invocation",
            tools,
            "turn",
            2,
            1,
            # (session, sequence) is unique: no tie to break.
            ("turn", "sequence"),
        ),
        _Source(
            "state_change",
            StateChange.objects.filter(session=session),
            "turn",
            2,
            2,
            ("turn", "sequence", "pk"),
        ),
        _ApprovalSource(
            "approval",
            # (through the session: each row knows it without a query,
            # which what became of an approved call reads: outcome.of)
            session.approvals.with_call_record()
            .select_related("decided_by")
            # the events API reads every row's created_at
            .annotate(created_at=F("requested_at")),
            "turn",
            2,
            -1,
            (
                "turn",
                F("sequence").asc(nulls_first=True),
                "requested_at",
            ),
            tiebreak="requested_at",
        ),
    ]


def events_page(
    session: AgentSession,
    *,
    after: Position | None,
    limit: int,
    kinds: tuple[str, ...] = KINDS,
    native: bool | None = None,
) -> tuple[list[Event], Position | None]:
    """Up to ``limit`` events (of ``kinds``) after ``after``, and the cursor of
    the next page (``None`` on the last).

    Positions first: one query per kind reads at most ``limit + 1`` keys in
    index order; merged, they decide the page. Then one query per kind on the
    page reads its rows by id. A page loads ``limit`` rows, not five times as
    many, at any point of any session."""
    chosen = [source for source in _sources(session, native) if source.kind in kinds]
    keys: list[tuple[Position, _Source, Any]] = []
    for source in chosen:
        columns = (
            ("turn", "pk") if source.offset is None else ("turn", "sequence", "pk")
        )
        if source.tiebreak != "pk":
            columns = (*columns[:-1], source.tiebreak, "pk")
        for values in (
            source.queryset.filter(source.after(after))
            .order_by(*source.ordering)
            .values_list(*columns)[: limit + 1]
        ):
            sequence = values[1] if source.offset is not None else 0
            key = _as_key(values[-2] if source.tiebreak != "pk" else values[-1])
            keys.append(
                (source.position_of(values[0], sequence, key), source, values[-1])
            )
    keys.sort(key=lambda key: key[0])
    more = len(keys) > limit
    keys = keys[:limit]
    rows: dict[tuple[str, Any], Any] = {}
    for source in chosen:
        pks = [pk for _position, of, pk in keys if of is source]
        if pks:
            rows.update(
                ((source.kind, row.pk), row)
                for row in source.queryset.filter(pk__in=pks)
            )
    page = [
        Event(source.kind, position, rows[source.kind, pk])
        for position, source, pk in keys
    ]
    return page, (page[-1].position if more and page else None)
