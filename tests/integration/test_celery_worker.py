"""Runs on a real Celery worker process over a real broker.

Needs PostgreSQL (the worker and the test share the test database) and a broker
in ``CELERY_TEST_BROKER_URL``. One broker per test process: ``.ci/run`` runs this
module once with Redis and once with RabbitMQ, during its PostgreSQL pass.
The worker helpers are shared with ``test_worker_crash.py`` (``workers.py``).
"""

from __future__ import annotations

import time

import pytest
from django.db import connection

from sessions_app import services
from sessions_app.models import AgentSession
from tests.integration.workers import (
    WorkerProcess,
    broker_configured,
    needs_broker,
    require_postgresql,
    worker_env,
)
from tooling.demo import seed_demo_catalog

pytestmark = [pytest.mark.django_db(transaction=True), needs_broker]


@pytest.fixture
def worker(settings):
    require_postgresql()
    with broker_configured(settings):
        process = WorkerProcess(worker_env(WINK_PROVIDER="offline"))
        try:
            yield process
        finally:
            process.cleanup()


def _wait_for(session: AgentSession, worker: WorkerProcess, seconds: float = 60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        session.refresh_from_db()
        if session.status in (
            AgentSession.Status.SUCCEEDED,
            AgentSession.Status.FAILED,
        ):
            return session
        if not worker.alive():
            pytest.fail(f"the worker exited early:\n{worker.output()}")
        time.sleep(0.2)
    worker.stop()
    pytest.fail(f"the worker did not finish the run:\n{worker.output()}")


def test_worker_runs_a_session_started_through_the_broker(worker):
    seed_demo_catalog()

    session = services.start_session(prompt_ref="demo/release", params={})

    assert session.status == AgentSession.Status.QUEUED
    finished = _wait_for(session, worker)
    assert finished.status == AgentSession.Status.SUCCEEDED, finished.error_message
    assert finished.policy_denials.filter(tool_name="deploy").exists()
    assert finished.tool_invocations.filter(name="deploy", success=True).exists()


def _other_backends() -> set[int]:
    """The PostgreSQL backends connected to the test database, but this one."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return {pid for (pid,) in cursor.fetchall()}


def test_worker_keeps_its_database_connection_from_run_to_run(worker):
    # Celery's Django fixup would close it after every task: a new connection,
    # to a server backend with cold caches, for every run (wink_project/celery.py).
    seed_demo_catalog()

    first = _wait_for(
        services.start_session(prompt_ref="demo/release", params={}), worker
    )
    held = _other_backends()
    second = _wait_for(
        services.start_session(prompt_ref="demo/release", params={}), worker
    )

    assert first.status == second.status == AgentSession.Status.SUCCEEDED
    assert held, "the worker closed its connection after the run"
    assert held <= _other_backends(), "the second run used a new connection"
