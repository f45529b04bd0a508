"""The Django event sink: runtime events -> audit rows, via the recorders."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sessions_app import recording
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

logger = logging.getLogger(__name__)

_RECORDERS: dict[type[Any], Callable[..., Any]] = {
    PromptRendered: recording.record_prompt_rendered,
    ProviderCallCompleted: recording.record_provider_call,
    ProviderCallFailed: recording.record_provider_call_failed,
    ToolInvoked: recording.record_tool_invoked,
    PolicyDenied: recording.record_policy_denied,
    StateChanged: recording.record_state_changed,
    PromptExecuted: recording.record_prompt_executed,
    PromptFailed: recording.record_prompt_failed,
}


class DatabaseSink:
    """Writes each event of one session's run as audit rows."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session

    def emit(self, event: object) -> None:
        recorder = _RECORDERS.get(type(event))
        if recorder is None:
            logger.warning("No recorder for event %s", type(event).__name__)
            return
        recorder(session=self.session, event=event)
