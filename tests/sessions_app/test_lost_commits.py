"""A run whose database fails under a finished handler, or before its claim
(issue #24, item 7). The PostgreSQL cases (a connection terminated at those
moments) are in ``tests/integration/test_connection_loss.py``; SQLite has no
connection to lose (the database is a file in the process), but a step's
commit can still fail there with an ``OperationalError`` after its handler
ran: the database is locked by another writer past the busy timeout. The
same retry writes the step again instead of running its handler again."""

from __future__ import annotations

import dataclasses
import sqlite3
from typing import Any

import pytest
from celery.exceptions import Reject
from django.db import OperationalError, connection

from sessions_app import services, tasks
from sessions_app.models import AgentSession
from sessions_app.runs import lifecycle
from tests.sessions_app.brokers import broker_at, sent_runs
from tooling.demo import seed_demo_catalog
from tooling.handlers import registry
from tooling.runtime import ToolContext

pytestmark = pytest.mark.django_db(transaction=True)  # autocommit, as a worker


@pytest.fixture
def build_then():
    """``demo.build`` recording each run by idempotency key and calling
    ``hooks.pop(0)`` (if any is left) after its handler returned."""
    original = registry.get("demo.build")
    state: dict[str, Any] = {"runs": [], "hooks": []}

    def handler(params: Any, *, context: ToolContext) -> Any:
        assert original.handler is not None
        result = original.handler(params, context=context)
        state["runs"].append(context.idempotency_key)
        if state["hooks"]:
            state["hooks"].pop(0)()
        return result

    registry.unregister("demo.build")
    registry.register("demo.build", dataclasses.replace(original, handler=handler))
    yield state
    registry.unregister("demo.build")
    registry.register("demo.build", original)


def test_a_commit_refused_by_a_locked_database_is_written_again_not_run_again(
    build_then,
):
    if connection.vendor != "sqlite":
        pytest.skip("the SQLite case (PostgreSQL: test_connection_loss.py)")
    seed_demo_catalog()
    other = sqlite3.connect(
        connection.settings_dict["NAME"], uri=True, isolation_level=None
    )
    locked: list[str] = []

    def lock() -> None:  # another writer holds the database
        other.execute("BEGIN IMMEDIATE")
        other.execute("DELETE FROM sessions_app_sessionstateentry WHERE 0")
        locked.append("held")

    def release_on_failure(execute, sql, params, many, context):
        try:
            return execute(sql, params, many, context)
        except OperationalError:
            if locked and locked[-1] == "held":
                locked.append(f"refused: {sql[:40]}")
                other.execute("ROLLBACK")  # the other writer is done
            raise

    build_then["hooks"].append(lock)
    try:
        with connection.execute_wrapper(release_on_failure):
            session = services.start_session(prompt_ref="demo/release")
    finally:
        other.close()

    assert len(locked) == 2, locked  # the step's commit was refused once
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    assert session.attempts == 1
    assert len(build_then["runs"]) == 1, build_then["runs"]
    assert session.tool_invocations.filter(name="build", success=True).count() == 1


def test_a_worker_start_that_cannot_reach_the_database_is_left_for_redelivery(
    settings,
):
    """The claim fails every time: after its retries the task rejects its
    message back to the queue (never acknowledged and forgotten)."""
    seed_demo_catalog()
    with broker_at(settings, "memory://") as app:
        session = services.start_session(prompt_ref="demo/release")
        assert sent_runs(app) == [str(session.pk)]
    tries: list[str] = []

    def unreachable(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith(("UPDATE", "SET")):
            tries.append(sql[:30])
            raise OperationalError("the database server went away")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(unreachable), pytest.raises(Reject) as raised:
        tasks.run_session_task(str(session.pk))

    assert raised.value.requeue is True
    assert "The database could not be reached to run the session." in str(
        raised.value.reason
    )
    assert len(tries) == 4  # the first try and one per RECOMMIT_DELAYS
    session.refresh_from_db()
    assert session.status == AgentSession.Status.QUEUED  # for the redelivery
    assert session.attempts == 0
    assert lifecycle.claim(session.pk) is not None  # still claimable
