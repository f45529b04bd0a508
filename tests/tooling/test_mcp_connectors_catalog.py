"""MCP connectors in the catalog (issue #24 item 20): the admin form takes a
connector instead of a server URL, and the name of the environment variable
holding its OAuth token; the token is read when the prompt is built, sent,
and never stored, shown or recorded."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from sessions_app import services as session_services
from sessions_app.models import AgentSession, ToolInvocation
from tests.tooling.factories import HostedToolDefinitionFactory
from tests.tooling.hosted_admin import add_hosted, prompt_with
from tooling import assembly, services
from tooling.forms.hosted import HostedToolDefinitionForm
from tooling.models import HostedToolDefinition
from tooling.runtime import PromptValidationError

pytestmark = pytest.mark.django_db

TOKEN = "ya29.drive-token-0042"
TOKEN_VAR = "WINK_MCP_TEST_DRIVE_TOKEN"
UNSET_VAR = "WINK_MCP_TEST_DRIVE_UNSET"

FIELDS = {
    "server_label": "drive",
    "connector_id": "connector_googledrive",
    "allowed_tools": "search",
    "require_approval": "never",
    "authorization_env": TOKEN_VAR,
}


@pytest.fixture(autouse=True)
def _environment(settings, monkeypatch):
    settings.WINK_PROVIDER = "offline"
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    monkeypatch.delenv(UNSET_VAR, raising=False)


def _connector(**config: Any) -> HostedToolDefinition:
    return HostedToolDefinitionFactory.create(
        name="drive",
        kind="mcp",
        description="Read the team's drive.",
        config={
            "server_label": "drive",
            "connector_id": "connector_googledrive",
            "authorization_env": TOKEN_VAR,
            **config,
        },
    )


def test_the_admin_saves_a_connector_and_its_token_variable(admin_client):
    response = add_hosted(admin_client, "mcp", FIELDS, name="drive")

    assert response.status_code == 302, response.content.decode()[-3000:]
    definition = HostedToolDefinition.objects.get()
    assert definition.config == {
        "server_label": "drive",
        "connector_id": "connector_googledrive",
        "allowed_tools": ["search"],
        "require_approval": "never",
        "authorization_env": TOKEN_VAR,
    }
    change = admin_client.get(
        reverse("admin:tooling_hostedtooldefinition_change", args=[definition.pk])
    ).content.decode()
    assert TOKEN_VAR in change
    assert TOKEN not in change


def test_the_token_is_sent_but_never_stored_shown_or_recorded(admin_client):
    prompt = prompt_with(_connector(), template="Find the quarterly memo.")

    sent = services.preview_prompt(template=prompt).request["tools"]
    preview = admin_client.post(
        reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk]),
        {"params": "{}"},
    )
    session = session_services.start_session(prompt_ref=prompt.ref, params={})

    assert sent[0]["authorization"] == TOKEN  # what the provider gets
    assert sent[0]["connector_id"] == "connector_googledrive"
    assert "server_url" not in sent[0]
    assert TOKEN not in preview.content.decode()
    assert session.status == "succeeded", session.error_message
    assert session.tools_payload[0]["authorization"] == "[redacted]"
    assert TOKEN not in json.dumps(session.tools_payload)
    assert TOKEN not in json.dumps(list(session.provider_calls.values("request")))
    call = ToolInvocation.objects.get(session=session, native=True)
    assert (call.kind, call.success) == ("mcp", True)
    assert call.params is not None and call.params["name"] == "search"
    assert "connector_googledrive" in call.rendered_output


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"server_url": "https://mcp.example.com/mcp"},
            "connector_id",
            "Give either server_url or connector_id, not both: a connector is run "
            "by OpenAI and has no URL.",
        ),
        (
            {"connector_id": "", "authorization_env": ""},
            "server_url",
            "server_url must be the http(s) URL of the MCP server (or give a "
            "connector_id for one of OpenAI's connectors).",
        ),
        (
            {"authorization_env": ""},
            "authorization_env",
            "connector_id 'connector_googledrive' needs authorization: the OAuth "
            "access token of the account the connector reads.",
        ),
        (
            {"authorization_env": "SECRET_KEY"},
            "authorization_env",
            "MCP authorization cannot read 'SECRET_KEY': MCP credentials read "
            "only the environment variables the operator allowed",
        ),
        (
            {"authorization_env": "lower_case"},
            "authorization_env",
            "MCP authorization needs an environment variable name matching "
            "^[A-Z_][A-Z0-9_]*$ (got 'lower_case').",
        ),
        (
            {"authorization_env": UNSET_VAR},
            "authorization_env",
            f"MCP authorization reads environment variable '{UNSET_VAR}', which is "
            "not set.",
        ),
        (
            {"connector_id": "connector_myspace"},
            "connector_id",
            "Select a valid choice.",
        ),
    ],
)
def test_the_form_puts_each_mistake_on_its_field(fields, field, message):
    data = {"name": "drive", "kind": "mcp", "description": "D.", **FIELDS, **fields}

    bound = HostedToolDefinitionForm(data=data)

    assert not bound.is_valid()
    assert field in bound.errors, bound.errors
    assert message in " ".join(str(e) for e in bound.errors[field])
    assert "__all__" not in bound.errors


def test_a_stored_token_is_refused_by_assembly():
    definition = _connector(authorization=TOKEN)

    with pytest.raises(PromptValidationError) as caught:
        assembly.build_hosted_tool(definition)

    assert caught.value.placeholder == "authorization_env"
    assert TOKEN not in caught.value.message


def test_a_token_variable_unset_at_run_time_refuses_the_run():
    prompt = prompt_with(_connector(authorization_env=UNSET_VAR))

    with pytest.raises(ValidationError) as caught:
        session_services.start_session(prompt_ref=prompt.ref, params={})

    assert (
        f"MCP authorization reads environment variable '{UNSET_VAR}', which is "
        "not set." in " ".join(caught.value.messages)
    )
    assert not AgentSession.objects.exists()
