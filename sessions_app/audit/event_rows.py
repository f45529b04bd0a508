"""A session's events as the API gives them (``GET .../events/``): each event's
kind, place and timing, and its row serialized by its kind's serializer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils import timezone
from rest_framework.serializers import BaseSerializer

from sessions_app.approvals.serializers import ApprovalRequestEventSerializer
from sessions_app.audit import timeline, timings
from sessions_app.audit.row_serializers import (
    CitationSerializer,
    PolicyDenialSerializer,
    ProviderCallSummarySerializer,
    QuotaDecisionSerializer,
    StateChangeSerializer,
    ToolInvocationSerializer,
)

EVENT_SERIALIZERS: dict[str, type[BaseSerializer[Any]]] = {
    "provider_call": ProviderCallSummarySerializer,
    "quota_decision": QuotaDecisionSerializer,
    "citation": CitationSerializer,
    "policy_denial": PolicyDenialSerializer,
    "tool_invocation": ToolInvocationSerializer,
    "state_change": StateChangeSerializer,
    "approval": ApprovalRequestEventSerializer,
}
# The kinds whose rows have a place among the tool calls (``sequence``).
SEQUENCED = ("policy_denial", "tool_invocation", "state_change", "approval")


def event_rows(
    events: Sequence[timeline.Event], context: dict[str, Any]
) -> list[dict[str, Any]]:
    """``events`` (``timeline.events_page``) as the API's event objects."""
    now = timezone.now()
    # One serializer per kind (its fields are built once), not per event.
    data: dict[int, Any] = {}
    for kind, serializer_class in EVENT_SERIALIZERS.items():
        of_kind = [event for event in events if event.kind == kind]
        if of_kind:
            serialized = serializer_class(
                [event.row for event in of_kind], many=True, context=context
            ).data
            data.update(zip(map(id, of_kind), serialized, strict=True))
    return [
        {
            "kind": event.kind,
            "turn": event.turn,
            "sequence": getattr(event.row, "sequence", None)
            if event.kind in SEQUENCED
            else None,
            "created_at": event.row.created_at,
            "started_at": span.start if span else None,
            "duration_ms": round(span.duration_ms, 3) if span else None,
            "data": data[id(event)],
        }
        for event in events
        for span in (timings.span_of(event.kind, event.row, now),)
    ]
