"""Hostile interleavings around a paused run (SQLite inline; the trigger
matrix on PostgreSQL): a stale message never runs a waiting session, a claim
that read the session before it paused never hands the resumed run its whole
deadline again, every run resumes once however many messages claim it, a
call id the database cannot hold fails the run instead of pausing it for
ever, and the session trigger allows exactly the documented moves."""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Permission
from django.db import DatabaseError, connection, transaction

from sessions_app import approvals, lifecycle, replay, services
from sessions_app.models import AgentSession, ApprovalRequest, ToolInvocation
from tests.runtime.fakes import FakeProvider, function_call, response
from tests.sessions_app.factories import AgentSessionFactory, UserFactory
from tests.sessions_app.test_approvals import PROMPT, add_approval

pytestmark = pytest.mark.django_db

Status = AgentSession.Status


@pytest.fixture
def approver(db):
    user = UserFactory.create(username="alice")
    user.user_permissions.add(Permission.objects.get(codename="decide_any_approval"))
    return UserFactory._meta.model.objects.get(pk=user.pk)


@pytest.fixture
def paused(django_capture_on_commit_callbacks) -> AgentSession:
    add_approval()
    with django_capture_on_commit_callbacks(execute=True):
        return services.start_session(prompt_ref=PROMPT, user=UserFactory.create())


def deploys(session: AgentSession) -> list[ToolInvocation]:
    return list(ToolInvocation.objects.filter(session=session, name="deploy"))


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

    monkeypatch.setattr("sessions_app.dispatch.dispatch_run", dispatch_run)
    approval = ApprovalRequest.objects.get(session=paused)
    approvals.decide(approval_id=approval.pk, user=approver, approve=True, reason="")
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
    monkeypatch.setattr("sessions_app.dispatch.dispatch_run", lambda *a, **k: True)
    approval = ApprovalRequest.objects.get(session=paused)
    approvals.decide(approval_id=approval.pk, user=approver, approve=True, reason="")
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
    approvals.decide(approval_id=approval.pk, user=approver, approve=True, reason="")
    approval.refresh_from_db()
    (decision,) = replay.decisions(paused).values()
    assert (decision.kind, decision.tool_name, decision.turn) == (
        "function",
        "deploy",
        approval.turn,
    )
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
    """The pause ends the worker's part: its commit waits for the disk, as a
    finished run's does (steps.durable_commits), before approvers hear."""
    order: list[str] = []
    monkeypatch.setattr(
        "sessions_app.steps.durable_commits", lambda: order.append("durable")
    )
    pause = lifecycle.pause

    def pausing(*args: Any, **kwargs: Any) -> None:
        order.append("pause")
        pause(*args, **kwargs)

    monkeypatch.setattr("sessions_app.lifecycle.pause", pausing)
    monkeypatch.setattr(
        "sessions_app.notifications.approval_requested",
        lambda approval: order.append("notified"),
    )
    add_approval()
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref=PROMPT)
    assert session.status == Status.AWAITING_APPROVAL
    # (on PostgreSQL the run's end restores the setting once more)
    assert order[:2] == ["durable", "pause"] and order[-1] == "notified"


@pytest.mark.parametrize(
    "approval_id", [{"id": 1}, ["x"], 2**130, -1, 1.5, b"\xff", "a" * 10_000]
)
def test_any_malformed_id_is_an_unknown_approval(
    paused, approver, approval_id: Any
) -> None:
    with pytest.raises(ApprovalRequest.DoesNotExist):
        approvals.decide(
            approval_id=approval_id, user=approver, approve=True, reason=""
        )


# -- PostgreSQL: every allowed move, and nothing more ------------------------------

STATUSES = [
    Status.QUEUED,
    Status.RUNNING,
    Status.AWAITING_APPROVAL,
    Status.SUCCEEDED,
    Status.FAILED,
    Status.CANCELLED,
]
FINISHED = {Status.SUCCEEDED, Status.FAILED, Status.CANCELLED}
ALLOWED = {
    (Status.QUEUED, Status.RUNNING),
    (Status.QUEUED, Status.SUCCEEDED),
    (Status.QUEUED, Status.FAILED),
    (Status.QUEUED, Status.CANCELLED),
    (Status.RUNNING, Status.AWAITING_APPROVAL),
    (Status.RUNNING, Status.SUCCEEDED),
    (Status.RUNNING, Status.FAILED),
    (Status.RUNNING, Status.CANCELLED),
    (Status.AWAITING_APPROVAL, Status.QUEUED),
    (Status.AWAITING_APPROVAL, Status.CANCELLED),
} | {(status, status) for status in STATUSES}


def _moves(source: str, target: str) -> bool:
    session = AgentSessionFactory.create(status=source)
    table = AgentSession._meta.db_table
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET status = %s WHERE id = %s", [target, session.pk]
            )
    except DatabaseError:
        return False
    return True


def test_the_trigger_allows_exactly_the_documented_moves() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the trigger is PostgreSQL's (run with DATABASE_URL=postgres://)")
    moved = {
        (source, target)
        for source, target in itertools.product(STATUSES, STATUSES)
        if _moves(source, target)
    }
    assert moved == ALLOWED
