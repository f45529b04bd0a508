"""A run whose database connection is terminated mid-run resumes on a new
connection, losing nothing that was committed (PostgreSQL:
``pg_terminate_backend`` of the run's own backend)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from django.db import connection

from sessions_app import services
from sessions_app.models import AgentSession
from tests.integration.workers import direct_connection
from tests.sessions_app.brokers import broker_at, sent_runs
from tests.sessions_app.clients import CountingProvider
from tooling.demo import seed_demo_catalog
from tooling.handlers import registry
from tooling.runtime import ToolContext

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="pg_terminate_backend needs PostgreSQL (set DATABASE_URL)",
    ),
]


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def terminate(pid: int) -> None:
    """From another connection, as an operator or a failover would."""
    with direct_connection() as other:
        other.execute("SELECT pg_terminate_backend(%s)", (pid,))


def function_call_ids(session: AgentSession) -> list[str]:
    return [
        item["call_id"]
        for call in session.provider_calls.order_by("turn")
        for item in (call.response or {}).get("output", [])
        if item.get("type") == "function_call"
    ]


def assert_complete(session: AgentSession) -> None:
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    invoked = list(
        session.tool_invocations.filter(native=False).values_list("call_id", flat=True)
    )
    assert sorted(invoked) == sorted(function_call_ids(session))
    assert len(invoked) == len(set(invoked))
    turns = list(session.provider_calls.values_list("turn", flat=True))
    assert turns == list(range(1, len(turns) + 1))


def test_connection_terminated_while_waiting_for_the_provider():
    seed_demo_catalog()
    pid = backend_pid()
    provider = CountingProvider(
        before=lambda number, body: terminate(pid) if number == 2 else None
    )

    session = services.start_session(prompt_ref="demo/release", client=provider.client)

    assert backend_pid() != pid  # a new connection finished the run
    assert_complete(session)
    assert session.attempts == 1  # the same worker, the same claim
    # Turn 2's response arrived on a dead connection: its commit was made
    # again on a new one (runs.store.commits), so no request was sent twice.
    assert len(provider.requests) == session.provider_calls.count()
    assert all(
        a != b for a, b in zip(provider.requests, provider.requests[1:], strict=False)
    )


@pytest.fixture
def self_terminating_writer():
    """``write_file`` whose first call terminates its own database backend
    halfway through (after its write, before its record)."""
    original = registry.get("vfs.write_file")
    calls = {"n": 0}

    def handler(params: Any, *, context: ToolContext) -> Any:
        calls["n"] += 1
        assert original.handler is not None
        result = original.handler(params, context=context)
        if calls["n"] == 1:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return result

    registry.unregister("vfs.write_file")
    registry.register("vfs.write_file", dataclasses.replace(original, handler=handler))
    yield calls
    registry.unregister("vfs.write_file")
    registry.register("vfs.write_file", original)


def test_connection_terminated_inside_a_tool(self_terminating_writer):
    seed_demo_catalog()

    session = services.start_session(prompt_ref="demo/notes")

    # draft_file and write_file share the handler: two calls, plus the
    # interrupted first one, which ran again on the new connection.
    assert self_terminating_writer["n"] == 3
    assert_complete(session)
    for name in ("draft_file", "write_file"):
        assert session.tool_invocations.filter(name=name, success=True).count() == 1
    assert session.files.filter(path="notes.md").count() == 1


# -- a step's commit cut after its handler ran (issue #24, item 7) ----------------


@pytest.fixture
def build_then():
    """``demo.build`` recording each run by idempotency key and, after its
    handler returned (before the step commits), calling ``hooks.pop(0)`` if
    any is left."""
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


def test_a_commit_cut_after_the_handler_ran_is_written_again_not_run_again(
    build_then,
):
    seed_demo_catalog()
    pid = backend_pid()
    build_then["hooks"].append(lambda: terminate(pid))

    session = services.start_session(prompt_ref="demo/release")

    assert backend_pid() != pid  # the step was written on a new connection
    assert_complete(session)
    assert session.attempts == 1
    # build ran once: its record was committed again, not its handler run again
    assert len(build_then["runs"]) == 1, build_then["runs"]
    assert session.tool_invocations.filter(name="build", success=True).count() == 1
    # the state its success saved (the release order's memory) is there too
    assert session.state_entries.exists()


def test_a_commit_whose_reply_was_lost_is_not_written_twice(build_then):
    """The step's query committed, then the connection died before its reply
    was read: written again, the rows already stored are left out."""
    seed_demo_catalog()
    armed = {"on": False}
    build_then["hooks"].append(lambda: armed.update(on=True))

    def cut_after_commit(execute, sql, params, many, context):
        if not (armed["on"] and 'INSERT INTO "sessions_app_toolinvocation"' in sql):
            return execute(sql, params, many, context)
        armed["on"] = False
        result = execute(sql, params, many, context)  # committed
        terminate(backend_pid_of(context))
        execute("SELECT 1", None, False, context)  # the server is gone: raises
        return result

    with connection.execute_wrapper(cut_after_commit):
        session = services.start_session(prompt_ref="demo/release")

    assert not armed["on"]
    assert_complete(session)
    assert session.attempts == 1
    assert len(build_then["runs"]) == 1, build_then["runs"]
    assert session.tool_invocations.filter(name="build", success=True).count() == 1


def backend_pid_of(context: Any) -> int:
    """The backend of the connection a statement is being sent on."""
    return int(context["connection"].connection.info.backend_pid)


# -- a worker's start on a dead connection (issue #24, item 7) --------------------


def test_a_worker_start_on_a_dead_connection_reconnects_and_runs(settings):
    seed_demo_catalog()
    with broker_at(settings, "memory://") as app:
        session = services.start_session(prompt_ref="demo/release")
        assert sent_runs(app) == [str(session.pk)]
    pid = backend_pid()
    terminate(pid)  # between two tasks, as a failover or an operator would

    status = services.run_session_status(session_id=session.pk)

    assert status == AgentSession.Status.SUCCEEDED
    assert backend_pid() != pid
    assert_complete(AgentSession.objects.get(pk=session.pk))
