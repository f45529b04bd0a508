"""The adapter on bodies recorded from the real Responses API (issue #24).

Each body is served over HTTP to the real ``openai`` SDK
(``real_responses.replay``); where no recording shows a case, a recorded body
is copied and one field edited, and the test says which.

Framework-free: ``pytest tests/runtime/test_real_responses.py -p no:django``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.errors import PromptEvaluationError
from tooling.runtime.events import InMemorySink, PromptExecuted, ProviderCallCompleted
from tooling.runtime.hosted.base import HostedTool
from tooling.runtime.prompt import Prompt, StructuredOutput
from tooling.runtime.sections import MarkdownSection

from . import real_responses as real
from .fakes import MODEL, FakeProvider


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
    for message in data["output"]:
        del message["phase"]

    result, sink = run(real.replay(data))

    assert result.text == "".join(m["content"][0]["text"] for m in data["output"])
    assert sink.of_type(ProviderCallCompleted)[0].commentary == ()
