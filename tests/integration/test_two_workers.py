"""Many runs in flight on the shipped worker (ADR 0022): two worker processes
on one broker, and a worker whose database pool is smaller than its runs.

- Two default workers (threads pool, their database pools, batched leases and
  their own sweeper threads, short leases), ``--hostname`` one and two, take
  ``RUNS`` runs of ``demo/release`` queued at once: every run succeeds, claimed
  once (no live run taken over by the other worker's sweeper); no provider
  response is requested or recorded twice, no tool call recorded twice; each
  run task ran once in all; both workers took runs (the ``worker`` column
  names ``host:pid`` of the process that claimed it).
- One worker with ``WINK_DATABASE_POOL_SIZE=4`` runs ``IN_FLIGHT`` runs at
  once against a provider that answers after ``SLOW_REPLY`` seconds: while
  all of them are in flight, the backends on the test database (all but this
  test's own) never exceed 4: a run holds no connection while it waits for
  the model. Every run succeeds.

Needs PostgreSQL and a broker in ``CELERY_TEST_BROKER_URL``, like the other
worker suites; ``.ci/run`` runs it with Redis and with RabbitMQ.
"""

from __future__ import annotations

import collections
import re
import threading
import time
from collections.abc import Iterable
from typing import Any

import pytest
from django.db import connection

from sessions_app import services
from sessions_app.models import AgentSession, ProviderCall, ToolInvocation
from tests.integration.workers import (
    BROKER,
    OfflineWorkers,
    direct_connection,
    needs_broker,
    offline_workers,
)
from tests.limits import THREAD_SECONDS
from tooling.demo import seed_demo_catalog

pytestmark = [pytest.mark.django_db(transaction=True), needs_broker]

Status = AgentSession.Status
FINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)
PROMPT = "demo/release"
RUNS = 40
REPLY_DELAY = 0.2
THREADS = 8  # each worker's runs in flight
IN_FLIGHT = 30
SLOW_REPLY = 2.0
POOL_SIZE = 4
# Far above the normal time (about 10 s for each test on a quiet machine).
FINISH_SECONDS = 300
RUN_TASK_DONE = re.compile(
    r"Task sessions_app\.run_session\[[^\]]+\] succeeded in [0-9.]+s: '(\w+)'"
)


def _wait_all_final(ids: list[Any], workers: OfflineWorkers) -> float:
    """Until every run ended; the seconds it took."""
    began = time.monotonic()
    while time.monotonic() < began + FINISH_SECONDS:
        if AgentSession.objects.filter(pk__in=ids, status__in=FINAL).count() == len(
            ids
        ):
            return time.monotonic() - began
        for worker in workers.workers:
            if not worker.alive():
                pytest.fail(f"{worker.name} exited early:\n{workers.output()}")
        time.sleep(0.1)
    left = AgentSession.objects.filter(pk__in=ids).exclude(status__in=FINAL)
    pytest.fail(
        f"{left.count()} run(s) did not end within {FINISH_SECONDS}s: "
        f"{list(left.values_list('pk', 'status', 'attempts', 'worker'))}\n"
        f"{workers.output()}"
    )


def _assert_each_succeeded_once(ids: list[Any], workers: OfflineWorkers) -> None:
    sessions = list(AgentSession.objects.filter(pk__in=ids))
    failed = [
        (row.pk, row.status, row.error_phase, row.error_message)
        for row in sessions
        if row.status != Status.SUCCEEDED
    ]
    assert not failed, f"{failed}\n{workers.output()}"
    claimed_again = [(row.pk, row.attempts) for row in sessions if row.attempts != 1]
    assert not claimed_again, f"{claimed_again}\n{workers.output()}"


def _assert_recorded_once(ids: list[Any], workers: OfflineWorkers) -> None:
    """Per run: provider calls turn 1..n, tool calls sequence 1..n, no call
    id twice; over all runs: each response id recorded once and served once."""
    responses = collections.Counter(
        ProviderCall.objects.filter(session__in=ids).values_list(
            "response_id", flat=True
        )
    )
    assert responses and max(responses.values()) == 1, responses.most_common(3)
    for session_id in ids:
        turns = list(
            ProviderCall.objects.filter(session=session_id)
            .order_by("turn")
            .values_list("turn", flat=True)
        )
        assert turns == list(range(1, len(turns) + 1)), (session_id, turns)
        calls = list(
            ToolInvocation.objects.filter(session=session_id)
            .order_by("sequence")
            .values_list("sequence", "call_id")
        )
        assert calls, session_id
        assert [sequence for sequence, _ in calls] == list(range(1, len(calls) + 1))
        twice = [
            call_id
            for call_id, n in collections.Counter(c for _, c in calls).items()
            if n > 1
        ]
        assert not twice, (session_id, twice)
    served = collections.Counter(
        entry.response_id
        for entry in workers.server.served
        if entry.method == "POST" and entry.status == 200
    )
    assert served == responses, "a response was requested twice, or not recorded"


def _run_tasks(workers: OfflineWorkers) -> int:
    """Run tasks the workers finished (a message an earlier test left on the
    broker names a session that no longer exists: its task ends "missing")."""
    return sum(
        status != "missing"
        for worker in workers.workers
        for status in RUN_TASK_DONE.findall(worker.output())
    )


def test_two_workers_share_the_runs_and_run_each_once(settings):
    with offline_workers(settings, delay=REPLY_DELAY) as workers:
        started = [
            workers.start(name, concurrency=THREADS, beat=True)
            for name in ("one", "two")
        ]
        for worker in started:
            worker.wait_ready()
        seed_demo_catalog()
        ids = [
            services.start_session(prompt_ref=PROMPT, params={"service": f"s{n}"}).pk
            for n in range(RUNS)
        ]
        took = _wait_all_final(ids, workers)

        _assert_each_succeeded_once(ids, workers)
        _assert_recorded_once(ids, workers)
        assert _run_tasks(workers) == RUNS, workers.output()
        by_pid = collections.Counter(
            int(name.rsplit(":", 1)[1])
            for name in AgentSession.objects.filter(pk__in=ids).values_list(
                "worker", flat=True
            )
        )
        assert set(by_pid) <= {worker.pid for worker in started}, by_pid
        took_runs = {worker.name: by_pid[worker.pid] for worker in started}
        assert all(took_runs.values()), took_runs
        print(
            f"\n[{BROKER}] {RUNS} runs on two threads workers ({THREADS} each): "
            f"{took_runs}, all succeeded once in {took:.1f}s"
        )


class Backends:
    """Samples, from a connection of its own, the backends on the test
    database (all but this test's own connection and the sampler's) and the
    runs in flight, until stopped."""

    def __init__(self, spare: int, table: str) -> None:
        self.spare = spare
        self.table = table
        self.samples: list[tuple[int, int]] = []  # (backends, running)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Backends:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=THREAD_SECONDS)

    def _run(self) -> None:
        with direct_connection() as own:
            # the sampling period, not a wait on a condition
            while not self._stop.wait(0.05):
                row = own.execute(
                    "SELECT (SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() "
                    "AND pid NOT IN (pg_backend_pid(), %s)), "
                    f"(SELECT count(*) FROM {self.table} WHERE status = %s)",
                    (self.spare, Status.RUNNING),
                ).fetchone()
                assert row is not None
                self.samples.append((int(row[0]), int(row[1])))

    def most(self, samples: Iterable[tuple[int, int]]) -> int:
        return max((backends for backends, _ in samples), default=0)


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def test_runs_in_flight_hold_no_connection_while_they_wait(settings):
    with offline_workers(settings, delay=SLOW_REPLY) as workers:
        worker = workers.start(
            "small-pool",
            concurrency=IN_FLIGHT + 2,
            beat=True,
            # one process on this host, whose pool is all of POOL_SIZE (the
            # settings divide it among WINK_WORKER_PROCESSES, one per CPU)
            env={
                "WINK_DATABASE_POOL_SIZE": str(POOL_SIZE),
                "WINK_WORKER_PROCESSES": "1",
            },
        )
        worker.wait_ready()
        seed_demo_catalog()
        with Backends(_backend_pid(), AgentSession._meta.db_table) as backends:
            ids = [
                services.start_session(
                    prompt_ref=PROMPT, params={"service": f"s{n}"}
                ).pk
                for n in range(IN_FLIGHT)
            ]
            took = _wait_all_final(ids, workers)

        _assert_each_succeeded_once(ids, workers)
        _assert_recorded_once(ids, workers)
        all_in_flight = [s for s in backends.samples if s[1] == IN_FLIGHT]
        # all runs were in flight at once for most of their life (4 turns of
        # SLOW_REPLY s each), and sampled then
        assert len(all_in_flight) >= 10, backends.samples
        assert backends.most(backends.samples) <= POOL_SIZE, backends.samples
        print(
            f"\n[{BROKER}] {IN_FLIGHT} runs in flight on a pool of {POOL_SIZE}: "
            f"at most {backends.most(all_in_flight)} connection(s) while all were "
            f"in flight ({len(all_in_flight)} samples), "
            f"{backends.most(backends.samples)} in all; all succeeded in {took:.1f}s"
        )
