"""A run executes the catalog revision its session started with, never the
live catalog: what was previewed is what runs."""

from __future__ import annotations

import dataclasses

import pytest
from django.urls import reverse

from sessions_app import services
from sessions_app.models import AgentSession
from tests.tooling.factories import (
    PromptTemplateFactory,
    SectionDefinitionFactory,
    ToolDefinitionFactory,
    add_sections,
    attach,
)
from tooling import assembly
from tooling import services as catalog
from tooling.demo import seed_demo_catalog
from tooling.handlers import registry
from tooling.models import CatalogRevision, PromptTemplate, SectionDefinition

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(settings):
    """Sessions are queued for a worker (nothing is sent: no broker in tests);
    the test then runs them itself, as a worker would."""
    settings.CELERY_TASK_ALWAYS_EAGER = False


def first_request_text(session: AgentSession) -> str:
    call = session.provider_calls.order_by("turn").first()
    assert call is not None
    return call.request["input"][0]["content"]


def test_revision_is_recorded_and_shared_by_identical_sessions():
    seed_demo_catalog()

    first = services.start_session(prompt_ref="demo/release", params={})
    second = services.start_session(prompt_ref="demo/release", params={})

    assert first.revision_id == second.revision_id
    assert first.revision_id is not None and len(first.revision_id) == 64
    assert CatalogRevision.objects.count() == 1
    revision = CatalogRevision.objects.get()
    assert revision.prompt_ref == "demo/release"
    assert revision.hash == CatalogRevision.hash_of(revision.data)


def test_revision_hash_changes_with_the_catalog():
    seed_demo_catalog()
    before = services.start_session(prompt_ref="demo/release", params={})
    edited = SectionDefinition.objects.filter(key="release.pipeline").update(
        template="Ship $service to production, carefully."
    )
    assert edited == 1

    after = services.start_session(prompt_ref="demo/release", params={})

    assert after.revision_id != before.revision_id


def test_editing_the_catalog_after_start_does_not_change_what_runs(queued):
    seed_demo_catalog()
    session = services.start_session(prompt_ref="demo/release", params={})
    assert session.status == AgentSession.Status.QUEUED
    snapshot = session.rendered_prompt
    edited = SectionDefinition.objects.filter(key="release.pipeline").update(
        template="Delete everything in $service."
    )
    assert edited == 1
    assert session.prompt is not None
    assert (
        "Delete everything" in catalog.preview_prompt(template=session.prompt).text
    )  # the live catalog did change

    finished = services.run_session(session_id=session.pk)

    assert finished.status == AgentSession.Status.SUCCEEDED, finished.error_message
    assert first_request_text(finished) == snapshot
    assert "Delete everything" not in first_request_text(finished)
    assert finished.tool_invocations.filter(name="deploy", success=True).exists()


def test_a_disabled_template_still_runs_its_started_sessions(queued):
    seed_demo_catalog()
    session = services.start_session(prompt_ref="demo/release", params={})
    assert session.prompt_id is not None
    disabled = PromptTemplate.objects.filter(pk=session.prompt_id).update(enabled=False)
    assert disabled == 1

    finished = services.run_session(session_id=session.pk)

    assert finished.status == AgentSession.Status.SUCCEEDED, finished.error_message


@pytest.fixture
def temporary_handler():
    key = "tests.temporary_count_words"
    registry.register(key, dataclasses.replace(registry.get("demo.count_words")))
    yield key
    if key in registry:
        registry.unregister(key)


def test_a_handler_no_longer_registered_fails_the_run_at_render(
    queued, temporary_handler
):
    tool = ToolDefinitionFactory.create(name="counter", handler_key=temporary_handler)
    section = SectionDefinitionFactory.create(key="count", template="Count words.")
    attach(section, tool)
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)
    session = services.start_session(prompt_ref=prompt.ref, params={})
    registry.unregister(temporary_handler)

    finished = services.run_session(session_id=session.pk)

    assert finished.status == AgentSession.Status.FAILED
    assert finished.error_phase == "render"
    assert finished.error_message == (
        "The catalog revision cannot be built: Handler "
        f"'{temporary_handler}' is not registered."
    )
    assert not finished.provider_calls.exists()


def test_revision_hash_is_shown_on_the_page_and_in_the_api(admin_client):
    seed_demo_catalog()
    session = services.start_session(prompt_ref="demo/release", params={})

    page = admin_client.get(session.get_absolute_url()).content.decode()
    data = admin_client.get(
        reverse("sessions_api:session-detail", args=[session.pk])
    ).json()
    listed = admin_client.get(reverse("sessions_api:session-list")).json()

    assert '<code id="revision-hash"' in page and session.revision_id in page
    assert data["revision"] == session.revision_id
    assert listed["results"][0]["revision"] == session.revision_id


def test_revision_holds_environment_variable_names_never_secrets(monkeypatch):
    monkeypatch.setenv("WINK_MCP_TOKEN_FOR_TEST", "s3cret-value")
    from tooling.models import HostedToolDefinition, SectionHostedTool

    hosted = HostedToolDefinition.objects.create(
        name="crm",
        kind="mcp",
        description="CRM tools.",
        config={
            "server_label": "crm",
            "server_url": "https://mcp.example.com/sse",
            "header_env": {"Authorization": "WINK_MCP_TOKEN_FOR_TEST"},
        },
    )
    section = SectionDefinitionFactory.create(key="crm", template="Use the CRM.")
    SectionHostedTool.objects.create(section=section, hosted_tool=hosted)
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)

    data = assembly.freeze_template(prompt)

    assert "s3cret-value" not in repr(data)
    frozen = data["sections"][0]["hosted_tools"][0]
    assert frozen["config"]["header_env"] == {
        "Authorization": "WINK_MCP_TOKEN_FOR_TEST"
    }
    built = assembly.thaw_prompt(data).declared_hosted_tools()[0]
    assert built.config.headers == {"Authorization": "s3cret-value"}


def test_revision_hash_ignores_key_order():
    assert CatalogRevision.hash_of({"a": 1, "b": [1, {"c": 2, "d": 3}]}) == (
        CatalogRevision.hash_of({"b": [1, {"d": 3, "c": 2}], "a": 1})
    )


def test_thawing_an_unknown_format_is_a_clear_error():
    from tooling.runtime import PromptValidationError

    with pytest.raises(PromptValidationError) as info:
        assembly.thaw_prompt({"format": 99})
    assert info.value.message == (
        "The catalog revision has an unknown format (expected 1)."
    )
