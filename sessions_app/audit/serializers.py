"""Serializers of the sessions API, one per use: the list, the detail (with
the first rows of its audit trail, ``row_serializers.py``) and a start."""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers

from sessions_app.audit.fields import usd_field
from sessions_app.audit.row_serializers import (
    CitationSerializer,
    PolicyDenialSerializer,
    ProviderCallSummarySerializer,
    StateChangeSerializer,
    ToolInvocationSerializer,
    VirtualFileSerializer,
)
from sessions_app.audit.trail import TRAIL_LISTS
from sessions_app.models import AgentSession
from tooling.api.input import StrictSerializer
from tooling.models import LABEL_RULE, TrustLevel

# How many rows of each list a session's detail holds.
TRAIL_LIMIT = 50
# Mirrors PromptTemplate: namespace and key are each at most 100 characters.
PROMPT_REF_RE = re.compile(r"^[^/\s]{1,100}/[^/\s]{1,100}$")
# What a label or a revision of a run, a release or a replay is, said where
# one is refused (DRF's own: "This value does not match the required
# pattern.").
LABEL_INVALID = str(LABEL_RULE.message)
REVISION_INVALID = "Enter 'draft' or a revision's hash: 64 characters, digits and a-f."


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

    # The lists are read from ``session.trail`` (``trail.first_rows``),
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
        help_text="Who started the session (null: a command, a task, or a user "
        "since deleted).",
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
    replay_of: serializers.PrimaryKeyRelatedField[Any] = (
        serializers.PrimaryKeyRelatedField(
            read_only=True,
            allow_null=True,
            help_text="The session this one replays (null: not a replay; "
            "docs/replay.md).",
        )
    )
    live_tools = serializers.BooleanField(
        source="replay_live_tools",
        read_only=True,
        allow_null=True,
        help_text="A replay: whether its read-only tools ran live (null: not "
        "a replay).",
    )
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
            "replay_of",
            "live_tools",
            *TRAIL_LISTS,
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
        error_messages={"invalid": LABEL_INVALID},
        required=False,
        help_text="Run the revision this label of the prompt points at "
        "(production, staging ...). Default: the prompt's production label when "
        "it has one, the catalog as it is otherwise (docs/releases.md).",
    )
    revision = serializers.RegexField(
        r"^([0-9a-f]{64}|draft)$",
        error_messages={"invalid": REVISION_INVALID},
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
