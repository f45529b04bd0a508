"""Session trust levels: who may ask for which level, and which hosted tools a
session at that level is offered (the rest are withheld and shown as such)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from sessions_app import services
from sessions_app.models import AgentSession, ProviderCall, ToolInvocation
from tests.sessions_app.factories import UserFactory
from tests.tooling.factories import (
    HostedToolDefinitionFactory,
    PromptTemplateFactory,
    SectionDefinitionFactory,
    add_sections,
)
from tooling.models import HostedToolDefinition, SectionHostedTool

pytestmark = pytest.mark.django_db

SESSIONS_URL = "/api/sessions/"


@pytest.fixture(autouse=True)
def _offline(settings):
    settings.WINK_PROVIDER = "offline"


def _prompt(*levels: str):
    """A prompt with one web search tool per given minimum trust level."""
    section = SectionDefinitionFactory.create(template="Find the refund policy.")
    for position, level in enumerate(levels):
        tool = HostedToolDefinitionFactory.create(
            name=f"search_{level}",
            kind="web_search",
            config={"allowed_domains": ["docs.python.org"]},
            min_trust_level=level,
        )
        SectionHostedTool.objects.create(
            section=section, hosted_tool=tool, position=position
        )
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)
    return prompt


def _start(api_client, prompt, **extra):
    return api_client.post(
        SESSIONS_URL, {"prompt": prompt.ref, "params": {}, **extra}, format="json"
    )


def test_untrusted_session_is_not_offered_standard_tools(api_client):
    prompt = _prompt("untrusted", "standard")

    response = _start(api_client, prompt, trust_level="untrusted")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["trust_level"] == "untrusted"
    assert body["status"] == "succeeded"
    assert len(body["tools_payload"]) == 1
    assert body["withheld_tools"] == [
        {
            "name": "search_standard",
            "kind": "web_search",
            "min_trust_level": "standard",
            "reason": "Hosted tool 'search_standard' (web_search) needs trust level "
            "'standard'; this session runs at 'untrusted'.",
        }
    ]
    sent = ProviderCall.objects.get(session_id=body["id"], turn=1).request["tools"]
    assert sent == [
        {"type": "web_search", "filters": {"allowed_domains": ["docs.python.org"]}}
    ]
    names = {inv["name"] for inv in body["tool_invocations"] if inv["native"]}
    assert names == {"search_untrusted"}


def test_trust_level_defaults_to_standard(api_client):
    prompt = _prompt("standard", "trusted")

    body = _start(api_client, prompt).json()

    assert body["trust_level"] == "standard"
    assert [tool["name"] for tool in body["withheld_tools"]] == ["search_trusted"]


def test_trusted_session_needs_the_permission(api_client):
    prompt = _prompt("trusted")

    response = _start(api_client, prompt, trust_level="trusted")

    assert response.status_code == 403
    assert response.json() == {
        "detail": "You may not start sessions at trust level 'trusted'.",
        "code": "permission_denied",
        "errors": {},
    }
    assert not AgentSession.objects.exists()


def test_trusted_session_with_the_permission_is_offered_trusted_tools(api_client):
    user = UserFactory.create()
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["start_session", "start_trusted_session"]
        )
    )
    api_client.force_authenticate(user=user)
    prompt = _prompt("trusted")

    response = _start(api_client, prompt, trust_level="trusted")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["withheld_tools"] == []
    assert ToolInvocation.objects.filter(
        session_id=body["id"], name="search_trusted", native=True
    ).exists()


def test_unknown_trust_level_is_a_400(api_client):
    prompt = _prompt("standard")

    response = _start(api_client, prompt, trust_level="root")

    assert response.status_code == 400
    assert response.json()["errors"] == {
        "trust_level": ['"root" is not a valid choice.']
    }
    assert not AgentSession.objects.exists()


def test_tool_choice_forcing_a_withheld_tool_is_refused(api_client):
    prompt = _prompt("trusted")
    prompt.tool_choice = "tool:search_trusted"
    prompt.save()

    response = _start(api_client, prompt)

    assert response.status_code == 400
    assert "tool_choice names 'search_trusted', which is withheld" in json.dumps(
        response.json()
    )
    assert not AgentSession.objects.exists()


def test_session_page_shows_the_trust_level_and_withheld_tools(admin_client):
    prompt = _prompt("trusted")

    session = services.start_session(prompt_ref=prompt.ref, trust_level="untrusted")

    page = admin_client.get(session.get_absolute_url()).content.decode()

    assert "<dt>Trust level</dt><dd>Untrusted</dd>" in page
    assert (
        "Hosted tool &#x27;search_trusted&#x27; (web_search) needs trust level "
        "&#x27;trusted&#x27;" in page
    )


# -- the admin ----------------------------------------------------------------------


def test_admin_hosted_tool_form_saves_the_minimum_trust_level(admin_client):
    response = admin_client.post(
        reverse("admin:tooling_hostedtooldefinition_add"),
        {
            "name": "docs",
            "kind": "web_search",
            "description": "Search the docs.",
            "min_trust_level": "trusted",
            "allowed_domains": "docs.python.org",
            "allow_live_access": "on",
            "enabled": "on",
        },
    )

    assert response.status_code == 302, response.content.decode()[-2000:]
    assert HostedToolDefinition.objects.get().min_trust_level == "trusted"


def test_admin_preview_at_a_lower_trust_level_shows_what_is_withheld(admin_client):
    prompt = _prompt("untrusted", "standard")
    url = reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk])

    response = admin_client.post(url, {"params": "{}", "trust_level": "untrusted"})

    assert response.status_code == 200
    assert len(json.loads(response.context["request_json"])["tools"]) == 1
    page = response.content.decode()
    assert 'id="withheld-tools"' in page
    assert "Hosted tool &#x27;search_standard&#x27;" in page


def test_admin_preview_run_at_trusted_needs_the_permission(client):
    staff = UserFactory.create(is_staff=True)
    staff.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["view_prompttemplate", "start_session"]
        )
    )
    client.force_login(staff)
    prompt = _prompt("trusted")
    url = reverse("admin:tooling_prompttemplate_run", args=[prompt.pk])

    response = client.post(
        url, {"params": "{}", "trust_level": "trusted", "run": "Run"}
    )

    assert response.status_code == 200
    assert "You may not start sessions at trust level" in response.content.decode()
    assert not AgentSession.objects.exists()


def test_admin_preview_offers_no_run_button_to_view_only_staff(client):
    staff = UserFactory.create(is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_prompttemplate"))
    client.force_login(staff)
    prompt = _prompt("standard")
    preview = reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk])
    run = reverse("admin:tooling_prompttemplate_run", args=[prompt.pk])

    page = client.get(preview)
    refused = client.post(run, {"params": "{}", "run": "Run"})

    assert page.status_code == 200 and 'id="request-json"' in page.content.decode()
    assert run not in page.content.decode()
    assert refused.status_code == 403
    assert not AgentSession.objects.exists()
