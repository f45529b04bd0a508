"""Rows the store tests write (tests/sessions_app/test_store*.py)."""

from __future__ import annotations

import uuid

from sessions_app.models import AgentSession, ToolInvocation


def invocation(
    session: AgentSession, sequence: int, event_id: uuid.UUID | None = None
) -> ToolInvocation:
    """An unsaved, successful local tool call of ``session``."""
    return ToolInvocation(
        session=session,
        sequence=sequence,
        turn=1,
        name="echo",
        call_id=f"call_{sequence}",
        success=True,
        event_id=event_id or uuid.uuid4(),
    )
