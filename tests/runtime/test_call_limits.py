"""``CallLimitPolicy``: the most calls per run of each function tool, enforced
as a fail-closed policy and recorded like any denial."""

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from tests.runtime.fakes import FakeProvider, function_call, message, response
from tooling.runtime import (
    ApplyPatchSection,
    ApprovalDecision,
    ApprovalPending,
    ApprovalPolicy,
    ApprovalRequested,
    CallCounts,
    CallLimitPolicy,
    InMemorySession,
    InMemorySink,
    MarkdownSection,
    OpenAIAdapter,
    PolicyDenied,
    Prompt,
    PromptValidationError,
    RunRecord,
    SequentialDependencyPolicy,
    Tool,
    ToolContext,
    ToolInvoked,
    ToolResult,
    web_search_tool,
)


@dataclasses.dataclass(frozen=True)
class DeployParams:
    environment: str = "staging"


@dataclasses.dataclass(frozen=True)
class Done:
    what: str


ran: list[str] = []
failing: set[str] = set()


def deploy(params: DeployParams, *, context: ToolContext) -> ToolResult[Done]:
    ran.append("deploy")
    if "deploy" in failing:
        raise RuntimeError("the cluster said no")
    return ToolResult.ok(Done(params.environment), "Deployed.")


def build(params: DeployParams, *, context: ToolContext) -> ToolResult[Done]:
    ran.append("build")
    return ToolResult.ok(Done("built"), "Built.")


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()
    failing.clear()


def make_prompt(*policies: Any) -> Prompt:
    return Prompt(
        ns="tests",
        key="limits",
        sections=[
            MarkdownSection(
                key="release",
                title="Release",
                template="Release it.",
                tools=[
                    Tool(name="deploy", description="Deploy.", handler=deploy),
                    Tool(name="build", description="Build.", handler=build),
                ],
            )
        ],
        policies=policies,
    )


def calls(*names: str) -> list[dict[str, Any]]:
    """One response per name, each calling that tool, then a final answer."""
    replies = [
        response(function_call(name, "{}", call_id=f"c{n}"), id=f"r{n}")
        for n, name in enumerate(names, 1)
    ]
    return [*replies, response(message("Done."), id="final")]


def run(
    prompt: Prompt, *names: str, session: Any = None
) -> tuple[InMemorySink, FakeProvider]:
    provider = FakeProvider(*calls(*names))
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model="gpt-test")
    adapter.evaluate(prompt, sink=sink, session=session)
    return sink, provider


def answers(provider: FakeProvider) -> list[str]:
    return [
        item["output"]
        for item in provider.requests[-1]["input"]
        if item.get("type") == "function_call_output"
    ]


def test_a_call_past_the_limit_is_denied_recorded_and_answered() -> None:
    sink, provider = run(
        make_prompt(CallLimitPolicy({"deploy": 1})), "deploy", "deploy"
    )

    assert ran == ["deploy"]
    (denial,) = sink.of_type(PolicyDenied)
    reason = "Tool 'deploy' may be called at most 1 time(s) per run; this was call 2."
    assert (denial.policy_name, denial.tool_name, denial.reason) == (
        "call_limit",
        "deploy",
        reason,
    )
    assert (denial.call_id, denial.turn, denial.sequence) == ("c2", 2, 2)
    invoked = sink.of_type(ToolInvoked)
    assert [e.success for e in invoked] == [True, False]
    assert reason in answers(provider)[1]


def test_a_limit_of_zero_never_runs_the_tool() -> None:
    sink, _ = run(make_prompt(CallLimitPolicy({"deploy": 0})), "deploy")
    assert ran == []
    (denial,) = sink.of_type(PolicyDenied)
    assert denial.reason.endswith("at most 0 time(s) per run; this was call 1.")


def test_other_tools_are_not_limited() -> None:
    run(make_prompt(CallLimitPolicy({"deploy": 1})), "build", "build", "build")
    assert ran == ["build", "build", "build"]


def test_a_failed_call_counts() -> None:
    failing.add("deploy")
    sink, _ = run(make_prompt(CallLimitPolicy({"deploy": 1})), "deploy", "deploy")
    assert ran == ["deploy"]  # the second call never reached the handler
    assert [e.success for e in sink.of_type(ToolInvoked)] == [False, False]
    assert "this was call 2" in sink.of_type(PolicyDenied)[0].reason


def test_a_call_another_policy_denied_does_not_count() -> None:
    prompt = make_prompt(
        SequentialDependencyPolicy({"deploy": ["build"]}),
        CallLimitPolicy({"deploy": 1}),
    )
    sink, _ = run(prompt, "deploy", "build", "deploy", "deploy")

    assert ran == ["build", "deploy"]
    reasons = [(d.policy_name, d.reason) for d in sink.of_type(PolicyDenied)]
    assert reasons == [
        ("sequential_dependency", "Tool 'deploy' requires: build"),
        (
            "call_limit",
            "Tool 'deploy' may be called at most 1 time(s) per run; this was call 2.",
        ),
    ]


def test_the_limit_denies_even_when_an_earlier_policy_allows() -> None:
    prompt = make_prompt(
        CallLimitPolicy({"deploy": 2}),
        SequentialDependencyPolicy({"deploy": ["build"]}),
    )
    sink, _ = run(prompt, "build", "deploy", "deploy", "deploy")
    assert ran == ["build", "deploy", "deploy"]
    (denial,) = sink.of_type(PolicyDenied)
    assert denial.policy_name == "call_limit"


def test_the_count_lives_in_the_session_state() -> None:
    session = InMemorySession()
    prompt = make_prompt(CallLimitPolicy({"deploy": 2}, name="deploys"))
    run(prompt, "deploy", session=session)
    state = session.get_state("policy:deploys")
    assert isinstance(state, CallCounts)
    assert dict(state.counts) == {"deploy": 1}
    # a resumed run continues from the recorded count
    sink, _ = run(prompt, "deploy", "deploy", session=session)
    assert ran == ["deploy", "deploy"]
    assert "this was call 3" in sink.of_type(PolicyDenied)[0].reason


class BrokenCounter:
    name = "broken"

    def check(self, tool: Any, params: Any, *, context: Any) -> Any:
        from tooling.runtime import PolicyDecision

        return PolicyDecision.allow()

    def before_run(self, tool: Any, params: Any, *, context: Any) -> None:
        raise RuntimeError("counter offline")

    def on_result(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_a_before_run_hook_that_raises_denies_and_rolls_back_its_siblings() -> None:
    session = InMemorySession()
    prompt = make_prompt(CallLimitPolicy({"deploy": 1}), BrokenCounter())
    sink, _ = run(prompt, "deploy", session=session)

    assert ran == []
    (denial,) = sink.of_type(PolicyDenied)
    assert denial.policy_name == "broken"
    assert denial.reason == "Policy 'broken' could not record the call: counter offline"
    assert session.get_state("policy:call_limit") is None  # not counted


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({}, "CallLimitPolicy needs limits"),
        ([("deploy", 1)], "CallLimitPolicy needs limits"),
        ({"": 1}, "must be keyed by tool names"),
        ({3: 1}, "must be keyed by tool names"),
        ({"deploy": True}, "'deploy' must be a whole number from 0 to 10000; got True"),
        ({"deploy": -1}, "got -1"),
        ({"deploy": 1.5}, "got 1.5"),
        ({"deploy": 10**5000}, "got a number too large"),
        ({"deploy": 10_001}, "got 10001"),
    ],
)
def test_invalid_limits_are_refused(limits: Any, message: str) -> None:
    with pytest.raises(PromptValidationError) as info:
        CallLimitPolicy(limits)
    assert message in info.value.message


def test_a_limit_on_a_tool_the_prompt_lacks_is_refused() -> None:
    with pytest.raises(PromptValidationError) as info:
        make_prompt(CallLimitPolicy({"rollback": 1}))
    assert info.value.message == (
        "Policy 'call_limit' refers to tool 'rollback', which prompt "
        "'tests/limits' does not have."
    )


# -- resume: after a crash, after an approval pause ---------------------------------


def test_a_replayed_call_is_not_counted_again_on_resume() -> None:
    session = InMemorySession()
    prompt = make_prompt(CallLimitPolicy({"deploy": 2}))
    first = response(function_call("deploy", "{}", call_id="c1"), id="r1")
    provider = FakeProvider(first, response(message("Done."), id="r2"))
    adapter = OpenAIAdapter(client=provider.client, model="gpt-test")
    adapter.evaluate(prompt, sink=InMemorySink(), session=session, run_id="run")
    # the worker died after turn 1: the resumed run replays it from the record
    provider = FakeProvider(
        response(function_call("deploy", "{}", call_id="c2"), id="r2"),
        response(function_call("deploy", "{}", call_id="c3"), id="r3"),
        response(message("Done."), id="r4"),
    )
    record = RunRecord(responses=(first,), tool_outputs={1: "Deployed."})
    sink = InMemorySink()
    OpenAIAdapter(client=provider.client, model="gpt-test").evaluate(
        prompt, sink=sink, session=session, run_id="run", resume=record
    )

    assert ran == ["deploy", "deploy"]  # c1 once, then c2; c3 denied
    (denial,) = sink.of_type(PolicyDenied)
    assert (denial.call_id, denial.reason) == (
        "c3",
        "Tool 'deploy' may be called at most 2 time(s) per run; this was call 3.",
    )
    assert session.get_state("policy:call_limit") == CallCounts(
        "call_limit", {"deploy": 2}
    )


def test_a_call_paused_for_approval_counts_once_when_approved() -> None:
    session = InMemorySession(session_id="approvals")
    prompt = make_prompt(
        CallLimitPolicy({"deploy": 1}), ApprovalPolicy([{"tool": "deploy"}])
    )
    asking = response(
        function_call("deploy", "{}", call_id="c1"),
        function_call("deploy", "{}", call_id="c2"),
        id="r1",
    )
    adapter = OpenAIAdapter(client=FakeProvider(asking).client, model="gpt-test")
    with pytest.raises(ApprovalPending):
        adapter.evaluate(prompt, sink=InMemorySink(), session=session, run_id="run")
    assert ran == [] and session.get_state("policy:call_limit") is None

    approved = ApprovalDecision(True, "alice", "go", "approved")
    record = RunRecord(responses=(asking,), approvals={"c1": approved})
    provider = FakeProvider(response(message("Done."), id="r2"))
    sink = InMemorySink()
    OpenAIAdapter(client=provider.client, model="gpt-test").evaluate(
        prompt, sink=sink, session=session, run_id="run", resume=record
    )

    assert ran == ["deploy"]
    assert session.get_state("policy:call_limit") == CallCounts(
        "call_limit", {"deploy": 1}
    )
    # the second call is past the limit: denied without asking anyone
    (denial,) = sink.of_type(PolicyDenied)
    assert (denial.call_id, denial.policy_name) == ("c2", "call_limit")
    assert sink.of_type(ApprovalRequested) == []


def test_a_limit_on_a_tool_the_provider_runs_is_refused() -> None:
    section = MarkdownSection(
        key="search",
        title="Search",
        template="Search.",
        hosted_tools=[web_search_tool()],
    )
    with pytest.raises(PromptValidationError) as info:
        Prompt(
            ns="tests",
            key="limits",
            sections=[section],
            policies=[CallLimitPolicy({"web_search": 1}, name="searches")],
        )
    assert info.value.message == (
        "Policy 'searches' limits 'web_search', a hosted tool the provider runs: "
        "no policy sees its calls. Limit them with the prompt's hosted tool limits."
    )


def test_a_limit_on_apply_patch_which_runs_here_is_accepted() -> None:
    prompt = Prompt(
        ns="tests",
        key="limits",
        sections=[ApplyPatchSection()],
        policies=[CallLimitPolicy({"apply_patch": 1})],
    )
    assert [p.name for p in prompt.policies_for_tool("apply_patch")] == ["call_limit"]


class StepSession(InMemorySession):
    """A session whose transactions are steps, as the Django session's are
    (``sessions_app/runs/store``): the events emitted inside a step that rolls
    back are dropped with it."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[object] = []
        self._open: list[list[object]] = []

    def emit(self, event: object) -> None:
        (self._open[-1] if self._open else self.kept).append(event)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        self._open.append([])
        with super().transaction() as handle:
            try:
                yield handle
            finally:
                events = self._open.pop()
                if not getattr(handle, "rolled_back", False):
                    (self._open[-1] if self._open else self.kept).extend(events)


def test_a_before_run_denial_is_recorded_outside_the_step_it_rolls_back() -> None:
    session = StepSession()
    provider = FakeProvider(*calls("deploy"))
    adapter = OpenAIAdapter(client=provider.client, model="gpt-test")
    adapter.evaluate(make_prompt(BrokenCounter()), sink=session, session=session)

    denials = [e for e in session.kept if isinstance(e, PolicyDenied)]
    assert [d.policy_name for d in denials] == ["broken"]
    (invoked,) = [e for e in session.kept if isinstance(e, ToolInvoked)]
    assert invoked.result.success is False
