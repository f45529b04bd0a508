"""Provider requests: retries the adapter makes itself (each attempt recorded),
timeouts and waits bounded by the deadline, heartbeats while waiting, and
replies that are not a usable response body."""

import threading
import time
from typing import Any

import httpx
import openai
import pytest

from tests.limits import LATE_SECONDS
from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.deadlines import Deadline
from tooling.runtime.errors import PromptEvaluationError, RunAborted
from tooling.runtime.events import (
    InMemorySink,
    PromptExecuted,
    PromptFailed,
    ProviderCallCompleted,
    ProviderCallFailed,
)
from tooling.runtime.prompt import Prompt
from tooling.runtime.sections import MarkdownSection

from .fakes import MODEL, FakeProvider, message, response


def prompt() -> Prompt:
    return Prompt(
        ns="tests",
        key="sending",
        sections=[MarkdownSection(key="task", title="Task", template="Answer.")],
    )


def error_reply(status: int, **headers: str) -> httpx.Response:
    body = {"error": {"message": f"status {status}", "type": "x", "code": None}}
    return httpx.Response(status, json=body, headers=headers)


def run(provider: FakeProvider, **kwargs: Any) -> tuple[Any, InMemorySink]:
    adapter_kwargs = kwargs.pop("adapter_kwargs", {})
    adapter = OpenAIAdapter(client=provider.client, model=MODEL, **adapter_kwargs)
    sink = InMemorySink()
    try:
        result = adapter.evaluate(prompt(), sink=sink, **kwargs)
    except PromptEvaluationError as error:
        return error, sink
    return result, sink


# -- retries --------------------------------------------------------------------


def test_sending_retries_a_server_error_and_records_every_attempt() -> None:
    provider = FakeProvider(
        error_reply(500, **{"retry-after-ms": "1", "x-request-id": "req_a"}),
        response(message("Hi.")),
        max_retries=2,
    )
    result, sink = run(provider)
    assert result.text == "Hi."
    assert len(provider.requests) == 2
    (call,) = sink.of_type(ProviderCallCompleted)
    assert [(a.number, a.status_code) for a in call.attempts] == [(1, 500), (2, 200)]
    first, second = call.attempts
    assert first.error_type == "InternalServerError"
    assert "status 500" in (first.error or "")
    assert first.request_id == "req_a"
    assert second.error is None


def test_sending_turns_the_sdk_retries_off_and_uses_the_client_setting() -> None:
    provider = FakeProvider(
        *[error_reply(503, **{"retry-after-ms": "1"})] * 3, max_retries=2
    )
    error, sink = run(provider)
    assert error.phase == "request"
    assert len(provider.requests) == 3  # 1 + max_retries, not (1 + 2) * 3
    (failed,) = sink.of_type(ProviderCallFailed)
    assert [a.status_code for a in failed.attempts] == [503, 503, 503]
    assert failed.status_code == 503
    assert error.provider_payload["attempts"] == 3


def test_sending_max_retries_can_be_set_on_the_adapter() -> None:
    provider = FakeProvider(error_reply(429, **{"retry-after-ms": "1"}), response())
    result, _ = run(provider, adapter_kwargs={"max_retries": 1})
    assert result.turns == 1
    assert len(provider.requests) == 2


@pytest.mark.parametrize(
    ("reply", "attempts"),
    [
        (error_reply(400), 1),
        (error_reply(500, **{"x-should-retry": "false"}), 1),
        (
            httpx.Response(
                429,
                json={
                    "error": {
                        "message": "quota",
                        "type": "insufficient_quota",
                        "code": "insufficient_quota",
                    }
                },
            ),
            1,
        ),
        (error_reply(409, **{"retry-after": "3600"}), 1),
    ],
    ids=["400", "should-retry-false", "insufficient-quota", "retry-after-too-long"],
)
def test_sending_does_not_retry_what_will_not_succeed(
    reply: httpx.Response, attempts: int
) -> None:
    provider = FakeProvider(reply, response(), max_retries=3)
    error, sink = run(provider)
    assert error.phase == "request"
    assert len(provider.requests) == attempts
    assert len(sink.of_type(ProviderCallFailed)[0].attempts) == attempts


def test_sending_should_retry_true_retries_even_a_400() -> None:
    provider = FakeProvider(
        error_reply(400, **{"x-should-retry": "true", "retry-after-ms": "1"}),
        response(),
        max_retries=1,
    )
    result, _ = run(provider)
    assert result.turns == 1


def test_sending_retries_a_cut_connection() -> None:
    provider = FakeProvider(httpx.ReadError("connection reset"), response())
    result, sink = run(provider, adapter_kwargs={"max_retries": 1})
    assert result.turns == 1
    (call,) = sink.of_type(ProviderCallCompleted)
    first = call.attempts[0]
    assert (first.status_code, first.error_type) == (None, "APIConnectionError")
    assert first.error == "Connection error (ReadError)."


def test_sending_does_not_retry_when_the_deadline_leaves_no_time() -> None:
    provider = FakeProvider(error_reply(500, **{"retry-after": "600"}), response())
    started = time.monotonic()
    error, _ = run(
        provider, adapter_kwargs={"max_retries": 3}, deadline=Deadline.after(1)
    )
    assert time.monotonic() - started < LATE_SECONDS  # not the 600 s it asked for
    assert error.phase == "request"
    assert len(provider.requests) == 1


# -- timeouts and the deadline ---------------------------------------------------


def test_sending_timeout_is_bounded_by_what_is_left_of_the_deadline() -> None:
    provider = FakeProvider(response())
    run(provider, adapter_kwargs={"timeout": 600}, deadline=Deadline.after(30))
    sent = float(provider.headers[0]["x-stainless-read-timeout"])
    assert 25 < sent <= 30


def test_sending_timeout_is_the_configured_one_when_shorter() -> None:
    provider = FakeProvider(response())
    run(provider, adapter_kwargs={"timeout": 12}, deadline=Deadline.after(300))
    assert float(provider.headers[0]["x-stainless-read-timeout"]) == 12


def test_sending_gives_up_at_the_deadline_whatever_the_provider_does() -> None:
    release = threading.Event()

    def never_answers() -> dict[str, Any]:
        release.wait(600)  # a provider holding the connection open
        return response()

    provider = FakeProvider(never_answers)
    started = time.monotonic()
    try:
        error, sink = run(
            provider,
            adapter_kwargs={"timeout": 600, "poll_seconds": 0.1},
            deadline=Deadline.after(0.5),
        )
    finally:
        release.set()
    elapsed = time.monotonic() - started
    assert 0.4 < elapsed < 0.5 + LATE_SECONDS  # not the provider's 600 s
    assert error.phase == "deadline"
    assert error.message.startswith("Deadline expired while waiting for the provider")
    (failed,) = sink.of_type(ProviderCallFailed)
    assert failed.phase == "deadline"
    assert failed.attempts[-1].error_type == "DeadlineExceeded"
    assert sink.of_type(PromptFailed)[0].phase == "deadline"


def test_sending_beats_while_waiting() -> None:
    release = threading.Event()
    beats: list[float] = []

    def slow() -> dict[str, Any]:
        release.wait(0.45)
        return response()

    provider = FakeProvider(slow)
    result, _ = run(
        provider,
        adapter_kwargs={"poll_seconds": 0.1},
        heartbeat=lambda: beats.append(time.monotonic()),
    )
    assert result.turns == 1
    assert len(beats) >= 3  # one before the request, then one per slice


def test_sending_heartbeat_can_abort_the_run_without_a_failure_event() -> None:
    release = threading.Event()
    calls = {"n": 0}

    def beat() -> None:
        calls["n"] += 1
        if calls["n"] > 1:
            raise RunAborted("cancelled")

    def slow() -> dict[str, Any]:
        release.wait(5)
        return response()

    provider = FakeProvider(slow)
    adapter = OpenAIAdapter(client=provider.client, model=MODEL, poll_seconds=0.05)
    sink = InMemorySink()
    try:
        with pytest.raises(RunAborted):
            adapter.evaluate(prompt(), sink=sink, heartbeat=beat)
    finally:
        release.set()
    assert sink.of_type(PromptFailed) == []
    assert sink.of_type(ProviderCallFailed) == []


# -- replies that are not a response --------------------------------------------


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (
            httpx.Response(
                200,
                content=b"<html><body>Bad gateway</body></html>",
                headers={"content-type": "text/html"},
            ),
            "that is not valid JSON: <html><body>Bad gateway</body></html>",
        ),
        (httpx.Response(200, json=[1, 2]), "that is JSON but not an object (list)"),
        (
            httpx.Response(200, json={"id": "r", "output": "nope"}),
            "that has an 'output' that is not a list",
        ),
        (
            httpx.Response(200, content=b'{"id": NaN}'),
            "that is not valid JSON",
        ),
        (httpx.Response(200, content=b""), "that is not valid JSON: (empty)"),
    ],
    ids=["html", "array", "output-not-list", "nan", "empty"],
)
def test_sending_a_body_that_is_not_a_response_fails_the_response_phase(
    reply: httpx.Response, problem: str
) -> None:
    provider = FakeProvider(reply, max_retries=2)
    error, sink = run(provider)
    assert error.phase == "response"
    assert problem in error.message
    assert len(provider.requests) == 1  # not retried
    (failed,) = sink.of_type(ProviderCallFailed)
    assert (failed.status_code, failed.error_type) == (200, "InvalidResponseBody")
    assert failed.phase == "response"
    assert sink.of_type(PromptExecuted) == []


def test_sending_an_html_body_is_excerpted_not_copied_whole() -> None:
    page = b"<html>" + b"x" * 100_000 + b"</html>"
    provider = FakeProvider(
        httpx.Response(200, content=page, headers={"content-type": "text/html"})
    )
    error, _ = run(provider)
    assert len(error.message) < 500


def test_sending_unusable_usage_counts_as_none() -> None:
    provider = FakeProvider(
        response(message(), usage=(1, 1)) | {"usage": "lots"},
    )
    result, _ = run(provider)
    assert result.usage.total_tokens == 0


def test_sending_attempts_are_plain_data() -> None:
    provider = FakeProvider(response())
    _, sink = run(provider)
    (attempt,) = sink.of_type(ProviderCallCompleted)[0].attempts
    data = attempt.as_dict()
    assert data["number"] == 1
    assert data["status_code"] == 200
    assert data["error"] is None
    assert isinstance(data["latency_ms"], float)


def test_sending_uses_a_copy_of_the_client_without_sdk_retries() -> None:
    provider = FakeProvider(max_retries=2)
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)
    assert adapter.max_retries == 2
    assert adapter.request_client.max_retries == 0
    assert provider.client.max_retries == 2
    bare = FakeProvider()
    assert OpenAIAdapter(client=bare.client, model=MODEL).request_client is (
        bare.client
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_retries": -1}, "max_retries must not be negative."),
        ({"timeout": 0}, "timeout must be positive."),
        ({"poll_seconds": 0}, "poll_seconds must be positive."),
    ],
)
def test_sending_settings_are_validated(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        OpenAIAdapter(client=FakeProvider().client, model=MODEL, **kwargs)
    assert str(info.value) == message


def test_sending_client_timeout_is_the_default() -> None:
    client = openai.OpenAI(api_key="sk-test", base_url="http://x.test/v1", timeout=42)
    assert OpenAIAdapter(client=client, model=MODEL).timeout == 42
