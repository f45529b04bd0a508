"""What a resumed run continues from: its record, read back from the rows."""

from __future__ import annotations

import dataclasses
from typing import Any

from sessions_app.models import AgentSession, ProviderCall, ToolInvocation
from tooling.runtime import RunRecord

# The phase a failed provider call ended the run with, by its error type.
_PHASES = {"DeadlineExceeded": "deadline", "InvalidResponseBody": "response"}


@dataclasses.dataclass(frozen=True)
class Resumption:
    """How to continue a run: replay ``record``, skipping the events already
    recorded; or, when its last provider call failed, end it with ``failure``."""

    record: RunRecord
    recorded_event_ids: frozenset[str]
    failure: tuple[str, str] | None = None  # (phase, message)


def load(session: AgentSession) -> Resumption:
    calls = list(
        ProviderCall.objects.filter(session=session)
        .order_by("turn")
        .values("response", "error", "error_type")
    )
    responses: list[dict[str, Any]] = []
    for call in calls:
        if call["response"] is None:
            phase = _PHASES.get(call["error_type"], "request")
            return Resumption(RunRecord(), frozenset(), (phase, call["error"]))
        responses.append(call["response"])
    outputs: dict[int, str] = {}
    recorded: set[str] = set()
    for sequence, native, output, event_id in ToolInvocation.objects.filter(
        session=session
    ).values_list("sequence", "native", "model_output", "event_id"):
        if native:
            if event_id is not None:
                recorded.add(str(event_id))
        else:
            outputs[sequence] = output
    return Resumption(
        RunRecord(responses=tuple(responses), tool_outputs=outputs),
        frozenset(recorded),
    )
