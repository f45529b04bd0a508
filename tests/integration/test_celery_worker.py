"""Runs on a real Celery worker process over a real broker.

Needs PostgreSQL (the worker and the test share the test database) and a broker
in ``CELERY_TEST_BROKER_URL``. One broker per test process: ``.ci/run`` runs this
module once with Redis and once with RabbitMQ, during its PostgreSQL pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from sessions_app import services
from sessions_app.models import AgentSession
from tooling.demo import seed_demo_catalog
from wink_project.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]
BROKER = os.environ.get("CELERY_TEST_BROKER_URL", "")

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not BROKER, reason="CELERY_TEST_BROKER_URL is not set: worker tests skipped"
    ),
]


@pytest.fixture
def worker(settings):
    if connection.vendor != "postgresql":
        pytest.skip("the worker needs a shared PostgreSQL database")
    broker = BROKER
    settings.CELERY_BROKER_URL = broker
    settings.CELERY_TASK_ALWAYS_EAGER = False
    celery_app.conf.update(broker_url=broker, task_always_eager=False)
    db = connection.settings_dict
    database_url = (
        f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
        f"/{db['NAME']}"
    )
    env = {
        **os.environ,
        "DEBUG": "1",
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": broker,
        "WINK_PROVIDER": "offline",
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "wink_project",
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "--loglevel=WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        celery_app.close()
        celery_app.conf.update(task_always_eager=True)


def _wait_for(session: AgentSession, process: subprocess.Popen, seconds: float = 60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        session.refresh_from_db()
        if session.status in (
            AgentSession.Status.SUCCEEDED,
            AgentSession.Status.FAILED,
        ):
            return session
        if process.poll() is not None:
            pytest.fail(f"the worker exited early:\n{process.stdout.read()}")
        time.sleep(0.2)
    process.terminate()
    pytest.fail(f"the worker did not finish the run:\n{process.communicate()[0]}")


def test_worker_runs_a_session_started_through_the_broker(worker):
    seed_demo_catalog()

    session = services.start_session(prompt_ref="demo/release", params={})

    assert session.status == AgentSession.Status.QUEUED
    finished = _wait_for(session, worker)
    assert finished.status == AgentSession.Status.SUCCEEDED, finished.error_message
    assert finished.policy_denials.filter(tool_name="deploy").exists()
    assert finished.tool_invocations.filter(name="deploy", success=True).exists()
