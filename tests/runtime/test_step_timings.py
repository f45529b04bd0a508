"""Every step carries when it started and how long it took (issue #28): a local
tool call its start, duration and the policies' part of it; a provider call
when it was first sent; each HTTP attempt when it was sent (the gaps are the
retries' backoff). Durations are asserted from below only: a slow machine
makes them longer, never shorter."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import httpx

from tooling.runtime.context import ToolContext
from tooling.runtime.events import (
    ProviderCallCompleted,
    ProviderCallFailed,
)
from tooling.runtime.policies import PolicyDecision
from tooling.runtime.results import ToolResult

from .fakes import FakeProvider, message, response
from .test_executor import Harness, Out, Recorder, ScriptedPolicy, search_tool
from .test_sending import error_reply, run

PAUSE = 0.03  # seconds


def slow(params: Any, context: ToolContext) -> ToolResult[Out]:
    time.sleep(PAUSE)
    return ToolResult.ok(Out("found"), "Found.")


def test_a_local_call_records_its_start_and_duration() -> None:
    harness = Harness([search_tool(Recorder(slow))])
    before = datetime.now(UTC)
    harness.run("search", {"query": "tides"})
    after = datetime.now(UTC)
    (event,) = harness.invoked()
    assert event.started_at is not None
    assert before <= event.started_at <= after
    assert event.duration_ms is not None
    assert event.duration_ms >= PAUSE * 1000
    assert event.duration_ms <= (after - before).total_seconds() * 1000
    # no policy applies: nothing to time
    assert event.policy_ms is None


def test_the_policies_part_of_a_call_is_recorded_apart() -> None:
    policy = ScriptedPolicy("slow-check", before=lambda: time.sleep(PAUSE))
    harness = Harness([search_tool(Recorder())], policies=(policy,))
    harness.run("search", {"query": "tides"})
    (event,) = harness.invoked()
    assert event.policy_ms is not None and event.duration_ms is not None
    assert event.policy_ms >= PAUSE * 1000
    assert event.duration_ms >= event.policy_ms


def test_a_denied_call_is_timed_too() -> None:
    policy = ScriptedPolicy(
        "deny", PolicyDecision.deny("No."), before=lambda: time.sleep(PAUSE)
    )
    handler = Recorder()
    harness = Harness([search_tool(handler)], policies=(policy,))
    harness.run("search", {"query": "tides"})
    (event,) = harness.invoked()
    assert not event.success and not handler.calls
    assert event.policy_ms is not None and event.policy_ms >= PAUSE * 1000
    assert event.duration_ms is not None and event.duration_ms >= event.policy_ms


def test_a_rejected_call_is_timed_without_policies() -> None:
    harness = Harness([search_tool(Recorder())])
    harness.run("missing_tool", {})
    (event,) = harness.invoked()
    assert not event.success
    assert event.started_at is not None
    assert event.duration_ms is not None and event.duration_ms >= 0
    assert event.policy_ms is None


def test_a_provider_call_records_when_it_was_sent() -> None:
    def late() -> Any:
        time.sleep(PAUSE)
        return response(message("Hi."))

    before = datetime.now(UTC)
    result, sink = run(FakeProvider(late))
    assert result.text == "Hi."
    (call,) = sink.of_type(ProviderCallCompleted)
    assert call.started_at is not None and call.started_at >= before
    assert call.latency_ms >= PAUSE * 1000
    # recorded after the reply: the call ended no later than its record
    ended = (call.created_at - call.started_at).total_seconds() * 1000
    assert ended >= call.latency_ms - 1
    (attempt,) = call.attempts
    assert attempt.offset_ms is not None and 0 <= attempt.offset_ms < call.latency_ms
    assert attempt.as_dict()["offset_ms"] == round(attempt.offset_ms, 3)


def test_retries_record_when_each_attempt_was_sent() -> None:
    provider = FakeProvider(
        error_reply(500, **{"retry-after-ms": "40"}),
        response(message("Hi.")),
        max_retries=2,
    )
    result, sink = run(provider)
    assert result.text == "Hi."
    (call,) = sink.of_type(ProviderCallCompleted)
    first, second = call.attempts
    assert first.offset_ms is not None and second.offset_ms is not None
    # the second was sent after the first ended and the 40 ms backoff
    assert second.offset_ms >= first.offset_ms + first.latency_ms + 40
    assert call.latency_ms >= second.offset_ms + second.latency_ms - 1


def test_a_failed_provider_call_records_its_start_and_attempts() -> None:
    before = datetime.now(UTC)
    _result, sink = run(FakeProvider(httpx.ConnectError("refused")))
    (failed,) = sink.of_type(ProviderCallFailed)
    assert failed.started_at is not None and failed.started_at >= before
    (attempt,) = failed.attempts
    assert attempt.offset_ms is not None and attempt.offset_ms >= 0
