"""A human decision applies to the very call it was made for, and to no other.

Decisions reach a resumed run keyed by call id (or MCP request item id), an id
the provider chose. The decision also carries the call it was made for (kind,
tool, raw arguments, turn): a reused or colliding id, or a response that
differs from the one the approver saw, must never run a call nobody approved.
"""

import json
from typing import Any

import pytest

from tooling.runtime import (
    ApprovalDecision,
    ApprovalRequested,
    InMemorySession,
    PolicyDenied,
    PromptEvaluationError,
    PromptFailed,
    RunRecord,
    ToolInvoked,
    event_id_for,
)
from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.approvals import mismatch_reason
from tooling.runtime.events import InMemorySink, ProviderCallCompleted
from tooling.runtime.hosted.mcp import McpSection
from tooling.runtime.prompt import Prompt
from tooling.runtime.sections import MarkdownSection

from .fakes import MODEL, FakeProvider, function_call, message, response
from .test_approval_mcp import CRM
from .test_approvals import RUN_ID, deployed, make_prompt

PROD = {"environment": "production"}


def approved(**binding: Any) -> ApprovalDecision:
    return ApprovalDecision(True, "alice", "go", "approved", **binding)


def run(*replies: Any, approvals: dict[str, ApprovalDecision], turns: int = 1) -> Any:
    """Resume a run whose first ``turns`` responses are recorded."""
    deployed.clear()
    recorded, fresh = replies[:turns], replies[turns:]
    provider = FakeProvider(*fresh)
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)
    adapter.evaluate(
        make_prompt(),
        session=InMemorySession(session_id=RUN_ID),
        sink=sink,
        run_id=RUN_ID,
        resume=RunRecord(responses=tuple(recorded), approvals=approvals),
    )
    return sink, provider


def outputs(provider: FakeProvider) -> list[str]:
    return [
        item["output"]
        for item in provider.requests[-1]["input"]
        if item.get("type") == "function_call_output"
    ]


def test_a_decision_bound_to_the_call_runs_it() -> None:
    turn_1 = response(function_call("deploy", PROD, "c1"), id="resp_1")
    decision = approved(
        kind="function", tool_name="deploy", arguments=json.dumps(PROD), turn=1
    )
    sink, _ = run(turn_1, response(message("ok"), id="r2"), approvals={"c1": decision})
    assert deployed == ["production"]
    assert [e.success for e in sink.of_type(ToolInvoked)] == [True]


def test_a_decision_for_other_arguments_never_runs_the_call() -> None:
    # the recorded response differs from the one the approver saw: staging was
    # approved, production is asked for under the same call id
    turn_1 = response(function_call("deploy", PROD, "c1"), id="resp_1")
    staging = json.dumps({"environment": "staging"})
    decision = approved(kind="function", tool_name="deploy", arguments=staging, turn=1)
    sink, provider = run(
        turn_1, response(message("ok"), id="r2"), approvals={"c1": decision}
    )
    assert deployed == []
    (invoked,) = sink.of_type(ToolInvoked)
    assert invoked.success is False
    assert sink.of_type(ApprovalRequested) == []  # no second pause on the same id
    assert outputs(provider) == [mismatch_reason("c1")]


def test_a_decision_for_another_turn_or_tool_or_kind_never_runs_the_call() -> None:
    turn_1 = response(function_call("deploy", PROD, "c1"), id="resp_1")
    raw = json.dumps(PROD)
    for binding in (
        {"kind": "function", "tool_name": "deploy", "arguments": raw, "turn": 3},
        {"kind": "function", "tool_name": "rollback", "arguments": raw, "turn": 1},
        # an MCP request whose item id collides with the function call's id
        {"kind": "mcp", "tool_name": "deploy", "arguments": raw, "turn": 1},
    ):
        sink, _ = run(
            turn_1,
            response(message("ok"), id="r2"),
            approvals={"c1": approved(**binding)},
        )
        assert deployed == [], binding
        assert sink.of_type(PolicyDenied) == []  # rejected before any policy


def test_a_call_id_reused_in_a_later_turn_never_inherits_the_decision() -> None:
    turn_1 = response(function_call("deploy", PROD, "c1"), id="resp_1")
    again = response(
        function_call("deploy", {"environment": "production", "replicas": 9}, "c1"),
        id="resp_2",
    )
    decision = approved(
        kind="function", tool_name="deploy", arguments=json.dumps(PROD), turn=1
    )
    sink, provider = run(
        turn_1, again, response(message("ok"), id="r3"), approvals={"c1": decision}
    )
    assert deployed == ["production"]  # turn 1's call only, once
    assert [e.success for e in sink.of_type(ToolInvoked)] == [True, False]
    assert sink.of_type(ApprovalRequested) == []
    assert "already used" in outputs(provider)[-1]


def test_arguments_are_compared_as_the_host_stores_them() -> None:
    # a lone surrogate is stored as U+FFFD: the stored arguments still bind
    raw = '{"environment": "prod\ud800"}'
    turn_1 = response(function_call("deploy", raw, "c1"), id="resp_1")
    stored = raw.replace("\ud800", "\ufffd")
    decision = approved(kind="function", tool_name="deploy", arguments=stored, turn=1)
    run(turn_1, response(message("ok"), id="r2"), approvals={"c1": decision})
    assert deployed == ["prod\ufffd"]


# -- MCP -----------------------------------------------------------------------------


def mcp_prompt() -> Prompt:
    task = MarkdownSection(key="task", title="Task", template="Delete customer 42?")
    return Prompt(
        ns="tests", key="mcp-bind", sections=[task, McpSection(CRM, name="crm")]
    )


def approval_request(
    item_id: str, *, name: str = "delete_customer", arguments: str = '{"id": 42}'
) -> dict[str, Any]:
    return {
        "type": "mcp_approval_request",
        "id": item_id,
        "server_label": "crm",
        "name": name,
        "arguments": arguments,
    }


def mcp_answers(
    recorded: list[dict[str, Any]],
    approvals: dict[str, ApprovalDecision],
    sink: InMemorySink | None = None,
) -> list[dict[str, Any]]:
    provider = FakeProvider(response(message("done"), id="r_last"))
    sink = sink if sink is not None else InMemorySink()
    OpenAIAdapter(client=provider.client, model=MODEL).evaluate(
        mcp_prompt(),
        sink=sink,
        run_id=RUN_ID,
        resume=RunRecord(responses=tuple(recorded), approvals=approvals),
    )
    (sent,) = sink.of_type(ProviderCallCompleted)
    return [
        item
        for item in sent.request["input"]
        if item.get("type") == "mcp_approval_response"
    ]


def mcp_decision(turn: int = 1, **overrides: Any) -> ApprovalDecision:
    binding = {
        "kind": "mcp",
        "tool_name": "delete_customer",
        "arguments": '{"id": 42}',
        "turn": turn,
    }
    binding.update(overrides)
    return approved(**binding)


def test_mcp_decision_bound_to_its_request_approves_it() -> None:
    turn_1 = response(approval_request("mcpr_1"), id="r1")
    (answer,) = mcp_answers([turn_1], {"mcpr_1": mcp_decision()})
    assert answer["approve"] is True


def test_mcp_request_id_reused_for_another_call_is_answered_no() -> None:
    # the provider reuses the id at turn 1 for a call with other arguments
    turn_1 = response(approval_request("mcpr_1", arguments='{"id": 7}'), id="r1")
    sink = InMemorySink()
    (answer,) = mcp_answers([turn_1], {"mcpr_1": mcp_decision()}, sink)
    assert answer["approve"] is False
    assert answer["reason"] == mismatch_reason("mcpr_1")
    # recorded, under the hosted tool's name (the "policy" of its requests)
    (denial,) = sink.of_type(PolicyDenied)
    assert (denial.policy_name, denial.call_id, denial.params) == (
        "crm",
        "mcpr_1",
        {"id": 7},
    )
    assert denial.reason == mismatch_reason("mcpr_1")


def test_mcp_same_id_twice_in_one_response_is_answered_once() -> None:
    same = approval_request("mcpr_1")
    turn_1 = response(same, dict(same), id="r1")
    answers = mcp_answers([turn_1], {"mcpr_1": mcp_decision()})
    assert [a["approval_request_id"] for a in answers] == ["mcpr_1"]
    assert answers[0]["approve"] is True


def test_mcp_same_id_twice_for_different_calls_is_answered_no() -> None:
    other = approval_request("mcpr_1", name="export_customers")
    turn_1 = response(approval_request("mcpr_1"), other, id="r1")
    (answer,) = mcp_answers([turn_1], {"mcpr_1": mcp_decision()})
    assert answer["approve"] is False


def test_mcp_denial_reason_is_made_sendable() -> None:
    turn_1 = response(approval_request("mcpr_1"), id="r1")
    denied = ApprovalDecision(
        False,
        "bob",
        "no \ud800 way",
        "denied",
        kind="mcp",
        tool_name="delete_customer",
        arguments='{"id": 42}',
        turn=1,
    )
    (answer,) = mcp_answers([turn_1], {"mcpr_1": denied})
    assert answer["reason"] == "Denied by bob: no \ufffd way"
    json.dumps(answer, ensure_ascii=False).encode()  # strict UTF-8 encodes


def test_mcp_and_function_approval_event_ids_never_collide() -> None:
    assert event_id_for(RUN_ID, "approval", "mcp", "1") != event_id_for(
        RUN_ID, "approval", 1, "crm"
    )


def test_mcp_request_from_a_server_the_prompt_lacks_is_answered_no_unasked() -> None:
    stranger = dict(approval_request("mcpr_9"), server_label="elsewhere")
    turn_1 = response(stranger, id="r1")
    sink = InMemorySink()
    (answer,) = mcp_answers([turn_1], {}, sink)  # no decision, and no pause either
    reason = (
        "MCP server 'elsewhere' is not offered by this prompt; its approval "
        "request was answered no."
    )
    assert answer == {
        "type": "mcp_approval_response",
        "approval_request_id": "mcpr_9",
        "approve": False,
        "reason": reason,
    }
    assert sink.of_type(ApprovalRequested) == []
    # not without a trace: a recorded denial, with its reason
    (denial,) = sink.of_type(PolicyDenied)
    assert (denial.policy_name, denial.tool_name, denial.call_id, denial.turn) == (
        "offered-mcp-servers",
        "delete_customer",
        "mcpr_9",
        1,
    )
    assert denial.reason == reason
    assert denial.params == {"id": 42}
    assert denial.event_id == event_id_for(RUN_ID, "denial", "mcp", "mcpr_9")


def test_mcp_request_without_an_id_fails_the_run() -> None:
    nameless = approval_request("")
    provider = FakeProvider(response(nameless, id="r1"))
    sink = InMemorySink()
    with pytest.raises(PromptEvaluationError) as raised:
        OpenAIAdapter(client=provider.client, model=MODEL).evaluate(
            mcp_prompt(), sink=sink, run_id=RUN_ID
        )
    assert raised.value.phase == "response"
    assert "without an approval request id" in raised.value.message
    assert sink.of_type(ApprovalRequested) == []
    assert [f.phase for f in sink.of_type(PromptFailed)] == ["response"]
