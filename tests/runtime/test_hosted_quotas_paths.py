"""Hosted tool quotas on the paths beyond one plain ``web_search``: two tools of
one kind (the provider names neither in its call items), a ``NativeTool``,
product-run kinds (``apply_patch``), a run that ends or stops before another
request, and tools whose wire forms are equal."""

import dataclasses
import json
from typing import Any

import pytest

from tests.runtime.fakes import FakeProvider, function_call, message, response
from tests.runtime.fakes import web_search_call as search_item
from tests.runtime.test_hosted_quotas import NOTE, OfflineProvider, make_prompt
from tooling.runtime import (
    ApplyPatchSection,
    Deadline,
    DomainFilter,
    FakeClock,
    HostedToolWithdrawn,
    InMemorySink,
    MarkdownSection,
    McpConfig,
    NativeTool,
    OpenAIAdapter,
    Prompt,
    PromptEvaluationError,
    ToolInvoked,
    WebSearchConfig,
    mcp_tool,
    web_search_tool,
)
from tooling.runtime.adapters.openai.quotas import offered_request

RUN_ID = "quota-paths"
NEWS = web_search_tool(
    WebSearchConfig(domain_filter=DomainFilter(allowed=("news.example",))),
    name="news",
)


def evaluate(prompt: Prompt, provider: Any, **kwargs: Any) -> InMemorySink:
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model="gpt-test")
    adapter.evaluate(prompt, sink=sink, run_id=RUN_ID, **kwargs)
    return sink


def has_news(request: dict[str, Any]) -> bool:
    return any(tool.get("filters") for tool in request.get("tools", []))


def plain_searches(request: dict[str, Any]) -> int:
    return sum(tool == {"type": "web_search"} for tool in request.get("tools", []))


# -- two tools of one kind -----------------------------------------------------------


def test_a_limit_on_the_second_tool_of_a_kind_is_enforced() -> None:
    # web_search_call items name no tool: each may have been news's
    provider = OfflineProvider()
    sink = evaluate(
        make_prompt({"news": 2}, hosted=[web_search_tool(), NEWS]), provider
    )

    assert [has_news(r) for r in provider.requests[:3]] == [True, True, False]
    assert not any(has_news(r) for r in provider.requests[2:])
    assert all(plain_searches(r) == 1 for r in provider.requests)  # still offered
    (event,) = sink.of_type(HostedToolWithdrawn)
    assert (event.tool_name, event.used, event.limit, event.turn) == ("news", 2, 2, 3)


def test_searches_after_a_withdrawal_are_recorded_under_the_tool_still_offered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = OfflineProvider()
    prompt = make_prompt({"web_search": 2}, hosted=[web_search_tool(), NEWS])
    sink = evaluate(prompt, provider)

    names = [(e.turn, e.name) for e in sink.of_type(ToolInvoked) if e.native]
    assert names[:2] == [(1, "web_search"), (2, "web_search")]
    assert len(names) > 2 and all(name == "news" for _, name in names[2:])
    (event,) = sink.of_type(HostedToolWithdrawn)
    assert (event.tool_name, event.used, event.turn) == ("web_search", 2, 3)
    assert "against its limit" not in caplog.text  # nothing ran past it


def test_two_limited_tools_of_one_kind_each_count_the_calls_they_were_offered() -> None:
    provider = OfflineProvider()
    prompt = make_prompt({"web_search": 1, "news": 3}, hosted=[web_search_tool(), NEWS])
    sink = evaluate(prompt, provider)

    events = sink.of_type(HostedToolWithdrawn)
    withdrawn = {e.tool_name: (e.used, e.turn) for e in events}
    assert withdrawn == {"web_search": (1, 2), "news": (3, 4)}
    # a search counts against both: the smaller rest caps a response, so no
    # response may overrun web_search's 1; then news's rest alone
    assert [r.get("max_tool_calls") for r in provider.requests[:3]] == [1, 2, 1]
    assert not any(e.exceeded for e in events)
    assert "web_search" not in json.dumps(provider.requests[3].get("tools", []))


def test_of_two_equal_tools_only_the_withdrawn_one_goes() -> None:
    spec = {"type": "web_search"}
    body = {"tools": [spec, dict(spec)]}
    specs = {"a": spec, "b": dict(spec)}
    request = offered_request(body, {"a": 1, "b": 5}, specs, {"a": 1})
    assert request["tools"] == [spec]
    assert request["max_tool_calls"] == 5
    request = offered_request(body, {"a": 2, "b": 5}, specs, {})
    assert request["max_tool_calls"] == 2  # a search counts against both
    request = offered_request(body, {"a": 1}, {"a": spec}, {"a": 0})
    assert "max_tool_calls" not in request  # the equal twin has no limit


# -- a NativeTool and a product-run kind ----------------------------------------------


@dataclasses.dataclass
class SearchParams:
    query: str


@dataclasses.dataclass
class SearchResult:
    payload: dict[str, object]


def test_a_native_web_search_tool_is_limited_like_a_hosted_one() -> None:
    native = NativeTool[SearchParams, SearchResult](
        name="web_search", description="The provider's search."
    )
    prompt = Prompt(
        ns="tests",
        key="native-quota",
        sections=[
            MarkdownSection(
                key="task",
                title="Task",
                template="Research the tides. [offline:search_each_turn]",
                tools=[NOTE, native],
            )
        ],
        hosted_tool_limits={"web_search": 1},
    )
    provider = OfflineProvider()
    sink = evaluate(prompt, provider)

    assert plain_searches(provider.requests[0]) == 1
    assert provider.requests[0]["max_tool_calls"] == 1
    assert all(plain_searches(r) == 0 for r in provider.requests[1:])
    searches = [e for e in sink.of_type(ToolInvoked) if e.name == "web_search"]
    assert len(searches) == 1 and isinstance(searches[0].params, SearchParams)
    (event,) = sink.of_type(HostedToolWithdrawn)
    assert (event.tool_name, event.turn) == ("web_search", 2)


def patch_call(call_id: str) -> dict[str, Any]:
    return {
        "id": f"apc_{call_id}",
        "type": "apply_patch_call",
        "call_id": call_id,
        "status": "completed",
        "operation": {"type": "create_file", "path": f"{call_id}.md", "diff": "+x\n"},
    }


def test_apply_patch_calls_run_by_the_product_count_against_its_limit() -> None:
    prompt = Prompt(
        ns="tests",
        key="patch-quota",
        sections=[
            MarkdownSection(key="task", title="Task", template="Write notes."),
            ApplyPatchSection(),
        ],
        hosted_tool_limits={"apply_patch": 1},
    )
    provider = FakeProvider(
        response(patch_call("p1"), id="r1"), response(message("Done."), id="r2")
    )
    sink = evaluate(prompt, provider)

    assert provider.requests[0]["tools"] == [{"type": "apply_patch"}]
    assert provider.requests[0]["max_tool_calls"] == 1
    assert "tools" not in provider.requests[1]
    (event,) = sink.of_type(HostedToolWithdrawn)
    assert (event.tool_name, event.kind, event.used, event.turn) == (
        "apply_patch",
        "apply_patch",
        1,
        2,
    )


# -- no request, no withdrawal ---------------------------------------------------------


def test_a_run_answering_in_the_turn_that_used_a_tool_up_withdraws_nothing() -> None:
    provider = FakeProvider(
        response(search_item("ws_1"), search_item("ws_2"), message("Done."))
    )
    sink = evaluate(make_prompt({"web_search": 2}), provider)
    assert len(provider.requests) == 1
    assert sink.of_type(HostedToolWithdrawn) == []


def test_a_run_stopped_before_the_next_request_records_no_withdrawal() -> None:
    clock = FakeClock()
    deadline = Deadline.after(60, clock=clock)

    def search_then_expire() -> dict[str, Any]:
        clock.advance(120)  # the deadline passes while the model searched
        return response(search_item("ws_1"), search_item("ws_2"), id="r1")

    provider = FakeProvider(search_then_expire)
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model="gpt-test")
    with pytest.raises(PromptEvaluationError):
        adapter.evaluate(
            make_prompt({"web_search": 2}), sink=sink, run_id=RUN_ID, deadline=deadline
        )
    assert len(provider.requests) == 1
    assert sink.of_type(HostedToolWithdrawn) == []


# -- MCP: each call names its server ------------------------------------------------


def mcp_call(item_id: str, server: str) -> dict[str, Any]:
    return {
        "type": "mcp_call",
        "id": item_id,
        "server_label": server,
        "name": "ask",
        "arguments": "{}",
        "output": "ok",
        "status": "completed",
    }


def test_an_mcp_call_counts_against_its_own_server_only() -> None:
    servers = [
        mcp_tool(
            McpConfig(server_label=label, server_url=f"https://{label}.example/mcp"),
            name=label,
        )
        for label in ("crm", "docs")
    ]
    provider = FakeProvider(
        response(
            mcp_call("m1", "docs"),
            mcp_call("m2", "docs"),
            function_call("note", {"text": "a"}),
            id="r1",
        ),
        response(
            mcp_call("m3", "crm"),
            function_call("note", {"text": "b"}, "call_2"),
            id="r2",
        ),
        response(message("Done."), id="r3"),
    )
    sink = evaluate(make_prompt({"crm": 1}, hosted=servers), provider)

    labels = [
        [t.get("server_label") for t in r["tools"] if t["type"] == "mcp"]
        for r in provider.requests
    ]
    assert labels == [["crm", "docs"], ["crm", "docs"], ["docs"]]
    (event,) = sink.of_type(HostedToolWithdrawn)
    assert (event.tool_name, event.used, event.turn) == ("crm", 1, 3)
