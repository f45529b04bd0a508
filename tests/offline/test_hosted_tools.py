"""Hosted tool items (file search, code interpreter, images, MCP) via the SDK."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
from openai import OpenAI

from tooling.offline import MARKER_MCP_ERROR, offline_transport

FILE_SEARCH = {
    "type": "file_search",
    "vector_store_ids": ["vs_123"],
    "max_num_results": 8,
}
CODE = {"type": "code_interpreter", "container": {"type": "auto", "memory_limit": "4g"}}
IMAGE = {"type": "image_generation", "quality": "low", "size": "1024x1024"}
MCP = {
    "type": "mcp",
    "server_label": "deepwiki",
    "server_url": "https://mcp.deepwiki.com/mcp",
    "allowed_tools": ["ask_question", "read_wiki"],
    "require_approval": "never",
}
ALL_INCLUDES: Any = ["file_search_call.results", "code_interpreter_call.outputs"]


def make_client() -> Any:
    http_client: Any = httpx.Client(transport=offline_transport())
    return OpenAI(
        api_key="sk-offline",
        base_url="http://offline.invalid/v1",
        http_client=http_client,
        max_retries=0,
    )


def _create(
    tools: list[Any], *, include: Any = ALL_INCLUDES, text: str = "Refund policy"
) -> Any:
    return make_client().responses.create(
        model="gpt-5.4",
        input=[
            {"role": "system", "content": "# Support"},
            {"role": "user", "content": text},
        ],
        tools=tools,
        include=include,
    )


def test_hosted_tools_each_produce_their_sdk_item() -> None:
    response = _create([FILE_SEARCH, CODE, IMAGE, MCP])

    assert [type(item).__name__ for item in response.output] == [
        "ResponseFileSearchToolCall",
        "ResponseCodeInterpreterToolCall",
        "ImageGenerationCall",
        "McpListTools",
        "McpCall",
        "ResponseOutputMessage",
    ]
    assert all(
        item.status == "completed"
        for item in response.output
        if hasattr(item, "status")
    )


def test_file_search_results_only_with_include() -> None:
    with_results = _create([FILE_SEARCH]).output[0]
    without = _create([FILE_SEARCH], include=[]).output[0]

    assert with_results.queries == ["Refund policy"]
    result = with_results.results[0]
    assert result.filename == "handbook.md"
    assert result.file_id.startswith("file-")
    assert 0 < result.score <= 1
    assert "Refund policy" in result.text
    assert result.attributes == {"vector_store_id": "vs_123"}
    assert without.results is None


def test_file_search_answer_carries_a_file_citation() -> None:
    response = _create([FILE_SEARCH])

    (annotation,) = response.output[-1].content[0].annotations
    assert type(annotation).__name__ == "AnnotationFileCitation"
    assert annotation.file_id == response.output[0].results[0].file_id
    text = response.output_text
    assert text[annotation.index :].startswith(annotation.filename)


def test_code_interpreter_outputs_only_with_include_and_container_citation() -> None:
    response = _create([CODE])
    without = _create([CODE], include=[]).output[0]

    call = response.output[0]
    assert call.container_id.startswith("cntr_")
    assert "print" in call.code
    assert [type(o).__name__ for o in call.outputs] == ["OutputLogs"]
    assert call.outputs[0].logs == "2\n"
    assert without.outputs is None
    (annotation,) = response.output[-1].content[0].annotations
    assert type(annotation).__name__ == "AnnotationContainerFileCitation"
    assert annotation.container_id == call.container_id
    assert (
        response.output_text[annotation.start_index : annotation.end_index]
        == "result.csv"
    )


def test_code_interpreter_reuses_an_explicit_container_id() -> None:
    response = _create([{"type": "code_interpreter", "container": "cntr_existing123"}])

    assert response.output[0].container_id == "cntr_existing123"


def test_image_generation_returns_a_valid_png() -> None:
    call = _create([IMAGE]).output[0]

    png = base64.b64decode(call.result)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert png[12:16] == b"IHDR" and png[16:24] == b"\x00\x00\x00\x01" * 2
    assert png.endswith(b"IEND\xaeB`\x82")
    assert (call.size, call.quality, call.output_format) == ("1024x1024", "low", "png")
    assert call.revised_prompt and "Refund policy" in call.revised_prompt
    assert call.action is None  # the real item has no action (issue #24)
    assert "action" not in call.model_dump(exclude_none=True)


def test_mcp_lists_tools_then_calls_the_first_allowed_one() -> None:
    listing, call, _message = _create([MCP]).output

    assert listing.server_label == "deepwiki"
    assert [tool.name for tool in listing.tools] == ["ask_question", "read_wiki"]
    assert (call.server_label, call.name, call.status) == (
        "deepwiki",
        "ask_question",
        "completed",
    )
    assert json.loads(call.arguments) == {"question": "Refund policy"}
    assert call.output and call.error is None


def test_mcp_error_marker_gives_a_failed_call() -> None:
    response = _create([MCP], text=f"Ask the wiki {MARKER_MCP_ERROR}")

    call = response.output[1]
    assert call.status == "failed"
    assert call.output is None
    assert call.error.type == "http_error"
    assert call.error.code == 502
    assert call.error.message == "Bad gateway from MCP server"
    assert "mcp deepwiki.ask_question failed" in response.output_text


def test_hosted_tools_run_once_then_function_calls_continue() -> None:
    tools: list[Any] = [
        FILE_SEARCH,
        {
            "type": "function",
            "name": "lint",
            "parameters": {"type": "object", "properties": {}},
            "strict": True,
        },
    ]
    client = make_client()
    history: list[Any] = [{"role": "user", "content": "Lint it"}]
    first = client.responses.create(model="gpt-5.4", input=history, tools=tools)
    history += [item.model_dump(exclude_none=True) for item in first.output]
    history.append(
        {
            "type": "function_call_output",
            "call_id": first.output[1].call_id,
            "output": "ok",
        }
    )

    second = client.responses.create(model="gpt-5.4", input=history, tools=tools)

    assert [i.type for i in first.output] == ["file_search_call", "function_call"]
    assert [i.type for i in second.output] == ["message"]
    assert second.output[0].content[0].annotations[0].type == "file_citation"
