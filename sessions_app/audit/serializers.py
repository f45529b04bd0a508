"""Serializers of the audit trail API, one per use."""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers

from sessions_app.audit.filters import is_outside_allowed_domains
from sessions_app.audit.timeline import KINDS, TRAIL_LISTS
from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    QuotaDecision,
    StateChange,
    ToolInvocation,
    VirtualFile,
)
from tooling.api.input import StrictSerializer
from tooling.models import TrustLevel

# How many rows of each list a session's detail holds.
TRAIL_LIMIT = 50
# Mirrors PromptTemplate: namespace and key are each at most 100 characters.
PROMPT_REF_RE = re.compile(r"^[^/\s]{1,100}/[^/\s]{1,100}$")


def usd_field(
    help_text: str, *, null: bool = True, digits: int = 18, places: int = 10
) -> serializers.DecimalField:
    """USD as a decimal string (never a float: JSON numbers lose cents).
    ``digits``/``places`` as the column's (a cost by default); a sum of many
    needs more digits, or DRF's rounding refuses it."""
    return serializers.DecimalField(
        max_digits=digits,
        decimal_places=places,
        coerce_to_string=True,
        read_only=True,
        allow_null=null,
        help_text=help_text,
    )


class ProviderCallSummarySerializer(serializers.ModelSerializer[ProviderCall]):
    cost = usd_field(
        "USD, from the usage and the model's prices in effect; null: no price "
        "for the model (unpriced)."
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


SESSION_SUMMARY_FIELDS = [
    "id",
    "prompt_ref",
    "status",
    "trust_level",
    "model",
    "provider",
    "turns",
    "usage",
    "error_phase",
    "error_message",
    "revision",
    "label",
    "attempts",
    "cost",
    "cost_budget",
    "unpriced_calls",
    "created_at",
    "started_at",
    "finished_at",
]


class SessionCostFields(serializers.Serializer[AgentSession]):
    """A session's spend, in its list and detail alike."""

    cost = usd_field(
        "USD spent so far: provider calls and native tool fees (unpriced calls "
        "excluded).",
        null=False,
    )
    cost_budget = usd_field(
        "The most the run may spend, USD (its template's budget capped by its "
        "user's daily budget left); null: no budget.",
        digits=12,
        places=4,
    )
    unpriced_calls = serializers.IntegerField(
        read_only=True,
        help_text="Calls with no price in effect: not in `cost`.",
    )


class AgentSessionListSerializer(
    SessionCostFields, serializers.ModelSerializer[AgentSession]
):
    revision = serializers.CharField(
        source="revision_id",
        read_only=True,
        allow_null=True,
        help_text="The catalog revision's hash: sessions with the same one ran "
        "the same catalog.",
    )
    # Annotated by ``AgentSession.objects.summaries()``.
    tool_call_count = serializers.IntegerField(read_only=True)
    citation_count = serializers.IntegerField(read_only=True)
    created_by = serializers.CharField(
        source="created_by_username",
        read_only=True,
        allow_null=True,
        help_text="The username of who started it (null: nobody recorded, or "
        "a deleted user).",
    )
    duration_seconds = serializers.SerializerMethodField(
        help_text="How long it ran: from its start to its end (null until both)."
    )

    class Meta:
        model = AgentSession
        fields = [
            *SESSION_SUMMARY_FIELDS,
            "created_by",
            "duration_seconds",
            "tool_call_count",
            "citation_count",
        ]
        read_only_fields = fields

    def get_duration_seconds(self, session: AgentSession) -> float | None:
        duration = getattr(session, "duration", None)
        if duration is None:
            return None
        return round(duration.total_seconds(), 3)


class AgentSessionDetailSerializer(
    SessionCostFields, serializers.ModelSerializer[AgentSession]
):
    """A session with the first rows of each list of its audit trail (provider
    call bodies excluded)."""

    # The lists are read from ``session.trail`` (``timeline.first_rows``),
    # which the view sets: the same bounded queries for any session's length.

    revision = serializers.CharField(
        source="revision_id",
        read_only=True,
        allow_null=True,
        help_text="The catalog revision's hash: sessions with the same one ran "
        "the same catalog.",
    )
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="Who started the session (null: a command or a task).",
    )
    cancelled_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="Who cancelled it (null: nobody, or the system).",
    )
    provider_calls = ProviderCallSummarySerializer(
        many=True, read_only=True, source="trail.provider_calls"
    )
    tool_invocations = ToolInvocationSerializer(
        many=True, read_only=True, source="trail.tool_invocations"
    )
    citations = CitationSerializer(many=True, read_only=True, source="trail.citations")
    policy_denials = PolicyDenialSerializer(
        many=True, read_only=True, source="trail.policy_denials"
    )
    state_changes = StateChangeSerializer(
        many=True, read_only=True, source="trail.state_changes"
    )
    files = VirtualFileSerializer(many=True, read_only=True, source="trail.files")
    truncated = serializers.ListField(
        child=serializers.ChoiceField(choices=TRAIL_LISTS),
        source="trail.truncated",
        read_only=True,
        help_text=f"The lists above hold at most {TRAIL_LIMIT} rows each (the "
        "first, in timeline order); these hold more. Page through them: "
        "`events/` (every kind, in order), `tool-invocations/`, "
        "`provider-calls/`, `/api/citations/?session=<id>`.",
    )

    class Meta:
        model = AgentSession
        fields = [
            *SESSION_SUMMARY_FIELDS,
            "params",
            "rendered_prompt",
            "tools_payload",
            "withheld_tools",
            "request_options",
            "output_text",
            "output",
            "error_payload",
            "text_altered",
            "deadline_seconds",
            "deadline_at",
            "dispatch_error",
            "dispatch_failed_at",
            "dispatch_failures",
            "cancel_requested_at",
            "cancelled_by",
            "created_by",
            "provider_calls",
            "tool_invocations",
            "citations",
            "policy_denials",
            "state_changes",
            "files",
            "truncated",
        ]
        read_only_fields = fields


class AgentSessionCreateSerializer(StrictSerializer):
    """Input of ``POST /api/sessions/``: which prompt to run, with which params.

    Unknown fields, text with NUL bytes or lone surrogates, and a parameter
    value over ``WINK_API_MAX_PARAM_BYTES`` are refused (400, 400, 413)."""

    sized_fields = ("params",)

    prompt = serializers.CharField(
        max_length=201,
        help_text='The prompt template to run, as "namespace/key".',
    )
    params = serializers.DictField(
        required=False,
        default=dict,
        child=serializers.JSONField(),
        help_text="Values for the prompt's $placeholders (a JSON object).",
    )
    trust_level = serializers.ChoiceField(
        choices=TrustLevel.choices,
        default=TrustLevel.STANDARD,
        help_text="Hosted tools that need a higher level are withheld from the "
        "run. 'trusted' needs the 'Can start sessions at the trusted level' "
        "permission.",
    )

    # the metaclass takes declared fields off the class: ``Field.label`` stays
    label = serializers.RegexField(  # type: ignore[assignment]
        r"^[a-z][a-z0-9_-]{0,31}$",
        required=False,
        help_text="Run the revision this label of the prompt points at "
        "(production, staging ...). Default: the prompt's production label when "
        "it has one, the catalog as it is otherwise (docs/releases.md).",
    )
    revision = serializers.RegexField(
        r"^([0-9a-f]{64}|draft)$",
        required=False,
        help_text="Run this revision of the prompt (its hash), or 'draft': the "
        "catalog as it is now, whatever its labels point at.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("label") and attrs.get("revision"):
            raise serializers.ValidationError(
                "Name a label or a revision to run, not both."
            )
        return attrs

    def validate_prompt(self, value: str) -> str:
        value = value.strip()
        if not PROMPT_REF_RE.fullmatch(value):
            raise serializers.ValidationError(
                'Enter a prompt reference of the form "namespace/key".'
            )
        return value


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
