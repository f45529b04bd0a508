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

The worker's own moves (``claim``, ``pause``, ``finish``) are the run store's
(``runs.store``), re-exported here; the rest are moves made from outside the
run: requeue, cancel, settle, the sweeper's re-dispatch.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from sessions_app.models import AgentSession, ApprovalRequest
from sessions_app.runs.store import (
    Claim,
    LeaseLost,
    RunCancelled,
    StoreUnavailable,
    announce,
    claim,
    finish,
    lease_seconds,
    pause,
    worker_name,
)
from sessions_app.runs.totals import ending_fields

__all__ = [
    "Claim",
    "LeaseLost",
    "RunCancelled",
    "StoreUnavailable",
    "cancel_claimed",
    "cancel_queued",
    "cancel_session",
    "claim",
    "end_claimed",
    "finish",
    "lease_seconds",
    "lock",
    "mark_dispatched",
    "pause",
    "request_cancel",
    "requeue",
    "settle",
    "worker_name",
]

logger = logging.getLogger(__name__)

Status = AgentSession.Status


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
            announce(session_id)  # once this transaction commits
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
    with transaction.atomic():  # the end and its search text, or neither
        if (
            AgentSession.objects.filter(stale, pk=session_id)
            .filter(cancel_requested_at__isnull=False)
            .update(**fields)
        ):
            announce(session_id)
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
    with transaction.atomic():
        if (
            AgentSession.objects.filter(stale, pk=session_id)
            .filter(attempts__gte=settings.WINK_RUN_MAX_ATTEMPTS)
            .update(**fields)
        ):
            announce(session_id)
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


def cancel_session(*, session_id: Any, user: Any) -> str:
    """Cancel a session: a queued one, or one waiting for an approval (which
    expires with it), at once (``"cancelled"``); a running one at its next
    step (``"requested"``; also when a cancel was already requested);
    ``"finished"`` if it already ended, or ended as the request was made (a
    run whose last step was under way ends as it would have: its answer is
    kept, and so is the request, with who made it)."""
    now = timezone.now()
    if cancel_queued(session_id, user=user, now=now):
        return "cancelled"
    requested = request_cancel(session_id, user=user, now=now)
    # A run whose worker is gone would never see the request, made now or by
    # an earlier cancel (a second cancel after its lease expired left it
    # running until a sweep).
    gone = AgentSession.objects.filter(
        pk=session_id, status=Status.RUNNING, lease_expires_at__lt=now
    )
    if gone.exists() and settle(session_id, now=now) == Status.CANCELLED:
        return "cancelled"
    # The run may have ended meanwhile (its last step came before a next
    # one): the request stays recorded, and the answer says it ended.
    status = AgentSession.objects.values_list("status", flat=True).get(pk=session_id)
    if requested and status == Status.CANCELLED:  # at its next step already
        return "cancelled"
    return "requested" if status == Status.RUNNING else "finished"
