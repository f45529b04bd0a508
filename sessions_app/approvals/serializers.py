"""Serializers of the approval inbox API, one per use."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from sessions_app import access
from sessions_app.approvals import decisions, inbox, outcome
from sessions_app.models import ApprovalRequest
from tooling.api.input import StrictSerializer


class ApprovalRequestSerializer(serializers.ModelSerializer[ApprovalRequest]):
    """An approval request: the call that waits, why, and its decision."""

    session = serializers.UUIDField(source="session_id", read_only=True)
    prompt = serializers.CharField(
        source="session.prompt_ref",
        read_only=True,
        help_text='The prompt its session runs, as "namespace/key".',
    )
    decided_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="Who decided (null: pending, or expired or cancelled without "
        "a decision).",
    )
    effective_status = serializers.SerializerMethodField(
        help_text="The status as it stands now, as the inbox shows it: `expired` "
        "for a request still `pending` past `expires_at`, `cancelled` for one "
        "still `pending` whose run has ended, before the sweeper records "
        "either (neither can be decided any more); otherwise `status`."
    )
    call_outcome = serializers.SerializerMethodField(
        help_text="For an approved request, what became of the call as its run "
        "recorded it: `ran` (recorded; an MCP request answered), `refused` "
        "(another policy refused it: it did not run), `not_run` (the run ended "
        "before taking it up again, cancelled while queued: it did not run), "
        "`unknown` (the run ended after taking it up, before recording it: it "
        "may have run); null while the run is on its way, and for every other "
        "status."
    )

    class Meta:
        model = ApprovalRequest
        fields = [
            "id",
            "session",
            "prompt",
            "kind",
            "tool_name",
            "call_id",
            "sequence",
            "turn",
            "params",
            "raw_arguments",
            "server_label",
            "policy_name",
            "reason",
            "approvers",
            "four_eyes",
            "status",
            "effective_status",
            "call_outcome",
            "requested_at",
            "expires_at",
            "decided_by",
            "decided_at",
            "decision_reason",
            "text_altered",
        ]
        read_only_fields = fields

    @extend_schema_field(
        serializers.ChoiceField(choices=ApprovalRequest.Status.choices)
    )
    def get_effective_status(self, approval: ApprovalRequest) -> str:
        return inbox.shown_status(approval).value

    @extend_schema_field(
        serializers.ChoiceField(
            choices=[(value.value, value.value) for value in outcome.Outcome],
            allow_null=True,
        )
    )
    def get_call_outcome(self, approval: ApprovalRequest) -> str | None:
        result = outcome.of(approval)
        return None if result is None else result.value


class ApprovalRequestEventSerializer(ApprovalRequestSerializer):
    """An approval request on its session's timeline (the session is known)."""

    class Meta(ApprovalRequestSerializer.Meta):
        fields = [
            name
            for name in ApprovalRequestSerializer.Meta.fields
            # (the session's own timeline: its status is beside it)
            if name not in ("session", "prompt", "effective_status")
        ]
        read_only_fields = fields


class ApprovalRequestDetailSerializer(ApprovalRequestSerializer):
    """An approval request, and whether the requesting user may decide it."""

    may_decide = serializers.SerializerMethodField(
        help_text="Whether you may approve or deny it: it is pending "
        "(`effective_status`) and you are one of its approvers."
    )

    class Meta(ApprovalRequestSerializer.Meta):
        fields = [*ApprovalRequestSerializer.Meta.fields, "may_decide"]
        read_only_fields = fields

    def get_may_decide(self, approval: ApprovalRequest) -> bool:
        request = self.context.get("request")
        user = getattr(request, "user", None)
        return bool(
            inbox.shown_status(approval).value == ApprovalRequest.Status.PENDING
            and access.may_decide(user, approval)
        )


class TextOnlyField(serializers.CharField):
    """Text, and only text: a number or a boolean is not a reason."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class ApprovalDecisionSerializer(StrictSerializer):
    """Input of ``approve/`` and ``deny/``: why (required to deny: the model
    reads it)."""

    reason = TextOnlyField(
        required=False,
        allow_blank=True,
        default="",
        max_length=decisions.MAX_REASON,
        trim_whitespace=True,
        help_text="Why you decide so. Required to deny: the model reads it as "
        "the call's result.",
    )
