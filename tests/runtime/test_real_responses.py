"""The adapter on bodies recorded from the real Responses API (issue #24).

Each body is served over HTTP to the real ``openai`` SDK
(``real_responses.replay``); where no recording shows a case, a recorded body
is copied and one field edited, and the test says which.

Framework-free: ``pytest tests/runtime/test_real_responses.py -p no:django``.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from tooling.runtime.adapters.openai import OpenAIAdapter, RunRecord
from tooling.runtime.errors import PromptEvaluationError
from tooling.runtime.events import (
    InMemorySink,
    PromptExecuted,
    ProviderCallCompleted,
    ToolInvoked,
)
from tooling.runtime.hosted.base import HostedTool
from tooling.runtime.hosted.code_interpreter import code_interpreter_tool
from tooling.runtime.hosted.file_search import FileSearchConfig, file_search_tool
from tooling.runtime.hosted.image_generation import image_generation_tool
from tooling.runtime.hosted.shell import ShellConfig, shell_tool
from tooling.runtime.hosted.web_search import web_search_tool
from tooling.runtime.prompt import Prompt, StructuredOutput
from tooling.runtime.sections import MarkdownSection

from . import real_responses as real
from .costing import SHEET
from .fakes import MODEL, FakeProvider, message, response


def make_prompt(*, hosted: tuple[HostedTool[Any], ...] = (), **kwargs: Any) -> Prompt:
    return Prompt(
        ns="tests",
        key="real",
        name="real-prompt",
        sections=[
            MarkdownSection(
                key="task",
                title="Task",
                template="Answer the question.",
                hosted_tools=hosted,
            )
        ],
        **kwargs,
    )


def run(
    provider: FakeProvider, prompt: Prompt | None = None, **kwargs: Any
) -> tuple[Any, InMemorySink]:
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)
    result = adapter.evaluate(prompt or make_prompt(), sink=sink, **kwargs)
    return result, sink


def fail(
    provider: FakeProvider, prompt: Prompt | None = None
) -> tuple[PromptEvaluationError, InMemorySink]:
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)
    with pytest.raises(PromptEvaluationError) as caught:
        adapter.evaluate(prompt or make_prompt(), sink=sink)
    return caught.value, sink


# -- 15. statuses other than completed ----------------------------------------------


def _background(status: str) -> dict[str, Any]:
    """The recorded phase body as a background response still running: edited
    (status, output, usage, background), since no recording shows one."""
    data = real.body(real.PHASE)
    data.update(status=status, output=[], usage=None, background=True)
    return data


@pytest.mark.parametrize("status", ["queued", "in_progress", "cancelled"])
def test_a_background_status_fails_the_run_and_the_call_stays_recorded(
    status: str,
) -> None:
    error, sink = fail(real.replay(_background(status)))

    assert error.phase == "response"
    assert error.message == (
        f"The provider answered with status '{status}': the product does not use "
        "background mode; the response has no output to act on."
    )
    (call,) = sink.of_type(ProviderCallCompleted)
    assert call.status == status
    assert call.response["status"] == status
    assert call.response["id"] == real.body(real.PHASE)["id"]
    assert sink.of_type(PromptExecuted) == []


@pytest.mark.parametrize("status", ["paused", ["queued"], {"s": 1}, 7])
def test_an_unknown_status_fails_the_run_with_its_value(status: Any) -> None:
    data = real.body(real.PHASE)
    data["status"] = status

    error, _sink = fail(real.replay(data))

    assert error.phase == "response"
    assert error.message.startswith("The provider answered with an unknown status '")
    assert error.message.endswith("'; only a completed response is acted on.")
    assert str(status)[:10] in error.message


def test_a_body_without_status_is_read_as_completed() -> None:
    data = real.body(real.PHASE)
    del data["status"]

    result, _sink = run(real.replay(data))

    assert result.text.startswith("Here are some **latest AI updates")


# -- 16. phase: commentary is not the answer --------------------------------------


def _phase_messages() -> tuple[dict[str, Any], dict[str, Any]]:
    commentary, final = real.items_of(real.PHASE, "message")
    assert (commentary["phase"], final["phase"]) == ("commentary", "final_answer")
    return commentary, final


def test_only_the_final_answer_is_the_output_and_commentary_is_recorded() -> None:
    commentary, final = _phase_messages()

    result, sink = run(real.replay(real.PHASE))

    assert result.text == final["content"][0]["text"]
    assert commentary["content"][0]["text"] not in result.text
    (executed,) = sink.of_type(PromptExecuted)
    assert executed.text == result.text
    (call,) = sink.of_type(ProviderCallCompleted)
    assert call.commentary == (commentary["content"][0]["text"],)
    assert call.response["output"][0]["phase"] == "commentary"  # kept as received


def test_structured_output_is_parsed_from_the_final_answer_not_the_commentary() -> None:
    # The recorded phase body, its two texts edited to JSON.
    data = real.body(real.PHASE)
    data["output"][0]["content"][0]["text"] = '{"answer": "a draft"}'
    data["output"][1]["content"][0]["text"] = '{"answer": "the answer"}'

    result, _sink = run(
        real.replay(data),
        make_prompt(
            output=StructuredOutput.from_schema(
                {
                    "type": "object",
                    "properties": {"answer": {"type": "string"}},
                    "required": ["answer"],
                    "additionalProperties": False,
                },
                name="answer",
            )
        ),
    )

    assert result.output == {"answer": "the answer"}


def test_a_commentary_only_response_is_not_an_answer_the_model_goes_on() -> None:
    # The recorded phase body cut to its commentary, then the whole body.
    first = real.body(real.PHASE)
    first["output"] = first["output"][:1]
    provider = real.replay(first, real.PHASE)
    _commentary, final = _phase_messages()

    result, sink = run(provider)

    assert result.text == final["content"][0]["text"]
    assert result.turns == 2
    # phase is sent back on the assistant message, as the API asks
    echoed = [i for i in provider.requests[1]["input"] if i.get("type") == "message"]
    assert [m.get("phase") for m in echoed] == ["commentary"]
    assert [c.commentary for c in sink.of_type(ProviderCallCompleted)] == [
        (first["output"][0]["content"][0]["text"],),
        (first["output"][0]["content"][0]["text"],),
    ]


def test_commentary_without_end_stops_at_the_turn_limit() -> None:
    first = real.body(real.PHASE)
    first["output"] = first["output"][:1]

    sink = InMemorySink()
    adapter = OpenAIAdapter(
        client=real.replay(first, first).client, model=MODEL, max_turns=2
    )
    with pytest.raises(PromptEvaluationError) as caught:
        adapter.evaluate(make_prompt(), sink=sink)

    assert caught.value.phase == "limit"
    assert caught.value.message == (
        "The model did not answer within the maximum of 2 turn(s)."
    )
    assert len(sink.of_type(ProviderCallCompleted)) == 2


def test_messages_without_phase_are_all_the_answer_as_before() -> None:
    data = real.body(real.PHASE)
    for item in data["output"]:
        del item["phase"]

    result, sink = run(real.replay(data))

    assert result.text == "".join(m["content"][0]["text"] for m in data["output"])
    assert sink.of_type(ProviderCallCompleted)[0].commentary == ()


# -- 17. file and container file citations name their call --------------------------


def _file_search() -> HostedTool[Any]:
    return file_search_tool(FileSearchConfig(vector_store_ids=("vs_1",)))


@pytest.mark.parametrize("name", [real.FILE_SEARCH, real.FILE_SEARCH_RESULTS])
def test_a_file_citation_links_to_its_file_search_call(name: str) -> None:
    (search,) = real.items_of(name, "file_search_call")

    result, sink = run(real.replay(name), make_prompt(hosted=(_file_search(),)))

    (citation,) = sink.of_type(ProviderCallCompleted)[0].citations
    assert (citation.kind, citation.filename) == ("file_citation", "ai.pdf")
    assert citation.search_call_id == search["id"]
    assert result.citations == (citation,)
    invoked = sink.of_type(ToolInvoked)
    assert [call.call_id for call in invoked] == [search["id"]]


def test_a_file_citation_prefers_the_search_that_returned_its_file() -> None:
    # The recorded body with a second, later search that returned other files.
    data = real.body(real.FILE_SEARCH_RESULTS)
    first = data["output"][1]
    other = {**first, "id": "fs_other", "results": [{"file_id": "file-other"}]}
    data["output"].insert(2, other)

    _result, sink = run(real.replay(data), make_prompt(hosted=(_file_search(),)))

    (citation,) = sink.of_type(ProviderCallCompleted)[0].citations
    assert citation.search_call_id == first["id"]


def test_a_container_file_citation_links_to_its_code_interpreter_call() -> None:
    runs = real.items_of(real.CODE_INTERPRETER, "code_interpreter_call")
    assert len(runs) == 3  # several calls of one kind in one response

    _result, sink = run(
        real.replay(real.CODE_INTERPRETER),
        make_prompt(hosted=(code_interpreter_tool(),)),
    )

    (citation,) = sink.of_type(ProviderCallCompleted)[0].citations
    assert citation.kind == "container_file_citation"
    assert citation.container_id == runs[-1]["container_id"]
    assert citation.search_call_id == runs[-1]["id"]  # the latest in its container
    assert [c.call_id for c in sink.of_type(ToolInvoked)] == [r["id"] for r in runs]


def test_a_citation_of_an_unknown_container_links_to_the_latest_run() -> None:
    data = real.body(real.CODE_INTERPRETER)
    annotation = data["output"][-1]["content"][0]["annotations"][0]
    annotation["container_id"] = ["not", "a", "string"]  # hostile: still read

    _result, sink = run(
        real.replay(data), make_prompt(hosted=(code_interpreter_tool(),))
    )

    (citation,) = sink.of_type(ProviderCallCompleted)[0].citations
    runs = real.items_of(real.CODE_INTERPRETER, "code_interpreter_call")
    assert citation.search_call_id == runs[-1]["id"]


# -- 18. web search sources without a URL -------------------------------------------


def test_api_sources_of_a_web_search_are_kept_in_the_recorded_call() -> None:
    # The recorded body; a real-time feed source added to its search (the
    # reference names them: oai-sports, oai-weather, oai-finance).
    data = real.body(real.WEB_SEARCH)
    search = data["output"][1]
    search["action"]["sources"].append({"type": "api", "name": "oai-weather"})

    result, sink = run(real.replay(data), make_prompt(hosted=(web_search_tool(),)))

    first = sink.of_type(ToolInvoked)[0]
    assert first.call_id == search["id"]
    assert first.result.value.api_sources == ("oai-weather",)
    assert len(first.result.value.sources) == 16  # the URLs as before
    assert "- api: oai-weather" in first.rendered_output
    assert "1 API source(s)" in first.result.message
    assert result.hosted_outputs["web_search"].api_sources == ("oai-weather",)


def test_each_web_search_action_of_a_real_response_is_a_recorded_call() -> None:
    calls = real.items_of(real.WEB_SEARCH, "web_search_call")

    _result, sink = run(
        real.replay(real.WEB_SEARCH), make_prompt(hosted=(web_search_tool(),))
    )

    invoked = sink.of_type(ToolInvoked)
    assert [c.call_id for c in invoked] == [c["id"] for c in calls]
    assert [c.params["action"] for c in invoked] == [
        "search",
        "open_page",
        "find_in_page",
    ]
    assert invoked[2].params["pattern"] == "Vercel"
    assert all(call.result.success for call in invoked)
    citations = sink.of_type(ProviderCallCompleted)[0].citations
    assert len(citations) == 10
    assert {c.search_call_id for c in citations} == {calls[0]["id"]}
    usage = sink.of_type(ProviderCallCompleted)[0].usage
    assert (usage.cached_tokens, usage.reasoning_tokens) == (3712, 3136)


# -- 19. a client-executed shell call for a hosted shell ----------------------------


NOT_RUN = (
    "The model asked for a client-executed shell call, but this prompt's shell "
    "runs in a provider container; nothing ran."
)


def test_a_client_shell_call_for_a_hosted_shell_fails_and_the_model_is_told() -> None:
    (recorded,) = real.items_of(real.SHELL_LOCAL, "shell_call")
    assert "environment" not in recorded  # the recording: the client's to run
    provider = real.replay(real.SHELL_LOCAL, response(message("Nothing ran.")))

    result, sink = run(provider, make_prompt(hosted=(shell_tool(),)))

    (invoked,) = sink.of_type(ToolInvoked)
    assert (invoked.native, invoked.kind, invoked.result.success) == (
        True,
        "shell",
        False,
    )
    assert invoked.result.message == NOT_RUN
    assert invoked.call_id == recorded["call_id"]
    assert invoked.params["commands"] == recorded["action"]["commands"]
    # the model is answered (the API refuses an unanswered call) and goes on
    (answer,) = [
        item
        for item in provider.requests[1]["input"]
        if item.get("type") == "shell_call_output"
    ]
    assert answer["call_id"] == recorded["call_id"]
    assert answer["max_output_length"] == 9907
    refusal = {"type": "exit", "exit_code": 126}
    assert (
        answer["output"] == [{"stdout": "", "stderr": NOT_RUN, "outcome": refusal}] * 3
    )
    assert json.loads(invoked.model_output) == answer["output"]
    assert (result.text, result.turns) == ("Nothing ran.", 2)


def test_a_client_shell_call_that_ran_nothing_costs_nothing() -> None:
    provider = real.replay(real.SHELL_LOCAL, response(message("Nothing ran.")))
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)

    adapter.evaluate(
        make_prompt(hosted=(shell_tool(ShellConfig(memory_limit="4g")),)),
        sink=sink,
        pricing=SHEET,
    )

    (invoked,) = sink.of_type(ToolInvoked)
    assert invoked.cost == Decimal(0)


def test_a_hosted_shell_call_with_its_output_still_succeeds() -> None:
    (recorded,) = real.items_of(real.SHELL_CONTAINER, "shell_call")

    result, sink = run(
        real.replay(real.SHELL_CONTAINER), make_prompt(hosted=(shell_tool(),))
    )

    (invoked,) = sink.of_type(ToolInvoked)
    assert invoked.result.success is True
    assert invoked.call_id == recorded["call_id"]
    assert invoked.model_output == ""
    assert result.turns == 1


def test_a_hosted_shell_call_without_environment_but_with_output_ran() -> None:
    # The recorded container body without its environment: the provider
    # reported the output, so it ran there.
    data = real.body(real.SHELL_CONTAINER)
    del data["output"][0]["environment"]

    result, sink = run(real.replay(data), make_prompt(hosted=(shell_tool(),)))

    (invoked,) = sink.of_type(ToolInvoked)
    assert invoked.result.success is True
    assert result.turns == 1


def test_a_resumed_run_answers_the_recorded_client_shell_call_again() -> None:
    first = real.replay(real.SHELL_LOCAL, response(message("Nothing ran.")))
    run(first, make_prompt(hosted=(shell_tool(),)))
    provider = FakeProvider(response(message("Nothing ran.")))

    result, _sink = run(
        provider,
        make_prompt(hosted=(shell_tool(),)),
        resume=RunRecord(responses=(real.body(real.SHELL_LOCAL),)),
    )

    assert provider.requests == first.requests[1:]  # the same answer, resent
    assert result.text == "Nothing ran."


# -- 21. what the offline provider now mirrors, as the real API sends it ----------


def test_a_real_image_generation_call_has_no_action_and_is_recorded() -> None:
    (recorded,) = real.items_of(real.IMAGE_GENERATION, "image_generation_call")
    assert "action" not in recorded  # what the offline provider no longer invents

    _result, sink = run(
        real.replay(real.IMAGE_GENERATION),
        make_prompt(hosted=(image_generation_tool(),)),
    )

    (invoked,) = sink.of_type(ToolInvoked)
    assert invoked.result.success is True
    assert invoked.result.value.action is None
    assert invoked.result.value.output_format == "webp"


def test_reasoning_items_are_replayed_and_their_tokens_counted() -> None:
    provider = real.replay(real.REASONING)

    result, sink = run(provider)

    (call,) = sink.of_type(ProviderCallCompleted)
    assert (call.usage.reasoning_tokens, call.usage.output_tokens) == (128, 163)
    assert result.text.endswith("Final result: 570")
    assert sink.of_type(ToolInvoked) == []  # a reasoning item is not a call
