"""A handler's reads of its session give a pooled worker's connection back
(``runs/state.py``, ADR 0022): a tool that reads a file or a state slice and
then works for long (an HTTP call, a slow computation) holds no database
connection meanwhile. Otherwise a few such tools in flight hold the whole
pool of their process, and every other run, the sweeper and the overdue
ending wait for it.

A pooled connection goes back with Django's ``close()`` (``store.release``);
here the test database's own connection stands for it (``_pooled`` says it is
pooled), so that "given back" is seen as ``connection.connection is None``.
On PostgreSQL: SQLite's in-memory test database ignores ``close()``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from sessions_app.models import AgentSession, SessionStateEntry, VirtualFile
from sessions_app.runs.state import DatabaseFilesystem, DatabaseSession
from sessions_app.runs.store import RunStore, commits
from tests.sessions_app.factories import AgentSessionFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pooled(monkeypatch: pytest.MonkeyPatch) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("close() is ignored on SQLite's in-memory test database")
    monkeypatch.setattr(commits, "_pooled", lambda wrapper: True)


def _session() -> tuple[AgentSession, DatabaseSession, DatabaseFilesystem]:
    session = AgentSessionFactory.create()
    VirtualFile.objects.create(session=session, path="notes.md", content="tides")
    SessionStateEntry.objects.create(
        session=session, key="plan", value_type="", value={"step": 1}
    )
    database = DatabaseSession(session, RunStore(session))  # a resumed run's
    files = database.resources.get(DatabaseFilesystem)
    assert files is not None
    return session, database, files


@pytest.mark.parametrize(
    "read",
    [
        lambda database, files: files.read("notes.md"),
        lambda database, files: files.exists("notes.md"),
        lambda database, files: files.list(""),
        lambda database, files: database.get_state("plan"),
    ],
    ids=["read", "exists", "list", "get_state"],
)
def test_a_handlers_read_gives_the_connection_back(
    pooled: None, read: Callable[[DatabaseSession, DatabaseFilesystem], Any]
) -> None:
    _, database, files = _session()
    connection.close()
    assert connection.connection is None

    result = read(database, files)

    assert result  # it did read the row
    assert connection.connection is None  # and holds no connection now
