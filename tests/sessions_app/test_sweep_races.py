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

import contextlib
import logging
from collections.abc import Callable, Iterator
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection
from django.utils import timezone

from sessions_app import lifecycle, services
from sessions_app.models import AgentSession
from tests.sessions_app.brokers import broker_at, sent_runs
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db

Status = AgentSession.Status
MARK = 'UPDATE "sessions_app_agentsession" SET "dispatched_at"'


@pytest.fixture
def up(settings: Any) -> Any:
    with broker_at(settings, "memory://") as app:
        yield app


def _due(state: str) -> AgentSession:
    """A session the sweeper re-dispatches: ``queued`` (its message was lost)
    or ``running`` with an expired lease (its worker died)."""
    session = services.start_session(prompt_ref="demo/release", params={})
    if state == "running":
        lifecycle.claim(session.pk)
        AgentSession.objects.filter(pk=session.pk).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
    AgentSession.objects.filter(pk=session.pk).update(
        dispatched_at=timezone.now() - timedelta(hours=1)
    )
    return AgentSession.objects.get(pk=session.pk)


def _finish(session_id: Any) -> None:
    """A worker claims the run and ends it (succeeded)."""
    claim = lifecycle.claim(session_id)
    assert claim is not None
    lifecycle.finish(claim, status=Status.SUCCEEDED, output_text="done")


@contextlib.contextmanager
def _before_mark(session_id: Any, action: Callable[[Any], None]) -> Iterator[None]:
    """Run ``action(session_id)`` just before the sweep's update marking
    ``session_id`` as re-dispatched is sent (once)."""
    done = False

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        nonlocal done
        # (SQLite keeps a UUID as its hex digits, PostgreSQL as a uuid)
        ids = {str(session_id), session_id.hex}
        if not done and sql.startswith(MARK) and ids & {str(p) for p in params}:
            done = True
            action(session_id)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield
    assert done, "the sweep never marked the session"


@pytest.mark.parametrize("state", ["queued", "running"])
def test_a_run_that_finishes_between_the_sweeps_read_and_its_update_is_left_alone(
    up, state
):
    seed_demo_catalog()
    racing = _due(state)
    other = _due(state)

    with _before_mark(racing.pk, _finish):
        report = services.sweep_stale_sessions()

    finished = AgentSession.objects.get(pk=racing.pk)
    assert finished.status == Status.SUCCEEDED
    assert finished.dispatched_at == racing.dispatched_at  # not written to
    assert report.errors == {}
    assert report.redispatched == [str(other.pk)]  # the rest of the sweep went on
    assert sent_runs(up) == [str(other.pk)]


def test_a_run_claimed_between_the_sweeps_read_and_its_update_is_not_sent(up):
    seed_demo_catalog()
    racing = _due("queued")

    with _before_mark(racing.pk, lifecycle.claim):
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
    broken = _due("queued")
    other = _due("running")

    with (
        caplog.at_level(logging.ERROR, logger="sessions_app"),
        _before_mark(broken.pk, _fail),
    ):
        report = services.sweep_stale_sessions()

    assert report.errors == {str(broken.pk): "DatabaseError"}
    assert report.redispatched == [str(other.pk)]
    assert sent_runs(up) == [str(other.pk)]
    assert f"The sweep could not handle {broken.pk}; going on" in caplog.messages


def test_the_sweep_command_reports_a_session_it_could_not_handle(up):
    seed_demo_catalog()
    broken = _due("queued")
    out, err = StringIO(), StringIO()

    with _before_mark(broken.pk, _fail), pytest.raises(CommandError) as raised:
        call_command("sweep_sessions", stdout=out, stderr=err)

    assert f"Could not handle {broken.pk}: DatabaseError (the log has why)" in (
        err.getvalue()
    )
    assert "1 error(s) (see the log)" in str(raised.value)
