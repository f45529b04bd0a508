"""Deciding approval requests, and resuming the runs that wait for them.

A run pauses when a policy asks for a human decision (the sink records an
``ApprovalRequest`` and moves the session to ``awaiting_approval`` in one
transaction). Here the request is decided, once:

- ``decide`` approves or denies it: one conditional update
  ``pending -> approved | denied`` (of concurrent deciders exactly one wins;
  the others get ``ApprovalClosed``), and in the same transaction the session
  goes back to ``queued`` (``lifecycle.requeue``). After the commit the run is
  dispatched: to a worker, or inline without a broker. The resumed run replays
  its record, reaches the paused call with the decision
  (``replay.load`` -> ``RunRecord.approvals``) and runs it, or answers the
  model with the denial.
- ``expiry.expire_overdue`` (called by the sweeper, which runs the resumed
  runs inline without a broker) denies automatically every request left
  pending past its ``expires_at`` and queues those runs again.

A decision is refused once the run no longer waits for it (cancelled: its
request is ``cancelled`` too), and an approval that wins but whose run is
cancelled (or ends otherwise) before the approved call is recorded, or whose
call another policy refused, is not answered as if the call ran:
``RunNotResumed`` says what became of it (``outcome``).

The run resumes exactly once: only the winning update requeues the session,
only a queued session can be claimed, and a claim is one conditional update
(``lifecycle.claim``); a worker that dies during the resumed run is recovered
like any other (lease, sweeper), and the approved call, recorded with its
``ToolInvocation`` in one step, never runs twice.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from sessions_app import access, services
from sessions_app.approvals import expiry, outcome
from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
)
from sessions_app.runs import lifecycle
from sessions_app.runs.storable import Scrubber

Status = ApprovalRequest.Status
SessionStatus = AgentSession.Status
MAX_REASON = 2000


class ApprovalClosed(Exception):
    """The approval was already decided, expired or cancelled, or its run no
    longer waits for it: nothing to decide. ``status`` is the approval's,
    ``session_status`` its run's."""

    def __init__(
        self, message: str, *, status: str = "", session_status: str = ""
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.session_status = session_status


class RunNotResumed(ApprovalClosed):
    """The approval was recorded, but the call did not run (its run ended
    before taking it up again, or another policy refused it) or may have
    (its run ended after taking it up, before recording it): ``outcome``."""


# Letters and symbols that show as nothing (Hangul fillers, the blank Braille
# pattern): a "reason" of them alone is blank.
_BLANK_LOOKALIKES = frozenset("\u115f\u1160\u3164\uffa0\u2800")


# What a denial without a reason is told, blank or only invisible characters,
# wherever it is made (the inbox page, the API, the admin).
DENY_WITHOUT_REASON = "Say why you deny it: the model reads the reason."


def _clean_reason(reason: Any, *, required: bool) -> tuple[str, bool]:
    if reason is None:
        reason = ""
    if not isinstance(reason, str):
        raise ValidationError({"reason": "The reason must be text."})
    if required and not any(
        unicodedata.category(char)[0] in "LNPS" and char not in _BLANK_LOOKALIKES
        for char in reason
    ):
        # nothing to read: blank, or only invisible characters (a zero-width
        # space, a bidi control: the model would read "Denied by ...: ")
        raise ValidationError({"reason": DENY_WITHOUT_REASON})
    if len(reason) > MAX_REASON:
        raise ValidationError(
            {"reason": f"The reason is at most {MAX_REASON} characters long."}
        )
    scrub = Scrubber()
    return scrub.text(reason.strip()), scrub.altered


def decide(
    *, approval_id: Any, user: Any, approve: bool, reason: str
) -> ApprovalRequest:
    """Approve or deny a pending approval and resume its run.

    Raises ``ApprovalRequest.DoesNotExist`` (unknown, or neither decidable
    nor visible to ``user``), ``PermissionDenied`` (visible, not decidable;
    ``access.OWN_RUN`` for the author under four eyes), ``ApprovalClosed``
    (already decided, expired or cancelled, or its run no longer waits),
    ``RunNotResumed`` (approved, but the call did not run, or may have:
    ``outcome``) and ``ValidationError`` (a deny without a reason, a reason
    that is not text or too long).
    """
    if not isinstance(approve, bool):
        raise ValidationError({"approve": "Say true (approve) or false (deny)."})
    try:
        approval = (
            ApprovalRequest.objects.visible_to(user)
            .select_related("session")
            .get(pk=approval_id)
        )
    except (TypeError, ValueError, ValidationError):  # not an approval's id at all
        raise ApprovalRequest.DoesNotExist(approval_id) from None
    if access.is_own_run(user, approval):
        raise PermissionDenied(access.OWN_RUN)
    if not access.may_decide(user, approval):
        raise PermissionDenied("You may not decide this approval.")
    text, altered = _clean_reason(reason, required=not approve)
    now = timezone.now()
    inline = decided = False
    with transaction.atomic():
        lifecycle.lock(approval.session_id)
        session_status = _session_status(approval.session_id)
        if session_status == SessionStatus.AWAITING_APPROVAL:
            decided = bool(
                ApprovalRequest.objects.filter(
                    pk=approval.pk, status=Status.PENDING, expires_at__gt=now
                ).update(
                    status=Status.APPROVED if approve else Status.DENIED,
                    decided_by=user,
                    decided_at=now,
                    decision_reason=text,
                    text_altered=altered,
                )
            )
        if decided:
            inline = expiry.requeue_run(approval.session_id, now=now)
    if not decided:
        raise _closed(approval.pk, now=now)
    if inline:
        _run_inline([approval.session_id])
    if approve:
        _check_resumed(approval)
    return ApprovalRequest.objects.select_related("decided_by").get(pk=approval.pk)


def _session_status(session_id: Any) -> str:
    return str(AgentSession.objects.values_list("status", flat=True).get(pk=session_id))


def _session_label(status: str) -> str:
    return SessionStatus(status).label.lower()


def _check_resumed(approval: ApprovalRequest) -> None:
    """``RunNotResumed`` unless the approved call ran or the run is on its
    way to it: the approver must not read "approved" as "it ran"
    (``outcome``: refused, did not run, or may have)."""
    fresh = (
        ApprovalRequest.objects.with_call_record()
        .select_related("session")
        .get(pk=approval.pk)
    )
    result = outcome.of(fresh)
    if result is None or result is outcome.Outcome.RAN:
        return
    raise RunNotResumed(
        outcome.answer(fresh, result),
        status=Status.APPROVED,
        session_status=fresh.session.status,
    )


def _closed(approval_id: Any, *, now: datetime) -> ApprovalClosed:
    row = (
        ApprovalRequest.objects.filter(pk=approval_id)
        .values("status", "session__status")
        .get()
    )
    if (
        row["status"] == Status.PENDING
        and row["session__status"] == SessionStatus.AWAITING_APPROVAL
    ):  # overdue, not yet swept: expire it now
        _run_inline(expiry.expire_overdue(now=now, ids=[approval_id]).run_inline)
        row = (
            ApprovalRequest.objects.filter(pk=approval_id)
            .values("status", "session__status")
            .get()
        )
    status, session_status = row["status"], row["session__status"]
    if status == Status.PENDING:  # its run no longer waits (cancelled)
        return ApprovalClosed(
            f"The run is {_session_label(session_status)}; it no longer waits "
            "for this approval.",
            status=status,
            session_status=session_status,
        )
    label = Status(status).label.lower() if status in Status.values else status
    message = f"This approval is already {label}."
    if status == Status.APPROVED:  # and what became of the call, if not run
        decided = (
            ApprovalRequest.objects.with_call_record()
            .select_related("session")
            .get(pk=approval_id)
        )
        result = outcome.of(decided)
        if result is not None and result is not outcome.Outcome.RAN:
            message = f"{message} {outcome.note(decided, result)}"
    return ApprovalClosed(message, status=status, session_status=session_status)


def _run_inline(session_ids: list[Any]) -> None:
    """Run here the sessions queued again without a broker."""
    for session_id in session_ids:
        services.run_session(session_id=session_id)
