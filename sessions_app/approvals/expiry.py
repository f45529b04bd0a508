"""Approvals left pending past their deadline, denied automatically; and the
requeue that resumes a run once its approval is settled.

The sweeper (``services.sweep_stale_sessions``) calls ``expire_overdue``; so
does ``decisions.decide`` when it finds the approval it was asked to decide
already overdue. Neither the expiry nor the requeue runs a session: without a
broker (``dispatch.runs_inline``) they return the sessions the caller must run
inline, so this module needs nothing above the run's lifecycle and dispatch.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from sessions_app.models import AgentSession, ApprovalRequest
from sessions_app.runs import dispatch, lifecycle
from tooling.runtime import expiry_reason

logger = logging.getLogger(__name__)

Status = ApprovalRequest.Status


@dataclasses.dataclass(frozen=True, slots=True)
class Expired:
    """What ``expire_overdue`` did: the approvals it expired (their ids, as
    text), and the sessions it queued again that the caller must run inline
    (no broker)."""

    approvals: list[str]
    run_inline: list[Any]


def requeue_run(session_id: Any, *, now: datetime) -> bool:
    """Queue the waiting session again and dispatch it after the commit;
    ``True`` when there is no broker and the caller must run it inline."""
    if not lifecycle.requeue(session_id, now=now):
        return False
    row = AgentSession.objects.filter(pk=session_id).values(
        "deadline_left_seconds", "deadline_seconds"
    )[0]
    seconds = row["deadline_left_seconds"]
    seconds = row["deadline_seconds"] if seconds is None else seconds
    return not dispatch.dispatch_run(session_id, deadline_seconds=max(1, seconds))


def expire_overdue(
    now: datetime | None = None, *, ids: list[Any] | None = None
) -> Expired:
    """Deny automatically the approvals pending past their deadline and
    queue their runs again (each in its own transaction)."""
    now = now or timezone.now()
    overdue = ApprovalRequest.objects.filter(status=Status.PENDING, expires_at__lte=now)
    if ids is not None:
        overdue = overdue.filter(pk__in=ids)
    expired: list[str] = []
    inline: list[Any] = []
    for pk, session_id, requested_at, expires_at in overdue.values_list(
        "pk", "session_id", "requested_at", "expires_at"
    ).order_by("expires_at"):
        waited = round((expires_at - requested_at).total_seconds())
        with transaction.atomic():
            lifecycle.lock(session_id)
            if not ApprovalRequest.objects.filter(pk=pk, status=Status.PENDING).update(
                status=Status.EXPIRED,
                decided_at=now,
                decision_reason=expiry_reason(waited),
            ):
                continue  # decided meanwhile
            if requeue_run(session_id, now=now):
                inline.append(session_id)
        expired.append(str(pk))
    if expired:
        logger.info("Expired %d approval request(s)", len(expired))
    return Expired(approvals=expired, run_inline=inline)
