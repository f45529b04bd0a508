"""Planning sections in the catalog: a strategy adds the planning tools and the
strategy's guidance to a section."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from sessions_app import services as session_services
from sessions_app.models import StateChange
from tests.tooling.factories import (
    PromptTemplateFactory,
    SectionDefinitionFactory,
    ToolDefinitionFactory,
    add_sections,
    attach,
)
from tooling import assembly, services
from tooling.models import SectionDefinition
from tooling.runtime import PlanningStrategy, PromptValidationError, planning_template

pytestmark = pytest.mark.django_db

PLANNING_TOOLS = [
    "planning_setup_plan",
    "planning_add_step",
    "planning_update_step",
    "planning_read_plan",
]


@pytest.fixture(autouse=True)
def _offline(settings):
    settings.WINK_PROVIDER = "offline"


def test_planning_strategy_choices_are_the_runtime_strategies():
    field = SectionDefinition._meta.get_field("planning_strategy")

    assert field.choices is not None
    assert [value for value, _label in field.choices] == [
        strategy.value for strategy in PlanningStrategy
    ]


@pytest.mark.parametrize("strategy", list(PlanningStrategy))
def test_a_planning_section_gets_the_tools_and_the_strategy_guidance(strategy):
    section = SectionDefinitionFactory.create(
        template="Plan the release.", planning_strategy=strategy.value
    )
    attach(section, ToolDefinitionFactory.create(name="count_words"))

    runtime = assembly.build_section(section, tools=[])

    assert [tool.name for tool in runtime.tools()] == PLANNING_TOOLS
    assert runtime.template == f"Plan the release.\n\n{planning_template(strategy)}"
    assert strategy.guidance in runtime.template.replace("$$", "$")


def test_a_section_without_a_strategy_is_unchanged():
    section = SectionDefinitionFactory.create(template="Plain.")

    runtime = assembly.build_section(section)

    assert runtime.tools() == ()
    assert runtime.template == "Plain."


def test_an_unknown_stored_strategy_is_refused():
    section = SectionDefinitionFactory.create(planning_strategy="waterfall")

    with pytest.raises(PromptValidationError) as caught:
        assembly.build_section(section)

    assert caught.value.message.startswith(
        "Unknown planning strategy 'waterfall'; expected one of: react, "
    )


def test_the_admin_saves_a_planning_section(admin_client):
    response = admin_client.post(
        reverse("admin:tooling_sectiondefinition_add"),
        {
            "key": "plan",
            "title": "Plan",
            "template": "Plan first.",
            "default_params": "{}",
            "planning_strategy": "goal_decompose_route_synthesise",
            "enabled": "on",
            "position": 0,
            "sectiontool_set-TOTAL_FORMS": 0,
            "sectiontool_set-INITIAL_FORMS": 0,
            "sectionhostedtool_set-TOTAL_FORMS": 0,
            "sectionhostedtool_set-INITIAL_FORMS": 0,
        },
    )

    assert response.status_code == 302, response.content.decode()[-2000:]
    saved = SectionDefinition.objects.get(key="plan")
    assert saved.planning_strategy == "goal_decompose_route_synthesise"


def test_the_preview_sends_the_planning_tools_with_their_schemas(admin_client):
    section = SectionDefinitionFactory.create(planning_strategy="react")
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)

    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk]),
        {"params": "{}"},
    )

    tools = json.loads(response.context["request_json"])["tools"]
    assert [tool["name"] for tool in tools] == PLANNING_TOOLS
    assert all(tool["strict"] is True for tool in tools)
    assert PlanningStrategy.REACT.guidance in response.context["preview"].text


def test_planning_tools_attached_twice_are_a_duplicate(admin_client):
    section = SectionDefinitionFactory.create(planning_strategy="react")
    attach(
        section,
        ToolDefinitionFactory.create(
            name="planning_setup_plan", handler_key="planning.planning_setup_plan"
        ),
    )
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)

    with pytest.raises(ValidationError, match="Duplicate tool name"):
        services.preview_prompt(template=prompt)


def test_a_run_of_a_planning_section_records_the_plan():
    section = SectionDefinitionFactory.create(
        template="Plan, then finish.", planning_strategy="plan_act_reflect"
    )
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)

    session = session_services.start_session(prompt_ref=prompt.ref)

    assert session.status == "succeeded", session.error_message
    plans = StateChange.objects.filter(session=session, key="plan")
    assert plans.exists()
