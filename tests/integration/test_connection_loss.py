"""A run whose database connection is terminated mid-run resumes on a new
connection, losing nothing that was committed (PostgreSQL:
``pg_terminate_backend`` of the run's own backend)."""

from __future__ import annotations

import dataclasses
from typing import Any

import psycopg
import pytest
from django.db import connection

from sessions_app import services
from sessions_app.models import AgentSession
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
    settings = connection.settings_dict
    with psycopg.connect(
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        user=settings["USER"],
        dbname=settings["NAME"],
        autocommit=True,
    ) as other:
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
    assert session.attempts == 1  # resumed by the same worker, same claim
    # Turn 2's response was lost with the connection: it is the only request
    # sent twice.
    assert provider.requests[1] == provider.requests[2]
    assert len(provider.requests) == session.provider_calls.count() + 1


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
