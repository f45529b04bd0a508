"""A broker that cannot be reached (issue #24, item 5): a start still answers
202 with its queued session, the failed send is recorded on it, the sweeper
sends it again at its next sweep and survives the outage itself, and nothing
sends a session twice in one sweep.

"Down" is a port where nothing listens (connection refused, as a stopped Redis
or RabbitMQ answers), over both transports; "up" is kombu's in-process
``memory://`` transport, whose messages the tests count (``brokers.py``). The
worker suite repeats the outage with a real broker and worker
(``tests/integration/test_broker_outage.py``)."""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.approvals import decisions
from sessions_app.models import AgentSession, ApprovalRequest
from sessions_app.runs import lifecycle
from tests.sessions_app.brokers import broker_at, refused, sent_runs
from tests.sessions_app.factories import UserFactory
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db

Status = AgentSession.Status
UNREACHABLE = "The broker could not be reached (OperationalError)."


@pytest.fixture(params=["redis", "amqp"])
def down(request: Any, settings: Any) -> Any:
    with broker_at(settings, refused(request.param)) as app:
        yield app


@pytest.fixture
def up(settings: Any) -> Any:
    with broker_at(settings, "memory://") as app:
        yield app


def _runner() -> APIClient:
    user = UserFactory.create(username="runner")
    user.user_permissions.add(Permission.objects.get(codename="start_session"))
    client = APIClient()
    client.force_authenticate(user)
    return client


def _start_unsent(django_capture_on_commit_callbacks: Any) -> AgentSession:
    """A session started while the broker was down (its send failed)."""
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref="demo/release", params={})
    return AgentSession.objects.get(pk=session.pk)


@pytest.mark.django_db(transaction=True)  # sent on commit, as in production
def test_a_start_with_the_broker_down_answers_202_with_the_queued_session(down):
    seed_demo_catalog()
    client = _runner()

    began = time.monotonic()
    response = client.post(
        "/api/sessions/", {"prompt": "demo/release", "params": {}}, format="json"
    )
    elapsed = time.monotonic() - began

    assert response.status_code == 202, response.content
    session = AgentSession.objects.get()  # one session: nothing to post again
    body = response.json()
    assert body["id"] == str(session.pk)
    assert response["Location"].endswith(f"/api/sessions/{session.pk}/")
    assert body["status"] == "queued"
    assert body["dispatch_error"] == UNREACHABLE
    assert body["dispatch_failures"] == 1
    assert body["dispatch_failed_at"] is not None
    assert session.dispatched_at is None  # the sweeper sends it at its next sweep
    assert elapsed < 5, f"the start waited {elapsed:.1f}s for the broker"


def test_the_session_page_says_a_queued_run_was_not_sent_yet(
    down, client, django_capture_on_commit_callbacks
):
    seed_demo_catalog()
    session = _start_unsent(django_capture_on_commit_callbacks)
    client.force_login(UserFactory.create(is_superuser=True))

    page = client.get(session.get_absolute_url()).content.decode()

    assert (
        f"Queued, not sent to a worker yet: {UNREACHABLE} It is sent again at the "
        "next sweep."
    ) in page


def test_a_decision_with_the_broker_down_queues_the_run_for_the_sweeper(
    paused, approver, down, django_capture_on_commit_callbacks
):
    approval = ApprovalRequest.objects.get(session=paused)

    with django_capture_on_commit_callbacks(execute=True):
        decided = decisions.decide(
            approval_id=approval.pk, user=approver, approve=True, reason="go"
        )

    assert decided.status == ApprovalRequest.Status.APPROVED
    paused.refresh_from_db()
    assert paused.status == Status.QUEUED
    assert paused.dispatch_error == UNREACHABLE
    assert paused.dispatched_at is None


def test_a_sweep_with_the_broker_down_goes_on_and_says_so(
    down, settings, caplog, django_capture_on_commit_callbacks
):
    seed_demo_catalog()
    unsent = _start_unsent(django_capture_on_commit_callbacks)
    # sent long ago (not here: the test's transaction never commits) and lost
    lost = services.start_session(prompt_ref="demo/release", params={})
    AgentSession.objects.filter(pk=lost.pk).update(
        dispatched_at=timezone.now() - timedelta(hours=1)
    )
    settings.WINK_RUN_MAX_ATTEMPTS = 1
    dead = services.start_session(prompt_ref="demo/release", params={})
    lifecycle.claim(dead.pk)
    AgentSession.objects.filter(pk=dead.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )

    with caplog.at_level(logging.WARNING, logger="sessions_app"):
        report = services.sweep_stale_sessions()

    assert report.settled == {str(dead.pk): Status.FAILED}  # the rest went on
    assert sorted(report.undispatched) == sorted([str(unsent.pk), str(lost.pk)])
    assert report.redispatched == [] and report.errors == {}
    assert (
        "Broker unreachable: 2 session(s) left queued for the next sweep."
        in caplog.messages
    )
    rows = AgentSession.objects.filter(pk__in=[unsent.pk, lost.pk])
    # the start's failed send, and one by the sweep: once it failed, the other
    # session was left for the next sweep, not tried
    assert sum(row.dispatch_failures for row in rows) == 2
    assert {row.status for row in rows} == {Status.QUEUED}


def test_the_sweep_command_exits_0_and_says_the_broker_is_unreachable(
    down, django_capture_on_commit_callbacks
):
    seed_demo_catalog()
    _start_unsent(django_capture_on_commit_callbacks)
    out = StringIO()

    call_command("sweep_sessions", stdout=out)

    printed = out.getvalue()
    assert "Broker unreachable: 1 session(s) left queued for the next sweep." in (
        printed
    )
    assert (
        "Sweep done: 0 re-dispatched, 0 run inline, 0 settled, 0 approval(s) "
        "expired, 1 left queued (broker unreachable)." in printed
    )


def test_a_sweep_whose_sends_the_broker_refuses_says_refusing(
    settings, monkeypatch, django_capture_on_commit_callbacks
):
    """A broker refusing the login (a Redis password, its transport's
    connection error but no ``OSError``) is not "unreachable": the sweep's
    line says which (the integration suite refuses a real login)."""
    import redis.exceptions

    seed_demo_catalog()
    with broker_at(settings, refused("redis")) as app:

        def refuse(*args: Any, **kwargs: Any) -> None:
            raise redis.exceptions.AuthenticationError("invalid password")

        monkeypatch.setattr(app, "send_task", refuse)
        session = _start_unsent(django_capture_on_commit_callbacks)
        assert session.dispatch_error == (
            "The broker refused the run (AuthenticationError)."
        )
        out = StringIO()
        call_command("sweep_sessions", stdout=out)
    printed = out.getvalue()
    assert (
        "Broker refusing the runs: 1 session(s) left queued for the next sweep."
        in printed
    )
    assert "1 left queued (broker refusing)." in printed


def test_a_send_that_fails_for_another_reason_surfaces_and_the_sweep_goes_on(
    settings, django_capture_on_commit_callbacks
):
    """Only the broker's own errors are a failed send to record: a transport
    whose package is missing (a broken configuration) is raised, and the
    sweep logs it and goes on, instead of being recorded as the broker's
    answer forever and stopping the sweep (found by a hostile review)."""
    seed_demo_catalog()
    with broker_at(settings, "zookeeper://127.0.0.1:1/"):  # kazoo not installed
        with (
            pytest.raises(ImportError, match="kazoo"),
            django_capture_on_commit_callbacks(execute=True),
        ):
            services.start_session(prompt_ref="demo/release", params={})
        unsent = AgentSession.objects.get()
        assert unsent.dispatch_error == "" and unsent.dispatch_failures == 0
        other = services.start_session(prompt_ref="demo/release", params={})
        AgentSession.objects.update(dispatched_at=None)  # both due now
        report = services.sweep_stale_sessions()
    assert set(report.errors) == {str(unsent.pk), str(other.pk)}  # both tried
    assert report.undispatched == []
    assert set(AgentSession.objects.values_list("dispatch_failures", flat=True)) == {0}


def test_the_next_sweep_sends_a_session_that_was_never_sent(
    settings, django_capture_on_commit_callbacks
):
    seed_demo_catalog()
    with broker_at(settings, refused("redis")):
        session = _start_unsent(django_capture_on_commit_callbacks)
    assert session.dispatch_error == UNREACHABLE

    with broker_at(settings, "memory://") as app:
        report = services.sweep_stale_sessions()  # long before the 600 s
        sent = sent_runs(app)
        again = services.sweep_stale_sessions()

    assert report.redispatched == [str(session.pk)]
    assert sent == [str(session.pk)]  # exactly one message
    assert again.redispatched == []  # sent: no longer due
    session.refresh_from_db()
    assert session.status == Status.QUEUED
    assert session.dispatched_at is not None
    assert session.dispatch_error == ""  # a successful send clears the failure
    assert session.dispatch_failures == 1  # the count of failed sends stays


@pytest.mark.django_db(transaction=True)  # the requeue sends on commit
def test_a_sweep_sends_a_session_at_most_once(
    down, settings, caplog, django_capture_on_commit_callbacks
):
    """The run of an approval that expires in a sweep is sent by the expiry;
    when that send fails, the same sweep does not try it again."""
    from tests.sessions_app.approval_setup import add_approval

    settings.CELERY_TASK_ALWAYS_EAGER = True
    add_approval()
    paused = services.start_session(prompt_ref="demo/release", params={})
    assert paused.status == Status.AWAITING_APPROVAL
    settings.CELERY_TASK_ALWAYS_EAGER = False
    approval = ApprovalRequest.objects.get(session=paused)
    ApprovalRequest.objects.filter(pk=approval.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    with caplog.at_level(logging.WARNING, logger="sessions_app"):
        report = services.sweep_stale_sessions()

    assert report.expired_approvals == [str(approval.pk)]
    assert report.undispatched == [str(paused.pk)]
    paused.refresh_from_db()
    assert paused.status == Status.QUEUED
    assert paused.dispatch_failures == 1  # sent (and failed) once, not twice
    assert (
        "Broker unreachable: 1 session(s) left queued for the next sweep."
        in caplog.messages
    )
