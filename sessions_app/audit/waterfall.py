"""Where a run's time went: its steps as bars on one time axis, and an outline
of its turns.

Read with a bound (``MAX_BARS`` rows of each kind, in index order, only the
columns a bar needs), so the session page of a run of 10,000 events opens as
fast as one of 20; a longer run's waterfall draws its first turns and says so.
Spans come from ``timings.py``; the drawing is ``templatetags/waterfall_chart``.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from django.db.models.functions import Left

from sessions_app.audit import timeline
from sessions_app.audit.timings import (
    approval_span,
    attempt_spans,
    finite_ms,
    provider_span,
    tool_span,
)
from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    ProviderCall,
    ToolInvocation,
)

# A first screen's worth: an ordinary run has a few dozen steps.
MAX_BARS = 30
# A failed call's error, as much as its bar's tooltip shows.
ERROR_SHOWN = 200
_MS = datetime.timedelta(milliseconds=1)


@dataclasses.dataclass(frozen=True, slots=True)
class Bar:
    """One step on the time axis, in ms from the session's creation.

    ``kind``: ``queue`` (waiting for a worker), ``provider``, ``tool``,
    ``native`` (drawn over its provider call: the wire gives it no time of its
    own), ``approval``. ``segments``: a provider call's HTTP attempts
    ``(offset, duration, failed)`` within the bar."""

    kind: str
    label: str
    detail: str
    start_ms: float
    duration_ms: float
    turn: int
    failed: bool = False
    open: bool = False
    segments: tuple[tuple[float, float, bool], ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class TurnOutline:
    turn: int
    model_ms: float
    failed: bool
    #: ``None``: not counted (the waterfall's bound cut the turn's steps)
    tool_calls: int | None
    tools_ms: float
    native_calls: int | None
    approvals: int | None
    #: the timeline's page that starts at this turn (``None``: the first page)
    cursor: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class Waterfall:
    bars: list[Bar]
    total_ms: float
    truncated: bool
    turns: list[TurnOutline]


def _offset(moment: datetime.datetime, origin: datetime.datetime) -> float:
    """``moment`` in ms after ``origin``: a step recorded before its session
    was created (clocks of two hosts) is drawn at 0."""
    return finite_ms((moment - origin) / _MS)


def _status_label(status: str) -> str:
    try:
        return str(ApprovalRequest.Status(status).label).lower()
    except ValueError:
        return status


def _turn_cursor(turn: int, first: int) -> str | None:
    """The cursor of the timeline's page starting at ``turn``: a position
    after every step of the turn before (steps are 0-2) and before this one's."""
    if turn <= first:
        return None
    return timeline.encode_cursor((turn - 1, 9, 0, 0))


def _bounded(queryset: Any) -> tuple[list[Any], int | None]:
    """At most ``MAX_BARS`` rows (their values, as attributes: no model
    instance is built), and the last turn read when there are more (its rows
    may be cut)."""
    rows = [SimpleNamespace(**values) for values in queryset[: MAX_BARS + 1]]
    if len(rows) > MAX_BARS:
        return rows[:MAX_BARS], rows[MAX_BARS - 1].turn
    return rows, None


def build(
    session: AgentSession,
    *,
    now: datetime.datetime,
    everything: Sequence[timeline.Event] | None = None,
) -> Waterfall | None:
    """The session's waterfall, or ``None`` when nothing ran yet.

    ``everything``: the session's whole timeline when the page already read it
    (an ordinary run fits on the timeline's first page): its rows, no query."""
    if everything is not None:
        return _drawn(
            session,
            now,
            [e.row for e in everything if e.kind == "provider_call"],
            [e.row for e in everything if e.kind == "tool_invocation"],
            [e.row for e in everything if e.kind == "approval"],
            None,
        )
    calls, calls_cut = _bounded(
        ProviderCall.objects.filter(session=session)
        .order_by("turn")
        .annotate(error_start=Left("error", ERROR_SHOWN))
        .values(
            "turn", "started_at", "latency_ms", "created_at", "attempts", "error_start"
        )
    )
    for call in calls:
        call.error = call.error_start  # what provider_span and the bar read
    tools, tools_cut = _bounded(
        ToolInvocation.objects.filter(session=session)
        .order_by("turn", "sequence")
        .values(
            "turn",
            "sequence",
            "name",
            "native",
            "kind",
            "success",
            "started_at",
            "duration_ms",
            "policy_ms",
        )
    )
    approvals: list[Any] = []
    approvals_cut = None
    if session.pauses or session.status == AgentSession.Status.AWAITING_APPROVAL:
        # every approval request pauses its run: none to read otherwise
        approvals, approvals_cut = _bounded(
            ApprovalRequest.objects.filter(session=session)
            .order_by("turn", "requested_at")
            .values("turn", "tool_name", "status", "requested_at", "decided_at")
        )
    cuts = [cut for cut in (calls_cut, tools_cut, approvals_cut) if cut is not None]
    return _drawn(session, now, calls, tools, approvals, min(cuts) if cuts else None)


def _drawn(
    session: AgentSession,
    now: datetime.datetime,
    calls: list[Any],
    tools: list[Any],
    approvals: list[Any],
    last_turn: int | None,
) -> Waterfall | None:
    """The bars of the rows read (``last_turn``: the turn the bound cut on)."""
    if not calls and not tools and not approvals:
        return None
    origin = session.created_at
    bars: list[Bar] = []
    if session.started_at is not None and session.started_at > origin:
        waited = _offset(session.started_at, origin)
        bars.append(
            Bar(
                "queue",
                "waiting for a worker",
                "Queued until a worker took it up",
                0.0,
                waited,
                0,
            )
        )
    by_turn: dict[int, Bar] = {}
    for call in calls:
        span = provider_span(call)
        bar = Bar(
            "provider",
            f"turn {call.turn} · model",
            f"Turn {call.turn}: the provider call"
            + (f" (failed: {call.error[:ERROR_SHOWN]})" if call.error else ""),
            _offset(span.start, origin),
            span.duration_ms,
            call.turn,
            failed=bool(call.error),
            segments=tuple(attempt_spans(call)),
        )
        by_turn[call.turn] = bar
        bars.append(bar)
    for tool in tools:
        if tool.native:
            within = by_turn.get(tool.turn)
            if within is not None:
                bars.append(
                    Bar(
                        "native",
                        f"#{tool.sequence} {tool.name}",
                        f"{tool.name} ({tool.kind}), run by the provider within "
                        f"turn {tool.turn}'s call; the wire gives no time of its own",
                        within.start_ms,
                        within.duration_ms,
                        tool.turn,
                        failed=not tool.success,
                    )
                )
            continue
        local = tool_span(tool)
        if local is None:
            continue  # recorded before timings
        policy = f", policies {tool.policy_ms:.1f} ms" if tool.policy_ms else ""
        bars.append(
            Bar(
                "tool",
                f"#{tool.sequence} {tool.name}",
                f"{tool.name}: {'ok' if tool.success else 'failed'}{policy}",
                _offset(local.start, origin),
                local.duration_ms,
                tool.turn,
                failed=not tool.success,
            )
        )
    for approval in approvals:
        span = approval_span(approval, now)
        bars.append(
            Bar(
                "approval",
                f"approval · {approval.tool_name}",
                f"Waiting for a decision on {approval.tool_name}: "
                f"{_status_label(approval.status)}",
                _offset(span.start, origin),
                span.duration_ms,
                approval.turn,
                failed=approval.status in ("denied", "expired"),
                open=span.open,
            )
        )
    truncated = last_turn is not None
    if last_turn is not None:
        kept = [bar for bar in bars if bar.turn < last_turn]
        # a first turn past the bound: draw what was read of it
        bars = kept if any(bar.kind != "queue" for bar in kept) else bars
    bars.sort(key=lambda bar: (bar.start_ms, bar.kind != "provider"))
    bars = bars[:MAX_BARS]
    ends = [bar.start_ms + bar.duration_ms for bar in bars]
    if session.finished_at is not None:
        ends.append(_offset(session.finished_at, origin))
    elif not truncated:
        ends.append(_offset(now, origin))
    total = max(ends, default=0.0)
    return Waterfall(
        bars=bars,
        total_ms=max(total, 1.0),
        truncated=truncated,
        turns=_outline(calls, tools, approvals, last_turn),
    )


def _outline(
    calls: list[Any], tools: list[Any], approvals: list[Any], last_turn: int | None
) -> list[TurnOutline]:
    """Each turn read (its provider call), with its steps' counts while they
    were read whole (``None`` from the turn the bound cut on)."""
    first = min((call.turn for call in calls), default=0)
    outline = []
    for call in calls:
        counted = last_turn is None or call.turn < last_turn
        local = [t for t in tools if t.turn == call.turn and not t.native]
        outline.append(
            TurnOutline(
                turn=call.turn,
                model_ms=provider_span(call).duration_ms,
                failed=bool(call.error),
                tool_calls=len(local) if counted else None,
                tools_ms=sum(finite_ms(t.duration_ms) for t in local),
                native_calls=sum(1 for t in tools if t.turn == call.turn and t.native)
                if counted
                else None,
                approvals=sum(1 for a in approvals if a.turn == call.turn)
                if counted
                else None,
                cursor=_turn_cursor(call.turn, first),
            )
        )
    return outline
