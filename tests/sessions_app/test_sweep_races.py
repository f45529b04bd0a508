"""The sweeper against runs that move while it works (issue #24, item 6).

A sweep reads the sessions it should re-dispatch, then marks each one with a
conditional update. A run that a worker claims and finishes in between must be
left alone (on PostgreSQL the session trigger refuses any change to a finished
session; on SQLite the mark would silently write to it), and a session that
cannot be handled must not cost the rest of the sweep. The race is made
deterministic with Django's ``execute_wrapper``: the run finishes just before
the sweep's update of it is sent. Runs on SQLite and, with ``DATABASE_URL``,
PostgreSQL."""

from __future__ import annotations

import logging
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError

from sessions_app import services
from sessions_app.models import AgentSession
from sessions_app.runs import lifecycle
from tests.sessions_app.brokers import broker_at, sent_runs
from tests.sessions_app.sweeps import before_mark, due_session, finish_run
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db

Status = AgentSession.Status


@pytest.fixture
def up(settings: Any) -> Any:
    with broker_at(settings, "memory://") as app:
        yield app


@pytest.mark.parametrize("state", ["queued", "running"])
def test_a_run_that_finishes_between_the_sweeps_read_and_its_update_is_left_alone(
    up, state
):
    seed_demo_catalog()
    racing = due_session(state)
    other = due_session(state)

    with before_mark(racing.pk, finish_run):
        report = services.sweep_stale_sessions()

    finished = AgentSession.objects.get(pk=racing.pk)
    assert finished.status == Status.SUCCEEDED
    assert finished.dispatched_at == racing.dispatched_at  # not written to
    assert report.errors == {}
    assert report.redispatched == [str(other.pk)]  # the rest of the sweep went on
    assert sent_runs(up) == [str(other.pk)]


def test_a_run_claimed_between_the_sweeps_read_and_its_update_is_not_sent(up):
    seed_demo_catalog()
    racing = due_session("queued")

    with before_mark(racing.pk, lifecycle.claim):
        report = services.sweep_stale_sessions()

    claimed = AgentSession.objects.get(pk=racing.pk)
    assert claimed.status == Status.RUNNING
    assert claimed.dispatched_at == racing.dispatched_at
    assert report.redispatched == []
    assert sent_runs(up) == []


def _fail(session_id: Any) -> None:
    raise DatabaseError("the server refused this one")


def test_a_session_that_cannot_be_handled_does_not_skip_the_rest(up, caplog):
    seed_demo_catalog()
    broken = due_session("queued")
    other = due_session("running")

    with (
        caplog.at_level(logging.ERROR, logger="sessions_app"),
        before_mark(broken.pk, _fail),
    ):
        report = services.sweep_stale_sessions()

    assert report.errors == {str(broken.pk): "DatabaseError"}
    assert report.redispatched == [str(other.pk)]
    assert sent_runs(up) == [str(other.pk)]
    assert f"The sweep could not handle {broken.pk}; going on" in caplog.messages


def test_the_sweep_command_reports_a_session_it_could_not_handle(up):
    seed_demo_catalog()
    broken = due_session("queued")
    out, err = StringIO(), StringIO()

    with before_mark(broken.pk, _fail), pytest.raises(CommandError) as raised:
        call_command("sweep_sessions", stdout=out, stderr=err)

    assert f"Could not handle {broken.pk}: DatabaseError (the log has why)" in (
        err.getvalue()
    )
    assert "1 error(s) (see the log)" in str(raised.value)
