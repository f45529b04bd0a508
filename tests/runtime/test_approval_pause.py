"""The executor pauses on an ask: ``ApprovalRequested`` + ``ApprovalPending``,
nothing recorded for the call; a run resumed with the human's decision runs
the call once (approved) or answers the model with the denial (denied)."""

import json
from typing import Any

import pytest

from tooling.runtime import (
    ApprovalDecision,
    ApprovalPending,
    ApprovalPolicy,
    ApprovalRequested,
    InMemorySession,
    PolicyDenied,
    PromptExecuted,
    RunRecord,
    SequentialDependencyPolicy,
    ToolInvoked,
    event_id_for,
)
from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.events import InMemorySink, ProviderCallCompleted
from tooling.runtime.prompt import Prompt

from .fakes import MODEL, FakeProvider, function_call, message, response
from .test_approvals import PRODUCTION, RUN_ID, DeployParams, deployed, make_prompt

PROD_CALL = function_call("deploy", {"environment": "production"}, "c1")
TURN_1 = response(PROD_CALL, id="resp_1")
TURN_2 = response(message("Released."), id="resp_2")


def evaluate(
    *replies: Any,
    prompt: Prompt | None = None,
    resume: RunRecord | None = None,
    session: InMemorySession | None = None,
) -> tuple[InMemorySink, FakeProvider, InMemorySession]:
    deployed.clear()
    provider = FakeProvider(*replies)
    sink = InMemorySink()
    session = session or InMemorySession(session_id=RUN_ID)
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)
    adapter.evaluate(
        prompt or make_prompt(),
        session=session,
        sink=sink,
        run_id=RUN_ID,
        resume=resume,
    )
    return sink, provider, session


def paused(
    *replies: Any, prompt: Prompt | None = None
) -> tuple[InMemorySink, ApprovalPending, InMemorySession]:
    deployed.clear()
    provider = FakeProvider(*replies)
    sink = InMemorySink()
    session = InMemorySession(session_id=RUN_ID)
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)
    with pytest.raises(ApprovalPending) as raised:
        adapter.evaluate(
            prompt or make_prompt(), session=session, sink=sink, run_id=RUN_ID
        )
    return sink, raised.value, session


def test_pause_emits_approval_requested_and_records_nothing_for_the_call() -> None:
    sink, pending, session = paused(TURN_1)
    (request,) = sink.of_type(ApprovalRequested)
    assert pending.request is request
    assert request.kind == "function"
    assert (request.tool_name, request.call_id, request.sequence, request.turn) == (
        "deploy",
        "c1",
        1,
        1,
    )
    assert request.params == DeployParams(environment="production")
    assert request.raw_arguments == json.dumps({"environment": "production"})
    assert request.policy_name == "approval"
    assert request.reason == (
        "Tool 'deploy' needs a human decision when environment is 'production'."
    )
    assert request.session_id == RUN_ID
    # one request per policy asking about the call: the policy is in its id
    assert request.event_id == event_id_for(RUN_ID, "approval", 1, "approval")
    assert deployed == []
    assert sink.of_type(ToolInvoked) == [] and sink.of_type(PolicyDenied) == []
    assert sink.of_type(PromptExecuted) == []
    assert session.get_state("deployed") is None
    # the provider call that asked is recorded: the resumed run replays it
    assert len(sink.of_type(ProviderCallCompleted)) == 1


def test_a_call_the_condition_does_not_match_runs_without_asking() -> None:
    staging = function_call("deploy", {"environment": "staging"}, "c1")
    sink, _, _ = evaluate(response(staging), TURN_2)
    assert deployed == ["staging"]
    assert sink.of_type(ApprovalRequested) == []


def test_a_denial_wins_over_an_ask() -> None:
    needs_check = SequentialDependencyPolicy({"deploy": ["check"]})
    prompt = make_prompt(needs_check, ApprovalPolicy([PRODUCTION]))
    sink, _, _ = evaluate(TURN_1, TURN_2, prompt=prompt)
    (denied,) = sink.of_type(PolicyDenied)
    assert denied.policy_name == "sequential_dependency"
    assert sink.of_type(ApprovalRequested) == []
    assert deployed == []


def test_an_ask_listed_first_still_loses_to_a_later_denial() -> None:
    needs_check = SequentialDependencyPolicy({"deploy": ["check"]})
    prompt = make_prompt(ApprovalPolicy([PRODUCTION]), needs_check)
    sink, _, _ = evaluate(TURN_1, TURN_2, prompt=prompt)
    assert [d.policy_name for d in sink.of_type(PolicyDenied)] == [
        "sequential_dependency"
    ]
    assert sink.of_type(ApprovalRequested) == []


def test_an_ask_pauses_when_every_other_policy_allows() -> None:
    needs_check = SequentialDependencyPolicy({"deploy": ["check"]})
    prompt = make_prompt(needs_check, ApprovalPolicy([PRODUCTION]))
    first = response(function_call("check", "{}", "c0"), id="resp_0")
    sink, pending, _ = paused(first, TURN_1, prompt=prompt)
    assert pending.request.sequence == 2
    assert [e.name for e in sink.of_type(ToolInvoked)] == ["check"]


def test_resume_with_approval_runs_the_call_once() -> None:
    _, pending, _ = paused(TURN_1)
    approved = ApprovalDecision(True, "alice", "go ahead", "approved")
    record = RunRecord(responses=(TURN_1,), approvals={"c1": approved})

    sink, provider, session = evaluate(TURN_2, resume=record)

    assert deployed == ["production"]
    (invoked,) = sink.of_type(ToolInvoked)
    assert (invoked.call_id, invoked.sequence, invoked.success) == ("c1", 1, True)
    assert invoked.event_id == event_id_for(RUN_ID, "tool", pending.request.sequence)
    assert sink.of_type(ApprovalRequested) == []
    assert sink.of_type(PolicyDenied) == []
    assert len(provider.requests) == 1  # turn 1 replayed, not requested
    (answer,) = [
        i
        for i in provider.requests[0]["input"]
        if i.get("type") == "function_call_output"
    ]
    assert answer == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": "deployed to production",
    }
    assert session.get_state("deployed") == "production"


def test_resume_with_denial_answers_the_model_and_records_the_denial() -> None:
    paused(TURN_1)
    denied = ApprovalDecision(False, "alice", "not on a Friday", "denied")
    record = RunRecord(responses=(TURN_1,), approvals={"c1": denied})

    sink, provider, _ = evaluate(TURN_2, resume=record)

    assert deployed == []
    (denial,) = sink.of_type(PolicyDenied)
    assert (denial.policy_name, denial.call_id, denial.sequence) == (
        "approval",
        "c1",
        1,
    )
    assert denial.reason == "Denied by alice: not on a Friday"
    (invoked,) = sink.of_type(ToolInvoked)
    assert invoked.success is False
    (answer,) = [
        i
        for i in provider.requests[0]["input"]
        if i.get("type") == "function_call_output"
    ]
    assert answer["output"] == "Denied by alice: not on a Friday"
    assert sink.of_type(PromptExecuted)[0].text == "Released."


def test_a_decision_applies_only_to_its_own_call() -> None:
    again = response(
        function_call("deploy", {"environment": "production"}, "c2"), id="resp_2"
    )
    approved = ApprovalDecision(True, "alice", "", "approved")
    record = RunRecord(responses=(TURN_1,), approvals={"c1": approved})
    deployed.clear()
    provider = FakeProvider(again)
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)
    with pytest.raises(ApprovalPending) as raised:
        adapter.evaluate(
            make_prompt(),
            session=InMemorySession(session_id=RUN_ID),
            sink=sink,
            run_id=RUN_ID,
            resume=record,
        )
    assert deployed == ["production"]  # c1 ran once; c2 asks again
    assert raised.value.request.call_id == "c2"
    assert raised.value.request.sequence == 2
