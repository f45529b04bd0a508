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
    LINT,
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


def test_nul_in_the_final_message_is_replaced_and_flagged(api_client, admin_client):
    provider = ScriptedProvider(response(message("Tides\u0000 follow the moon.")))

    session = run(RELEASE, provider)

    assert b"\\u0000" in encode(response(message("\u0000")))  # sent as an escape
    assert_succeeded(session)
    assert session.output_text == f"Tides{FFFD} follow the moon."
    assert session.text_altered is True
    assert (session.turns, session.usage) == (1, usage(10, 5))
    (call,), tools = rows(session)
    assert tools == []
    assert (call.turn, call.status, call.text_altered) == (1, "completed", True)
    assert call.response is not None
    stored = call.response["output"][0]["content"][0]["text"]
    assert stored == f"Tides{FFFD} follow the moon."
    pages = read_pages(session, api_client, admin_client)
    assert pages.detail["output_text"] == f"Tides{FFFD} follow the moon."
    assert pages.detail["text_altered"] is True
    assert pages.provider_calls[0]["text_altered"] is True


# -- 2. Lone surrogates ----------------------------------------------------------------


def test_lone_surrogate_in_the_final_message_is_replaced_and_flagged(
    api_client, admin_client
):
    provider = ScriptedProvider(response(message("thinking \ud800 aloud")))

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert session.output_text == f"thinking {FFFD} aloud"
    (call,), tools = rows(session)
    assert tools == []
    assert call.text_altered is True
    assert call.response is not None
    assert call.response["output"][0]["content"][0]["text"] == f"thinking {FFFD} aloud"
    assert (session.turns, session.usage) == (1, usage(10, 5))
    pages = read_pages(session, api_client, admin_client)
    assert pages.detail["output_text"] == f"thinking {FFFD} aloud"
    # The output text held a lone surrogate that was replaced by U+FFFD: that is
    # what the session's text_altered says (as it does for a NUL byte).
    assert session.text_altered is True


def test_lone_surrogate_escaped_inside_function_arguments_runs_the_tool(
    api_client, admin_client
):
    # The arguments string holds the JSON escape "\ud800": it decodes to a lone
    # surrogate only when the tool's arguments are parsed.
    provider = ScriptedProvider(
        response(lint_call("call_1", {"target": "src\ud800/app"})),
        response(message("Linted."), id="resp_2"),
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert session.output_text == "Linted."
    assert (session.turns, session.usage) == (2, usage(20, 10))
    calls, (tool,) = rows(session)
    assert [c.turn for c in calls] == [1, 2]
    assert (tool.name, tool.call_id, tool.success) == ("lint", "call_1", True)
    assert tool.params == {"target": f"src{FFFD}/app"}
    assert tool.message == f"Would run lint on src{FFFD}/app"
    assert tool.raw_arguments == '{"target": "src\\ud800/app"}'
    assert tool.model_output.startswith(f"Would run lint on src{FFFD}/app")
    outputs = tool_outputs(provider.requests, 1)
    assert outputs == [
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": tool.model_output,
        }
    ]
    read_pages(session, api_client, admin_client)


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


def test_nul_escaped_inside_function_arguments_runs_the_tool(api_client, admin_client):
    provider = ScriptedProvider(
        response(lint_call("call_1", {"target": "src\u0000app"})),
        response(message("Linted."), id="resp_2"),
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert (session.turns, session.usage) == (2, usage(20, 10))
    (first, second), (tool,) = rows(session)
    assert first.text_altered is False  # the body held only the escape "\\u0000"
    assert (tool.name, tool.call_id, tool.success) == ("lint", "call_1", True)
    assert tool.params == {"target": f"src{FFFD}app"}
    assert tool.message == f"Would run lint on src{FFFD}app"
    assert tool.model_output.startswith(f"Would run lint on src{FFFD}app")
    assert tool.value == {"tool": "lint", "summary": f"Would run lint on src{FFFD}app"}
    assert tool.text_altered is True
    # The tool's output went back to the provider as it was, and its record
    # (turn 2's request) is stored replaced.
    (output,) = tool_outputs(provider.requests, 1)
    assert output["output"].startswith("Would run lint on src\u0000app")
    assert second.text_altered is True
    assert FFFD in json.dumps(second.request, ensure_ascii=False)
    read_pages(session, api_client, admin_client)


def test_nul_in_the_function_arguments_string_is_a_failed_call(
    api_client, admin_client
):
    provider = ScriptedProvider(
        response(lint_call("call_1", '{"target": "src\u0000app"}')),
        response(message("Sorry."), id="resp_2"),
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert (session.turns, session.usage) == (2, usage(20, 10))
    (first, _), (tool,) = rows(session)
    assert first.text_altered is True
    assert (tool.name, tool.success, tool.text_altered) == ("lint", False, True)
    assert tool.message.startswith(
        "Tool validation failed: arguments are not valid JSON"
    )
    assert tool.raw_arguments == f'{{"target": "src{FFFD}app"}}'
    assert tool.params is not None
    assert tool.params["rejected"] is True
    assert tool.params["raw_arguments"] == f'{{"target": "src{FFFD}app"}}'
    read_pages(session, api_client, admin_client)


def test_nul_in_a_tool_name_is_an_unknown_tool(api_client, admin_client):
    provider = ScriptedProvider(
        response(function_call("li\u0000nt", LINT, "call_1")),
        response(message("Sorry."), id="resp_2"),
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert (session.turns, session.usage) == (2, usage(20, 10))
    (first, _), (tool,) = rows(session)
    assert first.text_altered is True
    assert first.response is not None
    assert first.response["output"][0]["name"] == f"li{FFFD}nt"
    assert (tool.name, tool.call_id, tool.success) == (f"li{FFFD}nt", "call_1", False)
    assert tool.text_altered is True
    assert tool.message.startswith(f"Unknown tool 'li{FFFD}nt'. Available tools: ")
    read_pages(session, api_client, admin_client)


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


def test_a_repeated_call_id_runs_once_and_records_the_others_as_failed(
    api_client, admin_client
):
    provider = ScriptedProvider(
        response(
            lint_call("dup", {"target": "one"}),
            lint_call("dup", {"target": "two"}),
        ),
        response(lint_call("dup", {"target": "three"}), id="resp_2"),
        response(message("Linted once."), id="resp_3"),
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert session.output_text == "Linted once."
    assert (session.turns, session.usage) == (3, usage(30, 15))
    calls, tools = rows(session)
    assert [c.turn for c in calls] == [1, 2, 3]
    already = (
        "The call_id 'dup' was already used by an earlier function call of this "
        "run; this call was not run."
    )
    assert [(t.sequence, t.turn, t.call_id, t.success, t.message) for t in tools] == [
        (1, 1, "dup", True, "Would run lint on one"),
        (2, 1, "dup", False, already),
        (3, 2, "dup", False, already),
    ]
    assert tools[1].params == {
        "rejected": True,
        "raw_arguments": '{"target": "two"}',
        "error": already,
    }
    read_pages(session, api_client, admin_client)


# -- 8. Arguments that are an object, arguments that are not JSON ----------------------


@pytest.mark.parametrize(
    ("arguments", "raw_arguments", "problem"),
    [
        (
            {"target": "."},
            '{"target": "."}',
            "Tool validation failed: arguments must be a JSON-encoded string; "
            "the model sent an object.",
        ),
        (
            "{not json",
            "{not json",
            "Tool validation failed: arguments are not valid JSON (",
        ),
    ],
    ids=["object", "not-json"],
)
def test_malformed_arguments_are_a_failed_call(
    api_client, admin_client, arguments, raw_arguments, problem
):
    item = lint_call("call_1") | {"arguments": arguments}
    provider = ScriptedProvider(
        response(item), response(message("Sorry."), id="resp_2")
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert (session.turns, session.usage) == (2, usage(20, 10))
    calls, (tool,) = rows(session)
    assert len(calls) == 2
    assert (tool.name, tool.call_id, tool.success) == ("lint", "call_1", False)
    assert tool.message.startswith(problem)
    assert tool.raw_arguments == raw_arguments
    assert tool.params == {
        "rejected": True,
        "raw_arguments": raw_arguments,
        "error": tool.message,
    }
    assert tool.value is None
    outputs = tool_outputs(provider.requests, 1)
    assert [o["output"] for o in outputs] == [tool.message]
    read_pages(session, api_client, admin_client)


# -- 9. A 200 with an HTML body --------------------------------------------------------


HTML = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
GARBAGE = b"<html>\x00\xff\xfe gateway \x00</html>"


@pytest.mark.parametrize(
    ("content", "excerpt"),
    [
        (HTML, "<html><body><h1>502 Bad Gateway</h1></body></html>"),
        # NUL bytes and bytes that are not UTF-8: the excerpt is storable.
        (GARBAGE, f"<html>{FFFD}{FFFD}{FFFD} gateway {FFFD}</html>"),
    ],
    ids=["html", "nul-and-invalid-utf8"],
)
def test_an_html_body_on_turn_two_fails_the_response_phase(
    api_client, admin_client, content, excerpt
):
    html = httpx.Response(
        200,
        content=content,
        headers={"content-type": "text/html", "x-request-id": "req_html"},
    )
    provider = ScriptedProvider(response(lint_call()), html, max_retries=2)

    session = run(RELEASE, provider)

    assert (session.status, session.error_phase) == ("failed", "response")
    assert session.error_message == (
        "The provider answered HTTP 200 (text/html) with a body that is not valid "
        f"JSON: {excerpt}"
    )
    assert session.error_payload == {"status_code": 200, "request_id": "req_html"}
    assert (session.turns, session.usage) == (1, usage(10, 5))
    (first, failed), (tool,) = rows(session)
    assert (first.turn, first.status, first.error) == (1, "completed", "")
    assert (tool.name, tool.success, tool.message) == ("lint", True, LINT_DONE)
    assert failed.turn == 2
    assert failed.response is None
    assert (failed.status, failed.status_code, failed.error_type) == (
        "error",
        200,
        "InvalidResponseBody",
    )
    assert failed.error == session.error_message
    assert failed.request_id == "req_html"
    assert failed.attempt_count == 1  # a body that is not JSON is not retried
    assert [a["status_code"] for a in failed.attempts] == [200]
    assert failed.attempts[0]["error_type"] == "InvalidResponseBody"
    assert failed.attempts[0]["error"] == session.error_message
    assert len(provider.requests) == 2
    pages = read_pages(session, api_client, admin_client)
    assert pages.detail["provider_calls"][1]["status_code"] == 200
    assert pages.provider_calls[1]["response"] is None


# -- 10. A failed or incomplete response on turn 2 -------------------------------------


@pytest.mark.parametrize(
    ("extra", "status", "message_", "altered"),
    [
        (
            {"error": {"code": "server_error", "message": "The model crashed."}},
            "failed",
            "The provider reported the response as failed: server_error: "
            "The model crashed.",
            False,
        ),
        (
            {"error": {"code": "server_error", "message": "The model\u0000 crashed."}},
            "failed",
            "The provider reported the response as failed: server_error: "
            f"The model{FFFD} crashed.",
            True,
        ),
        (
            {"incomplete_details": {"reason": "max_output_tokens"}},
            "incomplete",
            "The provider returned an incomplete response (reason: max_output_tokens).",
            False,
        ),
    ],
    ids=["failed", "failed-with-nul", "incomplete"],
)
def test_a_failed_or_incomplete_response_fails_the_response_phase(
    api_client, admin_client, extra, status, message_, altered
):
    provider = ScriptedProvider(
        response(lint_call()),
        response(message("Half an ans"), id="resp_2", status=status, **extra),
    )

    session = run(RELEASE, provider)

    assert (session.status, session.error_phase) == ("failed", "response")
    assert session.error_message == message_
    assert session.error_payload["response_id"] == "resp_2"
    if status == "failed":
        sent = extra["error"]["message"]
        stored = session.error_payload["error"]["message"]
        assert stored == sent.replace("\x00", FFFD)
    assert session.text_altered is altered
    # Both calls got a response: both count as turns, both usages are summed.
    assert (session.turns, session.usage) == (2, usage(20, 10))
    (first, second), (tool,) = rows(session)
    assert (first.turn, first.status, first.response_id) == (1, "completed", "resp_1")
    assert (second.turn, second.status, second.response_id) == (2, status, "resp_2")
    assert (second.input_tokens, second.output_tokens) == (10, 5)
    assert second.response is not None
    assert second.response["status"] == status
    assert second.text_altered is altered
    assert (tool.name, tool.success, tool.message) == ("lint", True, LINT_DONE)
    read_pages(session, api_client, admin_client)


# -- 11. Retries -----------------------------------------------------------------------


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


def test_a_cut_connection_is_retried(api_client, admin_client):
    provider = ScriptedProvider(
        httpx.ReadError("connection reset by peer"),
        response(message("Hi.")),
        max_retries=2,
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert (session.turns, session.usage) == (1, usage(10, 5))
    (call,), _ = rows(session)
    assert call.attempt_count == 2
    first, second = call.attempts
    assert (first["status_code"], first["error_type"], first["error"]) == (
        None,
        "APIConnectionError",
        "Connection error (ReadError).",
    )
    assert (second["status_code"], second["error"]) == (200, None)
    read_pages(session, api_client, admin_client)


def test_a_500_three_times_fails_the_request_phase(api_client, admin_client):
    request_id = "req_" + "5" * 496
    provider = ScriptedProvider(
        *[error_reply(500, **{"retry-after-ms": "1", "x-request-id": request_id})] * 3,
        max_retries=2,
    )

    session = run(RELEASE, provider)

    assert (session.status, session.error_phase) == ("failed", "request")
    assert session.error_message == (
        "The provider rejected the request: HTTP 500: status 500"
    )
    assert session.error_payload["attempts"] == 3
    assert session.error_payload["status_code"] == 500
    assert (session.turns, session.usage) == (0, usage(0, 0))
    (call,), tools = rows(session)
    assert tools == []
    assert len(provider.requests) == 3
    assert (call.turn, call.status, call.response) == (1, "error", None)
    assert (call.status_code, call.error_type) == (500, "InternalServerError")
    assert call.error == session.error_message
    assert call.attempt_count == 3
    assert [(a["number"], a["status_code"]) for a in call.attempts] == [
        (1, 500),
        (2, 500),
        (3, 500),
    ]
    assert {a["error_type"] for a in call.attempts} == {"InternalServerError"}
    assert {a["request_id"] for a in call.attempts} == {request_id}
    assert call.request_id == request_id[:99] + ELLIPSIS
    assert call.text_altered is True
    read_pages(session, api_client, admin_client)


# -- 12. Absurd usage ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "stored"),
    [(10**20, MAX_COUNT), (-5, 0), ("a lot", 0)],
    ids=["huge", "negative", "string"],
)
def test_absurd_usage_is_stored_clamped(api_client, admin_client, value, stored):
    body = response(message("Hi."))
    body["usage"] = {
        "input_tokens": value,
        "input_tokens_details": {"cached_tokens": value},
        "output_tokens": value,
        "output_tokens_details": {"reasoning_tokens": value},
        "total_tokens": value,
    }
    provider = ScriptedProvider(body)

    session = run(RELEASE, provider)

    assert_succeeded(session)
    (call,), _ = rows(session)
    counts = (
        call.input_tokens,
        call.output_tokens,
        call.cached_tokens,
        call.reasoning_tokens,
    )
    assert counts == (stored,) * 4
    assert call.response is not None
    assert call.response["usage"]["input_tokens"] == value  # the raw reply is kept
    if value == 10**20:
        assert call.text_altered is True  # clamped to the column's maximum
    assert session.turns == 1
    assert session.usage == usage(
        stored, stored, cached_tokens=stored, reasoning_tokens=stored
    )
    read_pages(session, api_client, admin_client)


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


def test_a_three_megabyte_answer_is_stored_whole(api_client, admin_client):
    text = ("Tides follow the moon; " * 150_000)[: 3 * 1024 * 1024]
    assert len(text) == 3 * 1024 * 1024
    provider = ScriptedProvider(response(message(text)))

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert session.output_text == text
    assert session.text_altered is False
    (call,), _ = rows(session)
    assert call.response is not None
    assert call.response["output"][0]["content"][0]["text"] == text
    assert call.text_altered is False
    pages = read_pages(session, api_client, admin_client)
    assert pages.detail["output_text"] == text
    assert pages.provider_calls[0]["response"]["output"][0]["content"][0]["text"] == (
        text
    )
    assert text in pages.session_page


# -- 15. Bidi controls -----------------------------------------------------------------


def test_bidi_controls_are_stored_as_is_and_shown_neutralised(api_client, admin_client):
    text = "Approved \u202etxt.exe\u202c for release."
    provider = ScriptedProvider(
        response(lint_call("call_\u202e1")), response(message(text), id="resp_2")
    )

    session = run(RELEASE, provider)

    assert_succeeded(session)
    assert session.output_text == text  # the record keeps them
    assert session.text_altered is False
    assert (session.turns, session.usage) == (2, usage(20, 10))
    calls, (tool,) = rows(session)
    assert [c.text_altered for c in calls] == [False, False]
    assert (tool.call_id, tool.text_altered) == ("call_\u202e1", False)
    pages = read_pages(session, api_client, admin_client)
    assert pages.detail["output_text"] == text  # the API returns them
    assert "Approved [U+202E]txt.exe[U+202C] for release." in pages.session_page
    assert "\u202e" not in pages.session_page and "\u202c" not in pages.session_page
    assert "[U+202E]" in pages.admin_change
    assert "\u202e" not in pages.admin_change
    for url, page in pages.admin_pages.items():
        assert "\u202e" not in page and "\u202c" not in page, url
    assert any("call_[U+202E]1" in page for page in pages.admin_pages.values())
