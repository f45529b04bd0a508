"""The approval inbox's filters, shared by its page and the API (strict: a
value a database cannot store is a 400 in the API, an empty list on the
page)."""

from __future__ import annotations

import django_filters

from sessions_app.models import ApprovalRequest
from tooling.api.input import StrictFilterSet


class ApprovalRequestFilterSet(StrictFilterSet):
    status = django_filters.ChoiceFilter(choices=ApprovalRequest.Status.choices)
    tool = django_filters.CharFilter(
        field_name="tool_name",
        max_length=64,
        label="Tool",
        help_text="The tool's name.",
    )
    prompt = django_filters.CharFilter(
        field_name="session__prompt_ref",
        max_length=201,
        label="Prompt",
        help_text='The prompt its session runs, as "namespace/key".',
    )
    session = django_filters.UUIDFilter(
        field_name="session_id", label="Session", help_text="The session's id."
    )

    class Meta:
        model = ApprovalRequest
        fields = ["status", "tool", "prompt", "session"]
