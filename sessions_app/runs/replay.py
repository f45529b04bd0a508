"""What a resumed run continues from: its record, read back from the rows,
with the decisions on the calls it paused for."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    PolicyDenial,
    ProviderCall,
    QuotaDecision,
    ToolInvocation,
)
from tooling.runtime import ApprovalDecision, RunRecord
from tooling.runtime.approvals import DecisionStatus

# The statuses a resumed run reads as decisions (a cancelled request's run
# never resumes).
DECIDED = (
    ApprovalRequest.Status.APPROVED,
    ApprovalRequest.Status.DENIED,
    ApprovalRequest.Status.EXPIRED,
)
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
    # the replayed turns withdraw the same hosted tools again, and answer the
    # same MCP approval requests "no" again (denials), with the same ids
    for model in (QuotaDecision, PolicyDenial):
        recorded.update(
            str(event_id)
            for event_id in model.objects.filter(session=session).values_list(
                "event_id", flat=True
            )
            if event_id is not None
        )
    return Resumption(
        RunRecord(
            responses=tuple(responses),
            tool_outputs=outputs,
            approvals=decisions(session),
        ),
        frozenset(recorded),
    )


def decisions(session: AgentSession) -> dict[str, tuple[ApprovalDecision, ...]]:
    """The decided approvals of the session, by the paused call's id (the
    MCP request item's id for provider-side approvals): one per policy that
    asked about the call, each bound to its policy and to the call it was
    made for (kind, tool, arguments and turn as stored): the resumed run
    applies it to that policy's check of that call only."""
    decided = (
        ApprovalRequest.objects.filter(
            session=session, call_id__isnull=False, status__in=DECIDED
        )
        .order_by("requested_at", "pk")
        .values(
            "call_id",
            "policy_name",
            "status",
            "decision_reason",
            "decided_by__username",
            "kind",
            "tool_name",
            "raw_arguments",
            "turn",
        )
    )
    by_call: dict[str, tuple[ApprovalDecision, ...]] = {}
    for row in decided:
        decision = ApprovalDecision(
            approved=row["status"] == ApprovalRequest.Status.APPROVED,
            decided_by=row["decided_by__username"] or "",
            reason=row["decision_reason"],
            status=cast(DecisionStatus, row["status"]),
            kind=row["kind"],
            tool_name=row["tool_name"],
            arguments=row["raw_arguments"],
            turn=row["turn"],
            policy_name=row["policy_name"],
        )
        call_id = str(row["call_id"])
        by_call[call_id] = (*by_call.get(call_id, ()), decision)
    return by_call
