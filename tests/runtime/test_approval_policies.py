"""A call several approval policies ask about needs a decision under each
(issue #24): one approval never satisfies another policy. The run pauses on
the first policy that asks; resumed with that policy's decision, it pauses
again on the next, with that policy's own approvers; a denial under any of
them denies the call. Also: ``four_eyes`` travels from the policy to the
request."""

from typing import Any

import pytest

from tooling.runtime import (
    ApprovalDecision,
    ApprovalPending,
    ApprovalPolicy,
    ApprovalRequested,
    InMemorySession,
    PolicyDenied,
    PromptValidationError,
    RunRecord,
    ToolInvoked,
    event_id_for,
)
from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.events import InMemorySink

from .fakes import MODEL, FakeProvider, message, response
from .test_approval_pause import TURN_1, TURN_2, evaluate
from .test_approvals import DEPLOY as DEPLOY_TOOL
from .test_approvals import (
    PRODUCTION,
    RUN_ID,
    DeployParams,
    context_with,
    deployed,
    make_prompt,
)

INTERNS = ApprovalPolicy(
    [PRODUCTION], approvers={"group": "Interns"}, name="aa-interns-ok"
)
SECURITY = ApprovalPolicy(
    [PRODUCTION],
    approvers={"group": "Security"},
    deadline_seconds=600,
    name="zz-security-signoff",
)


def two_policies() -> Any:
    return make_prompt(INTERNS, SECURITY)


def decision(policy: str | None, *, approved: bool = True, by: str = "x") -> Any:
    return ApprovalDecision(
        approved,
        by,
        "ok" if approved else "no",
        "approved" if approved else "denied",
        policy_name=policy,
    )


def pause(record: RunRecord | None = None) -> ApprovalRequested:
    """Run (or resume) the two-policy prompt; the request it pauses on."""
    deployed.clear()
    provider = FakeProvider(TURN_1) if record is None else FakeProvider()
    sink = InMemorySink()
    with pytest.raises(ApprovalPending) as raised:
        OpenAIAdapter(client=provider.client, model=MODEL).evaluate(
            two_policies(),
            session=InMemorySession(session_id=RUN_ID),
            sink=sink,
            run_id=RUN_ID,
            resume=record,
        )
    (request,) = sink.of_type(ApprovalRequested)
    assert request is raised.value.request
    assert sink.of_type(ToolInvoked) == [] and deployed == []
    return request


def test_two_asking_policies_pause_on_the_first_with_its_own_approvers() -> None:
    request = pause()
    assert (request.policy_name, dict(request.approvers)) == (
        "aa-interns-ok",
        {"group": "Interns"},
    )


def test_one_policys_approval_pauses_again_for_the_next_policy() -> None:
    first = pause()
    record = RunRecord(
        responses=(TURN_1,), approvals={"c1": (decision("aa-interns-ok"),)}
    )
    second = pause(record)
    # the same call, under the next policy: its own approvers and deadline
    assert (second.call_id, second.sequence, second.tool_name) == ("c1", 1, "deploy")
    assert (second.policy_name, dict(second.approvers)) == (
        "zz-security-signoff",
        {"group": "Security"},
    )
    assert second.deadline_seconds == 600
    assert second.event_id != first.event_id
    assert second.event_id == event_id_for(RUN_ID, "approval", 1, "zz-security-signoff")


def test_the_call_runs_once_every_asking_policy_approved() -> None:
    both = (decision("aa-interns-ok"), decision("zz-security-signoff"))
    record = RunRecord(responses=(TURN_1,), approvals={"c1": both})
    sink, _, _ = evaluate(TURN_2, prompt=two_policies(), resume=record)
    assert deployed == ["production"]
    assert sink.of_type(ApprovalRequested) == []
    assert [e.success for e in sink.of_type(ToolInvoked)] == [True]


def test_an_approval_under_the_second_policy_does_not_answer_the_first() -> None:
    record = RunRecord(
        responses=(TURN_1,), approvals={"c1": decision("zz-security-signoff")}
    )
    assert pause(record).policy_name == "aa-interns-ok"


def test_a_decision_under_another_policy_answers_neither() -> None:
    record = RunRecord(responses=(TURN_1,), approvals={"c1": decision("elsewhere")})
    assert pause(record).policy_name == "aa-interns-ok"


def test_a_denial_under_the_second_policy_denies_the_call() -> None:
    both = (
        decision("aa-interns-ok", by="intern"),
        decision("zz-security-signoff", approved=False, by="sec"),
    )
    record = RunRecord(responses=(TURN_1,), approvals={"c1": both})
    sink, _, _ = evaluate(TURN_2, prompt=two_policies(), resume=record)
    assert deployed == []
    (denial,) = sink.of_type(PolicyDenied)
    assert (denial.policy_name, denial.reason) == (
        "zz-security-signoff",
        "Denied by sec: no",
    )
    (invoked,) = sink.of_type(ToolInvoked)
    assert invoked.success is False


def test_a_decision_bound_to_no_policy_answers_every_policy_as_before() -> None:
    """The public form before decisions were per policy: a host that passes
    one decision per call id, naming no policy, keeps its behaviour."""
    record = RunRecord(responses=(TURN_1,), approvals={"c1": decision(None)})
    evaluate(TURN_2, prompt=two_policies(), resume=record)
    assert deployed == ["production"]


def test_every_decision_of_a_call_must_be_bound_to_that_call() -> None:
    """A second policy's decision made for other arguments rejects the call,
    like a single one (``ApprovalDecision.applies_to``)."""
    bound = ApprovalDecision(
        True,
        "sec",
        "",
        "approved",
        kind="function",
        tool_name="deploy",
        arguments='{"environment": "staging"}',
        turn=1,
        policy_name="zz-security-signoff",
    )
    record = RunRecord(
        responses=(TURN_1,), approvals={"c1": (decision("aa-interns-ok"), bound)}
    )
    done = response(message("done"), id="r_done")
    sink, _, _ = evaluate(done, prompt=two_policies(), resume=record)
    assert deployed == []
    (invoked,) = sink.of_type(ToolInvoked)
    assert not invoked.success and "different call" in invoked.model_output


def test_approval_policy_reads_only_a_decision_made_under_its_name() -> None:
    mine = decision("aa-interns-ok")
    other = decision("zz-security-signoff")
    params = DeployParams(environment="production")
    allowed = INTERNS.check(DEPLOY_TOOL, params, context=context_with(mine))
    assert allowed.outcome == "allow"
    asked = INTERNS.check(DEPLOY_TOOL, params, context=context_with(other))
    assert asked.outcome == "ask"


# -- four eyes ----------------------------------------------------------------------


@pytest.mark.parametrize("four_eyes", [True, False, None])
def test_four_eyes_travels_from_the_policy_to_the_request(four_eyes: Any) -> None:
    policy = ApprovalPolicy([PRODUCTION], four_eyes=four_eyes)
    asked = policy.check(
        DEPLOY_TOOL,
        DeployParams(environment="production"),
        context=context_with(),
    )
    assert asked.four_eyes is four_eyes
    deployed.clear()
    sink = InMemorySink()
    with pytest.raises(ApprovalPending):
        OpenAIAdapter(client=FakeProvider(TURN_1).client, model=MODEL).evaluate(
            make_prompt(policy), sink=sink, run_id=RUN_ID
        )
    assert sink.of_type(ApprovalRequested)[0].four_eyes is four_eyes


@pytest.mark.parametrize("value", ["yes", 1, 0, [], {}])
def test_four_eyes_must_be_a_boolean(value: Any) -> None:
    with pytest.raises(PromptValidationError) as raised:
        ApprovalPolicy([PRODUCTION], four_eyes=value)
    assert str(raised.value).startswith("four_eyes must be true")
