"""One small recorder per runtime event; each creates audit rows and nothing else.

Only ``record_prompt_rendered``/``record_prompt_executed``/``record_prompt_failed``
touch the session row (its lifecycle); every other row is append-only.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    StateChange,
    ToolInvocation,
)
from tooling.runtime import (
    PolicyDenied,
    PromptExecuted,
    PromptFailed,
    PromptRendered,
    ProviderCallCompleted,
    ProviderCallFailed,
    RejectedToolParams,
    StateChanged,
    ToolInvoked,
)
from tooling.runtime.serde import dump


def _params(value: Any) -> Any:
    if isinstance(value, RejectedToolParams):
        return {
            "rejected": True,
            "raw_arguments": value.raw_arguments,
            "error": value.error,
        }
    return dump(value)


def record_prompt_rendered(*, session: AgentSession, event: PromptRendered) -> None:
    session.rendered_prompt = event.text
    session.tools_payload = list(event.tools_payload)
    session.withheld_tools = [tool.as_dict() for tool in event.withheld_hosted_tools]
    session.save(update_fields=["rendered_prompt", "tools_payload", "withheld_tools"])


def record_provider_call(
    *, session: AgentSession, event: ProviderCallCompleted
) -> ProviderCall:
    call = ProviderCall.objects.create(
        session=session,
        turn=event.turn,
        request=dict(event.request),
        input_offset=event.input_offset,
        response=dict(event.response),
        response_id=event.response_id or "",
        status=event.status,
        input_tokens=event.usage.input_tokens,
        output_tokens=event.usage.output_tokens,
        cached_tokens=event.usage.cached_tokens,
        reasoning_tokens=event.usage.reasoning_tokens,
        latency_ms=event.latency_ms,
        request_id=event.request_id or "",
        unknown_item_types=list(event.unknown_item_types),
        created_at=event.created_at,
    )
    Citation.objects.bulk_create(
        Citation(
            session=session,
            provider_call=call,
            kind=citation.kind,
            url=citation.url,
            domain=Citation.domain_of(citation.url) if citation.url else "",
            title=citation.title,
            start_index=citation.span[0] if citation.span else None,
            end_index=citation.span[1] if citation.span else None,
            cited_text=citation.cited_text,
            file_id=citation.file_id or "",
            filename=citation.filename or "",
            container_id=citation.container_id or "",
            message_id=citation.message_id or "",
            content_index=citation.content_index,
            search_call_id=citation.search_call_id or "",
            created_at=event.created_at,
        )
        for citation in event.citations
    )
    return call


def record_provider_call_failed(
    *, session: AgentSession, event: ProviderCallFailed
) -> ProviderCall:
    return ProviderCall.objects.create(
        session=session,
        turn=event.turn,
        request=dict(event.request),
        input_offset=event.input_offset,
        response=None,
        status="error",
        latency_ms=event.latency_ms,
        request_id=event.request_id or "",
        error=event.error,
        error_type=event.error_type,
        status_code=event.status_code,
        created_at=event.created_at,
    )


def record_tool_invoked(*, session: AgentSession, event: ToolInvoked) -> ToolInvocation:
    result = event.result
    return ToolInvocation.objects.create(
        session=session,
        sequence=event.sequence,
        turn=event.turn,
        name=event.name,
        call_id=event.call_id,
        native=event.native,
        provider=event.provider or "",
        kind=event.kind,
        params=_params(event.params),
        raw_arguments=event.raw_arguments or "",
        success=result.success,
        message=result.message,
        value=dump(result.value),
        rendered_output=event.rendered_output,
        created_at=event.created_at,
    )


def record_policy_denied(*, session: AgentSession, event: PolicyDenied) -> PolicyDenial:
    return PolicyDenial.objects.create(
        session=session,
        policy_name=event.policy_name,
        tool_name=event.tool_name,
        call_id=event.call_id,
        reason=event.reason,
        params=_params(event.params),
        turn=event.turn,
        created_at=event.created_at,
    )


def record_state_changed(*, session: AgentSession, event: StateChanged) -> StateChange:
    return StateChange.objects.create(
        session=session,
        key=event.key,
        value=dump(event.value),
        tool_name=event.tool_name,
        call_id=event.call_id,
        created_at=event.created_at,
    )


def record_prompt_executed(*, session: AgentSession, event: PromptExecuted) -> None:
    session.status = AgentSession.Status.SUCCEEDED
    session.output_text = event.text or ""
    session.output = dump(event.output)
    session.usage = event.usage.as_dict()
    session.turns = event.turns
    session.finished_at = timezone.now()
    session.save(
        update_fields=[
            "status",
            "output_text",
            "output",
            "usage",
            "turns",
            "finished_at",
        ]
    )


def record_prompt_failed(*, session: AgentSession, event: PromptFailed) -> None:
    session.status = AgentSession.Status.FAILED
    session.error_phase = event.phase
    session.error_message = event.message
    session.error_payload = dump(dict(event.provider_payload))
    session.usage = event.usage.as_dict()
    session.turns = session.provider_calls.count()
    session.finished_at = timezone.now()
    session.save(
        update_fields=[
            "status",
            "error_phase",
            "error_message",
            "error_payload",
            "usage",
            "turns",
            "finished_at",
        ]
    )
