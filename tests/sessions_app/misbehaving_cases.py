"""A representative set of the misbehaving provider's cases as data: the
scripted replies of one run of the release prompt and the checks of its end,
its audit rows, the requests it sent and its pages.

The same cases run inline (``test_misbehaving_cases.py``, the SDK over a
scripted transport) and on the shipped worker over a real broker and real HTTP
(``tests/integration/test_misbehaving_worker.py``): the same replies must lead
to the same outcome both ways. ``test_misbehaving_provider.py`` holds only
the cases that run inline alone (a lone surrogate in an arguments string, a
NUL in a call id, over-long names and ids, citations, a 429, huge usage on
every turn, NaN). A scripted exception is a cut connection: inline the
transport raises it, over HTTP the server hangs up without an answer; what
holds only inline (the exception's own name) is the case's ``inline`` check.

Every case is run with the client retrying twice (the worker's default,
``WINK_OPENAI_MAX_RETRIES``); the cases whose reply is not retried end as they
do with no retries.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any

import httpx

from sessions_app.models import AgentSession
from sessions_app.runs.storable import MAX_COUNT
from tests.runtime.fakes import function_call, message, response
from tests.sessions_app.misbehaving import (
    ELLIPSIS,
    FFFD,
    LINT_DONE,
    Pages,
    Reply,
    assert_succeeded,
    encode,
    error_reply,
    lint_call,
    raw,
    rows,
    tool_outputs,
    usage,
)

# The session, the request bodies its run sent (decoded), what its pages
# answered.
Check = Callable[[AgentSession, list[dict[str, Any]], Pages], None]


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    replies: tuple[Reply, ...]
    check: Check
    inline: Check | None = None  # checked too when the case runs inline

    @property
    def params(self) -> dict[str, str]:
        """The run's parameters: its instructions say ``Ship case NAME to
        staging.`` (``CASE_NAME`` finds it in a request)."""
        return {"service": f"case {self.name}"}


CASE_NAME = re.compile(r"Ship case (\w+) to staging\.")


CASES: list[Case] = []


def case(
    name: str, *replies: Reply, inline: Check | None = None
) -> Callable[[Check], Check]:
    def register(check: Check) -> Check:
        CASES.append(Case(name, replies, check, inline))
        return check

    return register


def _failed_in_response_phase(session: AgentSession) -> None:
    assert (session.status, session.error_phase) == ("failed", "response")


# -- NUL bytes, lone surrogates, bidi controls -----------------------------------------


@case("nul_output", response(message("Tides\u0000 follow the moon.")))
def _nul_output(session: AgentSession, requests: Any, pages: Pages) -> None:
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
    assert len(requests) == 1
    assert pages.detail["output_text"] == f"Tides{FFFD} follow the moon."
    assert pages.detail["text_altered"] is True
    assert pages.provider_calls[0]["text_altered"] is True


@case("surrogate_output", response(message("thinking \ud800 aloud")))
def _surrogate_output(session: AgentSession, requests: Any, pages: Pages) -> None:
    assert_succeeded(session)
    assert session.output_text == f"thinking {FFFD} aloud"
    assert session.text_altered is True
    (call,), tools = rows(session)
    assert tools == []
    assert call.text_altered is True
    assert call.response is not None
    assert call.response["output"][0]["content"][0]["text"] == f"thinking {FFFD} aloud"
    assert (session.turns, session.usage) == (1, usage(10, 5))
    assert pages.detail["output_text"] == f"thinking {FFFD} aloud"


@case(
    "surrogate_arguments",
    response(lint_call("call_1", {"target": "src\ud800/app"})),
    response(message("Linted."), id="resp_2"),
)
def _surrogate_arguments(session: AgentSession, requests: Any, pages: Pages) -> None:
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
    assert tool_outputs(requests, 1) == [
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": tool.model_output,
        }
    ]


@case(
    "nul_escaped_in_arguments",
    response(lint_call("call_1", {"target": "src\u0000app"})),
    response(message("Linted."), id="resp_2"),
)
def _nul_escaped_in_arguments(
    session: AgentSession, requests: Any, pages: Pages
) -> None:
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
    # The tool's output went back to the provider as it was; its record (turn
    # 2's request) is stored replaced.
    (output,) = tool_outputs(requests, 1)
    assert output["output"].startswith("Would run lint on src\u0000app")
    assert second.text_altered is True
    assert FFFD in json.dumps(second.request, ensure_ascii=False)
    assert pages.detail["tool_invocations"][0]["text_altered"] is True


@case(
    "nul_in_the_arguments_string",
    response(lint_call("call_1", '{"target": "src\u0000app"}')),
    response(message("Sorry."), id="resp_2"),
)
def _nul_in_the_arguments_string(
    session: AgentSession, requests: Any, pages: Pages
) -> None:
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
    assert [o["output"] for o in tool_outputs(requests, 1)] == [tool.message]


BIDI_TEXT = "Approved \u202etxt.exe\u202c for release."


@case(
    "bidi_controls",
    response(lint_call("call_\u202e1", {"target": "\u202etxt.exe\u202c"})),
    response(message(BIDI_TEXT), id="resp_2"),
)
def _bidi_controls(session: AgentSession, requests: Any, pages: Pages) -> None:
    assert_succeeded(session)
    assert session.output_text == BIDI_TEXT  # the record keeps them
    assert session.text_altered is False
    assert (session.turns, session.usage) == (2, usage(20, 10))
    calls, (tool,) = rows(session)
    assert [c.text_altered for c in calls] == [False, False]
    assert (tool.call_id, tool.success, tool.text_altered) == (
        "call_\u202e1",
        True,
        False,
    )
    assert tool.params == {"target": "\u202etxt.exe\u202c"}
    assert tool.message == "Would run lint on \u202etxt.exe\u202c"
    assert pages.detail["output_text"] == BIDI_TEXT  # the API returns them
    assert "Approved [U+202E]txt.exe[U+202C] for release." in pages.session_page
    assert "[U+202E]" in pages.admin_change
    for page in (pages.session_page, pages.admin_change, *pages.admin_pages.values()):
        assert "\u202e" not in page and "\u202c" not in page
    assert any("call_[U+202E]1" in page for page in pages.admin_pages.values())
    assert any(
        "Would run lint on [U+202E]txt.exe[U+202C]" in page
        for page in pages.admin_pages.values()
    )


# -- Malformed function calls, repeated call ids ---------------------------------------


def _malformed_arguments(
    name: str, arguments: Any, raw_arguments: str, problem: str
) -> None:
    """A function call whose arguments are not a JSON-encoded string of an
    object: a failed call, its error sent back as the tool's output."""

    def check(session: AgentSession, requests: Any, pages: Pages) -> None:
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
        assert [o["output"] for o in tool_outputs(requests, 1)] == [tool.message]

    case(
        name,
        response(lint_call("call_1") | {"arguments": arguments}),
        response(message("Sorry."), id="resp_2"),
    )(check)


_malformed_arguments(
    "arguments_object",
    {"target": "."},
    '{"target": "."}',
    "Tool validation failed: arguments must be a JSON-encoded string; "
    "the model sent an object.",
)
_malformed_arguments(
    "arguments_not_json",
    "{not json",
    "{not json",
    "Tool validation failed: arguments are not valid JSON (",
)


@case(
    "nul_in_a_tool_name",
    response(function_call("li\u0000nt", {"target": "."}, "call_1")),
    response(message("Sorry."), id="resp_2"),
)
def _nul_in_a_tool_name(session: AgentSession, requests: Any, pages: Pages) -> None:
    assert_succeeded(session)
    assert (session.turns, session.usage) == (2, usage(20, 10))
    (first, _), (tool,) = rows(session)
    assert first.text_altered is True
    assert first.response is not None
    assert first.response["output"][0]["name"] == f"li{FFFD}nt"
    assert (tool.name, tool.call_id, tool.success) == (f"li{FFFD}nt", "call_1", False)
    assert tool.text_altered is True
    assert tool.message.startswith(f"Unknown tool 'li{FFFD}nt'. Available tools: ")


ALREADY = (
    "The call_id 'dup' was already used by an earlier function call of this "
    "run; this call was not run."
)


@case(
    "repeated_call_id",
    response(lint_call("dup", {"target": "one"}), lint_call("dup", {"target": "two"})),
    response(lint_call("dup", {"target": "three"}), id="resp_2"),
    response(message("Linted once."), id="resp_3"),
)
def _repeated_call_id(session: AgentSession, requests: Any, pages: Pages) -> None:
    assert_succeeded(session)
    assert session.output_text == "Linted once."
    assert (session.turns, session.usage) == (3, usage(30, 15))
    calls, tools = rows(session)
    assert [c.turn for c in calls] == [1, 2, 3]
    assert [(t.sequence, t.turn, t.call_id, t.success, t.message) for t in tools] == [
        (1, 1, "dup", True, "Would run lint on one"),
        (2, 1, "dup", False, ALREADY),
        (3, 2, "dup", False, ALREADY),
    ]
    assert tools[1].params == {
        "rejected": True,
        "raw_arguments": '{"target": "two"}',
        "error": ALREADY,
    }


# -- Bodies that are not JSON, failed and incomplete responses -------------------------


HTML = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
GARBAGE = b"<html>\x00\xff\xfe gateway \x00</html>"


def _html_on_turn_two(name: str, content: bytes, excerpt: str) -> None:
    """A 200 whose body is HTML on turn 2: the response phase fails, the body's
    excerpt in the error (storable: NUL bytes and bytes not UTF-8 replaced)."""

    def check(session: AgentSession, requests: Any, pages: Pages) -> None:
        _failed_in_response_phase(session)
        assert session.error_message == (
            "The provider answered HTTP 200 (text/html) with a body that is not "
            f"valid JSON: {excerpt}"
        )
        assert session.error_payload == {"status_code": 200, "request_id": "req_html"}
        assert (session.turns, session.usage) == (1, usage(10, 5))
        (first, failed), (tool,) = rows(session)
        assert (first.turn, first.status, first.error) == (1, "completed", "")
        assert (tool.name, tool.success, tool.message) == ("lint", True, LINT_DONE)
        assert (failed.turn, failed.status, failed.response) == (2, "error", None)
        assert (failed.status_code, failed.error_type) == (200, "InvalidResponseBody")
        assert failed.error == session.error_message
        assert failed.request_id == "req_html"
        assert failed.attempt_count == 1  # a body that is not JSON is not retried
        assert [a["status_code"] for a in failed.attempts] == [200]
        assert failed.attempts[0]["error_type"] == "InvalidResponseBody"
        assert failed.attempts[0]["error"] == session.error_message
        assert len(requests) == 2
        assert pages.detail["provider_calls"][1]["status_code"] == 200
        assert pages.provider_calls[1]["response"] is None

    headers = {"content-type": "text/html", "x-request-id": "req_html"}
    case(name, response(lint_call()), raw(content, 200, **headers))(check)


_html_on_turn_two("html_page", HTML, HTML.decode())
_html_on_turn_two(
    "html_body",  # NUL bytes and bytes that are not UTF-8
    GARBAGE,
    f"<html>{FFFD}{FFFD}{FFFD} gateway {FFFD}</html>",
)


def _ended_as(
    name: str, status: str, extra: dict[str, Any], message_: str, altered: bool
) -> None:
    """Turn 2's response is ``status`` (failed or incomplete, with ``extra``):
    the response phase fails; both calls got a response, so both count as
    turns and both usages are summed."""

    def check(session: AgentSession, requests: Any, pages: Pages) -> None:
        _failed_in_response_phase(session)
        assert session.error_message == message_
        assert session.error_payload["response_id"] == "resp_2"
        if status == "failed":
            sent = extra["error"]["message"]
            stored = session.error_payload["error"]["message"]
            assert stored == sent.replace("\x00", FFFD)
        assert session.text_altered is altered
        assert (session.turns, session.usage) == (2, usage(20, 10))
        (first, second), (tool,) = rows(session)
        assert (first.turn, first.status, first.response_id) == (
            1,
            "completed",
            "resp_1",
        )
        assert (second.turn, second.status, second.response_id) == (2, status, "resp_2")
        assert (second.input_tokens, second.output_tokens) == (10, 5)
        assert second.response is not None
        assert second.response["status"] == status
        assert second.attempt_count == 1
        assert second.text_altered is altered
        assert (tool.name, tool.success, tool.message) == ("lint", True, LINT_DONE)
        assert len(requests) == 2

    case(
        name,
        response(lint_call()),
        response(message("Half an ans"), id="resp_2", status=status, **extra),
    )(check)


_ended_as(
    "failed_response_plain",
    "failed",
    {"error": {"code": "server_error", "message": "The model crashed."}},
    "The provider reported the response as failed: server_error: The model crashed.",
    False,
)
_ended_as(
    "failed_response",  # a NUL in the error
    "failed",
    {"error": {"code": "server_error", "message": "The model\u0000 crashed."}},
    "The provider reported the response as failed: server_error: "
    f"The model{FFFD} crashed.",
    True,
)
_ended_as(
    "incomplete_response",
    "incomplete",
    {"incomplete_details": {"reason": "max_output_tokens"}},
    "The provider returned an incomplete response (reason: max_output_tokens).",
    False,
)


# -- Retries ---------------------------------------------------------------------------


@case(
    "a_500_then_success",
    error_reply(500, **{"retry-after-ms": "1", "x-request-id": "req_500"}),
    response(message("Hi.")),
)
def _a_500_then_success(session: AgentSession, requests: Any, pages: Pages) -> None:
    assert_succeeded(session)
    assert session.output_text == "Hi."
    assert (session.turns, session.usage) == (1, usage(10, 5))
    (call,), _ = rows(session)
    assert call.attempt_count == 2
    assert [(a["number"], a["status_code"]) for a in call.attempts] == [
        (1, 500),
        (2, 200),
    ]
    assert call.attempts[0]["error_type"] == "InternalServerError"
    assert call.attempts[0]["request_id"] == "req_500"
    assert call.attempts[1]["error"] is None
    assert len(requests) == 2
    assert pages.detail["provider_calls"][0]["attempt_count"] == 2


def _cut_connection_inline(session: AgentSession, requests: Any, pages: Pages) -> None:
    (call,), _ = rows(session)
    assert call.attempts[0]["error"] == "Connection error (ReadError)."


@case(
    "cut_connection_then_success",
    # Inline a ReadError; on the worker, the server hangs up without answering.
    httpx.ReadError("connection reset by peer"),
    response(message("Hi.")),
    inline=_cut_connection_inline,
)
def _cut_connection_then_success(
    session: AgentSession, requests: Any, pages: Pages
) -> None:
    assert_succeeded(session)
    assert (session.turns, session.usage) == (1, usage(10, 5))
    (call,), _ = rows(session)
    assert call.attempt_count == 2
    first, second = call.attempts
    assert (first["status_code"], first["error_type"]) == (None, "APIConnectionError")
    assert first["error"] in (
        "Connection error (ReadError).",  # inline
        "Connection error (RemoteProtocolError).",  # over HTTP
    )
    assert (second["status_code"], second["error"]) == (200, None)
    assert len(requests) == 2


LONG_REQUEST_ID = "req_" + "5" * 496


@case(
    "a_500_three_times",
    *[error_reply(500, **{"retry-after-ms": "1", "x-request-id": LONG_REQUEST_ID})] * 3,
)
def _a_500_three_times(session: AgentSession, requests: Any, pages: Pages) -> None:
    assert (session.status, session.error_phase) == ("failed", "request")
    assert session.error_message == (
        "The provider rejected the request: HTTP 500: status 500"
    )
    assert session.error_payload["attempts"] == 3
    assert session.error_payload["status_code"] == 500
    assert (session.turns, session.usage) == (0, usage(0, 0))
    (call,), tools = rows(session)
    assert tools == []
    assert len(requests) == 3
    assert (call.turn, call.status, call.response) == (1, "error", None)
    assert (call.status_code, call.error_type, call.attempt_count) == (
        500,
        "InternalServerError",
        3,
    )
    assert call.error == session.error_message
    assert [(a["number"], a["status_code"]) for a in call.attempts] == [
        (1, 500),
        (2, 500),
        (3, 500),
    ]
    assert {a["error_type"] for a in call.attempts} == {"InternalServerError"}
    assert {a["request_id"] for a in call.attempts} == {LONG_REQUEST_ID}
    assert call.request_id == LONG_REQUEST_ID[:99] + ELLIPSIS
    assert call.text_altered is True


# -- Absurd usage, megabytes -----------------------------------------------------------


def _absurd_usage(value: Any) -> dict[str, Any]:
    body = response(message("Hi."))
    body["usage"] = {
        "input_tokens": value,
        "input_tokens_details": {"cached_tokens": value},
        "output_tokens": value,
        "output_tokens_details": {"reasoning_tokens": value},
        "total_tokens": value,
    }
    return body


def _stored_usage(value: Any, stored: int, altered: bool) -> Check:
    def check(session: AgentSession, requests: Any, pages: Pages) -> None:
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
        assert call.response["usage"]["input_tokens"] == value  # the raw reply
        assert call.text_altered is altered
        assert session.turns == 1
        assert session.usage == usage(
            stored, stored, cached_tokens=stored, reasoning_tokens=stored
        )
        assert pages.detail["usage"] == session.usage

    return check


case("huge_usage", _absurd_usage(10**20))(_stored_usage(10**20, MAX_COUNT, True))
case("negative_usage", _absurd_usage(-5))(_stored_usage(-5, 0, False))
case("string_usage", _absurd_usage("a lot"))(_stored_usage("a lot", 0, False))

MEGABYTES = ("Tides follow the moon; " * 150_000)[: 3 * 1024 * 1024]


@case("three_megabytes", response(message(MEGABYTES)))
def _three_megabytes(session: AgentSession, requests: Any, pages: Pages) -> None:
    assert len(MEGABYTES) == 3 * 1024 * 1024
    assert_succeeded(session)
    assert session.output_text == MEGABYTES
    assert session.text_altered is False
    (call,), _ = rows(session)
    assert call.response is not None
    assert call.response["output"][0]["content"][0]["text"] == MEGABYTES
    assert call.text_altered is False
    assert pages.detail["output_text"] == MEGABYTES
    stored = pages.provider_calls[0]["response"]["output"][0]["content"][0]["text"]
    assert stored == MEGABYTES
    assert MEGABYTES in pages.session_page
