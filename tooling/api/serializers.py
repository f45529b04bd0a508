"""Serializers of the catalog API (read-only, and the preview's input)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from tooling.api.input import StrictSerializer
from tooling.models import HostedToolDefinition, ToolDefinition, TrustLevel


class ParameterSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    type = serializers.ChoiceField(
        choices=[
            "string",
            "integer",
            "number",
            "boolean",
            "array",
            "object",
            "scalar",
            "any",
        ],
        help_text="The JSON type a value must have (from the default); 'scalar': "
        "a string, number or boolean (a required parameter); 'any': anything.",
    )
    # A declared field named like a Field attribute: the serializer metaclass
    # takes it off the class, so nothing is shadowed at run time.
    required = serializers.BooleanField()  # type: ignore[assignment]
    default = serializers.JSONField(allow_null=True)
    sections = serializers.ListField(
        child=serializers.CharField(), help_text="The sections that use it."
    )


class PromptToolSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    description = serializers.CharField()


class PromptHostedToolSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    kind = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    min_trust_level = serializers.CharField()


class PromptSerializer(serializers.Serializer[Any]):
    """What a client needs to run a prompt: its parameters and tools."""

    ref = serializers.CharField(
        help_text='"namespace/key": what POST /api/sessions/ takes.'
    )
    namespace = serializers.CharField()
    key = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    description = serializers.CharField(allow_blank=True)
    model = serializers.CharField()
    max_turns = serializers.IntegerField()
    deadline_seconds = serializers.IntegerField(allow_null=True)
    output_schema = serializers.JSONField(allow_null=True)
    revision = serializers.CharField(
        help_text="The revision of the catalog as it is now (the draft); the "
        "parameters and tools below are its."
    )
    labels = serializers.DictField(
        child=serializers.CharField(),
        help_text="Each label of the prompt and the revision it points at.",
    )
    run_revision = serializers.CharField(
        allow_null=True,
        help_text="What a run started now without a label or revision executes: "
        "the production label's revision (WINK_DEFAULT_LABEL) when the prompt "
        "has one, the draft otherwise (null: the draft cannot be frozen).",
    )
    parameters = ParameterSerializer(many=True)
    tools = PromptToolSerializer(many=True)
    hosted_tools = PromptHostedToolSerializer(many=True)


class PreviewRequestSerializer(StrictSerializer):
    """Input of the preview: sample parameters and a trust level."""

    sized_fields = ("params",)

    params = serializers.DictField(
        required=False,
        default=dict,
        child=serializers.JSONField(),
        help_text="Values for the prompt's parameters (a JSON object).",
    )
    trust_level = serializers.ChoiceField(
        choices=TrustLevel.choices, default=TrustLevel.STANDARD
    )


class PreviewSerializer(serializers.Serializer[Any]):
    rendered_prompt = serializers.CharField()
    request = serializers.JSONField(
        help_text="The first request body, exactly as it would be sent "
        "(credentials masked)."
    )
    revision = serializers.CharField()
    withheld_tools = serializers.ListField(child=serializers.DictField())


class ToolSerializer(serializers.ModelSerializer[ToolDefinition]):
    handler = serializers.CharField(source="handler_key")

    class Meta:
        model = ToolDefinition
        fields = [
            "name",
            "handler",
            "description",
            "param_descriptions",
            "examples",
            "enabled",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class HostedToolSerializer(serializers.ModelSerializer[HostedToolDefinition]):
    config = serializers.JSONField(
        help_text="The stored config; MCP headers are names of environment "
        "variables, never values."
    )

    class Meta:
        model = HostedToolDefinition
        fields = [
            "name",
            "kind",
            "description",
            "config",
            "min_trust_level",
            "enabled",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields
