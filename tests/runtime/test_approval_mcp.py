"""Provider-side approvals: an MCP server that requires approval makes the
run pause on its ``mcp_approval_request``; resumed with the decision, the run
answers with an ``mcp_approval_response`` (round trip over HTTP with the
offline provider). Also: a product-executed call (apply_patch) asks like a
function call."""

import dataclasses
from typing import Any

import httpx
import openai
import pytest

from tooling.offline import OfflineServer, ScriptedModel, offline_transport
from tooling.runtime import (
    ApprovalDecision,
    ApprovalPending,
    ApprovalPolicy,
    ApprovalRequested,
    InMemorySession,
    RunRecord,
    ToolInvoked,
    event_id_for,
)
from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.events import InMemorySink, ProviderCallCompleted
from tooling.runtime.hosted.mcp import McpConfig, McpSection
from tooling.runtime.prompt import Prompt
from tooling.runtime.sections import MarkdownSection

from .test_approvals import RUN_ID

# -- MCP: provider-side approvals through the offline provider -------------------------

CRM = McpConfig(
    server_label="crm",
    server_url="https://crm.example.com/mcp",
    allowed_tools=("delete_customer",),
    require_approval="always",
)


def mcp_prompt() -> Prompt:
    task = MarkdownSection(key="task", title="Task", template="Delete customer 42?")
    return Prompt(
        ns="tests", key="mcp-approval", sections=[task, McpSection(CRM, name="crm")]
    )


def offline_adapter(base_url: str | None = None) -> OpenAIAdapter:
    if base_url is not None:
        client = openai.OpenAI(api_key="sk-offline", base_url=base_url, max_retries=0)
    else:
        client = openai.OpenAI(
            api_key="sk-offline",
            base_url="http://offline.invalid/v1",
            http_client=httpx.Client(transport=offline_transport(ScriptedModel())),  # type: ignore[arg-type]
            max_retries=0,
        )
    return OpenAIAdapter(client=client, model="gpt-5.4")


def mcp_pause(adapter: OpenAIAdapter) -> tuple[Any, dict[str, Any]]:
    sink = InMemorySink()
    with pytest.raises(ApprovalPending):
        adapter.evaluate(mcp_prompt(), sink=sink, run_id=RUN_ID)
    (request,) = sink.of_type(ApprovalRequested)
    (call,) = sink.of_type(ProviderCallCompleted)
    assert sink.of_type(ToolInvoked) == []  # the request is not a call
    assert isinstance(request.call_id, str)
    return request, dict(call.response)


def test_mcp_round_trip_over_http_approve() -> None:
    with OfflineServer() as server:
        adapter = offline_adapter(server.base_url)
        request, recorded = mcp_pause(adapter)
        assert (request.kind, request.tool_name, request.server_label) == (
            "mcp",
            "delete_customer",
            "crm",
        )
        assert request.params == {"question": "Delete customer 42?"}
        assert request.sequence is None
        assert request.event_id == event_id_for(
            RUN_ID, "approval", "mcp", request.call_id
        )
        approved = ApprovalDecision(True, "alice", "customer asked", "approved")
        record = RunRecord(responses=(recorded,), approvals={request.call_id: approved})
        sink = InMemorySink()
        result = adapter.evaluate(mcp_prompt(), sink=sink, run_id=RUN_ID, resume=record)
        served = list(server.served)

    assert len(served) == 2  # the paused turn was not requested again
    (sent,) = sink.of_type(ProviderCallCompleted)
    answers = [
        i for i in sent.request["input"] if i.get("type") == "mcp_approval_response"
    ]
    assert answers == [
        {
            "type": "mcp_approval_response",
            "approval_request_id": request.call_id,
            "approve": True,
            "reason": "customer asked",
        }
    ]
    (call,) = sink.of_type(ToolInvoked)
    assert (call.native, call.kind, call.name, call.success) == (
        True,
        "mcp",
        "crm",
        True,
    )
    assert call.result.value.approval_request_id == request.call_id
    assert sink.of_type(ApprovalRequested) == []
    assert "mcp crm.delete_customer completed" in (result.text or "")


def test_mcp_round_trip_deny_sends_the_denial_and_the_call_never_runs() -> None:
    adapter = offline_adapter()
    request, recorded = mcp_pause(adapter)
    denied = ApprovalDecision(False, "bob", "not without a ticket", "denied")
    record = RunRecord(responses=(recorded,), approvals={request.call_id: denied})
    sink = InMemorySink()
    result = adapter.evaluate(mcp_prompt(), sink=sink, run_id=RUN_ID, resume=record)

    (sent,) = sink.of_type(ProviderCallCompleted)
    (answer,) = [
        i for i in sent.request["input"] if i.get("type") == "mcp_approval_response"
    ]
    assert answer["approve"] is False
    assert answer["reason"] == "Denied by bob: not without a ticket"
    assert sink.of_type(ToolInvoked) == []
    assert "mcp crm.delete_customer not approved" in (result.text or "")


def test_offline_mcp_approval_request_is_deterministic() -> None:
    first, _ = mcp_pause(offline_adapter())
    second, _ = mcp_pause(offline_adapter())
    assert first.call_id == second.call_id and first.call_id.startswith("mcpr_")


def test_mcp_server_without_approval_calls_at_once() -> None:
    never = dataclasses.replace(CRM, require_approval="never")
    task = MarkdownSection(key="task", title="Task", template="Delete customer 42?")
    prompt = Prompt(
        ns="tests", key="mcp", sections=[task, McpSection(never, name="crm")]
    )
    sink = InMemorySink()
    offline_adapter().evaluate(prompt, sink=sink, run_id=RUN_ID)
    assert sink.of_type(ApprovalRequested) == []
    assert [e.name for e in sink.of_type(ToolInvoked)] == ["crm"]


def test_a_product_executed_patch_can_need_approval_too() -> None:
    from tooling.runtime.hosted import ApplyPatchConfig, ApplyPatchSection
    from tooling.runtime.patches import PatchOperation

    task = MarkdownSection(key="task", title="Task", template="Edit `notes.md`.")
    prompt = Prompt(
        ns="tests",
        key="patch-approval",
        sections=[task, ApplyPatchSection(ApplyPatchConfig())],
        policies=[
            ApprovalPolicy([{"tool": "apply_patch", "when": {"type": "create_file"}}])
        ],
    )
    adapter = offline_adapter()
    sink = InMemorySink()
    session = InMemorySession(session_id=RUN_ID)
    with pytest.raises(ApprovalPending) as raised:
        adapter.evaluate(prompt, session=session, sink=sink, run_id=RUN_ID)
    request = raised.value.request
    assert (request.kind, request.tool_name, request.sequence) == (
        "function",
        "apply_patch",
        1,
    )
    assert isinstance(request.params, PatchOperation)
    assert not session.filesystem.exists("notes.md")  # not applied
    (recorded,) = sink.of_type(ProviderCallCompleted)
    assert isinstance(request.call_id, str)
    record = RunRecord(
        responses=(dict(recorded.response),),
        approvals={request.call_id: ApprovalDecision(True, "alice", "", "approved")},
    )
    resumed = InMemorySink()
    adapter.evaluate(
        prompt, session=session, sink=resumed, run_id=RUN_ID, resume=record
    )
    first = resumed.of_type(ToolInvoked)[0]
    assert (first.name, first.call_id, first.sequence, first.success) == (
        "apply_patch",
        request.call_id,
        1,
        True,
    )
    assert session.filesystem.exists("notes.md")
