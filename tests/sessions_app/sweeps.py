"""What the sweeper race tests share (``test_sweep_races.py`` and, with a real
worker, ``tests/integration/test_sweeper_race_worker.py``): sessions the
sweeper re-dispatches, and a hook that runs just before the sweep's update of
one of them is sent (Django's ``execute_wrapper``), where a run can finish or
be claimed between the sweep's read and its update."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

from django.db import connection
from django.utils import timezone

from sessions_app import services
from sessions_app.models import AgentSession
from sessions_app.runs import lifecycle

# The sweep's update of a session it re-dispatches (lifecycle.mark_dispatched).
MARK = 'UPDATE "sessions_app_agentsession" SET "dispatched_at"'


def due_session(state: str, prompt: str = "demo/release") -> AgentSession:
    """A session the sweeper re-dispatches: ``queued`` (its message was lost)
    or ``running`` with an expired lease (its worker died)."""
    session = services.start_session(prompt_ref=prompt, params={})
    if state == "running":
        lifecycle.claim(session.pk)
        AgentSession.objects.filter(pk=session.pk).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
    AgentSession.objects.filter(pk=session.pk).update(
        dispatched_at=timezone.now() - timedelta(hours=1)
    )
    return AgentSession.objects.get(pk=session.pk)


def finish_run(session_id: Any) -> None:
    """A worker claims the run and ends it (succeeded)."""
    claim = lifecycle.claim(session_id)
    assert claim is not None
    lifecycle.finish(claim, status=AgentSession.Status.SUCCEEDED, output_text="done")


@contextlib.contextmanager
def before_mark(session_id: Any, action: Callable[[Any], object]) -> Iterator[None]:
    """Run ``action(session_id)`` just before the sweep's update marking
    ``session_id`` as re-dispatched is sent (once)."""
    done = False
    # (SQLite keeps a UUID as its hex digits, PostgreSQL as a uuid)
    ids = {str(session_id), session_id.hex}

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        nonlocal done
        if not done and sql.startswith(MARK) and ids & {str(p) for p in params}:
            done = True
            action(session_id)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield
    assert done, "the sweep never marked the session"
