"""MCP header secrets never reach the audit trail, whatever the provider echoes.

A session of a prompt with an MCP server whose Authorization header is read
from a WINK_MCP_ variable (a canary) runs against the real ``openai`` SDK over
an HTTP transport that answers with a recorded MCP response echoing the
request's ``tools`` (as a proxy may), after a first attempt whose error page
quotes the header. Nothing stored, and nothing the API, the session page or
the admin shows, holds the canary; the rest of the body is as received.
"""

from __future__ import annotations

import copy
import json
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.apps import apps
from django.urls import reverse

from sessions_app import services
from sessions_app.models import AgentSession, ProviderCall
from tests.runtime.fakes import FakeProvider
from tests.tooling.factories import (
    PromptTemplateFactory,
    SectionDefinitionFactory,
    add_sections,
)
from tooling.models import HostedToolDefinition, SectionHostedTool
from tooling.runtime.adapters.openai.redaction import REDACTED

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hosted_tools"
MASKED = {"Authorization": REDACTED}


@pytest.fixture
def token(monkeypatch) -> str:
    value = f"canary-{secrets.token_hex(16)}"
    monkeypatch.setenv("WINK_MCP_CRM_TOKEN", f"Bearer {value}")
    return value


@pytest.fixture
def prompt_ref(token) -> str:
    hosted = HostedToolDefinition.objects.create(
        name="deepwiki",
        kind="mcp",
        description="Documentation of public repositories.",
        config={
            "server_label": "deepwiki",
            "server_url": "https://mcp.deepwiki.com/mcp",
            "header_env": {"Authorization": "WINK_MCP_CRM_TOKEN"},
        },
    )
    section = SectionDefinitionFactory.create(key="wiki", template="Use the wiki.")
    SectionHostedTool.objects.create(section=section, hosted_tool=hosted)
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)
    return prompt.ref


def _recorded() -> dict[str, Any]:
    body: dict[str, Any] = json.loads((FIXTURES / "mcp_response.json").read_text())
    return body


def _all_rows() -> str:
    """Every row of the audit app, as text."""
    return "\n".join(
        repr(list(model._default_manager.values()))
        for model in apps.get_app_config("sessions_app").get_models()
    )


def test_echoed_mcp_headers_are_redacted_in_the_stored_provider_call(
    token, prompt_ref, user, api_client, client
):
    provider = FakeProvider(max_retries=1)

    def echo() -> dict[str, Any]:
        return {**_recorded(), "tools": provider.requests[-1]["tools"]}

    provider.replies += [
        httpx.Response(
            502,
            content=f"<h1>Bad gateway</h1> Authorization: Bearer {token}".encode(),
            headers={"retry-after-ms": "0"},
        ),
        echo,
    ]

    session = services.start_session(
        prompt_ref=prompt_ref, client=provider.client, user=user
    )

    assert session.status == AgentSession.Status.SUCCEEDED
    sent = provider.requests[-1]["tools"][0]
    assert sent["headers"] == {"Authorization": f"Bearer {token}"}  # it was sent
    call = ProviderCall.objects.get(session=session)
    assert call.request["tools"][0]["headers"] == MASKED
    assert call.response is not None
    assert call.response["tools"][0]["headers"] == MASKED
    expected = _recorded()
    expected["tools"] = [{**copy.deepcopy(sent), "headers": MASKED}]
    assert call.response == expected  # the rest as received
    assert isinstance(call.attempts, list)
    assert call.attempts[0]["error"] == (
        f"HTTP 502: <h1>Bad gateway</h1> Authorization: {REDACTED}"
    )
    assert token not in _all_rows()

    client.force_login(user)
    shown = [
        api_client.get(f"/api/sessions/{session.pk}/"),
        api_client.get(f"/api/sessions/{session.pk}/provider-calls/"),
        api_client.get(f"/api/sessions/{session.pk}/events/"),
        client.get(reverse("sessions_app:session-detail", args=[session.pk])),
    ]
    for page in shown:
        assert page.status_code == 200
        assert token not in page.content.decode()
    assert REDACTED in shown[1].content.decode()


def test_a_failed_call_echoing_the_header_is_redacted(token, prompt_ref, user):
    quoted = json.dumps({"error": {"message": f"bad header: Bearer {token}"}})
    provider = FakeProvider(
        httpx.Response(
            401, content=quoted.encode(), headers={"content-type": "application/json"}
        )
    )

    session = services.start_session(
        prompt_ref=prompt_ref, client=provider.client, user=user
    )

    assert session.status == AgentSession.Status.FAILED
    call = ProviderCall.objects.get(session=session)
    assert call.error == (
        f"The provider rejected the request: HTTP 401: bad header: {REDACTED}"
    )
    assert token not in _all_rows()
