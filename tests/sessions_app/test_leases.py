"""One lease renewal per worker process (``runs/store/leases.py``, ADR 0022).

A worker's runs register their claims with the process's ``Renewer``; one
round renews every lease in one ``UPDATE``, marks the claims it did not renew
(cancelled, taken over, ended) so that the run's own heartbeat stops it
without a query of its own, and ends a run still busy past its deadline and
grace (a handler that never returns: no Celery pool but prefork kills it),
whose later writes are then refused. The rounds are called directly here;
the thread that calls them is started by ``register`` (checked without it
touching the database).
"""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app import services
from sessions_app.models import AgentSession, SessionStateEntry
from sessions_app.runs import store
from sessions_app.runs.store import Claim, LeaseLost, RunCancelled, leases
from tests.limits import THREAD_SECONDS
from tests.sessions_app.factories import AgentSessionFactory
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db

Status = AgentSession.Status


def claimed(**fields: Any) -> Claim:
    session = AgentSessionFactory.create(
        status=Status.QUEUED, deadline_seconds=900, output_text="", **fields
    )
    claim = store.claim(session.pk)
    assert claim is not None
    return claim


def lease_of(claim: Claim) -> Any:
    return AgentSession.objects.values_list("lease_expires_at", flat=True).get(
        pk=claim.session_id
    )


def age(claim: Claim, seconds: float) -> None:
    """As if the claim's lease had last been set ``seconds`` ago."""
    claim._renewed -= seconds
    claim._renewed_wall -= seconds


@pytest.fixture
def renewer() -> leases.Renewer:
    return leases.Renewer()


def test_one_round_renews_every_lease_in_one_statement(renewer) -> None:
    claims = [claimed() for _ in range(3)]
    AgentSession.objects.update(lease_expires_at=timezone.now())
    for claim in claims:
        renewer.track(claim)
        age(claim, store.lease_seconds())  # a commit now would be fenced

    with CaptureQueriesContext(connection) as queries:
        assert renewer.renew() == 3

    assert len(queries.captured_queries) == 1
    assert queries.captured_queries[0]["sql"].startswith("UPDATE")
    soon = timezone.now() + timedelta(seconds=store.lease_seconds() - 5)
    assert all(lease_of(claim) > soon for claim in claims)
    assert not any(claim.stopped for claim in claims)
    assert not any(claim.fence_due() for claim in claims)  # renewed just now


def test_a_cancelled_and_a_taken_over_claim_are_stopped_and_their_runs_told_why(
    renewer,
) -> None:
    kept, cancelled, taken = claimed(), claimed(), claimed()
    for claim in (kept, cancelled, taken):
        claim.batched = True
        renewer.track(claim)
    AgentSession.objects.filter(pk=cancelled.session_id).update(
        cancel_requested_at=timezone.now()
    )
    AgentSession.objects.filter(pk=taken.session_id).update(claim_token=uuid.uuid4())

    assert renewer.renew() == 1

    assert (kept.stopped, cancelled.stopped, taken.stopped) == (False, True, True)
    with CaptureQueriesContext(connection) as queries:
        kept.beat()  # nothing to check: no query
    assert queries.captured_queries == []
    with pytest.raises(RunCancelled):
        cancelled.beat()
    with pytest.raises(LeaseLost):
        taken.beat()
    with CaptureQueriesContext(connection) as queries:
        assert renewer.renew() == 1  # the stopped claims are not asked again
    assert len(queries.captured_queries) == 1


# the ending is written on a thread of its own, which sees what the test wrote
@pytest.mark.django_db(transaction=True)
def test_a_run_busy_past_its_deadline_is_ended_and_its_late_writes_refused(
    renewer, settings, caplog
) -> None:
    settings.WINK_RUN_TIME_LIMIT_GRACE = 30
    hung, fine = claimed(), claimed()
    past = timezone.now() - timedelta(seconds=31)
    AgentSession.objects.filter(pk=hung.session_id).update(deadline_at=past)
    hung.session.deadline_at = past
    renewer.track(hung)
    renewer.track(fine)
    run_store = store.RunStore(hung.session, claim=hung)

    assert renewer.renew() == 1
    assert hung.stopped  # at once: its commits are fenced from now on
    assert renewer.ending is not None
    renewer.ending.join(THREAD_SECONDS)
    assert not renewer.ending.is_alive()

    ended = AgentSession.objects.get(pk=hung.session_id)
    assert ended.status == Status.FAILED
    assert ended.error_phase == "deadline"
    assert ended.error_message == leases.OVERDUE_MESSAGE
    assert hung.stopped and len(renewer) == 1 and renewer.overdue == 1
    assert "ended past its deadline" in caplog.text
    # the handler returns at last: what its run writes is refused, even
    # before half the lease has passed (when a commit is otherwise unfenced)
    assert not hung.fence_due()
    with pytest.raises(LeaseLost):
        run_store.put_state("late", "json", {"x": 1})
    assert not SessionStateEntry.objects.filter(session_id=hung.session_id).exists()
    assert AgentSession.objects.get(pk=fine.session_id).status == Status.RUNNING


@pytest.mark.django_db(transaction=True)  # a round on a thread of its own
def test_an_ending_that_waits_for_a_connection_holds_up_no_lease(
    renewer, settings, monkeypatch
) -> None:
    """The overdue ending needs a connection of the runs' pool, which may be
    exhausted (by the very handlers that hang, holding theirs) for up to
    ``WINK_DATABASE_POOL_TIMEOUT``, longer than a lease: the rounds go on
    meanwhile, or every other run of the process loses its lease."""
    settings.WINK_RUN_TIME_LIMIT_GRACE = 30
    hung, fine = claimed(), claimed()
    hung.session.deadline_at = timezone.now() - timedelta(seconds=31)
    renewer.track(hung)
    renewer.track(fine)
    pool_free = threading.Event()
    waiting = threading.Event()

    def finish(*args: Any, **kwargs: Any) -> None:
        waiting.set()
        assert pool_free.wait(THREAD_SECONDS)  # as for a connection of the pool

    monkeypatch.setattr(leases, "finish", finish)
    rounds: list[int] = []

    def one_round() -> None:
        try:
            rounds.append(renewer.renew())
        finally:
            connections.close_all()  # this thread's

    thread = threading.Thread(target=one_round)
    try:
        thread.start()
        assert waiting.wait(THREAD_SECONDS)
        thread.join(THREAD_SECONDS / 2)
        assert not thread.is_alive(), "the round waits for the overdue ending"
        assert rounds == [1] and hung.stopped
        age(fine, store.lease_seconds())
        assert renewer.renew() == 1  # the next round, while the ending waits
        assert not fine.fence_due()
    finally:
        pool_free.set()
        thread.join(THREAD_SECONDS)
    assert renewer.ending is not None
    renewer.ending.join(THREAD_SECONDS)
    assert renewer.overdue == 1


def test_a_run_within_its_grace_is_left_running(renewer, settings) -> None:
    settings.WINK_RUN_TIME_LIMIT_GRACE = 30
    claim = claimed()
    almost = timezone.now() - timedelta(seconds=20)
    claim.session.deadline_at = almost
    renewer.track(claim)

    assert renewer.renew() == 1
    assert not claim.stopped
    assert AgentSession.objects.get(pk=claim.session_id).status == Status.RUNNING


def test_a_round_that_cannot_reach_the_database_marks_nothing(
    renewer, monkeypatch, caplog
) -> None:
    claim = claimed()
    renewer.track(claim)
    age(claim, store.lease_seconds())

    def broken(*args: Any, **kwargs: Any) -> int:
        from django.db import OperationalError

        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr("django.db.models.query.QuerySet.update", broken)
    assert renewer.renew() == 0
    assert not claim.stopped  # not renewed, not lost: the fence still applies
    assert claim.fence_due()
    assert "Could not renew the leases of 1 run(s)" in caplog.text


def test_register_batches_a_worker_claim_and_starts_one_thread(
    settings, monkeypatch
) -> None:
    started = threading.Event()
    monkeypatch.setattr(leases.Renewer, "_loop", lambda self: started.set())
    monkeypatch.setattr(leases, "renewer", leases.Renewer())
    settings.WINK_RUN_BATCHED_LEASES = False
    alone = claimed()
    leases.register(alone)
    assert not alone.batched and len(leases.renewer) == 0

    settings.WINK_RUN_BATCHED_LEASES = True
    first, second = claimed(), claimed()
    leases.register(first)
    leases.register(second)
    assert first.batched and second.batched and len(leases.renewer) == 2
    assert started.wait(10)
    leases.unregister(first)
    assert len(leases.renewer) == 1


def test_a_run_with_batched_leases_runs_and_leaves_no_claim_behind(
    settings, monkeypatch
) -> None:
    monkeypatch.setattr(leases.Renewer, "_loop", lambda self: None)
    monkeypatch.setattr(leases, "renewer", leases.Renewer())
    settings.WINK_RUN_BATCHED_LEASES = True
    seed_demo_catalog()
    beats: list[bool] = []
    original = Claim.beat

    def beat(self: Claim) -> None:
        beats.append(self.batched)
        original(self)

    monkeypatch.setattr(Claim, "beat", beat)

    session = services.start_session(prompt_ref="demo/release", params={})

    assert session.status == Status.SUCCEEDED
    assert beats and all(beats)  # every heartbeat of the run was batched
    assert len(leases.renewer) == 0
