"""The Django event sink: runtime events -> audit rows and the session's end.

Rows are written by the recorders (``recording.py``); the events that end a
run move the session through its lifecycle (``lifecycle.py``) under the
worker's claim. Events whose id is already recorded (a resumed run replaying
its native calls) are skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from sessions_app import lifecycle, recording
from sessions_app.models import AgentSession
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
from tooling.runtime.serde import dump

logger = logging.getLogger(__name__)

_RECORDERS: dict[type[Any], Callable[..., Any]] = {
    PromptRendered: recording.record_prompt_rendered,
    ProviderCallCompleted: recording.record_provider_call,
    ProviderCallFailed: recording.record_provider_call_failed,
    ToolInvoked: recording.record_tool_invoked,
    PolicyDenied: recording.record_policy_denied,
    StateChanged: recording.record_state_changed,
}


class DatabaseSink:
    """Writes each event of one claimed run."""

    def __init__(
        self,
        session: AgentSession,
        *,
        claim: lifecycle.Claim,
        recorded_event_ids: Iterable[str] = (),
    ) -> None:
        self.session = session
        self.claim = claim
        self.recorded = {str(event_id) for event_id in recorded_event_ids}

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
            )
            return
        if isinstance(event, PromptFailed):
            lifecycle.finish(
                self.claim,
                status=AgentSession.Status.FAILED,
                phase=event.phase,
                message=event.message,
                payload=dump(dict(event.provider_payload)),
            )
            return
        recorder = _RECORDERS.get(type(event))
        if recorder is None:
            logger.warning("No recorder for event %s", type(event).__name__)
            return
        recorder(session=self.session, event=event)
