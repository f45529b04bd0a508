"""The run's store (``sessions_app/runs/store``), measured on the real database:
what commits when, in which transaction, in how many statements.

- ``add()`` outside a step commits at once: a provider call with its
  citations (and a native call) is in the database before anything acts on
  its response.
- A step's rows, state slices and files are kept in memory and commit
  together, in one transaction, when the outermost step ends; nothing of the
  step before. A nested step that rolls back drops only its own writes, an
  exception the whole step. Reads inside a step see its pending writes.
- Nothing waits for a later effect: a state-only step, a denied call's rows
  commit at their step's end.

Run with ``DATABASE_URL=postgres://...`` for PostgreSQL (the default is
SQLite); the whole-run statement counts are in test_store_runs.py."""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pytest
from django.db import IntegrityError, connection, connections, models
from django.test.utils import CaptureQueriesContext

from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    SessionStateEntry,
    ToolInvocation,
    VirtualFile,
)
from sessions_app.runs.state import DatabaseFilesystem, DatabaseSession
from sessions_app.runs.store import RunStore
from tests.sessions_app.factories import AgentSessionFactory
from tests.sessions_app.step_rows import invocation

pytestmark = pytest.mark.django_db

T = TypeVar("T")

# Statements that only bracket a transaction or a savepoint (SQLite shows its
# BEGIN; psycopg sends PostgreSQL's without a cursor). Inside a test's
# transaction each ``atomic()`` is one SAVEPOINT ... RELEASE pair.
BRACKETS = re.compile(r"^\s*(BEGIN|SAVEPOINT|RELEASE|ROLLBACK)", re.IGNORECASE)
VERB = re.compile(
    r"^\s*(SAVEPOINT|RELEASE SAVEPOINT|ROLLBACK TO SAVEPOINT|BEGIN|SET LOCAL"
    r'|INSERT(?: OR IGNORE)? INTO "(\w+)"|DELETE FROM "(\w+)"|UPDATE "(\w+)"'
    r'|SELECT .*? FROM "(\w+)")',
    re.IGNORECASE | re.DOTALL,
)


def statements(captured: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in captured.captured_queries]


def shape(captured: CaptureQueriesContext) -> list[str]:
    """Each statement as its verb and table: ``INSERT sessions_app_...``,
    ``SAVEPOINT``, ``RELEASE``."""
    found = []
    for sql in statements(captured):
        match = VERB.match(sql)
        assert match is not None, sql
        verb = match.group(1).split()[0].upper()
        table = next((group for group in match.groups()[1:] if group), "")
        found.append(f"{verb} {table}".strip())
    return found


def elsewhere(query: Callable[[], T]) -> T:
    """``query()`` on a second connection (another thread's): it sees only
    what is committed."""
    result: list[T] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            result.append(query())
        except BaseException as error:  # reported in the test's thread
            errors.append(error)
        finally:
            connections.close_all()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result[0]


def files(database: DatabaseSession) -> DatabaseFilesystem:
    found = database.resources.get(DatabaseFilesystem)
    assert found is not None
    return found


def stored_state(session: AgentSession) -> dict[str, Any]:
    return dict(
        SessionStateEntry.objects.filter(session=session).values_list("key", "value")
    )


def stored_files(session: AgentSession) -> dict[str, str]:
    return dict(
        VirtualFile.objects.filter(session=session).values_list("path", "content")
    )


def sequences(session: AgentSession) -> list[int]:
    return sorted(
        ToolInvocation.objects.filter(session=session).values_list(
            "sequence", flat=True
        )
    )


class Heard:
    """An ``on_commit`` that keeps what it heard."""

    def __init__(self) -> None:
        self.commits: list[list[models.Model]] = []

    def __call__(self, rows: Sequence[models.Model]) -> None:
        self.commits.append(list(rows))


@pytest.fixture
def store() -> tuple[AgentSession, RunStore, DatabaseSession]:
    session = AgentSessionFactory.create()
    run_store = RunStore(session)
    return session, run_store, DatabaseSession(session, run_store, fresh=True)


def provider_call(session: AgentSession, turn: int = 1) -> ProviderCall:
    return ProviderCall(session=session, turn=turn, event_id=uuid.uuid4())


def citations(session: AgentSession, call: ProviderCall, n: int) -> list[Citation]:
    return [
        Citation(session=session, provider_call=call, url=f"https://e.test/{i}")
        for i in range(n)
    ]


def native(session: AgentSession, sequence: int) -> ToolInvocation:
    row = invocation(session, sequence)
    row.native = True
    row.name = "web_search"
    return row


# -- a provider call commits at once -----------------------------------------------


@pytest.mark.django_db(transaction=True)  # as a run writes: autocommit
def test_a_provider_calls_rows_are_committed_by_add_before_anything_else_runs(
    store,
):
    session, run_store, _ = store
    call = provider_call(session)
    run_store.add([call, *citations(session, call, 2)])
    # another connection sees them: committed, before any later write
    assert elsewhere(lambda: ProviderCall.objects.filter(session=session).count()) == 1
    assert elsewhere(lambda: Citation.objects.filter(session=session).count()) == 2
    run_store.add([native(session, 1)])  # a native call: its own commit
    assert elsewhere(lambda: sequences(session)) == [1]
    assert run_store.commits == 2


@pytest.mark.django_db(transaction=True)
def test_a_provider_call_stands_when_the_step_after_it_fails(store):
    session, run_store, database = store
    run_store.add([provider_call(session)])
    with pytest.raises(RuntimeError), database.transaction():
        database.put_state("plan", 1)
        run_store.add([invocation(session, 1)])
        raise RuntimeError("the worker stops in the handler")
    assert ProviderCall.objects.filter(session=session).count() == 1
    assert not ToolInvocation.objects.exists()
    assert not SessionStateEntry.objects.exists()


def test_a_provider_call_and_its_citations_are_one_insert_each_in_one_atomic(
    store,
):
    session, run_store, _ = store
    call = provider_call(session)
    with CaptureQueriesContext(connection) as captured:
        run_store.add([call, *citations(session, call, 3), native(session, 1)])
    assert shape(captured) == [
        "SAVEPOINT",
        "INSERT sessions_app_providercall",
        "INSERT sessions_app_citation",
        "INSERT sessions_app_toolinvocation",
        "RELEASE",
    ]
    # the citations point at the call, whose key the first insert returned
    assert set(
        Citation.objects.filter(session=session).values_list(
            "provider_call_id", flat=True
        )
    ) == {call.pk}


def test_adding_no_rows_outside_a_step_commits_nothing(store):
    """(A recorder with nothing to write, PromptRendered's: no empty
    transaction, and no commit counted as progress by the run's reconnects,
    ``services._run_claimed``.)"""
    _, run_store, _ = store
    heard = Heard()
    run_store.on_commit = heard
    with CaptureQueriesContext(connection) as captured:
        run_store.add([])
    assert statements(captured) == []
    assert run_store.commits == 0
    assert heard.commits == []


# -- a step commits once, at its end -----------------------------------------------


def test_a_steps_rows_state_and_files_commit_together_at_its_end(store):
    session, run_store, database = store
    with CaptureQueriesContext(connection) as captured:
        with database.transaction():
            with database.transaction():  # the handler's
                database.put_state("plan", {"steps": 1})
                files(database).write("notes.md", "draft")
                database.put_state("memory", {"read": ["notes.md"]})
            run_store.add([PolicyDenial(session=session, policy_name="p")])
            run_store.add([invocation(session, 1), invocation(session, 2)])
            assert statements(captured) == []  # nothing of it before its end
        ends = shape(captured)
    assert ends == [
        "SAVEPOINT",  # one atomic (a transaction outside the test's)
        "INSERT sessions_app_sessionstateentry",  # both slices, one upsert
        "INSERT sessions_app_virtualfile",
        "INSERT sessions_app_policydenial",
        "INSERT sessions_app_toolinvocation",  # both calls, one insert
        "RELEASE",
    ]
    assert stored_state(session) == {
        "plan": {"steps": 1},
        "memory": {"read": ["notes.md"]},
    }
    assert stored_files(session) == {"notes.md": "draft"}
    assert sequences(session) == [1, 2]
    assert PolicyDenial.objects.filter(session=session).count() == 1
    assert run_store.commits == 1


def test_a_steps_deletes_are_in_its_one_atomic_too(store):
    session, run_store, database = store
    database.put_state("old", 1)  # outside a step: at once
    files(database).write("old.md", "x")
    with CaptureQueriesContext(connection) as captured, database.transaction():
        database.reset()
        database.put_state("new", 2)
        files(database).delete("old.md")
        run_store.add([invocation(session, 1)])
    assert shape(captured) == [
        "SELECT sessions_app_virtualfile",  # delete(): does the file exist?
        "SAVEPOINT",
        "DELETE sessions_app_sessionstateentry",  # the reset
        "INSERT sessions_app_sessionstateentry",
        "DELETE sessions_app_virtualfile",
        "INSERT sessions_app_toolinvocation",
        "RELEASE",
    ]
    assert stored_state(session) == {"new": 2}
    assert stored_files(session) == {}


@pytest.mark.django_db(transaction=True)
def test_nothing_of_a_step_is_seen_elsewhere_before_its_end(store):
    session, run_store, database = store
    with database.transaction():
        with database.transaction():
            database.put_state("plan", 1)
            files(database).write("notes.md", "draft")
        run_store.add([invocation(session, 1)])
        seen = elsewhere(
            lambda: (stored_state(session), stored_files(session), sequences(session))
        )
        assert seen == ({}, {}, [])
    assert elsewhere(
        lambda: (stored_state(session), stored_files(session), sequences(session))
    ) == ({"plan": 1}, {"notes.md": "draft"}, [1])


def test_a_nested_step_that_rolls_back_drops_only_its_own_writes(store):
    session, run_store, database = store
    with CaptureQueriesContext(connection) as captured, database.transaction():
        database.put_state("memory", {"read": ["a.md"]})  # the outer step's
        files(database).write("kept.md", "kept")
        with database.transaction() as handler:
            database.put_state("plan", {"steps": 1})
            database.put_state("memory", {"read": []})
            files(database).write("notes.md", "draft")
            files(database).delete("kept.md")
            run_store.add([invocation(session, 99)])  # recorded inside, dropped
            handler.rollback()
        run_store.add([invocation(session, 1)])
    assert shape(captured) == [
        "SAVEPOINT",
        "INSERT sessions_app_sessionstateentry",
        "INSERT sessions_app_virtualfile",
        "INSERT sessions_app_toolinvocation",
        "RELEASE",
    ]  # no savepoint of its own: the nested step never reached the database
    assert stored_state(session) == {"memory": {"read": ["a.md"]}}
    assert stored_files(session) == {"kept.md": "kept"}
    assert sequences(session) == [1]
    assert database.get_state("plan") is None


def test_a_nested_step_that_raises_drops_only_its_own_writes(store):
    session, run_store, database = store
    with database.transaction():
        database.put_state("memory", 1)
        with pytest.raises(RuntimeError), database.transaction():
            database.put_state("plan", 1)
            files(database).write("notes.md", "draft")
            raise RuntimeError("the handler fails")
        run_store.add([invocation(session, 1)])
    assert stored_state(session) == {"memory": 1}
    assert stored_files(session) == {}
    assert sequences(session) == [1]


def test_a_nested_step_that_ends_well_is_committed_with_its_parent(store):
    session, run_store, database = store
    with database.transaction():
        with database.transaction(), database.transaction():
            database.put_state("plan", 1)
            run_store.add([invocation(session, 1)])
        assert not SessionStateEntry.objects.exists()  # waits for the outermost
        assert not ToolInvocation.objects.exists()
        run_store.add([invocation(session, 2)])
    assert sequences(session) == [1, 2]  # in the order written
    assert stored_state(session) == {"plan": 1}
    assert run_store.commits == 1


@pytest.mark.django_db(transaction=True)
def test_an_exception_drops_the_whole_step_and_the_store_goes_on(store):
    session, run_store, database = store
    heard = Heard()
    run_store.on_commit = heard
    with pytest.raises(RuntimeError), database.transaction():
        database.put_state("plan", {"steps": 1})
        with database.transaction():
            files(database).write("notes.md", "draft")
            run_store.add([invocation(session, 1)])
        run_store.add([invocation(session, 2)])
        raise RuntimeError("the worker stops here")
    assert (stored_state(session), stored_files(session), sequences(session)) == (
        {},
        {},
        [],
    )
    assert database.get_state("plan") is None
    assert not files(database).exists("notes.md")
    assert (run_store.commits, heard.commits) == (0, [])
    with database.transaction():  # the store is usable afterwards
        database.put_state("plan", {"steps": 2})
        run_store.add([invocation(session, 3)])
    assert sequences(session) == [3]
    assert database.get_state("plan") == {"steps": 2}
    assert run_store.commits == 1


@pytest.mark.django_db(transaction=True)
def test_a_step_whose_insert_fails_commits_none_of_it(store):
    session, run_store, database = store
    duplicate = uuid.uuid4()
    run_store.add([invocation(session, 1, duplicate)])
    heard = Heard()
    run_store.on_commit = heard
    with pytest.raises(IntegrityError), database.transaction():
        database.put_state("plan", {"steps": 1})
        files(database).write("notes.md", "draft")
        run_store.add(
            [
                PolicyDenial(session=session, policy_name="p", tool_name="echo"),
                invocation(session, 2, duplicate),  # the last insert fails
            ]
        )
    assert stored_state(session) == {}
    assert stored_files(session) == {}
    assert not PolicyDenial.objects.exists()
    assert sequences(session) == [1]
    assert database.get_state("plan") is None  # not kept as read either
    assert (run_store.commits, heard.commits) == (1, [])
    with database.transaction():  # the store and the connection go on
        database.put_state("plan", {"steps": 3})
        run_store.add([invocation(session, 3)])
    assert sequences(session) == [1, 3]
    assert database.get_state("plan") == {"steps": 3}


# -- reads inside a step see its pending writes ---------------------------------------


def test_reads_inside_a_step_see_its_pending_state_and_files(store):
    session, _, database = store
    database.put_state("old", 1)
    files(database).write("old.md", "stored")
    fs = files(database)
    with database.transaction():
        with database.transaction():
            database.put_state("plan", {"steps": 1})
            fs.write("notes.md", "draft")
            fs.write("old.md", "changed")
            assert database.get_state("plan") == {"steps": 1}
            assert fs.exists("notes.md") and fs.read("notes.md") == "draft"
            assert fs.read("old.md") == "changed"
            assert fs.list() == ["notes.md", "old.md"]
            fs.delete("notes.md")  # a pending file
            assert not fs.exists("notes.md")
            with pytest.raises(FileNotFoundError):
                fs.read("notes.md")
            assert fs.list() == ["old.md"]
        fs.delete("old.md")  # a stored file, in the outer step
        assert fs.list() == []
        assert not fs.exists("old.md")
        with pytest.raises(FileNotFoundError):
            fs.delete("old.md")
        database.reset()
        assert database.get_state("old") is None
        assert database.get_state("plan") is None
        database.put_state("after", 2)  # reset, then put
        assert database.get_state("after") == 2
        assert database.get_state("old") is None
        # none of it is in the database yet
        assert stored_state(session) == {"old": 1}
        assert stored_files(session) == {"old.md": "stored"}
    assert stored_state(session) == {"after": 2}
    assert stored_files(session) == {}
    assert database.get_state("after") == 2
    assert database.get_state("old") is None


def test_reads_after_a_nested_rollback_see_the_outer_steps_writes(store):
    session, _, database = store
    database.put_state("plan", {"steps": 0})
    with database.transaction():
        database.put_state("plan", {"steps": 1})
        with database.transaction() as handler:
            database.put_state("plan", {"steps": 2})
            database.reset()
            files(database).write("x.md", "x")
            handler.rollback()
        assert database.get_state("plan") == {"steps": 1}
        assert not files(database).exists("x.md")
        assert stored_state(session) == {"plan": {"steps": 0}}
    assert stored_state(session) == {"plan": {"steps": 1}}


def test_a_read_after_a_rolled_back_write_sees_the_stored_value(store):
    _, _, database = store
    database.put_state("plan", {"steps": 1})
    with database.transaction(), database.transaction() as handler:
        database.put_state("plan", {"steps": 2})
        assert database.get_state("plan") == {"steps": 2}  # its own write
        handler.rollback()
    assert database.get_state("plan") == {"steps": 1}


def test_a_reset_in_a_step_is_not_undone_by_the_writes_before_it(store):
    session, _, database = store
    database.put_state("old", 1)  # outside a step: written at once
    with database.transaction():
        database.put_state("plan", {"steps": 1})
        with database.transaction():
            database.reset()
        database.put_state("after", 2)
    assert stored_state(session) == {"after": 2}
    assert database.get_state("plan") is None
    assert DatabaseSession(session).get_state("old") is None  # a fresh read


def test_a_slice_written_twice_in_a_step_is_one_row_with_the_last_value(store):
    session, _, database = store
    with database.transaction():
        for steps in range(3):
            database.put_state("plan", {"steps": steps})
        database.put_state("memory", {"read": []})
    assert stored_state(session) == {"plan": {"steps": 2}, "memory": {"read": []}}
    database.put_state("plan", {"steps": 3})  # an upsert: still one row
    assert session.state_entries.count() == 2
    assert DatabaseSession(session).get_state("plan") == {"steps": 3}


def test_a_file_written_in_a_nested_step_and_again_in_its_parent_keeps_the_last(
    store,
):
    session, run_store, database = store
    with database.transaction():
        with database.transaction():
            files(database).write("notes.md", "first")
        files(database).write("notes.md", "second")
        run_store.add([invocation(session, 1)])
    assert stored_files(session) == {"notes.md": "second"}
    files(database).write("notes.md", "third")  # an upsert: still one row
    assert stored_files(session) == {"notes.md": "third"}


def test_a_fresh_sessions_state_is_not_read(store, django_assert_num_queries):
    _, _, database = store
    with django_assert_num_queries(0):
        assert database.get_state("plan") is None


def test_state_is_read_once_and_kept_with_the_runs_writes(
    store, django_assert_num_queries
):
    session, run_store, _ = store
    database = DatabaseSession(session, run_store)  # a resumed run: reads
    database.put_state("plan", {"steps": [1]})
    database.put_state("memory", {"read": ["a.md"]})
    with django_assert_num_queries(1):
        assert database.get_state("plan") == {"steps": [1]}
        assert database.get_state("memory") == {"read": ["a.md"]}
        assert database.get_state("missing") is None
    copy = database.get_state("plan")
    assert copy is not None
    copy["steps"].append(2)  # a handler's own copy
    assert database.get_state("plan") == {"steps": [1]}
    with database.transaction(), database.transaction():  # a step that keeps
        database.put_state("plan", {"steps": [1, 2]})
    with django_assert_num_queries(0):
        assert database.get_state("plan") == {"steps": [1, 2]}


def test_keys_the_store_cannot_hold_are_refused_before_any_sql(store):
    _, run_store, database = store
    with CaptureQueriesContext(connection) as captured, database.transaction():
        for key in ("k" * 101, "nul\x00key", "\ud800"):
            with pytest.raises(ValueError):
                database.put_state(key, 1)
    assert statements(captured) == []
    assert run_store.commits == 0


# -- nothing waits for a later effect ---------------------------------------------


def test_a_state_only_step_commits_at_its_end(store):
    session, run_store, database = store
    with database.transaction(), database.transaction():
        database.put_state("plan", 1)
    assert stored_state(session) == {"plan": 1}
    assert run_store.commits == 1


def test_a_denied_calls_rows_commit_at_its_steps_end(store):
    session, run_store, database = store
    with database.transaction():  # no handler ran, no state
        run_store.add([PolicyDenial(session=session, policy_name="p")])
        run_store.add([invocation(session, 1)])
    assert PolicyDenial.objects.filter(session=session).count() == 1
    assert sequences(session) == [1]
    assert run_store.commits == 1


def test_a_step_that_writes_nothing_commits_nothing(store):
    _, run_store, database = store
    with CaptureQueriesContext(connection) as captured:
        with database.transaction(), database.transaction():
            pass
        with database.transaction() as step:
            database.put_state("plan", 1)
            step.rollback()
    assert statements(captured) == []
    assert run_store.commits == 0


def test_writes_outside_a_step_commit_at_once_each(store):
    session, run_store, database = store
    with CaptureQueriesContext(connection) as captured:
        database.put_state("plan", 1)
        files(database).write("notes.md", "x")
        database.reset()
    assert shape(captured) == [
        "SAVEPOINT",
        "INSERT sessions_app_sessionstateentry",
        "RELEASE",
        "SAVEPOINT",
        "INSERT sessions_app_virtualfile",
        "RELEASE",
        "SAVEPOINT",
        "DELETE sessions_app_sessionstateentry",
        "RELEASE",
    ]
    assert stored_state(session) == {}
    assert stored_files(session) == {"notes.md": "x"}
    assert run_store.commits == 3


# -- on_commit and commits ------------------------------------------------------------


def test_on_commit_hears_each_commits_rows_once(store):
    session, run_store, database = store
    heard = Heard()
    run_store.on_commit = heard
    call = provider_call(session)
    cited = citations(session, call, 2)
    run_store.add([call, *cited])
    denial = PolicyDenial(session=session, policy_name="p")
    first, dropped, second = (invocation(session, n) for n in (1, 99, 2))
    with database.transaction():
        with database.transaction():
            database.put_state("plan", 1)
            run_store.add([first])
        with database.transaction() as handler:
            run_store.add([dropped])
            handler.rollback()
        run_store.add([denial, second])
    with database.transaction():  # state only: no rows to hear of
        database.put_state("plan", 2)
    assert heard.commits == [[call, *cited], [first, denial, second]]
    assert all(row.pk is not None for rows in heard.commits for row in rows)
    assert run_store.commits == 3


def test_commits_counts_the_commits_made(store):
    session, run_store, database = store
    counts = [run_store.commits]
    run_store.add([provider_call(session)])
    counts.append(run_store.commits)
    with database.transaction():
        run_store.add([invocation(session, 1)])
        counts.append(run_store.commits)  # not yet
    counts.append(run_store.commits)
    with pytest.raises(RuntimeError), database.transaction():
        run_store.add([invocation(session, 2)])
        raise RuntimeError
    counts.append(run_store.commits)
    database.put_state("plan", 1)
    counts.append(run_store.commits)
    assert counts == [0, 1, 1, 2, 2, 3]


def test_rows_with_and_without_a_primary_key_are_written_together(store):
    session, run_store, database = store
    taken = invocation(session, 1)
    taken.pk = 10_000_001
    with database.transaction():
        database.put_state("plan", 1)
        run_store.add([invocation(session, 2), taken, invocation(session, 3)])
    rows = dict(
        ToolInvocation.objects.filter(session=session).values_list("sequence", "pk")
    )
    assert sorted(rows) == [1, 2, 3]
    assert rows[1] == 10_000_001
