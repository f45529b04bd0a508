"""Resuming an interrupted evaluation from its record: recorded responses are
not requested again, recorded calls are not run again, and the conversation
continues exactly where the first attempt left it."""

import dataclasses
from typing import Any

import pytest

from tooling.runtime import InMemorySession, RunRecord, event_id_for
from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.context import ToolContext
from tooling.runtime.errors import PromptEvaluationError, RunAborted
from tooling.runtime.events import (
    InMemorySink,
    PromptExecuted,
    PromptFailed,
    ProviderCallCompleted,
    ToolInvoked,
)
from tooling.runtime.hosted.web_search import WebSearchConfig, web_search_tool
from tooling.runtime.prompt import Prompt
from tooling.runtime.results import ToolResult
from tooling.runtime.sections import MarkdownSection
from tooling.runtime.tools import Tool

from .fakes import (
    MODEL,
    FakeProvider,
    function_call,
    message,
    response,
    web_search_call,
)

RUN_ID = "session-42"


@dataclasses.dataclass(frozen=True)
class EchoParams:
    text: str


ran: list[str] = []


def echo(params: EchoParams, *, context: ToolContext) -> ToolResult[None]:
    ran.append(params.text)
    context.session.put_state("last", params.text)
    return ToolResult.ok(None, f"echo {params.text} ({context.idempotency_key})")


def make_prompt() -> Prompt:
    return Prompt(
        ns="tests",
        key="resume",
        sections=[
            MarkdownSection(
                key="task",
                title="Task",
                template="Answer.",
                tools=[Tool(name="echo", description="Echo.", handler=echo)],
                hosted_tools=[web_search_tool(WebSearchConfig())],
            )
        ],
    )


TURN_1 = response(
    web_search_call("ws_1", "tides"),
    function_call("echo", {"text": "one"}, "c1"),
    function_call("echo", {"text": "two"}, "c2"),
    id="resp_1",
)
TURN_2 = response(function_call("echo", {"text": "three"}, "c3"), id="resp_2")
TURN_3 = response(message("All done."), id="resp_3")


Run = tuple[Any, InMemorySink, FakeProvider]


def evaluate(*replies: Any, resume: RunRecord | None = None) -> Run:
    ran.clear()
    provider = FakeProvider(*replies)
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)
    session = InMemorySession(session_id=RUN_ID)
    result = adapter.evaluate(
        make_prompt(), session=session, sink=sink, run_id=RUN_ID, resume=resume
    )
    return result, sink, provider


@pytest.fixture
def full() -> Run:
    return evaluate(TURN_1, TURN_2, TURN_3)


def outputs_by_sequence(sink: InMemorySink) -> dict[int, str]:
    return {
        event.sequence: event.model_output
        for event in sink.of_type(ToolInvoked)
        if not event.native
    }


def test_resume_event_ids_are_derived_from_the_run_and_the_step(full: Run) -> None:
    _, sink, _ = full
    invoked = sink.of_type(ToolInvoked)
    assert [e.sequence for e in invoked] == [1, 2, 3, 4]
    assert [e.event_id for e in invoked] == [
        event_id_for(RUN_ID, "tool", n) for n in (1, 2, 3, 4)
    ]
    calls = sink.of_type(ProviderCallCompleted)
    assert [c.event_id for c in calls] == [
        event_id_for(RUN_ID, "provider", n) for n in (1, 2, 3)
    ]
    assert sink.of_type(PromptExecuted)[0].event_id == event_id_for(RUN_ID, "end")


def test_resume_mid_turn_runs_only_what_was_not_recorded(full: Run) -> None:
    _, full_sink, full_provider = full
    recorded = outputs_by_sequence(full_sink)
    record = RunRecord(responses=(TURN_1,), tool_outputs={2: recorded[2]})

    result, sink, provider = evaluate(TURN_2, TURN_3, resume=record)

    assert result.text == "All done."
    assert ran == ["two", "three"]  # "one" was recorded: not run again
    assert provider.requests == full_provider.requests[1:]  # turn 1 not requested
    new_calls = [e for e in sink.of_type(ToolInvoked) if not e.native]
    assert [(e.call_id, e.sequence) for e in new_calls] == [("c2", 3), ("c3", 4)]
    full_ids = {e.sequence: e.event_id for e in full_sink.of_type(ToolInvoked)}
    assert all(e.event_id == full_ids[e.sequence] for e in sink.of_type(ToolInvoked))
    assert [c.turn for c in sink.of_type(ProviderCallCompleted)] == [2, 3]
    assert result.usage == full[0].usage  # the replayed turn's usage counts


def test_resume_re_emits_native_calls_of_replayed_turns_with_their_ids(
    full: Run,
) -> None:
    record = RunRecord(responses=(TURN_1,), tool_outputs=outputs_by_sequence(full[1]))
    _, sink, _ = evaluate(TURN_2, TURN_3, resume=record)
    native = [e for e in sink.of_type(ToolInvoked) if e.native]
    assert [(e.call_id, e.event_id) for e in native] == [
        ("ws_1", event_id_for(RUN_ID, "tool", 1))
    ]


def test_resume_after_the_final_answer_requests_nothing(full: Run) -> None:
    record = RunRecord(
        responses=(TURN_1, TURN_2, TURN_3), tool_outputs=outputs_by_sequence(full[1])
    )
    result, sink, provider = evaluate(resume=record)
    assert provider.requests == []
    assert ran == []
    assert result.text == "All done."
    assert result.turns == 3
    (executed,) = sink.of_type(PromptExecuted)
    assert executed.event_id == event_id_for(RUN_ID, "end")
    assert executed.usage == full[0].usage


def test_resume_of_a_recorded_failed_response_fails_the_same_way() -> None:
    failed = response(status="failed", error={"code": "server_error", "message": "x"})
    record = RunRecord(responses=(failed,))
    ran.clear()
    provider = FakeProvider()
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)
    with pytest.raises(PromptEvaluationError) as info:
        adapter.evaluate(make_prompt(), sink=sink, run_id=RUN_ID, resume=record)
    assert info.value.phase == "response"
    assert provider.requests == []
    assert sink.of_type(PromptFailed)[0].event_id == event_id_for(RUN_ID, "end")


def test_resume_history_is_byte_for_byte_the_interrupted_one(full: Run) -> None:
    recorded = outputs_by_sequence(full[1])
    record = RunRecord(responses=(TURN_1, TURN_2), tool_outputs=recorded)
    _, _, provider = evaluate(TURN_3, resume=record)
    assert provider.requests == [full[2].requests[2]]


def test_idempotency_key_is_the_session_and_call_id(full: Run) -> None:
    _, sink, _ = full
    first = next(e for e in sink.of_type(ToolInvoked) if e.call_id == "c1")
    assert first.result.message == f"echo one ({RUN_ID}:c1)"


# -- one commit per call: state changes and their record together ---------------


class FailingSink(InMemorySink):
    """A store that fails to write the record of one call."""

    def __init__(self, fail_on: str) -> None:
        super().__init__()
        self.fail_on = fail_on

    def emit(self, event: object) -> None:
        if isinstance(event, ToolInvoked) and event.call_id == self.fail_on:
            raise RuntimeError("the record could not be written")
        super().emit(event)


def test_a_call_whose_record_fails_leaves_no_state_change() -> None:
    ran.clear()
    provider = FakeProvider(TURN_1)
    session = InMemorySession(session_id=RUN_ID)
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)
    sink = FailingSink(fail_on="c2")
    with pytest.raises(RuntimeError):
        adapter.evaluate(make_prompt(), session=session, sink=sink)
    assert ran == ["one", "two"]
    assert session.get_state("last") == "one"  # "two" rolled back with its record
    invoked = [e.call_id for e in sink.of_type(ToolInvoked) if not e.native]
    assert invoked == ["c1"]


def test_run_aborted_inside_a_handler_rolls_the_call_back_unrecorded() -> None:
    def aborting(params: EchoParams, *, context: ToolContext) -> ToolResult[None]:
        context.session.put_state("last", "aborted")
        context.beat()
        return ToolResult.ok(None, "unreachable")

    beats = {"n": 0}

    def beat() -> None:
        beats["n"] += 1
        if beats["n"] > 2:
            raise RunAborted("lease lost")

    prompt = Prompt(
        ns="tests",
        key="abort",
        sections=[
            MarkdownSection(
                key="task",
                title="Task",
                template="Answer.",
                tools=[Tool(name="echo", description="Echo.", handler=aborting)],
            )
        ],
    )
    provider = FakeProvider(response(function_call("echo", {"text": "x"}, "c1")))
    session = InMemorySession()
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)
    with pytest.raises(RunAborted):
        adapter.evaluate(prompt, session=session, sink=sink, heartbeat=beat)
    assert session.get_state("last") is None
    assert sink.of_type(ToolInvoked) == []
    assert sink.of_type(PromptFailed) == []
