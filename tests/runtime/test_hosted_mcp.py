"""Hosted mcp: config validation, wire JSON, SDK parsing, adapter loop.

Framework-free: ``pytest tests/runtime/test_hosted_mcp.py -p no:django``.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.adapters.openai.codecs import default_codecs
from tooling.runtime.adapters.openai.codecs.mcp import (
    OpenAIMcpCodec,
    format_mcp_error,
    mcp_approval_request,
)
from tooling.runtime.errors import ApprovalPending, PromptValidationError
from tooling.runtime.events import ApprovalRequested, InMemorySink, ToolInvoked
from tooling.runtime.hosted import mcp as mcp_module
from tooling.runtime.hosted.base import HostedTool
from tooling.runtime.hosted.mcp import (
    McpApprovalRequest,
    McpConfig,
    McpResult,
    McpSection,
    McpToolCall,
    mcp_tool,
)
from tooling.runtime.prompt import Prompt, ToolChoice
from tooling.runtime.sections import MarkdownSection

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hosted_tools"
CODEC = OpenAIMcpCodec()
SECRET = "Bearer sk-mcp-very-secret-token"
DEEPWIKI = McpConfig(
    server_label="deepwiki",
    server_url="https://mcp.deepwiki.com/mcp",
    allowed_tools=("ask_question", "read_wiki_structure"),
    server_description="Documentation of public GitHub repositories.",
)


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def make_client(body: dict[str, Any], captured: list[dict[str, Any]]) -> openai.OpenAI:
    def handler(request: httpx.Request) -> httpx.Response:
        captured.append(json.loads(request.content))
        return httpx.Response(200, json=body, headers={"x-request-id": "req_test"})

    return openai.OpenAI(
        api_key="sk-test",
        base_url="http://test.invalid/v1",
        # The SDK takes an httpx client too, though typed for httpx2's.
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),  # type: ignore[arg-type]
        max_retries=0,
    )


def sdk_output(name: str) -> list[Any]:
    """The fixture's ``output`` as parsed by the real SDK."""
    response = make_client(load(name), []).responses.create(model="gpt-5.4", input="x")
    return list(response.output)


def config(**overrides: Any) -> McpConfig:
    values: dict[str, Any] = {
        "server_label": "deepwiki",
        "server_url": "https://mcp.deepwiki.com/mcp",
    }
    values.update(overrides)
    return McpConfig(**values)


# -- configuration -------------------------------------------------------------


def test_minimal_config_defaults() -> None:
    minimal = config()
    assert minimal.allowed_tools == ()
    assert minimal.require_approval == "never"
    assert dict(minimal.headers) == {} and minimal.server_description is None


@pytest.mark.parametrize(
    "label", ["", "dee pwiki", "wiki.docs", "x" * 65, "wiki/1", None, 7]
)
def test_server_label_rule(label: Any) -> None:
    with pytest.raises(
        PromptValidationError, match=r"must match \^\[A-Za-z0-9_-\]"
    ) as info:
        config(server_label=label)
    assert info.value.placeholder == "server_label"


@pytest.mark.parametrize("label", ["deepwiki", "CRM_prod-2", "x" * 64])
def test_server_label_accepted(label: str) -> None:
    assert config(server_label=label).server_label == label


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("", "must be the http\\(s\\) URL"),
        (None, "must be the http\\(s\\) URL"),
        (
            "ftp://mcp.example.com",
            "must be an https:// \\(or http://\\) URL with a host",
        ),
        ("mcp.example.com/mcp", "must be an https://"),
        ("https://", "must be an https://"),
        ("https://mcp.example.com/a b", "must not contain whitespace"),
        ("https://mcp.example.com:99999/mcp", "is not a valid URL"),
        ("https://user:pw@mcp.example.com/mcp", "must not embed credentials"),
    ],
)
def test_server_url_rules(url: Any, match: str) -> None:
    with pytest.raises(PromptValidationError, match=match) as info:
        config(server_url=url)
    assert info.value.placeholder == "server_url"


def test_server_url_accepts_http_and_strips() -> None:
    assert config(server_url=" http://localhost:8080/mcp ").server_url == (
        "http://localhost:8080/mcp"
    )


def test_allowed_tools_rules() -> None:
    assert config(allowed_tools=[" a ", "b", "a"]).allowed_tools == ("a", "b")
    assert config(allowed_tools="ask_question").allowed_tools == ("ask_question",)
    for bad in (("",), (" ",), (1,)):
        with pytest.raises(PromptValidationError, match="non-blank tool names"):
            config(allowed_tools=bad)
    with pytest.raises(PromptValidationError, match="list of tool names"):
        config(allowed_tools=None)


def test_require_approval_rule() -> None:
    assert config(require_approval="always").require_approval == "always"
    with pytest.raises(
        PromptValidationError, match="must be 'never' or 'always'"
    ) as info:
        config(require_approval={"never": {"tool_names": ["x"]}})
    assert info.value.placeholder == "require_approval"


def test_headers_are_immutable_and_kept_out_of_repr() -> None:
    source = {"Authorization": SECRET}
    secured = config(headers=source)
    source["Authorization"] = "changed"
    assert dict(secured.headers) == {"Authorization": SECRET}
    with pytest.raises(TypeError):
        secured.headers["X-Other"] = "1"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        secured.headers = {}  # type: ignore[misc]
    assert SECRET not in repr(secured) and "headers" not in repr(secured)
    assert SECRET not in repr(mcp_tool(secured))
    assert SECRET not in str(McpSection(secured).hosted_tools())


@pytest.mark.parametrize(
    ("headers", "match"),
    [
        ({"Bad Header": "x"}, "'Bad Header' is not a valid HTTP header name"),
        ({"": "x"}, "is not a valid HTTP header name"),
        ({"X-Token": 5}, "Header 'X-Token' must have a string value"),
        (
            {"X-Token": "a\r\nX-Evil: 1"},
            "Header 'X-Token' must have a string value without",
        ),
        ({"X-Token": "a", "x-token": "b"}, "given twice"),
        (["Authorization", "x"], "headers must be a mapping"),
    ],
)
def test_header_rules(headers: Any, match: str) -> None:
    with pytest.raises(PromptValidationError, match=match) as info:
        config(headers=headers)
    assert info.value.placeholder == "headers"


def test_header_errors_never_echo_the_value() -> None:
    with pytest.raises(PromptValidationError) as info:
        config(headers={"Authorization": SECRET + "\n"})
    assert "very-secret" not in str(info.value)


def test_server_description() -> None:
    assert config(server_description="  Docs  ").server_description == "Docs"
    assert config(server_description="   ").server_description is None
    with pytest.raises(
        PromptValidationError, match="server_description must be a string"
    ):
        config(server_description=3)


# -- factory and section -------------------------------------------------------


def test_factory_and_section() -> None:
    tool = mcp_tool(DEEPWIKI)
    assert (tool.kind, tool.name) == ("mcp", "mcp")
    assert tool.description == "Call the tools of the remote MCP server 'deepwiki'."
    assert mcp_tool(DEEPWIKI, name="wiki", description="Wiki.").description == "Wiki."
    with pytest.raises(PromptValidationError, match="McpConfig"):
        mcp_tool({"server_label": "x"})  # type: ignore[arg-type]

    section = McpSection(config(server_description="Costs $5 a call"))
    assert isinstance(section, MarkdownSection) and section.key == "mcp"
    rendered = Prompt(ns="t", key="mcp", sections=[section]).render()
    assert "MCP server 'deepwiki'" in rendered.text
    assert "Costs $5 a call" in rendered.text  # '$' escaped for string.Template
    assert rendered.hosted_tools == section.hosted_tools()


def test_two_servers_need_two_names() -> None:
    crm = config(server_label="crm", server_url="https://crm.example.com/mcp")
    with pytest.raises(PromptValidationError, match="Duplicate tool name 'mcp'"):
        Prompt(
            ns="t", key="k", sections=[McpSection(DEEPWIKI), McpSection(crm, key="crm")]
        )
    Prompt(
        ns="t",
        key="k",
        sections=[McpSection(DEEPWIKI), McpSection(crm, key="crm", name="crm")],
    )


# -- codec: wire format --------------------------------------------------------


def test_codec_protocol_attributes() -> None:
    tool = mcp_tool(DEEPWIKI)
    assert CODEC.kind == "mcp"
    assert CODEC.item_types == ("mcp_call", "mcp_list_tools", "mcp_approval_request")
    assert CODEC.include == ()
    assert CODEC.tool_choice(tool) == {"type": "mcp", "server_label": "deepwiki"}
    assert CODEC.matches({"type": "mcp_call", "server_label": "deepwiki"}, tool) is True
    assert CODEC.matches({"type": "mcp_call", "server_label": "crm"}, tool) is False


def test_serialize_full() -> None:
    full = config(
        allowed_tools=("ask_question",),
        headers={"Authorization": "Bearer X"},
        server_description="Docs",
    )
    assert CODEC.serialize(mcp_tool(full)) == {
        "type": "mcp",
        "server_label": "deepwiki",
        "server_url": "https://mcp.deepwiki.com/mcp",
        "allowed_tools": ["ask_question"],
        "require_approval": "never",
        "headers": {"Authorization": "Bearer X"},
        "server_description": "Docs",
    }


def test_serialize_minimal_omits_empty_fields() -> None:
    spec = CODEC.serialize(mcp_tool(config(require_approval="always")))
    assert spec == {
        "type": "mcp",
        "server_label": "deepwiki",
        "server_url": "https://mcp.deepwiki.com/mcp",
        "require_approval": "always",
    }
    assert isinstance(
        CODEC.serialize(mcp_tool(config(headers={"A": "b"})))["headers"], dict
    )


def test_serialize_rejects_a_foreign_config() -> None:
    @dataclasses.dataclass(frozen=True)
    class Other:
        pass

    tool = HostedTool(kind="mcp", name="m", description="x", config=Other())
    with pytest.raises(TypeError, match="needs an McpConfig"):
        CODEC.serialize(tool)


# -- codec: parsing through the real SDK ---------------------------------------


def test_list_tools_is_not_a_call() -> None:
    items = sdk_output("mcp_response.json")
    assert type(items[0]).__name__ == "McpListTools"
    assert CODEC.parse_call(items[0]) is None


def test_parse_call_through_the_sdk() -> None:
    items = sdk_output("mcp_response.json")
    item = next(i for i in items if i.type == "mcp_call")
    assert type(item).__name__ == "McpCall"
    call = CODEC.parse_call(item)
    assert call is not None and call.success is True
    assert call.call_id == "mcp_68a1f00d00000002"
    assert call.params == {
        "server_label": "deepwiki",
        "name": "ask_question",
        "arguments": {
            "repoName": "django/django",
            "question": "Which Django release is the current LTS?",
        },
    }
    value = call.value
    assert isinstance(value, McpToolCall) and value.succeeded
    assert value.output == "Django 5.2 is the current long-term support release."
    assert value.raw_arguments.startswith('{"repoName"')
    assert call.rendered == value.output
    assert call.message == "MCP call 'ask_question' on 'deepwiki' completed."


def test_parse_failed_call_through_the_sdk() -> None:
    items = sdk_output("mcp_failed_response.json")
    item = next(i for i in items if i.type == "mcp_call")
    call = CODEC.parse_call(item)
    assert call is not None and call.success is False
    assert call.message == (
        "MCP call 'ask_question' on 'deepwiki' failed: http_error 502: Bad gateway"
    )
    assert call.value.error == "http_error 502: Bad gateway"
    assert call.value.status == "failed"


def test_approval_request_is_not_a_call() -> None:
    # the run answers it with a human decision (adapters/openai/approvals.py);
    # the call itself, if approved, comes back as an mcp_call
    items = sdk_output("mcp_approval_request_response.json")
    item = items[1]
    assert type(item).__name__ == "McpApprovalRequest"
    assert CODEC.parse_call(item) is None
    assert mcp_approval_request(item) == McpApprovalRequest(
        request_id="mcpr_68a1f00d00000005",
        server_label="crm",
        name="delete_customer",
        arguments={"id": 42},
        raw_arguments='{"id":42}',
    )


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (None, None),
        (
            {"type": "http_error", "code": 502, "message": "Bad gateway"},
            "http_error 502: Bad gateway",
        ),
        (
            {"type": "mcp_protocol_error", "code": -32602, "message": "Invalid params"},
            "mcp_protocol_error -32602: Invalid params",
        ),
        (
            {
                "type": "mcp_tool_execution_error",
                "content": [{"type": "text", "text": "repo not found"}],
            },
            "mcp_tool_execution_error: repo not found",
        ),
        (
            {"type": "mcp_tool_execution_error", "content": "boom"},
            "mcp_tool_execution_error: boom",
        ),
        (
            {"type": "mcp_tool_execution_error", "content": None},
            "mcp_tool_execution_error",
        ),
        ("Error calling tool: timeout", "Error calling tool: timeout"),
    ],
)
def test_error_formats(error: Any, expected: str | None) -> None:
    assert format_mcp_error(error) == expected


def test_error_union_through_the_sdk() -> None:
    body = load("mcp_failed_response.json")
    body["output"][1]["error"] = {
        "type": "mcp_tool_execution_error",
        "content": [{"type": "text", "text": "Repository not indexed"}],
    }
    items = list(
        make_client(body, []).responses.create(model="gpt-5.4", input="x").output
    )
    call = CODEC.parse_call(items[1])
    assert call is not None and call.message == (
        "MCP call 'ask_question' on 'deepwiki' failed: mcp_tool_execution_error: "
        "Repository not indexed"
    )


def test_error_without_status_and_raw_arguments() -> None:
    call = CODEC.parse_call(
        {
            "type": "mcp_call",
            "id": "mcp_x",
            "server_label": "s",
            "name": "n",
            "arguments": "not json",
            "error": "boom",
        }
    )
    assert call is not None and call.success is False
    assert call.value.status == "failed" and call.value.arguments == "not json"
    incomplete = CODEC.parse_call(
        {
            "type": "mcp_call",
            "id": "mcp_y",
            "server_label": "s",
            "name": "n",
            "arguments": "{}",
            "status": "incomplete",
        }
    )
    assert incomplete is not None and incomplete.success is False
    assert incomplete.message == "MCP call 'n' on 's' incomplete."


def test_parse_output_aggregates_per_server() -> None:
    items = sdk_output("mcp_response.json")
    tool = mcp_tool(DEEPWIKI)
    result = CODEC.parse_output(items, tool)
    assert isinstance(result, McpResult)
    assert result.listed_tools == ("read_wiki_structure", "ask_question")
    assert [c.name for c in result.calls] == ["ask_question"]
    assert result.approval_requests == () and result.list_errors == ()
    assert CODEC.parse_output(load("mcp_response.json")["output"], tool) == result
    other = mcp_tool(
        config(server_label="crm", server_url="https://crm.example.com/mcp")
    )
    assert CODEC.parse_output(items, other) is None
    assert "ask_question [completed]" in result.render()


def test_parse_output_reports_list_errors_and_approvals() -> None:
    crm = mcp_tool(config(server_label="crm", server_url="https://crm.example.com/mcp"))
    items = sdk_output("mcp_approval_request_response.json")
    result = CODEC.parse_output(items, crm)
    assert result is not None and result.calls == ()
    assert [r.name for r in result.approval_requests] == ["delete_customer"]
    failing = [
        {
            "type": "mcp_list_tools",
            "id": "l",
            "server_label": "crm",
            "tools": [],
            "error": "401 Unauthorized",
        }
    ]
    listed = CODEC.parse_output(failing, crm)
    assert listed is not None and listed.list_errors == ("401 Unauthorized",)


# -- adapter round trips -------------------------------------------------------


def make_adapter(body: dict[str, Any], captured: list[dict[str, Any]]) -> OpenAIAdapter:
    return OpenAIAdapter(
        client=make_client(body, captured),
        model="gpt-5.4",
        hosted_tool_codecs={**default_codecs(), "mcp": OpenAIMcpCodec()},
    )


def prompt_with(*sections: MarkdownSection, **kwargs: Any) -> Prompt:
    task = MarkdownSection(title="Task", key="task", template="Which Django is LTS?")
    return Prompt(ns="tests", key="mcp", sections=[task, *sections], **kwargs)


def test_adapter_round_trip() -> None:
    captured: list[dict[str, Any]] = []
    secured = dataclasses.replace(DEEPWIKI, headers={"Authorization": SECRET})
    sink = InMemorySink()
    response = make_adapter(load("mcp_response.json"), captured).evaluate(
        prompt_with(McpSection(secured)), sink=sink
    )
    assert len(captured) == 1
    body = captured[0]
    assert body["tools"] == [
        {
            "type": "mcp",
            "server_label": "deepwiki",
            "server_url": "https://mcp.deepwiki.com/mcp",
            "allowed_tools": ["ask_question", "read_wiki_structure"],
            "require_approval": "never",
            "headers": {"Authorization": SECRET},
            "server_description": "Documentation of public GitHub repositories.",
        }
    ]
    assert "include" not in body
    (event,) = sink.of_type(ToolInvoked)  # mcp_list_tools emits no event
    assert (event.native, event.kind, event.provider, event.success, event.name) == (
        True,
        "mcp",
        "openai",
        True,
        "mcp",
    )
    assert event.params["name"] == "ask_question"
    assert isinstance(event.result.value, McpToolCall)
    output = response.hosted_outputs["mcp"]
    assert isinstance(output, McpResult) and output.calls[0].succeeded


def test_adapter_events_do_not_leak_mcp_headers() -> None:
    secured = dataclasses.replace(DEEPWIKI, headers={"Authorization": SECRET})
    sink = InMemorySink()
    make_adapter(load("mcp_response.json"), []).evaluate(
        prompt_with(McpSection(secured)), sink=sink
    )
    leaking = [type(e).__name__ for e in sink.events if SECRET in repr(e)]
    assert leaking == []


def test_adapter_round_trip_failed_call() -> None:
    sink = InMemorySink()
    response = make_adapter(load("mcp_failed_response.json"), []).evaluate(
        prompt_with(McpSection(DEEPWIKI)), sink=sink
    )
    (event,) = sink.of_type(ToolInvoked)
    assert event.success is False and event.result.value is None
    assert event.result.message == (
        "MCP call 'ask_question' on 'deepwiki' failed: http_error 502: Bad gateway"
    )
    assert (
        response.hosted_outputs["mcp"].calls[0].error == "http_error 502: Bad gateway"
    )


def test_adapter_round_trip_approval_request_pauses_the_run() -> None:
    crm = McpConfig(
        server_label="crm",
        server_url="https://crm.example.com/mcp",
        require_approval="always",
    )
    sink = InMemorySink()
    with pytest.raises(ApprovalPending) as raised:
        make_adapter(load("mcp_approval_request_response.json"), []).evaluate(
            prompt_with(McpSection(crm, name="crm")), sink=sink
        )
    (request,) = sink.of_type(ApprovalRequested)
    assert raised.value.request is request
    assert (request.kind, request.tool_name, request.server_label) == (
        "mcp",
        "delete_customer",
        "crm",
    )
    assert request.call_id == "mcpr_68a1f00d00000005"
    assert request.params == {"id": 42}
    assert request.policy_name == "crm"
    assert sink.of_type(ToolInvoked) == []


def test_adapter_assigns_calls_to_the_matching_server() -> None:
    body = copy.deepcopy(load("mcp_response.json"))
    crm_call = copy.deepcopy(body["output"][2])
    crm_call.update(
        id="mcp_crm_1",
        server_label="crm",
        name="find_customer",
        arguments='{"q": "acme"}',
        output="1 match",
    )
    body["output"].insert(3, crm_call)
    crm = McpConfig(server_label="crm", server_url="https://crm.example.com/mcp")
    sink = InMemorySink()
    response = make_adapter(body, []).evaluate(
        prompt_with(
            McpSection(DEEPWIKI, name="wiki"), McpSection(crm, key="crm", name="crm")
        ),
        sink=sink,
    )
    names = {e.call_id: e.name for e in sink.of_type(ToolInvoked)}
    assert names == {"mcp_68a1f00d00000002": "wiki", "mcp_crm_1": "crm"}
    assert [c.name for c in response.hosted_outputs["crm"].calls] == ["find_customer"]
    assert [c.name for c in response.hosted_outputs["wiki"].calls] == ["ask_question"]


def test_adapter_tool_choice() -> None:
    adapter = make_adapter(load("mcp_response.json"), [])
    forced = prompt_with(
        McpSection(DEEPWIKI), tool_choice=ToolChoice(mode="tool", tools=("mcp",))
    )
    assert adapter.request_preview(forced.render())["tool_choice"] == {
        "type": "mcp",
        "server_label": "deepwiki",
    }
    allowed = prompt_with(
        McpSection(DEEPWIKI),
        tool_choice=ToolChoice(mode="allowed", tools=("mcp",), required=True),
    )
    assert adapter.request_preview(allowed.render())["tool_choice"] == {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "mcp", "server_label": "deepwiki"}],
    }


def test_runtime_modules_stay_framework_free() -> None:
    import tooling.runtime.adapters.openai.codecs.mcp as codec_module

    for module in (mcp_module, codec_module):
        tree = ast.parse(Path(str(module.__file__)).read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in {"django", "rest_framework", "celery"}
