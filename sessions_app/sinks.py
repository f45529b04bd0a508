"""The Django event sink: runtime events -> audit rows and the session's end.

The recorders (``recording.py``) build each event's rows and the run's
``StepWriter`` (``steps.py``) writes them, a step at a time; the events that
end a run move the session through its lifecycle (``lifecycle.py``) under the
worker's claim. Events whose id is already recorded (a resumed run replaying
its native calls) are skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from sessions_app import lifecycle, recording
from sessions_app.models import AgentSession, ProviderCall
from sessions_app.steps import StepWriter
from tooling.runtime import (
    PolicyDenied,
    PromptExecuted,
    PromptFailed,
    PromptRendered,
    ProviderCallCompleted,
    ProviderCallFailed,
    StateChanged,
    ToolInvoked,
)
from tooling.runtime.planning import PLAN_REDUCERS
from tooling.runtime.serde import dump

logger = logging.getLogger(__name__)

USAGE_FIELDS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")

_RECORDERS: dict[type[Any], Callable[..., Any]] = {
    PromptRendered: recording.record_prompt_rendered,
    ProviderCallCompleted: recording.record_provider_call,
    ProviderCallFailed: recording.record_provider_call_failed,
    ToolInvoked: recording.record_tool_invoked,
    PolicyDenied: recording.record_policy_denied,
    StateChanged: recording.record_state_changed,
}

# Events published by handlers whose effect is recorded as ``StateChanged``.
_RECORDED_AS_STATE = tuple(reducer.event_type for reducer in PLAN_REDUCERS)


class DatabaseSink:
    """Writes each event of one claimed run."""

    def __init__(
        self,
        session: AgentSession,
        *,
        claim: lifecycle.Claim,
        writer: StepWriter,
        recorded_event_ids: Iterable[str] = (),
        resumed: bool = False,
    ) -> None:
        self.session = session
        self.claim = claim
        self.writer = writer
        self.recorded = {str(event_id) for event_id in recorded_event_ids}
        # The session's totals, summed from the provider calls this sink
        # writes; a resumed run's earlier calls are summed by the database.
        self.usage: dict[str, int] | None = (
            None if resumed else dict.fromkeys(USAGE_FIELDS, 0)
        )
        self.turns = 0

    def _summed(self) -> dict[str, Any] | None:
        if self.usage is None:
            return None
        return lifecycle.as_totals(self.usage, self.turns)

    def _count(self, rows: Iterable[Any]) -> None:
        if self.usage is None:
            return
        if self.writer.in_step:  # a step may still drop its rows
            if any(isinstance(row, ProviderCall) for row in rows):
                self.usage = None
            return
        for row in rows:
            if isinstance(row, ProviderCall):
                for field in USAGE_FIELDS:
                    self.usage[field] += getattr(row, field)
                self.turns += row.response is not None

    def emit(self, event: object) -> None:
        event_id = getattr(event, "event_id", None)
        if event_id is not None and event_id in self.recorded:
            return
        if isinstance(event, PromptExecuted):
            lifecycle.finish(
                self.claim,
                status=AgentSession.Status.SUCCEEDED,
                output_text=event.text or "",
                output=dump(event.output),
                summed=self._summed(),
            )
            return
        if isinstance(event, PromptFailed):
            lifecycle.finish(
                self.claim,
                status=AgentSession.Status.FAILED,
                phase=event.phase,
                message=event.message,
                payload=dump(dict(event.provider_payload)),
                summed=self._summed(),
            )
            return
        recorder = _RECORDERS.get(type(event))
        if recorder is None:
            # Events a handler publishes (context.publish) take effect through
            # their reducers, recorded as state changes; only the runtime's own
            # events must each have a recorder.
            if not isinstance(event, _RECORDED_AS_STATE) and type(
                event
            ).__module__.startswith("tooling.runtime"):
                logger.warning("No recorder for event %s", type(event).__name__)
            return
        rows = recorder(session=self.session, event=event)
        self.writer.add(rows)
        self._count(rows)
