"""A run's start (``runs.store.create``): the catalog revision is inserted,
never read (``ON CONFLICT DO NOTHING``: an identical stored one is the same
row), then the session, in one transaction. A start the database refuses
writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext

from sessions_app import services
from sessions_app.models import AgentSession
from sessions_app.runs import dispatch, starting
from tests.sessions_app import lookup_setup
from tooling.models import CatalogRevision


def synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return str(cursor.fetchone()[0])


def answer_only() -> Any:
    return lookup_setup.client(lookup_setup.calling(0, ("lookup",)))


@pytest.mark.django_db(transaction=True)
def test_a_start_whose_session_is_refused_writes_nothing(lookup_and_act, monkeypatch):
    # a deadline the session table's check constraint refuses
    monkeypatch.setattr(starting, "run_deadline", lambda seconds: -5)
    before = synchronous_commit() if connection.vendor == "postgresql" else None
    with pytest.raises(DatabaseError):
        services.start_session(prompt_ref=lookup_and_act, client=answer_only())
    # the revision went in the same transaction: refused with it
    assert AgentSession.objects.count() == 0
    assert CatalogRevision.objects.count() == 0
    if before is not None:  # and the connection's setting is its own
        assert synchronous_commit() == before


@pytest.mark.django_db
def test_a_second_start_keeps_the_stored_revision_and_does_not_read_it(
    lookup_and_act,
):
    first = services.start_session(prompt_ref=lookup_and_act, client=answer_only())
    stored = CatalogRevision.objects.get()
    with CaptureQueriesContext(connection) as captured:
        second = services.start_session(prompt_ref=lookup_and_act, client=answer_only())
    assert first.revision_id == second.revision_id == stored.hash
    assert CatalogRevision.objects.get().created_at == stored.created_at
    assert not any(
        query["sql"].startswith("SELECT") and "tooling_catalogrevision" in query["sql"]
        for query in captured.captured_queries
    )


@pytest.mark.django_db
def test_a_queued_start_writes_the_revision_and_the_session_together(
    lookup_and_act, monkeypatch
):
    dispatched: list[Any] = []
    monkeypatch.setattr(dispatch, "runs_inline", lambda: False)
    monkeypatch.setattr(
        dispatch,
        "dispatch_run",
        lambda pk, *, deadline_seconds: dispatched.append(pk),
    )
    for _ in range(2):
        with CaptureQueriesContext(connection) as captured:
            session = services.start_session(prompt_ref=lookup_and_act)
        assert session.status == AgentSession.Status.QUEUED
        assert not session._state.adding
        # the revision the caller reads is the stored one
        assert session.revision == CatalogRevision.objects.get()
        assert session.revision.created_at == CatalogRevision.objects.get().created_at
        sqls = [q["sql"] for q in captured.captured_queries]
        writes = [sql for sql in sqls if sql.startswith("INSERT")]
        assert [sql.split('"')[1] for sql in writes] == [
            "tooling_catalogrevision",
            "sessions_app_agentsession",
            "sessions_app_sessionsearchtext",  # its parameters, for now
        ]
        assert not any("synchronous_commit" in sql for sql in sqls)  # durable
    assert AgentSession.objects.filter(status="queued").count() == 2
    assert CatalogRevision.objects.count() == 1
    assert len(dispatched) == 2


@pytest.fixture
def server_side_binding() -> Iterator[None]:
    """Django's server-side binding: one statement per query."""
    if connection.vendor != "postgresql":
        pytest.skip("server_side_binding is PostgreSQL's (run with DATABASE_URL=...)")
    options = connection.settings_dict.setdefault("OPTIONS", {})
    options["server_side_binding"] = True
    connection.close()
    try:
        yield
    finally:
        options.pop("server_side_binding", None)
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_starts_work_one_statement_at_a_time_with_server_side_binding(
    lookup_and_act, server_side_binding
):
    for _ in range(2):
        session = services.start_session(
            prompt_ref=lookup_and_act,
            client=lookup_setup.client(
                lookup_setup.calling(2, ("lookup", "lookup", "act"))
            ),
        )
        assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
        assert session.tool_invocations.count() == 6
        assert session.provider_calls.count() == 3
    assert CatalogRevision.objects.count() == 1
    assert synchronous_commit() == "on"  # a web process's inline run: durable
