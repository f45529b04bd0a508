"""Hostile checks of a step's writes (``sessions_app/steps.py``,
``sessions_app/inserts.py``, ``sessions_app/runs/state.py``; ADR 0016).

The state slices of a step wait for its end, but what a run reads and what
commits must be exactly what immediate writes with a savepoint per step gave
(ADR 0008): a random program of nested steps, state writes, resets, file
writes, audit rows, effects, rollbacks and exceptions runs against the
database session and against a model of those semantics, compared after every
operation. Audit rows may also be held back for the next effect (ADR 0018):
what is committed plus what is held must be what the model committed, and
nothing else may commit while rows are held.

Also: a value JSON cannot write is refused by ``put_state`` (not at the step's
end, which would lose the whole call); hostile text in every column goes
through a real step (one query on PostgreSQL) as it is; a step whose last
insert fails commits nothing of it, whichever way its rows are written."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext
from sessions_app.steps import StepWriter

from sessions_app import inserts
from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    SessionStateEntry,
    ToolInvocation,
)
from sessions_app.runs.state import DatabaseFilesystem, DatabaseSession
from tests.sessions_app.factories import AgentSessionFactory
from tests.sessions_app.step_rows import invocation

pytestmark = pytest.mark.django_db

KEYS = ("a", "b", "c")
PATHS = ("x.md", "y.md")


class Boom(Exception):
    pass


@dataclass
class Reference:
    """Immediate writes; a step restores what it began with when it rolls
    back; what the outermost step ends with is committed."""

    state: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    rows: set[int] = field(default_factory=set)
    committed: tuple[dict[str, Any], dict[str, str], set[int]] = field(
        default_factory=lambda: ({}, {}, set())
    )
    frames: list[tuple[dict[str, Any], dict[str, str], set[int]]] = field(
        default_factory=list
    )

    def snapshot(self) -> tuple[dict[str, Any], dict[str, str], set[int]]:
        return dict(self.state), dict(self.files), set(self.rows)

    def changed(self) -> None:
        if not self.frames:
            self.committed = self.snapshot()

    def begin(self) -> None:
        self.frames.append(self.snapshot())

    def end(self, kept: bool) -> None:
        frame = self.frames.pop()
        if not kept:
            self.state, self.files, self.rows = (
                dict(frame[0]),
                dict(frame[1]),
                set(frame[2]),
            )
        self.changed()


class Program:
    def __init__(self, seed: int, session: AgentSession) -> None:
        self.random = random.Random(seed)
        self.session = session
        self.reference = Reference()
        self.database = DatabaseSession(session, StepWriter(), fresh=True)
        self.sequence = 0
        self.trace: list[str] = []
        # what was committed when rows began to be held back
        self.pinned: tuple[dict[str, Any], dict[str, str]] | None = None

    @property
    def files(self) -> DatabaseFilesystem:
        found = self.database.resources.get(DatabaseFilesystem)
        assert found is not None
        return found

    def check_reads(self) -> None:
        for key in KEYS:
            assert self.database.get_state(key) == self.reference.state.get(key), (
                key,
                self.trace,
            )
        for path in PATHS:
            expected = self.reference.files.get(path)
            if expected is None:
                assert not self.files.exists(path), (path, self.trace)
            else:
                assert self.files.read(path) == expected, (path, self.trace)

    def check_committed(self) -> None:
        state, files, rows = self.reference.committed
        stored = dict(
            SessionStateEntry.objects.filter(session=self.session).values_list(
                "key", "value"
            )
        )
        assert stored == state, self.trace
        stored_files = dict(self.session.files.values_list("path", "content"))
        assert stored_files == files, self.trace
        written = set(
            ToolInvocation.objects.filter(session=self.session).values_list(
                "sequence", flat=True
            )
        )
        held = {
            row.sequence
            for row in self.database.writer.held
            if isinstance(row, ToolInvocation)
        }
        assert not written & held, self.trace
        assert written | held == rows, self.trace
        if not held:
            self.pinned = None
        elif self.pinned is None:
            self.pinned = (stored, stored_files)
        else:  # nothing else committed while rows were held back
            assert (stored, stored_files) == self.pinned, self.trace

    def operation(self, depth: int) -> None:
        choice = self.random.random()
        if choice < 0.3:
            key, value = self.random.choice(KEYS), self.random.randrange(100)
            self.trace.append(f"{'  ' * depth}put {key}={value}")
            self.database.put_state(key, {"v": value})
            self.reference.state[key] = {"v": value}
            self.reference.changed()
        elif choice < 0.4:
            self.trace.append(f"{'  ' * depth}reset")
            self.database.reset()
            self.reference.state.clear()
            self.reference.changed()
        elif choice < 0.5:
            path, content = self.random.choice(PATHS), str(self.random.randrange(100))
            self.trace.append(f"{'  ' * depth}write {path}={content}")
            self.files.write(path, content)
            self.reference.files[path] = content
            self.reference.changed()
        elif choice < 0.6:
            self.sequence += 1
            self.trace.append(f"{'  ' * depth}row {self.sequence}")
            self.database.writer.add([self.invocation()])
            self.reference.rows.add(self.sequence)
            self.reference.changed()
        elif choice < 0.65:
            self.trace.append(f"{'  ' * depth}read")
            self.check_reads()
        elif choice < 0.7:  # a handler or a provider request is next
            self.trace.append(f"{'  ' * depth}settle")
            self.database.writer.settle()
        elif depth < 4:
            self.step(depth)

    def invocation(self) -> ToolInvocation:
        return ToolInvocation(
            session=self.session,
            sequence=self.sequence,
            turn=1,
            name="echo",
            call_id=f"call_{self.sequence}",
            success=True,
            event_id=uuid.uuid4(),
        )

    def step(self, depth: int) -> None:
        outcome = self.random.choice(("keep", "keep", "rollback", "raise"))
        self.trace.append(f"{'  ' * depth}step ({outcome})")
        self.reference.begin()
        try:
            with self.database.transaction() as handle:
                for _ in range(self.random.randrange(6)):
                    self.operation(depth + 1)
                if outcome == "rollback":
                    handle.rollback()
                elif outcome == "raise":
                    raise Boom
        except Boom:
            pass
        self.reference.end(kept=outcome == "keep")
        self.trace.append(f"{'  ' * depth}end")
        self.check_reads()

    def run(self, length: int) -> None:
        for _ in range(length):
            if self.random.random() < 0.7:
                self.step(0)
            else:
                self.operation(0)
            self.check_reads()
            self.check_committed()
            if self.random.random() < 0.1:  # a resumed run reads what committed
                self.trace.append("resume")
                self.database.writer.flush()  # (a crash would lose them)
                self.database = DatabaseSession(self.session, StepWriter())
                self.check_reads()
        self.database.writer.flush()  # the run's end writes what is held
        self.check_committed()


@pytest.mark.parametrize("seed", range(60))
def test_a_random_program_reads_and_commits_what_immediate_writes_would(seed):
    Program(seed, AgentSessionFactory.create()).run(12)


# -- a value the store cannot hold is refused by put_state, not at the step's end


def store() -> tuple[AgentSession, StepWriter, DatabaseSession]:
    session = AgentSessionFactory.create()
    writer = StepWriter()
    return session, writer, DatabaseSession(session, writer)


# JSON cannot write an integer this long (Python refuses to convert it to text)
HUGE = 10**5000


@pytest.mark.parametrize("read_first", [False, True])
def test_an_integer_json_cannot_write_is_refused_by_put_state(read_first):
    session, writer, database = store()
    with database.transaction():
        if read_first:  # the kept reads, or none (a resumed run's first write)
            assert database.get_state("n") is None
        with database.transaction():  # the handler's, which goes on
            with pytest.raises(ValueError, match="State 'n'"):
                database.put_state("n", {"digits": [HUGE]})
            database.put_state("other", 1)
        writer.add([invocation(session, 1)])
    # the step committed: its audit row and its other write, not the refused one
    assert ToolInvocation.objects.filter(session=session).count() == 1
    assert dict(
        SessionStateEntry.objects.filter(session=session).values_list("key", "value")
    ) == {"other": 1}
    assert database.get_state("n") is None
    assert database.get_state("other") == 1


def test_an_integer_json_cannot_write_is_refused_outside_a_step_too():
    session, _, database = store()
    with pytest.raises(ValueError, match="State 'n'"):
        database.put_state("n", HUGE)
    assert not SessionStateEntry.objects.filter(session=session).exists()
    assert database.get_state("n") is None


# -- hostile text through a real step (one query on PostgreSQL) ---------------------

HOSTILE = [
    "%s",
    "%(x)s",
    "%%",
    "100%",
    "';DROP TABLE sessions_app_toolinvocation;--",
    '"); DELETE FROM x; --',
    "\\",
    "\\x00 \\u0000 \\\\",
    "$$ $tag$ E'\\n'",
    "?",
    ":name",
    "\u202e\ufeff\U0001f600",
]


def write_hostile_step(
    database: DatabaseSession,
    writer: StepWriter,
    session: AgentSession,
    sequence: int,
    payload: dict[str, Any],
    big: str,
) -> None:
    row = invocation(session, sequence)
    row.params = payload
    row.value = {"big": big} if sequence == 2 else payload
    row.raw_arguments = row.message = "".join(HOSTILE)
    row.rendered_output = big if sequence == 3 else HOSTILE[sequence]
    with database.transaction():
        with database.transaction():
            database.put_state(HOSTILE[sequence], payload)
            database.put_state("big", big)
        writer.add([row])


# as a run writes: autocommit between steps, each step's statements in one query
@pytest.mark.django_db(transaction=True)
def test_hostile_text_in_every_column_of_a_step_is_stored_as_it_is():
    session, writer, database = store()
    big = "%s" * 1_000_000  # 2 MB of placeholders
    payload = {text: [text, {text: text}] for text in HOSTILE}
    # three steps: the first compiles each statement, the others reuse its text
    with CaptureQueriesContext(connection) as captured:  # the debug cursor's log
        for sequence in (1, 2, 3):
            write_hostile_step(database, writer, session, sequence, payload, big)
    if connection.vendor == "postgresql":  # each step one query
        assert len(captured.captured_queries) == 3
        assert all("%s" in query["sql"] for query in captured.captured_queries)
    stored = {
        row.sequence: row for row in ToolInvocation.objects.filter(session=session)
    }
    assert sorted(stored) == [1, 2, 3]
    for sequence, row in stored.items():
        assert row.params == payload
        assert row.value == ({"big": big} if sequence == 2 else payload)
        assert row.raw_arguments == row.message == "".join(HOSTILE)
        assert row.rendered_output == (big if sequence == 3 else HOSTILE[sequence])
    reread = DatabaseSession(session, StepWriter())  # from the database
    for text in HOSTILE[1:4]:
        assert reread.get_state(text) == payload
    assert reread.get_state("big") == big
    assert SessionStateEntry.objects.filter(session=session).count() == 4


# -- a step whose end fails commits nothing of it, whichever way it is written ------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "shape", ["together", "pointing", "many", "file", "nested-file"]
)
def test_a_step_whose_last_insert_fails_commits_none_of_it(shape):
    session, writer, database = store()
    duplicate = invocation(session, 1)
    writer.add([duplicate])  # outside a step: written at once
    with pytest.raises(IntegrityError), database.transaction():
        with database.transaction():  # the handler's
            database.put_state("plan", {"steps": 1})
            if shape == "nested-file":
                files_of(database).write("notes.md", "draft")
            database.put_state("memory", {"read": []})
        if shape == "file":
            files_of(database).write("notes.md", "draft")
        database.put_state("plan", {"steps": 2})
        if shape == "pointing":  # rows pointing at each other: not one query
            call = ProviderCall(session=session, turn=1, event_id=uuid.uuid4())
            writer.add([call, Citation(session=session, provider_call=call, url="u")])
        if shape == "many":
            writer.add(
                [
                    PolicyDenial(session=session, policy_name="p", tool_name="t")
                    for _ in range(inserts.MAX_ROWS_TOGETHER + 1)
                ]
            )
        writer.add([PolicyDenial(session=session, policy_name="p", tool_name="t")])
        again = invocation(session, 2)
        again.event_id = duplicate.event_id
        writer.add([again])
    assert not SessionStateEntry.objects.filter(session=session).exists()
    assert not session.files.exists()
    assert not PolicyDenial.objects.filter(session=session).exists()
    assert not ProviderCall.objects.filter(session=session).exists()
    assert ToolInvocation.objects.filter(session=session).count() == 1
    assert database.get_state("plan") is None
    # the writer and the connection go on
    with database.transaction():
        database.put_state("plan", {"steps": 3})
        writer.add([invocation(session, 3)])
    assert database.get_state("plan") == {"steps": 3}
    assert ToolInvocation.objects.filter(session=session).count() == 2


def files_of(database: DatabaseSession) -> DatabaseFilesystem:
    found = database.resources.get(DatabaseFilesystem)
    assert found is not None
    return found


def test_rows_with_and_without_a_primary_key_are_written_together():
    session, writer, database = store()
    taken = invocation(session, 1)
    taken.pk = 10_000_001
    with database.transaction():
        database.put_state("plan", 1)
        writer.add([invocation(session, 2), taken, invocation(session, 3)])
    with database.transaction():  # the same shapes again: the texts reused
        writer.settle()  # a handler ran: the step's rows do not wait
        again = invocation(session, 4)
        again.pk = 20_000_000
        writer.add([again])
        writer.add([invocation(session, 5)])
    rows = dict(
        ToolInvocation.objects.filter(session=session).values_list("sequence", "pk")
    )
    assert sorted(rows) == [1, 2, 3, 4, 5]
    assert rows[1] == 10_000_001 and rows[4] == 20_000_000
    assert database.get_state("plan") == 1
