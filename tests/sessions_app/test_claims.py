"""A worker's claim, pause and end (``sessions_app.runs.store``).

A claim is one conditional update (``QuerySet.update()``) of a queued session
or a running one whose lease expired, with attempts left and no cancel
request; it sets the deadline from the row's own columns, then reads the
session back (or, with ``new=``, sets the columns of the session this process
just stored in memory). A pause and an end are each one transaction, durable
on PostgreSQL (``SET LOCAL synchronous_commit TO on``), and change nothing
for a worker that lost its claim. The concurrent claims are PostgreSQL's
(threads, each its own connection).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app import services, tasks
from sessions_app.models import AgentSession, ApprovalRequest
from sessions_app.runs import lifecycle, store
from sessions_app.runs.store import Claim, LeaseLost, RunCancelled
from tests.sessions_app.approval_setup import PROMPT, add_approval
from tests.sessions_app.factories import AgentSessionFactory
from tooling import assembly
from tooling.demo import seed_demo_catalog
from tooling.models import generation_token

pytestmark = pytest.mark.django_db

Status = AgentSession.Status
TABLE = '"sessions_app_agentsession"'
DURABLE = "SET LOCAL synchronous_commit TO on"


def queued_row(deadline_seconds: int = 900, **fields: Any) -> AgentSession:
    fields.setdefault("status", Status.QUEUED)
    return AgentSessionFactory.create(
        deadline_seconds=deadline_seconds, output_text="", **fields
    )


def row(session_id: Any) -> AgentSession:
    return AgentSession.objects.get(pk=session_id)


def columns(session: AgentSession) -> dict[str, Any]:
    return {
        field.attname: getattr(session, field.attname)
        for field in AgentSession._meta.concrete_fields
    }


def expire_lease(session_id: Any, now: datetime) -> None:
    AgentSession.objects.filter(pk=session_id).update(
        lease_expires_at=now - timedelta(seconds=1)
    )


def claimed(session_id: Any, **kwargs: Any) -> Claim:
    claim = store.claim(session_id, **kwargs)
    assert claim is not None
    return claim


def approval_of(session: AgentSession) -> ApprovalRequest:
    """An approval request a run pauses on (not stored: the pause stores it)."""
    now = timezone.now()
    return ApprovalRequest(
        session=session,
        tool_name="deploy",
        call_id="call_1",
        reason="deploy needs a human yes.",
        expires_at=now + timedelta(hours=1),
        event_id=str(uuid.uuid4()),
    )


def paused_then_queued(now: datetime, *, ran_for: int = 100) -> AgentSession:
    """A run claimed at ``now - ran_for`` seconds that paused for a decision
    at ``now`` and was queued again (as a decision leaves it)."""
    session = queued_row(deadline_seconds=900)
    claim = claimed(session.pk, now=now - timedelta(seconds=ran_for))
    approval = approval_of(claim.session)
    store.pause(claim, approval, now=now)
    ApprovalRequest.objects.filter(pk=approval.pk).update(
        status=ApprovalRequest.Status.APPROVED, decided_at=now
    )
    assert lifecycle.requeue(session.pk, now=now)
    paused = row(session.pk)
    assert paused.status == Status.QUEUED
    assert paused.deadline_at is None
    assert paused.deadline_left_seconds == 900 - ran_for
    return paused


def statements(queries: CaptureQueriesContext) -> list[str]:
    """What a block sent, without SQLite's ``BEGIN`` (a transaction's start
    under autocommit) and the test case's savepoints."""
    return [
        q["sql"]
        for q in queries.captured_queries
        if not q["sql"].startswith("BEGIN") and "SAVEPOINT" not in q["sql"]
    ]


# -- (a) which sessions a claim takes ----------------------------------------------


def test_a_queued_session_is_claimed() -> None:
    session = queued_row()
    now = timezone.now()

    claim = claimed(session.pk, now=now)

    stored = row(session.pk)
    assert stored.status == Status.RUNNING
    assert stored.claim_token == claim.token
    assert stored.attempts == 1
    assert stored.lease_expires_at == now + timedelta(seconds=store.lease_seconds())
    assert stored.worker == store.worker_name()


def test_a_running_session_is_claimed_only_once_its_lease_expired() -> None:
    session = queued_row()
    first = claimed(session.pk)
    assert store.claim(session.pk) is None  # its worker's lease is live

    now = timezone.now()
    expire_lease(session.pk, now)
    second = claimed(session.pk, now=now)

    assert second.token != first.token
    stored = row(session.pk)
    assert (stored.attempts, stored.claim_token) == (2, second.token)


def test_a_run_out_of_attempts_is_not_claimed(settings) -> None:
    settings.WINK_RUN_MAX_ATTEMPTS = 2
    session = queued_row()
    claimed(session.pk)
    now = timezone.now()
    expire_lease(session.pk, now)
    claimed(session.pk, now=now)
    expire_lease(session.pk, now)

    assert store.claim(session.pk, now=now) is None

    stored = row(session.pk)
    assert (stored.status, stored.attempts) == (Status.RUNNING, 2)


@pytest.mark.parametrize("status", [Status.QUEUED, Status.RUNNING])
def test_a_run_someone_asked_to_cancel_is_not_claimed(status: str) -> None:
    now = timezone.now()
    session = queued_row(
        status=status,
        lease_expires_at=now - timedelta(seconds=1),
        cancel_requested_at=now,
    )

    assert store.claim(session.pk, now=now) is None

    assert row(session.pk).attempts == 0


@pytest.mark.parametrize(
    "status", [Status.AWAITING_APPROVAL, Status.SUCCEEDED, Status.FAILED]
)
def test_a_waiting_or_finished_run_is_not_claimed(status: str) -> None:
    session = queued_row(status=status)

    with CaptureQueriesContext(connection) as queries:
        assert store.claim(session.pk) is None

    (update,) = statements(queries)
    assert update.startswith(f"UPDATE {TABLE} SET")
    assert row(session.pk).status == status


def test_a_missing_session_is_one_update_and_none() -> None:
    with CaptureQueriesContext(connection) as queries:
        assert store.claim(uuid.uuid4()) is None

    (update,) = statements(queries)
    assert update.startswith(f"UPDATE {TABLE} SET")


# -- (b) the statements of a claim and the session it gives ------------------------


def test_a_claim_is_one_update_then_the_session_read_back() -> None:
    session = queued_row(params={"text": "50% of '%s'", "n": [1, 2.5, None]})

    with CaptureQueriesContext(connection) as queries:
        claim = claimed(session.pk)

    update, read = statements(queries)
    assert update.startswith(f"UPDATE {TABLE} SET") and "RETURNING" not in update
    assert read.startswith("SELECT") and f"FROM {TABLE}" in read
    # the session as the database holds it, with the catalog's generation
    stored = AgentSession.objects.annotate(catalog_token=generation_token()).get(
        pk=session.pk
    )
    assert columns(claim.session) == columns(stored)
    token = getattr(claim.session, "catalog_token", None)
    assert token == getattr(stored, "catalog_token", None) is not None
    assert claim.session.claim_token == claim.token
    assert not claim.session._state.adding


def test_a_claim_of_the_session_just_stored_sets_it_in_memory() -> None:
    new = queued_row(deadline_seconds=600)
    now = timezone.now()

    with CaptureQueriesContext(connection) as queries:
        claim = claimed(new.pk, now=now, new=new)

    (update,) = statements(queries)
    assert update.startswith(f"UPDATE {TABLE} SET")
    assert claim.session is new
    # what the process holds is what the database holds
    assert columns(new) == columns(row(new.pk))
    assert new.status == Status.RUNNING and new.claim_token == claim.token
    assert new.attempts == 1
    assert new.started_at == now
    assert new.deadline_at == now + timedelta(seconds=600)


def test_a_claim_of_the_session_just_stored_fails_once_another_claimed_it() -> None:
    """A sweeper (or a redelivered message) ran it first: the in-memory
    session is stale, so nothing is claimed."""
    new = queued_row()
    now = timezone.now()
    claimed(new.pk, now=now)
    expire_lease(new.pk, now)

    assert store.claim(new.pk, now=now, new=new) is None

    assert row(new.pk).attempts == 1
    assert new.status == Status.QUEUED  # untouched


def test_a_claim_of_a_session_just_stored_that_paused_since_fails() -> None:
    """It paused and was queued again meanwhile: its whole deadline must not
    be given again."""
    paused = paused_then_queued(timezone.now())
    new = AgentSession.objects.get(pk=paused.pk)
    new.deadline_left_seconds = None  # as the process stored it

    assert store.claim(paused.pk, new=new) is None

    assert row(paused.pk).status == Status.QUEUED


# -- (c) the deadline the claim sets -----------------------------------------------


def test_the_first_claim_sets_the_deadline_from_now() -> None:
    session = queued_row(deadline_seconds=900)
    now = timezone.now()

    claim = claimed(session.pk, now=now)

    stored = row(session.pk)
    assert stored.deadline_at == now + timedelta(seconds=900)
    assert stored.started_at == now
    assert stored.deadline_left_seconds is None
    assert claim.session.deadline_at == stored.deadline_at


def test_a_session_without_a_deadline_gets_one_second() -> None:
    session = queued_row(deadline_seconds=0)
    now = timezone.now()

    claimed(session.pk, now=now)

    assert row(session.pk).deadline_at == now + timedelta(seconds=1)


def test_a_later_claim_keeps_the_deadline_and_the_start() -> None:
    session = queued_row(deadline_seconds=900)
    first = timezone.now() - timedelta(seconds=300)
    claimed(session.pk, now=first)
    later = timezone.now()
    expire_lease(session.pk, later)

    claim = claimed(session.pk, now=later)

    stored = row(session.pk)
    assert stored.attempts == 2
    assert stored.deadline_at == first + timedelta(seconds=900)
    assert stored.started_at == first
    assert claim.session.deadline_at == stored.deadline_at


def test_the_claim_that_resumes_a_paused_run_gives_it_the_time_it_had_left() -> None:
    paused_at = timezone.now() - timedelta(seconds=600)  # the decision took 10 min
    session = paused_then_queued(paused_at, ran_for=100)
    now = timezone.now()

    claim = claimed(session.pk, now=now)

    resumed = row(session.pk)
    assert resumed.status == Status.RUNNING
    assert resumed.deadline_at == now + timedelta(seconds=800)
    assert resumed.deadline_left_seconds is None
    assert resumed.started_at == paused_at - timedelta(seconds=100)  # kept
    assert resumed.attempts == 1  # a pause starts them again
    assert claim.session.deadline_at == resumed.deadline_at


def test_a_paused_run_with_no_time_left_resumes_with_its_deadline_now() -> None:
    session = paused_then_queued(timezone.now(), ran_for=900)
    assert session.deadline_left_seconds == 0
    now = timezone.now()

    claimed(session.pk, now=now)

    assert row(session.pk).deadline_at == now


def test_a_second_claim_of_a_resumed_run_fails_and_keeps_its_deadline() -> None:
    session = paused_then_queued(timezone.now())
    now = timezone.now()
    claimed(session.pk, now=now)

    assert store.claim(session.pk, now=now + timedelta(seconds=5)) is None

    resumed = row(session.pk)
    assert resumed.attempts == 1
    assert resumed.deadline_at == now + timedelta(seconds=800)


# -- (d) pause and finish ----------------------------------------------------------


def test_a_pause_stores_the_approval_and_gives_up_the_claim() -> None:
    session = queued_row(deadline_seconds=900)
    now = timezone.now()
    claim = claimed(session.pk, now=now - timedelta(seconds=30))
    approval = approval_of(claim.session)

    store.pause(claim, approval, now=now)

    paused = row(session.pk)
    assert paused.status == Status.AWAITING_APPROVAL
    assert (paused.claim_token, paused.lease_expires_at) == (None, None)
    assert (paused.attempts, paused.pauses) == (0, 1)
    assert (paused.deadline_at, paused.deadline_left_seconds) == (None, 870)
    assert ApprovalRequest.objects.get(session=session).pk == approval.pk
    assert claim.ended == Status.AWAITING_APPROVAL
    assert store.claim(session.pk) is None  # a waiting run is not claimable


def test_a_pause_of_a_cancelled_run_raises_and_stores_no_approval() -> None:
    session = queued_row()
    claim = claimed(session.pk)
    assert lifecycle.request_cancel(session.pk, user=None, now=timezone.now())
    before = columns(row(session.pk))

    with pytest.raises(RunCancelled):
        store.pause(claim, approval_of(claim.session))

    assert not ApprovalRequest.objects.exists()
    assert columns(row(session.pk)) == before
    assert claim.ended is None


def test_a_pause_by_a_worker_that_lost_its_lease_raises_and_stores_nothing() -> None:
    session = queued_row()
    claim = claimed(session.pk)
    now = timezone.now()
    expire_lease(session.pk, now)
    claimed(session.pk, now=now)  # another worker
    before = columns(row(session.pk))

    with pytest.raises(LeaseLost):
        store.pause(claim, approval_of(claim.session))

    assert not ApprovalRequest.objects.exists()
    assert columns(row(session.pk)) == before


def test_finish_ends_the_claimed_run() -> None:
    session = queued_row()
    claim = claimed(session.pk)

    store.finish(claim, status=Status.SUCCEEDED, output_text="Done.")

    ended = row(session.pk)
    assert (ended.status, ended.output_text) == (Status.SUCCEEDED, "Done.")
    assert ended.finished_at is not None and ended.lease_expires_at is None
    assert claim.ended == Status.SUCCEEDED


def test_a_finish_by_a_worker_that_lost_its_lease_raises_and_writes_nothing() -> None:
    session = queued_row()
    first = claimed(session.pk)
    now = timezone.now()
    expire_lease(session.pk, now)
    second = claimed(session.pk, now=now)
    before = columns(row(session.pk))

    with pytest.raises(LeaseLost):
        store.finish(first, status=Status.FAILED, phase="internal", message="lost")

    assert columns(row(session.pk)) == before
    assert first.ended is None
    store.finish(second, status=Status.SUCCEEDED)  # the holder still can
    assert row(session.pk).status == Status.SUCCEEDED


@pytest.fixture
def transactions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """The statements of each transaction committed meanwhile (a statement
    outside any transaction is one of its own), in autocommit (as a worker)."""
    done: list[list[str]] = []
    open_: list[str] = []
    commit = connection.commit

    def committing() -> None:
        commit()
        done.append(list(open_))
        open_.clear()

    def noting(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not sql.startswith("BEGIN"):
            if connection.get_autocommit():
                done.append([sql])
            else:
                open_.append(sql)
        return execute(sql, params, many, context)

    monkeypatch.setattr(connection, "commit", committing)
    with connection.execute_wrapper(noting):
        yield done
    assert not open_, open_


def durable_statements(sqls: list[str]) -> list[str]:
    return [sql for sql in sqls if "synchronous" in sql.lower()]


def one_durable_transaction(sqls: list[str]) -> list[str]:
    """The statements of a pause's or an end's transaction after the
    setting that makes it durable (on PostgreSQL; none on SQLite)."""
    if connection.vendor == "postgresql":
        assert sqls[0] == DURABLE
        assert durable_statements(sqls) == [DURABLE]
        return sqls[1:]
    assert durable_statements(sqls) == []
    return sqls


@pytest.mark.django_db(transaction=True)
def test_a_pause_is_one_durable_transaction(transactions) -> None:
    session = queued_row()
    claim = claimed(session.pk)
    approval = approval_of(claim.session)
    transactions.clear()

    store.pause(claim, approval, summed={})

    (pause,) = transactions
    insert, update = one_durable_transaction(pause)
    assert insert.startswith('INSERT INTO "sessions_app_approvalrequest"')
    assert update.startswith(f"UPDATE {TABLE} SET")


@pytest.mark.django_db(transaction=True)
def test_a_finish_is_one_durable_transaction(transactions) -> None:
    session = queued_row()
    claim = claimed(session.pk)
    transactions.clear()

    store.finish(claim, status=Status.SUCCEEDED)

    (end,) = transactions
    # the totals, the end, then the session's search text (its tool calls
    # read, the text written)
    *sums, update, calls, text = one_durable_transaction(end)
    assert all(sql.startswith("SELECT") for sql in sums)
    assert update.startswith(f"UPDATE {TABLE} SET")
    assert calls.startswith("SELECT") and "sessions_app_toolinvocation" in calls
    assert text.startswith('INSERT INTO "sessions_app_sessionsearchtext"')
    assert "ON CONFLICT" in text  # over the text written with the session
    assert row(session.pk).status == Status.SUCCEEDED


@pytest.mark.django_db(transaction=True)
def test_a_lost_finish_rolls_its_transaction_back(transactions) -> None:
    session = queued_row()
    first = claimed(session.pk)
    now = timezone.now()
    expire_lease(session.pk, now)
    claimed(session.pk, now=now)
    transactions.clear()

    with pytest.raises(LeaseLost):
        store.finish(first, status=Status.SUCCEEDED, summed={})

    # the transaction committed nothing (its update matched no row)
    (end,) = transactions
    (update,) = one_durable_transaction(end)
    assert update.startswith(f"UPDATE {TABLE} SET")
    assert row(session.pk).status == Status.RUNNING


@pytest.mark.django_db(transaction=True)
def test_a_claim_commits_alone_and_is_not_durable(transactions) -> None:
    session = queued_row()
    transactions.clear()

    claimed(session.pk)

    assert [len(sqls) for sqls in transactions] == [1, 1]  # autocommit
    assert not durable_statements([sql for sqls in transactions for sql in sqls])


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
                results["a"] = store.claim(session_id, now=a_now)
                a_claimed.set()
                assert release.wait(timeout=20)
        except BaseException as error:  # reported by the test
            errors.append(error)
            a_claimed.set()
        finally:
            connection.close()

    def worker_b() -> None:
        try:
            results["b"] = store.claim(session_id, now=a_now + timedelta(seconds=1))
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
    stored = row(session.pk)
    assert (stored.attempts, stored.claim_token) == (1, first.token)
    assert stored.deadline_at == now + timedelta(seconds=900)


@pytest.mark.django_db(transaction=True)
def test_two_workers_resuming_one_paused_run_at_once_give_it_its_time_once() -> None:
    """B's update waits while A resumes the run; it then sees the row A left
    (running, its time left cleared) and claims nothing."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's (run with DATABASE_URL=postgres://...)")
    session = paused_then_queued(timezone.now(), ran_for=100)

    first, second, now = _claim_while_another_holds_the_row(session.pk)

    assert first is not None and second is None
    resumed = row(session.pk)
    assert (resumed.attempts, resumed.claim_token) == (1, first.token)
    assert resumed.deadline_at == now + timedelta(seconds=800)
    assert resumed.deadline_left_seconds is None


# -- (e) the worker's task ---------------------------------------------------------


@pytest.fixture
def queued(settings: Any) -> AgentSession:
    """A session started with a broker: recorded, queued, not run."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    seed_demo_catalog()
    return services.start_session(prompt_ref="demo/release", params={})


def session_statements(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if TABLE in q["sql"]]


def test_the_task_claims_reads_once_and_does_not_read_the_session_after_its_end(
    queued,
) -> None:
    with CaptureQueriesContext(connection) as queries:
        outcome = tasks.run_session_task(str(queued.pk))

    assert outcome == Status.SUCCEEDED == row(queued.pk).status
    sqls = session_statements(queries)
    claim, read, end = sqls[0], sqls[1], sqls[-1]
    assert claim.startswith(f"UPDATE {TABLE} SET")
    assert read.startswith("SELECT") and f"FROM {TABLE}" in read
    assert end.startswith(f"UPDATE {TABLE} SET") and "'succeeded'" in end
    # the session is read once, by the claim
    assert [sql for sql in sqls if sql.startswith("SELECT")] == [read]
    every = [q["sql"] for q in queries.captured_queries]
    expected = [DURABLE] if connection.vendor == "postgresql" else []
    assert durable_statements(every) == expected  # the end's only


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
    claimed(other.pk)  # a live worker holds it
    assert tasks.run_session_task(str(other.pk)) == Status.RUNNING
    assert row(other.pk).attempts == 1


def test_the_task_of_a_run_cancelled_before_its_claim_returns_cancelled(
    queued,
) -> None:
    services.cancel_session(session_id=queued.pk, user=None)

    assert tasks.run_session_task(str(queued.pk)) == Status.CANCELLED
