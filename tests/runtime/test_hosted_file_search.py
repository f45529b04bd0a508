"""Hosted file_search: config validation, wire JSON, SDK parsing, adapter loop.

Framework-free: ``pytest tests/runtime/test_hosted_file_search.py -p no:django``.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import httpx
import openai
import pytest

from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.adapters.openai.codecs import default_codecs
from tooling.runtime.adapters.openai.codecs.base import NativeCall
from tooling.runtime.adapters.openai.codecs.file_search import OpenAIFileSearchCodec
from tooling.runtime.errors import PromptValidationError
from tooling.runtime.events import InMemorySink, ToolInvoked
from tooling.runtime.hosted import file_search as fs_module
from tooling.runtime.hosted.base import HostedTool
from tooling.runtime.hosted.file_search import (
    ComparisonFilter,
    CompoundFilter,
    FileSearchCall,
    FileSearchConfig,
    FileSearchHit,
    FileSearchResult,
    FileSearchSection,
    RankingOptions,
    file_search_tool,
    parse_filter,
)
from tooling.runtime.prompt import Prompt, ToolChoice
from tooling.runtime.sections import MarkdownSection

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hosted_tools"
CODEC = OpenAIFileSearchCodec()


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def make_client(body: dict[str, Any], captured: list[dict[str, Any]]) -> openai.OpenAI:
    def handler(request: httpx.Request) -> httpx.Response:
        captured.append(json.loads(request.content))
        return httpx.Response(200, json=body, headers={"x-request-id": "req_test"})

    return openai.OpenAI(
        api_key="sk-test",
        base_url="http://test.invalid/v1",
        # The SDK takes an httpx client too, though typed for httpx2's.
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),  # type: ignore[arg-type]
        max_retries=0,
    )


def sdk_output(name: str) -> list[Any]:
    """The fixture's ``output`` as parsed by the real SDK."""
    response = make_client(load(name), []).responses.create(model="gpt-5.4", input="x")
    return list(response.output)


def reject(match: str, **kwargs: Any) -> PromptValidationError:
    with pytest.raises(PromptValidationError, match=match) as info:
        FileSearchConfig(**kwargs)
    return info.value


# -- configuration -------------------------------------------------------------


def test_minimal_config_and_normalisation() -> None:
    config = FileSearchConfig(vector_store_ids=(" vs_1 ", "vs_2", "vs_1"))
    assert config.vector_store_ids == ("vs_1", "vs_2")
    assert config.max_results is None and config.filters is None
    # Stored JSON may hold one id or a list: both are normalised to a tuple.
    one: Any = "vs_9"
    listed: Any = ["vs_a"]
    assert FileSearchConfig(vector_store_ids=one).vector_store_ids == ("vs_9",)
    assert FileSearchConfig(vector_store_ids=listed).vector_store_ids == ("vs_a",)


@pytest.mark.parametrize("ids", [(), [], ("",), ("  ",), (1,), None, {"a": "b"}])
def test_vector_store_ids_must_be_non_empty_and_non_blank(ids: Any) -> None:
    error = reject("vector store id|vector_store_ids", vector_store_ids=ids)
    assert error.placeholder == "vector_store_ids"


@pytest.mark.parametrize("value", [0, 51, -1, True, "5", 2.5])
def test_max_results_range(value: Any) -> None:
    error = reject(
        "max_results must be an integer from 1 to 50",
        vector_store_ids=("v",),
        max_results=value,
    )
    assert error.placeholder == "max_results"


@pytest.mark.parametrize("value", [1, 50])
def test_max_results_bounds_accepted(value: int) -> None:
    assert (
        FileSearchConfig(vector_store_ids=("v",), max_results=value).max_results
        == value
    )


def test_filters_are_validated_and_frozen() -> None:
    config = FileSearchConfig(
        vector_store_ids=("vs_1",),
        filters={
            "type": "and",
            "filters": [
                {"type": "eq", "key": "tenant", "value": "acme"},
                {
                    "type": "or",
                    "filters": [
                        {"type": "in", "key": "doc_type", "value": ["policy", "faq"]},
                        {"type": "gte", "key": "year", "value": 2025},
                    ],
                },
            ],
        },
    )
    tree = config.filter
    assert isinstance(tree, CompoundFilter) and tree is config.filters
    assert isinstance(tree.filters, tuple)
    inner = tree.filters[1]
    assert isinstance(inner, CompoundFilter)
    first = inner.filters[0]
    assert isinstance(first, ComparisonFilter) and first.value == ("policy", "faq")
    with pytest.raises(dataclasses.FrozenInstanceError):
        tree.type = "or"  # type: ignore[misc]
    assert tree.as_dict()["filters"][1]["filters"][0]["value"] == ["policy", "faq"]


def test_filters_accept_built_filter_objects() -> None:
    built = CompoundFilter(
        type="or",
        filters=(
            ComparisonFilter(key="a", type="eq", value=True),
            {"type": "nin", "key": "b", "value": [1, 2.5]},  # type: ignore[arg-type]
        ),
    )
    config = FileSearchConfig(vector_store_ids=("v",), filters=built)
    assert config.filters is built
    assert built.as_dict() == {
        "type": "or",
        "filters": [
            {"type": "eq", "key": "a", "value": True},
            {"type": "nin", "key": "b", "value": [1, 2.5]},
        ],
    }


@pytest.mark.parametrize(
    ("filters", "match"),
    [
        ({"type": "like", "key": "a", "value": "b"}, "'like' is neither a comparison"),
        ({"key": "a", "value": "b"}, "'None' is neither"),
        ({"type": "eq", "value": "b"}, "a 'eq' filter needs key"),
        ({"type": "eq", "key": "a"}, "a 'eq' filter needs value"),
        ({"type": "eq", "key": "a", "value": 1, "op": "x"}, r"unknown key\(s\) op"),
        ({"type": "eq", "key": "", "value": "b"}, "non-empty string"),
        ({"type": "eq", "key": "k" * 65, "value": "b"}, "at most 64 characters"),
        ({"type": "eq", "key": "a", "value": {"x": 1}}, "string, a finite number or a"),
        ({"type": "eq", "key": "a", "value": float("nan")}, "finite number"),
        ({"type": "gt", "key": "a", "value": True}, "'gt' needs a string or a finite"),
        ({"type": "in", "key": "a", "value": "policy"}, "'in' compares against a list"),
        ({"type": "nin", "key": "a", "value": []}, "must not be empty"),
        ({"type": "in", "key": "a", "value": [True]}, "list items must be strings"),
        ({"type": "and", "filters": []}, "at least one filter"),
        ({"type": "or", "filters": {"type": "eq"}}, "needs a list of filters"),
        ({"type": "and", "filters": [1]}, r"filters\.filters\[0\]: a filter must be"),
        ("tenant=acme", "a filter must be a mapping"),
    ],
)
def test_filter_rules(filters: Any, match: str) -> None:
    error = reject(match, vector_store_ids=("v",), filters=filters)
    assert error.placeholder == "filters"


def test_nested_filter_error_names_the_path() -> None:
    reject(
        r"filters\.filters\[1\]\.filters\[0\]\.value",
        vector_store_ids=("v",),
        filters={
            "type": "and",
            "filters": [
                {"type": "eq", "key": "a", "value": 1},
                {"type": "or", "filters": [{"type": "lt", "key": "b", "value": None}]},
            ],
        },
    )


def test_parse_filter_returns_built_filters_unchanged() -> None:
    leaf = ComparisonFilter(key="a", type="ne", value="x")
    assert parse_filter(leaf) is leaf


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"ranker": "best"}, "ranker 'best' is not one of auto, default-2024-11-15"),
        ({"score_threshold": -0.1}, "score_threshold must be a number from 0 to 1"),
        ({"score_threshold": 1.01}, "score_threshold must be a number from 0 to 1"),
        ({"score_threshold": True}, "score_threshold must be a number from 0 to 1"),
        ({"embedding_weight": 0.7}, "both embedding_weight and text_weight"),
        ({"text_weight": 0.3}, "both embedding_weight and text_weight"),
        (
            {"embedding_weight": -1, "text_weight": 1},
            "embedding_weight must be a finite",
        ),
        ({"embedding_weight": 1, "text_weight": "x"}, "text_weight must be a finite"),
        ({"embedding_weight": 0, "text_weight": 0}, "cannot both be 0"),
    ],
)
def test_ranking_rules(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(PromptValidationError, match=match):
        RankingOptions(**kwargs)


def test_ranking_must_be_ranking_options() -> None:
    reject(
        "ranking must be a RankingOptions",
        vector_store_ids=("v",),
        ranking={"ranker": "auto"},
    )


# -- factory and section -------------------------------------------------------


def test_factory_and_section() -> None:
    config = FileSearchConfig(vector_store_ids=("vs_1",))
    tool = file_search_tool(config)
    assert (tool.kind, tool.name, tool.config) == ("file_search", "file_search", config)
    assert tool.description.startswith("Search the uploaded documents")
    named = file_search_tool(config, name="policies", description="Search policies.")
    assert (named.name, named.description) == ("policies", "Search policies.")
    with pytest.raises(PromptValidationError, match="FileSearchConfig"):
        file_search_tool({"vector_store_ids": ["v"]})  # type: ignore[arg-type]

    section = FileSearchSection(config)
    assert isinstance(section, MarkdownSection) and section.key == "file_search"
    assert section.hosted_tools() == (tool,)
    prompt = Prompt(ns="tests", key="fs", sections=[section])
    rendered = prompt.render()
    assert rendered.hosted_tools == (tool,)
    assert "file_search tool" in rendered.text
    assert FileSearchSection(config, key="docs", name="docs").tool.name == "docs"


# -- codec: wire format --------------------------------------------------------


def test_codec_protocol_attributes() -> None:
    tool = file_search_tool(FileSearchConfig(vector_store_ids=("vs_1",)))
    assert CODEC.kind == "file_search"
    assert CODEC.item_types == ("file_search_call",)
    assert CODEC.include == ("file_search_call.results",)
    assert CODEC.tool_choice(tool) == {"type": "file_search"}
    assert CODEC.matches({"type": "file_search_call"}, tool) is True


def test_serialize_full_config_matches_the_wire_shape() -> None:
    config = FileSearchConfig(
        vector_store_ids=("vs_123",),
        max_results=8,
        filters={
            "type": "and",
            "filters": [
                {"type": "eq", "key": "tenant", "value": "acme"},
                {"type": "in", "key": "doc_type", "value": ["policy", "faq"]},
            ],
        },
        ranking=RankingOptions(
            ranker="auto", score_threshold=0.3, embedding_weight=0.7, text_weight=0.3
        ),
    )
    spec = CODEC.serialize(file_search_tool(config))
    assert spec == {
        "type": "file_search",
        "vector_store_ids": ["vs_123"],
        "max_num_results": 8,
        "filters": {
            "type": "and",
            "filters": [
                {"type": "eq", "key": "tenant", "value": "acme"},
                {"type": "in", "key": "doc_type", "value": ["policy", "faq"]},
            ],
        },
        "ranking_options": {
            "ranker": "auto",
            "score_threshold": 0.3,
            "hybrid_search": {"embedding_weight": 0.7, "text_weight": 0.3},
        },
    }
    assert json.loads(json.dumps(spec)) == spec


def test_serialize_minimal_config_omits_everything_optional() -> None:
    config = FileSearchConfig(
        vector_store_ids=("vs_1", "vs_2"), ranking=RankingOptions()
    )
    assert CODEC.serialize(file_search_tool(config)) == {
        "type": "file_search",
        "vector_store_ids": ["vs_1", "vs_2"],
    }


def test_serialize_rejects_a_foreign_config() -> None:
    @dataclasses.dataclass(frozen=True)
    class Other:
        pass

    tool = HostedTool(kind="file_search", name="fs", description="x", config=Other())
    with pytest.raises(TypeError, match="needs a FileSearchConfig"):
        CODEC.serialize(tool)


# -- codec: parsing through the real SDK ---------------------------------------


def test_parse_call_through_the_sdk() -> None:
    items = sdk_output("file_search_response.json")
    call_item = next(i for i in items if i.type == "file_search_call")
    assert type(call_item).__name__ == "ResponseFileSearchToolCall"
    call = CODEC.parse_call(call_item)
    assert isinstance(call, NativeCall)
    assert call.call_id == "fs_68a1b2c3d4e5f601"
    assert call.success is True
    assert call.params == {"queries": ["refund policy", "return window days"]}
    assert isinstance(call.value, FileSearchCall)
    assert len(call.value.results) == 2
    hit = call.value.results[0]
    assert hit == FileSearchHit(
        file_id="file-Refund2026Policy",
        filename="refund-policy-2026.pdf",
        score=0.9132,
        text="Refunds are issued within 30 days of delivery. Opened software cannot "
        "be returned.",
        attributes=MappingProxyType({"tenant": "acme", "year": 2026, "public": True}),
    )
    assert isinstance(hit.attributes, MappingProxyType)
    assert "2 result(s)" in call.message
    assert "refund-policy-2026.pdf (0.91)" in call.rendered


def test_parse_failed_call_through_the_sdk() -> None:
    items = sdk_output("file_search_failed_response.json")
    call = CODEC.parse_call(items[0])
    assert call is not None and call.success is False
    assert call.message == "File search call fs_68a1b2c3d4e5f602 failed."
    assert call.value.results == ()
    result = CODEC.parse_output(items, file_search_tool(FileSearchConfig(("v",))))
    assert (
        result is not None
        and result.results == ()
        and result.queries == ("refund policy",)
    )


def test_parse_output_aggregates_the_run() -> None:
    items = sdk_output("file_search_response.json")
    tool = file_search_tool(FileSearchConfig(vector_store_ids=("vs_68a1c0ffee",)))
    result = CODEC.parse_output(items, tool)
    assert isinstance(result, FileSearchResult)
    assert result.queries == ("refund policy", "return window days")
    assert [h.file_id for h in result.results] == [
        "file-Refund2026Policy",
        "file-FaqReturns",
    ]
    assert [c.file_id for c in result.citations] == [
        "file-Refund2026Policy",
        "file-FaqReturns",
    ]
    assert {c.kind for c in result.citations} == {"file_citation"}
    assert len(result.calls) == 1
    assert "faq-returns.md" in result.render()
    # Raw JSON dicts parse to the same typed output as SDK objects.
    assert (
        CODEC.parse_output(load("file_search_response.json")["output"], tool) == result
    )


def test_parse_output_aggregates_several_calls_and_is_none_without_calls() -> None:
    tool = file_search_tool(FileSearchConfig(vector_store_ids=("v",)))
    items = [
        {
            "type": "file_search_call",
            "id": "fs_1",
            "status": "completed",
            "queries": ["a", "b"],
            "results": None,
        },
        {
            "type": "file_search_call",
            "id": "fs_2",
            "status": "completed",
            "queries": ["b", "c"],
            "results": [{"file_id": "f", "filename": None, "score": None, "text": "t"}],
        },
    ]
    result = CODEC.parse_output(items, tool)
    assert result is not None
    assert result.queries == ("a", "b", "c")
    assert [h.file_id for h in result.results] == ["f"]
    assert result.results[0].score is None and result.results[0].attributes == {}
    assert CODEC.parse_output([{"type": "message", "content": []}], tool) is None


# -- adapter round trip --------------------------------------------------------


def test_adapter_round_trip() -> None:
    captured: list[dict[str, Any]] = []
    client = make_client(load("file_search_response.json"), captured)
    adapter = OpenAIAdapter(
        client=client,
        model="gpt-5.4",
        hosted_tool_codecs={**default_codecs(), "file_search": OpenAIFileSearchCodec()},
    )
    config = FileSearchConfig(
        vector_store_ids=("vs_68a1c0ffee",),
        max_results=8,
        filters={"type": "eq", "key": "tenant", "value": "acme"},
    )
    prompt = Prompt(
        ns="tests",
        key="file-search",
        sections=[
            MarkdownSection(
                title="Task", key="task", template="What is the refund window?"
            ),
            FileSearchSection(config),
        ],
    )
    sink = InMemorySink()
    response = adapter.evaluate(prompt, sink=sink)

    assert len(captured) == 1
    body = captured[0]
    assert body["tools"] == [
        {
            "type": "file_search",
            "vector_store_ids": ["vs_68a1c0ffee"],
            "max_num_results": 8,
            "filters": {"type": "eq", "key": "tenant", "value": "acme"},
        }
    ]
    assert body["include"] == ["file_search_call.results"]
    assert "parallel_tool_calls" not in body

    invoked = sink.of_type(ToolInvoked)
    assert len(invoked) == 1
    event = invoked[0]
    assert (event.native, event.kind, event.provider, event.name) == (
        True,
        "file_search",
        "openai",
        "file_search",
    )
    assert event.success is True and event.call_id == "fs_68a1b2c3d4e5f601"
    assert event.params == {"queries": ["refund policy", "return window days"]}
    assert isinstance(event.result.value, FileSearchCall)

    output = response.hosted_outputs["file_search"]
    assert isinstance(output, FileSearchResult)
    assert len(output.results) == 2
    assert response.text is not None and response.text.startswith(
        "Customers can return"
    )


def test_adapter_forces_the_tool_with_its_tool_choice() -> None:
    adapter = OpenAIAdapter(
        client=make_client({}, []),
        model="gpt-5.4",
        hosted_tool_codecs={**default_codecs(), "file_search": OpenAIFileSearchCodec()},
    )
    section = FileSearchSection(FileSearchConfig(vector_store_ids=("v",)))
    forced = Prompt(
        ns="t",
        key="k",
        sections=[section],
        tool_choice=ToolChoice(mode="tool", tools=("file_search",)),
    )
    assert adapter.request_preview(forced.render())["tool_choice"] == {
        "type": "file_search"
    }
    allowed = Prompt(
        ns="t",
        key="k",
        sections=[section],
        tool_choice=ToolChoice(mode="allowed", tools=("file_search",)),
    )
    assert adapter.request_preview(allowed.render())["tool_choice"] == {
        "type": "allowed_tools",
        "mode": "auto",
        "tools": [{"type": "file_search"}],
    }


def test_runtime_modules_stay_framework_free() -> None:
    import tooling.runtime.adapters.openai.codecs.file_search as codec_module

    for module in (fs_module, codec_module):
        tree = ast.parse(Path(str(module.__file__)).read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in {"django", "rest_framework", "celery"}
