"""A worker's claim is one conditional update (then the session read back),
which sets the deadline from the row's own columns; a worker's task does not
read the session back after the run it ended. The concurrent claims are
PostgreSQL's (threads, each its own connection)."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app import returning, services, steps, tasks
from sessions_app.models import AgentSession
from sessions_app.runs import lifecycle
from tests.sessions_app.approval_setup import PROMPT, add_approval
from tests.sessions_app.factories import AgentSessionFactory
from tooling import assembly
from tooling.demo import seed_demo_catalog
from tooling.models import generation_token

pytestmark = pytest.mark.django_db

Status = AgentSession.Status
TABLE = '"sessions_app_agentsession"'


def queued_row(deadline_seconds: int = 900) -> AgentSession:
    return AgentSessionFactory.create(
        status=Status.QUEUED, deadline_seconds=deadline_seconds, output_text=""
    )


def row(session_id: Any) -> AgentSession:
    return AgentSession.objects.get(pk=session_id)


def expire_lease(session_id: Any, now: datetime) -> None:
    AgentSession.objects.filter(pk=session_id).update(
        lease_expires_at=now - timedelta(seconds=1)
    )


def session_statements(queries: CaptureQueriesContext) -> list[str]:
    """The statements that touch the session table (SET/RESET and the rows of
    other tables left out)."""
    return [q["sql"] for q in queries.captured_queries if TABLE in q["sql"]]


def paused_then_queued(now: datetime, *, ran_for: int = 100) -> AgentSession:
    """A run claimed at ``now - ran_for`` seconds that paused for a decision
    at ``now`` and was queued again (as a decision leaves it)."""
    session = queued_row(deadline_seconds=900)
    claim = lifecycle.claim(session.pk, now=now - timedelta(seconds=ran_for))
    assert claim is not None
    lifecycle.pause(claim, now=now)
    assert lifecycle.requeue(session.pk, now=now)
    paused = row(session.pk)
    assert paused.status == Status.QUEUED
    assert paused.deadline_at is None
    assert paused.deadline_left_seconds == 900 - ran_for
    return paused


# -- (a) the statements of a worker's claim ---------------------------------------


def test_a_worker_claim_is_one_update_returning_the_session() -> None:
    assert returning.supported()  # SQLite 3.35+ and PostgreSQL
    session = AgentSessionFactory.create(
        status=Status.QUEUED,
        deadline_seconds=900,
        output_text="",
        params={"text": "50% of '%s'", "n": [1, 2.5, None]},
    )

    with CaptureQueriesContext(connection) as queries:
        claim = lifecycle.claim(session.pk)

    assert claim is not None
    (update,) = (q["sql"] for q in queries.captured_queries)
    assert update.startswith(f"UPDATE {TABLE} SET") and " RETURNING " in update
    claimed = claim.session
    assert claimed.status == Status.RUNNING
    assert claimed.claim_token == claim.token
    # the row as a SELECT gives it: every field converted, the generation read
    stored = AgentSession.objects.annotate(catalog_token=generation_token()).get(
        pk=session.pk
    )
    for field in AgentSession._meta.concrete_fields:
        assert getattr(claimed, field.attname) == getattr(stored, field.attname), (
            field.name
        )
    token = getattr(claimed, "catalog_token", None)
    assert token == getattr(stored, "catalog_token", None) is not None
    assert not claimed._state.adding and claimed._state.db == "default"


def test_without_returning_a_claim_reads_the_session_back(monkeypatch) -> None:
    monkeypatch.setattr(returning, "supported", lambda: False)
    session = queued_row()

    with CaptureQueriesContext(connection) as queries:
        claim = lifecycle.claim(session.pk)

    assert claim is not None
    update, read = (q["sql"] for q in queries.captured_queries)
    assert update.startswith(f"UPDATE {TABLE} SET") and "RETURNING" not in update
    assert read.startswith("SELECT") and f"FROM {TABLE}" in read
    assert claim.session.claim_token == claim.token


def test_claiming_a_missing_session_is_one_update_and_none() -> None:
    with CaptureQueriesContext(connection) as queries:
        assert lifecycle.claim(uuid.uuid4()) is None

    (update,) = (q["sql"] for q in queries.captured_queries)
    assert update.startswith(f"UPDATE {TABLE} SET")


# -- (b) the deadline the claim sets -----------------------------------------------


def test_the_first_claim_sets_the_deadline_from_now() -> None:
    session = queued_row(deadline_seconds=900)
    now = timezone.now()

    lifecycle.claim(session.pk, now=now)

    claimed = row(session.pk)
    assert claimed.deadline_at == now + timedelta(seconds=900)
    assert claimed.started_at == now
    assert claimed.deadline_left_seconds is None


def test_a_session_without_a_deadline_gets_one_second() -> None:
    session = queued_row(deadline_seconds=0)
    now = timezone.now()

    lifecycle.claim(session.pk, now=now)

    assert row(session.pk).deadline_at == now + timedelta(seconds=1)


def test_a_later_claim_keeps_the_deadline_and_the_start() -> None:
    session = queued_row(deadline_seconds=900)
    first = timezone.now() - timedelta(seconds=300)
    assert lifecycle.claim(session.pk, now=first) is not None
    later = timezone.now()
    expire_lease(session.pk, later)

    claim = lifecycle.claim(session.pk, now=later)

    assert claim is not None
    claimed = row(session.pk)
    assert claimed.attempts == 2
    assert claimed.deadline_at == first + timedelta(seconds=900)
    assert claimed.started_at == first
    assert claim.session.deadline_at == claimed.deadline_at


def test_the_claim_that_resumes_a_paused_run_gives_it_the_time_it_had_left() -> None:
    paused_at = timezone.now() - timedelta(seconds=600)  # the decision took 10 min
    session = paused_then_queued(paused_at, ran_for=100)
    now = timezone.now()

    claim = lifecycle.claim(session.pk, now=now)

    assert claim is not None
    resumed = row(session.pk)
    assert resumed.status == Status.RUNNING
    assert resumed.deadline_at == now + timedelta(seconds=800)
    assert resumed.deadline_left_seconds is None
    assert resumed.started_at == paused_at - timedelta(seconds=100)  # kept
    assert claim.session.deadline_at == resumed.deadline_at


def test_a_paused_run_with_no_time_left_resumes_with_its_deadline_now() -> None:
    session = paused_then_queued(timezone.now(), ran_for=900)
    assert session.deadline_left_seconds == 0
    now = timezone.now()

    assert lifecycle.claim(session.pk, now=now) is not None

    assert row(session.pk).deadline_at == now


def test_a_second_claim_of_a_resumed_run_fails_and_keeps_its_deadline() -> None:
    session = paused_then_queued(timezone.now())
    now = timezone.now()
    assert lifecycle.claim(session.pk, now=now) is not None

    assert lifecycle.claim(session.pk, now=now + timedelta(seconds=5)) is None

    resumed = row(session.pk)
    assert resumed.attempts == 1
    assert resumed.deadline_at == now + timedelta(seconds=800)


def test_a_waiting_run_cannot_be_claimed() -> None:
    session = queued_row()
    claim = lifecycle.claim(session.pk)
    assert claim is not None
    lifecycle.pause(claim)

    assert lifecycle.claim(session.pk) is None
    assert row(session.pk).status == Status.AWAITING_APPROVAL


# -- concurrent claims (PostgreSQL) ------------------------------------------------


def _claim_while_another_holds_the_row(session_id: Any) -> tuple[Any, Any, datetime]:
    """Worker A claims the row in a transaction it keeps open until worker B's
    claim waits for A's row lock; then A commits. Both claims' results and
    A's ``now``."""
    a_now = timezone.now()
    results: dict[str, Any] = {}
    errors: list[BaseException] = []
    a_claimed, release = threading.Event(), threading.Event()

    def worker_a() -> None:
        try:
            with transaction.atomic():
                results["a"] = lifecycle.claim(session_id, now=a_now)
                a_claimed.set()
                assert release.wait(timeout=20)
        except BaseException as error:  # reported by the test
            errors.append(error)
            a_claimed.set()
        finally:
            connection.close()

    def worker_b() -> None:
        try:
            results["b"] = lifecycle.claim(session_id, now=a_now + timedelta(seconds=1))
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    a = threading.Thread(target=worker_a)
    a.start()
    assert a_claimed.wait(timeout=20)
    b = threading.Thread(target=worker_b)
    b.start()
    try:
        deadline = time.monotonic() + 20
        while True:  # B's UPDATE waits for A's lock on the row
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE "
                    "datname = current_database() AND wait_event_type = 'Lock'"
                )
                (waiting,) = cursor.fetchone()
            if waiting:
                break
            assert b.is_alive(), "worker B's claim did not wait for A's row lock"
            assert time.monotonic() < deadline, "worker B never waited for A"
            time.sleep(0.01)
    finally:
        release.set()
        a.join(timeout=20)
        b.join(timeout=20)
    assert not errors, errors
    return results["a"], results["b"], a_now


@pytest.mark.django_db(transaction=True)
def test_two_workers_claiming_one_queued_run_at_once_one_wins() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's (run with DATABASE_URL=postgres://...)")
    session = queued_row(deadline_seconds=900)

    first, second, now = _claim_while_another_holds_the_row(session.pk)

    assert first is not None and second is None
    claimed = row(session.pk)
    assert (claimed.attempts, claimed.claim_token) == (1, first.token)
    assert claimed.deadline_at == now + timedelta(seconds=900)


@pytest.mark.django_db(transaction=True)
def test_two_workers_resuming_one_paused_run_at_once_give_it_its_time_once() -> None:
    """The old race: B's update waits while A resumes the run; it then sees
    the row A left (running, its time left cleared) and claims nothing."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's (run with DATABASE_URL=postgres://...)")
    session = paused_then_queued(timezone.now(), ran_for=100)

    first, second, now = _claim_while_another_holds_the_row(session.pk)

    assert first is not None and second is None
    resumed = row(session.pk)
    assert (resumed.attempts, resumed.claim_token) == (1, first.token)
    assert resumed.deadline_at == now + timedelta(seconds=800)
    assert resumed.deadline_left_seconds is None


# -- (c) the worker's task ---------------------------------------------------------


@pytest.fixture
def queued(settings: Any) -> AgentSession:
    """A session started with a broker: recorded, queued, not run."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    seed_demo_catalog()
    return services.start_session(prompt_ref="demo/release", params={})


def test_the_task_runs_the_session_and_does_not_read_it_back(queued) -> None:
    with CaptureQueriesContext(connection) as queries:
        outcome = tasks.run_session_task(str(queued.pk))

    assert outcome == Status.SUCCEEDED == row(queued.pk).status
    statements = session_statements(queries)
    claim, end = statements[0], statements[-1]
    if connection.vendor == "postgresql":
        # the run's commit setting goes in the claim's query, the server's
        # back in the end's: no round trip of their own
        assert claim.startswith(steps.RELAX) and end.startswith(steps.RESTORE)
        # and the last provider call, held back since nothing ran after it,
        # goes in the end's query too (ADR 0018)
        last_call = 'INSERT INTO "sessions_app_providercall"'
        assert end.removeprefix(steps.RESTORE).startswith(last_call)
        claim = claim.removeprefix(steps.RELAX)
        end = end[end.index(f";\nUPDATE {TABLE} SET") + 2 :]
        every = [q["sql"] for q in queries.captured_queries]
        assert sum("synchronous_commit" in sql for sql in every) == 2
    # no read before the claim, which returns the session, and nothing after
    # the run's end
    assert claim.startswith(f"UPDATE {TABLE} SET")
    assert " RETURNING " in claim
    assert not [sql for sql in statements if sql.startswith("SELECT")]
    assert end.startswith(f"UPDATE {TABLE} SET")
    assert "'succeeded'" in end  # the run's end


def test_a_worker_reads_a_revision_once_and_a_first_attempt_no_state(
    settings,
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False
    seed_demo_catalog()
    first, second = (
        services.start_session(prompt_ref="demo/release", params={}) for _ in range(2)
    )
    assembly.catalog._REVISIONS.clear()  # as in a new worker process

    runs = []
    for session in (first, second):
        with CaptureQueriesContext(connection) as queries:
            assert tasks.run_session_task(str(session.pk)) == Status.SUCCEEDED
        runs.append([q["sql"] for q in queries.captured_queries])

    revision = '"tooling_catalogrevision"'
    assert [sum(revision in sql for sql in run) for run in runs] == [1, 0]
    for run in runs:  # the state the run writes, never read: there is none yet
        assert not [
            sql
            for sql in run
            if sql.startswith("SELECT") and "sessions_app_sessionstateentry" in sql
        ]
    assert row(second.pk).state_entries.exists()  # demo/release does write state


def test_run_session_still_returns_the_session_read_back(queued) -> None:
    with CaptureQueriesContext(connection) as queries:
        finished = services.run_session(session_id=queued.pk)

    assert finished.pk == queued.pk and finished.status == Status.SUCCEEDED
    assert session_statements(queries)[-1].startswith("SELECT")


def test_the_task_of_a_paused_run_returns_awaiting_approval(settings) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False
    add_approval()
    session = services.start_session(prompt_ref=PROMPT, params={})

    with CaptureQueriesContext(connection) as queries:
        outcome = tasks.run_session_task(str(session.pk))

    assert outcome == Status.AWAITING_APPROVAL == row(session.pk).status
    assert session_statements(queries)[-1].startswith(f"UPDATE {TABLE} SET")


def test_the_task_of_a_missing_session_logs_and_returns_missing(caplog) -> None:
    missing = str(uuid.uuid4())

    with caplog.at_level(logging.WARNING, logger="sessions_app.tasks"):
        assert tasks.run_session_task(missing) == "missing"

    assert f"Session {missing} does not exist; nothing to run" in caplog.text


def test_the_task_of_a_session_it_cannot_claim_returns_its_status(queued) -> None:
    assert tasks.run_session_task(str(queued.pk)) == Status.SUCCEEDED
    assert tasks.run_session_task(str(queued.pk)) == Status.SUCCEEDED  # redelivered

    other = queued_row()
    assert lifecycle.claim(other.pk) is not None  # a live worker holds it
    assert tasks.run_session_task(str(other.pk)) == Status.RUNNING
    assert row(other.pk).attempts == 1


def test_the_task_of_a_run_cancelled_before_its_claim_returns_cancelled(
    queued,
) -> None:
    services.cancel_session(session_id=queued.pk, user=None)

    assert tasks.run_session_task(str(queued.pk)) == Status.CANCELLED
