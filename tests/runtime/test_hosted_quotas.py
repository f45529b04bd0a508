"""Hosted tool quotas (``Prompt(hosted_tool_limits=...)``): validation, what
each request offers (over HTTP, the offline provider searching on every turn),
the withdrawal event, limit 0, resume and a provider that runs too much."""

import dataclasses
import json
import logging
from typing import Any

import httpx
import openai
import pytest

from tests.runtime.fakes import FakeProvider, function_call, message, response
from tests.runtime.fakes import web_search_call as search_item
from tooling.offline import MARKER_SEARCH_EACH_TURN, offline_transport
from tooling.runtime import (
    CodeInterpreterConfig,
    HostedToolWithdrawn,
    InMemorySink,
    MarkdownSection,
    OpenAIAdapter,
    Prompt,
    PromptRendered,
    PromptValidationError,
    ProviderCallCompleted,
    RunRecord,
    Tool,
    ToolChoice,
    ToolContext,
    ToolInvoked,
    ToolResult,
    event_id_for,
    web_search_tool,
)
from tooling.runtime.adapters.openai.quotas import offered_request
from tooling.runtime.hosted.code_interpreter import code_interpreter_tool

RUN_ID = "quota-run"
WEB_SEARCH = {"type": "web_search"}


@dataclasses.dataclass(frozen=True)
class NoteParams:
    text: str = "x"


@dataclasses.dataclass(frozen=True)
class Noted:
    text: str


def note(params: NoteParams, *, context: ToolContext) -> ToolResult[Noted]:
    return ToolResult.ok(Noted(params.text), "Noted.")


NOTE = Tool(name="note", description="Take a note.", handler=note)


def make_prompt(
    limits: dict[str, Any] | None = None,
    *,
    hosted: Any = None,
    template: str = f"Research the tides. {MARKER_SEARCH_EACH_TURN}",
    **kwargs: Any,
) -> Prompt:
    return Prompt(
        ns="tests",
        key="quotas",
        sections=[
            MarkdownSection(
                key="task",
                title="Task",
                template=template,
                tools=[NOTE],
                hosted_tools=hosted if hosted is not None else [web_search_tool()],
            )
        ],
        hosted_tool_limits=limits,
        **kwargs,
    )


class OfflineProvider:
    """The offline provider over HTTP, keeping every request body it got."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        inner = offline_transport()

        def handle(request: httpx.Request) -> httpx.Response:
            self.requests.append(json.loads(request.content))
            return inner.handle_request(request)

        self.client = openai.OpenAI(
            api_key="sk-offline",
            base_url="http://offline.invalid/v1",
            http_client=httpx.Client(transport=httpx.MockTransport(handle)),  # type: ignore[arg-type]
            max_retries=0,
        )


def run(
    prompt: Prompt, provider: Any = None, **kwargs: Any
) -> tuple[Any, InMemorySink, Any]:
    provider = provider or OfflineProvider()
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model="gpt-test")
    result = adapter.evaluate(prompt, sink=sink, run_id=RUN_ID, **kwargs)
    return result, sink, provider


def offered(request: dict[str, Any]) -> list[str]:
    return [tool.get("name") or tool["type"] for tool in request.get("tools", [])]


def searches(sink: InMemorySink) -> list[ToolInvoked]:
    return [e for e in sink.of_type(ToolInvoked) if e.name == "web_search"]


# -- validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (
            {"web_serch": 2},
            "hosted_tool_limits names 'web_serch', which is not a hosted tool of "
            "prompt 'tests/quotas' (its hosted tools: web_search).",
        ),
        (
            {"note": 1},
            "hosted_tool_limits names 'note', which is a function tool; limit its "
            "calls with a call_limit policy (its hosted tools: web_search).",
        ),
        (
            {"web_search": True},
            "The call limit of hosted tool 'web_search' must be a whole number from "
            "0 to 10000; got True.",
        ),
        (
            {"web_search": -1},
            "The call limit of hosted tool 'web_search' must be a whole number from "
            "0 to 10000; got -1.",
        ),
        (
            {"web_search": 10**5000},
            "The call limit of hosted tool 'web_search' must be a whole number from "
            "0 to 10000; got a number too large.",
        ),
        (
            {"web_search": "2"},
            "The call limit of hosted tool 'web_search' must be a whole number from "
            "0 to 10000; got '2'.",
        ),
        (
            {"web_search": 2.0},
            "The call limit of hosted tool 'web_search' must be a whole number from "
            "0 to 10000; got 2.0.",
        ),
        (
            {5: 2},
            "hosted_tool_limits names 5, which is not a hosted tool of prompt "
            "'tests/quotas' (its hosted tools: web_search).",
        ),
        (
            ["web_search"],
            "hosted_tool_limits must map hosted tool names to call limits.",
        ),
    ],
)
def test_prompt_refuses_invalid_hosted_tool_limits(limits: Any, message: str) -> None:
    with pytest.raises(PromptValidationError) as info:
        make_prompt(limits)
    assert info.value.message == message


def test_prompt_keeps_valid_limits_read_only() -> None:
    prompt = make_prompt({"web_search": 0})
    assert dict(prompt.hosted_tool_limits) == {"web_search": 0}
    assert dict(prompt.render().hosted_tool_limits) == {"web_search": 0}
    with pytest.raises(TypeError):
        prompt.hosted_tool_limits["web_search"] = 3  # type: ignore[index]


# -- what each request offers ------------------------------------------------------


def test_without_a_limit_the_offline_model_searches_on_every_turn() -> None:
    _, sink, provider = run(make_prompt())
    assert len(searches(sink)) > 2  # so the limit below is what stops it
    assert all("web_search" in offered(r) for r in provider.requests)
    assert all("max_tool_calls" not in r for r in provider.requests)
    assert sink.of_type(HostedToolWithdrawn) == []


def test_a_prompt_limited_to_two_searches_never_gets_a_third_offered() -> None:
    result, sink, provider = run(make_prompt({"web_search": 2}))

    assert result.text
    tools = [offered(r) for r in provider.requests]
    assert tools[0] == ["note", "web_search"]
    assert tools[1] == ["note", "web_search"]
    assert all("web_search" not in t for t in tools[2:])
    assert len(tools) >= 3
    # the API's own cap on built-in calls per response: what is left
    assert [r.get("max_tool_calls") for r in provider.requests[:2]] == [2, 1]
    assert all("max_tool_calls" not in r for r in provider.requests[2:])
    assert len(searches(sink)) == 2


def test_withdrawal_is_recorded_once_with_the_turn_that_no_longer_offers_it() -> None:
    _, sink, _ = run(make_prompt({"web_search": 2}))
    (event,) = sink.of_type(HostedToolWithdrawn)
    assert (event.tool_name, event.kind, event.used, event.limit, event.turn) == (
        "web_search",
        "web_search",
        2,
        2,
        3,
    )
    assert not event.exceeded
    assert event.event_id == event_id_for(RUN_ID, "withdrawn", "web_search")
    # emitted after the second search, before the third request
    order = [type(e).__name__ for e in sink.events]
    second_search = max(i for i, e in enumerate(sink.events) if e in searches(sink))
    assert order.index("HostedToolWithdrawn") > second_search
    calls = sink.of_type(ProviderCallCompleted)
    assert sink.events.index(event) < sink.events.index(calls[2])


def test_the_recorded_request_lacks_the_withdrawn_tool() -> None:
    _, sink, _ = run(make_prompt({"web_search": 1}))
    calls = sink.of_type(ProviderCallCompleted)
    assert [t["type"] for t in calls[0].request["tools"]] == ["function", "web_search"]
    assert [t["type"] for t in calls[1].request["tools"]] == ["function"]


def test_a_limit_of_zero_never_offers_the_tool() -> None:
    prompt = make_prompt({"web_search": 0})
    _, sink, provider = run(prompt)
    assert all("web_search" not in offered(r) for r in provider.requests)
    assert all("max_tool_calls" not in r for r in provider.requests)
    assert searches(sink) == []
    (event,) = sink.of_type(HostedToolWithdrawn)
    assert (event.used, event.limit, event.turn) == (0, 0, 1)
    (rendered,) = sink.of_type(PromptRendered)
    assert [t["type"] for t in rendered.tools_payload] == ["function"]
    adapter = OpenAIAdapter(client=OfflineProvider().client, model="gpt-test")
    assert "web_search" not in offered(adapter.request_preview(prompt.render()))


def test_a_prompt_with_only_a_withdrawn_tool_sends_no_tools_at_all() -> None:
    prompt = Prompt(
        ns="tests",
        key="only",
        sections=[
            MarkdownSection(
                key="t", title="T", template="Hi.", hosted_tools=[web_search_tool()]
            )
        ],
        hosted_tool_limits={"web_search": 0},
        tool_choice=ToolChoice.parse("required"),
    )
    _, _, provider = run(prompt)
    (request,) = provider.requests
    assert "tools" not in request and "tool_choice" not in request


def test_a_tool_choice_forcing_a_tool_never_offered_is_refused() -> None:
    with pytest.raises(PromptValidationError) as info:
        make_prompt({"web_search": 0}, tool_choice=ToolChoice.parse("tool:web_search"))
    assert info.value.message == (
        "tool_choice forces 'web_search', which its call limit of 0 never offers."
    )


def test_an_unlimited_built_in_tool_leaves_max_tool_calls_unset() -> None:
    hosted = [web_search_tool(), code_interpreter_tool(CodeInterpreterConfig())]
    _, _, provider = run(make_prompt({"web_search": 2}, hosted=hosted))
    assert all("max_tool_calls" not in r for r in provider.requests)
    assert "web_search" not in offered(provider.requests[-1])
    assert "code_interpreter" in offered(provider.requests[-1])


def test_max_tool_calls_sums_what_is_left_of_every_limited_tool() -> None:
    hosted = [web_search_tool(), code_interpreter_tool(CodeInterpreterConfig())]
    _, sink, provider = run(
        make_prompt({"web_search": 2, "code_interpreter": 1}, hosted=hosted)
    )
    # turn 1: 2 + 1 left; the offline model runs both, then only searches
    assert [r.get("max_tool_calls") for r in provider.requests[:2]] == [3, 1]
    assert offered(provider.requests[1]) == ["note", "web_search"]
    withdrawn = {e.tool_name: e.turn for e in sink.of_type(HostedToolWithdrawn)}
    assert withdrawn == {"code_interpreter": 2, "web_search": 3}


def test_a_tool_choice_forcing_a_withdrawn_tool_is_relaxed_to_auto() -> None:
    body = {
        "model": "m",
        "tools": [{"type": "function", "name": "note"}, WEB_SEARCH],
        "tool_choice": {"type": "web_search"},
    }
    specs = {"web_search": WEB_SEARCH}
    request = offered_request(body, {"web_search": 1}, specs, {"web_search": 1})
    assert request["tool_choice"] == "auto"
    assert request["tools"] == [{"type": "function", "name": "note"}]
    assert body["tools"] == [{"type": "function", "name": "note"}, WEB_SEARCH]


def test_an_allowed_tools_choice_loses_the_withdrawn_tool() -> None:
    choice = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "note"}, {"type": "web_search"}],
    }
    body = {"tools": [{"type": "function", "name": "note"}, WEB_SEARCH]}
    specs = {"web_search": WEB_SEARCH}
    request = offered_request(
        {**body, "tool_choice": choice}, {"web_search": 2}, specs, {"web_search": 2}
    )
    assert request["tool_choice"]["tools"] == [{"type": "function", "name": "note"}]
    only = {**choice, "tools": [{"type": "web_search"}]}
    request = offered_request(
        {**body, "tool_choice": only}, {"web_search": 2}, specs, {"web_search": 2}
    )
    assert request["tool_choice"] == "auto"


def test_an_operator_max_tool_calls_below_the_quota_is_kept() -> None:
    body = {"tools": [WEB_SEARCH], "max_tool_calls": 1}
    request = offered_request(body, {"web_search": 5}, {"web_search": WEB_SEARCH}, {})
    assert request["max_tool_calls"] == 1
    request = offered_request(
        {"tools": [WEB_SEARCH], "max_tool_calls": 9},
        {"web_search": 5},
        {"web_search": WEB_SEARCH},
        {"web_search": 1},
    )
    assert request["max_tool_calls"] == 4


# -- resume and overruns ---------------------------------------------------------------


def test_a_resumed_run_decides_the_same() -> None:
    prompt = make_prompt({"web_search": 2})
    _, full_sink, full_provider = run(prompt)
    recorded = [e.response for e in full_sink.of_type(ProviderCallCompleted)]
    outputs = {
        e.sequence: e.model_output
        for e in full_sink.of_type(ToolInvoked)
        if not e.native
    }

    _, sink, provider = run(
        prompt, resume=RunRecord(responses=tuple(recorded[:2]), tool_outputs=outputs)
    )

    assert provider.requests == full_provider.requests[2:]
    assert "web_search" not in offered(provider.requests[0])
    (event,) = sink.of_type(HostedToolWithdrawn)
    (first,) = full_sink.of_type(HostedToolWithdrawn)
    assert (event.event_id, event.turn, event.used) == (first.event_id, 3, 2)


def test_calls_past_the_limit_in_one_response_are_recorded_and_flagged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = FakeProvider(
        response(
            search_item("ws_1"),
            search_item("ws_2"),
            search_item("ws_3"),
            function_call("note", {"text": "a"}),
        ),
        response(message("Done.")),
    )
    with caplog.at_level(logging.WARNING):
        _, sink, _ = run(make_prompt({"web_search": 2}), provider)

    assert [e.call_id for e in searches(sink)] == ["ws_1", "ws_2", "ws_3"]
    (event,) = sink.of_type(HostedToolWithdrawn)
    assert (event.used, event.limit, event.turn, event.exceeded) == (3, 2, 2, True)
    assert "ran 3 time(s) against its limit of 2" in caplog.text
    assert provider.requests[0]["max_tool_calls"] == 2
    assert "max_tool_calls" not in provider.requests[1]
    assert offered(provider.requests[1]) == ["note"]


def test_the_offline_model_runs_no_more_built_in_calls_than_asked() -> None:
    provider = OfflineProvider()
    hosted = [web_search_tool(), code_interpreter_tool(CodeInterpreterConfig())]
    prompt = make_prompt(
        {"web_search": 1, "code_interpreter": 1},
        hosted=hosted,
        template="Research the tides.",
    )
    adapter = OpenAIAdapter(
        client=provider.client,
        model="gpt-test",
        extra_request={"max_tool_calls": 1},
    )
    sink = InMemorySink()
    adapter.evaluate(prompt, sink=sink)
    assert provider.requests[0]["max_tool_calls"] == 1
    first_turn = [e for e in sink.of_type(ToolInvoked) if e.native and e.turn == 1]
    assert [e.name for e in first_turn] == ["web_search"]


def test_a_choice_naming_a_type_still_offered_by_another_tool_is_kept() -> None:
    news: dict[str, Any] = {
        "type": "web_search",
        "filters": {"allowed_domains": ["news.example"]},
    }
    body = {
        "tools": [WEB_SEARCH, news],
        "tool_choice": {"type": "web_search"},
    }
    specs = {"web_search": WEB_SEARCH, "news": news}
    request = offered_request(
        body, {"web_search": 1, "news": 3}, specs, {"web_search": 1}
    )
    assert request["tools"] == [news]
    assert request["tool_choice"] == {"type": "web_search"}  # news answers it
    assert request["max_tool_calls"] == 3
