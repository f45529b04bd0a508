"""What a resumed run continues from: its record, read back from the rows,
with the decisions on the calls it paused for."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    ProviderCall,
    QuotaDecision,
    ToolInvocation,
)
from tooling.runtime import ApprovalDecision, RunRecord
from tooling.runtime.approvals import DecisionStatus

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
    # the replayed turns withdraw the same hosted tools again, with the same ids
    recorded.update(
        str(event_id)
        for event_id in QuotaDecision.objects.filter(session=session).values_list(
            "event_id", flat=True
        )
    )
    return Resumption(
        RunRecord(
            responses=tuple(responses),
            tool_outputs=outputs,
            approvals=decisions(session),
        ),
        frozenset(recorded),
    )


def decisions(session: AgentSession) -> dict[str, ApprovalDecision]:
    """The decided approvals of the session, by the paused call's id (the
    MCP request item's id for provider-side approvals), each bound to the
    call it was made for (kind, tool, arguments and turn as stored): the
    resumed run applies it to that call only."""
    decided = (
        ApprovalRequest.objects.filter(session=session, call_id__isnull=False)
        .exclude(status=ApprovalRequest.Status.PENDING)
        .values_list(
            "call_id",
            "status",
            "decision_reason",
            "decided_by__username",
            "kind",
            "tool_name",
            "raw_arguments",
            "turn",
        )
    )
    return {
        str(call_id): ApprovalDecision(
            approved=status == ApprovalRequest.Status.APPROVED,
            decided_by=username or "",
            reason=reason,
            status=cast(DecisionStatus, status),
            kind=kind,
            tool_name=tool_name,
            arguments=raw_arguments,
            turn=turn,
        )
        for call_id, status, reason, username, kind, tool_name, raw_arguments, turn in (
            decided
        )
    }
