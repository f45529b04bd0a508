"""Approvals on a real Celery worker over a real broker, on PostgreSQL.

A run of ``demo/release`` whose ``deploy`` needs approval pauses on the
worker (no worker holds it while it waits). Then:

- two approvers approve at the same moment (two threads, each its own
  database connection): exactly one decision wins, the other is refused
  (``ApprovalClosed``), and the run is dispatched and resumed exactly once;
- the worker is SIGKILLed during the resumed run, right after the approved
  call was recorded (while the run waits for the provider's next reply): a new
  worker (its sweeper thread re-dispatches it) resumes the run again from its
  record, and the approved call has run once: one ``ToolInvocation`` and one
  write of the state its success changes.

Needs PostgreSQL and a broker in ``CELERY_TEST_BROKER_URL``, like
``test_celery_worker.py`` and ``test_worker_crash.py`` (whose harness,
``workers.py``, this module shares).
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import connection

from sessions_app import services
from sessions_app.approvals import decisions
from sessions_app.approvals.decisions import ApprovalClosed
from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    ProviderCall,
    StateChange,
    ToolInvocation,
)
from tests.integration.workers import (
    OfflineWorkers,
    needs_broker,
    offline_workers,
)
from tests.sessions_app.factories import UserFactory
from tooling.demo import seed_demo_catalog
from tooling.models import PolicyDefinition, PromptTemplate

pytestmark = [pytest.mark.django_db(transaction=True), needs_broker]

Status = AgentSession.Status
PROMPT = "demo/release"
REPLY_DELAY = 1.0  # seconds the offline provider holds back every reply
# a run task's end as the worker logs it, with the status it left the session in
RUN_TASK_DONE = re.compile(
    r"Task sessions_app\.run_session\[[^\]]+\] succeeded in [0-9.]+s: '(\w+)'"
)


@pytest.fixture
def workers(settings):
    with offline_workers(settings, delay=REPLY_DELAY) as started:
        yield started


def _release_with_approval() -> None:
    seed_demo_catalog()
    policy = PolicyDefinition.objects.create(
        name="release-approval",
        kind=PolicyDefinition.Kind.APPROVAL,
        config={"rules": [{"tool": "deploy"}]},
    )
    PromptTemplate.objects.get(namespace="demo", key="release").policies.add(policy)


def _approver(name: str) -> Any:
    user = UserFactory.create(username=name)
    user.user_permissions.add(Permission.objects.get(codename="decide_any_approval"))
    return type(user).objects.get(pk=user.pk)


def _wait_status(
    session: AgentSession,
    statuses: tuple[str, ...],
    workers: OfflineWorkers,
    seconds: float,
) -> AgentSession:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        session.refresh_from_db()
        if session.status in statuses:
            return session
        time.sleep(0.1)
    pytest.fail(
        f"session {session.pk} is {session.status}, not {statuses}, after "
        f"{seconds}s:\n{workers.output()}"
    )


def _paused_session(workers: OfflineWorkers) -> tuple[AgentSession, ApprovalRequest]:
    _release_with_approval()
    session = services.start_session(prompt_ref=PROMPT, params={})
    assert session.status == Status.QUEUED
    session = _wait_status(session, (Status.AWAITING_APPROVAL,), workers, 90)
    assert session.claim_token is None and session.lease_expires_at is None
    return session, ApprovalRequest.objects.get(session=session)


def test_two_approvers_at_the_same_moment_resume_the_run_once(workers):
    worker = workers.start("approvals")
    session, approval = _paused_session(workers)
    deciders = [_approver("alice"), _approver("bob")]
    barrier = threading.Barrier(len(deciders))
    outcomes: dict[str, str] = {}

    def decide(user: Any) -> None:
        try:
            barrier.wait(timeout=10)
            decisions.decide(
                approval_id=approval.pk, user=user, approve=True, reason="go"
            )
            outcomes[user.username] = "decided"
        except ApprovalClosed:
            outcomes[user.username] = "closed"
        finally:
            connection.close()  # each thread had its own connection

    threads = [threading.Thread(target=decide, args=(user,)) for user in deciders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(outcomes.values()) == ["closed", "decided"], outcomes
    winner = next(name for name, outcome in outcomes.items() if outcome == "decided")
    finished = _wait_status(session, (Status.SUCCEEDED, Status.FAILED), workers, 90)
    assert finished.status == Status.SUCCEEDED, finished.error_message
    approval.refresh_from_db()
    assert approval.status == ApprovalRequest.Status.APPROVED
    assert approval.decided_by is not None
    assert approval.decided_by.username == winner
    # one resume: the worker ran the session's task twice in all (start,
    # resume), claimed it once after the pause, and ran the approved call once
    # (a message left on the broker by an earlier test names a session that
    # no longer exists: its task ends "missing")
    runs = [
        status
        for status in RUN_TASK_DONE.findall(worker.output())
        if status != "missing"
    ]
    assert runs == ["awaiting_approval", "succeeded"], worker.output()
    assert finished.attempts == 1 and finished.pauses == 1
    ran = ToolInvocation.objects.filter(session=session, call_id=approval.call_id)
    assert [row.success for row in ran] == [True]


def test_a_worker_killed_during_the_resumed_run_runs_the_approved_call_once(workers):
    workers.start("before-kill", beat=True)
    session, approval = _paused_session(workers)
    turns_at_pause = ProviderCall.objects.filter(session=session).count()

    decisions.decide(
        approval_id=approval.pk, user=_approver("alice"), approve=True, reason="go"
    )

    # the resumed run records the approved call, then asks the provider for
    # its next turn, whose reply is held back REPLY_DELAY: kill it then
    deadline = time.monotonic() + 60
    while not ToolInvocation.objects.filter(
        session=session, call_id=approval.call_id
    ).exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the approved call never ran:\n{workers.output()}")
        time.sleep(0.02)
    time.sleep(REPLY_DELAY / 3)
    session.refresh_from_db()
    assert session.status == Status.RUNNING, session.status
    assert ProviderCall.objects.filter(session=session).count() == turns_at_pause
    workers.worker.kill()

    workers.start("after-kill", beat=True)
    finished = _wait_status(session, (Status.SUCCEEDED, Status.FAILED), workers, 120)
    assert finished.status == Status.SUCCEEDED, finished.error_message
    assert finished.attempts == 2  # the killed resume, and the one that finished
    ran = ToolInvocation.objects.filter(session=session, call_id=approval.call_id)
    assert [row.success for row in ran] == [True]
    # the call's own state change (the release-order policy recording that
    # deploy succeeded) was written once, with the call
    changes = StateChange.objects.filter(session=session, call_id=approval.call_id)
    assert changes.count() == 1
    assert ToolInvocation.objects.filter(session=session, name="deploy").count() == 2
