"""The revision API's shapes: a revision in a list, one revision as people
read it (``reading.RevisionView``) and the difference of two
(``compare.RevisionDiff``)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from tooling.history.snapshot import NOT_COMPARED
from tooling.models import CatalogRevision


class RevisionListSerializer(serializers.ModelSerializer[CatalogRevision]):
    class Meta:
        model = CatalogRevision
        fields = ["hash", "prompt_ref", "created_at"]
        extra_kwargs = {
            "created_at": {"help_text": "When a run first used it."},
        }


class EntrySerializer(serializers.Serializer[Any]):
    name = serializers.CharField()

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        # ``fields`` names a Serializer attribute: declared here, not above.
        return {**super().get_fields(), "fields": serializers.JSONField()}


class ChangeSummarySerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    actor_name = serializers.CharField()
    object_repr = serializers.CharField()
    action = serializers.CharField()
    reason = serializers.CharField()

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        return {
            **super().get_fields(),
            "fields": serializers.JSONField(help_text="The fields it changed."),
        }


class RevisionDetailSerializer(serializers.Serializer[Any]):
    hash = serializers.CharField()
    prompt_ref = serializers.CharField()
    created_at = serializers.DateTimeField(help_text="When a run first used it.")
    first_run_at = serializers.DateTimeField(allow_null=True)
    previous = serializers.CharField(
        allow_null=True, help_text="The prompt's revision first used before it."
    )
    next = serializers.CharField(
        allow_null=True, help_text="The prompt's revision first used after it."
    )
    settings = serializers.JSONField(
        help_text="Model, limits, tool choice, output schema, the model's hosted kinds."
    )
    parameters = serializers.JSONField()
    text = serializers.CharField(
        help_text="The prompt rendered with its defaults at the highest trust "
        "level; a required parameter is shown as <name>."
    )
    tools_payload = serializers.JSONField(
        help_text="The tools as the first request sends them (credentials masked)."
    )
    sections = EntrySerializer(many=True)
    tools = EntrySerializer(many=True)
    hosted_tools = EntrySerializer(many=True)
    policies = EntrySerializer(many=True)
    problems = serializers.ListField(child=serializers.CharField())
    changes = ChangeSummarySerializer(
        many=True,
        allow_null=True,
        help_text="The catalog changes that produced it (null: reading the "
        "catalog's history needs view_catalogchange).",
    )

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        return {
            **super().get_fields(),
            "data": serializers.JSONField(help_text="The frozen revision as stored."),
        }


class FieldChangeSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=["text", "list", "value", "not_compared"])
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    lines = serializers.ListField(
        child=serializers.CharField(), help_text="Text: a unified line diff."
    )
    added = serializers.JSONField(help_text="Lists: the items added.")
    removed = serializers.JSONField(help_text="Lists: the items removed.")
    not_compared = serializers.ChoiceField(
        choices=NOT_COMPARED,
        help_text="Why it was not compared line by line: too_long (over 2,000 "
        "lines or 200,000 characters on a side) or page_full (one comparison "
        "compares at most 10,000 lines in all); empty when it was.",
    )


class EntryDiffSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=["added", "removed", "changed"])
    changes = FieldChangeSerializer(many=True)


class GroupDiffSerializer(serializers.Serializer[Any]):
    key = serializers.ChoiceField(
        choices=["sections", "tools", "hosted_tools", "policies"]
    )
    title = serializers.CharField()
    entries = EntryDiffSerializer(many=True)


class RevisionDiffSerializer(serializers.Serializer[Any]):
    before = serializers.CharField(help_text="The first revision's hash.")
    after = serializers.CharField(help_text="The second revision's hash.")
    after_is_live = serializers.BooleanField(
        help_text="The second side is the catalog as it is now."
    )
    after_stored = serializers.BooleanField(
        help_text="A run used the second side (it is a stored revision)."
    )
    same = serializers.BooleanField()
    text = serializers.ListField(
        child=serializers.CharField(),
        help_text="The rendered prompts as a unified line diff.",
    )
    text_not_compared = serializers.ChoiceField(
        choices=NOT_COMPARED,
        help_text="Why it was not compared line by line: too_long (over 2,000 "
        "lines or 200,000 characters on a side) or page_full (one comparison "
        "compares at most 10,000 lines in all); empty when it was.",
    )
    settings = FieldChangeSerializer(many=True)
    groups = GroupDiffSerializer(many=True)
    changes = ChangeSummarySerializer(
        many=True,
        allow_null=True,
        help_text="The catalog changes of the prompt between the two (null: "
        "reading the catalog's history needs view_catalogchange).",
    )
