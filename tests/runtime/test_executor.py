"""``ToolExecutor``: dispatch order, failure semantics, rollback and events."""

import contextlib
import dataclasses
import itertools
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from tooling.runtime.context import ToolContext
from tooling.runtime.deadlines import (
    Budget,
    BudgetTracker,
    Deadline,
    FakeClock,
    TokenUsage,
)
from tooling.runtime.errors import (
    DeadlineExceededError,
    PromptEvaluationError,
    ToolValidationError,
)
from tooling.runtime.events import (
    InMemorySink,
    PolicyDenied,
    RejectedToolParams,
    StateChanged,
    ToolInvoked,
)
from tooling.runtime.execution.calls import FunctionCall, ToolExecution
from tooling.runtime.execution.executor import ToolExecutor
from tooling.runtime.hosted.web_search import web_search_tool
from tooling.runtime.policies import PolicyDecision, SequentialDependencyPolicy
from tooling.runtime.prompt import Prompt
from tooling.runtime.reducers import Reducer
from tooling.runtime.results import ToolResult
from tooling.runtime.sections import MarkdownSection
from tooling.runtime.session import (
    Filesystem,
    InMemoryFilesystem,
    InMemorySession,
    Resources,
)
from tooling.runtime.tools import Tool


@dataclasses.dataclass(frozen=True)
class Args:
    query: str
    limit: int = 5


@dataclasses.dataclass(frozen=True)
class Out:
    text: str


Handler = Callable[..., Any]


class Recorder:
    """A handler that records its calls and runs an optional body."""

    def __init__(self, body: Handler | None = None) -> None:
        self.calls: list[tuple[Any, ToolContext]] = []
        self.body = body

    def __call__(self, params: Any, *, context: ToolContext) -> Any:
        self.calls.append((params, context))
        if self.body is not None:
            return self.body(params, context)
        return ToolResult.ok(Out(f"found {params.query}"), "Found.")


class ScriptedPolicy:
    """A policy whose decision (or exception) is scripted; it logs its calls."""

    def __init__(
        self,
        name: str,
        decision: PolicyDecision | Exception | None = None,
        before: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self.decision = decision if decision is not None else PolicyDecision.allow()
        self.before = before
        self.checked: list[str] = []
        self.results: list[ToolResult[Any]] = []

    def check(self, tool: Any, params: Any, *, context: Any) -> PolicyDecision:
        self.checked.append(tool.name)
        if self.before is not None:
            self.before()
        if isinstance(self.decision, Exception):
            raise self.decision
        return self.decision

    def on_result(self, tool: Any, params: Any, result: Any, *, context: Any) -> None:
        self.results.append(result)


class Harness:
    def __init__(
        self,
        tools: list[Tool[Any, Any]],
        *,
        policies: tuple[Any, ...] = (),
        prompt_policies: tuple[Any, ...] = (),
        files: dict[str, str] | None = None,
        **executor_kwargs: Any,
    ) -> None:
        self.prompt = Prompt(
            ns="tests",
            key="executor",
            name="executor-prompt",
            sections=[
                MarkdownSection(
                    key="tools",
                    title="Tools",
                    tools=tools,
                    hosted_tools=[web_search_tool()],
                    policies=policies,
                )
            ],
            policies=prompt_policies,
        )
        self.rendered = self.prompt.render()
        self.session = InMemorySession(
            session_id="session-1", filesystem=InMemoryFilesystem(files or {})
        )
        self.sink = InMemorySink()
        self.executor = ToolExecutor(
            prompt=self.prompt,
            rendered=self.rendered,
            session=self.session,
            sink=self.sink,
            adapter="the-adapter",
            **executor_kwargs,
        )

    def run(
        self, name: str, arguments: Any = "", call_id: str = "call_1"
    ) -> ToolExecution:
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return self.executor.execute(FunctionCall(name, raw, call_id, turn=2))

    def invoked(self) -> list[ToolInvoked]:
        return self.sink.of_type(ToolInvoked)


def search_tool(handler: Handler, name: str = "search") -> Tool[Any, Any]:
    return Tool(
        name=name,
        description="Search.",
        handler=handler,
        params_type=Args,
        result_type=Out,
    )


def writer(outcome: Callable[[], Any]) -> Recorder:
    """A handler that changes state and a file, then produces ``outcome``."""

    def body(params: Any, context: ToolContext) -> Any:
        context.session.put_state("counter", 1)
        assert context.filesystem is not None
        context.filesystem.write("notes.txt", "changed")
        return outcome()

    return Recorder(body)


def raiser(error: BaseException) -> Callable[[], Any]:
    def outcome() -> Any:
        raise error

    return outcome


# -- the successful path -----------------------------------------------------------


def test_executor_success_returns_result_and_model_text() -> None:
    handler = Recorder()
    harness = Harness([search_tool(handler)])
    execution = harness.run("search", {"query": "tides"})
    assert execution.result == ToolResult.ok(Out("found tides"), "Found.")
    assert execution.output == 'Found.\n\n{"text": "found tides"}'
    assert execution.call == FunctionCall("search", '{"query": "tides"}', "call_1", 2)
    assert handler.calls[0][0] == Args("tides", 5)


def test_executor_tool_invoked_records_every_field() -> None:
    harness = Harness([search_tool(Recorder())])
    harness.run("search", {"query": "tides"})
    (event,) = harness.invoked()
    assert event.prompt_name == "executor-prompt"
    assert event.adapter == "openai"
    assert event.name == "search"
    assert event.call_id == "call_1"
    assert event.params == Args("tides")
    assert event.result.success is True
    assert event.success is True
    assert event.rendered_output == '{"text": "found tides"}'
    assert event.native is False
    assert event.kind == "function"
    assert event.provider is None
    assert event.turn == 2
    assert event.sequence == 1
    assert event.raw_arguments == '{"query": "tides"}'
    assert event.session_id == "session-1"


def test_executor_sequence_increases_across_calls() -> None:
    harness = Harness([search_tool(Recorder())])
    harness.run("search", {"query": "a"})
    harness.run("nope")
    harness.run("search", {"query": "c"})
    assert [event.sequence for event in harness.invoked()] == [1, 2, 3]


def test_executor_uses_a_shared_sequence() -> None:
    harness = Harness([search_tool(Recorder())], sequence=itertools.count(40))
    harness.run("search", {"query": "a"})
    assert harness.invoked()[0].sequence == 40


def test_executor_adapter_name_is_recorded() -> None:
    harness = Harness([search_tool(Recorder())], adapter_name="custom")
    harness.run("search", {"query": "a"})
    assert harness.invoked()[0].adapter == "custom"


def test_executor_handler_receives_a_full_context() -> None:
    handler = Recorder()
    clock = FakeClock()
    deadline = Deadline.after(60, clock=clock)
    tracker = BudgetTracker(Budget(max_total_tokens=100))
    harness = Harness([search_tool(handler)], deadline=deadline, budget_tracker=tracker)
    harness.run("search", {"query": "a"}, call_id="call_9")
    context = handler.calls[0][1]
    assert context.prompt is harness.prompt
    assert context.rendered_prompt is harness.rendered
    assert context.adapter == "the-adapter"
    assert context.session.session_id == "session-1"
    assert context.resources is harness.session.resources
    assert context.filesystem is harness.session.filesystem
    assert context.deadline is deadline
    assert context.budget_tracker is tracker
    assert context.call_id == "call_9"


def test_executor_heartbeat_beats_before_the_handler() -> None:
    beats: list[str] = []

    def body(params: Any, context: ToolContext) -> ToolResult[None]:
        beats.append("handler")
        return ToolResult.ok(None)

    handler = Recorder(body)
    harness = Harness([search_tool(handler)], heartbeat=lambda: beats.append("beat"))
    harness.run("search", {"query": "a"})
    assert beats == ["beat", "handler"]


def test_executor_excluded_value_reaches_events_but_not_the_model() -> None:
    def body(params: Any, context: ToolContext) -> ToolResult[Out]:
        result = ToolResult.ok(Out("secret"), "Stored.")
        result.exclude_value_from_context = True
        return result

    harness = Harness([search_tool(Recorder(body))])
    execution = harness.run("search", {"query": "a"})
    assert execution.output == "Stored."
    assert harness.invoked()[0].rendered_output == '{"text": "secret"}'


def test_executor_tool_without_params_accepts_empty_arguments() -> None:
    calls: list[Any] = []

    def ping(params, *, context: ToolContext) -> ToolResult[None]:  # type: ignore[no-untyped-def]
        calls.append(params)
        return ToolResult.ok(None, "pong")

    harness = Harness([Tool(name="ping", description="Ping.", handler=ping)])
    for arguments in ("", "   ", "{}"):
        assert harness.run("ping", arguments).output == "pong"
    assert calls == [None, None, None]


def test_executor_handler_may_use_session_transactions() -> None:
    def body(params: Any, context: ToolContext) -> ToolResult[None]:
        with context.session.transaction() as transaction:
            context.session.put_state("scratch", 1)
            transaction.rollback()
        return ToolResult.ok(None)

    harness = Harness([search_tool(Recorder(body))])
    assert harness.run("search", {"query": "a"}).result.success is True
    assert harness.session.get_state("scratch") is None


def test_executor_state_changed_skips_writes_undone_by_nested_rollback() -> None:
    def body(params: Any, context: ToolContext) -> ToolResult[None]:
        with context.session.transaction() as transaction:
            context.session.put_state("scratch", 1)
            transaction.rollback()
        return ToolResult.ok(None)

    harness = Harness([search_tool(Recorder(body))])
    harness.run("search", {"query": "a"})
    assert harness.sink.of_type(StateChanged) == []


def test_executor_a_refused_write_the_handler_catches_is_no_state_change() -> None:
    def body(params: Any, context: ToolContext) -> ToolResult[None]:
        with contextlib.suppress(ValueError):  # the handler carries on without it
            context.session.put_state("refused", "no")
        context.session.put_state("kept", 1)
        return ToolResult.ok(None)

    harness = Harness([search_tool(Recorder(body))])
    refuse = harness.session.put_state

    def put_state(key: str, value: Any) -> None:
        if key == "refused":
            raise ValueError("The session store refused the change.")
        refuse(key, value)

    harness.session.put_state = put_state  # type: ignore[method-assign]
    assert harness.run("search", {"query": "a"}).result.success is True
    assert [event.key for event in harness.sink.of_type(StateChanged)] == ["kept"]
    assert harness.session.get_state("refused") is None


# -- lookup and argument failures come back as failed results ----------------------


def test_executor_unknown_tool_is_a_failed_result() -> None:
    handler = Recorder()
    harness = Harness([search_tool(handler), search_tool(handler, "fetch")])
    execution = harness.run("nope", '{"a": 1}')
    message = "Unknown tool 'nope'. Available tools: search, fetch."
    assert execution.result == ToolResult.error(message)
    assert execution.output == message
    assert handler.calls == []
    (event,) = harness.invoked()
    assert event.params == RejectedToolParams('{"a": 1}', message)
    assert event.rendered_output == ""
    assert event.success is False


def test_executor_unknown_tool_without_tools_lists_none() -> None:
    harness = Harness([])
    assert harness.run("nope").result.message == (
        "Unknown tool 'nope'. Available tools: none."
    )


def test_executor_hosted_tool_called_as_function_has_no_handler() -> None:
    harness = Harness([])
    assert harness.run("web_search").result.message == (
        "Tool 'web_search' does not have a registered handler."
    )


def test_executor_tool_without_handler_is_a_failed_result() -> None:
    harness = Harness([Tool(name="docs_only", description="No handler.")])
    execution = harness.run("docs_only", "{}")
    assert execution.result == ToolResult.error(
        "Tool 'docs_only' does not have a registered handler."
    )
    assert isinstance(harness.invoked()[0].params, RejectedToolParams)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            "{bad json",
            "Tool validation failed: arguments are not valid JSON (Expecting property "
            "name enclosed in double quotes: line 1 column 2 (char 1)).",
        ),
        (
            '{"query": ' + "[" * 100_000,
            "Tool validation failed: arguments are not valid JSON (nested too deeply).",
        ),
        ("[1, 2]", "Tool validation failed: arguments must be a JSON object."),
        ('"text"', "Tool validation failed: arguments must be a JSON object."),
        ("", "Tool validation failed: Missing required field: 'query'"),
        ('{"limit": 1}', "Tool validation failed: Missing required field: 'query'"),
        (
            '{"query": "q", "zeta": 1, "alpha": 2}',
            "Tool validation failed: Extra keys not permitted: ['alpha', 'zeta']",
        ),
        ('{"query": null}', "Tool validation failed: query: value cannot be None"),
        (
            '{"query": "q", "limit": "5"}',
            "Tool validation failed: limit: expected integer, got string",
        ),
    ],
)
def test_executor_bad_arguments_are_failed_results(
    arguments: str, message: str
) -> None:
    handler = Recorder()
    policy = ScriptedPolicy("watcher")
    harness = Harness([search_tool(handler)], policies=(policy,))
    execution = harness.run("search", arguments)
    assert execution.result == ToolResult.error(message)
    assert handler.calls == []
    assert policy.checked == []
    (event,) = harness.invoked()
    assert event.params == RejectedToolParams(arguments, message)
    assert event.raw_arguments == arguments


def test_executor_tool_without_params_rejects_arguments() -> None:
    harness = Harness(
        [
            Tool(
                name="ping",
                description="Ping.",
                handler=lambda params, *, context: ToolResult.ok(None),
            )
        ]
    )
    assert harness.run("ping", '{"x": 1}').result.message == (
        "Tool validation failed: Tool does not accept any arguments."
    )


def test_executor_null_argument_uses_the_default() -> None:
    handler = Recorder()
    harness = Harness([search_tool(handler)])
    harness.run("search", {"query": "q", "limit": None})
    assert handler.calls[0][0] == Args("q", 5)


# -- policies ----------------------------------------------------------------------


def test_executor_policy_denial_skips_the_handler_and_emits_event() -> None:
    handler = Recorder()
    policy = ScriptedPolicy("gate", PolicyDecision.deny("Not yet."))
    harness = Harness([search_tool(handler)], policies=(policy,))
    execution = harness.run("search", {"query": "q"}, call_id="call_7")
    assert execution.result == ToolResult.error("Not yet.")
    assert execution.output == "Not yet."
    assert handler.calls == []
    assert policy.results == []
    (denied,) = harness.sink.of_type(PolicyDenied)
    assert denied.prompt_name == "executor-prompt"
    assert denied.policy_name == "gate"
    assert denied.tool_name == "search"
    assert denied.reason == "Not yet."
    assert denied.call_id == "call_7"
    assert denied.params == Args("q")
    assert denied.turn == 2
    assert denied.session_id == "session-1"
    assert [type(e) for e in harness.sink.events] == [PolicyDenied, ToolInvoked]
    assert harness.invoked()[0].params == Args("q")


def test_executor_policy_denial_leaves_state_untouched() -> None:
    sequential = SequentialDependencyPolicy({"deploy": {"build"}})
    build, deploy = Recorder(), writer(lambda: ToolResult.ok(None))
    harness = Harness(
        [search_tool(build, "build"), search_tool(deploy, "deploy")],
        policies=(sequential,),
        files={"notes.txt": "original"},
    )
    execution = harness.run("deploy", {"query": "q"})
    assert execution.result.message == "Tool 'deploy' requires: build"
    assert deploy.calls == []
    assert harness.session.get_state("counter") is None
    assert harness.session.get_state("policy:sequential_dependency") is None
    assert harness.session.filesystem.files == {"notes.txt": "original"}
    assert harness.sink.of_type(StateChanged) == []


def test_executor_first_denial_wins() -> None:
    first = ScriptedPolicy("first", PolicyDecision.deny("First says no."))
    second = ScriptedPolicy("second", PolicyDecision.deny("Second says no."))
    harness = Harness(
        [search_tool(Recorder())], policies=(first,), prompt_policies=(second,)
    )
    assert harness.run("search", {"query": "q"}).result.message == "First says no."
    assert second.checked == []


def test_executor_all_policies_must_allow() -> None:
    first = ScriptedPolicy("first")
    second = ScriptedPolicy("second", PolicyDecision.deny("Prompt-level no."))
    handler = Recorder()
    harness = Harness(
        [search_tool(handler)], policies=(first,), prompt_policies=(second,)
    )
    assert harness.run("search", {"query": "q"}).result.message == "Prompt-level no."
    assert first.checked == ["search"]
    assert handler.calls == []


def test_executor_raising_policy_denies(caplog: pytest.LogCaptureFixture) -> None:
    handler = Recorder()
    policy = ScriptedPolicy("exploding", RuntimeError("kaboom"))
    harness = Harness([search_tool(handler)], policies=(policy,))
    with caplog.at_level(logging.ERROR, logger="tooling.runtime.execution"):
        execution = harness.run("search", {"query": "q"})
    assert execution.result == ToolResult.error(
        "Policy 'exploding' could not decide: kaboom"
    )
    assert handler.calls == []
    assert harness.sink.of_type(PolicyDenied)[0].policy_name == "exploding"
    assert "Policy exploding raised while checking search" in caplog.text


def test_executor_denial_without_reason_gets_a_default_message() -> None:
    policy = ScriptedPolicy("silent", PolicyDecision(allowed=False))
    harness = Harness([search_tool(Recorder())], policies=(policy,))
    assert harness.run("search", {"query": "q"}).result.message == (
        "Policy 'silent' denied the call."
    )


def test_executor_policy_denial_happens_before_the_deadline_check() -> None:
    clock = FakeClock()
    deadline = Deadline.after(10, clock=clock)
    handler = Recorder()
    policy = ScriptedPolicy(
        "slow", PolicyDecision.deny("Denied."), before=lambda: clock.advance(60)
    )
    harness = Harness([search_tool(handler)], policies=(policy,), deadline=deadline)
    execution = harness.run("search", {"query": "q"})
    assert execution.result == ToolResult.error("Denied.")
    assert handler.calls == []


def test_executor_deadline_is_checked_after_policies_allow() -> None:
    clock = FakeClock()
    deadline = Deadline.after(10, clock=clock)
    handler = Recorder()
    policy = ScriptedPolicy("slow", before=lambda: clock.advance(60))
    harness = Harness([search_tool(handler)], policies=(policy,), deadline=deadline)
    with pytest.raises(PromptEvaluationError) as info:
        harness.run("search", {"query": "q"})
    assert info.value.message == "Deadline expired before executing tool 'search'."
    assert info.value.phase == "deadline"
    assert policy.checked == ["search"]
    assert handler.calls == []


def test_executor_on_result_runs_only_for_successful_calls() -> None:
    ok_policy = ScriptedPolicy("ok")
    harness = Harness(
        [
            search_tool(Recorder(), "good"),
            search_tool(Recorder(lambda p, c: ToolResult.error("bad")), "bad"),
        ],
        policies=(ok_policy,),
    )
    harness.run("good", {"query": "q"})
    harness.run("bad", {"query": "q"})
    assert [result.success for result in ok_policy.results] == [True]


def test_executor_policy_state_is_recorded_and_announced() -> None:
    sequential = SequentialDependencyPolicy({"deploy": {"build"}})
    harness = Harness(
        [search_tool(Recorder(), "build"), search_tool(Recorder(), "deploy")],
        policies=(sequential,),
    )
    harness.run("build", {"query": "q"})
    (changed,) = harness.sink.of_type(StateChanged)
    assert changed.key == "policy:sequential_dependency"
    assert changed.value.invoked_tools == frozenset({"build"})
    assert harness.run("deploy", {"query": "q"}).result.success is True


def test_executor_raising_on_result_fails_the_call_and_rolls_back() -> None:
    class BrokenRecorder(ScriptedPolicy):
        def on_result(
            self, tool: Any, params: Any, result: Any, *, context: Any
        ) -> None:
            raise RuntimeError("cannot record")

    harness = Harness(
        [search_tool(writer(lambda: ToolResult.ok(None)))],
        policies=(BrokenRecorder("broken"),),
        files={"notes.txt": "original"},
    )
    execution = harness.run("search", {"query": "q"})
    assert execution.result.success is False
    assert harness.session.get_state("counter") is None
    assert harness.session.filesystem.files == {"notes.txt": "original"}


# -- handler exceptions ------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (
            ToolValidationError("query too vague"),
            "Tool validation failed: query too vague",
        ),
        (TypeError("bad operand"), "Tool 'search' raised TypeError: bad operand"),
        (ValueError("boom"), "Tool 'search' execution failed: boom"),
        (RuntimeError("crash"), "Tool 'search' execution failed: crash"),
        (KeyError("k"), "Tool 'search' execution failed: 'k'"),
    ],
)
def test_executor_handler_exceptions_become_failed_results(
    error: Exception, message: str
) -> None:
    harness = Harness([search_tool(Recorder(lambda p, c: raiser(error)()))])
    execution = harness.run("search", {"query": "q"})
    assert execution.result == ToolResult.error(message)
    assert execution.output == message
    assert harness.invoked()[0].result == ToolResult.error(message)


def test_executor_handler_exceptions_are_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    harness = Harness(
        [search_tool(Recorder(lambda p, c: raiser(ValueError("boom"))()))]
    )
    with caplog.at_level(logging.ERROR, logger="tooling.runtime.execution"):
        harness.run("search", {"query": "q"})
    assert "Tool search failed" in caplog.text


def test_executor_prompt_evaluation_error_is_re_raised_after_recording_the_call() -> (
    None
):
    error = PromptEvaluationError("stop", phase="tool")
    harness = Harness([search_tool(Recorder(lambda p, c: raiser(error)()))])
    with pytest.raises(PromptEvaluationError) as info:
        harness.run("search", {"query": "q"})
    assert info.value is error
    (invoked,) = harness.invoked()
    assert (invoked.success, invoked.result.message) == (False, "stop")
    assert invoked.model_output == "stop"


def test_executor_deadline_exceeded_becomes_deadline_phase_error() -> None:
    clock = FakeClock()
    deadline = Deadline.after(30, clock=clock)
    harness = Harness(
        [
            search_tool(
                Recorder(lambda p, c: raiser(DeadlineExceededError("too slow"))())
            )
        ],
        deadline=deadline,
    )
    with pytest.raises(PromptEvaluationError) as info:
        harness.run("search", {"query": "q"})
    error = info.value
    assert error.message == "too slow"
    assert error.phase == "deadline"
    assert error.prompt_name == "executor-prompt"
    assert error.provider_payload == {
        "deadline_expires_at": "2026-01-01T00:00:30+00:00"
    }
    assert isinstance(error.__cause__, DeadlineExceededError)


def test_executor_deadline_exceeded_without_message_or_deadline() -> None:
    harness = Harness(
        [search_tool(Recorder(lambda p, c: raiser(DeadlineExceededError())()))]
    )
    with pytest.raises(PromptEvaluationError) as info:
        harness.run("search", {"query": "q"})
    assert info.value.message == "Tool 'search' exceeded the deadline."
    assert info.value.provider_payload == {}


def test_executor_non_tool_result_return_is_a_failure() -> None:
    harness = Harness([search_tool(Recorder(lambda p, c: {"text": "x"}))])
    assert harness.run("search", {"query": "q"}).result == ToolResult.error(
        "Tool 'search' returned dict, not a ToolResult."
    )


def test_executor_failed_result_value_is_dropped() -> None:
    failing = ToolResult(message="Partial.", value=Out("debris"), success=False)
    harness = Harness([search_tool(Recorder(lambda p, c: failing))])
    execution = harness.run("search", {"query": "q"})
    assert execution.result == ToolResult(message="Partial.", value=None, success=False)
    assert execution.output == "Partial."


# -- rollback on every failed outcome ----------------------------------------------


@pytest.mark.parametrize(
    "outcome",
    [
        lambda: ToolResult.error("handler said no"),
        raiser(ToolValidationError("invalid after writing")),
        raiser(ValueError("boom")),
        raiser(TypeError("bad")),
        lambda: "not a result",
    ],
    ids=[
        "success-false",
        "tool-validation-error",
        "exception",
        "type-error",
        "bad-return",
    ],
)
def test_executor_failed_outcomes_roll_back_state_and_files(
    outcome: Callable[[], Any],
) -> None:
    harness = Harness([search_tool(writer(outcome))], files={"notes.txt": "original"})
    harness.session.put_state("counter", 0)
    execution = harness.run("search", {"query": "q"})
    assert execution.result.success is False
    assert harness.session.get_state("counter") == 0
    assert harness.session.filesystem.files == {"notes.txt": "original"}
    assert harness.sink.of_type(StateChanged) == []


@pytest.mark.parametrize(
    "error",
    [PromptEvaluationError("stop", phase="tool"), DeadlineExceededError("late")],
)
def test_executor_aborting_handlers_roll_back(error: Exception) -> None:
    harness = Harness(
        [search_tool(writer(raiser(error)))], files={"notes.txt": "original"}
    )
    with pytest.raises(PromptEvaluationError):
        harness.run("search", {"query": "q"})
    assert harness.session.get_state("counter") is None
    assert harness.session.filesystem.files == {"notes.txt": "original"}


def test_executor_success_keeps_changes_and_emits_state_changed() -> None:
    harness = Harness(
        [search_tool(writer(lambda: ToolResult.ok(None, "Saved.")))],
        files={"notes.txt": "original"},
    )
    harness.run("search", {"query": "q"}, call_id="call_3")
    assert harness.session.get_state("counter") == 1
    assert harness.session.filesystem.files == {"notes.txt": "changed"}
    (changed,) = harness.sink.of_type(StateChanged)
    assert (changed.key, changed.value, changed.tool_name, changed.call_id) == (
        "counter",
        1,
        "search",
        "call_3",
    )
    assert changed.session_id == "session-1"
    assert [type(e) for e in harness.sink.events] == [StateChanged, ToolInvoked]


# -- limits ------------------------------------------------------------------------


def test_executor_expired_deadline_aborts_before_dispatch() -> None:
    clock = FakeClock()
    deadline = Deadline.after(5, clock=clock)
    clock.advance(5)
    handler = Recorder()
    harness = Harness([search_tool(handler)], deadline=deadline)
    with pytest.raises(PromptEvaluationError) as info:
        harness.run("search", {"query": "q"})
    error = info.value
    assert error.message == "Deadline expired before executing tool 'search'."
    assert error.phase == "deadline"
    assert error.prompt_name == "executor-prompt"
    assert error.provider_payload == {
        "deadline_expires_at": "2026-01-01T00:00:05+00:00"
    }
    assert handler.calls == []
    assert harness.sink.events == []


def test_executor_exceeded_budget_aborts_with_budget_phase() -> None:
    tracker = BudgetTracker(Budget(max_total_tokens=10))
    tracker.record(TokenUsage(input_tokens=8, output_tokens=3))
    handler = Recorder()
    harness = Harness([search_tool(handler)], budget_tracker=tracker)
    with pytest.raises(PromptEvaluationError) as info:
        harness.run("search", {"query": "q"})
    assert info.value.message == "Budget exceeded: total tokens"
    assert info.value.phase == "budget"
    assert handler.calls == []


def test_executor_budget_within_limits_runs_the_tool() -> None:
    tracker = BudgetTracker(Budget(max_total_tokens=10))
    tracker.record(TokenUsage(input_tokens=5, output_tokens=5))
    harness = Harness([search_tool(Recorder())], budget_tracker=tracker)
    assert harness.run("search", {"query": "q"}).result.success is True


# -- the in-memory session the executor is tested with -----------------------------


def test_session_in_memory_filesystem_operations() -> None:
    fs = InMemoryFilesystem({"b/x.txt": "x", "a.txt": "a"})
    assert isinstance(fs, Filesystem)
    assert fs.list() == ["a.txt", "b/x.txt"]
    assert fs.list("b/") == ["b/x.txt"]
    fs.delete("a.txt")
    assert fs.exists("a.txt") is False
    with pytest.raises(FileNotFoundError):
        fs.read("a.txt")
    with pytest.raises(FileNotFoundError):
        fs.delete("a.txt")


def test_session_resources_are_typed_and_iterable() -> None:
    resources = Resources("text")
    resources.add(3)
    assert resources.get(int) == 3
    assert resources.get(float) is None
    assert list(resources) == ["text", 3]


def test_session_transaction_rolls_back_on_exception() -> None:
    session = InMemorySession(filesystem=InMemoryFilesystem({"f": "old"}))
    with pytest.raises(RuntimeError), session.transaction():
        session.put_state("k", 1)
        session.filesystem.write("f", "new")
        raise RuntimeError("abort")
    assert session.get_state("k") is None
    assert session.filesystem.read("f") == "old"


def test_session_transaction_keeps_changes_without_rollback() -> None:
    session = InMemorySession()
    with session.transaction():
        session.put_state("k", 1)
    assert session.get_state("k") == 1
    assert session.session_id


# -- handlers publishing events through their context ------------------------------


@dataclasses.dataclass(frozen=True)
class Counted:
    amount: int


def _add(current: int | None, event: Counted) -> int:
    if event.amount < 0:
        raise ToolValidationError("amounts must not be negative")
    return (current or 0) + event.amount


COUNTER = Reducer(Counted, "counter", _add)


class CounterSection(MarkdownSection):
    """A section registering a reducer, as a deployment's own would."""

    def reducers(self) -> tuple[Reducer, ...]:
        return (COUNTER,)


def publishing_executor(
    body: Handler, *, section_reducers: bool = True
) -> tuple[ToolExecutor, InMemorySession, InMemorySink]:
    tool = Tool(
        name="count",
        description="Count.",
        handler=Recorder(body),
        params_type=Args,
        result_type=Out,
    )
    cls = CounterSection if section_reducers else MarkdownSection
    prompt = Prompt(
        ns="tests", key="publish", sections=[cls(title="T", key="t", tools=[tool])]
    )
    session = InMemorySession()
    sink = InMemorySink()
    executor = ToolExecutor(
        prompt=prompt, rendered=prompt.render(), session=session, sink=sink
    )
    return executor, session, sink


def call_count(executor: ToolExecutor) -> ToolExecution:
    return executor.execute(FunctionCall("count", json.dumps({"query": "q"}), "c1"))


def test_executor_published_events_reach_the_sink_then_state_then_invocation() -> None:
    def body(params: Args, context: ToolContext) -> ToolResult[Out]:
        context.publish(Counted(2))
        context.publish(Counted(3))
        total = context.session.get_state("counter")
        return ToolResult.ok(Out(f"total {total}"))

    executor, session, sink = publishing_executor(body)
    execution = call_count(executor)
    assert execution.result.value == Out("total 5")
    assert session.get_state("counter") == 5
    assert sink.events[:2] == [Counted(2), Counted(3)]
    assert [type(e) for e in sink.events[2:]] == [StateChanged, ToolInvoked]
    (change,) = sink.of_type(StateChanged)
    assert (change.key, change.value, change.tool_name) == ("counter", 5, "count")


def test_executor_a_failed_call_drops_its_events_and_their_state() -> None:
    def body(params: Args, context: ToolContext) -> ToolResult[Out]:
        context.publish(Counted(2))
        return ToolResult.error("changed my mind")

    executor, session, sink = publishing_executor(body)
    assert not call_count(executor).result.success
    assert session.get_state("counter") is None
    assert [type(e) for e in sink.events] == [ToolInvoked]


def test_executor_a_reducer_refusing_an_event_fails_the_call() -> None:
    def body(params: Args, context: ToolContext) -> ToolResult[Out]:
        context.publish(Counted(1))
        context.publish(Counted(-1))
        return ToolResult.ok(Out("unreachable"))

    executor, session, sink = publishing_executor(body)
    execution = call_count(executor)
    assert execution.output == ("Tool validation failed: amounts must not be negative")
    assert session.get_state("counter") is None
    assert [type(e) for e in sink.events] == [ToolInvoked]


def test_executor_handler_named_reducers_apply_without_section_ones() -> None:
    def body(params: Args, context: ToolContext) -> ToolResult[Out]:
        context.publish(Counted(4), reducers=(COUNTER,))
        context.publish(Counted(1))  # no reducer: delivered, state unchanged
        return ToolResult.ok(Out("ok"))

    executor, session, sink = publishing_executor(body, section_reducers=False)
    call_count(executor)
    assert session.get_state("counter") == 4
    assert sink.events[:2] == [Counted(4), Counted(1)]


def test_executor_a_reducer_listed_twice_applies_once() -> None:
    def body(params: Args, context: ToolContext) -> ToolResult[Out]:
        context.publish(Counted(4), reducers=(COUNTER,))
        return ToolResult.ok(Out("ok"))

    executor, session, _ = publishing_executor(body)
    call_count(executor)
    assert session.get_state("counter") == 4


def test_executor_handler_may_reset_the_session() -> None:
    def body(params: Args, context: ToolContext) -> ToolResult[Out]:
        context.session.put_state("other", 1)
        context.session.reset()
        return ToolResult.ok(Out("ok"))

    executor, session, sink = publishing_executor(body)
    session.put_state("before", 1)
    call_count(executor)
    assert session.get_state("before") is None and session.get_state("other") is None
    assert sink.of_type(StateChanged) == []


def test_reducer_validates_its_parts() -> None:
    with pytest.raises(TypeError, match="event_type must be a class"):
        Reducer("Counted", "counter", _add)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="key must be a non-empty string"):
        Reducer(Counted, " ", _add)
    with pytest.raises(TypeError, match="reduce must be callable"):
        Reducer(Counted, "counter", None)  # type: ignore[arg-type]


def test_executor_a_value_too_long_to_render_is_named_not_raised() -> None:
    def body(params: Any, context: ToolContext) -> ToolResult[Any]:
        return ToolResult.ok({"n": 10**5000}, "Counted.")

    harness = Harness([search_tool(Recorder(body))])
    execution = harness.run("search", {"query": "a"})
    assert execution.result.success is True
    assert execution.output == (
        "Counted.\n\n[the tool's value could not be rendered as text: ValueError]"
    )
    (event,) = harness.invoked()
    assert event.rendered_output.startswith("[the tool's value could not be rendered")


# -- a session whose store was lost ---------------------------------------------


class StoreLost(Exception):
    """Stands for a database driver's "connection lost" error."""


def test_a_store_lost_in_a_handler_stops_the_run_instead_of_failing_the_call() -> None:
    """A session that names its ``lost_errors``: a handler raising one (its
    own query cut with the connection) stops the call unrecorded, with its
    writes undone, so the run resumes and runs it again."""
    harness = Harness([search_tool(writer(raiser(StoreLost("gone"))))])
    harness.session.lost_errors = (StoreLost,)  # type: ignore[attr-defined]
    harness.session.filesystem.files["notes.txt"] = "original"

    with pytest.raises(StoreLost):
        harness.run("search", {"query": "x"})

    assert harness.invoked() == []
    assert harness.session.get_state("counter") is None
    assert harness.session.filesystem.files == {"notes.txt": "original"}


def test_an_error_the_session_does_not_name_fails_the_call() -> None:
    harness = Harness([search_tool(writer(raiser(StoreLost("gone"))))])

    execution = harness.run("search", {"query": "x"})

    assert not execution.result.success
    assert "execution failed: gone" in execution.result.message
    assert [event.success for event in harness.invoked()] == [False]
