"""The rows a session's trace is made of, each kind read in one bounded
query (at most ``MAX_ROWS`` rows, and only the columns the trace uses; a
kind with more is counted in one more query)."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.db.models.fields.json import KT

from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    PolicyDenial,
    ProviderCall,
    ToolInvocation,
)

#: the most rows of each kind (provider calls, tool calls, denials,
#: approvals) one trace holds; more are counted in ``wink.spans.dropped``
MAX_ROWS = 1000

_SESSION_FIELDS = (
    "id",
    "prompt_ref",
    "status",
    "model",
    "provider",
    "usage",
    "turns",
    "cost",
    "unpriced_calls",
    "error_phase",
    "label",
    "created_at",
    "started_at",
    "finished_at",
    "pauses",
    "attempts",
    "replay_of_id",
    "trust_level",
)


def finished_session(session_id: Any) -> AgentSession | None:
    """The session if it ended (succeeded, failed or cancelled)."""
    return (
        AgentSession.objects.filter(pk=session_id, status__in=AgentSession.TERMINAL)
        .only(*_SESSION_FIELDS)
        .first()
    )


@dataclasses.dataclass
class Rows:
    provider_calls: list[ProviderCall]
    tool_calls: list[ToolInvocation]
    denials: list[PolicyDenial]
    approvals: list[ApprovalRequest]
    #: rows past ``MAX_ROWS`` left out
    dropped: int


def read(session: AgentSession, *, capture: bool) -> Rows:
    """The session's rows; ``capture``: with the tool calls' arguments and
    results."""
    reader = _Reader(session, capture)
    return Rows(
        provider_calls=reader.provider_calls(),
        tool_calls=reader.tool_calls(),
        denials=reader.denials(),
        approvals=reader.approvals(),
        dropped=reader.dropped,
    )


class _Reader:
    def __init__(self, session: AgentSession, capture: bool) -> None:
        self.session = session
        self.capture = capture
        self.dropped = 0

    def _bounded(self, rows: QuerySet[Any]) -> list[Any]:
        """The first ``MAX_ROWS`` of ``rows``; those past them are counted
        (one more query, only then)."""
        listed = list(rows[: MAX_ROWS + 1])
        if len(listed) > MAX_ROWS:
            self.dropped += rows.count() - MAX_ROWS
            listed = listed[:MAX_ROWS]
        return listed

    def provider_calls(self) -> list[ProviderCall]:
        return self._bounded(
            ProviderCall.objects.filter(session=self.session)
            .only(
                "id",
                "turn",
                "response_id",
                "status",
                "input_tokens",
                "output_tokens",
                "cached_tokens",
                "reasoning_tokens",
                "latency_ms",
                "request_id",
                "error",
                "error_type",
                "status_code",
                "attempt_count",
                "started_at",
                "cost",
                "created_at",
            )
            .annotate(
                request_model=KT("request__model"), response_model=KT("response__model")
            )
            .order_by("turn")
        )

    def tool_calls(self) -> list[ToolInvocation]:
        fields = [
            "id",
            "sequence",
            "turn",
            "name",
            "call_id",
            "native",
            "provider",
            "kind",
            "success",
            "cost",
            "started_at",
            "duration_ms",
            "policy_ms",
            "created_at",
        ]
        if self.capture:
            fields += ["params", "raw_arguments", "model_output", "rendered_output"]
        return self._bounded(
            ToolInvocation.objects.filter(session=self.session)
            .only(*fields)
            .order_by("sequence")
        )

    def denials(self) -> list[PolicyDenial]:
        return self._bounded(
            PolicyDenial.objects.filter(session=self.session)
            .only(
                "id",
                "policy_name",
                "tool_name",
                "call_id",
                "reason",
                "turn",
                "sequence",
                "created_at",
            )
            .order_by("created_at", "id")
        )

    def approvals(self) -> list[ApprovalRequest]:
        """With what became of each approved call (``with_call_record``,
        read by ``approvals.outcome``), in the same query."""
        listed: list[ApprovalRequest] = self._bounded(
            ApprovalRequest.objects.filter(session=self.session)
            .with_call_record()
            .select_related("decided_by")
            .only(
                "id",
                "kind",
                "tool_name",
                "call_id",
                "turn",
                "policy_name",
                "four_eyes",
                "status",
                "requested_at",
                "decided_at",
                "decision_reason",
                f"decided_by__{get_user_model().USERNAME_FIELD}",
            )
            .order_by("requested_at", "id")
        )
        for approval in listed:
            approval.session = self.session  # its status and claims, read once
        return listed
