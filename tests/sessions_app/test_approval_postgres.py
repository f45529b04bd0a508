"""PostgreSQL only: concurrent deciders, cancels and sweeps on one paused
run (threads, each its own connection; the session row lock orders them),
and the session trigger: every allowed status move, and nothing more."""

from __future__ import annotations

import itertools
import threading
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from sessions_app import services
from sessions_app.approvals import decisions, expiry, inbox
from sessions_app.approvals.decisions import ApprovalClosed
from sessions_app.models import AgentSession, ApprovalRequest
from tests.sessions_app.approval_setup import PROMPT, add_approval
from tests.sessions_app.factories import AgentSessionFactory, UserFactory

pytestmark = pytest.mark.django_db

Status = AgentSession.Status


@pytest.mark.django_db(transaction=True)
def test_cancel_and_approve_at_the_same_moment_never_deadlock(
    monkeypatch, settings
) -> None:
    """PostgreSQL: both lock the session before the approval, so one waits for
    the other; whichever wins, the session and its approval agree."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's (run with DATABASE_URL=postgres://...)")
    add_approval()
    author = UserFactory.create(username="author")
    alice = UserFactory.create(username="alice")
    alice.user_permissions.add(Permission.objects.get(codename="decide_any_approval"))
    alice = type(alice).objects.get(pk=alice.pk)
    sessions = [
        services.start_session(prompt_ref=PROMPT, user=author) for _ in range(4)
    ]
    assert {s.status for s in sessions} == {Status.AWAITING_APPROVAL}
    settings.CELERY_TASK_ALWAYS_EAGER = False  # a decision only queues the run
    monkeypatch.setattr(
        "sessions_app.runs.dispatch.dispatch_run", lambda *args, **kwargs: True
    )
    errors: list[BaseException] = []

    for session in sessions:
        approval = ApprovalRequest.objects.get(session=session)
        barrier = threading.Barrier(2)

        def approve(
            approval: ApprovalRequest = approval,
            barrier: threading.Barrier = barrier,
        ) -> None:
            try:
                barrier.wait(timeout=10)
                decisions.decide(
                    approval_id=approval.pk, user=alice, approve=True, reason=""
                )
            except ApprovalClosed:
                pass
            except BaseException as error:
                errors.append(error)
            finally:
                connection.close()

        def cancel(
            session: AgentSession = session, barrier: threading.Barrier = barrier
        ) -> None:
            try:
                barrier.wait(timeout=10)
                services.cancel_session(session_id=session.pk, user=author)
            except BaseException as error:
                errors.append(error)
            finally:
                connection.close()

        threads = [threading.Thread(target=approve), threading.Thread(target=cancel)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        session.refresh_from_db()
        approval.refresh_from_db()
        # cancelled either way (a queued run is cancelled at once); the
        # approval was decided before the cancel, or cancelled with it
        assert session.status == Status.CANCELLED
        assert approval.status in ("approved", "cancelled")
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_approve_and_the_sweepers_expiry_at_the_same_moment_resume_once(
    monkeypatch, settings
) -> None:
    """PostgreSQL: an approver and the sweeper (which sees the request
    overdue) race on the same request: exactly one of them decides it, and
    the run is queued and dispatched once."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's (run with DATABASE_URL=postgres://...)")
    add_approval()
    author = UserFactory.create(username="author")
    alice = UserFactory.create(username="alice")
    alice.user_permissions.add(Permission.objects.get(codename="decide_any_approval"))
    alice = type(alice).objects.get(pk=alice.pk)
    sessions = [
        services.start_session(prompt_ref=PROMPT, user=author) for _ in range(4)
    ]
    settings.CELERY_TASK_ALWAYS_EAGER = False  # a decision only queues the run
    dispatched: list[Any] = []
    lock = threading.Lock()

    def dispatch_run(session_id: Any, **kwargs: Any) -> bool:
        with lock:
            dispatched.append(str(session_id))
        return True

    monkeypatch.setattr("sessions_app.runs.dispatch.dispatch_run", dispatch_run)
    later = timezone.now() + timedelta(days=2)  # the sweeper's "now": overdue
    errors: list[BaseException] = []
    for session in sessions:
        approval = ApprovalRequest.objects.get(session=session)
        barrier = threading.Barrier(2)

        def approve(
            approval: ApprovalRequest = approval, barrier: threading.Barrier = barrier
        ) -> None:
            try:
                barrier.wait(timeout=10)
                decisions.decide(
                    approval_id=approval.pk, user=alice, approve=True, reason=""
                )
            except ApprovalClosed:
                pass
            except BaseException as error:
                errors.append(error)
            finally:
                connection.close()

        def sweep(barrier: threading.Barrier = barrier) -> None:
            try:
                barrier.wait(timeout=10)
                expiry.expire_overdue(now=later)
            except BaseException as error:
                errors.append(error)
            finally:
                connection.close()

        threads = [threading.Thread(target=approve), threading.Thread(target=sweep)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        approval.refresh_from_db()
        assert approval.status in ("approved", "expired")
        assert AgentSession.objects.get(pk=session.pk).status == Status.QUEUED
    assert errors == []
    assert sorted(dispatched) == sorted(str(s.pk) for s in sessions)  # once each


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


def test_the_inbox_order_is_read_from_its_index_not_sorted(admin_user) -> None:
    """PostgreSQL: the inbox's first page (pending first, soonest deadline,
    then newest decided) is an index scan of ``approval_inbox_order``, not a
    sort over every request (issue #28: 20,000 requests)."""
    if connection.vendor != "postgresql":
        pytest.skip("the plan is PostgreSQL's (run with DATABASE_URL=postgres://...)")
    sessions = AgentSessionFactory.create_batch(20)
    now = timezone.now()
    ApprovalRequest.objects.bulk_create(
        ApprovalRequest(
            session=sessions[index % 20],
            tool_name="deploy",
            reason="Needs a human.",
            status="pending" if index < 20 else "approved",
            requested_at=now - timedelta(minutes=index),
            expires_at=now + timedelta(days=1, minutes=index),
            decided_at=None if index < 20 else now,
            event_id=str(uuid.uuid4()),
        )
        for index in range(3000)
    )
    page = inbox.pending_first(inbox.visible_to(admin_user))[:51]
    sql, params = page.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sessions_app_approvalrequest")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "approval_inbox_order" in plan, plan
    assert "Sort" not in plan.splitlines()[1], plan
    rows = list(page)
    assert [row.status for row in rows[:20]] == ["pending"] * 20
    assert [row.expires_at for row in rows[:20]] == sorted(
        r.expires_at for r in rows[:20]
    )
    decided = [row.requested_at for row in rows[20:]]
    assert decided == sorted(decided, reverse=True)
