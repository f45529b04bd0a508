"""``RunStore``: the one door through which a claimed run writes.

- ``add(rows)`` outside a step commits the rows at once: a provider call with
  its citations and native calls is in the database before anything acts on
  its response.
- ``step()`` opens a unit (``units.py``): the rows, state slices and files
  written in it commit together, in one transaction, when the outermost step
  ends, whatever the step did; a step that rolls back (or raises) writes
  nothing of its own.
- ``pause()`` and ``finish()`` are the run's last writes: each a conditional
  update under the worker's claim, committed durably (``commits.durable``).

Every write is one ``transaction.atomic()`` of ``bulk_create`` per model and
``QuerySet.update()``, fenced by the claim: its first statement renews the
lease under the worker's claim token (``Claim.hold``), so a worker that lost
its lease writes nothing more. A commit that loses the connection is made
again on a new connection (``commits.commit``), found done by its first row's
event id when only its reply was lost. docs/write-path.md has the crash table.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import models, transaction
from django.db.models import F
from django.utils import timezone

from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    SessionStateEntry,
    VirtualFile,
)
from sessions_app.models.search import begun
from sessions_app.runs.totals import ending_fields, totals
from tooling.models import CatalogRevision

from .claims import Claim, LeaseLost
from .commits import commit, durable
from .ended import announce
from .units import DELETED, Unit

Status = AgentSession.Status


def create(revision: CatalogRevision, session: AgentSession) -> None:
    """Store a new session, its search text and the catalog revision it runs
    (an identical revision already stored is left as it is), together."""
    with transaction.atomic():
        CatalogRevision.objects.bulk_create([revision], ignore_conflicts=True)
        session.save(force_insert=True)
        begun(session)  # its search text: the parameters, for now


class RunStore:
    """The writes of one run of ``session`` (not thread-safe, as a run is
    not); ``claim``: the worker's claim, which its pause and end need.

    ``on_commit`` hears of the rows of each commit once it is made (the
    sink's running totals)."""

    def __init__(
        self,
        session: AgentSession,
        *,
        claim: Claim | None = None,
        on_commit: Callable[[Sequence[models.Model]], None] | None = None,
    ) -> None:
        self.session = session
        self.claim = claim
        self.on_commit = on_commit
        self.commits = 0  # made so far: a run that commits makes progress
        self._units: list[Unit] = []

    # -- the audit rows ------------------------------------------------------

    @property
    def in_step(self) -> bool:
        return bool(self._units)

    def add(self, rows: Iterable[models.Model]) -> None:
        """Rows to record: at the end of the open step, or now (none: no
        commit, which would count as progress, ``commits``)."""
        rows = list(rows)
        if self._units:
            self._units[-1].rows.extend(rows)
        elif rows:
            self._commit(Unit(rows=rows))

    @contextlib.contextmanager
    def step(self) -> Iterator[Unit]:
        """A step: what is written in it commits when the outermost step
        ends well; nothing of it if it rolls back (``Unit.rollback()``) or
        raises."""
        unit = Unit()
        self._units.append(unit)
        try:
            yield unit
        finally:
            popped = self._units.pop()
            assert popped is unit, "steps end in the order they began"
        if unit.rolled_back:
            return
        if self._units:
            self._units[-1].absorb(unit)
        elif unit:
            self._commit(unit)

    # -- the session's working state ------------------------------------------

    def put_state(self, key: str, value_type: str, value: Any) -> None:
        self._unit(lambda unit: unit.put_state(key, value_type, value))

    def reset_state(self) -> None:
        self._unit(Unit.reset_state)

    def put_file(self, path: str, content: str) -> None:
        self._unit(lambda unit: unit.files.__setitem__(path, content))

    def delete_file(self, path: str) -> None:
        self._unit(lambda unit: unit.files.__setitem__(path, DELETED))

    def pending_state(self) -> tuple[bool, dict[str, tuple[str, Any]]]:
        """What the open steps wrote to the state and have not committed:
        whether they emptied it first, and the slices by key."""
        reset = False
        states: dict[str, tuple[str, Any]] = {}
        for unit in self._units:
            if unit.reset:
                reset, states = True, {}
            states.update(unit.states)
        return reset, states

    def pending_files(self) -> dict[str, str | None]:
        """The files the open steps wrote (or deleted: ``None``), by path."""
        files: dict[str, str | None] = {}
        for unit in self._units:
            files.update(unit.files)
        return files

    def _unit(self, change: Callable[[Unit], None]) -> None:
        """``change`` in the open step, or committed alone now."""
        if self._units:
            change(self._units[-1])
        else:
            unit = Unit()
            change(unit)
            self._commit(unit)

    # -- commits ---------------------------------------------------------------

    def _commit(self, unit: Unit) -> None:
        # a claim the process's lease renewal stopped (ended past its deadline,
        # cancelled, taken over) checks the claim in every commit
        fence = self.claim is not None and (
            self.claim.stopped or self.claim.fence_due()
        )
        # one row and nothing to check: its INSERT commits on its own (one
        # round trip instead of BEGIN, INSERT, COMMIT: docs/benchmarks.md)
        alone = not fence and len(unit.rows) == 1 and not unit.writes_state
        renewed = commit(
            lambda: self._write(unit, fence=fence, alone=alone),
            done=_done(unit.rows),
            atomic=not alone,
        )
        self.commits += 1
        if renewed is not None and self.claim is not None:
            self.claim.renewed(renewed)
        if self.on_commit is not None and unit.rows:
            self.on_commit(unit.rows)

    def _write(
        self, unit: Unit, *, fence: bool, alone: bool
    ) -> tuple[float, float] | None:
        """Write ``unit``; the time its fence renewed the lease, if it did.
        ``alone``: its one row, saved in autocommit (a failed save leaves the
        row new, so it can be saved again)."""
        if alone:
            unit.rows[0].save(force_insert=True)
            return None
        renewed = None
        if fence and self.claim is not None:
            renewed = self.claim.hold()  # only the claim's holder writes
        session = self.session
        if unit.reset:
            SessionStateEntry.objects.filter(session=session).delete()
        if unit.states:
            SessionStateEntry.objects.bulk_create(
                [
                    SessionStateEntry(
                        session=session, key=key, value_type=value_type, value=value
                    )
                    for key, (value_type, value) in unit.states.items()
                ],
                update_conflicts=True,
                unique_fields=["session", "key"],
                update_fields=["value_type", "value"],
            )
        deleted = [path for path, content in unit.files.items() if content is DELETED]
        if deleted:
            VirtualFile.objects.filter(session=session, path__in=deleted).delete()
        written = [
            VirtualFile(session=session, path=path, content=content)
            for path, content in unit.files.items()
            if content is not DELETED
        ]
        if written:
            VirtualFile.objects.bulk_create(
                written,
                update_conflicts=True,
                unique_fields=["session", "path"],
                update_fields=["content", "updated_at"],
            )
        # one INSERT per run of rows of one model, in their order (a
        # provider call before the citations that point at it)
        for _, rows in itertools.groupby(unit.rows, key=type):
            batch = list(rows)
            type(batch[0])._default_manager.bulk_create(batch)
        return renewed

    # -- the run's last writes ------------------------------------------------

    def pause(
        self, approval: ApprovalRequest, *, summed: Mapping[str, Any] | None = None
    ) -> None:
        pause(self._claimed(), approval, summed=summed)

    def finish(self, *, status: str, **ending: Any) -> None:
        finish(self._claimed(), status=status, **ending)

    def _claimed(self) -> Claim:
        if self.claim is None:
            raise ValueError("Only a claimed run pauses or ends (RunStore(claim=)).")
        return self.claim


def _done(rows: Sequence[models.Model]) -> Callable[[], bool]:
    """Whether a commit of ``rows`` whose reply was lost went through: its
    first row with an event id is stored (a commit is all or nothing). A
    commit without such a row (state and files only) writes the same values
    when made again: never done."""
    for row in rows:
        event_id = getattr(row, "event_id", None)
        if event_id is not None:
            manager = type(row)._default_manager
            return lambda: manager.filter(event_id=event_id).exists()
    return lambda: False


def pause(
    claim: Claim,
    approval: ApprovalRequest,
    *,
    summed: Mapping[str, Any] | None = None,
    now: datetime | None = None,
) -> None:
    """The claimed run waits for a human decision, with ``approval`` stored:
    ``awaiting_approval``, with no claim or lease, its attempts back to 0 and
    the time its deadline had left kept for the claim that resumes it; its
    usage and cost so far written (``summed``: the run's ``totals``, when its
    caller kept them). Committed durably. ``RunCancelled`` if someone asked
    to cancel it meanwhile, ``LeaseLost`` if another worker holds it: then
    neither is written."""
    now = now or timezone.now()
    deadline_at = claim.session.deadline_at
    left = 0
    if deadline_at is not None:
        left = max(0, int((deadline_at - now).total_seconds()))

    def write() -> None:
        durable()
        approval.save(force_insert=True)
        paused = AgentSession.objects.filter(
            claim.mine(), cancel_requested_at__isnull=True
        ).update(
            status=Status.AWAITING_APPROVAL,
            claim_token=None,
            lease_expires_at=None,
            attempts=0,
            pauses=F("pauses") + 1,
            deadline_left_seconds=left,
            deadline_at=None,
            **(summed if summed is not None else totals(claim.session_id)),
        )
        if not paused:
            claim.lost()  # raises: the approval is not stored either

    commit(write)
    claim.ended = Status.AWAITING_APPROVAL


def finish(claim: Claim, *, status: str, **ending: Any) -> None:
    """End the claimed run (``totals.ending_fields``: ``phase``, ``message``,
    ``output``, ``summed``, ...), committed durably; ``LeaseLost`` if this
    worker no longer holds it."""

    def write() -> int:
        durable()
        fields = ending_fields(status=status, session_id=claim.session_id, **ending)
        ended = AgentSession.objects.filter(
            pk=claim.session_id, status=Status.RUNNING, claim_token=claim.token
        ).update(**fields)
        if ended:
            announce(claim.session_id, claim.session, fields.get("output_text"))
        return ended

    if not commit(write):
        raise LeaseLost("Another worker holds this session now.")
    claim.ended = status
