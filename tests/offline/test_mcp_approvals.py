"""The offline provider's MCP approvals: a server that requires approval gets an
``mcp_approval_request``; the next request's ``mcp_approval_response`` decides
whether the ``mcp_call`` is played; malformed responses are refused like the
real API refuses them."""

from __future__ import annotations

from typing import Any

import pytest

from tooling.offline import OfflineRequestError, ScriptedModel

CRM: dict[str, Any] = {
    "type": "mcp",
    "server_label": "crm",
    "server_url": "https://crm.example.com/mcp",
    "allowed_tools": ["delete_customer"],
    "require_approval": "always",
}
USER = {"role": "user", "content": "Delete customer 42?"}


def respond(tools: list[Any], *items: dict[str, Any]) -> dict[str, Any]:
    request = {"model": "gpt-5.4", "input": [USER, *items], "tools": tools}
    return ScriptedModel().respond(request)


def asked() -> dict[str, Any]:
    output = respond([CRM])["output"]
    assert [item["type"] for item in output] == [
        "mcp_list_tools",
        "mcp_approval_request",
    ]  # no message: the model waits for the answer
    return dict(output[1])


def answer(request: dict[str, Any], approve: Any) -> dict[str, Any]:
    return {
        "type": "mcp_approval_response",
        "approval_request_id": request["id"],
        "approve": approve,
    }


def test_a_server_that_requires_approval_asks_first() -> None:
    request = asked()
    assert request["server_label"] == "crm"
    assert request["name"] == "delete_customer"
    assert request["id"].startswith("mcpr_")
    assert asked() == request  # deterministic


def test_a_server_named_under_always_tool_names_asks_for_that_tool() -> None:
    rule = {"always": {"tool_names": ["delete_customer"]}}
    output = respond([{**CRM, "require_approval": rule}])["output"]
    assert output[1]["type"] == "mcp_approval_request"
    other = {"always": {"tool_names": ["something_else"]}}
    output = respond([{**CRM, "require_approval": other}])["output"]
    assert output[1]["type"] == "mcp_call"


def test_an_approval_plays_the_call_pointing_at_the_request() -> None:
    request = asked()
    output = respond([CRM], request, answer(request, True))["output"]
    call, message = output
    assert call["type"] == "mcp_call"
    assert call["approval_request_id"] == request["id"]
    assert call["status"] == "completed"
    text = message["content"][0]["text"]
    assert "mcp crm.delete_customer approved" in text
    assert "mcp crm.delete_customer completed" in text


def test_a_denial_plays_no_call_and_says_so() -> None:
    request = asked()
    output = respond([CRM], request, answer(request, False))["output"]
    assert [item["type"] for item in output] == ["message"]
    assert "mcp crm.delete_customer not approved" in output[0]["content"][0]["text"]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            {
                "type": "mcp_approval_response",
                "approval_request_id": "mcpr_unknown",
                "approve": True,
            },
            "No MCP approval request found",
        ),
        (
            {"type": "mcp_approval_response", "approve": True},
            "needs an approval_request_id",
        ),
    ],
)
def test_malformed_approval_responses_are_refused(
    item: dict[str, Any], message: str
) -> None:
    with pytest.raises(OfflineRequestError, match=message):
        respond([CRM], item)


def test_an_approve_that_is_not_a_boolean_is_refused() -> None:
    request = asked()
    with pytest.raises(OfflineRequestError, match="boolean 'approve'"):
        respond([CRM], request, answer(request, "yes"))
