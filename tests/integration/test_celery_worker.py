"""Runs on a real Celery worker process over a real broker.

Needs PostgreSQL (the worker and the test share the test database) and a broker
in ``CELERY_TEST_BROKER_URL``. One broker per test process: ``.ci/run`` runs this
module once with Redis and once with RabbitMQ, during its PostgreSQL pass.
The worker helpers are shared with ``test_worker_crash.py`` (``workers.py``).
"""

from __future__ import annotations

import time

import pytest

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
