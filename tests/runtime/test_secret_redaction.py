"""A run's secrets never reach an event, whatever the provider echoes.

The MCP header values and the API key are masked in every recorded request,
response, error and attempt, inside any string at any depth, while the rest of
each body stays as received. Framework-free:
``pytest tests/runtime/test_secret_redaction.py -p no:django``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import secrets
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.runtime.fakes import FakeProvider, function_call, message, response
from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.adapters.openai.codecs.base import JsonObject
from tooling.runtime.adapters.openai.redaction import (
    REDACTED,
    SecretRedactor,
    redact_tools,
    tool_secrets,
)
from tooling.runtime.context import ToolContext
from tooling.runtime.errors import PromptEvaluationError
from tooling.runtime.events import (
    InMemorySink,
    PromptFailed,
    ProviderCallCompleted,
    ProviderCallFailed,
)
from tooling.runtime.hosted.mcp import McpConfig, McpSection
from tooling.runtime.prompt import Prompt
from tooling.runtime.results import ToolResult
from tooling.runtime.sections import MarkdownSection
from tooling.runtime.tools import Tool

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hosted_tools"


def _canary(name: str) -> str:
    return f"{name}-{secrets.token_hex(12)}"


def _prompt(token: str) -> Prompt:
    config = McpConfig(
        server_label="deepwiki",
        server_url="https://mcp.deepwiki.com/mcp",
        headers={"Authorization": f"Bearer {token}", "X-Tenant": "acme-tenant"},
    )
    task = MarkdownSection(title="Task", key="task", template="Which Django is LTS?")
    return Prompt(ns="tests", key="mcp", sections=[task, McpSection(config)])


def _mcp_response() -> dict[str, Any]:
    body: dict[str, Any] = json.loads((FIXTURES / "mcp_response.json").read_text())
    return body


def _echoing(provider: FakeProvider, body: dict[str, Any]) -> Any:
    """A reply that echoes the request's ``tools`` (as a proxy may)."""

    def reply() -> dict[str, Any]:
        return {**body, "tools": provider.requests[-1]["tools"]}

    return reply


def _leaks(events: list[Any], *values: str) -> list[str]:
    return [type(e).__name__ for e in events for v in values if v in repr(e)]


def test_adapter_redacts_mcp_headers_echoed_in_the_response() -> None:
    token = _canary("mcp")
    provider = FakeProvider()
    provider.replies.append(_echoing(provider, _mcp_response()))
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model="gpt-5.4")

    adapter.evaluate(_prompt(token), sink=sink)

    sent = provider.requests[0]["tools"][0]["headers"]
    assert sent == {"Authorization": f"Bearer {token}", "X-Tenant": "acme-tenant"}
    assert _leaks(sink.events, token, "acme-tenant") == []
    (call,) = sink.of_type(ProviderCallCompleted)
    masked = {"Authorization": REDACTED, "X-Tenant": REDACTED}
    assert call.request["tools"][0]["headers"] == masked
    assert call.response["tools"][0]["headers"] == masked
    # everything else is as received
    expected = _mcp_response()
    expected["tools"] = copy.deepcopy(provider.requests[0]["tools"])
    expected["tools"][0]["headers"] = masked
    assert json.loads(json.dumps(call.response)) == expected


def test_adapter_redacts_a_token_quoted_inside_larger_text() -> None:
    token = _canary("mcp")
    provider = FakeProvider(
        response(message(f"The server said: invalid credentials {token} (401)."))
    )
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model="gpt-5.4")

    answer = adapter.evaluate(_prompt(token), sink=sink)

    assert _leaks(sink.events, token) == []
    assert answer.text == f"The server said: invalid credentials {REDACTED} (401)."
    (call,) = sink.of_type(ProviderCallCompleted)
    assert call.response["output"][0]["content"][0]["text"] == answer.text


def test_adapter_redacts_the_api_key_echoed_by_the_provider() -> None:
    key = f"sk-{_canary('key')}"
    captured: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        captured.append(json.loads(request.content))
        echoed = response(message(f"You sent {request.headers['authorization']}."))
        return httpx.Response(200, json=echoed)

    client = openai.OpenAI(
        api_key=key,
        base_url="http://provider.test/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),  # type: ignore[arg-type]
        max_retries=0,
    )
    sink = InMemorySink()
    answer = OpenAIAdapter(client=client, model="gpt-5.4").evaluate(
        _prompt(_canary("mcp")), sink=sink
    )
    assert answer.text == f"You sent Bearer {REDACTED}."
    assert _leaks(sink.events, key) == []


def test_adapter_redacts_secrets_in_errors_attempts_and_the_failure() -> None:
    token = _canary("mcp")
    echoed = json.dumps({"error": {"message": f"upstream refused Bearer {token}"}})
    provider = FakeProvider(
        httpx.Response(
            502,
            content=f"<html>proxy: Authorization: Bearer {token}</html>".encode(),
            headers={"retry-after-ms": "0"},
        ),
        httpx.Response(
            400, content=echoed.encode(), headers={"content-type": "application/json"}
        ),
        max_retries=1,
    )
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model="gpt-5.4")

    with pytest.raises(PromptEvaluationError) as info:
        adapter.evaluate(_prompt(token), sink=sink)

    assert len(provider.requests) == 2
    assert token not in str(info.value)
    assert token not in repr(info.value.provider_payload)
    assert _leaks(sink.events, token) == []
    (failed,) = sink.of_type(ProviderCallFailed)
    # the header's whole value ("Bearer <token>") is one secret
    assert failed.error == (
        f"The provider rejected the request: HTTP 400: upstream refused {REDACTED}"
    )
    first, second = failed.attempts
    assert first.error == f"HTTP 502: <html>proxy: Authorization: {REDACTED}</html>"
    assert second.error == f"HTTP 400: upstream refused {REDACTED}"
    (end,) = sink.of_type(PromptFailed)
    assert end.message == failed.error


def _pieces(secret: str, length: int = 8) -> list[str]:
    """Every run of ``length`` characters of ``secret``: a cut-off part of it."""
    return [secret[i : i + length] for i in range(len(secret) - length + 1)]


@pytest.mark.parametrize(
    ("status", "pad", "content_type"),
    [
        # an error page quoting the header where its 500-character excerpt ends
        (401, 455, "text/html"),
        # a 200 that is not JSON (a proxy cut an echo of the tools short)
        (200, 255, "application/json"),
    ],
)
def test_adapter_redacts_a_secret_before_an_error_excerpt_cuts_it(
    status: int, pad: int, content_type: str
) -> None:
    token = _canary("mcp")
    body = f"{'x' * pad} Authorization: Bearer {token} {'y' * 300}"
    provider = FakeProvider(
        httpx.Response(
            status, content=body.encode(), headers={"content-type": content_type}
        )
    )
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model="gpt-5.4")

    with pytest.raises(PromptEvaluationError) as info:
        adapter.evaluate(_prompt(token), sink=sink)

    (failed,) = sink.of_type(ProviderCallFailed)
    assert failed.error.endswith("\u2026")  # the excerpt was cut
    assert _leaks(sink.events, *_pieces(token)) == []
    assert not any(piece in str(info.value) for piece in _pieces(token))
    assert f"Authorization: {REDACTED} yyy" in failed.error  # masked, then cut
    assert failed.attempts[0].error is not None
    assert f"Authorization: {REDACTED}" in failed.attempts[0].error


@dataclasses.dataclass(frozen=True)
class WhoamiParams:
    server: str


@dataclasses.dataclass(frozen=True)
class Whoami:
    said: str


def test_adapter_redacts_a_secret_the_history_carries_in_the_recorded_request() -> None:
    # A local tool's output holding the token goes back to the model in the
    # next request; the recorded request (its new input items) masks it.
    token = _canary("mcp")

    def whoami(params: WhoamiParams, *, context: ToolContext) -> ToolResult[Whoami]:
        return ToolResult.ok(Whoami(f"signed in with Bearer {token}"), "Signed in.")

    tool = Tool(name="whoami", description="Who am I.", handler=whoami)
    prompt = _prompt(token)
    prompt = Prompt(
        ns="tests",
        key="mcp",
        sections=[
            MarkdownSection(title="Who", key="who", template="Who?", tools=[tool]),
            *prompt.sections,
        ],
    )
    provider = FakeProvider(
        response(function_call("whoami", {"server": "deepwiki"})),
        response(message("Done.")),
    )
    sink = InMemorySink()

    OpenAIAdapter(client=provider.client, model="gpt-5.4").evaluate(prompt, sink=sink)

    sent = provider.requests[1]["input"][-1]
    assert sent["type"] == "function_call_output"
    assert token in json.dumps(sent)  # the model got what the tool returned
    second = sink.of_type(ProviderCallCompleted)[1]
    (recorded,) = [
        item
        for item in second.request["input"]
        if item.get("type") == "function_call_output"
    ]
    assert token not in json.dumps(recorded)
    assert REDACTED in json.dumps(recorded)


def test_adapter_redacts_a_recorded_response_a_resumed_run_replays() -> None:
    from tooling.runtime.adapters.openai import RunRecord

    token = _canary("mcp")
    recorded = response(message(f"token {token}"), id="resp_recorded")
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=FakeProvider().client, model="gpt-5.4")

    answer = adapter.evaluate(
        _prompt(token), sink=sink, resume=RunRecord(responses=(recorded,))
    )

    assert answer.text == f"token {REDACTED}"
    assert _leaks(sink.events, token) == []


# -- SecretRedactor ---------------------------------------------------------------


def test_secret_redactor_replaces_secrets_at_any_depth_keys_included() -> None:
    redact = SecretRedactor(["Bearer tok-123456789", None, "abc"])
    value = JsonObject(
        a=[{"x": ("see Bearer tok-123456789!", 3)}],
        b="only tok-123456789",
        **{"tok-123456789": "abc"},
    )
    redacted = redact(value)
    assert redacted == {
        "a": [{"x": ("see [redacted]!", 3)}],
        "b": "only [redacted]",
        "[redacted]": "abc",  # shorter than 4 characters: not a secret
    }
    assert isinstance(redacted, JsonObject)
    assert isinstance(redacted["a"][0], dict)
    assert value["b"] == "only tok-123456789"  # the original is unchanged


def test_secret_redactor_returns_the_same_object_when_nothing_matched() -> None:
    value = {"a": ["x", {"b": "y"}]}
    assert SecretRedactor(["secret-value"])(value) is value
    assert SecretRedactor([])(value) is value
    assert not SecretRedactor(["abc", ""])


def test_tool_secrets_are_the_credentials_redact_tools_masks() -> None:
    tools: list[dict[str, Any]] = [
        {
            "type": "mcp",
            "headers": {
                "Authorization": "Bearer x",
                "X-Api-Key": "k",
                "X-Auth-Token": "t",
                "X-Api-Version": "2025-06-18",
            },
        },
        {"type": "mcp", "authorization": "oauth-token"},
        {"type": "web_search"},
    ]
    # a header named like a credential, and every authorization; a version
    # header is masked where the request carries it (redact_tools), but not
    # looked for in the rest of a body
    assert tool_secrets(tools) == ["Bearer x", "k", "t", "oauth-token"]
    assert redact_tools(tools)[0]["headers"]["X-Api-Version"] == REDACTED


@dataclasses.dataclass(frozen=True)
class LookupParams:
    query: str


@dataclasses.dataclass(frozen=True)
class Count:
    orders: int


def test_a_header_that_is_no_credential_is_not_masked_in_what_the_run_acts_on() -> None:
    """Masking an ordinary header's value (a version) wherever it appears would
    change the model's arguments and answer: only credentials are."""
    token = _canary("mcp")
    seen: list[str] = []

    def lookup(params: LookupParams, *, context: ToolContext) -> ToolResult[Count]:
        seen.append(params.query)
        return ToolResult.ok(Count(3))

    config = McpConfig(
        server_label="deepwiki",
        server_url="https://mcp.deepwiki.com/mcp",
        headers={"Authorization": f"Bearer {token}", "X-Api-Version": "2025-06-18"},
    )
    tool = Tool(name="lookup", description="Look up.", handler=lookup)
    task = MarkdownSection(title="Task", key="task", template="Count.", tools=[tool])
    prompt = Prompt(ns="tests", key="mcp", sections=[task, McpSection(config)])
    provider = FakeProvider(
        response(function_call("lookup", {"query": "orders since 2025-06-18"})),
        response(message(f"3 orders since 2025-06-18 (token {token}).")),
    )
    sink = InMemorySink()

    answer = OpenAIAdapter(client=provider.client, model="gpt-5.4").evaluate(
        prompt, sink=sink
    )

    assert seen == ["orders since 2025-06-18"]
    assert answer.text == f"3 orders since 2025-06-18 (token {REDACTED})."
    assert _leaks(sink.events, token) == []
    recorded = sink.of_type(ProviderCallCompleted)[0].request["tools"]
    assert recorded[-1]["headers"] == {
        "Authorization": REDACTED,
        "X-Api-Version": REDACTED,
    }


def test_secret_redactor_finds_secrets_json_would_escape() -> None:
    secret = 'pa"ss\\word\u00e9'
    value = {"a": [f"x {secret} y"], "b": 1.5, "c": None}
    assert SecretRedactor([secret])(value) == {
        "a": ["x [redacted] y"],
        "b": 1.5,
        "c": None,
    }
