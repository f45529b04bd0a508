"""One small recorder per runtime event; each builds the audit rows it records
(unsaved: the run's store writes them, a step's together: ``runs.store``).

Every value goes through a ``Scrubber`` (``storable.py``): whatever a provider or
a tool produced, the row can be stored on SQLite and PostgreSQL and read back,
and ``text_altered`` says when it differs from what was received. Each row
keeps its event's id (unique), so an event recorded twice adds no row.

The session row's own changes are the lifecycle's (``lifecycle.py``).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings

from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    Citation,
    PolicyDenial,
    ProviderCall,
    QuotaDecision,
    StateChange,
    ToolInvocation,
)
from sessions_app.runs.storable import Scrubber
from tooling.runtime import (
    ApprovalRequested,
    HostedToolWithdrawn,
    PolicyDenied,
    PromptRendered,
    ProviderCallCompleted,
    ProviderCallFailed,
    RejectedToolParams,
    StateChanged,
    ToolInvoked,
)
from tooling.runtime.approval_rules import MAX_DEADLINE_SECONDS
from tooling.runtime.citations import Citation as RuntimeCitation
from tooling.runtime.serde import dump

logger = logging.getLogger(__name__)


def _limit(model: type[Any], field: str) -> int:
    return int(model._meta.get_field(field).max_length)


# The largest amount stored in a cost column (max_digits=18, decimal_places=10
# holds less than 1e8; SQLite keeps a float, so the cap has few digits).
MAX_COST = Decimal(99_999_999)


def _cost(value: Decimal | None, scrub: Scrubber) -> Decimal | None:
    """An event's cost as its column stores it (a provider reporting absurd
    usage cannot overflow the column: the amount is capped, and flagged)."""
    if value is None:
        return None
    if not value.is_finite() or value < 0:
        scrub.altered = True
        return None
    if value > MAX_COST:
        scrub.altered = True
        return MAX_COST
    return value


def _params(value: Any) -> Any:
    if isinstance(value, RejectedToolParams):
        return {
            "rejected": True,
            "raw_arguments": value.raw_arguments,
            "error": value.error,
        }
    return dump(value)


def record_prompt_rendered(
    *, session: AgentSession, event: PromptRendered
) -> list[Any]:
    """Nothing to write: the session stored what the model sees when it
    started, from the same revision. A difference would be a bug; log it."""
    if event.text != session.rendered_prompt:
        logger.error(
            "Session %s rendered a prompt that differs from its snapshot", session.pk
        )
    return []


def record_provider_call(
    *, session: AgentSession, event: ProviderCallCompleted
) -> list[ProviderCall | Citation]:
    """The provider call, then its citations."""
    scrub = Scrubber()
    usage = event.usage
    call = ProviderCall(
        session=session,
        turn=event.turn,
        request=scrub.json(dict(event.request)),
        input_offset=scrub.count(event.input_offset),
        response=scrub.json(dict(event.response)),
        response_id=scrub.text(event.response_id, _limit(ProviderCall, "response_id")),
        status=scrub.text(event.status, _limit(ProviderCall, "status")),
        input_tokens=scrub.count(usage.input_tokens),
        output_tokens=scrub.count(usage.output_tokens),
        cached_tokens=scrub.count(usage.cached_tokens),
        reasoning_tokens=scrub.count(usage.reasoning_tokens),
        cost=_cost(event.cost, scrub),
        latency_ms=event.latency_ms,
        request_id=scrub.text(event.request_id, _limit(ProviderCall, "request_id")),
        unknown_item_types=scrub.json(list(event.unknown_item_types)),
        commentary=scrub.json(list(event.commentary)),
        attempts=scrub.json([attempt.as_dict() for attempt in event.attempts]),
        attempt_count=min(len(event.attempts) or 1, 32767),
        started_at=event.started_at,
        event_id=event.event_id,
        text_altered=scrub.altered,
        created_at=event.created_at,
    )
    return [
        call,
        *(_citation(session, call, citation, event) for citation in event.citations),
    ]


def _citation(
    session: AgentSession,
    call: ProviderCall,
    citation: RuntimeCitation,
    event: ProviderCallCompleted,
) -> Citation:
    scrub = Scrubber()
    url = scrub.text(citation.url)
    span = citation.span
    row = Citation(
        session=session,
        provider_call=call,
        kind=scrub.text(citation.kind, _limit(Citation, "kind")),
        url=url,
        domain=scrub.text(
            Citation.domain_of(url) if url else "", _limit(Citation, "domain")
        ),
        title=scrub.text(citation.title),
        start_index=scrub.optional_count(span[0] if span else None),
        end_index=scrub.optional_count(span[1] if span else None),
        cited_text=scrub.text(citation.cited_text),
        file_id=scrub.text(citation.file_id, _limit(Citation, "file_id")),
        filename=scrub.text(citation.filename, _limit(Citation, "filename")),
        container_id=scrub.text(
            citation.container_id, _limit(Citation, "container_id")
        ),
        message_id=scrub.text(citation.message_id, _limit(Citation, "message_id")),
        content_index=scrub.count(citation.content_index),
        search_call_id=scrub.text(
            citation.search_call_id, _limit(Citation, "search_call_id")
        ),
        created_at=event.created_at,
    )
    row.text_altered = scrub.altered
    return row


def record_provider_call_failed(
    *, session: AgentSession, event: ProviderCallFailed
) -> list[ProviderCall]:
    scrub = Scrubber()
    row = ProviderCall(
        session=session,
        turn=event.turn,
        request=scrub.json(dict(event.request)),
        input_offset=scrub.count(event.input_offset),
        response=None,
        status="error",
        latency_ms=event.latency_ms,
        request_id=scrub.text(event.request_id, _limit(ProviderCall, "request_id")),
        error=scrub.text(event.error),
        error_type=scrub.text(event.error_type, _limit(ProviderCall, "error_type")),
        status_code=scrub.optional_count(event.status_code),
        attempts=scrub.json([attempt.as_dict() for attempt in event.attempts]),
        attempt_count=min(len(event.attempts) or 1, 32767),
        started_at=event.started_at,
        event_id=event.event_id,
        created_at=event.created_at,
    )
    row.text_altered = scrub.altered
    return [row]


def record_tool_invoked(
    *, session: AgentSession, event: ToolInvoked
) -> list[ToolInvocation]:
    scrub = Scrubber()
    result = event.result
    row = ToolInvocation(
        session=session,
        sequence=event.sequence,
        turn=event.turn,
        name=scrub.text(event.name, _limit(ToolInvocation, "name")),
        call_id=scrub.optional(event.call_id, _limit(ToolInvocation, "call_id")),
        native=event.native,
        provider=scrub.text(event.provider, _limit(ToolInvocation, "provider")),
        kind=scrub.text(event.kind, _limit(ToolInvocation, "kind")),
        params=scrub.json(_params(event.params)),
        raw_arguments=scrub.text(event.raw_arguments),
        success=result.success,
        message=scrub.text(result.message),
        value=scrub.json(dump(result.value)),
        rendered_output=scrub.text(event.rendered_output),
        model_output=scrub.text(event.model_output),
        cost=_cost(event.cost, scrub),
        started_at=event.started_at,
        duration_ms=event.duration_ms,
        policy_ms=event.policy_ms,
        event_id=event.event_id,
        created_at=event.created_at,
    )
    row.text_altered = scrub.altered
    return [row]


def record_policy_denied(
    *, session: AgentSession, event: PolicyDenied
) -> list[PolicyDenial]:
    scrub = Scrubber()
    row = PolicyDenial(
        session=session,
        policy_name=scrub.text(event.policy_name, _limit(PolicyDenial, "policy_name")),
        tool_name=scrub.text(event.tool_name, _limit(PolicyDenial, "tool_name")),
        call_id=scrub.optional(event.call_id, _limit(PolicyDenial, "call_id")),
        reason=scrub.text(event.reason),
        params=scrub.json(_params(event.params)),
        turn=event.turn,
        sequence=event.sequence,
        event_id=event.event_id,
        created_at=event.created_at,
    )
    row.text_altered = scrub.altered
    return [row]


def record_hosted_tool_withdrawn(
    *, session: AgentSession, event: HostedToolWithdrawn
) -> list[QuotaDecision]:
    scrub = Scrubber()
    row = QuotaDecision(
        session=session,
        turn=event.turn,
        tool_name=scrub.text(event.tool_name, _limit(QuotaDecision, "tool_name")),
        kind=scrub.text(event.kind, _limit(QuotaDecision, "kind")),
        used=event.used,
        limit=event.limit,
        event_id=event.event_id,
        created_at=event.created_at,
    )
    return [row]


def record_state_changed(
    *, session: AgentSession, event: StateChanged
) -> list[StateChange]:
    scrub = Scrubber()
    row = StateChange(
        session=session,
        key=scrub.text(event.key, _limit(StateChange, "key")),
        value=scrub.json(dump(event.value)),
        tool_name=scrub.text(event.tool_name, _limit(StateChange, "tool_name")),
        call_id=scrub.optional(event.call_id, _limit(StateChange, "call_id")),
        turn=event.turn,
        sequence=event.sequence,
        event_id=event.event_id,
        created_at=event.created_at,
    )
    row.text_altered = scrub.altered
    return [row]


def record_approval_requested(
    *, session: AgentSession, event: ApprovalRequested
) -> ApprovalRequest:
    """The pending approval of a paused call (unsaved: the sink saves it with
    the session's pause). It expires after the policy's deadline, else
    ``WINK_APPROVAL_TIMEOUT_SECONDS``; a deadline from a policy other than
    ``ApprovalPolicy`` (which validates its own) is kept within 1 second and
    a year, so it can neither expire at once nor overflow the date. The
    four-eyes rule in effect (the policy's, else ``WINK_APPROVAL_FOUR_EYES``)
    is copied onto it: the decision is checked against the row, not the
    live catalog."""
    scrub = Scrubber()
    seconds = event.deadline_seconds or settings.WINK_APPROVAL_TIMEOUT_SECONDS
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        seconds = settings.WINK_APPROVAL_TIMEOUT_SECONDS
    seconds = min(max(1, seconds), MAX_DEADLINE_SECONDS)
    approvers = {
        key: value
        for key, value in dict(event.approvers).items()
        if key in ("permission", "group") and isinstance(value, str) and value
    }
    row = ApprovalRequest(
        session=session,
        kind=event.kind,
        tool_name=scrub.text(event.tool_name, _limit(ApprovalRequest, "tool_name")),
        call_id=scrub.optional(event.call_id, _limit(ApprovalRequest, "call_id")),
        sequence=scrub.optional_count(event.sequence),
        turn=scrub.count(event.turn),
        params=scrub.json(_params(event.params)),
        raw_arguments=scrub.text(event.raw_arguments),
        server_label=scrub.text(
            event.server_label, _limit(ApprovalRequest, "server_label")
        ),
        policy_name=scrub.text(
            event.policy_name, _limit(ApprovalRequest, "policy_name")
        ),
        reason=scrub.text(event.reason),
        approvers=scrub.json(approvers),
        four_eyes=(
            event.four_eyes
            if isinstance(event.four_eyes, bool)
            else bool(settings.WINK_APPROVAL_FOUR_EYES)
        ),
        requested_at=event.created_at,
        expires_at=event.created_at + timedelta(seconds=int(seconds)),
        event_id=event.event_id,
    )
    row.text_altered = scrub.altered
    return row
