"""Sessions exported as OpenTelemetry traces (docs/opentelemetry.md), checked
end to end: the demo's runs go to a real OTLP/HTTP receiver on 127.0.0.1 that
decodes the protobuf (``otlp_receiver.py``)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from celery import signals
from django.utils import timezone

from sessions_app import services, telemetry
from sessions_app.approvals.decisions import decide
from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    PolicyDenial,
    ProviderCall,
    ToolInvocation,
)
from sessions_app.runs import lifecycle
from sessions_app.telemetry import exporting, rows
from tests.sessions_app.approval_setup import PROMPT as APPROVAL_PROMPT
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ApprovalRequestFactory,
    PolicyDenialFactory,
    ToolInvocationFactory,
)
from tests.sessions_app.otlp_receiver import OtlpReceiver, ReceivedSpan
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db

SERVER_KIND_INTERNAL, SERVER_KIND_CLIENT = 1, 3  # the protobuf's SpanKind
STATUS_ERROR = 2


@pytest.fixture(autouse=True)
def _offline(settings: Any) -> Iterator[None]:
    settings.WINK_PROVIDER = "offline"
    settings.WINK_OTEL_CAPTURE_CONTENT = False
    telemetry.shutdown()
    telemetry.forget_exported()
    yield
    telemetry.shutdown()
    telemetry.forget_exported()


@pytest.fixture
def receiver(settings: Any) -> Iterator[OtlpReceiver]:
    server = OtlpReceiver().start()
    settings.WINK_OTEL_TRACES_ENDPOINT = f"{server.endpoint}/v1/traces"
    yield server
    telemetry.shutdown()
    server.stop()


def _run(prompt_ref: str, capture: Any, **fields: Any) -> AgentSession:
    with capture(execute=True):
        return services.start_session(prompt_ref=prompt_ref, **fields)


def _trace(receiver: OtlpReceiver, session: AgentSession) -> list[ReceivedSpan]:
    """The session's spans, once the receiver has its root span."""
    assert telemetry.force_flush()
    trace_id = session.pk.hex

    def has_root(spans: list[ReceivedSpan]) -> bool:
        return any(
            s.trace_id == trace_id and s.name.startswith("invoke_agent ") for s in spans
        )

    receiver.wait_for(has_root)
    return receiver.of_trace(trace_id)


def _one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    (span,) = [span for span in spans if span.name == name]
    return span


def _named(spans: list[ReceivedSpan], prefix: str) -> list[ReceivedSpan]:
    return [span for span in spans if span.name.startswith(prefix)]


@pytest.mark.parametrize(
    "prompt_ref", ["demo/research", "demo/release", "demo/notes", "demo/patch"]
)
def test_a_demo_run_is_a_trace_with_a_span_per_call(
    receiver, django_capture_on_commit_callbacks, prompt_ref
):
    seed_demo_catalog()
    session = _run(prompt_ref, django_capture_on_commit_callbacks)
    assert session.status == AgentSession.Status.SUCCEEDED

    spans = _trace(receiver, session)

    root = _one(spans, f"invoke_agent {prompt_ref}")
    assert root.parent_span_id == ""
    assert root.kind == SERVER_KIND_INTERNAL
    assert root.scope == "wink_catalog.sessions"
    assert root.resource["service.name"] == "wink-catalog"
    attributes = root.attributes
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.agent.name"] == prompt_ref
    assert attributes["gen_ai.conversation.id"] == str(session.pk)
    assert attributes["gen_ai.request.model"] == session.model
    assert attributes["gen_ai.usage.input_tokens"] == session.usage["input_tokens"]
    assert attributes["gen_ai.usage.output_tokens"] == session.usage["output_tokens"]
    assert attributes["wink.session.status"] == "succeeded"
    assert attributes["wink.cost_usd"] == pytest.approx(float(session.cost))

    # one chat span per provider call, children of the run, with its row's values
    calls = {call.turn: call for call in ProviderCall.objects.filter(session=session)}
    chats = _named(spans, "chat ")
    assert len(chats) == len(calls) > 0
    chat_of_turn = {}
    for chat in chats:
        call = calls[chat.attributes["wink.turn"]]
        chat_of_turn[call.turn] = chat
        assert chat.name == f"chat {session.model}"
        assert chat.kind == SERVER_KIND_CLIENT
        assert chat.parent_span_id == root.span_id
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == session.model
        assert chat.attributes["gen_ai.response.id"] == call.response_id
        assert chat.attributes["gen_ai.usage.input_tokens"] == call.input_tokens
        assert chat.attributes["gen_ai.usage.output_tokens"] == call.output_tokens
        assert chat.attributes["wink.cost_usd"] == pytest.approx(float(call.cost))
        assert root.start_ns <= chat.start_ns <= chat.end_ns <= root.end_ns
    assert len({chat.span_id for chat in chats}) == len(chats)

    # one execute_tool span per tool call, local ones under the run, native
    # ones under the provider call that ran them
    tools = {t.call_id: t for t in ToolInvocation.objects.filter(session=session)}
    executed = _named(spans, "execute_tool ")
    assert len(executed) == len(tools) > 0
    assert {span.attributes["gen_ai.tool.call.id"] for span in executed} == set(tools)
    for span in executed:
        tool = tools[span.attributes["gen_ai.tool.call.id"]]
        assert span.name == f"execute_tool {tool.name}"
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.name"] == tool.name
        assert span.attributes["wink.tool.sequence"] == tool.sequence
        assert span.attributes["wink.tool.success"] is tool.success
        assert root.start_ns <= span.start_ns <= span.end_ns <= root.end_ns
        if tool.native:
            chat = chat_of_turn[tool.turn]
            assert span.parent_span_id == chat.span_id
            assert span.attributes["gen_ai.tool.type"] == "extension"
            assert (span.start_ns, span.end_ns) == (chat.start_ns, chat.end_ns)
        else:
            assert span.parent_span_id == root.span_id
            assert span.attributes["gen_ai.tool.type"] == "function"
        # never the content unless opted in
        assert "gen_ai.tool.call.arguments" not in span.attributes
        assert "gen_ai.tool.call.result" not in span.attributes
    if prompt_ref == "demo/research":  # native and local calls alike
        assert {tool.native for tool in tools.values()} == {True, False}
    assert len(spans) == 1 + len(calls) + len(tools)


def test_a_denial_is_a_guardrail_event_on_the_denied_call(
    receiver, django_capture_on_commit_callbacks
):
    seed_demo_catalog()
    session = _run("demo/release", django_capture_on_commit_callbacks)
    spans = _trace(receiver, session)

    denials = list(PolicyDenial.objects.filter(session=session))
    assert denials
    for denial in denials:
        (span,) = [
            s
            for s in _named(spans, "execute_tool ")
            if s.attributes["gen_ai.tool.call.id"] == denial.call_id
        ]
        assert span.status_code == STATUS_ERROR
        assert span.attributes["error.type"] == "tool_error"
        assert span.events == [
            (
                "gen_ai.guardrail.result",
                {
                    "wink.policy.name": denial.policy_name,
                    "wink.policy.decision": "deny",
                    "wink.policy.reason": denial.reason,
                    "gen_ai.tool.name": denial.tool_name,
                    "gen_ai.tool.call.id": denial.call_id,
                    "wink.turn": denial.turn,
                },
            )
        ]
    events = [event for span in spans for event in span.events]
    assert len(events) == len(denials)
    assert any(
        e[1]["wink.policy.reason"] == "Tool 'deploy' requires: build, test"
        for e in events
    )


def test_a_paused_run_is_exported_once_when_it_ends_with_its_approval(
    receiver, paused, approver, django_capture_on_commit_callbacks
):
    assert paused.status == AgentSession.Status.AWAITING_APPROVAL
    assert telemetry.force_flush()
    assert receiver.of_trace(paused.pk.hex) == []  # not when it pauses
    approval = ApprovalRequest.objects.get(session=paused)

    with django_capture_on_commit_callbacks(execute=True):
        decide(approval_id=approval.pk, user=approver, approve=True, reason="ship it")

    paused.refresh_from_db()
    assert paused.status == AgentSession.Status.SUCCEEDED
    spans = _trace(receiver, paused)
    root = _one(spans, f"invoke_agent {APPROVAL_PROMPT}")
    assert root.attributes["wink.session.pauses"] == 1
    waited = _one(spans, "approval deploy")
    assert waited.parent_span_id == root.span_id
    assert waited.attributes["wink.approval.status"] == "approved"
    assert waited.attributes["wink.approval.call_outcome"] == "ran"
    assert waited.attributes["wink.approval.decided_by"] == "alice"
    assert waited.attributes["wink.approval.policy"] == "release-approval"
    assert waited.attributes["gen_ai.tool.call.id"] == approval.call_id
    assert "wink.approval.reason" not in waited.attributes  # content: opt-in
    (deploy,) = [
        span
        for span in _named(spans, "execute_tool deploy")
        if span.attributes["gen_ai.tool.call.id"] == approval.call_id
    ]
    assert deploy.attributes["wink.approval.status"] == "approved"
    assert deploy.attributes["wink.approval.call_outcome"] == "ran"
    assert deploy.attributes["wink.approval.decided_by"] == "alice"
    # the resumed run's calls, each once: the calls before the pause are
    # not exported twice, nor the replayed turn
    assert (
        len(_named(spans, "chat "))
        == ProviderCall.objects.filter(session=paused).count()
    )
    assert (
        len(_named(spans, "execute_tool "))
        == ToolInvocation.objects.filter(session=paused).count()
    )
    assert len({span.span_id for span in spans}) == len(spans)


def test_arguments_and_results_only_when_opted_in_and_never_the_key(
    receiver, django_capture_on_commit_callbacks, settings
):
    seed_demo_catalog()
    plain = _run("demo/notes", django_capture_on_commit_callbacks)
    plain_spans = _trace(receiver, plain)
    settings.WINK_OTEL_CAPTURE_CONTENT = True
    captured = _run("demo/notes", django_capture_on_commit_callbacks)
    captured_spans = _trace(receiver, captured)

    for span in plain_spans:
        assert not any(key.startswith("gen_ai.tool.call.a") for key in span.attributes)
        assert "gen_ai.tool.call.result" not in span.attributes
    tools = {t.call_id: t for t in ToolInvocation.objects.filter(session=captured)}
    for span in _named(captured_spans, "execute_tool "):
        tool = tools[span.attributes["gen_ai.tool.call.id"]]
        assert span.attributes["gen_ai.tool.call.arguments"] == tool.raw_arguments
        assert span.attributes["gen_ai.tool.call.result"] == tool.model_output
    # the offline provider's API key: the run redacts it from every row it
    # records, and nothing else (request bodies, headers) is exported
    assert not any(b"sk-offline" in body for body in receiver.bodies)


def test_a_secret_in_a_recorded_argument_is_redacted(receiver, settings):
    settings.OPENAI_API_KEY = "sk-test-not-for-export-0123456789"
    settings.WINK_OTEL_CAPTURE_CONTENT = True
    session = AgentSessionFactory.create(
        status=AgentSession.Status.SUCCEEDED,
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )
    ToolInvocationFactory.create(
        session=session,
        raw_arguments='{"token": "sk-test-not-for-export-0123456789"}',
        model_output="echo sk-test-not-for-export-0123456789",
    )

    assert telemetry.export_session(session.pk)
    spans = _trace(receiver, session)

    (span,) = _named(spans, "execute_tool ")
    assert span.attributes["gen_ai.tool.call.arguments"] == '{"token": "[redacted]"}'
    assert span.attributes["gen_ai.tool.call.result"] == "echo [redacted]"
    assert not any(b"sk-test-not-for-export" in body for body in receiver.bodies)


def test_a_session_is_exported_once_and_again_onto_the_same_spans(receiver):
    session = AgentSessionFactory.create(
        status=AgentSession.Status.SUCCEEDED,
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )
    ToolInvocationFactory.create(session=session)

    assert telemetry.export_session(session.pk)
    assert not telemetry.export_session(session.pk)  # once per process
    first = _trace(receiver, session)
    assert len(first) == 2
    telemetry.forget_exported()  # a new process, or a crash before the note
    assert telemetry.export_session(session.pk)
    assert telemetry.force_flush()
    again = receiver.wait_for(lambda spans: len(spans) >= 4)

    assert len(again) == 4
    ids = sorted((span.trace_id, span.span_id, span.parent_span_id) for span in first)
    assert sorted((s.trace_id, s.span_id, s.parent_span_id) for s in again[2:]) == ids


@pytest.mark.parametrize(
    "signal", [signals.worker_process_shutdown, signals.worker_shutdown]
)
def test_a_worker_that_stops_sends_the_spans_it_queued(receiver, monkeypatch, signal):
    # the SDK sends a batch every 5 s: here only when asked, however slow
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")
    session = AgentSessionFactory.create(
        status=AgentSession.Status.SUCCEEDED,
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )
    assert telemetry.export_session(session.pk)
    assert receiver.of_trace(session.pk.hex) == []  # queued, not sent yet

    signal.send(sender=None)

    assert [span.name for span in receiver.of_trace(session.pk.hex)] == [
        f"invoke_agent {session.prompt_ref}"
    ]


def test_unfinished_sessions_are_not_exported(receiver):
    for status in ("queued", "running", "awaiting_approval"):
        session = AgentSessionFactory.create(status=status)
        assert not telemetry.export_session(session.pk)


def test_a_dead_endpoint_neither_blocks_nor_fails_a_run(
    settings, monkeypatch, django_capture_on_commit_callbacks
):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.WINK_OTEL_TRACES_ENDPOINT = f"http://127.0.0.1:{port}/v1/traces"
    # a sender that kept retrying in the run would take this long
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "30")
    seed_demo_catalog()

    began = time.monotonic()
    session = _run("demo/research", django_capture_on_commit_callbacks)
    took = time.monotonic() - began

    assert session.status == AgentSession.Status.SUCCEEDED
    assert telemetry.built() is not None  # it was exported (queued)
    assert took < 10
    session.refresh_from_db()
    assert session.status == AgentSession.Status.SUCCEEDED
    telemetry.shutdown(drop=True)  # not the 30 s of retries


def test_off_without_an_endpoint(settings, django_capture_on_commit_callbacks):
    # the default (test_settings.py: no OTEL_EXPORTER_OTLP_* variable, "")
    settings.WINK_OTEL_TRACES_ENDPOINT = ""
    seed_demo_catalog()

    session = _run("demo/research", django_capture_on_commit_callbacks)

    assert session.status == AgentSession.Status.SUCCEEDED
    assert telemetry.built() is None  # no provider, no exporter, no thread
    assert not telemetry.export_session(session.pk)
    assert telemetry.built() is None


def test_a_session_cancelled_while_queued_is_exported_too(
    receiver, django_capture_on_commit_callbacks
):
    session = AgentSessionFactory.create(status=AgentSession.Status.QUEUED)

    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.cancel_queued(session.pk, user=None, now=timezone.now())

    (root,) = _trace(receiver, session)
    assert root.attributes["wink.session.status"] == "cancelled"
    assert root.name == f"invoke_agent {session.prompt_ref}"


def test_an_export_that_fails_is_logged_and_the_run_goes_on(
    receiver, monkeypatch, django_capture_on_commit_callbacks, caplog
):
    def broken(self):
        raise RuntimeError("the export broke")

    monkeypatch.setattr(exporting._Trace, "export", broken)
    seed_demo_catalog()

    session = _run("demo/research", django_capture_on_commit_callbacks)

    assert session.status == AgentSession.Status.SUCCEEDED
    assert "Could not export session" in caplog.text


def test_the_rows_are_read_in_bounded_queries(
    receiver, monkeypatch, django_assert_num_queries
):
    monkeypatch.setattr(rows, "MAX_ROWS", 2)
    session = AgentSessionFactory.create(
        status=AgentSession.Status.SUCCEEDED,
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )
    for _ in range(5):
        ToolInvocationFactory.create(session=session)

    # the session, its provider calls, tool calls (and their count, as there
    # are more than 2), denials and approvals
    with django_assert_num_queries(6):
        assert telemetry.export_session(session.pk)
    spans = _trace(receiver, session)

    assert len(_named(spans, "execute_tool ")) == 2
    root = _one(spans, f"invoke_agent {session.prompt_ref}")
    assert root.attributes["wink.spans.dropped"] == 3


def test_an_approvers_denial_is_an_event_whose_words_are_content(
    receiver, paused, approver, django_capture_on_commit_callbacks, settings
):
    approval = ApprovalRequest.objects.get(session=paused)

    with django_capture_on_commit_callbacks(execute=True):
        decide(
            approval_id=approval.pk, user=approver, approve=False, reason="not today"
        )

    spans = _trace(receiver, paused)
    waited = _one(spans, "approval deploy")
    assert waited.attributes["wink.approval.status"] == "denied"
    assert "wink.approval.call_outcome" not in waited.attributes  # approved only
    (deploy,) = [
        span
        for span in _named(spans, "execute_tool deploy")
        if span.attributes["gen_ai.tool.call.id"] == approval.call_id
    ]
    ((name, event),) = deploy.events
    assert name == "gen_ai.guardrail.result"
    assert event["wink.policy.name"] == "release-approval"
    assert event["wink.policy.decision"] == "deny"
    assert "wink.policy.reason" not in event  # the approver's words: opt-in
    assert not any(b"not today" in body for body in receiver.bodies)


@pytest.mark.parametrize(
    ("attempts", "denied", "expected"),
    [
        (0, False, "not_run"),  # cancelled while queued, after the approval
        (1, False, "unknown"),  # cancelled after it took the call up again
        (1, True, "refused"),  # another policy refused the approved call
    ],
)
def test_an_approved_call_that_did_not_run_says_so(
    receiver, attempts, denied, expected
):
    session = AgentSessionFactory.create(
        status=AgentSession.Status.CANCELLED,
        attempts=attempts,
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )
    approval = ApprovalRequestFactory.create(
        session=session, status=ApprovalRequest.Status.APPROVED, turn=3, sequence=4
    )
    if denied:
        PolicyDenialFactory.create(
            session=session, call_id=approval.call_id, turn=3, sequence=4
        )

    assert telemetry.export_session(session.pk)
    waited = _one(_trace(receiver, session), "approval deploy")

    assert waited.attributes["wink.approval.status"] == "approved"
    assert waited.attributes["wink.approval.call_outcome"] == expected


def test_the_endpoint_is_logged_without_its_credentials(settings, caplog):
    settings.WINK_OTEL_TRACES_ENDPOINT = (
        "http://user:s3cr3t-token@127.0.0.1:9/v1/traces"
    )
    with caplog.at_level("INFO", logger="sessions_app.telemetry.provider"):
        provider = telemetry.tracer_provider()
    try:
        assert provider is not None
        logged = caplog.text
        assert "http://127.0.0.1" in logged
        assert "s3cr3t-token" not in logged and "user:" not in logged
    finally:
        telemetry.shutdown(drop=True)
