"""Catalog entries that slipped past the admin (imported, edited in the database)
are refused when a run starts: a clear 400, and nothing recorded."""

from __future__ import annotations

import json

import pytest

from sessions_app.models import AgentSession, ProviderCall
from tests.tooling.factories import (
    HostedToolDefinitionFactory,
    PromptTemplateFactory,
    SectionDefinitionFactory,
    add_sections,
)
from tooling.models import ModelCapability, SectionHostedTool

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _offline(settings):
    settings.WINK_PROVIDER = "offline"


def _prompt_with(kind: str, config: dict) -> str:
    tool = HostedToolDefinitionFactory.create(kind=kind, config=config)
    section = SectionDefinitionFactory.create()
    SectionHostedTool.objects.create(section=section, hosted_tool=tool)
    prompt = PromptTemplateFactory.create(model="gpt-5.4")
    add_sections(prompt, section)
    return prompt.ref


@pytest.mark.parametrize(
    ("kind", "config", "message"),
    [
        (
            "web_search",
            {"allowed_domains": [f"d{i}.example.com" for i in range(101)]},
            "A domain filter allows at most 100 domains (got 101).",
        ),
        (
            "web_search",
            {"allowed_domains": ["https://docs.python.org"]},
            "Domain 'https://docs.python.org' must be written without a scheme",
        ),
        (
            "web_search",
            {"country": "XX"},
            "'XX' is not an ISO 3166-1 alpha-2 country code",
        ),
        (
            "web_search",
            {"timezone": "Mars/Olympus"},
            "'Mars/Olympus' is not an IANA timezone",
        ),
        ("telepathy", {}, "Hosted tool kind 'telepathy' is not supported."),
    ],
)
def test_an_invalid_stored_hosted_tool_refuses_the_run(
    api_client, kind, config, message
):
    ref = _prompt_with(kind, config)

    response = api_client.post(
        "/api/sessions/", {"prompt": ref, "params": {}}, format="json"
    )

    assert response.status_code == 400
    assert message in json.dumps(response.json())
    assert not AgentSession.objects.exists()
    assert not ProviderCall.objects.exists()


def test_a_kind_the_model_does_not_support_refuses_the_run(api_client):
    ModelCapability.objects.create(model="gpt-5.4", hosted_kinds=["file_search"])
    ref = _prompt_with("web_search", {})

    response = api_client.post(
        "/api/sessions/", {"prompt": ref, "params": {}}, format="json"
    )

    assert response.status_code == 400
    assert (
        "Model 'gpt-5.4' does not support hosted tool kind 'web_search'"
        in json.dumps(response.json())
    )
    assert not AgentSession.objects.exists()
    assert not ProviderCall.objects.exists()
