"""A provider that misbehaves, through the whole stack.

Each test runs a real session through the service layer (``start_session``,
inline) against the real ``openai`` SDK over a scripted transport that
misbehaves one way: NUL bytes, lone surrogates, over-long names and ids,
malformed function calls, bodies that are not JSON, failed and incomplete
responses, retries, absurd usage, megabytes, bidi controls. Each then checks
the session's end, every audit row, and that the API, the session page and the
admin pages answer 200 with content that decodes. On SQLite by default, on
PostgreSQL (which refuses NUL in text and ``\\u0000`` in jsonb) with
``DATABASE_URL``.

The cases that also run on a worker are not here: they are data in
``misbehaving_cases.py`` (named below, section by section), run inline by
``test_misbehaving_cases.py`` and on the worker by
``tests/integration/test_misbehaving_worker.py``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import httpx
import pytest

from sessions_app.models import Citation
from sessions_app.runs.storable import MAX_COUNT
from tests.runtime.fakes import (
    function_call,
    message,
    response,
    url_citation,
    web_search_call,
)
from tests.sessions_app.misbehaving import (
    ELLIPSIS,
    FFFD,
    LINT_DONE,
    RELEASE,
    ScriptedProvider,
    assert_succeeded,
    encode,
    error_reply,
    lint_call,
    raw,
    read_pages,
    rows,
    run,
    tool_outputs,
    usage,
)
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db

RESEARCH = "demo/research"  # web_search + count_words, answers in JSON


@pytest.fixture(autouse=True)
def _catalog(settings):
    settings.WINK_PROVIDER = "offline"
    seed_demo_catalog()


def research_answer(
    *annotations: dict[str, Any], answer: str = "Django 5.2 is the current LTS."
) -> dict[str, Any]:
    """The research prompt's JSON answer, its annotations on the answer text."""
    text = json.dumps(
        {"answer": answer, "sources": ["https://docs.djangoproject.com/en/5.2/"]}
    )
    start = text.index(answer)
    return message(
        text,
        *(
            a | {"start_index": start, "end_index": start + len(answer)}
            for a in annotations
        ),
    )


# -- 1. NUL in the final message -------------------------------------------------------
# (case nul_output)


# -- 2. Lone surrogates ----------------------------------------------------------------
# (cases surrogate_output, surrogate_arguments)


def test_lone_surrogate_in_the_function_arguments_string_runs_the_tool(
    api_client, admin_client
):
    # The arguments string itself holds a lone surrogate (escaped in the body).
    provider = ScriptedProvider(
        response(lint_call("call_1", '{"target": "src\udc00/app"}')),
        response(message("Linted."), id="resp_2"),
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert (session.turns, session.usage) == (2, usage(20, 10))
    calls, (tool,) = rows(session)
    # Turn 2's recorded request replays turn 1's function call: altered too.
    assert [c.text_altered for c in calls] == [True, True]
    assert (tool.name, tool.success) == ("lint", True)
    assert tool.params == {"target": f"src{FFFD}/app"}
    assert tool.raw_arguments == f'{{"target": "src{FFFD}/app"}}'
    read_pages(session, api_client, admin_client)
    # The arguments as received held a lone surrogate, replaced: the row says so.
    assert tool.text_altered is True


def test_lone_surrogates_in_a_citation_title_and_url(api_client, admin_client):
    url = "https://docs.djangoproject.com/en/5.2/\udc00releases/"
    provider = ScriptedProvider(
        response(
            web_search_call("ws_1", "django lts", [url]),
            research_answer(url_citation(url, 0, 0, title="Django \ud800 releases")),
        )
    )

    session = run(RESEARCH, provider)

    assert_succeeded(session)
    assert session.output == {
        "answer": "Django 5.2 is the current LTS.",
        "sources": ["https://docs.djangoproject.com/en/5.2/"],
    }
    assert (session.turns, session.usage) == (1, usage(10, 5))
    (call,), (search,) = rows(session)
    assert call.text_altered is True
    assert (search.name, search.native, search.kind, search.call_id) == (
        "web_search",
        True,
        "web_search",
        "ws_1",
    )
    assert search.success is True
    (citation,) = Citation.objects.filter(session=session)
    assert citation.provider_call_id == call.pk
    assert citation.url == f"https://docs.djangoproject.com/en/5.2/{FFFD}releases/"
    assert citation.title == f"Django {FFFD} releases"
    assert citation.domain == "docs.djangoproject.com"
    assert citation.cited_text == "Django 5.2 is the current LTS."
    assert citation.search_call_id == "ws_1"
    pages = read_pages(session, api_client, admin_client)
    assert pages.detail["citations"][0]["title"] == f"Django {FFFD} releases"
    # The title and URL held lone surrogates, replaced: the row says so.
    assert citation.text_altered is True


# -- 3. NUL in arguments, a tool name, a call_id ---------------------------------------
# (cases nul_escaped_in_arguments, nul_in_the_arguments_string, nul_in_a_tool_name)


def test_nul_in_a_call_id_runs_the_tool(api_client, admin_client):
    provider = ScriptedProvider(
        response(lint_call("call\u0000_1")),
        response(message("Linted."), id="resp_2"),
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert (session.turns, session.usage) == (2, usage(20, 10))
    (first, second), (tool,) = rows(session)
    assert first.text_altered is second.text_altered is True
    assert (tool.name, tool.call_id, tool.success) == ("lint", f"call{FFFD}_1", True)
    assert tool.message == LINT_DONE
    assert tool.text_altered is True
    # The output went back under the call_id the provider sent.
    (output,) = tool_outputs(provider.requests, 1)
    assert output["call_id"] == "call\u0000_1"
    read_pages(session, api_client, admin_client)


# -- 4. A 5,000-character tool name ----------------------------------------------------


def test_a_huge_unknown_tool_name_is_cut_in_the_row_and_kept_in_the_response(
    api_client, admin_client
):
    name = "x" * 5000
    provider = ScriptedProvider(
        response(function_call(name, {}, "call_1")),
        response(message("Sorry."), id="resp_2"),
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert (session.turns, session.usage) == (2, usage(20, 10))
    (first, _), (tool,) = rows(session)
    assert first.response is not None
    assert first.response["output"][0]["name"] == name
    assert len(tool.name) == 64
    assert tool.name == "x" * 63 + ELLIPSIS
    assert (tool.success, tool.text_altered, tool.call_id) == (False, True, "call_1")
    assert tool.message.startswith("Unknown tool 'xxxx")
    assert len(tool.message) < 200
    pages = read_pages(session, api_client, admin_client)
    assert pages.detail["tool_invocations"][0]["name"] == tool.name
    assert pages.provider_calls[0]["response"]["output"][0]["name"] == name


# -- 5. Over-long call_id, response id, x-request-id -----------------------------------


def test_over_long_ids_are_cut_in_the_rows(api_client, admin_client):
    call_id = "call_" + "c" * 995
    response_id = "resp_" + "r" * 995
    request_id = "req_" + "q" * 496

    def reply(body: dict[str, Any]) -> httpx.Response:
        return raw(encode(body), **{"x-request-id": request_id})

    provider = ScriptedProvider(
        reply(response(lint_call(call_id), id=response_id)),
        reply(response(message("Linted."), id=response_id + "2")),
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert (session.turns, session.usage) == (2, usage(20, 10))
    calls, (tool,) = rows(session)
    for call in calls:
        assert len(call.response_id) == 100 and call.response_id.endswith(ELLIPSIS)
        assert call.response_id == response_id[:99] + ELLIPSIS
        assert call.request_id == request_id[:99] + ELLIPSIS
        assert call.text_altered is True
        assert call.attempts[0]["request_id"] == request_id
    assert calls[0].response is not None
    assert calls[0].response["id"] == response_id
    assert calls[1].response is not None
    assert calls[1].response["id"] == response_id + "2"
    assert (tool.name, tool.success, tool.message) == ("lint", True, LINT_DONE)
    assert tool.call_id == call_id[:99] + ELLIPSIS
    assert tool.text_altered is True
    outputs = tool_outputs(provider.requests, 1)
    assert [o["call_id"] for o in outputs] == [call_id]
    read_pages(session, api_client, admin_client)


# -- 6. A citation with a 1,000-character host name ------------------------------------


def test_a_citation_with_a_huge_host_name_keeps_its_url_and_cuts_its_domain(
    api_client, admin_client
):
    host = "a" * 1000 + ".docs.python.org"
    url = f"https://{host}/3/library/"
    provider = ScriptedProvider(
        response(
            web_search_call("ws_1", "python", [url]),
            research_answer(url_citation(url, 0, 0, title="Python docs")),
        )
    )

    session = run(RESEARCH, provider)

    assert_succeeded(session)
    assert (session.turns, session.usage) == (1, usage(10, 5))
    (call,), (search,) = rows(session)
    assert call.text_altered is False  # the raw response keeps the whole URL
    assert (search.name, search.success) == ("web_search", True)
    (citation,) = Citation.objects.filter(session=session)
    assert citation.url == url
    assert len(citation.domain) == 255
    assert citation.domain == host[:254] + ELLIPSIS
    assert citation.text_altered is True
    assert citation.title == "Python docs"
    pages = read_pages(session, api_client, admin_client)
    assert pages.detail["citations"][0]["url"] == url
    assert pages.detail["citations"][0]["domain"] == citation.domain


# -- 7. A repeated call_id -------------------------------------------------------------
# (case repeated_call_id)


# -- 8. Arguments that are an object, arguments that are not JSON ----------------------
# (cases arguments_object, arguments_not_json)


# -- 9. A 200 with an HTML body --------------------------------------------------------
# (cases html_page, html_body)


# -- 10. A failed or incomplete response on turn 2 -------------------------------------
# (cases failed_response_plain, failed_response, incomplete_response)


# -- 11. Retries -----------------------------------------------------------------------
# (cases a_500_then_success, cut_connection_then_success, a_500_three_times)


def test_a_429_is_retried_and_both_attempts_are_recorded(api_client, admin_client):
    provider = ScriptedProvider(
        error_reply(429, **{"retry-after-ms": "1", "x-request-id": "req_429"}),
        response(message("Hi.")),
        max_retries=2,
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert session.output_text == "Hi."
    assert (session.turns, session.usage) == (1, usage(10, 5))
    (call,), _ = rows(session)
    assert call.attempt_count == 2
    assert [(a["number"], a["status_code"]) for a in call.attempts] == [
        (1, 429),
        (2, 200),
    ]
    assert call.attempts[0]["error_type"] == "RateLimitError"
    assert call.attempts[0]["request_id"] == "req_429"
    assert call.attempts[1]["error"] is None
    assert call.request_id == "req_2"
    pages = read_pages(session, api_client, admin_client)
    assert pages.detail["provider_calls"][0]["attempt_count"] == 2


# -- 12. Absurd usage ------------------------------------------------------------------
# (cases huge_usage, negative_usage, string_usage)


def test_huge_usage_on_every_turn_sums_past_the_column_maximum(
    api_client, admin_client
):
    provider = ScriptedProvider(
        response(lint_call(), usage=(10**20, 10**20)),
        response(message("Hi."), id="resp_2", usage=(10**20, 7)),
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    calls, (tool,) = rows(session)
    assert [(c.input_tokens, c.output_tokens, c.text_altered) for c in calls] == [
        (MAX_COUNT, MAX_COUNT, True),
        (MAX_COUNT, 7, True),
    ]
    assert tool.success is True
    assert session.turns == 2
    assert session.usage == usage(2 * MAX_COUNT, MAX_COUNT + 7)
    read_pages(session, api_client, admin_client)


# -- 13. NaN and Infinity --------------------------------------------------------------


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=str)
def test_a_body_with_a_non_finite_number_is_invalid_json(
    api_client, admin_client, value
):
    body = encode(response(message("Hi."), usage=(value, 5)))
    assert b"NaN" in body or b"Infinity" in body
    provider = ScriptedProvider(response(lint_call()), body, max_retries=2)

    session = run(RELEASE, provider)

    assert (session.status, session.error_phase) == ("failed", "response")
    assert session.error_message.startswith(
        "The provider answered HTTP 200 (application/json) with a body that is not "
        "valid JSON: "
    )
    assert (session.turns, session.usage) == (1, usage(10, 5))
    (first, failed), (tool,) = rows(session)
    assert (first.status, tool.success) == ("completed", True)
    assert (failed.turn, failed.status, failed.response) == (2, "error", None)
    assert (failed.status_code, failed.error_type) == (200, "InvalidResponseBody")
    assert failed.attempt_count == 1
    assert len(provider.requests) == 2
    read_pages(session, api_client, admin_client)


# -- 14. Megabytes ---------------------------------------------------------------------
# (case three_megabytes)


# -- 15. Bidi controls -----------------------------------------------------------------
# (case bidi_controls)
