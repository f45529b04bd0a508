"""A run's writes, one transaction per step, in the fewest statements.

A *step* is what must commit together: a provider call with its citations,
or a local tool call with its policy denials, state changes and audit row
(``DatabaseSession.transaction()``, which the executor opens around each call
and, nested, around its handler). The recorders build unsaved rows
(``recording.py``); ``StepWriter`` writes them:

- rows recorded outside a step are held back for the next effect (below);
- rows recorded inside a step, and the state slices written in it
  (``upsert()``), wait for its end and are written just before it commits,
  one ``INSERT`` per run of rows of one model (``inserts.py``: on PostgreSQL
  all of a step's statements in one round trip, atomic without a ``BEGIN``);
- a step opens a database transaction only when something must be written
  before its end (a file: ``before_write()``, which also writes the state
  slices waiting so far, each in its own step's transaction or savepoint);
  a call that writes only state costs no ``BEGIN`` and no savepoint;
- a step that rolls back (a failed handler's nested step, or any exception)
  drops the rows and state slices recorded in it, and its database writes
  if it made any, as ``atomic()`` would.

Rows that record something without an effect wait for the next effect
(ADR 0018): those recorded outside a step (a provider call and what came with
it) and those of a step in which nothing with an effect ran and no state was
written (a denied or rejected call, or a call to a handler declared
read-only: ADR 0019). ``settle()``, which the runtime calls before anything
with an effect (a provider request, a handler not declared read-only, a
policy's ``before_run``), writes them;
so do the next write that cannot wait and the pause (``flush()``), and the
run's end takes them (``take()``) into its own query. A crash before then
loses only rows that a resumed run records again the same way (the response
is requested again, the call is refused again or its read-only handler
run again: nothing happened outside the run since).

So a provider call is committed before its tool calls with an effect run, and
a tool call's
state changes and its rows commit together or not at all: a worker crash loses
no recorded effect and never leaves half of a step (docs/run-lifecycle.md). On
PostgreSQL the steps commit without waiting for the WAL flush unless
``WINK_RUN_DURABLE_COMMITS`` (``run_commits()``; ADR 0008).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import sys
import time
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any, cast

from django.conf import settings
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    connection,
    models,
    transaction,
)

from sessions_app import inserts

logger = logging.getLogger(__name__)

ExcInfo = tuple[type[BaseException] | None, BaseException | None, TracebackType | None]
NO_ERROR: ExcInfo = (None, None, None)

# A step whose commit lost the database connection after its handler ran is
# written again on a new connection after each of these pauses (seconds)
# before the run gives up to its resume (which would run the handler again).
RECOMMIT_DELAYS = (0.1, 0.5, 2.0)


class StepHandle:
    """Handed out by ``StepWriter.step()``: ``rollback()`` undoes the step."""

    def __init__(self) -> None:
        self.rolled_back = False

    def rollback(self) -> None:
        self.rolled_back = True


@dataclasses.dataclass(frozen=True)
class _Upsert:
    row: models.Model
    unique_fields: tuple[str, ...]
    update_fields: tuple[str, ...]

    def key(self) -> tuple[object, ...]:
        meta = self.row._meta
        return (
            type(self.row),
            *(
                getattr(self.row, cast(models.Field, meta.get_field(name)).attname)
                for name in self.unique_fields
            ),
        )


@dataclasses.dataclass
class _Step:
    mark: int  # rows recorded before this step began
    upsert_mark: int  # upserts waiting before this step began
    handle: StepHandle = dataclasses.field(default_factory=StepHandle)
    atomic: Any = None  # the ``transaction.atomic()`` it entered, once it writes
    effect: bool = False  # something with an effect ran in it (``settle()``)


def _write(rows: Sequence[models.Model], upserts: Sequence[_Upsert]) -> None:
    """The upserts (the last of each key) then the rows, atomically."""
    inserts.write(_batches(rows, upserts))


def _batches(
    rows: Sequence[models.Model], upserts: Sequence[_Upsert] = ()
) -> list[inserts.Batch]:
    """``_write``'s batches: the upserts, then the rows in their order (a
    batch per run of rows of one model: a provider call before its
    citations, which point at it)."""
    last: dict[tuple[object, ...], _Upsert] = {}
    for upsert in upserts:
        last.pop(upsert.key(), None)  # keep the order of the last writes
        last[upsert.key()] = upsert
    batches: list[inserts.Batch] = []
    for upsert in last.values():
        if not batches or batches[-1].model is not type(upsert.row):
            batches.append(
                inserts.Batch(
                    type(upsert.row), [], upsert.unique_fields, upsert.update_fields
                )
            )
        batches[-1].rows.append(upsert.row)
    upserting = len(batches)  # rows never join an upsert's batch
    for row in rows:
        if len(batches) > upserting and batches[-1].model is type(row):
            batches[-1].rows.append(row)
        else:
            batches.append(inserts.Batch(type(row), [row]))
    return batches


class StepWriter:
    """The writes of one run (one per run; not thread-safe, as a run is not)."""

    def __init__(self) -> None:
        self._rows: list[models.Model] = []
        self._upserts: list[_Upsert] = []
        self._steps: list[_Step] = []
        # Rows held back for the next effect (outside any step's transaction).
        self._held: list[models.Model] = []

    @property
    def in_step(self) -> bool:
        return bool(self._steps)

    @property
    def held(self) -> tuple[models.Model, ...]:
        """The rows held back for the next effect, in order."""
        return tuple(self._held)

    def add(self, rows: Sequence[models.Model]) -> None:
        """Rows to record: written at the end of the open step, or with the
        next effect (``settle()``) or write."""
        if self._steps:
            self._rows.extend(rows)
        else:
            self._held.extend(rows)

    def settle(self) -> None:
        """Something with an effect is about to run: the rows waiting for
        one are written now, and the open steps' rows will not wait."""
        for step in self._steps:
            step.effect = True
        self.flush()

    def flush(self) -> None:
        """Write the rows held back for an effect, now."""
        self._write_held([], [])

    def _write_held(
        self, rows: Sequence[models.Model], upserts: Sequence[_Upsert]
    ) -> None:
        """The rows held back, then ``rows`` and ``upserts`` (in one query
        where they can go together). The held rows stand even if the rest
        fails: they record what happened before it."""
        held, self._held = self._held, []
        if held:
            inserts.write_after(_batches(held), _batches(rows, upserts))
        else:
            _write(rows, upserts)

    def take(self) -> list[inserts.Batch]:
        """The rows held back for an effect, as batches for the caller to
        write (the run's end, in its own query); they are held no more."""
        rows, self._held = self._held, []
        return _batches(rows)

    def upsert(
        self,
        row: models.Model,
        *,
        unique_fields: tuple[str, ...],
        update_fields: tuple[str, ...],
    ) -> None:
        """``row`` inserted, or its ``update_fields`` written over the row
        with the same ``unique_fields``: at the end of the open step, or now.
        Until then ``waiting()`` shows it."""
        upsert = _Upsert(row, unique_fields, update_fields)
        if self._steps:
            self._upserts.append(upsert)
        else:
            self._write_held([], [upsert])

    def waiting(self, model: type[models.Model]) -> list[models.Model]:
        """The upserted rows of ``model`` not written yet, in order."""
        return [u.row for u in self._upserts if type(u.row) is model]

    def before_write(self) -> None:
        """Open the transaction of every open step that has none yet (the
        outermost a transaction, the nested ones savepoints in it), writing
        the upserts waiting in each before opening the next. Call it before
        any write that belongs to the open step. The rows waiting for an
        effect are written first, in their own transaction."""
        self.flush()
        upserts, self._upserts = self._upserts, []
        for index, step in enumerate(self._steps):
            if step.atomic is None:
                atomic = transaction.atomic()
                atomic.__enter__()
                step.atomic = atomic
            inner = self._steps[index + 1 :]
            end = inner[0].upsert_mark if inner else len(upserts)
            _write([], upserts[step.upsert_mark : end])
        for step in self._steps:
            step.upsert_mark = 0

    @contextlib.contextmanager
    def step(self) -> Iterator[StepHandle]:
        step = _Step(mark=len(self._rows), upsert_mark=len(self._upserts))
        self._steps.append(step)
        try:
            yield step.handle
        except BaseException:
            self._end(step, sys.exc_info())
            raise
        self._end(step, NO_ERROR)

    def _end(self, step: _Step, error: ExcInfo) -> None:
        popped = self._steps.pop()
        assert popped is step, "steps end in the order they began"
        if error[0] is not None or step.handle.rolled_back:
            del self._rows[step.mark :]
            del self._upserts[step.upsert_mark :]
            if step.atomic is not None:
                if error[0] is None:
                    transaction.set_rollback(True)
                step.atomic.__exit__(*error)
            return
        if self._steps:  # nested: its writes commit with the enclosing step
            if step.atomic is not None:
                step.atomic.__exit__(*NO_ERROR)
            return
        rows, self._rows = self._rows, []
        upserts, self._upserts = self._upserts, []
        if step.atomic is None:
            if not step.effect and not upserts:
                self._held.extend(rows)  # nothing ran, nothing changed
                return
            self._commit(rows, upserts)
            return
        try:
            _write(rows, upserts)
        except BaseException:
            step.atomic.__exit__(*sys.exc_info())
            raise
        step.atomic.__exit__(*NO_ERROR)

    def _commit(self, rows: Sequence[models.Model], upserts: Sequence[_Upsert]) -> None:
        """A finished top-level step's rows and state, with the rows held
        back. Its handler has run: if the connection is lost meanwhile, the
        rows still here are written again on a new connection
        (``recommit``) rather than left to the resume, which would run the
        handler again. Inside a caller's transaction nothing can be written
        again: the error goes up as it came."""
        held = list(self._held)
        try:
            self._write_held(rows, upserts)
        except (OperationalError, InterfaceError) as error:
            if connection.in_atomic_block:
                raise
            recommit([*_batches(held), *_batches(rows, upserts)], error)


def recommit(batches: Sequence[inserts.Batch], error: Exception) -> None:
    """Write ``batches`` again after their write lost the connection
    (``error``), on a new connection with the run's commit setting, after
    each of ``RECOMMIT_DELAYS``; ``error`` (or the last one) if every attempt
    loses it too. The lost write may have committed (only its reply was
    lost): the rows already stored are left out (``_unstored``), so nothing
    is written twice."""
    for attempt, delay in enumerate(RECOMMIT_DELAYS, start=1):
        logger.warning(
            "A step's commit lost the database connection (%s); writing it "
            "again on a new connection (%d/%d)",
            type(error).__name__,
            attempt,
            len(RECOMMIT_DELAYS),
        )
        time.sleep(delay)
        try:
            reconnect()
            inserts.write(_unstored(batches))
        except (OperationalError, InterfaceError) as again:
            error = again
            continue
        return
    raise error


def reconnect() -> None:
    """Drop the broken connection and open a new one with the run's commit
    setting, if the run had relaxed it (``run_commits``)."""
    relaxed = getattr(connection, RELAXED, False)
    try:
        connection.close()
    except Exception:  # a dead connection may fail to close: it is gone anyway
        logger.debug("Closing the broken connection failed", exc_info=True)
    setattr(connection, RELAXED, False)  # a new connection has the server's
    if relaxed:
        relax_commits()


def _unstored(batches: Sequence[inserts.Batch]) -> list[inserts.Batch]:
    """``batches`` without the rows a lost write did store: rows whose event
    id is stored (every audit row of a step has one; what one write held
    commits whole or not at all), and rows that point at one of those (a
    provider call's citations, written with it). State upserts stay: written
    again, they write the same values."""
    stored: set[int] = set()  # id() of the rows found stored
    kept: list[inserts.Batch] = []
    for batch in batches:
        rows = batch.rows
        if not (batch.update_fields or batch.ignore_conflicts):
            rows = _not_stored(batch.model, rows, stored)
        if rows:
            kept.append(dataclasses.replace(batch, rows=rows))
    return kept


def _not_stored(
    model: type[models.Model], rows: list[models.Model], stored: set[int]
) -> list[models.Model]:
    """``rows`` but those found stored (added to ``stored``)."""
    event_id = next(
        (f for f in model._meta.concrete_fields if f.name == "event_id"), None
    )
    if event_id is not None:
        # as the field reads them back (a recorder may hold an id as text)
        ids = [event_id.to_python(event_id.value_from_object(row)) for row in rows]
        found = set(
            model._default_manager.filter(event_id__in=ids).values_list(
                "event_id", flat=True
            )
        )
        for row, row_id in zip(rows, ids, strict=True):
            if row_id in found:
                stored.add(id(row))
                row._state.adding = False
    # rows that point at a stored row (by the object, cached on the row: a
    # key the database gives is not set on it when the reply was lost)
    relations = [
        field.name for field in model._meta.concrete_fields if field.is_relation
    ]
    return [
        row
        for row in rows
        if id(row) not in stored
        and not any(
            getattr(model, name).is_cached(row) and id(getattr(row, name)) in stored
            for name in relations
        )
    ]


@contextlib.contextmanager
def run_commits(*, by_claim: bool = False) -> Iterator[None]:
    """Around a run: on PostgreSQL, its commits do not wait for the WAL flush
    (``synchronous_commit=off``) unless ``WINK_RUN_DURABLE_COMMITS``. Each
    commit stays atomic and is durable against a crash of the worker; only a
    crash of the database server can lose the last ones (ADR 0008). The
    connection's own setting is restored afterwards. Nested, it does nothing
    (an inline start relaxes the session's creation and its run at once).

    ``by_claim``: the run's first statement is its claim, which sends the
    setting itself (``relaxing()``): one round trip less (ADR 0017)."""
    if getattr(connection, RELAXED, False) or getattr(connection, PENDING, False):
        yield
        return
    if not _relaxes():
        yield
        return
    if by_claim and inserts.one_query():
        setattr(connection, PENDING, True)
    else:
        relax_commits()
    try:
        yield
    finally:
        setattr(connection, PENDING, False)
        # A broken connection is dropped anyway, with its setting.
        with contextlib.suppress(DatabaseError):
            durable_commits()


RELAXED = "wink_relaxed_commits"  # on the connection while its commits are relaxed
PENDING = "wink_relax_pending"  # the claim is to relax them (run_commits(by_claim))
RELAX = "SET synchronous_commit TO off;\n"
RESTORE = "RESET synchronous_commit;\n"


def _relaxes() -> bool:
    return connection.vendor == "postgresql" and not settings.WINK_RUN_DURABLE_COMMITS


def relax_commits() -> bool:
    """``run_commits``'s setting on the current connection (again, after a
    reconnect); whether it applies here."""
    setattr(connection, PENDING, False)
    if not _relaxes():
        return False
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit TO off")
    setattr(connection, RELAXED, True)
    return True


@contextlib.contextmanager
def relaxing() -> Iterator[str]:
    """For a run's claim: the ``SET`` to send before it in the same query
    (``""`` when there is none). It counts as applied from the start, since
    the claim may fail after the server applied it (a converter, a signal):
    the run's way out then sends a ``RESET``, needed or not. A claim that
    cannot send it calls ``relax_now()`` instead."""
    if not getattr(connection, PENDING, False):
        yield ""
        return
    setattr(connection, PENDING, False)
    setattr(connection, RELAXED, True)
    yield RELAX


def relax_now() -> None:
    """The setting ``run_commits(by_claim=True)`` left to the claim, now."""
    if getattr(connection, PENDING, False):
        relax_commits()


@contextlib.contextmanager
def restoring() -> Iterator[str]:
    """For a run's last statement: the ``RESET`` to send before it in the
    same query (``""`` when there is none, or it went alone just now),
    marked as applied once that query succeeded. The query then commits with
    the server's own setting: the log is flushed up to it."""
    if not getattr(connection, RELAXED, False) or not inserts.one_query():
        durable_commits()
        yield ""
        return
    yield RESTORE
    setattr(connection, RELAXED, False)


def durable_commits() -> None:
    """The connection's own ``synchronous_commit`` again, if a run relaxed it.
    A run's end calls it before its last commit, which then flushes the log
    up to itself: every step of the run is on disk when the run is over."""
    if not getattr(connection, RELAXED, False):
        return
    setattr(connection, RELAXED, False)
    with connection.cursor() as cursor:
        cursor.execute("RESET synchronous_commit")
