"""What the real API sends that the offline provider now plays too (issue #24
item 21), through the real SDK: reasoning items and token counts, cached
input, ``open_page``/``find_in_page``, feeds without a URL, code interpreter
images, several calls of one kind in one response, ``phase``, MCP
connectors, statuses other than ``completed``; and no invented fields."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from tooling.offline import (
    MARKER_COMMENTARY,
    MARKER_COMMENTARY_ONLY,
    MARKER_REASONING,
    MARKER_STATUS,
    TINY_PNG_BASE64,
    offline_transport,
)


def make_client() -> Any:
    http_client: Any = httpx.Client(transport=offline_transport())
    return OpenAI(
        api_key="sk-offline",
        base_url="http://offline.invalid/v1",
        http_client=http_client,
        max_retries=0,
    )


def create(
    text: str = "Which Django release is the current LTS?",
    *,
    tools: list[Any] | None = None,
    history: list[Any] | None = None,
    **options: Any,
) -> Any:
    return make_client().responses.create(
        model="gpt-5.4",
        input=[
            {"role": "system", "content": "# Helper\nAnswer briefly."},
            {"role": "user", "content": text},
            *(history or []),
        ],
        tools=tools or [],
        **options,
    )


def create_raw(text: str, *, tools: list[Any], **options: Any) -> dict[str, Any]:
    """The response body as sent (the SDK's models know only URL sources)."""
    raw = make_client().responses.with_raw_response.create(
        model="gpt-5.4",
        input=[{"role": "user", "content": text}],
        tools=tools,
        **options,
    )
    body: dict[str, Any] = raw.http_response.json()
    return body


WEB = {"type": "web_search"}
SOURCES = ["web_search_call.action.sources"]


def _types(response: Any) -> list[str]:
    return [item.type for item in response.output]


# -- reasoning ------------------------------------------------------------------------


def test_a_reasoning_request_gets_reasoning_items_and_counts_their_tokens() -> None:
    response = create(
        reasoning={"effort": "low", "summary": "auto"},
        include=["reasoning.encrypted_content"],
    )

    assert _types(response) == ["reasoning", "message"]
    (thought, _message) = response.output
    assert thought.summary[0].type == "summary_text"
    assert "Which Django release" in thought.summary[0].text
    assert thought.encrypted_content.startswith("gAAAAA")
    details = response.usage.output_tokens_details
    assert details.reasoning_tokens == 64
    assert response.usage.output_tokens > details.reasoning_tokens


def test_reasoning_without_summary_or_include_carries_neither() -> None:
    response = create(reasoning={"effort": "medium"})

    thought = response.output[0]
    assert thought.type == "reasoning"
    assert thought.summary == []
    assert thought.encrypted_content is None


@pytest.mark.parametrize("options", [{}, {"reasoning": {"effort": "none"}}])
def test_no_reasoning_unless_asked(options: dict[str, Any]) -> None:
    response = create(**options)

    assert "reasoning" not in _types(response)
    assert response.usage.output_tokens_details.reasoning_tokens == 0


def test_the_marker_plays_a_reasoning_model() -> None:
    assert _types(create(f"Which release? {MARKER_REASONING}"))[0] == "reasoning"


# -- cached input ---------------------------------------------------------------------


def _long_history() -> list[Any]:
    """A finished first turn whose input is well over 1,024 tokens."""
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "lookup",
        "arguments": "{}",
        "status": "completed",
    }
    output = {"type": "function_call_output", "call_id": "call_1", "output": "x"}
    return [call, output]


def test_a_long_repeated_prefix_is_served_from_the_cache() -> None:
    text = "Which Django release is the current LTS? " + "Context. " * 600
    first = create(text)
    second = create(text, history=_long_history())

    assert first.usage.input_tokens_details.cached_tokens == 0  # nothing before
    cached = second.usage.input_tokens_details.cached_tokens
    assert cached >= 1024
    assert cached % 128 == 0
    assert cached <= second.usage.input_tokens
    # the prefix: the first request's input (system and user messages)
    prefix = [
        {"role": "system", "content": "# Helper\nAnswer briefly."},
        {"role": "user", "content": text},
    ]
    assert cached == (len(json.dumps(prefix)) // 4) // 128 * 128


def test_a_short_prefix_is_not_cached() -> None:
    response = create(history=_long_history())

    assert response.usage.input_tokens_details.cached_tokens == 0


# -- web search: page actions and feeds --------------------------------------------


def test_a_reasoning_search_opens_the_page_and_finds_in_it() -> None:
    response = create(tools=[WEB], include=SOURCES, reasoning={"effort": "low"})

    assert _types(response) == [
        "reasoning",
        "web_search_call",
        "reasoning",
        "web_search_call",
        "reasoning",
        "web_search_call",
        "message",
    ]
    search, opened, found = (
        item for item in response.output if item.type == "web_search_call"
    )
    first_url = search.action.sources[0].url
    assert [type(c.action).__name__ for c in (search, opened, found)] == [
        "ActionSearch",
        "ActionOpenPage",
        "ActionFind",
    ]
    assert (opened.action.type, opened.action.url) == ("open_page", first_url)
    assert (found.action.type, found.action.url) == ("find_in_page", first_url)
    assert found.action.pattern == "release"  # the query's (first) longest word
    assert response.usage.output_tokens_details.reasoning_tokens == 3 * 64


def test_a_plain_search_is_one_call_as_before() -> None:
    assert _types(create(tools=[WEB], include=SOURCES)) == [
        "web_search_call",
        "message",
    ]


def test_a_weather_question_reads_the_weather_feed() -> None:
    body = create_raw(
        "What is the weather in Berlin today?", tools=[WEB], include=SOURCES
    )

    sources = body["output"][0]["action"]["sources"]
    assert {"type": "api", "name": "oai-weather"} in sources
    assert all("url" in s for s in sources if s["type"] == "url")


# -- code interpreter: several runs, an image ---------------------------------------

CODE = {"type": "code_interpreter", "container": {"type": "auto"}}


def test_a_chart_takes_a_second_run_with_an_image_output() -> None:
    response = create(
        "Plot a chart of the steps.",
        tools=[CODE],
        include=["code_interpreter_call.outputs"],
    )

    runs = [item for item in response.output if item.type == "code_interpreter_call"]
    assert len(runs) == 2
    assert runs[0].container_id == runs[1].container_id
    assert [o.type for o in runs[0].outputs] == ["logs"]
    (image,) = runs[1].outputs
    assert type(image).__name__ == "OutputImage"
    assert image.url == f"data:image/png;base64,{TINY_PNG_BASE64}"
    assert "savefig" in runs[1].code


def test_without_a_chart_one_run_as_before() -> None:
    response = create("Sum the steps.", tools=[CODE])

    assert _types(response).count("code_interpreter_call") == 1


# -- phase ----------------------------------------------------------------------------


def test_commentary_comes_first_and_the_answer_is_the_final_answer() -> None:
    response = create(f"Which release? {MARKER_COMMENTARY}")

    commentary, answer = response.output
    assert (commentary.phase, answer.phase) == ("commentary", "final_answer")
    assert commentary.content[0].text.startswith('I will work on "Which release?"')
    assert MARKER_COMMENTARY not in commentary.content[0].text


def test_commentary_only_first_then_the_rest() -> None:
    text = f"Which release? {MARKER_COMMENTARY_ONLY}"
    first = create(text)
    echoed = [item.model_dump(exclude_none=True) for item in first.output]
    second = create(text, history=echoed)

    assert [(i.type, i.phase) for i in first.output] == [("message", "commentary")]
    assert [(i.type, i.phase) for i in second.output] == [
        ("message", "commentary"),
        ("message", "final_answer"),
    ]


# -- statuses -------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["queued", "in_progress", "cancelled"])
def test_a_background_status_has_no_output_yet(status: str) -> None:
    response = create(f"Which release? {MARKER_STATUS[status]}")

    assert response.status == status
    assert (response.output, response.usage, response.background) == ([], None, True)


def test_a_failed_status_carries_its_error() -> None:
    response = create(f"Which release? {MARKER_STATUS['failed']}")

    assert (response.status, response.output, response.usage) == ("failed", [], None)
    assert response.error.code == "server_error"


def test_an_incomplete_status_cuts_the_message_short() -> None:
    complete = create("Which release?")
    response = create(f"Which release? {MARKER_STATUS['incomplete']}")

    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "max_output_tokens"
    (message,) = response.output
    assert message.status == "incomplete"
    assert len(message.content[0].text) < len(complete.output[0].content[0].text)


# -- MCP connectors -----------------------------------------------------------------

DRIVE = {
    "type": "mcp",
    "server_label": "drive",
    "connector_id": "connector_googledrive",
    "authorization": "ya29.token",
    "require_approval": "never",
}


def test_a_connector_lists_search_and_fetch_and_answers() -> None:
    listing, call, _message = create(tools=[DRIVE]).output

    assert [tool.name for tool in listing.tools] == ["search", "fetch"]
    assert (call.type, call.server_label, call.name) == ("mcp_call", "drive", "search")
    assert "connector_googledrive (drive)" in call.output


@pytest.mark.parametrize(
    "tool",
    [
        {**DRIVE, "server_url": "https://mcp.example.com/mcp"},
        {k: v for k, v in DRIVE.items() if k != "connector_id"},
    ],
)
def test_an_mcp_tool_needs_exactly_one_server(tool: dict[str, Any]) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        create(tools=[tool])

    assert "an mcp tool needs exactly one of server_url, connector_id or " in str(
        caught.value
    )


# -- nothing invented ---------------------------------------------------------------


def test_an_image_generation_call_has_no_action_field() -> None:
    body = create_raw("Draw a cat.", tools=[{"type": "image_generation"}])

    item = body["output"][0]
    assert item["type"] == "image_generation_call"
    assert "action" not in item
