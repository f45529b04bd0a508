"""When each step of a session started and how long it took.

One place reads a step's span from its row, for the waterfall, the timeline's
entries and the API alike:

- a provider call: from ``started_at`` (its first attempt) for ``latency_ms``
  (retries and their backoff included); a call recorded before timings has no
  ``started_at``: it ended when it was recorded, so it began ``latency_ms``
  before that;
- a local tool call: ``started_at`` and ``duration_ms`` (policy checks and the
  handler, until recorded), ``policy_ms`` the policies' part of it;
- a native tool call: no span of its own. The provider ran it inside its
  response and the wire gives no per-item timing: it lies within its turn's
  provider call;
- an approval request: from ``requested_at`` until decided, expired or
  cancelled (``decided_at``), or until now while it waits.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

_MS = datetime.timedelta(milliseconds=1)


@dataclasses.dataclass(frozen=True, slots=True)
class Span:
    start: datetime.datetime
    duration_ms: float
    #: still going (an approval waiting for a decision)
    open: bool = False

    @property
    def end(self) -> datetime.datetime:
        return self.start + self.duration_ms * _MS


def provider_span(row: Any) -> Span:
    latency = float(row.latency_ms or 0)
    started = row.started_at
    if started is None:
        return Span(row.created_at - latency * _MS, latency)
    if row.error:  # failed: until it was recorded (the last attempt's end)
        return Span(started, max(latency, (row.created_at - started) / _MS))
    return Span(started, latency)


def tool_span(row: Any) -> Span | None:
    if row.native or row.started_at is None or row.duration_ms is None:
        return None
    return Span(row.started_at, float(row.duration_ms))


def approval_span(row: Any, now: datetime.datetime) -> Span:
    ended = row.decided_at
    if ended is None:
        return Span(row.requested_at, max(0.0, (now - row.requested_at) / _MS), True)
    return Span(row.requested_at, max(0.0, (ended - row.requested_at) / _MS))


def span_of(kind: str, row: Any, now: datetime.datetime) -> Span | None:
    """The span of a timeline event (``timeline.Event``'s kind and row), or
    ``None`` for a kind that has none (a denial, a state change, a citation:
    moments within a call)."""
    if kind == "provider_call":
        return provider_span(row)
    if kind == "tool_invocation":
        return tool_span(row)
    if kind == "approval":
        return approval_span(row, now)
    return None


def attempt_spans(row: Any) -> list[tuple[float, float, bool]]:
    """A provider call's HTTP attempts as ``(offset_ms, latency_ms, failed)``
    from the call's start; attempts recorded before offsets follow each other
    without gaps."""
    spans: list[tuple[float, float, bool]] = []
    cursor = 0.0
    for attempt in row.attempts or ():
        if not isinstance(attempt, dict):
            continue
        latency = attempt.get("latency_ms")
        latency = float(latency) if isinstance(latency, int | float) else 0.0
        offset = attempt.get("offset_ms")
        offset = float(offset) if isinstance(offset, int | float) else cursor
        spans.append((offset, latency, attempt.get("error") is not None))
        cursor = offset + latency
    return spans


def humane_ms(value: float | None) -> str:
    """``840 ms``, ``1.2 s``, ``3 min 05 s``: a duration as people read it."""
    if value is None:
        return "—"
    if value == 0:
        return "0 ms"
    if value < 1:
        return f"{value:.2f} ms"
    if value < 1000:
        return f"{value:.0f} ms"
    seconds = value / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
