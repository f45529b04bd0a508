"""A provider that misbehaves on purpose, and the checks every run against it
must pass: the real ``openai`` SDK over ``httpx.MockTransport``, fed scripted
replies (raw bytes allowed: invalid JSON, HTML, ``\\u0000``, lone surrogate
escapes), driven through the service layer, then every page that shows the
session read back."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

import httpx
from django.utils.html import escape

from sessions_app import services
from sessions_app.models import AgentSession, Citation, ProviderCall, ToolInvocation
from tests.runtime.fakes import FakeProvider, function_call
from tooling.bidi import neutralise

# Never in a session's error message: a database or Python internal leaked.
LEAKS = ("SELECT", "INSERT", "Traceback", "psycopg")

RELEASE = "demo/release"  # function tools lint, test, build, deploy (no schema)
ELLIPSIS = "\u2026"
FFFD = "\ufffd"

LINT = {"target": "."}
LINT_DONE = "Would run lint on the whole project"

Reply = Mapping[str, Any] | bytes | httpx.Response | Exception | Callable[[], Any]


def encode(body: Any) -> bytes:
    """``body`` as the bytes of a JSON reply: ASCII only, so NUL goes out as
    ``\\u0000`` and a lone surrogate as ``\\ud800``; NaN and infinities as the
    bare tokens Python writes (which strict JSON refuses)."""
    return json.dumps(body, ensure_ascii=True, allow_nan=True).encode("ascii")


def raw(content: bytes, status: int = 200, /, **headers: str) -> httpx.Response:
    return httpx.Response(
        status, content=content, headers={"content-type": "application/json", **headers}
    )


def error_reply(status: int, **headers: str) -> httpx.Response:
    body = {"error": {"message": f"status {status}", "type": "x", "code": None}}
    return raw(encode(body), status, **headers)


class ScriptedProvider(FakeProvider):
    """Answers ``POST /v1/responses`` with the queued replies, in order.

    A mapping is sent as a 200 JSON body (``encode``) with an ``x-request-id``;
    bytes as a 200 body as they are; an ``httpx.Response`` as it is; an
    exception is raised (``httpx.ReadError``: a cut connection).
    """

    def __init__(self, *replies: Reply, max_retries: int = 0) -> None:
        super().__init__(max_retries=max_retries)
        self.script: list[Reply] = list(replies)

    def handle(self, request: httpx.Request) -> httpx.Response:
        assert request.method == "POST"
        assert request.url.path == "/v1/responses"
        self.requests.append(json.loads(request.content))
        assert self.script, "the run sent more requests than were scripted"
        return scripted_response(self.script.pop(0), len(self.requests))


def scripted_response(reply: Reply, number: int) -> httpx.Response:
    """The HTTP response ``reply`` stands for, as the ``number``-th request's
    answer (``ScriptedProvider``); an exception is raised."""
    while callable(reply):
        reply = reply()
    if isinstance(reply, Exception):
        raise reply
    if isinstance(reply, httpx.Response):
        return reply
    if isinstance(reply, bytes):
        return raw(reply, **{"x-request-id": f"req_{number}"})
    return raw(encode(reply), **{"x-request-id": f"req_{number}"})


def lint_call(call_id: str = "call_1", arguments: Any = None) -> dict[str, Any]:
    return function_call("lint", LINT if arguments is None else arguments, call_id)


def tool_outputs(requests: list[dict[str, Any]], request: int) -> list[dict[str, Any]]:
    """The ``function_call_output`` items of the ``request``-th request sent."""
    return [
        item
        for item in requests[request]["input"]
        if item.get("type") == "function_call_output"
    ]


def assert_succeeded(session: Any) -> None:
    assert (session.status, session.error_phase, session.error_message) == (
        "succeeded",
        "",
        "",
    )


def run(
    prompt_ref: str,
    provider: ScriptedProvider,
    params: Mapping[str, Any] | None = None,
) -> AgentSession:
    """One session of ``prompt_ref`` against ``provider``, inline, finished
    (retries: the client's own ``max_retries``)."""
    session = services.start_session(
        prompt_ref=prompt_ref, params=params, client=provider.client
    )
    assert provider.script == [], "the run stopped before every scripted reply"
    session = AgentSession.objects.get(pk=session.pk)
    assert session.is_finished, session.status
    assert_no_leak(session)
    return session


def assert_no_leak(session: AgentSession) -> None:
    for leak in LEAKS:
        assert leak not in session.error_message, session.error_message
    for error in ProviderCall.objects.filter(session=session).values_list(
        "error", flat=True
    ):
        for leak in LEAKS:
            assert leak not in error, error


def rows(session: AgentSession) -> tuple[list[ProviderCall], list[ToolInvocation]]:
    calls = list(ProviderCall.objects.filter(session=session).order_by("turn"))
    tools = list(ToolInvocation.objects.filter(session=session).order_by("sequence"))
    return calls, tools


def usage(input_tokens: int, output_tokens: int, **extra: int) -> dict[str, int]:
    """A session's ``usage`` as ``totals.totals`` writes it."""
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cached_tokens": extra.get("cached_tokens", 0),
        "reasoning_tokens": extra.get("reasoning_tokens", 0),
        "total_tokens": input_tokens + output_tokens,
    }


@dataclasses.dataclass
class Pages:
    """What every page showing the session answered, decoded."""

    detail: dict[str, Any]
    provider_calls: list[dict[str, Any]]
    session_page: str
    admin_change: str
    admin_pages: dict[str, str]


def _ok(response: Any, url: str) -> str:
    assert response.status_code == 200, (url, response.status_code)
    content = b"".join(response) if response.streaming else response.content
    text = content.decode("utf-8")  # strict: every page is valid UTF-8
    assert "\x00" not in text, url
    return text


def read_pages(session: AgentSession, api_client: Any, admin_client: Any) -> Pages:
    """GET every page that shows ``session``; each must answer 200 and decode.

    The admin changelists of the session's tool invocations and provider calls
    must list exactly its rows, and each row's own admin page must render too.
    """
    pk = session.pk
    url = f"/api/sessions/{pk}/"
    detail = json.loads(_ok(api_client.get(url), url))
    url = f"/api/sessions/{pk}/provider-calls/?page_size=500"
    provider_calls = json.loads(_ok(api_client.get(url), url))["results"]
    url = f"/audit/sessions/{pk}/"
    session_page = _ok(admin_client.get(url), url)
    url = f"/admin/sessions_app/agentsession/{pk}/change/"
    admin_change = _ok(admin_client.get(url), url)

    admin_pages: dict[str, str] = {}
    for model, name in (
        (ToolInvocation, "toolinvocation"),
        (ProviderCall, "providercall"),
        (Citation, "citation"),
    ):
        url = f"/admin/sessions_app/{name}/?session__id__exact={pk}"
        response = admin_client.get(url)
        admin_pages[url] = _ok(response, url)
        expected = model.objects.filter(session=session).count()
        assert response.context["cl"].result_count == expected, url
        for row_pk in model.objects.filter(session=session).values_list(
            "pk", flat=True
        ):
            url = f"/admin/sessions_app/{name}/{row_pk}/change/"
            admin_pages[url] = _ok(admin_client.get(url), url)

    # What the pages show is what the rows hold.
    assert detail["id"] == str(pk)
    for key in ("status", "error_phase", "error_message", "turns", "usage"):
        assert detail[key] == getattr(session, key), key
    assert detail["output_text"] == session.output_text
    assert detail["text_altered"] == session.text_altered
    calls, tools = rows(session)
    assert [
        (
            c["turn"],
            c["status"],
            c["status_code"],
            c["attempt_count"],
            c["text_altered"],
        )
        for c in detail["provider_calls"]
    ] == [
        (c.turn, c.status, c.status_code, c.attempt_count, c.text_altered)
        for c in calls
    ]
    assert [c["response"] for c in provider_calls] == [c.response for c in calls]
    assert [c["request"] for c in provider_calls] == [c.request for c in calls]
    assert [
        (t["sequence"], t["name"], t["call_id"], t["success"], t["text_altered"])
        for t in detail["tool_invocations"]
    ] == [(t.sequence, t.name, t.call_id, t.success, t.text_altered) for t in tools]
    citations = Citation.objects.filter(session=session).order_by("pk")
    assert [(c["url"], c["domain"], c["title"]) for c in detail["citations"]] == [
        (c.url, c.domain, c.title) for c in citations
    ]
    if session.error_message:
        assert escape(neutralise(session.error_message)) in session_page
    return Pages(detail, provider_calls, session_page, admin_change, admin_pages)
