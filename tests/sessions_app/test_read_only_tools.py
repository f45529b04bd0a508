"""Tools that declare themselves read-only (ADR 0019): nothing is recorded
just before their handlers run, so their calls' records wait for the next
effect with the provider call that asked for them, and a crash before then
runs them again on resume, recording each call once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app import services, steps
from sessions_app.approvals import decisions
from sessions_app.models import AgentSession, ApprovalRequest
from sessions_app.runs import lifecycle
from tests.sessions_app.factories import UserFactory
from tests.sessions_app.lookup_setup import Crash, calling, client, crash_in, runs
from tooling.models import PolicyDefinition, PromptTemplate

pytestmark = pytest.mark.django_db


def test_the_calls_records_go_with_the_next_request(lookup_and_act):
    with CaptureQueriesContext(connection) as captured:
        session = services.start_session(
            prompt_ref=lookup_and_act, client=client(calling(2, ("lookup",) * 3))
        )
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    assert session.tool_invocations.count() == 6
    assert session.provider_calls.count() == 3
    # While a turn's handlers run, nothing of that turn is committed: not the
    # provider call that asked for them, not the calls before them. All of it
    # is written just before the next request.
    assert [(text, calls, tools) for _, text, calls, tools in runs] == [
        ("turn 1 call 1", 0, 0),
        ("turn 1 call 2", 0, 0),
        ("turn 1 call 3", 0, 0),
        ("turn 2 call 1", 1, 3),
        ("turn 2 call 2", 1, 3),
        ("turn 2 call 3", 1, 3),
    ]
    if connection.vendor == "postgresql":
        # one query per turn: its provider call, then its three calls
        written = [
            sql
            for sql in (query["sql"] for query in captured.captured_queries)
            if 'INSERT INTO "sessions_app_toolinvocation"' in sql
        ]
        assert len(written) == 2
        for sql in written:
            assert sql.startswith('INSERT INTO "sessions_app_providercall"')
            assert sql.count('INSERT INTO "sessions_app_toolinvocation"') == 3


def test_a_crash_before_the_next_effect_runs_the_calls_again(
    lookup_and_act, monkeypatch
):
    crash_in.add("turn 1 call 2")
    # a dead process writes nothing more: no flush on its way out
    monkeypatch.setattr(steps.StepWriter, "flush", lambda self: None)
    with pytest.raises(Crash):
        services.start_session(
            prompt_ref=lookup_and_act, client=client(calling(2, ("lookup",) * 2))
        )
    monkeypatch.undo()
    session = AgentSession.objects.get()
    assert session.status == AgentSession.Status.RUNNING
    # The first response and the call that ran were held for the next effect,
    # which never came: lost with the process (the response was billed).
    assert session.provider_calls.count() == 0
    assert session.tool_invocations.count() == 0

    AgentSession.objects.filter(pk=session.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    resumed = services.run_session(
        session_id=session.pk, client=client(calling(2, ("lookup",) * 2))
    )
    assert resumed.status == AgentSession.Status.SUCCEEDED, resumed.error_message
    # The resumed run asks for the first response again and runs both of its
    # calls again (harmless: they change nothing); each call is recorded once.
    assert [text for _, text, _, _ in runs] == [
        "turn 1 call 1",
        "turn 1 call 2",
        "turn 1 call 1",
        "turn 1 call 2",
        "turn 2 call 1",
        "turn 2 call 2",
    ]
    assert list(
        resumed.tool_invocations.order_by("call_id").values_list("call_id", flat=True)
    ) == [
        "call_bench_1_1",
        "call_bench_1_2",
        "call_bench_2_1",
        "call_bench_2_2",
    ]
    assert resumed.provider_calls.count() == 3
    assert resumed.attempts == 2


# -- read-only calls beside calls with an effect ----------------------------------


def test_a_call_with_an_effect_finds_the_read_only_calls_before_it_written(
    lookup_and_act,
):
    session = services.start_session(
        prompt_ref=lookup_and_act,
        client=client(calling(1, ("lookup", "act", "lookup"))),
    )
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    # (tool, text, provider calls and tool calls committed when it ran)
    assert runs == [
        ("lookup", "turn 1 call 1", 0, 0),  # nothing settled for it
        ("act", "turn 1 call 2", 1, 1),  # its settle wrote the response, lookup
        ("lookup", "turn 1 call 3", 1, 2),  # act committed at its step's end
    ]
    assert session.tool_invocations.count() == 3


def test_the_pause_for_an_approval_writes_the_read_only_call_held_before_it(
    lookup_and_act, monkeypatch, django_capture_on_commit_callbacks
):
    policy = PolicyDefinition.objects.create(
        name="act-approval",
        kind=PolicyDefinition.Kind.APPROVAL,
        config={"rules": [{"tool": "act"}]},
    )
    PromptTemplate.objects.get(namespace="tests", key="lookups").policies.add(policy)
    provider = client(calling(1, ("lookup", "act")))
    monkeypatch.setattr("tooling.services.build_client", lambda: provider)  # resume
    session = services.start_session(prompt_ref=lookup_and_act, client=provider)
    assert session.status == AgentSession.Status.AWAITING_APPROVAL
    assert session.provider_calls.count() == 1
    assert list(session.tool_invocations.values_list("name", flat=True)) == ["lookup"]

    approver = UserFactory.create(username="alice", is_superuser=True)
    request = ApprovalRequest.objects.get(session=session)
    with django_capture_on_commit_callbacks(execute=True):
        decisions.decide(approval_id=request.pk, user=approver, approve=True, reason="")
    session.refresh_from_db()
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    # the resumed run replays the recorded lookup: each handler ran once
    assert [(name, text) for name, text, _, _ in runs] == [
        ("lookup", "turn 1 call 1"),
        ("act", "turn 1 call 2"),
    ]


def test_a_lease_lost_at_a_heartbeat_drops_the_held_read_only_rows(
    lookup_and_act, monkeypatch
):
    """The run's record is another worker's then: nothing held is written
    into it (ADR 0018), read-only calls included."""
    beats = 0
    original = lifecycle.Claim.beat

    def beat(self: lifecycle.Claim) -> None:
        nonlocal beats
        beats += 1
        if beats == 3:  # before act, after lookup ran
            raise lifecycle.LeaseLost("taken over")
        original(self)

    monkeypatch.setattr(lifecycle.Claim, "beat", beat)
    services.start_session(
        prompt_ref=lookup_and_act,
        client=client(calling(1, ("lookup", "act"))),
    )
    session = AgentSession.objects.get()
    assert session.status == AgentSession.Status.RUNNING
    assert [name for name, _, _, _ in runs] == ["lookup"]
    assert session.provider_calls.count() == 0
    assert session.tool_invocations.count() == 0
