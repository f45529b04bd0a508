"""Celery tasks: each takes an id and calls one service.

Runs are acknowledged late and rejected (requeued) when their worker is lost
(settings: ``CELERY_TASK_ACKS_LATE``, ``CELERY_TASK_REJECT_ON_WORKER_LOST``);
a redelivered run that another worker still holds is left to it, and a run
whose worker died is recovered by the sweeper (``sweep_stale_sessions``).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.exceptions import Reject

from sessions_app import services
from sessions_app.approvals import notifications
from sessions_app.costs import rollup
from sessions_app.models import ApprovalRequest
from sessions_app.runs import dispatch, lifecycle, store
from sessions_app.runs.sweeping import log_sweep

logger = logging.getLogger(__name__)


@shared_task(
    name=dispatch.RUN_SESSION_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def run_session_task(session_id: str) -> str:
    """Run the session; the status it left it with (``missing``: no such
    session). The session is not read back after a run this worker ended."""
    try:
        status = services.run_session_status(session_id=session_id)
    except lifecycle.StoreUnavailable as error:
        # never acknowledged and forgotten: the message goes back to the
        # queue, and the session stays as it was for a worker (or the sweeper)
        logger.error(
            "Session %s: %s Its message goes back to the queue.", session_id, error
        )
        raise Reject(str(error), requeue=True) from error
    if status is None:
        logger.warning("Session %s does not exist; nothing to run", session_id)
        return "missing"
    return str(status)


@shared_task(name=dispatch.SWEEP_TASK, ignore_result=True)
def sweep_stale_sessions_task() -> dict[str, Any]:
    try:
        report = services.sweep_stale_sessions()  # never raises for one session
    finally:
        # a pooled worker's connection goes back; a dead one is discarded with
        # the pool's other dead ones, or every next sweep would take one
        store.release()
    log_sweep(report)
    return report.as_dict()


@shared_task(name=rollup.ROLL_UP_TASK, ignore_result=True)
def roll_up_spend_task() -> dict[str, Any]:
    """Roll up the closed days' spend (``sessions_app.costs.rollup``)."""
    report = rollup.roll_up()
    return {
        "rolled_up": [day.isoformat() for day in report.rolled_up],
        "skipped": len(report.skipped),
    }


# Short limits: a notification waits at most a few seconds per mail server
# step and for the webhook; it must never hold a worker for a run's time.
@shared_task(
    name=notifications.NOTIFY_TASK,
    ignore_result=True,
    soft_time_limit=60,
    time_limit=90,
)
def notify_approval_requested(approval_id: str) -> str:
    """Email and webhook for a run that waits for approval (never raises:
    a notification is not worth a retry storm)."""
    approval = (
        ApprovalRequest.objects.select_related("session").filter(pk=approval_id).first()
    )
    if approval is None:
        logger.warning("Approval %s does not exist; nobody to notify", approval_id)
        return "missing"
    if approval.status != ApprovalRequest.Status.PENDING:
        return "closed"  # decided (or expired) before the worker got to it
    notifications.send_notifications(approval)
    return "sent"
