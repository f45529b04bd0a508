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
import math
from typing import Any

_MS = datetime.timedelta(milliseconds=1)
#: The attempts of one call drawn at most (a retry budget is far smaller).
MAX_ATTEMPTS = 50
#: A duration past this (about 115 days) is not a step's: a row that says so
#: is drawn at this length rather than breaking the page.
MAX_MS = 1e10


def finite_ms(value: Any) -> float:
    """A stored duration as a usable one: not a number, infinite or negative
    is 0; absurdly long is ``MAX_MS`` (rows come from providers and old
    versions: one bad value must not take a page down)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    number = float(value)
    if not math.isfinite(number) or number < 0:
        return 0.0
    return min(number, MAX_MS)


def _before(moment: datetime.datetime, ms: float) -> datetime.datetime:
    try:
        return moment - ms * _MS
    except OverflowError:
        return moment


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
    latency = finite_ms(row.latency_ms)
    started = row.started_at
    if started is None:
        return Span(_before(row.created_at, latency), latency)
    if row.error:  # failed: until it was recorded (the last attempt's end)
        recorded = finite_ms((row.created_at - started) / _MS)
        return Span(started, max(latency, recorded))
    return Span(started, latency)


def tool_span(row: Any) -> Span | None:
    if row.native or row.started_at is None or row.duration_ms is None:
        return None
    return Span(row.started_at, finite_ms(row.duration_ms))


def approval_span(row: Any, now: datetime.datetime) -> Span:
    ended = row.decided_at
    if ended is None:
        return Span(row.requested_at, finite_ms((now - row.requested_at) / _MS), True)
    return Span(row.requested_at, finite_ms((ended - row.requested_at) / _MS))


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
    attempts = row.attempts if isinstance(row.attempts, list) else []
    for attempt in attempts[:MAX_ATTEMPTS]:
        if not isinstance(attempt, dict):
            continue
        latency = finite_ms(attempt.get("latency_ms"))
        offset = attempt.get("offset_ms")
        offset = finite_ms(offset) if offset is not None else cursor
        spans.append((offset, latency, attempt.get("error") is not None))
        cursor = min(offset + latency, MAX_MS)
    return spans


def humane_ms(value: float | None) -> str:
    """``840 ms``, ``1.2 s``, ``3 min 05 s``: a duration as people read it."""
    if value is None or not math.isfinite(value):
        return "—"
    if value == 0:
        return "0 ms"
    if value < 1:
        return f"{value:.2f} ms"
    if value < 999.5:
        return f"{value:.0f} ms"
    seconds = value / 1000
    if seconds < 59.95:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes:02d} min"
