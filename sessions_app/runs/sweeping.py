"""The sweeper: recover runs nothing is working on (expired leases, lost
or unsent messages) and expire overdue approvals."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from sessions_app.approvals import expiry
from sessions_app.models import AgentSession
from sessions_app.runs import dispatch, lifecycle
from sessions_app.runs.running import run_session

logger = logging.getLogger(__name__)

Status = AgentSession.Status


@dataclasses.dataclass
class SweepReport:
    """What one sweep did, by session id."""

    redispatched: list[str] = dataclasses.field(default_factory=list)
    ran_inline: list[str] = dataclasses.field(default_factory=list)
    settled: dict[str, str] = dataclasses.field(default_factory=dict)
    # approval requests denied automatically (no decision in time), by id
    expired_approvals: list[str] = dataclasses.field(default_factory=list)
    # due for a dispatch, left for the next sweep: the broker was unreachable
    # or refused the run (``refused``: as the first one's record says)
    undispatched: list[str] = dataclasses.field(default_factory=list)
    refused: bool = False
    # what could not be handled (logged with its traceback): the error's type,
    # by session id ("approvals": expiring the overdue approvals)
    errors: dict[str, str] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def broker_unreachable(self) -> str:
        """The line a sweep whose sends failed logs ("" if none did): the
        broker could not be reached, or refused the runs."""
        if not self.undispatched:
            return ""
        lead = "Broker refusing the runs" if self.refused else "Broker unreachable"
        return (
            f"{lead}: {len(self.undispatched)} session(s) left queued "
            "for the next sweep."
        )

    def __str__(self) -> str:
        text = (
            f"{len(self.redispatched)} re-dispatched, {len(self.ran_inline)} run "
            f"inline, {len(self.settled)} settled, {len(self.expired_approvals)} "
            "approval(s) expired"
        )
        if self.undispatched:
            why = "broker refusing" if self.refused else "broker unreachable"
            text += f", {len(self.undispatched)} left queued ({why})"
        if self.errors:
            text += f", {len(self.errors)} error(s) (see the log)"
        return text


@contextlib.contextmanager
def _going_on(report: SweepReport, key: Any) -> Iterator[None]:
    """One piece of a sweep: an error is logged and reported, and the sweep
    goes on with the rest."""
    try:
        yield
    except Exception as error:
        logger.exception("The sweep could not handle %s; going on", key)
        report.errors[str(key)] = type(error).__name__


def log_sweep(report: SweepReport) -> None:
    """Log what a sweep did: a warning with errors, nothing if it did
    nothing."""
    if report.errors:
        logger.warning("Swept stale sessions: %s", report)
    elif report.redispatched or report.ran_inline or report.settled:
        logger.info("Swept stale sessions: %s", report)


def sweep_stale_sessions() -> SweepReport:
    """Recover runs nothing is working on.

    A running session whose lease expired (its worker died) is settled if it
    was cancelled or is out of attempts, and re-dispatched otherwise; a queued
    session no worker claimed within ``WINK_QUEUED_REDISPATCH_SECONDS`` (a lost
    message, a web process that died before running it inline) is
    re-dispatched, and one that was never sent (the broker could not be
    reached) at every sweep. Without a broker, re-dispatched sessions run
    here, inline. Approval requests past their deadline are denied
    automatically first, and their runs resumed (``expiry.expire_overdue``).

    Each session is handled on its own: an error is logged and the sweep goes
    on. A broker that cannot be reached ends the sweep's sends (each would
    wait for it again): the sessions left are reported (``undispatched``),
    logged in one line, and sent by the next sweep.
    """
    report = SweepReport()
    began = timezone.now()
    with _going_on(report, "approvals"):
        expired = expiry.expire_overdue()
        report.expired_approvals = expired.approvals
        for session_id in expired.run_inline:
            run_session(session_id=session_id)
    now = timezone.now()
    stale = Q(status=Status.RUNNING, lease_expires_at__lt=now)
    for pk in (
        AgentSession.objects.filter(stale)
        .filter(
            Q(cancel_requested_at__isnull=False)
            | Q(attempts__gte=settings.WINK_RUN_MAX_ATTEMPTS)
        )
        .values_list("pk", flat=True)
    ):
        with _going_on(report, pk):
            status = lifecycle.settle(pk, now=now)
            if status is not None:
                report.settled[str(pk)] = status
    recent = now - timedelta(seconds=float(settings.WINK_RUN_LEASE_SECONDS))
    lost = now - timedelta(seconds=float(settings.WINK_QUEUED_REDISPATCH_SECONDS))
    candidates = AgentSession.objects.filter(
        (
            stale
            & Q(cancel_requested_at__isnull=True)
            & Q(attempts__lt=settings.WINK_RUN_MAX_ATTEMPTS)
            & (Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=recent))
        )
        | Q(status=Status.QUEUED, dispatched_at__lt=lost)
        # never sent: the broker could not be reached
        | Q(status=Status.QUEUED, dispatched_at__isnull=True)
    ).values_list(
        "pk", "status", "dispatched_at", "deadline_seconds", "dispatch_failed_at"
    )
    due = []
    for pk, status, dispatched_at, deadline_seconds, failed_at in candidates:
        if failed_at is not None and failed_at >= began:
            # its send failed in this sweep (an expired approval's run,
            # above): each session is sent at most once per sweep
            report.undispatched.append(str(pk))
        else:
            due.append((pk, status, dispatched_at, deadline_seconds))
    for pk, status, dispatched_at, deadline_seconds in due:
        if report.undispatched:  # the broker is unreachable: the next sweep
            report.undispatched.append(str(pk))
            continue
        with _going_on(report, pk):
            _redispatch(report, pk, status, dispatched_at, deadline_seconds, now)
    if report.undispatched:
        reason = (
            AgentSession.objects.filter(pk=report.undispatched[0])
            .values_list("dispatch_error", flat=True)
            .first()
        )
        report.refused = (reason or "").startswith(dispatch.REFUSED)
        logger.warning(report.broker_unreachable)
    return report


def _redispatch(
    report: SweepReport,
    pk: Any,
    status: str,
    dispatched_at: datetime | None,
    deadline_seconds: int,
    now: datetime,
) -> None:
    """Send (or, without a broker, run) one session the sweep chose, unless
    it changed since the sweep read it (``lifecycle.mark_dispatched``)."""
    if not lifecycle.mark_dispatched(
        pk, previous=dispatched_at, status=status, now=now
    ):
        return
    if dispatch.runs_inline():
        run_session(session_id=pk)
        report.ran_inline.append(str(pk))
    elif dispatch.send_run(pk, deadline_seconds=deadline_seconds):
        report.redispatched.append(str(pk))
    else:
        report.undispatched.append(str(pk))
