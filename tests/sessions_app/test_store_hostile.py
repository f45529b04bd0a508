"""Hostile checks of the run's store (``sessions_app/runs/store``) through the
database session (``sessions_app/state.py``).

A step's writes are kept in memory until the outermost step ends, but what a
run reads and what commits must be exactly what immediate writes with a
savepoint per step would give: a random program of nested steps, state
writes, resets, file writes and deletes, audit rows, rollbacks and exceptions
runs against the store and against a model of those semantics, compared after
every operation (reads) and after every outermost step (the database, from
its rows, and what ``on_commit`` heard). Nothing is held back: once no step
is open, everything written is committed.

Also: values the store cannot hold (NUL bytes, lone surrogates, numbers JSON
cannot write, keys and paths too long) are refused with a ``ValueError`` when
written, not at the step's end, which would lose the whole call: the rest of
the step commits. Hostile text in every column goes through a real step as
it is."""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import connection, models
from django.test.utils import CaptureQueriesContext

from sessions_app.models import (
    AgentSession,
    SessionStateEntry,
    ToolInvocation,
    VirtualFile,
)
from sessions_app.runs.state import DatabaseFilesystem, DatabaseSession
from sessions_app.runs.store import RunStore
from tests.sessions_app.factories import AgentSessionFactory
from tests.sessions_app.step_rows import invocation

pytestmark = pytest.mark.django_db

KEYS = ("a", "b", "c")
PATHS = ("x.md", "y.md", "dir/z.md")


class Boom(Exception):
    pass


Snapshot = tuple[dict[str, Any], dict[str, str], set[int]]


@dataclass
class Reference:
    """Immediate writes; a step restores what it began with when it rolls
    back; what the outermost step ends with is committed."""

    state: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    rows: set[int] = field(default_factory=set)
    committed: Snapshot = field(default_factory=lambda: ({}, {}, set()))
    frames: list[Snapshot] = field(default_factory=list)

    def snapshot(self) -> Snapshot:
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


# Values a handler may try to store; the store must refuse them (ValueError)
# and lose nothing else.
HUGE = 10**5000  # JSON cannot write an integer this long
UNSTORABLE: list[Any] = [
    "nul\x00byte",
    "lone \ud800 surrogate",
    {"nested": ["\udfff"]},
    {"key\x00": 1},
    HUGE,
    {"digits": [HUGE]},
    float("nan"),
    float("inf"),
]
BAD_KEYS = ["k" * 101, "nul\x00key", "\ud83d"]
BAD_PATHS = ["p" * 256, "nul\x00.md", "\udc80.md"]
BAD_CONTENT = ["nul\x00content", "lone \ud800"]


class Program:
    def __init__(self, seed: int, session: AgentSession) -> None:
        self.random = random.Random(seed)
        self.session = session
        self.reference = Reference()
        self.heard: set[int] = set()
        self.store = RunStore(session, on_commit=self.hear)
        self.database = DatabaseSession(session, self.store, fresh=True)
        self.sequence = 0
        self.trace: list[str] = []

    def hear(self, rows: Sequence[models.Model]) -> None:
        for row in rows:
            assert isinstance(row, ToolInvocation)
            assert row.pk is not None, self.trace
            assert row.sequence not in self.heard, ("heard twice", self.trace)
            self.heard.add(row.sequence)

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
                with pytest.raises(FileNotFoundError):
                    self.files.read(path)
            else:
                assert self.files.read(path) == expected, (path, self.trace)
        assert self.files.list() == sorted(self.reference.files), self.trace
        assert self.files.list("dir/") == sorted(
            path for path in self.reference.files if path.startswith("dir/")
        ), self.trace

    def check_committed(self) -> None:
        """Between outermost steps: the database holds exactly what the model
        committed (nothing waits), and on_commit heard each row once."""
        assert not self.store.in_step
        state, files, rows = self.reference.committed
        assert (state, files, rows) == self.reference.snapshot(), self.trace
        stored = dict(
            SessionStateEntry.objects.filter(session=self.session).values_list(
                "key", "value"
            )
        )
        assert stored == state, self.trace
        stored_files = dict(
            VirtualFile.objects.filter(session=self.session).values_list(
                "path", "content"
            )
        )
        assert stored_files == files, self.trace
        written = list(
            ToolInvocation.objects.filter(session=self.session).values_list(
                "sequence", flat=True
            )
        )
        assert sorted(written) == sorted(rows), self.trace  # each once
        assert self.heard == rows, self.trace

    def refused(self, depth: int) -> None:
        """A write the store cannot hold: refused, nothing else changes."""
        kind = self.random.choice(("value", "key", "path", "content"))
        self.trace.append(f"{'  ' * depth}refused {kind}")
        with pytest.raises(ValueError):
            if kind == "value":
                value = self.random.choice(UNSTORABLE)
                self.database.put_state(self.random.choice(KEYS), value)
            elif kind == "key":
                self.database.put_state(self.random.choice(BAD_KEYS), 1)
            elif kind == "path":
                self.files.write(self.random.choice(BAD_PATHS), "x")
            else:
                self.files.write(
                    self.random.choice(PATHS), self.random.choice(BAD_CONTENT)
                )

    def operation(self, depth: int) -> None:
        choice = self.random.random()
        if choice < 0.25:
            key, value = self.random.choice(KEYS), self.random.randrange(100)
            self.trace.append(f"{'  ' * depth}put {key}={value}")
            self.database.put_state(key, {"v": value})
            self.reference.state[key] = {"v": value}
            self.reference.changed()
        elif choice < 0.33:
            self.trace.append(f"{'  ' * depth}reset")
            self.database.reset()
            self.reference.state.clear()
            self.reference.changed()
        elif choice < 0.45:
            path, content = self.random.choice(PATHS), str(self.random.randrange(100))
            self.trace.append(f"{'  ' * depth}write {path}={content}")
            self.files.write(path, content)
            self.reference.files[path] = content
            self.reference.changed()
        elif choice < 0.53:
            path = self.random.choice(PATHS)
            self.trace.append(f"{'  ' * depth}delete {path}")
            if path in self.reference.files:
                self.files.delete(path)
                del self.reference.files[path]
                self.reference.changed()
            else:
                with pytest.raises(FileNotFoundError):
                    self.files.delete(path)
        elif choice < 0.63:
            self.sequence += 1
            self.trace.append(f"{'  ' * depth}row {self.sequence}")
            self.store.add([self.invocation()])
            self.reference.rows.add(self.sequence)
            self.reference.changed()
        elif choice < 0.68:
            self.refused(depth)
        elif choice < 0.73:
            self.trace.append(f"{'  ' * depth}read")
            self.check_reads()
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
                    # reads before the step's end still see its writes
                    # (Transaction.rollback: undone when the block exits)
                    if self.random.random() < 0.5:
                        self.check_reads()
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
                self.store = RunStore(self.session, on_commit=self.hear)
                self.database = DatabaseSession(self.session, self.store)
                self.check_reads()
        self.check_committed()


@pytest.mark.parametrize("seed", range(60))
def test_a_random_program_reads_and_commits_what_immediate_writes_would(seed):
    Program(seed, AgentSessionFactory.create()).run(12)


# -- values the store cannot hold are refused when written -----------------------------


def store() -> tuple[AgentSession, RunStore, DatabaseSession]:
    session = AgentSessionFactory.create()
    run_store = RunStore(session)
    return session, run_store, DatabaseSession(session, run_store)


@pytest.mark.parametrize("value", UNSTORABLE, ids=range(len(UNSTORABLE)))
@pytest.mark.parametrize("read_first", [False, True])
def test_a_value_the_store_cannot_hold_is_refused_and_the_step_goes_on(
    value, read_first
):
    session, run_store, database = store()
    with database.transaction():
        if read_first:  # the kept reads, or none (a resumed run's first write)
            assert database.get_state("n") is None
        with database.transaction():  # the handler's, which goes on
            with pytest.raises(ValueError, match="State 'n'"):
                database.put_state("n", value)
            database.put_state("other", 1)
            files_of(database).write("notes.md", "kept")
        run_store.add([invocation(session, 1)])
    # the step committed: its audit row and its other writes, not the refused one
    assert ToolInvocation.objects.filter(session=session).count() == 1
    assert dict(
        SessionStateEntry.objects.filter(session=session).values_list("key", "value")
    ) == {"other": 1}
    assert files_of(database).read("notes.md") == "kept"
    assert database.get_state("n") is None
    assert database.get_state("other") == 1


def test_a_value_too_deep_to_store_is_refused():
    session, _, database = store()
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValueError, match="nested too deeply"):
        database.put_state("deep", deep)
    assert not SessionStateEntry.objects.filter(session=session).exists()


@pytest.mark.parametrize("value", [*UNSTORABLE[:3], HUGE], ids=range(4))
def test_a_value_the_store_cannot_hold_is_refused_outside_a_step_too(value):
    session, run_store, database = store()
    with (
        CaptureQueriesContext(connection) as captured,
        pytest.raises(ValueError, match="State 'n'"),
    ):
        database.put_state("n", value)
    assert captured.captured_queries == []
    assert run_store.commits == 0
    assert not SessionStateEntry.objects.filter(session=session).exists()
    assert database.get_state("n") is None


@pytest.mark.parametrize(
    ("path", "content"),
    [*((path, "x") for path in BAD_PATHS), *(("ok.md", c) for c in BAD_CONTENT)],
)
def test_a_file_the_store_cannot_hold_is_refused_and_the_step_goes_on(path, content):
    session, run_store, database = store()
    with database.transaction():
        with pytest.raises(ValueError):
            files_of(database).write(path, content)
        database.put_state("plan", 1)
        run_store.add([invocation(session, 1)])
    assert not session.files.exists()
    assert database.get_state("plan") == 1
    assert ToolInvocation.objects.filter(session=session).count() == 1
    # reads of such a path find nothing and do not fail
    assert not files_of(database).exists(path)


# -- hostile text through a real step ---------------------------------------------

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


def files_of(database: DatabaseSession) -> DatabaseFilesystem:
    found = database.resources.get(DatabaseFilesystem)
    assert found is not None
    return found


# as a run writes: autocommit between steps
@pytest.mark.django_db(transaction=True)
def test_hostile_text_in_every_column_of_a_step_is_stored_as_it_is():
    session, run_store, database = store()
    big = "%s" * 1_000_000  # 2 MB of placeholders
    payload = {text: [text, {text: text}] for text in HOSTILE}
    for sequence in (1, 2, 3):
        row = invocation(session, sequence)
        row.params = payload
        row.value = {"big": big} if sequence == 2 else payload
        row.raw_arguments = row.message = "".join(HOSTILE)
        row.rendered_output = big if sequence == 3 else HOSTILE[sequence]
        with database.transaction():
            with database.transaction():
                database.put_state(HOSTILE[sequence], payload)
                database.put_state("big", big)
                files_of(database).write(HOSTILE[sequence], big)
            run_store.add([row])
    stored = {
        row.sequence: row for row in ToolInvocation.objects.filter(session=session)
    }
    assert sorted(stored) == [1, 2, 3]
    for sequence, row in stored.items():
        assert row.params == payload
        assert row.value == ({"big": big} if sequence == 2 else payload)
        assert row.raw_arguments == row.message == "".join(HOSTILE)
        assert row.rendered_output == (big if sequence == 3 else HOSTILE[sequence])
    reread = DatabaseSession(session)  # from the database
    for text in HOSTILE[1:4]:
        assert reread.get_state(text) == payload
        assert files_of(reread).read(text) == big
    assert reread.get_state("big") == big
    assert SessionStateEntry.objects.filter(session=session).count() == 4
    assert run_store.commits == 3
