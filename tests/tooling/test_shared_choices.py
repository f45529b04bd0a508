"""The catalog's choices are the runtime's (``tooling/runtime/choices.py``):
models, forms and serializers derive them, and the values stored mean to the
runtime what the admin and the API say."""

from __future__ import annotations

from django import forms
from rest_framework import serializers

from sessions_app.audit.row_serializers import EventSerializer
from sessions_app.audit.serializers import AgentSessionCreateSerializer
from sessions_app.audit.timeline import KINDS
from sessions_app.models import AgentSession
from tooling.api.serializers import PreviewRequestSerializer
from tooling.forms import HostedToolDefinitionForm
from tooling.models import HostedToolDefinition, SectionDefinition, TrustLevel
from tooling.runtime import TrustLevel as RuntimeTrustLevel
from tooling.runtime.choices import (
    PLANNING_STRATEGY_CHOICES,
    SEARCH_CONTEXT_SIZES,
    TRUST_LEVEL_CHOICES,
)


def test_the_models_trust_levels_are_the_runtimes():
    assert TrustLevel.choices == list(TRUST_LEVEL_CHOICES)
    assert [level.name for level in TrustLevel] == [
        level.name for level in RuntimeTrustLevel
    ]
    for level in TrustLevel:
        assert RuntimeTrustLevel.parse(level.value).name == level.name
    for field in (
        HostedToolDefinition._meta.get_field("min_trust_level"),
        AgentSession._meta.get_field("trust_level"),
    ):
        assert field.choices == list(TRUST_LEVEL_CHOICES)


def test_the_api_offers_the_runtimes_trust_levels():
    for serializer in (PreviewRequestSerializer(), AgentSessionCreateSerializer()):
        field = serializer.fields["trust_level"]
        assert isinstance(field, serializers.ChoiceField)
        assert list(field.choices.items()) == list(TRUST_LEVEL_CHOICES)
        assert field.default == "standard"


def test_planning_strategies_are_the_runtimes():
    field = SectionDefinition._meta.get_field("planning_strategy")
    assert field.choices == list(PLANNING_STRATEGY_CHOICES)


def test_the_hosted_tool_form_offers_the_runtimes_search_context_sizes():
    field = HostedToolDefinitionForm().fields["search_context_size"]
    assert isinstance(field, forms.ChoiceField)
    # django-stubs types the getter like the setter; Django gives back a list.
    choices: list[tuple[str, str]] = field.choices  # type: ignore[assignment]
    assert [value for value, _ in choices] == ["", *SEARCH_CONTEXT_SIZES]


def test_the_timeline_event_kinds_are_the_timelines():
    field = EventSerializer().fields["kind"]
    assert isinstance(field, serializers.ChoiceField)
    assert list(field.choices) == list(KINDS)
