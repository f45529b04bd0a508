"""``OpenAIAdapter`` against the real ``openai`` SDK over ``httpx.MockTransport``.

Every request the SDK sends is captured as JSON; every reply is realistic
Responses API JSON, so the SDK's own parsing and error mapping are exercised.
"""

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any, cast

import httpx
import pytest

from tooling.runtime.adapters.openai import OpenAIAdapter, OpenAIWebSearchCodec
from tooling.runtime.adapters.openai.codecs import default_codecs
from tooling.runtime.adapters.openai.codecs.base import NativeCall
from tooling.runtime.adapters.openai.redaction import (
    REDACTED,
    redact_request,
    redact_tools,
)
from tooling.runtime.context import ToolContext
from tooling.runtime.deadlines import Budget, Deadline, FakeClock, TokenUsage
from tooling.runtime.errors import PromptEvaluationError
from tooling.runtime.events import (
    InMemorySink,
    PromptExecuted,
    PromptFailed,
    PromptRendered,
    ProviderCallCompleted,
    ProviderCallFailed,
    ToolInvoked,
)
from tooling.runtime.hosted.base import HostedTool
from tooling.runtime.hosted.web_search import (
    Citation,
    WebSearchCall,
    WebSearchResult,
    web_search_tool,
)
from tooling.runtime.prompt import Prompt, StructuredOutput, ToolChoice
from tooling.runtime.results import ToolResult
from tooling.runtime.sections import MarkdownSection, Section
from tooling.runtime.session import InMemorySession
from tooling.runtime.tools import NativeTool, Tool

from .fakes import (
    MODEL,
    FakeProvider,
    function_call,
    message,
    message_parts,
    reasoning,
    response,
    text_part,
    url_citation,
    web_search_call,
)

SYSTEM_TEXT = "## 1. Task (task)\n\nAnswer the question."

# -- prompts -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LookupParams:
    query: str = dataclasses.field(metadata={"description": "What to look up"})
    limit: int = 3


@dataclasses.dataclass(frozen=True)
class LookupResult:
    answer: str


@dataclasses.dataclass(frozen=True)
class Answer:
    answer: str
    confidence: float = 0.5


@dataclasses.dataclass(frozen=True)
class Topic:
    topic: str


@dataclasses.dataclass(frozen=True)
class Blob:
    data: bytes


@dataclasses.dataclass(frozen=True)
class GizmoConfig:
    label: str = "main"


lookup_log: list[LookupParams] = []


def lookup(params: LookupParams, *, context: ToolContext) -> ToolResult[LookupResult]:
    lookup_log.append(params)
    return ToolResult.ok(LookupResult(f"{params.query}!"), "Looked up.")


def lookup_tool(name: str = "lookup") -> Tool[LookupParams, LookupResult]:
    return Tool(name=name, description="Look something up.", handler=lookup)


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    lookup_log.clear()


def make_prompt(
    *,
    tools: Sequence[Tool[Any, Any]] = (),
    hosted: Sequence[HostedTool[Any]] = (),
    extra_sections: Sequence[Section] = (),
    **kwargs: Any,
) -> Prompt:
    return Prompt(
        ns="tests",
        key="adapter",
        name="adapter-prompt",
        sections=[
            MarkdownSection(
                key="task",
                title="Task",
                template="Answer the question.",
                tools=tools,
                hosted_tools=hosted,
            ),
            *extra_sections,
        ],
        **kwargs,
    )


def make_adapter(provider: FakeProvider, **kwargs: Any) -> OpenAIAdapter:
    return OpenAIAdapter(client=provider.client, model=MODEL, **kwargs)


def evaluate(
    provider: FakeProvider, prompt: Prompt, *, adapter_kwargs: Any = None, **kwargs: Any
) -> tuple[Any, InMemorySink]:
    sink = InMemorySink()
    adapter = make_adapter(provider, **(adapter_kwargs or {}))
    result = adapter.evaluate(prompt, sink=sink, **kwargs)
    return result, sink


def failure(
    provider: FakeProvider, prompt: Prompt, *, adapter_kwargs: Any = None, **kwargs: Any
) -> tuple[PromptEvaluationError, InMemorySink]:
    sink = InMemorySink()
    adapter = make_adapter(provider, **(adapter_kwargs or {}))
    with pytest.raises(PromptEvaluationError) as info:
        adapter.evaluate(prompt, sink=sink, **kwargs)
    return info.value, sink


LOOKUP_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"description": "What to look up", "type": "string"},
        "limit": {"type": ["integer", "null"]},
    },
    "required": ["query", "limit"],
    "additionalProperties": False,
}


# -- construction ------------------------------------------------------------------


@pytest.mark.parametrize("model", ["", "   "])
def test_adapter_requires_a_model(model: str) -> None:
    with pytest.raises(ValueError, match=r"^OpenAIAdapter needs a model name\.$"):
        OpenAIAdapter(client=FakeProvider().client, model=model)


def test_adapter_requires_positive_max_turns() -> None:
    with pytest.raises(ValueError, match=r"^max_turns must be at least 1\.$"):
        OpenAIAdapter(client=FakeProvider().client, model=MODEL, max_turns=0)


def test_adapter_without_a_client_builds_the_sdks_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.test/v1")
    adapter = OpenAIAdapter(model=MODEL)
    assert adapter.client.api_key == "sk-from-env"
    assert str(adapter.client.base_url) == "http://env.test/v1/"


def test_adapter_parse_output_true_is_accepted_and_false_refused() -> None:
    provider = FakeProvider(response(message('{"answer": "x", "confidence": 1}')))
    prompt = make_prompt(output=StructuredOutput.from_dataclass(Answer))
    with pytest.raises(ValueError, match="parse_output=False is not supported"):
        make_adapter(provider).evaluate(prompt, parse_output=False)
    assert provider.requests == []
    result = make_adapter(provider).evaluate(prompt, parse_output=True)
    assert result.output == Answer(answer="x", confidence=1)


def test_adapter_defaults() -> None:
    adapter = OpenAIAdapter(client=FakeProvider().client, model=f" {MODEL} ")
    assert adapter.model == MODEL
    assert adapter.name == "openai"
    assert set(adapter.hosted_tool_codecs) == set(default_codecs())
    assert "web_search" in adapter.hosted_tool_codecs
    assert adapter.max_turns == 16
    assert adapter.parallel_tool_calls is True


# -- the request body --------------------------------------------------------------


def test_adapter_request_body_for_a_function_tool() -> None:
    provider = FakeProvider(response(message("Hi.")))
    evaluate(provider, make_prompt(tools=[lookup_tool()]))
    assert provider.requests == [
        {
            "model": MODEL,
            "input": [{"role": "system", "content": SYSTEM_TEXT}],
            "tools": [
                {
                    "type": "function",
                    "name": "lookup",
                    "description": "Look something up.",
                    "parameters": LOOKUP_SCHEMA,
                    "strict": True,
                }
            ],
            "parallel_tool_calls": True,
        }
    ]


def test_adapter_request_body_without_tools() -> None:
    provider = FakeProvider(response(message("Hi.")))
    evaluate(provider, make_prompt())
    assert provider.requests == [
        {"model": MODEL, "input": [{"role": "system", "content": SYSTEM_TEXT}]}
    ]


def test_adapter_request_body_options() -> None:
    provider = FakeProvider(response(message("Hi.")))
    evaluate(
        provider,
        make_prompt(tools=[lookup_tool()]),
        adapter_kwargs={
            "parallel_tool_calls": False,
            "store": False,
            "extra_request": {"temperature": 0.2, "reasoning": {"effort": "low"}},
        },
    )
    body = provider.requests[0]
    assert body["parallel_tool_calls"] is False
    assert body["store"] is False
    assert body["temperature"] == 0.2
    assert body["reasoning"] == {"effort": "low"}


def test_adapter_request_body_for_web_search_only() -> None:
    provider = FakeProvider(response(message("Hi.")))
    evaluate(provider, make_prompt(hosted=[web_search_tool()]))
    body = provider.requests[0]
    assert body["tools"] == [{"type": "web_search"}]
    assert body["include"] == ["web_search_call.action.sources"]
    assert "parallel_tool_calls" not in body
    assert "tool_choice" not in body


def test_adapter_include_is_listed_once_for_several_hosted_tools() -> None:
    provider = FakeProvider(response(message("Hi.")))
    prompt = make_prompt(
        hosted=[web_search_tool(), web_search_tool(name="news_search")]
    )
    evaluate(provider, prompt)
    assert provider.requests[0]["include"] == ["web_search_call.action.sources"]
    assert provider.requests[0]["tools"] == [
        {"type": "web_search"},
        {"type": "web_search"},
    ]


def test_adapter_request_body_structured_output() -> None:
    provider = FakeProvider(response(message('{"answer": "42"}')))
    output = StructuredOutput.from_dataclass(Answer)
    evaluate(provider, make_prompt(output=output))
    assert provider.requests[0]["text"] == {
        "format": {
            "type": "json_schema",
            "name": "Answer_schema",
            "schema": {
                "type": "object",
                "properties": {
                    "answer": {"type": "string"},
                    "confidence": {"type": ["number", "null"]},
                },
                "required": ["answer", "confidence"],
                "additionalProperties": False,
            },
            "strict": True,
        }
    }


def test_adapter_param_description_overrides_reach_the_tools_payload() -> None:
    provider = FakeProvider(response(message("Hi.")))
    prompt = make_prompt(
        tools=[lookup_tool()],
        param_descriptions={"lookup": {"query": "Overridden", "limit": "How many"}},
    )
    evaluate(provider, prompt)
    parameters = provider.requests[0]["tools"][0]["parameters"]
    assert parameters["properties"]["query"]["description"] == "Overridden"
    assert parameters["properties"]["limit"]["description"] == "How many"


def test_adapter_non_strict_schema_is_sent_with_strict_false() -> None:
    @dataclasses.dataclass(frozen=True)
    class Table:
        rows: dict[str, int]

    # The handler is never called: only the params type's schema matters.
    table = Tool(
        name="table",
        description="Tabulate.",
        params_type=Table,
        handler=cast(Any, lookup),
    )
    adapter = make_adapter(FakeProvider())
    payload = adapter.tools_payload(make_prompt(tools=[table]).render())
    assert payload[0]["strict"] is False


def test_adapter_native_tool_naming_no_built_in_is_rejected_before_any_request() -> (
    None
):
    provider = FakeProvider()
    native: NativeTool[Any, Any] = NativeTool(
        name="native", description="Provider side."
    )
    error, _ = failure(provider, make_prompt(tools=[native]))
    assert error.phase == "render"
    assert error.message.startswith(
        "Native tool 'native' is not a built-in tool of the OpenAI adapter; its "
        "built-ins: "
    )
    assert "code_interpreter" in error.message and "web_search" in error.message
    assert provider.requests == []


def test_adapter_unsupported_param_type_fails_with_phase_render() -> None:
    provider = FakeProvider()
    # The handler is never called: the params type is refused first.
    blob = Tool(
        name="blob",
        description="Store bytes.",
        params_type=Blob,
        handler=cast(Any, lookup),
    )
    error, _ = failure(provider, make_prompt(tools=[blob]))
    assert error.phase == "render"
    assert provider.requests == []


# -- tool_choice -------------------------------------------------------------------


def choice_payload(text: str, *, codecs: Any = None) -> Any:
    tools = [lookup_tool(), lookup_tool("other")]
    prompt = make_prompt(
        tools=tools, hosted=[web_search_tool()], tool_choice=ToolChoice.parse(text)
    )
    kwargs = {} if codecs is None else {"hosted_tool_codecs": codecs}
    return make_adapter(FakeProvider(), **kwargs).request_preview(prompt.render())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("tool:lookup", {"type": "function", "name": "lookup"}),
        (
            "tool:web_search",
            {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "web_search"}],
            },
        ),
        (
            "allowed:lookup,web_search",
            {
                "type": "allowed_tools",
                "mode": "auto",
                "tools": [
                    {"type": "function", "name": "lookup"},
                    {"type": "web_search"},
                ],
            },
        ),
        (
            "allowed-required:other",
            {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "function", "name": "other"}],
            },
        ),
    ],
)
def test_adapter_tool_choice_mapping(text: str, expected: Any) -> None:
    assert choice_payload(text)["tool_choice"] == expected


def test_adapter_tool_choice_omitted_when_none() -> None:
    assert "tool_choice" not in choice_payload_none()


def choice_payload_none() -> dict[str, Any]:
    prompt = make_prompt(tools=[lookup_tool()])
    return make_adapter(FakeProvider()).request_preview(prompt.render())


def test_adapter_tool_choice_naming_a_disabled_tool_fails_before_any_request() -> None:
    provider = FakeProvider()
    prompt = make_prompt(
        tools=[lookup_tool()],
        extra_sections=[
            MarkdownSection(
                key="later", title="Later", enabled=False, tools=[lookup_tool("hidden")]
            )
        ],
        tool_choice=ToolChoice.parse("allowed:lookup,hidden"),
    )
    error, sink = failure(provider, prompt)
    assert error.phase == "render"
    assert error.message == (
        "tool_choice names 'hidden', which is not a tool of this prompt."
    )
    assert provider.requests == []
    assert sink.of_type(PromptRendered) == []


def test_adapter_forced_tool_choice_is_relaxed_after_the_first_turn() -> None:
    provider = FakeProvider(
        response(function_call()),
        response(function_call(call_id="call_2")),
        response(message()),
    )
    prompt = make_prompt(
        tools=[lookup_tool()], tool_choice=ToolChoice.parse("tool:lookup")
    )
    evaluate(provider, prompt)
    assert [r["tool_choice"] for r in provider.requests] == [
        {"type": "function", "name": "lookup"},
        "auto",
        "auto",
    ]


def test_adapter_required_tool_choice_is_relaxed_after_the_first_turn() -> None:
    provider = FakeProvider(response(function_call()), response(message()))
    prompt = make_prompt(
        tools=[lookup_tool()], tool_choice=ToolChoice.parse("required")
    )
    evaluate(provider, prompt)
    assert [r["tool_choice"] for r in provider.requests] == ["required", "auto"]


def test_adapter_non_forcing_tool_choice_is_kept() -> None:
    provider = FakeProvider(response(function_call()), response(message()))
    prompt = make_prompt(
        tools=[lookup_tool(), lookup_tool("other")],
        tool_choice=ToolChoice.parse("allowed:lookup"),
    )
    evaluate(provider, prompt)
    first, second = (r["tool_choice"] for r in provider.requests)
    assert first == second
    assert first["mode"] == "auto"


def test_adapter_forced_allowed_tools_keeps_its_restriction_when_relaxed() -> None:
    provider = FakeProvider(response(function_call()), response(message()))
    prompt = make_prompt(
        tools=[lookup_tool(), lookup_tool("other")],
        tool_choice=ToolChoice.parse("allowed-required:lookup"),
    )
    evaluate(provider, prompt)
    assert provider.requests[1]["tool_choice"] == {
        "type": "allowed_tools",
        "mode": "auto",
        "tools": [{"type": "function", "name": "lookup"}],
    }


# -- the tool loop -----------------------------------------------------------------


def test_adapter_function_call_outputs_follow_the_replayed_items() -> None:
    first_items = [
        reasoning(),
        function_call(arguments={"query": "moon"}, call_id="call_a"),
        function_call(arguments={"query": "sun", "limit": None}, call_id="call_b"),
    ]
    provider = FakeProvider(response(*first_items), response(message("Both.")))
    result, _ = evaluate(provider, make_prompt(tools=[lookup_tool()]))
    assert result.text == "Both."
    assert lookup_log == [LookupParams("moon"), LookupParams("sun", 3)]
    assert provider.requests[1]["input"] == [
        {"role": "system", "content": SYSTEM_TEXT},
        *first_items,
        {
            "type": "function_call_output",
            "call_id": "call_a",
            "output": 'Looked up.\n\n{"answer": "moon!"}',
        },
        {
            "type": "function_call_output",
            "call_id": "call_b",
            "output": 'Looked up.\n\n{"answer": "sun!"}',
        },
    ]


def test_adapter_history_replays_reasoning_web_search_and_text_verbatim() -> None:
    first_items = [
        reasoning("rs_9"),
        web_search_call("ws_9", sources=["https://a.example"]),
        message("Let me check.", id="msg_9"),
        function_call(call_id="call_9"),
    ]
    provider = FakeProvider(response(*first_items), response(message("Done.")))
    evaluate(provider, make_prompt(tools=[lookup_tool()], hosted=[web_search_tool()]))
    second_input = provider.requests[1]["input"]
    assert second_input[1:5] == first_items
    assert second_input[5]["type"] == "function_call_output"
    assert len(second_input) == 6


def test_adapter_tool_failures_go_back_to_the_model() -> None:
    provider = FakeProvider(
        response(
            function_call("ghost", call_id="call_1"),
            function_call(arguments="{oops", call_id="call_2"),
        ),
        response(message("Recovered.")),
    )
    result, sink = evaluate(provider, make_prompt(tools=[lookup_tool()]))
    assert result.text == "Recovered."
    outputs = provider.requests[1]["input"][-2:]
    assert outputs[0] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "Unknown tool 'ghost'. Available tools: lookup.",
    }
    assert outputs[1]["output"].startswith(
        "Tool validation failed: arguments are not valid JSON"
    )
    assert [e.success for e in sink.of_type(ToolInvoked)] == [False, False]


def test_adapter_provider_call_events_record_only_new_input() -> None:
    provider = FakeProvider(
        response(function_call(), id="resp_1"), response(message(), id="resp_2")
    )
    _, sink = evaluate(provider, make_prompt(tools=[lookup_tool()]))
    first, second = sink.of_type(ProviderCallCompleted)
    assert (first.turn, first.input_offset, first.response_id) == (1, 0, "resp_1")
    assert first.request["input"] == [{"role": "system", "content": SYSTEM_TEXT}]
    assert first.request["model"] == MODEL
    assert first.request_id == "req_1"
    assert first.status == "completed"
    assert first.latency_ms >= 0
    assert first.response["id"] == "resp_1"
    assert (second.turn, second.input_offset, second.response_id) == (2, 1, "resp_2")
    assert [item["type"] for item in second.request["input"]] == [
        "function_call",
        "function_call_output",
    ]
    assert second.request_id == "req_2"


def test_adapter_usage_is_summed_across_calls() -> None:
    provider = FakeProvider(
        response(function_call(), usage=(10, 5), cached=2),
        response(message(), usage=(20, 7)),
    )
    result, sink = evaluate(provider, make_prompt(tools=[lookup_tool()]))
    expected = TokenUsage(input_tokens=30, output_tokens=12, cached_tokens=2)
    assert result.usage == expected
    (executed,) = sink.of_type(PromptExecuted)
    assert executed.usage == expected
    per_call = [event.usage for event in sink.of_type(ProviderCallCompleted)]
    assert per_call == [TokenUsage(10, 5, 2), TokenUsage(20, 7)]


def test_adapter_unknown_output_items_are_logged_and_not_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mystery = {
        "type": "mystery_item",
        "id": "mx_1",
        "content": [text_part("HIDDEN")],
    }
    provider = FakeProvider(response(mystery, message("Visible.")))
    with caplog.at_level(logging.WARNING, logger="tooling.runtime.adapters.openai.run"):
        result, sink = evaluate(provider, make_prompt())
    assert result.text == "Visible."
    (call,) = sink.of_type(ProviderCallCompleted)
    assert call.unknown_item_types == ("mystery_item",)
    assert "Unknown output item type 'mystery_item' at 0" in caplog.text


def test_adapter_known_items_are_not_reported_unknown() -> None:
    provider = FakeProvider(response(reasoning(), web_search_call(), message()))
    _, sink = evaluate(provider, make_prompt(hosted=[web_search_tool()]))
    assert sink.of_type(ProviderCallCompleted)[0].unknown_item_types == ()


def test_adapter_max_turns_aborts_with_limit_phase() -> None:
    provider = FakeProvider(
        response(function_call(call_id="c1")), response(function_call(call_id="c2"))
    )
    error, sink = failure(
        provider, make_prompt(tools=[lookup_tool()]), adapter_kwargs={"max_turns": 2}
    )
    assert error.phase == "limit"
    assert error.message == "The model did not answer within the maximum of 2 turn(s)."
    assert len(provider.requests) == 2
    assert len(lookup_log) == 2
    assert sink.of_type(PromptFailed)[0].phase == "limit"


def test_adapter_max_turns_argument_overrides_the_adapter_default() -> None:
    provider = FakeProvider(response(function_call()))
    error, _ = failure(provider, make_prompt(tools=[lookup_tool()]), max_turns=1)
    assert error.message == "The model did not answer within the maximum of 1 turn(s)."
    assert len(provider.requests) == 1


def test_adapter_handler_prompt_evaluation_error_aborts_the_run() -> None:
    def stop(params: LookupParams, *, context: ToolContext) -> ToolResult[None]:
        raise PromptEvaluationError(
            "handler gave up", phase="tool", prompt_name="inner"
        )

    tool = Tool(name="stop", description="Stop.", handler=stop)
    provider = FakeProvider(response(function_call("stop")))
    error, sink = failure(provider, make_prompt(tools=[tool]))
    assert error.message == "handler gave up"
    (failed,) = sink.of_type(PromptFailed)
    assert (failed.prompt_name, failed.phase) == ("inner", "tool")


# -- provider failures -------------------------------------------------------------


def test_adapter_failed_response_status_aborts_with_response_phase() -> None:
    provider = FakeProvider(
        response(status="failed", error={"code": "server_error", "message": "boom"})
    )
    error, sink = failure(provider, make_prompt())
    assert error.phase == "response"
    assert error.message == (
        "The provider reported the response as failed: server_error: boom"
    )
    assert error.provider_payload == {
        "response_id": "resp_1",
        "error": {"code": "server_error", "message": "boom"},
    }
    assert sink.of_type(ProviderCallCompleted)[0].status == "failed"
    assert sink.of_type(PromptFailed)[0].message == error.message


def test_adapter_failed_response_without_details() -> None:
    error, _ = failure(FakeProvider(response(status="failed")), make_prompt())
    assert (
        error.message
        == "The provider reported the response as failed: error: no message"
    )


def test_adapter_incomplete_response_aborts_with_response_phase() -> None:
    provider = FakeProvider(
        response(
            message("Partial"),
            status="incomplete",
            incomplete_details={"reason": "max_output_tokens"},
        )
    )
    error, _ = failure(provider, make_prompt())
    assert error.phase == "response"
    assert error.message == (
        "The provider returned an incomplete response (reason: max_output_tokens)."
    )
    assert error.provider_payload == {
        "response_id": "resp_1",
        "reason": "max_output_tokens",
    }


def test_adapter_incomplete_response_without_reason() -> None:
    error, _ = failure(FakeProvider(response(status="incomplete")), make_prompt())
    assert (
        error.message
        == "The provider returned an incomplete response (reason: unknown)."
    )


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, "BadRequestError"),
        (401, "AuthenticationError"),
        (429, "RateLimitError"),
        (500, "InternalServerError"),
    ],
)
def test_adapter_http_errors_abort_with_request_phase(
    status: int, error_type: str
) -> None:
    body = {
        "error": {
            "message": "bad thing",
            "type": "invalid_request_error",
            "code": "bad_code",
            "param": None,
        }
    }
    reply = httpx.Response(status, json=body, headers={"x-request-id": "req_err"})
    provider = FakeProvider(reply)
    error, sink = failure(provider, make_prompt())
    assert error.phase == "request"
    assert error.message.startswith("The provider rejected the request: ")
    assert "bad thing" in error.message
    assert error.provider_payload == {
        "error_type": error_type,
        "status_code": status,
        "code": "bad_code",
        "request_id": "req_err",
        "attempts": 1,
    }
    assert len(provider.requests) == 1
    (failed,) = sink.of_type(ProviderCallFailed)
    assert failed.status_code == status
    assert failed.error_type == error_type
    assert failed.request_id == "req_err"
    assert failed.error == error.message
    assert failed.turn == 1
    assert failed.input_offset == 0
    assert failed.request["input"] == [{"role": "system", "content": SYSTEM_TEXT}]
    assert sink.of_type(PromptFailed)[0].phase == "request"


@pytest.mark.parametrize(
    ("exception", "message", "error_type"),
    [
        (
            httpx.ConnectError("refused"),
            "Could not connect to the provider.",
            "APIConnectionError",
        ),
        (
            httpx.ReadTimeout("slow"),
            "The provider request timed out.",
            "APITimeoutError",
        ),
    ],
)
def test_adapter_transport_errors_abort_with_request_phase(
    exception: Exception, message: str, error_type: str
) -> None:
    error, sink = failure(FakeProvider(exception), make_prompt())
    assert (error.phase, error.message) == ("request", message)
    assert error.provider_payload["status_code"] is None
    assert error.provider_payload["error_type"] == error_type
    assert sink.of_type(ProviderCallFailed)[0].status_code is None


# -- render-time validation: nothing is sent ---------------------------------------


def test_adapter_unknown_hosted_kind_fails_before_any_request() -> None:
    provider = FakeProvider()
    gizmo = HostedTool(
        kind="made_up", name="gizmo", description="A gizmo.", config=GizmoConfig()
    )
    error, sink = failure(
        provider,
        make_prompt(hosted=[gizmo]),
        adapter_kwargs={"hosted_tool_codecs": {"web_search": OpenAIWebSearchCodec()}},
    )
    assert error.phase == "render"
    assert error.message == (
        "Unsupported hosted tool kind 'made_up' (tool 'gizmo') for the OpenAI adapter; "
        "supported kinds: web_search."
    )
    assert provider.requests == []
    assert sink.of_type(PromptRendered) == []
    assert sink.of_type(PromptFailed)[0].phase == "render"


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("web_search", "a WebSearchConfig"),
        ("file_search", "a FileSearchConfig"),
        ("code_interpreter", "a CodeInterpreterConfig"),
        ("image_generation", "an ImageGenerationConfig"),
        ("mcp", "an McpConfig"),
    ],
)
def test_adapter_config_of_the_wrong_type_fails_before_any_request(
    kind: str, expected: str
) -> None:
    provider = FakeProvider()
    mismatched = HostedTool(
        kind=kind, name="mismatched", description="Wrong config.", config=GizmoConfig()
    )
    error, sink = failure(provider, make_prompt(hosted=[mismatched]))
    assert error.phase == "render"
    assert error.message == (
        f"Hosted tool 'mismatched' of kind '{kind}' needs {expected}, not GizmoConfig."
    )
    assert provider.requests == []
    assert sink.of_type(PromptFailed)[0].phase == "render"


def test_adapter_without_codecs_supports_no_hosted_kind() -> None:
    provider = FakeProvider()
    error, _ = failure(
        provider,
        make_prompt(hosted=[web_search_tool()]),
        adapter_kwargs={"hosted_tool_codecs": {}},
    )
    assert error.message.endswith("supported kinds: none.")
    assert provider.requests == []


@pytest.mark.parametrize(
    ("capabilities", "supported"),
    [
        ({MODEL: frozenset()}, "no hosted tools"),
        ({"other-model": frozenset({"web_search"})}, "no hosted tools"),
        (
            {MODEL: frozenset({"file_search", "code_interpreter"})},
            "code_interpreter, file_search",
        ),
    ],
)
def test_adapter_model_capabilities_refuse_kinds_before_any_request(
    capabilities: dict[str, frozenset[str]], supported: str
) -> None:
    provider = FakeProvider()
    error, _ = failure(
        provider,
        make_prompt(hosted=[web_search_tool()]),
        adapter_kwargs={"model_capabilities": capabilities},
    )
    assert error.phase == "render"
    assert error.message == (
        f"Model '{MODEL}' does not support hosted tool kind 'web_search' (tool "
        f"'web_search'); it supports: {supported}."
    )
    assert provider.requests == []


def test_adapter_model_capabilities_allow_listed_kinds() -> None:
    provider = FakeProvider(response(message("Hi.")))
    result, _ = evaluate(
        provider,
        make_prompt(hosted=[web_search_tool()]),
        adapter_kwargs={"model_capabilities": {MODEL: frozenset({"web_search"})}},
    )
    assert result.text == "Hi."


def test_adapter_render_errors_fail_with_render_phase() -> None:
    provider = FakeProvider()
    prompt = make_prompt(
        extra_sections=[
            MarkdownSection(
                key="topic", title="Topic", template="$topic", params_type=Topic
            )
        ]
    )
    error, sink = failure(provider, prompt)
    assert error.phase == "render"
    assert error.message == "Missing parameter(s) 'topic' for section 'topic'."
    assert provider.requests == []
    assert sink.of_type(PromptFailed)[0].phase == "render"


def test_adapter_renders_with_bound_params_and_values() -> None:
    prompt = make_prompt(
        extra_sections=[
            MarkdownSection(
                key="topic", title="Topic", template="$topic", params_type=Topic
            )
        ]
    )
    provider = FakeProvider(response(message()), response(message()))
    evaluate(provider, prompt, values={"topic": "tides"})
    make_adapter(provider).evaluate(prompt, Topic("moons"))
    assert provider.requests[0]["input"][0]["content"].endswith(
        "## 2. Topic (topic)\n\ntides"
    )
    assert provider.requests[1]["input"][0]["content"].endswith("moons")


def test_adapter_uses_a_pre_rendered_prompt() -> None:
    prompt = make_prompt()
    rendered = dataclasses.replace(prompt.render(), text="Pre-rendered text.")
    provider = FakeProvider(response(message()))
    evaluate(provider, prompt, rendered=rendered)
    assert provider.requests[0]["input"] == [
        {"role": "system", "content": "Pre-rendered text."}
    ]


# -- deadlines, budgets, heartbeat -------------------------------------------------


def test_adapter_expired_deadline_before_start_fails_with_deadline_phase() -> None:
    clock = FakeClock()
    deadline = Deadline.after(1, clock=clock)
    clock.advance(2)
    provider = FakeProvider()
    error, sink = failure(provider, make_prompt(), deadline=deadline)
    assert error.phase == "deadline"
    assert error.message == "Deadline expired before evaluation started."
    assert error.provider_payload == {
        "deadline_expires_at": "2026-01-01T00:00:01+00:00"
    }
    assert provider.requests == []
    assert sink.of_type(PromptFailed)[0].provider_payload == error.provider_payload


def test_adapter_deadline_expiring_during_tools_stops_before_next_request() -> None:
    clock = FakeClock()
    deadline = Deadline.after(10, clock=clock)

    def slow(params: LookupParams, *, context: ToolContext) -> ToolResult[None]:
        clock.advance(30)
        return ToolResult.ok(None)

    tool = Tool(name="slow", description="Slow.", handler=slow)
    provider = FakeProvider(response(function_call("slow")))
    error, _ = failure(provider, make_prompt(tools=[tool]), deadline=deadline)
    assert error.phase == "deadline"
    assert error.message == "Deadline expired before provider request."
    assert len(provider.requests) == 1


def slow_reply(clock: FakeClock, body: dict[str, Any]) -> Callable[[], Any]:
    def reply() -> dict[str, Any]:
        clock.advance(30)
        return body

    return reply


def test_adapter_deadline_expiring_during_the_last_request_fails_finalisation() -> None:
    clock = FakeClock()
    deadline = Deadline.after(10, clock=clock)
    provider = FakeProvider(slow_reply(clock, response(message())))
    error, _ = failure(provider, make_prompt(), deadline=deadline)
    assert error.message == "Deadline expired while finalizing provider response."
    assert error.provider_payload == deadline.payload()


def test_adapter_deadline_expiring_at_finalisation_has_deadline_phase() -> None:
    clock = FakeClock()
    deadline = Deadline.after(10, clock=clock)
    provider = FakeProvider(slow_reply(clock, response(message())))
    error, _ = failure(provider, make_prompt(), deadline=deadline)
    assert error.phase == "deadline"


def test_adapter_budget_exceeded_at_finalisation() -> None:
    provider = FakeProvider(response(message(), usage=(10, 5)))
    error, sink = failure(provider, make_prompt(), budget=Budget(max_total_tokens=10))
    assert (error.phase, error.message) == ("budget", "Budget exceeded: total tokens")
    assert sink.of_type(PromptFailed)[0].usage == TokenUsage(10, 5)


def test_adapter_budget_exceeded_before_tools_run() -> None:
    provider = FakeProvider(response(function_call(), usage=(50, 5)))
    error, _ = failure(
        provider, make_prompt(tools=[lookup_tool()]), budget=Budget(max_input_tokens=40)
    )
    assert (error.phase, error.message) == ("budget", "Budget exceeded: input tokens")
    assert lookup_log == []


def test_adapter_budget_within_limits_completes() -> None:
    provider = FakeProvider(response(function_call()), response(message()))
    result, _ = evaluate(
        provider, make_prompt(tools=[lookup_tool()]), budget=Budget(max_total_tokens=30)
    )
    assert result.usage.total_tokens == 30


def test_adapter_heartbeat_beats_every_turn() -> None:
    beats: list[int] = []
    provider = FakeProvider(response(function_call()), response(message()))
    evaluate(
        provider,
        make_prompt(tools=[lookup_tool()]),
        heartbeat=lambda: beats.append(1),
    )
    assert len(beats) >= 3


def test_adapter_default_session_and_sink() -> None:
    provider = FakeProvider(response(message("Alone.")))
    result = make_adapter(provider).evaluate(make_prompt())
    assert result.text == "Alone."


# -- structured output -------------------------------------------------------------


def structured(text: str, output: StructuredOutput) -> Any:
    provider = FakeProvider(response(message(text)))
    return evaluate(provider, make_prompt(output=output))


@pytest.mark.parametrize(
    "text",
    [
        '{"answer": "42", "confidence": 0.9}',
        'Sure:\n```json\n{"answer": "42", "confidence": 0.9}\n```',
        'The answer is {"answer": "42", "confidence": 0.9} as requested.',
    ],
)
def test_adapter_structured_output_parses_into_the_dataclass(text: str) -> None:
    result, sink = structured(text, StructuredOutput.from_dataclass(Answer))
    assert result.output == Answer("42", 0.9)
    assert result.text is None
    (executed,) = sink.of_type(PromptExecuted)
    assert executed.output == Answer("42", 0.9)
    assert executed.text == text


def test_adapter_structured_output_null_uses_the_default() -> None:
    result, _ = structured(
        '{"answer": "x", "confidence": null}', StructuredOutput.from_dataclass(Answer)
    )
    assert result.output == Answer("x", 0.5)


def test_adapter_structured_output_from_raw_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    result, _ = structured(
        '{"answer": "yes", "extra": 1}',
        StructuredOutput.from_schema(schema, name="raw"),
    )
    assert result.output == {"answer": "yes", "extra": 1}


def test_adapter_structured_output_missing_required_key_fails() -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "why": {"type": "string"}},
        "required": ["answer", "why"],
        "additionalProperties": False,
    }
    provider = FakeProvider(response(message('{"other": 1}')))
    error, _ = failure(
        provider, make_prompt(output=StructuredOutput.from_schema(schema, name="raw"))
    )
    assert error.phase == "response"
    assert error.message == "The model's answer lacks required key(s): answer, why."


@pytest.mark.parametrize(
    ("text", "message_text"),
    [
        (
            '{"confidence": 1.0}',
            "The model's answer does not match the output type: "
            "Missing required field: 'answer'",
        ),
        ("no json here", "No JSON object found in the model's answer."),
        ("{ not json", "No JSON object found in the model's answer."),
        ('["a", "b"]', "The model's answer is JSON but not an object."),
    ],
)
def test_adapter_structured_output_failures_have_response_phase(
    text: str, message_text: str
) -> None:
    provider = FakeProvider(response(message(text)))
    error, _ = failure(
        provider, make_prompt(output=StructuredOutput.from_dataclass(Answer))
    )
    assert error.phase == "response"
    assert error.message == message_text


def test_adapter_plain_text_answer_without_output() -> None:
    result, _ = evaluate(
        FakeProvider(response(message("Plain."), id="resp_9")), make_prompt()
    )
    assert result.text == "Plain."
    assert result.output is None
    assert result.response_id == "resp_9"
    assert result.turns == 1
    assert result.prompt_name == "adapter-prompt"


# -- citations and hosted outputs --------------------------------------------------


def test_adapter_citations_are_collected_from_every_message_part_and_turn() -> None:
    turn_one = response(
        message(
            "Tides are tidal.",
            url_citation("https://t.example", 0, 5, "Tides"),
            id="msg_a",
        ),
        function_call(),
    )
    turn_two = response(
        message_parts(
            [
                text_part("Moon pulls.", url_citation("https://m.example", 0, 4)),
                text_part(
                    "Sun helps too.",
                    url_citation("https://s.example", 4, 9, "Sun"),
                    url_citation("https://bad.example", 9, 2),
                ),
            ],
            id="msg_b",
        ),
        message(
            "Second message.", url_citation("https://2.example", 7, 14), id="msg_c"
        ),
    )
    provider = FakeProvider(turn_one, turn_two)
    result, sink = evaluate(provider, make_prompt(tools=[lookup_tool()]))
    assert result.citations == (
        Citation("https://t.example", "Tides", (0, 5), "Tides", message_id="msg_a"),
        Citation(
            "https://m.example", "https://m.example", (0, 4), "Moon", message_id="msg_b"
        ),
        Citation(
            "https://s.example",
            "Sun",
            (4, 9),
            "helps",
            message_id="msg_b",
            content_index=1,
        ),
        Citation(
            "https://bad.example",
            "https://bad.example",
            None,
            "",
            message_id="msg_b",
            content_index=1,
        ),
        Citation(
            "https://2.example",
            "https://2.example",
            (7, 14),
            "message",
            message_id="msg_c",
        ),
    )
    first, second = sink.of_type(ProviderCallCompleted)
    assert len(first.citations) == 1
    assert len(second.citations) == 4


def test_adapter_links_a_citation_to_the_search_call_of_an_earlier_turn() -> None:
    turn_one = response(
        web_search_call("ws_a", sources=["https://a.example/doc"]),
        web_search_call("ws_b", sources=["https://b.example/"]),
        function_call(),
    )
    turn_two = response(
        message(
            "Alpha beta.",
            url_citation("https://a.example/doc?utm_source=openai", 0, 5),
            url_citation("https://b.example/?utm_source=openai", 6, 10),
        )
    )
    provider = FakeProvider(turn_one, turn_two)
    tools = [lookup_tool()]
    hosted = (web_search_tool(),)

    result, sink = evaluate(provider, make_prompt(tools=tools, hosted=hosted))

    assert [c.search_call_id for c in result.citations] == ["ws_a", "ws_b"]
    _, second = sink.of_type(ProviderCallCompleted)
    assert [c.search_call_id for c in second.citations] == ["ws_a", "ws_b"]


def test_adapter_file_citations_are_collected() -> None:
    annotations = [
        {
            "type": "file_citation",
            "file_id": "file_1",
            "filename": "faq.md",
            "index": 3,
        },
        {
            "type": "container_file_citation",
            "file_id": "cfile_1",
            "filename": "plot.png",
            "container_id": "cntr_1",
            "start_index": 0,
            "end_index": 4,
        },
        {"type": "file_path", "file_id": "ignored", "index": 0},
    ]
    provider = FakeProvider(response(message("See faq.", *annotations)))
    result, _ = evaluate(provider, make_prompt())
    assert result.citations == (
        Citation(
            "",
            "faq.md",
            (3, 3),
            kind="file_citation",
            file_id="file_1",
            filename="faq.md",
            message_id="msg_1",
        ),
        Citation(
            "",
            "plot.png",
            (0, 4),
            "See ",
            kind="container_file_citation",
            file_id="cfile_1",
            filename="plot.png",
            container_id="cntr_1",
            message_id="msg_1",
        ),
    )


def test_adapter_web_search_calls_become_native_tool_events() -> None:
    provider = FakeProvider(
        response(
            web_search_call("ws_1", "tides", ["https://a.example"]), function_call()
        ),
        response(web_search_call("ws_2", "moon"), message()),
    )
    _, sink = evaluate(
        provider, make_prompt(tools=[lookup_tool()], hosted=[web_search_tool()])
    )
    events = sink.of_type(ToolInvoked)
    assert [(e.name, e.native, e.sequence, e.turn) for e in events] == [
        ("web_search", True, 1, 1),
        ("lookup", False, 2, 1),
        ("web_search", True, 3, 2),
    ]
    native = events[0]
    assert native.provider == "openai"
    assert native.kind == "web_search"
    assert native.call_id == "ws_1"
    assert native.params == {"action": "search", "query": "tides"}
    assert native.result.success is True
    assert (
        native.result.message == "web search (completed): search 'tides'; 1 source(s)"
    )
    assert native.rendered_output == (
        "web search (completed): search 'tides'; 1 source(s)\n- https://a.example"
    )


def test_adapter_failed_web_search_call_is_a_failed_native_event() -> None:
    failed = {**web_search_call("ws_x"), "status": "failed"}
    provider = FakeProvider(response(failed, message()))
    _, sink = evaluate(provider, make_prompt(hosted=[web_search_tool()]))
    (event,) = sink.of_type(ToolInvoked)
    assert event.result.success is False
    assert event.result.value is None
    assert event.result.message == "Web search call ws_x failed."


def test_adapter_hosted_outputs_cover_the_whole_run() -> None:
    provider = FakeProvider(
        response(
            web_search_call(
                "ws_1", "tides", ["https://a.example", "https://b.example"]
            ),
            function_call(),
        ),
        response(
            web_search_call("ws_2", "moon", ["https://b.example", "https://c.example"]),
            message(
                "Answer text.",
                url_citation("https://d.example", 0, 6),
                url_citation("https://a.example", 7, 11),
            ),
        ),
    )
    result, _ = evaluate(
        provider, make_prompt(tools=[lookup_tool()], hosted=[web_search_tool()])
    )
    output = result.hosted_outputs["web_search"]
    assert isinstance(output, WebSearchResult)
    assert output.source_urls == (
        "https://a.example",
        "https://b.example",
        "https://c.example",
        "https://d.example",
    )
    assert [call.call_id for call in output.calls] == ["ws_1", "ws_2"]
    assert output.calls[1] == WebSearchCall(
        "ws_2",
        "completed",
        "search",
        "moon",
        sources=("https://b.example", "https://c.example"),
    )
    assert output.text == "Answer text."
    assert [c.url for c in output.citations] == [
        "https://d.example",
        "https://a.example",
    ]


def test_adapter_hosted_outputs_empty_without_hosted_calls() -> None:
    result, _ = evaluate(
        FakeProvider(response(message())), make_prompt(hosted=[web_search_tool()])
    )
    assert dict(result.hosted_outputs) == {}


# -- events ------------------------------------------------------------------------


def test_adapter_emits_rendered_calls_tools_and_executed_in_order() -> None:
    provider = FakeProvider(response(function_call()), response(message("Fine.")))
    session = InMemorySession(session_id="sess-1")
    result, sink = evaluate(
        provider, make_prompt(tools=[lookup_tool()]), session=session
    )
    assert [type(e).__name__ for e in sink.events] == [
        "PromptRendered",
        "ProviderCallCompleted",
        "ToolInvoked",
        "ProviderCallCompleted",
        "PromptExecuted",
    ]
    rendered = sink.events[0]
    assert isinstance(rendered, PromptRendered)
    assert rendered.prompt_name == "adapter-prompt"
    assert rendered.text == SYSTEM_TEXT
    assert list(rendered.tools_payload) == provider.requests[0]["tools"]
    assert dict(rendered.params) == {}
    assert rendered.session_id == "sess-1"
    executed = sink.events[-1]
    assert isinstance(executed, PromptExecuted)
    assert (executed.prompt_name, executed.text, executed.turns) == (
        "adapter-prompt",
        "Fine.",
        2,
    )
    assert executed.session_id == "sess-1"
    assert result.turns == 2
    assert all(getattr(e, "session_id", None) == "sess-1" for e in sink.events)


def test_adapter_prompt_failed_carries_usage_so_far() -> None:
    provider = FakeProvider(
        response(function_call(), usage=(7, 3)),
        httpx.Response(
            500, json={"error": {"message": "down", "type": "server_error"}}
        ),
    )
    error, sink = failure(provider, make_prompt(tools=[lookup_tool()]))
    (failed,) = sink.of_type(PromptFailed)
    assert failed.usage == TokenUsage(7, 3)
    assert failed.phase == "request"
    assert failed.prompt_name == "adapter-prompt"
    assert failed.provider_payload == error.provider_payload


# -- custom codecs -----------------------------------------------------------------


class GizmoCodec:
    """A minimal codec used to exercise the adapter's codec plumbing."""

    kind = "gizmo"
    item_types = ("gizmo_call", "gizmo_list")
    include = ("gizmo_call.extra",)

    def serialize(self, tool: HostedTool[Any]) -> dict[str, Any]:
        return {"type": "mcp", "server_label": tool.config.label}

    def tool_choice(self, tool: HostedTool[Any]) -> dict[str, Any]:
        return {"type": "mcp", "server_label": tool.config.label}

    def matches(self, item: Any, tool: HostedTool[Any]) -> bool:
        return getattr(item, "label", None) == tool.config.label

    def parse_call(self, item: Any) -> NativeCall | None:
        if item.type == "gizmo_list":
            return None
        return NativeCall(
            item.id, {"label": item.label}, item.label, True, "ok", "rendered"
        )

    def parse_output(self, response_items: Sequence[Any], tool: HostedTool[Any]) -> Any:
        labels = [getattr(i, "label", None) for i in response_items]
        return labels.count(tool.config.label) or None


def gizmo(name: str, label: str) -> HostedTool[GizmoConfig]:
    return HostedTool(
        kind="gizmo", name=name, description="Gizmo.", config=GizmoConfig(label)
    )


def test_adapter_custom_codec_picks_the_matching_hosted_tool() -> None:
    items = [
        {"type": "gizmo_list", "id": "gl_1", "label": "b"},
        {"type": "gizmo_call", "id": "gz_1", "label": "b"},
        {"type": "gizmo_call", "id": "gz_2", "label": "zzz"},
    ]
    provider = FakeProvider(response(*items, message()))
    prompt = make_prompt(
        hosted=[gizmo("first", "a"), gizmo("second", "b")],
        tool_choice=ToolChoice.parse("allowed:second"),
    )
    result, sink = evaluate(
        provider, prompt, adapter_kwargs={"hosted_tool_codecs": {"gizmo": GizmoCodec()}}
    )
    body = provider.requests[0]
    assert body["include"] == ["gizmo_call.extra"]
    assert body["tool_choice"] == {
        "type": "allowed_tools",
        "mode": "auto",
        "tools": [{"type": "mcp", "server_label": "b"}],
    }
    names = [(e.name, e.call_id) for e in sink.of_type(ToolInvoked)]
    assert names == [("second", "gz_1"), ("first", "gz_2")]
    assert dict(result.hosted_outputs) == {"second": 2}


def test_adapter_hosted_tool_choice_uses_the_codec() -> None:
    prompt = make_prompt(
        hosted=[gizmo("only", "x")], tool_choice=ToolChoice.parse("tool:only")
    )
    adapter = make_adapter(FakeProvider(), hosted_tool_codecs={"gizmo": GizmoCodec()})
    body = adapter.request_preview(prompt.render())
    assert body["tool_choice"] == {"type": "mcp", "server_label": "x"}


# -- redaction of recorded requests ------------------------------------------------


def test_adapter_redact_tools_masks_credentials() -> None:
    tools: list[dict[str, Any]] = [
        {"type": "mcp", "headers": {"X-Key": "secret"}, "authorization": "Bearer s"},
        {"type": "web_search"},
    ]
    assert redact_tools(tools) == [
        {"type": "mcp", "headers": {"X-Key": REDACTED}, "authorization": REDACTED},
        {"type": "web_search"},
    ]
    assert tools[0]["headers"] == {"X-Key": "secret"}


def test_adapter_redact_request_leaves_bodies_without_tools_alone() -> None:
    body = {"model": MODEL, "input": []}
    assert redact_request(body) == body
    assert redact_request(body) is not body


# -- HostedToolCodec[ConfigT, OutputT] ---------------------------------------------


def test_adapter_a_seed_style_codec_subclass_gets_working_defaults() -> None:
    from tooling.runtime.adapters.openai.codecs.base import HostedToolCodec

    @dataclasses.dataclass(frozen=True)
    class Output:
        text: str

    class GizmoCodec(HostedToolCodec[GizmoConfig, Output]):
        @property
        def kind(self) -> str:
            return "gizmo"

        def serialize(self, tool: HostedTool[GizmoConfig]) -> dict[str, Any]:
            return {"type": "gizmo", "label": tool.config.label}

        def parse_output(
            self, response_items: Sequence[Any], tool: HostedTool[GizmoConfig]
        ) -> Output | None:
            return Output(text=str(len(response_items)))

    codec = GizmoCodec()
    gizmo = HostedTool(
        kind="gizmo", name="gizmo", description="G.", config=GizmoConfig()
    )
    assert (codec.item_types, codec.include) == ((), ())
    assert codec.tool_choice(gizmo) == {"type": "gizmo"}
    assert codec.matches({}, gizmo) is True and codec.parse_call({}) is None
    provider = FakeProvider(response(message()))
    result, _ = evaluate(
        provider,
        make_prompt(hosted=[gizmo]),
        adapter_kwargs={"hosted_tool_codecs": {"gizmo": codec}},
    )
    assert provider.requests[0]["tools"] == [{"type": "gizmo", "label": "main"}]
    assert "include" not in provider.requests[0]
    assert result.hosted_outputs["gizmo"] == Output(text="1")
