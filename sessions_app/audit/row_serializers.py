"""The audit rows as the API gives them: provider calls, tool calls,
citations, denials, quota decisions, state changes, files and the timeline's
events (``serializers.py``: the sessions themselves)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from sessions_app.audit.fields import FINITE_FLOAT_MAPPING, usd_field
from sessions_app.audit.filters import is_outside_allowed_domains
from sessions_app.audit.timeline import KINDS
from sessions_app.models import (
    Citation,
    PolicyDenial,
    ProviderCall,
    QuotaDecision,
    StateChange,
    ToolInvocation,
    VirtualFile,
)


class ProviderCallSummarySerializer(serializers.ModelSerializer[ProviderCall]):
    serializer_field_mapping = FINITE_FLOAT_MAPPING
    cost = usd_field(
        "USD, from the usage and the model's prices in effect; null: no price "
        "for the model (unpriced), or a failed request (no usage to price)."
    )

    class Meta:
        model = ProviderCall
        fields = [
            "id",
            "turn",
            "status",
            "response_id",
            "request_id",
            "input_tokens",
            "output_tokens",
            "cached_tokens",
            "reasoning_tokens",
            "latency_ms",
            "error",
            "error_type",
            "status_code",
            "unknown_item_types",
            "commentary",
            "attempt_count",
            "attempts",
            "cost",
            "text_altered",
            "started_at",
            "created_at",
        ]
        read_only_fields = fields


class ProviderCallDetailSerializer(ProviderCallSummarySerializer):
    """A provider call with the request and response bodies."""

    class Meta(ProviderCallSummarySerializer.Meta):
        fields = [
            *ProviderCallSummarySerializer.Meta.fields,
            "input_offset",
            "request",
            "response",
        ]
        read_only_fields = fields


class ToolInvocationSerializer(serializers.ModelSerializer[ToolInvocation]):
    serializer_field_mapping = FINITE_FLOAT_MAPPING
    cost = usd_field(
        "USD: a native call's fee (0 for kinds billed by tokens only); null: a "
        "local call, or no price in effect for the native kind."
    )

    class Meta:
        model = ToolInvocation
        fields = [
            "sequence",
            "turn",
            "name",
            "call_id",
            "native",
            "provider",
            "kind",
            "params",
            "raw_arguments",
            "success",
            "message",
            "value",
            "rendered_output",
            "model_output",
            "cost",
            "text_altered",
            "started_at",
            "duration_ms",
            "policy_ms",
            "created_at",
        ]
        read_only_fields = fields


class CitationSerializer(serializers.ModelSerializer[Citation]):
    # Annotated by the view's query set (``turn=F("provider_call__turn")``).
    turn = serializers.IntegerField(read_only=True)

    class Meta:
        model = Citation
        fields = [
            "id",
            "kind",
            "url",
            "domain",
            "title",
            "start_index",
            "end_index",
            "cited_text",
            "file_id",
            "filename",
            "container_id",
            "message_id",
            "content_index",
            "search_call_id",
            "turn",
            "text_altered",
            "created_at",
        ]
        read_only_fields = fields


class CitationListSerializer(CitationSerializer):
    """A citation across sessions, flagged when outside the allowed domains."""

    session = serializers.UUIDField(source="session_id", read_only=True)
    outside_allowed_domains = serializers.SerializerMethodField()

    class Meta(CitationSerializer.Meta):
        fields = [
            "session",
            *CitationSerializer.Meta.fields,
            "outside_allowed_domains",
        ]
        read_only_fields = fields

    def get_outside_allowed_domains(self, citation: Citation) -> bool:
        return is_outside_allowed_domains(citation)


class PolicyDenialSerializer(serializers.ModelSerializer[PolicyDenial]):
    class Meta:
        model = PolicyDenial
        fields = [
            "policy_name",
            "tool_name",
            "call_id",
            "reason",
            "params",
            "turn",
            "sequence",
            "text_altered",
            "created_at",
        ]
        read_only_fields = fields


class QuotaDecisionSerializer(serializers.ModelSerializer[QuotaDecision]):
    """A hosted tool withdrawn from ``turn``'s request on: its calls per run
    were used up (``used`` above ``limit``: the provider ran more than asked)."""

    class Meta:
        model = QuotaDecision
        fields = ["tool_name", "kind", "used", "limit", "turn", "created_at"]
        read_only_fields = fields


class StateChangeSerializer(serializers.ModelSerializer[StateChange]):
    class Meta:
        model = StateChange
        fields = [
            "key",
            "value",
            "tool_name",
            "call_id",
            "turn",
            "sequence",
            "text_altered",
            "created_at",
        ]
        read_only_fields = fields


class VirtualFileSerializer(serializers.ModelSerializer[VirtualFile]):
    class Meta:
        model = VirtualFile
        fields = ["path", "content", "updated_at"]
        read_only_fields = fields


class ToolInvocationListSerializer(ToolInvocationSerializer):
    """A tool call across sessions."""

    session = serializers.UUIDField(source="session_id", read_only=True)

    class Meta(ToolInvocationSerializer.Meta):
        fields = ["id", "session", *ToolInvocationSerializer.Meta.fields]
        read_only_fields = fields


class EventSerializer(serializers.Serializer[Any]):
    """One entry of a session's timeline."""

    kind = serializers.ChoiceField(choices=list(KINDS))
    turn = serializers.IntegerField()
    sequence = serializers.IntegerField(
        allow_null=True,
        help_text="The tool call's sequence number (tool calls, their denials, "
        "state changes and approval requests); null otherwise.",
    )
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the step started: a provider call's first attempt (for "
        "one recorded before timings: when it was recorded less its latency), "
        "a local tool call taken up, an approval requested; null for moments "
        "(denials, state changes, citations), native calls (the provider ran "
        "them within its call) and tool calls recorded before timings.",
    )
    duration_ms = serializers.FloatField(
        allow_null=True,
        help_text="How long the step took: a provider call's latency (retries "
        "and backoff included), a local call's time until recorded (policy "
        "checks included), an approval's wait (so far, while pending).",
    )
    # Named like Serializer.data: the serializer metaclass takes a declared
    # field off the class, so nothing is shadowed at run time.
    data = serializers.DictField(  # type: ignore[assignment]
        help_text="The row, as in the session's detail: a provider call (without "
        "bodies), a quota decision, a citation, a policy denial, a tool "
        "invocation, a state change or an approval request, by kind."
    )


class EventPageSerializer(serializers.Serializer[Any]):
    next = serializers.URLField(
        allow_null=True, help_text="The next page, or null on the last one."
    )
    results = EventSerializer(many=True)
