"""Hostile interleavings around a paused run (SQLite inline; the concurrent
ones and the trigger are in test_approval_postgres.py): a stale message never
runs a waiting session, a claim that read the session before it paused never
hands the resumed run its whole deadline again, every run resumes once
however many messages claim it, each decision applies to its own call, a call
id the database cannot hold fails the run instead of pausing it for ever, the
pause commits durably, and a custom policy's deadline stays within bounds."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from django.db import connection

from sessions_app import services
from sessions_app.approvals import decisions
from sessions_app.models import AgentSession, ApprovalRequest, ToolInvocation
from sessions_app.runs import lifecycle, replay
from sessions_app.runs.recording import record_approval_requested
from sessions_app.runs.store import store as store_module
from tests.runtime.fakes import FakeProvider, function_call, response
from tests.sessions_app.approval_setup import PROMPT, add_approval, deploys
from tests.sessions_app.factories import AgentSessionFactory
from tooling.demo import seed_demo_catalog
from tooling.models import PolicyDefinition, PromptTemplate
from tooling.runtime import ApprovalRequested

pytestmark = pytest.mark.django_db

Status = AgentSession.Status


def test_a_redelivered_message_never_runs_a_waiting_session(paused) -> None:
    before = AgentSession.objects.get(pk=paused.pk)
    services.run_session(session_id=paused.pk)  # the original run's message again
    after = AgentSession.objects.get(pk=paused.pk)
    assert after.status == Status.AWAITING_APPROVAL
    assert (after.attempts, after.claim_token, after.pauses) == (0, None, 1)
    assert after.deadline_left_seconds == before.deadline_left_seconds
    assert ApprovalRequest.objects.get(session=paused).status == "pending"


def test_the_resumed_run_runs_once_however_many_messages_claim_it(
    paused, approver, settings, monkeypatch
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False  # a decision only queues the run
    sent: list[Any] = []

    def dispatch_run(session_id: Any, **kwargs: Any) -> bool:
        sent.append(session_id)
        return True

    monkeypatch.setattr("sessions_app.runs.dispatch.dispatch_run", dispatch_run)
    approval = ApprovalRequest.objects.get(session=paused)
    decisions.decide(approval_id=approval.pk, user=approver, approve=True, reason="")
    assert len(sent) == 1
    # the decision's message, the original run's redelivered one, the sweeper's
    for _ in range(3):
        services.run_session(session_id=paused.pk)
    session = AgentSession.objects.get(pk=paused.pk)
    assert session.status == Status.SUCCEEDED
    assert session.attempts == 1
    assert [call.success for call in deploys(session)].count(True) == 1


def test_a_claim_that_read_the_session_before_it_paused_does_not_claim_it(
    paused, approver, settings, monkeypatch
) -> None:
    """A worker read the session (no time left recorded: not paused yet), then
    the run paused and a decision queued it: that worker's claim must not
    succeed with the whole deadline again."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    monkeypatch.setattr("sessions_app.runs.dispatch.dispatch_run", lambda *a, **k: True)
    approval = ApprovalRequest.objects.get(session=paused)
    decisions.decide(approval_id=approval.pk, user=approver, approve=True, reason="")
    queued = AgentSession.objects.get(pk=paused.pk)
    left = queued.deadline_left_seconds
    assert queued.status == Status.QUEUED and left is not None
    stale = AgentSession.objects.get(pk=paused.pk)
    stale.deadline_left_seconds = None  # what that worker read
    stale.attempts, stale.started_at = 0, None  # ``new``: the read is skipped
    assert lifecycle.claim(paused.pk, new=stale) is None
    # the claim that knows the time left takes it, with that time only
    claim = lifecycle.claim(paused.pk)
    assert claim is not None
    session = AgentSession.objects.get(pk=paused.pk)
    assert session.deadline_at is not None and session.started_at is not None
    assert session.deadline_left_seconds is None


def test_the_resumed_run_applies_each_decision_to_its_own_call(
    paused, approver
) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    decisions.decide(approval_id=approval.pk, user=approver, approve=True, reason="")
    approval.refresh_from_db()
    ((decision,),) = replay.decisions(paused).values()
    assert (decision.kind, decision.tool_name, decision.turn) == (
        "function",
        "deploy",
        approval.turn,
    )
    assert decision.policy_name == "release-approval"  # its policy's only
    assert decision.arguments == approval.raw_arguments
    assert decision.applies_to(
        kind="function",
        tool_name="deploy",
        arguments=approval.raw_arguments,
        turn=approval.turn,
    )
    assert not decision.applies_to(
        kind="mcp",
        tool_name="deploy",
        arguments=approval.raw_arguments,
        turn=approval.turn,
    )


@pytest.mark.parametrize("call_id", ["c\x00d", "c\ud800d"])
def test_a_call_id_the_database_cannot_hold_fails_the_run(call_id: str) -> None:
    add_approval({"rules": [{"tool": "lint"}]})
    body = response(function_call("lint", "{}", call_id))
    # escaped as a provider sends it: "\ud800" in the JSON text
    provider = FakeProvider(
        httpx.Response(
            200,
            content=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
        )
    )

    session = services.start_session(prompt_ref=PROMPT, client=provider.client)

    assert session.status == Status.FAILED
    assert session.error_phase == "response"
    assert "cannot pause on it for approval" in session.error_message
    assert not ApprovalRequest.objects.filter(session=session).exists()


def test_a_pause_commits_durably(monkeypatch, django_capture_on_commit_callbacks):
    """The pause ends the worker's part: its transaction commits durably
    (``commits.durable``), as a finished run's does, before approvers hear."""
    order: list[str] = []
    durable = store_module.durable

    def durably() -> None:
        assert connection.in_atomic_block  # it applies to the pause's transaction
        order.append("durable")
        durable()

    monkeypatch.setattr(store_module, "durable", durably)
    pause = store_module.pause

    def pausing(*args: Any, **kwargs: Any) -> None:
        pause(*args, **kwargs)
        order.append("paused")

    monkeypatch.setattr(store_module, "pause", pausing)
    monkeypatch.setattr(
        "sessions_app.approvals.notifications.approval_requested",
        lambda approval: order.append("notified"),
    )
    add_approval()
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref=PROMPT)
    assert session.status == Status.AWAITING_APPROVAL
    assert order == ["durable", "paused", "notified"]


@pytest.mark.parametrize(
    "approval_id", [{"id": 1}, ["x"], 2**130, -1, 1.5, b"\xff", "a" * 10_000]
)
def test_any_malformed_id_is_an_unknown_approval(
    paused, approver, approval_id: Any
) -> None:
    with pytest.raises(ApprovalRequest.DoesNotExist):
        decisions.decide(
            approval_id=approval_id, user=approver, approve=True, reason=""
        )


def test_a_call_id_too_long_to_store_fails_the_run_instead_of_pausing() -> None:
    add_approval({"rules": [{"tool": "lint"}]})
    long_id = "c" * 150
    provider = FakeProvider(response(function_call("lint", "{}", long_id)))

    session = services.start_session(prompt_ref=PROMPT, client=provider.client)

    assert session.status == Status.FAILED
    assert session.error_phase == "response"
    assert "longer than 100 characters" in session.error_message
    assert not ApprovalRequest.objects.filter(session=session).exists()
    assert not ToolInvocation.objects.filter(session=session, name="lint").exists()


def test_a_policy_name_too_long_to_store_fails_the_run_instead_of_pausing() -> None:
    """Its decision could not be matched on resume (the column holds 64
    characters): the run ends failed rather than pause for ever."""
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL refuses such a name in the catalog already")
    seed_demo_catalog()
    policy = PolicyDefinition.objects.create(
        name="p" * 80,
        kind=PolicyDefinition.Kind.APPROVAL,
        config={"rules": [{"tool": "lint"}]},
    )
    PromptTemplate.objects.get(namespace="demo", key="release").policies.add(policy)
    provider = FakeProvider(response(function_call("lint", "{}", "c1")))

    session = services.start_session(prompt_ref=PROMPT, client=provider.client)

    assert session.status == Status.FAILED
    assert session.error_phase == "response"
    assert session.error_message == (
        "The name of the policy asking about 'lint' is longer than 64 characters "
        "or not text a database stores: the run cannot pause on it for approval, "
        "and the call did not run."
    )
    assert not ApprovalRequest.objects.filter(session=session).exists()


@pytest.mark.parametrize(
    ("deadline", "expected"),
    [(-5, 1), (10**15, 366 * 24 * 3600), (True, 86400), (30, 30)],
)
def test_a_custom_policy_deadline_is_kept_within_bounds(
    deadline: Any, expected: int, settings
) -> None:
    """A policy other than ApprovalPolicy may ask with any deadline: the
    request neither expires at once nor overflows its date."""
    settings.WINK_APPROVAL_TIMEOUT_SECONDS = 86400
    session = AgentSessionFactory.create(status=Status.RUNNING)
    event = ApprovalRequested(
        prompt_name="p",
        kind="function",
        tool_name="deploy",
        call_id="c1",
        turn=1,
        reason="custom",
        deadline_seconds=deadline,
    )
    row = record_approval_requested(session=session, event=event)
    assert (row.expires_at - row.requested_at).total_seconds() == expected
