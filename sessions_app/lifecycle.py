"""The session row's lifecycle: every move is one conditional update.

    queued ──claim──> running ──> succeeded | failed | cancelled
       │  ▲              ├──(lease expired) claim again, up to WINK_RUN_MAX_ATTEMPTS
       │  │              └──(a policy asks) awaiting_approval ──> cancelled
       │  └──(decided or expired: sessions_app.approvals)──────┘
       └──> cancelled | failed

A worker that claims a run writes a fresh ``claim_token`` and a lease
(``lease_expires_at``); every later update it makes (renewing the lease,
ending the run) requires that token, so a worker that lost its lease can never
overwrite the session. A claim succeeds on a queued session, or on a running
one whose lease expired (its worker died); each claim counts an attempt, and a
run out of attempts ends ``failed`` with phase ``interrupted``.

A run that pauses for a human decision (``pause``) gives up its claim: no
worker and no lease hold it while it waits, its attempts start again from 0,
and the time its deadline had left is kept (``deadline_left_seconds``); the
claim that resumes it sets the deadline from that, so waiting does not use it
up.

Statuses only move forward, except ``awaiting_approval -> queued`` (a decision
resumes the run); on PostgreSQL a trigger refuses anything else.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import socket
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, transaction
from django.db.models import (
    Case,
    DateTimeField,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from sessions_app import inserts, returning, steps
from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
)
from sessions_app.totals import ending_fields, totals
from tooling import prepared
from tooling.models import generation_token
from tooling.runtime import RunAborted

logger = logging.getLogger(__name__)

Status = AgentSession.Status


class LeaseLost(RunAborted):
    """Another worker claimed the run (this one's lease expired)."""


class RunCancelled(RunAborted):
    """Someone cancelled the run; it stops at this step."""


class StoreUnavailable(RunAborted):
    """The database connection failed; the run stops here and resumes."""


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


def lease_seconds() -> float:
    return float(settings.WINK_RUN_LEASE_SECONDS)


@dataclasses.dataclass
class Claim:
    """A worker's hold on a running session: the token its updates require."""

    session: AgentSession
    token: uuid.UUID
    renew_every: float
    _renewed: float = dataclasses.field(default_factory=time.monotonic)
    #: the status this worker's own update ended (or paused) the run with
    ended: str | None = None

    @property
    def session_id(self) -> Any:
        return self.session.pk

    def mine(self) -> Q:
        """The condition of every update this worker makes."""
        return Q(pk=self.session.pk, status=Status.RUNNING, claim_token=self.token)

    def beat(self) -> None:
        """The run's heartbeat: renew the lease (at most every ``renew_every``
        seconds) and stop the run if it was cancelled or taken over."""
        now = time.monotonic()
        if now - self._renewed < self.renew_every:
            return
        self._renewed = now
        try:
            renewed = AgentSession.objects.filter(
                self.mine(), cancel_requested_at__isnull=True
            ).update(
                lease_expires_at=timezone.now() + timedelta(seconds=lease_seconds())
            )
            if renewed:
                return
        except (OperationalError, InterfaceError) as error:
            raise StoreUnavailable("The database connection failed.") from error
        self.lost()

    def lost(self) -> None:
        """Raise why this worker's conditional update changed nothing:
        ``RunCancelled`` or ``LeaseLost``."""
        try:
            row = (
                AgentSession.objects.filter(pk=self.session.pk)
                .values("status", "claim_token", "cancel_requested_at")
                .first()
            )
        except (OperationalError, InterfaceError) as error:
            raise StoreUnavailable("The database connection failed.") from error
        if (
            row is not None
            and row["claim_token"] == self.token
            and row["status"] == Status.RUNNING
            and row["cancel_requested_at"] is not None
        ):
            raise RunCancelled("The session was cancelled.")
        raise LeaseLost("Another worker holds this session now.")


def claim(
    session_id: Any,
    *,
    now: datetime | None = None,
    new: AgentSession | None = None,
    rows: Sequence[inserts.Batch] = (),
) -> Claim | None:
    """Claim the session for this worker, or ``None`` if it is not claimable:
    finished, cancelled, held by a live lease, out of attempts, or missing.

    One conditional update claims it and sets its deadline from the row's own
    columns: on the first claim ``deadline_seconds`` from now, kept by later
    claims (an expired lease), and on the claim that resumes a paused run the
    time it had left (``deadline_left_seconds``) from now. The update reads and
    writes the row at once (PostgreSQL evaluates its condition and values on the
    row's latest version), so a pause or another claim in between cannot give
    the run its deadline twice. The update returns the claimed session
    (``RETURNING``; read back after it where the database cannot).

    ``new`` is the session as this process just created it (still queued,
    never dispatched, never paused): the claim then updates it in memory
    instead of reading it back. ``rows``: the rows that create it, not written
    yet (its revision and itself): written first, in the claim's query on
    PostgreSQL (with the run's commit setting: one round trip)."""
    if rows and new is None:
        raise ValueError("Rows to write with a claim need the new session (new=).")
    now = now or timezone.now()
    token = uuid.uuid4()
    lease = now + timedelta(seconds=lease_seconds())
    values: dict[str, Any] = {
        "now": now,
        "pk": session_id,
        "max_attempts": settings.WINK_RUN_MAX_ATTEMPTS,
        "token": token,
        "lease": lease,
        "worker": worker_name(),
    }
    if new is None and returning.supported():  # claimed and read in one statement
        statement = prepared.compiled(
            ("claim", "returning"),
            lambda: returning.compile_update_returning(
                *_claim_update(_SLOTS, new=False),
                # its revision's data is read once per process
                # (assembly.revision_data); the catalog generation before the
                # price rows: cached price sheets
                {"catalog_token": generation_token()},
            ),
        )
        with steps.relaxing() as before:  # the run's commit setting, if due
            claimed = statement.run(values, before=before)
        if claimed is None:
            return None
        return Claim(claimed, token, float(settings.WINK_RUN_HEARTBEAT_SECONDS))
    deadline: datetime | None = None
    if new is not None:
        deadline = now + timedelta(seconds=new.deadline_seconds or 1)
        values["deadline"] = deadline
    update = prepared.compiled(
        ("claim", new is not None),
        lambda: prepared.update(*_claim_update(_SLOTS, new=new is not None)),
    )
    query = inserts.together(rows) if rows else None
    if query is None:
        steps.relax_now()
        inserts.write(rows)
        claimed = update.run(values)
    else:
        with steps.relaxing() as before:  # the run's commit setting, if due
            claimed = update.run(
                values, before=f"{before}{query[0]};\n", before_params=query[1]
            )
        inserts.written(rows)
    if not claimed:
        return None
    if new is not None and new.attempts == 0 and new.started_at is None:
        session = new
        session.status = Status.RUNNING
        session.claim_token = token
        session.attempts = 1
        session.lease_expires_at = lease
        session.worker = values["worker"]
        session.started_at = now
        session.deadline_at = session.deadline_at or deadline
    else:
        session = AgentSession.objects.annotate(catalog_token=generation_token()).get(
            pk=session_id
        )
    return Claim(session, token, float(settings.WINK_RUN_HEARTBEAT_SECONDS))


# What a claim is given when it runs (``claim``'s ``values``).
_SLOTS: dict[str, Any] = {
    "now": prepared.Slot("now", DateTimeField()),
    "deadline": prepared.Slot("deadline", DateTimeField()),
    "pk": prepared.slot(AgentSession, "id", "pk"),
    "max_attempts": prepared.slot(AgentSession, "attempts", "max_attempts"),
    "token": prepared.slot(AgentSession, "claim_token", "token"),
    "lease": prepared.slot(AgentSession, "lease_expires_at", "lease"),
    "worker": prepared.slot(AgentSession, "worker"),
}


def _claim_update(
    v: Mapping[str, Any], *, new: bool
) -> tuple[QuerySet[AgentSession], dict[str, Any]]:
    """The claim's conditional update: the row it may claim and what it
    writes, with ``v``'s expressions for the values a claim is given
    (``_SLOTS``, or in tests the same values as ``Value`` expressions).

    ``new``: the session this process just created (``claim``'s ``new``)."""
    now = v["now"]
    deadline_at: Any
    unpaused = Q()
    if new:
        deadline_at = Coalesce("deadline_at", v["deadline"])
        # not paused meanwhile (a pause clears deadline_at: this claim would
        # give the resumed run its whole deadline again)
        unpaused = Q(deadline_left_seconds__isnull=True)
    else:
        deadline_at = Case(
            When(
                deadline_left_seconds__isnull=True,
                then=Coalesce(
                    "deadline_at",
                    _seconds_after(now, Greatest("deadline_seconds", Value(1))),
                ),
            ),
            # resumed after a pause: the time left then, from now
            default=_seconds_after(now, F("deadline_left_seconds")),
            output_field=DateTimeField(),
        )
    claimable = AgentSession.objects.filter(
        Q(status=Status.QUEUED) | Q(status=Status.RUNNING, lease_expires_at__lt=now),
        unpaused,
        pk=v["pk"],
        cancel_requested_at__isnull=True,
        attempts__lt=v["max_attempts"],
    )
    values = {
        "status": Status.RUNNING,
        "claim_token": v["token"],
        "attempts": F("attempts") + 1,
        "lease_expires_at": v["lease"],
        "worker": v["worker"],
        "started_at": Coalesce("started_at", now),
        "deadline_at": deadline_at,
        "deadline_left_seconds": None,
    }
    return claimable, values


def _seconds_after(now: Any, seconds: Any) -> ExpressionWrapper:
    """``now`` (a datetime expression) plus a whole number of seconds (an
    integer expression), in SQL on either backend (an interval on PostgreSQL,
    microseconds on SQLite)."""
    # typed at each step: Django picks each backend's duration arithmetic
    # (SQLite: django_format_dtdelta) from the operands' field types
    count = ExpressionWrapper(seconds, output_field=IntegerField())
    span = ExpressionWrapper(
        Value(timedelta(seconds=1), DurationField()) * count,
        output_field=DurationField(),
    )
    return ExpressionWrapper(now + span, output_field=DateTimeField())


def pause(
    claim: Claim,
    *,
    now: datetime | None = None,
    summed: Mapping[str, Any] | None = None,
) -> None:
    """The claimed run waits for a human decision: ``awaiting_approval``,
    with no claim or lease, its attempts back to 0 and the time its deadline
    had left kept for the claim that resumes it; its usage and cost so far are
    written (``summed``: the run's ``totals``, when its caller kept them).
    ``RunCancelled`` if someone asked to cancel it meanwhile, ``LeaseLost`` if
    another worker holds it."""
    now = now or timezone.now()
    deadline_at = claim.session.deadline_at
    left = 0
    if deadline_at is not None:
        left = max(0, int((deadline_at - now).total_seconds()))
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
        claim.lost()
    claim.ended = Status.AWAITING_APPROVAL


def lock(session_id: Any) -> None:
    """Lock the session's row for the rest of the transaction (PostgreSQL;
    SQLite serialises writers anyway). Whatever changes a session and its
    approvals together locks the session first, then the approval (a cancel
    updates the session first): two such transactions wait for each other
    instead of deadlocking."""
    list(
        AgentSession.objects.select_for_update()
        .filter(pk=session_id)
        .values_list("pk", flat=True)
    )


def requeue(session_id: Any, *, now: datetime) -> bool:
    """A paused run whose approvals are all decided goes back to the queue
    (the caller dispatches it); ``False`` if it is not waiting (any more)."""
    pending = ApprovalRequest.objects.filter(
        session=OuterRef("pk"), status=ApprovalRequest.Status.PENDING
    )
    return bool(
        AgentSession.objects.filter(
            ~Exists(pending), pk=session_id, status=Status.AWAITING_APPROVAL
        ).update(status=Status.QUEUED, dispatched_at=now)
    )


def finish(
    claim: Claim,
    *,
    status: str,
    records: Sequence[inserts.Batch] = (),
    **ending: Any,
) -> None:
    """End the claimed run; ``LeaseLost`` if this worker no longer holds it
    (``records`` are written all the same).

    ``records``: the run's rows still waiting (``StepWriter.take()``),
    written with the end, in its query on PostgreSQL (ADR 0018). The end
    commits with the server's own ``synchronous_commit`` even when the run's
    steps did not wait for the disk (``steps.restoring``, in the same query):
    by default PostgreSQL then flushes its log up to the end, so a finished
    run (and the answer given for it) is on disk with every step."""
    if records and ending.get("summed") is None:
        inserts.write(records)  # the totals are summed from every row
        records = ()
    fields = ending_fields(status=status, session_id=claim.session_id, **ending)
    update = prepared.compiled(("finish", *fields), lambda: _finish_update(fields))
    values = {**fields, "pk": claim.session_id, "token": claim.token}
    updated = _end_with(records, update, values)
    if not updated:
        raise LeaseLost("Another worker holds this session now.")
    claim.ended = status


def _end_with(
    records: Sequence[inserts.Batch],
    update: prepared.Update,
    values: Mapping[str, Any],
) -> int:
    """Write ``records`` and run the end's ``update``, in one query where
    they can go together. The records stand even if the update fails: they
    record what happened before it."""
    query = inserts.together(records) if records else None
    if query is None:
        inserts.write(records)
        with steps.restoring() as before:
            return update.run(values, before=before)
    try:
        with steps.restoring() as before:  # the server's commit setting too
            updated = update.run(
                values, before=f"{before}{query[0]};\n", before_params=query[1]
            )
    except Exception:
        with contextlib.suppress(DatabaseError):
            inserts.write(records)
        raise
    inserts.written(records)
    return updated


def _finish_update(fields: Mapping[str, Any]) -> prepared.Update:
    """``finish``'s update of ``fields`` (their values given when it runs)."""
    return prepared.update(
        AgentSession.objects.filter(
            pk=_SLOTS["pk"], status=Status.RUNNING, claim_token=_SLOTS["token"]
        ),
        {name: prepared.slot(AgentSession, name) for name in fields},
    )


def end_claimed(claim: Claim, *, phase: str, message: str) -> bool:
    """End the claimed run as failed; ``False`` if another worker holds it or
    the database cannot be reached (the sweeper then settles it)."""
    try:
        finish(claim, status=Status.FAILED, phase=phase, message=message)
    except LeaseLost:
        return False
    except DatabaseError:
        logger.exception("Could not record the end of session %s", claim.session_id)
        return False
    return True


def _cancel_message(user_id: Any) -> str:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    return f"Cancelled by {user.get_username()}." if user else "Cancelled."


def cancel_claimed(claim: Claim) -> None:
    row = AgentSession.objects.filter(pk=claim.session_id).values("cancelled_by").get()
    finish(claim, status=Status.CANCELLED, message=_cancel_message(row["cancelled_by"]))


def cancel_queued(session_id: Any, *, user: Any, now: datetime) -> bool:
    """Cancel a session no worker holds (queued, or waiting for a decision)
    at once; a pending approval of it is cancelled with it."""
    user_id = getattr(user, "pk", None)
    message = _cancel_message(user_id)
    fields = ending_fields(
        status=Status.CANCELLED, message=message, session_id=session_id, now=now
    )
    with transaction.atomic():
        cancelled = AgentSession.objects.filter(
            pk=session_id, status__in=(Status.QUEUED, Status.AWAITING_APPROVAL)
        ).update(cancel_requested_at=now, cancelled_by=user_id, **fields)
        if cancelled:
            ApprovalRequest.objects.filter(
                session_id=session_id, status=ApprovalRequest.Status.PENDING
            ).update(
                status=ApprovalRequest.Status.CANCELLED,
                decided_at=now,
                decision_reason=f"The session was cancelled. {message}",
            )
    return bool(cancelled)


def request_cancel(session_id: Any, *, user: Any, now: datetime) -> bool:
    """Ask a running session to stop at its next step."""
    return bool(
        AgentSession.objects.filter(
            pk=session_id, status=Status.RUNNING, cancel_requested_at__isnull=True
        ).update(cancel_requested_at=now, cancelled_by=getattr(user, "pk", None))
    )


def settle(session_id: Any, *, now: datetime | None = None) -> str | None:
    """End a session no worker can run any more; the status it took, if any.

    A stale run (its lease expired) that someone asked to cancel becomes
    ``cancelled``; one out of attempts becomes ``failed`` (``interrupted``).
    """
    now = now or timezone.now()
    stale = Q(status=Status.RUNNING, lease_expires_at__lt=now)
    row = (
        AgentSession.objects.filter(pk=session_id)
        .values("cancelled_by", "attempts")
        .first()
    )
    if row is None:
        return None
    fields = ending_fields(
        status=Status.CANCELLED,
        message=_cancel_message(row["cancelled_by"]),
        session_id=session_id,
        now=now,
    )
    if (
        AgentSession.objects.filter(stale, pk=session_id)
        .filter(cancel_requested_at__isnull=False)
        .update(**fields)
    ):
        return Status.CANCELLED
    attempts = row["attempts"]
    fields = ending_fields(
        status=Status.FAILED,
        phase="interrupted",
        message=(
            f"The run was interrupted {attempts} time(s) (its worker stopped before "
            "it finished) and was not retried again."
        ),
        session_id=session_id,
        now=now,
    )
    if (
        AgentSession.objects.filter(stale, pk=session_id)
        .filter(attempts__gte=settings.WINK_RUN_MAX_ATTEMPTS)
        .update(**fields)
    ):
        return Status.FAILED
    return None


def mark_dispatched(
    session_id: Any, *, previous: datetime | None, status: str, now: datetime
) -> bool:
    """Record the sweeper's re-dispatch of the session, only if it is still as
    the sweep found it: the same ``dispatched_at`` (no other sweeper did it
    first) and the status the sweep chose it for, ``queued`` or ``running``
    with an expired lease. A run claimed or finished since the sweep read it
    is left alone (changing a finished session is refused on PostgreSQL).
    The last send's failure is cleared (``dispatch.send_run`` records it
    again if this send fails too)."""
    if status == Status.QUEUED:
        still = Q(status=Status.QUEUED)
    elif status == Status.RUNNING:
        still = Q(status=Status.RUNNING, lease_expires_at__lt=now)
    else:
        raise ValueError(f"The sweeper does not dispatch {status} sessions.")
    return bool(
        AgentSession.objects.filter(
            still, pk=session_id, dispatched_at=previous
        ).update(dispatched_at=now, dispatch_error="")
    )
