"""``settle(sink)``: a sink that holds records back hears of every effect
before it happens (a provider request, a handler, a policy's ``before_run``),
so it can record what it holds first (ADR 0018)."""

from __future__ import annotations

import dataclasses
from typing import Any

from tests.runtime.fakes import FakeProvider, function_call, message, response
from tooling.runtime import (
    CallLimitPolicy,
    InMemorySink,
    MarkdownSection,
    OpenAIAdapter,
    PolicyDenied,
    Prompt,
    SequentialDependencyPolicy,
    Tool,
    ToolContext,
    ToolInvoked,
    ToolResult,
)
from tooling.runtime.adapters.openai.local_calls import _KindSink
from tooling.runtime.events import settle

log: list[str] = []


class SettlingSink(InMemorySink):
    """Logs the events it receives and each ``settle()``."""

    def emit(self, event: object) -> None:
        super().emit(event)
        log.append(type(event).__name__)

    def settle(self) -> None:
        log.append("settle")


@dataclasses.dataclass(frozen=True)
class Params:
    target: str = "staging"


def handler(name: str) -> Any:
    def run(params: Params, *, context: ToolContext) -> ToolResult[Params]:
        log.append(f"run {name}")
        return ToolResult.ok(params, f"{name} done.")

    return run


def prompt(*policies: Any) -> Prompt:
    return Prompt(
        ns="tests",
        key="settle",
        sections=[
            MarkdownSection(
                key="release",
                title="Release",
                template="Release it.",
                tools=[
                    Tool(name=name, description=f"{name}.", handler=handler(name))
                    for name in ("build", "deploy")
                ],
            )
        ],
        policies=policies,
    )


def evaluate(prompt: Prompt, *replies: dict[str, Any]) -> SettlingSink:
    log.clear()
    provider = FakeProvider(*replies)
    original = provider.handle

    def handle(request: Any) -> Any:
        log.append("request")
        return original(request)

    provider.handle = handle  # type: ignore[method-assign]
    provider.client._client._transport.handler = handle  # type: ignore[attr-defined]
    sink = SettlingSink()
    OpenAIAdapter(client=provider.client, model="gpt-test").evaluate(prompt, sink=sink)
    return sink


def test_every_request_and_every_handler_is_settled_first() -> None:
    sink = evaluate(
        prompt(SequentialDependencyPolicy({"deploy": ["build"]})),
        response(
            function_call("deploy", "{}", call_id="c1"),  # denied: build first
            function_call("build", "{}", call_id="c2"),
            id="r1",
        ),
        response(function_call("deploy", "{}", call_id="c3"), id="r2"),
        response(message("Released."), id="r3"),
    )
    assert len(sink.of_type(PolicyDenied)) == 1
    assert [e.name for e in sink.of_type(ToolInvoked)] == ["deploy", "build", "deploy"]
    # each request, and each handler, comes right after a settle: whatever
    # the sink held back (the response before it, the denial) is recorded
    # before anything happens that could not be taken back
    for index, entry in enumerate(log):
        if entry == "request" or entry.startswith("run "):
            assert log[index - 1] == "settle", log
    # a denied call's records are not settled on their own: nothing ran
    denied = log.index("PolicyDenied")
    assert log[denied + 1] == "ToolInvoked"
    assert log[denied + 2 : denied + 4] == ["settle", "run build"]
    assert log.count("request") == 3


def test_a_before_run_hook_is_settled_first() -> None:
    evaluate(
        prompt(CallLimitPolicy({"build": 2})),  # counts calls in before_run
        response(function_call("build", "{}", call_id="c1"), id="r1"),
        response(message("Built."), id="r2"),
    )
    # the hook's save and the handler each come after a settle
    run = log.index("run build")
    assert log[run - 1] == "settle" and log[: run - 1].count("settle") == 2, log


def test_a_read_only_handler_is_not_settled_first() -> None:
    read = Tool(
        name="read", description="read.", handler=handler("read"), read_only=True
    )
    build = Tool(name="build", description="build.", handler=handler("build"))
    evaluate(
        Prompt(
            ns="tests",
            key="settle",
            sections=[
                MarkdownSection(
                    key="work", title="Work", template="Work.", tools=[read, build]
                )
            ],
        ),
        response(
            function_call("read", "{}", call_id="c1"),
            function_call("build", "{}", call_id="c2"),
            function_call("read", "{}", call_id="c3"),
            id="r1",
        ),
        response(message("Done."), id="r2"),
    )
    # it changes nothing outside the run: what the sink holds (the response,
    # the calls before) waits on for the next effect, the handler with an
    # effect or the next request, which settle it
    runs = [i for i, entry in enumerate(log) if entry.startswith("run ")]
    assert [log[i] for i in runs] == ["run read", "run build", "run read"]
    assert [log[i - 1] for i in runs] == [
        "ProviderCallCompleted",
        "settle",
        "ToolInvoked",
    ]
    assert log[log.index("request", runs[-1]) - 1] == "settle"
    assert log.count("settle") == 3  # two requests and build


def test_a_sink_without_settle_holds_nothing_back_and_is_left_alone() -> None:
    settle(InMemorySink())  # no error: nothing to settle


def test_the_kind_stamping_sink_passes_settle_on() -> None:
    log.clear()
    settle(_KindSink(SettlingSink(), {}))
    assert log == ["settle"]
