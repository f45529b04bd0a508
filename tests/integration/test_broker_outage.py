"""The broker goes away and comes back, with a real worker over a real broker
(issue #24, items 5 and 6).

The web side (this test process: the API and the sweep command) reaches the
broker through a ``Forwarder`` the test closes (every connection refused or
cut, as a stopped broker's) and opens again; the worker consumes from the
broker directly. While it is down a client posts a run: the answer is 202 with
the session (its failed send recorded), the sweep command says the broker is
unreachable and exits 0, and nothing runs. Once it is back, the next sweep
sends the session and the worker runs it exactly once: one claim, each tool
call and provider call recorded once.

A second test lets a real worker finish a run between a sweep's read and its
update of that run (item 6): the sweep leaves the finished run alone (on
PostgreSQL its trigger refused the old update, and the sweep died) and
re-dispatches the rest.

Needs PostgreSQL and a broker in ``CELERY_TEST_BROKER_URL``, like the other
worker tests; ``.ci/run`` runs this module with Redis and with RabbitMQ.
"""

from __future__ import annotations

import collections
import re
import time
from io import StringIO
from typing import Any

import pytest
from celery import current_app
from django.contrib.auth.models import Permission
from django.core.management import call_command
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import AgentSession, ProviderCall, ToolInvocation
from sessions_app.runs import dispatch
from tests.integration.forwarder import Forwarder
from tests.integration.workers import (
    BROKER,
    OfflineWorkers,
    needs_broker,
    offline_workers,
)
from tests.sessions_app.brokers import broker_at
from tests.sessions_app.factories import UserFactory
from tests.sessions_app.sweeps import before_mark, due_session
from tooling.demo import seed_demo_catalog

pytestmark = [pytest.mark.django_db(transaction=True), needs_broker]

Status = AgentSession.Status
FINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)
PROMPT = "demo/release"
# a run task's end as the worker logs it, with the status it left the session in
RUN_TASK_DONE = re.compile(
    r"Task sessions_app\.run_session\[[^\]]+\] succeeded in [0-9.]+s: '(\w+)'"
)


def _wait_final(
    session_id: Any, workers: OfflineWorkers, seconds: float = 60
) -> AgentSession:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        session = AgentSession.objects.get(pk=session_id)
        if session.status in FINAL:
            return session
        time.sleep(0.1)
    pytest.fail(f"session {session_id} did not finish:\n{workers.output()}")


def _assert_recorded_once(session: AgentSession) -> None:
    calls = collections.Counter(
        ToolInvocation.objects.filter(session=session).values_list("call_id", flat=True)
    )
    assert calls and max(calls.values()) == 1, calls
    turns = list(
        ProviderCall.objects.filter(session=session)
        .order_by("turn")
        .values_list("turn", flat=True)
    )
    assert turns == list(range(1, len(turns) + 1)), turns


@pytest.fixture
def forwarder():
    forwarder = Forwarder(BROKER).open()
    try:
        yield forwarder
    finally:
        forwarder.close()


def test_a_run_posted_while_the_broker_is_down_runs_once_when_it_is_back(
    settings, forwarder
):
    with offline_workers(settings, delay=0.05, broker=forwarder.url) as workers:
        worker = workers.start("outage")
        seed_demo_catalog()
        user = UserFactory.create(username="runner")
        user.user_permissions.add(Permission.objects.get(codename="start_session"))
        client = APIClient()
        client.force_authenticate(user)

        forwarder.close()  # the broker is down
        began = time.monotonic()
        response = client.post(
            "/api/sessions/", {"prompt": PROMPT, "params": {}}, format="json"
        )
        answered = time.monotonic() - began

        assert response.status_code == 202, response.content
        body = response.json()
        session_id = body["id"]
        assert body["status"] == "queued"
        assert body["dispatch_error"].startswith("The broker could not be reached")
        assert answered < 10, f"the start waited {answered:.1f}s for the broker"

        down = StringIO()
        call_command("sweep_sessions", stdout=down)  # exits 0
        assert (
            "Broker unreachable: 1 session(s) left queued for the next sweep."
            in down.getvalue()
        )
        session = AgentSession.objects.get(pk=session_id)
        assert session.status == Status.QUEUED and session.attempts == 0
        assert session.dispatch_failures == 2  # the start's send and the sweep's

        forwarder.open()  # the broker is back
        up = StringIO()
        call_command("sweep_sessions", stdout=up)
        assert f"Re-dispatched {session_id}" in up.getvalue()

        finished = _wait_final(session_id, workers)
        assert finished.status == Status.SUCCEEDED, finished.error_message
        assert finished.attempts == 1  # claimed once: one run
        assert finished.dispatch_error == ""
        assert AgentSession.objects.count() == 1  # nobody had to post again
        _assert_recorded_once(finished)
        again = StringIO()
        call_command("sweep_sessions", stdout=again)
        assert "Re-dispatched" not in again.getvalue()
        # one run task (a message an earlier test left on the broker names a
        # session that no longer exists: its task ends "missing")
        runs = [
            status
            for status in RUN_TASK_DONE.findall(worker.output())
            if status != "missing"
        ]
        assert runs == [Status.SUCCEEDED], worker.output()


def test_a_run_a_worker_finishes_during_a_sweep_is_left_alone(settings):
    """The sweep read two sessions to re-dispatch (their messages were lost);
    before its update of the first, the test sends that one to the worker and
    waits until the worker finished it."""
    with offline_workers(settings, delay=0.02) as workers:
        workers.start("race")
        seed_demo_catalog()
        with broker_at(settings, "memory://"):  # sent where no worker looks: lost
            racing, other = due_session("queued"), due_session("queued")

        def finished_by_the_worker(session_id: Any) -> None:
            current_app.send_task(dispatch.RUN_SESSION_TASK, args=[str(session_id)])
            _wait_final(session_id, workers)

        with before_mark(racing.pk, finished_by_the_worker):
            report = services.sweep_stale_sessions()

        assert report.errors == {}
        assert report.redispatched == [str(other.pk)]
        assert _wait_final(other.pk, workers).status == Status.SUCCEEDED
        finished = AgentSession.objects.get(pk=racing.pk)
        assert finished.status == Status.SUCCEEDED, finished.error_message
        assert finished.attempts == 1
        assert finished.dispatched_at == racing.dispatched_at  # left alone
        for session in (finished, AgentSession.objects.get(pk=other.pk)):
            _assert_recorded_once(session)


def _refusing(url: str) -> str:
    """``url``'s broker with credentials it refuses (a wrong password)."""
    scheme, _, rest = url.partition("://")
    host = rest.rpartition("@")[2]
    return f"{scheme}://wink-nobody:wrong-password@{host}"


def test_a_broker_refusing_the_login_queues_the_run_for_the_sweeper(settings):
    """amqp's AccessRefused (a wrong password or virtual host) was no
    "unreachable" broker: the start answered 500 after its session was
    committed (a retry started a second run), and a sweep's failed send
    wiped the record of the first (found by hostile QA)."""
    seed_demo_catalog()
    user = UserFactory.create(username="runner")
    user.user_permissions.add(Permission.objects.get(codename="start_session"))
    client = APIClient()
    client.force_authenticate(user)
    with broker_at(settings, _refusing(BROKER)):
        response = client.post(
            "/api/sessions/", {"prompt": PROMPT, "params": {}}, format="json"
        )
        assert response.status_code == 202, response.content
        session = AgentSession.objects.get()
        assert session.status == Status.QUEUED
        assert session.dispatched_at is None
        assert session.dispatch_error.startswith("The broker ")
        assert session.dispatch_failures == 1
        out = StringIO()
        call_command("sweep_sessions", stdout=out)
        refused = session.dispatch_error.startswith("The broker refused the run")
        assert (
            "Broker refusing the runs" if refused else "Broker unreachable"
        ) + ": 1 session(s) left queued for the next sweep." in out.getvalue()
        session.refresh_from_db()
        assert session.dispatched_at is None  # still for the next sweep
        assert session.dispatch_error.startswith("The broker ")
        assert session.dispatch_failures == 2
