"""MCP connectors (issue #24 item 20): OpenAI's connectors in place of a
server URL, with an OAuth ``authorization`` token.

Framework-free: ``pytest tests/runtime/test_mcp_connectors.py -p no:django``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.adapters.openai.codecs.mcp import OpenAIMcpCodec
from tooling.runtime.errors import PromptValidationError
from tooling.runtime.events import InMemorySink, PromptRendered
from tooling.runtime.hosted.mcp import (
    CONNECTOR_IDS,
    MCP_SPEC,
    McpConfig,
    mcp_template,
    mcp_tool,
)
from tooling.runtime.prompt import Prompt
from tooling.runtime.sections import MarkdownSection

from .fakes import MODEL, FakeProvider

TOKEN = "ya29.connector-token-0042"


def connector(**overrides: Any) -> McpConfig:
    values: dict[str, Any] = {
        "server_label": "drive",
        "connector_id": "connector_googledrive",
        "authorization": TOKEN,
    }
    values.update(overrides)
    return McpConfig(**values)


def test_the_documented_connectors_are_accepted() -> None:
    assert CONNECTOR_IDS == (
        "connector_dropbox",
        "connector_gmail",
        "connector_googlecalendar",
        "connector_googledrive",
        "connector_microsoftteams",
        "connector_outlookcalendar",
        "connector_outlookemail",
        "connector_sharepoint",
    )
    for name in CONNECTOR_IDS:
        config = connector(connector_id=f" {name} ")
        assert (config.connector_id, config.server_url) == (name, "")


def test_a_connector_is_sent_with_its_token_instead_of_a_url() -> None:
    tool = mcp_tool(connector(allowed_tools=["search"]), name="drive")

    assert OpenAIMcpCodec().serialize(tool) == {
        "type": "mcp",
        "server_label": "drive",
        "connector_id": "connector_googledrive",
        "allowed_tools": ["search"],
        "require_approval": "never",
        "authorization": TOKEN,
    }


def test_a_server_url_may_carry_an_authorization_token_too() -> None:
    config = McpConfig(
        server_label="crm", server_url="https://crm.example/mcp", authorization=TOKEN
    )

    wire = OpenAIMcpCodec().serialize(mcp_tool(config))

    assert (wire["server_url"], wire["authorization"]) == (
        "https://crm.example/mcp",
        TOKEN,
    )
    assert "connector_id" not in wire


@pytest.mark.parametrize(
    ("overrides", "placeholder", "message"),
    [
        (
            {"server_url": "https://mcp.example.com/mcp"},
            "connector_id",
            "Give either server_url or connector_id, not both: a connector is run "
            "by OpenAI and has no URL.",
        ),
        (
            {"connector_id": None, "authorization": None},
            "server_url",
            "server_url must be the http(s) URL of the MCP server (or give a "
            "connector_id for one of OpenAI's connectors).",
        ),
        (
            {"connector_id": "connector_myspace"},
            "connector_id",
            "connector_id 'connector_myspace' is not one of OpenAI's connectors: "
            + ", ".join(CONNECTOR_IDS)
            + ".",
        ),
        (
            {"connector_id": ["connector_gmail"]},
            "connector_id",
            "connector_id ['connector_gmail'] is not one of OpenAI's connectors: "
            + ", ".join(CONNECTOR_IDS)
            + ".",
        ),
        (
            {"authorization": None},
            "authorization",
            "connector_id 'connector_googledrive' needs authorization: the OAuth "
            "access token of the account the connector reads.",
        ),
        (
            {"headers": {"Authorization": "Bearer x"}},
            "headers",
            "headers are sent to a server URL; a connector takes its access token "
            "in authorization instead.",
        ),
    ],
)
def test_connector_rules(
    overrides: dict[str, Any], placeholder: str, message: str
) -> None:
    with pytest.raises(PromptValidationError) as caught:
        connector(**overrides)

    assert caught.value.message == message
    assert caught.value.placeholder == placeholder


@pytest.mark.parametrize("token", ["", "   ", "a\nb", "a\r\nb", "a\x00b", 42])
def test_an_unusable_token_is_refused_without_echoing_it(token: Any) -> None:
    with pytest.raises(PromptValidationError) as caught:
        connector(authorization=token)

    assert caught.value.message == (
        "authorization must be a non-blank access token without line breaks."
    )
    assert caught.value.placeholder == "authorization"


def test_the_token_stays_out_of_repr() -> None:
    config = connector()

    assert TOKEN not in repr(config)
    assert TOKEN not in repr(mcp_tool(config))


def test_the_section_names_the_connector() -> None:
    assert "It is OpenAI's connector connector_googledrive." in mcp_template(
        connector()
    )


def test_the_catalog_stores_the_token_variable_never_the_token() -> None:
    assert MCP_SPEC.option("connector_id") is not None
    option = MCP_SPEC.option("authorization_env")
    assert option is not None
    assert (option.shape, option.config_field) == ("secret_env", "authorization")
    with pytest.raises(PromptValidationError) as caught:
        MCP_SPEC.config_from(
            {"server_label": "drive", "connector_id": "connector_gmail"}
            | {"authorization": TOKEN}
        )
    assert caught.value.placeholder == "authorization_env"
    assert TOKEN not in caught.value.message


def test_the_recorded_request_masks_the_token() -> None:
    provider = FakeProvider(
        {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "output": [],
            "usage": None,
        }
    )
    sink = InMemorySink()
    prompt = Prompt(
        ns="tests",
        key="drive",
        name="drive",
        sections=[
            MarkdownSection(
                key="task",
                title="Task",
                template="Find the memo.",
                hosted_tools=[mcp_tool(connector(), name="drive")],
            )
        ],
    )

    OpenAIAdapter(client=provider.client, model=MODEL).evaluate(prompt, sink=sink)

    assert provider.requests[0]["tools"][0]["authorization"] == TOKEN  # sent
    (rendered,) = sink.of_type(PromptRendered)
    assert rendered.tools_payload[0]["authorization"] == "[redacted]"
    assert TOKEN not in repr(sink.events)
