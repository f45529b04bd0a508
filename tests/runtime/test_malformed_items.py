"""Output items a provider should not send: each becomes a recorded, failed
step the model can read, and the run goes on."""

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import httpx

from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.adapters.openai.codecs.base import NativeCall, field
from tooling.runtime.context import ToolContext
from tooling.runtime.events import (
    InMemorySink,
    PromptExecuted,
    ProviderCallCompleted,
    RejectedToolParams,
    ToolInvoked,
)
from tooling.runtime.hosted.base import HostedTool
from tooling.runtime.prompt import Prompt
from tooling.runtime.results import ToolResult
from tooling.runtime.sections import MarkdownSection
from tooling.runtime.tools import Tool

from .fakes import MODEL, FakeProvider, function_call, message, response


@dataclasses.dataclass(frozen=True)
class EchoParams:
    text: str


calls: list[str] = []


def echo(params: EchoParams, *, context: ToolContext) -> ToolResult[None]:
    calls.append(params.text)
    return ToolResult.ok(None, f"echo: {params.text}")


def make_prompt(hosted: Sequence[HostedTool[Any]] = ()) -> Prompt:
    return Prompt(
        ns="tests",
        key="malformed",
        sections=[
            MarkdownSection(
                key="task",
                title="Task",
                template="Answer.",
                tools=[Tool(name="echo", description="Echo.", handler=echo)],
                hosted_tools=hosted,
            )
        ],
    )


def evaluate(
    provider: FakeProvider, prompt: Prompt | None = None, **kwargs: Any
) -> tuple[Any, InMemorySink]:
    calls.clear()
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model=MODEL, **kwargs)
    result = adapter.evaluate(prompt or make_prompt(), sink=sink)
    return result, sink


def outputs(request: dict[str, Any]) -> dict[str, str]:
    return {
        item["call_id"]: item["output"]
        for item in request["input"]
        if item.get("type") == "function_call_output"
    }


def test_arguments_sent_as_an_object_are_a_failed_call() -> None:
    item = function_call("echo", call_id="call_obj") | {"arguments": {"text": "hi"}}
    provider = FakeProvider(response(item), response(message("ok")))
    result, sink = evaluate(provider)
    assert result.text == "ok"
    assert calls == []
    (invoked,) = sink.of_type(ToolInvoked)
    assert not invoked.success
    assert invoked.result.message == (
        "Tool validation failed: arguments must be a JSON-encoded string; "
        "the model sent an object."
    )
    assert invoked.raw_arguments == '{"text": "hi"}'
    assert isinstance(invoked.params, RejectedToolParams)
    assert outputs(provider.requests[1]) == {"call_obj": invoked.result.message}


def test_arguments_that_are_not_json_are_a_failed_call() -> None:
    provider = FakeProvider(
        response(function_call("echo", "{not json", call_id="c1")), response()
    )
    _, sink = evaluate(provider)
    (invoked,) = sink.of_type(ToolInvoked)
    assert invoked.result.message.startswith(
        "Tool validation failed: arguments are not valid JSON"
    )


def test_a_repeated_call_id_is_recorded_and_not_run_again() -> None:
    provider = FakeProvider(
        response(
            function_call("echo", {"text": "one"}, call_id="dup"),
            function_call("echo", {"text": "two"}, call_id="dup"),
        ),
        response(function_call("echo", {"text": "three"}, call_id="dup")),
        response(message()),
    )
    _, sink = evaluate(provider)
    assert calls == ["one"]
    invoked = sink.of_type(ToolInvoked)
    assert [(e.call_id, e.success) for e in invoked] == [
        ("dup", True),
        ("dup", False),
        ("dup", False),
    ]
    assert invoked[1].result.message == (
        "The call_id 'dup' was already used by an earlier function call of this "
        "run; this call was not run."
    )
    assert [e.sequence for e in invoked] == [1, 2, 3]
    assert len({e.event_id for e in invoked}) == 3


def test_a_call_without_call_id_is_recorded_and_not_run() -> None:
    item = function_call("echo", {"text": "x"})
    item.pop("call_id")
    item.pop("id")
    provider = FakeProvider(response(item), response())
    _, sink = evaluate(provider)
    assert calls == []
    (invoked,) = sink.of_type(ToolInvoked)
    assert invoked.call_id is None
    assert invoked.result.message == "The function call has no call_id; it was not run."


def test_an_unknown_tool_with_a_huge_name_is_a_failed_call() -> None:
    name = "x" * 5000
    provider = FakeProvider(response(function_call(name, {}, "c1")), response())
    _, sink = evaluate(provider)
    (invoked,) = sink.of_type(ToolInvoked)
    assert invoked.name == name  # the event keeps it whole; the record cuts it
    assert not invoked.success
    assert invoked.result.message.startswith("Unknown tool 'xxxx")
    assert len(invoked.result.message) < 200


def test_a_name_that_is_not_a_string_is_a_failed_call() -> None:
    item = function_call("echo", {"text": "x"}, "c1") | {"name": {"evil": 1}}
    provider = FakeProvider(response(item), response())
    _, sink = evaluate(provider)
    (invoked,) = sink.of_type(ToolInvoked)
    assert invoked.name == '{"evil": 1}'
    assert not invoked.success


def test_items_that_are_not_objects_are_listed_as_unknown() -> None:
    junk: list[Any] = ["text", 42]
    provider = FakeProvider(response(*junk, message("fine")))
    result, sink = evaluate(provider)
    assert result.text == "fine"
    (call,) = sink.of_type(ProviderCallCompleted)
    assert call.unknown_item_types == ("None", "None")


def test_lone_surrogates_from_the_provider_are_replaced_when_sent_again() -> None:
    body = json.dumps(
        response(
            message("thinking \udc00 aloud", id="msg_0"),
            function_call("echo", {"text": "a\ud800b"}, "c1"),
        ),
    ).encode()
    assert b"\\udc00" in body and b"\\\\ud800" in body

    provider = FakeProvider(
        httpx.Response(200, content=body, headers={"content-type": "application/json"}),
        response(message("done")),
    )
    result, sink = evaluate(provider)
    assert result.text == "done"
    assert calls == ["a\ufffdb"]
    first = sink.of_type(ProviderCallCompleted)[0]
    # The event keeps what was received (the recorder converts and flags it);
    # what is sent again is encodable.
    assert first.response["output"][0]["content"][0]["text"] == "thinking \udc00 aloud"
    replayed = provider.requests[1]["input"][1]["content"][0]["text"]
    assert replayed == "thinking \ufffd aloud"


def test_a_tool_output_with_surrogates_is_sent_replaced() -> None:
    def bad(params: EchoParams, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult.ok(None, "bad \udfff text")

    prompt = Prompt(
        ns="tests",
        key="surrogate-output",
        sections=[
            MarkdownSection(
                key="task",
                title="Task",
                template="Answer.",
                tools=[Tool(name="echo", description="Echo.", handler=bad)],
            )
        ],
    )
    provider = FakeProvider(
        response(function_call("echo", {"text": "x"}, "c1")), response()
    )
    _, sink = evaluate(provider, prompt)
    assert outputs(provider.requests[1]) == {"c1": "bad \ufffd text"}
    assert sink.of_type(ToolInvoked)[0].model_output == "bad \ufffd text"


@dataclasses.dataclass(frozen=True)
class GizmoConfig:
    label: str = "g"


class BrittleCodec:
    """Reads items the way a careless codec would: ``item.action.query``."""

    kind = "gizmo"
    item_types = ("gizmo_call",)
    include = ()

    def serialize(self, tool: HostedTool[Any]) -> dict[str, Any]:
        return {"type": "gizmo"}

    def tool_choice(self, tool: HostedTool[Any]) -> dict[str, Any]:
        return {"type": "gizmo"}

    def matches(self, item: Any, tool: HostedTool[Any]) -> bool:
        return True

    def parse_call(self, item: Any) -> NativeCall | None:
        query = item.action["query"]
        return NativeCall(field(item, "id"), {"query": query}, None, True, "ok", "")

    def parse_output(self, response_items: Sequence[Any], tool: Any) -> Any:
        raise RuntimeError("cannot build an output")


def test_a_native_item_the_codec_cannot_read_is_a_failed_native_call() -> None:
    gizmo = HostedTool(
        name="gizmo", kind="gizmo", description="A gizmo.", config=GizmoConfig()
    )
    provider = FakeProvider(
        response(
            {"type": "gizmo_call", "id": "gz_1", "action": "not an object"},
            {"type": "gizmo_call", "id": "gz_2", "action": {"query": "fine"}},
            message("answered"),
        )
    )
    result, sink = evaluate(
        provider, make_prompt([gizmo]), hosted_tool_codecs={"gizmo": BrittleCodec()}
    )
    assert result.text == "answered"
    assert result.hosted_outputs == {}  # parse_output failed: left out, no crash
    bad, good = sink.of_type(ToolInvoked)
    assert (bad.native, bad.success, bad.call_id) == (True, False, "gz_1")
    assert bad.result.message.startswith(
        "The provider's gizmo_call item could not be read (TypeError: "
    )
    assert (good.success, good.params) == (True, {"query": "fine"})
    assert len(sink.of_type(PromptExecuted)) == 1
