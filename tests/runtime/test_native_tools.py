"""``NativeTool`` through the OpenAI adapter (seed 001), against the offline
provider over HTTP: sent as the built-in it names, its ``ParamsT`` and
``ResultT`` checked before any request, each provider call recorded as a
``ToolInvoked`` whose params and value are of the declared types."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import httpx
import openai
import pytest

from tooling.offline import MARKER_SEARCH_FAILS, offline_transport
from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.errors import PromptEvaluationError
from tooling.runtime.events import (
    InMemorySink,
    PromptRendered,
    ProviderCallCompleted,
    ToolInvoked,
)
from tooling.runtime.hosted.code_interpreter import CodeRun
from tooling.runtime.hosted.web_search import (
    WebSearchCall,
    WebSearchConfig,
    web_search_tool,
)
from tooling.runtime.hosted.web_search import WebSearchResult as HostedSearchResult
from tooling.runtime.prompt import Prompt, ToolChoice
from tooling.runtime.sections import MarkdownSection
from tooling.runtime.tools import NativeTool, Tool, ToolExample
from tooling.runtime.trust import TrustLevel

from .fakes import FakeProvider, message, response, web_search_call


@dataclasses.dataclass
class WebSearchParams:
    query: str


@dataclasses.dataclass
class WebSearchResult:
    payload: dict[str, object]


@dataclasses.dataclass
class SearchSummary:
    query: str | None
    status: str
    sources: tuple[str, ...] = ()

    def render(self) -> str:
        return f"{self.status}: {self.query} ({len(self.sources)} sources)"


@dataclasses.dataclass
class CodeParams:
    code: str


@dataclasses.dataclass
class CodeLogs:
    code: str
    logs: tuple[str, ...]


class CountingTransport(httpx.BaseTransport):
    """The offline provider, counting the requests that reach it."""

    def __init__(self) -> None:
        self.inner = offline_transport()
        self.bodies: list[dict[str, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.read()))
        return self.inner.handle_request(request)


def adapter_for(transport: CountingTransport, **kwargs: Any) -> OpenAIAdapter:
    client = openai.OpenAI(
        api_key="sk-offline",
        base_url="http://offline.invalid/v1",
        # The SDK takes an httpx client too, though typed for httpx2's.
        http_client=httpx.Client(transport=transport),  # type: ignore[arg-type]
        max_retries=0,
    )
    return OpenAIAdapter(client=client, model="gpt-5.4", **kwargs)


def seed_tool() -> NativeTool[WebSearchParams, WebSearchResult]:
    """Seed 001's example, as written."""
    return NativeTool[WebSearchParams, WebSearchResult](
        name="web_search",
        description="Use the provider's built-in search to gather fresh results.",
        examples=(
            ToolExample(
                description="Search for current weather in Paris.",
                input=WebSearchParams(query="current weather in Paris"),
                output=WebSearchResult(payload={"results": []}),
            ),
        ),
    )


def prompt_with(*tools: Tool[Any, Any], template: str = "", **kwargs: Any) -> Prompt:
    return Prompt(
        ns="tests",
        key="native",
        sections=[
            MarkdownSection(
                title="Task",
                key="task",
                template=template or "Which Django release is the current LTS?",
                tools=tools,
            )
        ],
        **kwargs,
    )


def run(prompt: Prompt, **kwargs: Any) -> tuple[Any, InMemorySink, CountingTransport]:
    transport = CountingTransport()
    sink = InMemorySink()
    response = adapter_for(transport).evaluate(prompt, sink=sink, **kwargs)
    return response, sink, transport


def refused(prompt: Prompt, **kwargs: Any) -> str:
    transport = CountingTransport()
    with pytest.raises(PromptEvaluationError) as info:
        adapter_for(transport).evaluate(prompt, **kwargs)
    assert info.value.phase == "render"
    assert transport.bodies == []  # refused before any request
    return info.value.message


# -- sent as the built-in ----------------------------------------------------------


def test_seed_native_web_search_is_sent_as_the_built_in() -> None:
    response, sink, transport = run(prompt_with(seed_tool()))

    (body,) = transport.bodies[:1]
    assert body["tools"] == [{"type": "web_search"}]
    assert body["include"] == ["web_search_call.action.sources"]
    assert "parallel_tool_calls" not in body  # no function tools
    (rendered,) = sink.of_type(PromptRendered)
    assert rendered.tools_payload == ({"type": "web_search"},)
    assert response.text


def test_each_provider_call_becomes_a_typed_native_tool_invoked() -> None:
    _, sink, _ = run(prompt_with(seed_tool()))

    (event,) = sink.of_type(ToolInvoked)
    assert (event.name, event.native, event.provider, event.kind) == (
        "web_search",
        True,
        "openai",
        "web_search",
    )
    assert event.params == WebSearchParams(
        query="Which Django release is the current LTS?"
    )
    assert event.result.success is True
    value = event.result.value
    assert isinstance(value, WebSearchResult)
    # the payload is the provider's item as it came over HTTP
    (call,) = sink.of_type(ProviderCallCompleted)
    (item,) = [i for i in call.response["output"] if i["type"] == "web_search_call"]
    assert value.payload == item
    assert event.call_id == item["id"]
    assert event.rendered_output == event.result.render()
    assert json.loads(event.rendered_output) == {"payload": item}


def test_a_result_type_with_its_own_render_is_rendered_with_it() -> None:
    tool = NativeTool[WebSearchParams, SearchSummary](
        name="web_search", description="Search the web."
    )
    _, sink, _ = run(prompt_with(tool))

    (event,) = sink.of_type(ToolInvoked)
    value = event.result.value
    assert isinstance(value, SearchSummary)
    assert value.query == "Which Django release is the current LTS?"
    assert value.status == "completed"
    assert len(value.sources) == 3
    assert event.rendered_output == (
        "completed: Which Django release is the current LTS? (3 sources)"
    )


def test_the_codecs_own_call_type_is_the_value_as_parsed() -> None:
    tool = NativeTool[WebSearchParams, WebSearchCall](
        name="web_search", description="Search the web."
    )
    _, sink, _ = run(prompt_with(tool))
    (event,) = sink.of_type(ToolInvoked)
    assert isinstance(event.result.value, WebSearchCall)
    assert event.result.value.action_type == "search"


def test_hosted_outputs_hold_the_kinds_typed_output_too() -> None:
    response, _, _ = run(prompt_with(seed_tool()))
    output = response.hosted_outputs["web_search"]
    assert isinstance(output, HostedSearchResult)
    assert len(output.source_urls) == 3


def test_a_failed_provider_call_is_a_failed_result_without_value() -> None:
    prompt = prompt_with(seed_tool(), template=f"Look it up {MARKER_SEARCH_FAILS}")
    _, sink, _ = run(prompt)
    (event,) = sink.of_type(ToolInvoked)
    assert event.native is True
    assert event.result.success is False
    assert event.result.value is None
    assert "failed" in event.result.message


def test_native_code_interpreter_gets_typed_params_and_logs() -> None:
    tool = NativeTool[CodeParams, CodeLogs](
        name="code_interpreter", description="Run Python in a sandbox."
    )
    prompt = prompt_with(tool, template="Compute 2 + 2 with Python.")
    _, sink, transport = run(prompt)

    assert transport.bodies[0]["tools"] == [
        {"type": "code_interpreter", "container": {"type": "auto"}}
    ]
    (event,) = sink.of_type(ToolInvoked)
    assert event.kind == "code_interpreter"
    assert isinstance(event.params, CodeParams) and event.params.code
    assert isinstance(event.result.value, CodeLogs)
    assert event.result.value.code == event.params.code


def test_a_tool_choice_can_force_the_native_tool() -> None:
    prompt = prompt_with(
        seed_tool(), tool_choice=ToolChoice(mode="tool", tools=("web_search",))
    )
    _, _, transport = run(prompt)
    assert transport.bodies[0]["tool_choice"] == {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "web_search"}],
    }


def test_function_tools_and_native_tools_are_sent_side_by_side() -> None:
    def lookup(params: CodeParams, *, context: Any) -> Any:
        raise AssertionError("not called")

    function = Tool[CodeParams, None](
        name="lookup", description="Look up.", handler=lookup
    )
    adapter = adapter_for(CountingTransport())
    body = adapter.request_preview(prompt_with(function, seed_tool()).render())
    assert [tool["type"] for tool in body["tools"]] == ["function", "web_search"]
    assert body["parallel_tool_calls"] is True


# -- refused before any request ----------------------------------------------------


def test_a_params_field_the_provider_never_sends_is_refused() -> None:
    @dataclasses.dataclass
    class Located:
        query: str
        city: str

    tool = NativeTool[Located, WebSearchResult](
        name="web_search", description="Search the web."
    )
    assert refused(prompt_with(tool)) == (
        "Native tool 'web_search': params field(s) city of Located are never sent "
        "by OpenAI's web_search call; it sends: action, query, url, pattern."
    )


def test_a_result_field_the_adapter_cannot_fill_is_refused() -> None:
    @dataclasses.dataclass
    class Scored:
        payload: dict[str, object]
        score: float

    tool = NativeTool[WebSearchParams, Scored](
        name="web_search", description="Search the web."
    )
    message = refused(prompt_with(tool))
    assert message.startswith(
        "Native tool 'web_search': result field(s) score of Scored cannot be "
        "filled from OpenAI's web_search call; available: payload, call_id, "
    )


def test_a_sequence_result_is_refused() -> None:
    tool = NativeTool[WebSearchParams, list[WebSearchResult]](
        name="web_search", description="Search the web."
    )
    assert "produces one result, not a sequence" in refused(prompt_with(tool))


def test_a_kind_that_needs_configuration_must_be_a_hosted_tool() -> None:
    tool: NativeTool[Any, Any] = NativeTool(
        name="file_search", description="Search my files."
    )
    message = refused(prompt_with(tool))
    assert message.startswith(
        "Native tool 'file_search': OpenAI's file_search needs configuration a "
        "NativeTool cannot carry ("
    )
    assert message.endswith("declare it as a hosted tool with a FileSearchConfig.")


def test_a_second_tool_of_a_kind_the_prompt_offers_is_refused() -> None:
    hosted = web_search_tool(WebSearchConfig(), name="search_docs")
    prompt = Prompt(
        ns="tests",
        key="twin",
        sections=[
            MarkdownSection(
                title="Task",
                key="task",
                template="Look it up.",
                tools=[seed_tool()],
                hosted_tools=[hosted],
            )
        ],
    )
    assert refused(prompt) == (
        "Native tool 'web_search' repeats the web_search tool 'search_docs' the "
        "prompt already offers; keep one of them."
    )


def test_a_model_without_the_capability_is_refused() -> None:
    transport = CountingTransport()
    adapter = adapter_for(
        transport, model_capabilities={"gpt-5.4": frozenset({"file_search"})}
    )
    with pytest.raises(PromptEvaluationError, match="hosted tool kind 'web_search'"):
        adapter.evaluate(prompt_with(seed_tool()))
    assert transport.bodies == []


def test_an_untrusted_session_is_not_offered_the_native_tool() -> None:
    _, sink, transport = run(prompt_with(seed_tool()), trust_level=TrustLevel.UNTRUSTED)
    assert "tools" not in transport.bodies[0]
    (rendered,) = sink.of_type(PromptRendered)
    assert [w.name for w in rendered.withheld_hosted_tools] == ["web_search"]
    assert sink.of_type(ToolInvoked) == []


def test_a_code_run_value_type_is_accepted_for_code_interpreter() -> None:
    tool = NativeTool[CodeParams, CodeRun](
        name="code_interpreter", description="Run Python."
    )
    adapter = adapter_for(CountingTransport())
    body = adapter.request_preview(prompt_with(tool).render())
    assert body["tools"][0]["type"] == "code_interpreter"


# -- hostile provider payloads -------------------------------------------------------


def hostile_run(tool: Tool[Any, Any], item: dict[str, Any]) -> ToolInvoked:
    body = json.dumps(response(item, message("Done.")))  # "\ud800" escaped
    provider = FakeProvider(
        httpx.Response(
            200, content=body.encode(), headers={"content-type": "application/json"}
        )
    )
    adapter = OpenAIAdapter(client=provider.client, model="gpt-5.4")
    sink = InMemorySink()
    result = adapter.evaluate(prompt_with(tool), sink=sink)
    assert result.text == "Done."  # the run goes on
    (event,) = sink.of_type(ToolInvoked)
    return event


def test_a_payload_that_does_not_fit_params_keeps_the_params_as_sent() -> None:
    item = {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": ["not", "text"]},
    }
    event = hostile_run(seed_tool(), item)
    assert event.params == {"action": "search", "query": ["not", "text"]}
    assert event.result.success is True
    assert isinstance(event.result.value, WebSearchResult)


def test_a_result_type_that_refuses_the_payload_leaves_the_value_out() -> None:
    @dataclasses.dataclass
    class Picky:
        query: str | None

        def __post_init__(self) -> None:
            raise RuntimeError("never satisfied")

    tool = NativeTool[WebSearchParams, Picky](
        name="web_search", description="Search the web."
    )
    event = hostile_run(tool, web_search_call(query="tides\x00\ud800"))
    assert event.params == WebSearchParams(query="tides\x00\ud800")
    assert event.result.success is True
    assert event.result.value is None
    assert event.result.message.endswith(
        "(the result could not be read as Picky: RuntimeError: never satisfied)"
    )
    assert event.rendered_output.startswith("web search (completed)")
