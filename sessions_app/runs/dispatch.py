"""Inline or Celery: the one place that decides how a run is started.

Services call ``dispatch_run`` (or, outside a transaction, ``send_run``) and
never import a task module; the tasks (``tasks.py``) register under the names
defined here. Without a broker (``CELERY_TASK_ALWAYS_EAGER``) nothing is
queued and the caller runs the session inline.

A broker that cannot be reached, or refuses the connection (a wrong password
or virtual host), never fails the caller: Celery retries the publish a bounded
number of times (``CELERY_TASK_PUBLISH_RETRY_POLICY``,
``CELERY_BROKER_CONNECTION_TIMEOUT``: a few seconds at most), then the failure
is recorded on the session (``dispatch_error``, ``dispatch_failed_at``,
``dispatch_failures``; ``dispatched_at`` cleared) and logged, and the session
stays ``queued``: the sweeper sends it again at its next sweep.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import F
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from sessions_app.models import AgentSession

logger = logging.getLogger(__name__)

RUN_SESSION_TASK = "sessions_app.run_session"
SWEEP_TASK = "sessions_app.sweep_stale_sessions"

# What a send raises when the broker cannot be reached: kombu wraps the
# transports' connection errors (amqp, redis) in its OperationalError once the
# publish retries are spent; a socket error may come through as it is.
UNREACHABLE = (BrokerError, OSError)
# How a session's ``dispatch_error`` begins when the broker refused its run
# (a wrong password or virtual host), rather than could not be reached.
REFUSED = "The broker refused the run"

Status = AgentSession.Status

# userinfo in a URL (a broker's password), should an error message quote one
_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]*@")


def runs_inline() -> bool:
    """Whether runs happen in the calling process (no broker configured)."""
    return bool(settings.CELERY_TASK_ALWAYS_EAGER)


def time_limits(deadline_seconds: int) -> tuple[int, int]:
    """Celery's soft and hard time limits for a run with this deadline.

    The run's own deadline ends it first; the soft limit (raised in the task)
    and the hard limit (the pool child is killed, the lease expires and the
    sweeper settles the run) are the safety nets behind it.
    """
    grace = int(settings.WINK_RUN_TIME_LIMIT_GRACE)
    return deadline_seconds + max(1, grace // 2), deadline_seconds + grace


def dispatch_run(session_id: Any, *, deadline_seconds: int) -> bool:
    """Queue the session's run for a worker once the current transaction
    commits; ``False`` when there is no broker (the caller runs it inline).

    The send never raises for an unreachable broker (``send_run``): the
    session stays queued with the failure recorded, for the sweeper."""
    if runs_inline():
        return False
    transaction.on_commit(
        lambda: send_run(session_id, deadline_seconds=deadline_seconds)
    )
    return True


def send_run(session_id: Any, *, deadline_seconds: int) -> bool:
    """Send the session's task to the broker now; ``False`` if the broker
    could not be reached (after Celery's bounded publish retries): the failure
    is recorded on the session and logged, and nothing is raised.

    Call it outside a transaction (``dispatch_run`` waits for the commit):
    a worker must find the session as the caller left it."""
    soft, hard = time_limits(deadline_seconds)
    try:
        current_app.send_task(
            RUN_SESSION_TASK,
            args=[str(session_id)],
            soft_time_limit=soft,
            time_limit=hard,
        )
    except Exception as error:
        if not _broker_error(error):
            # a bug or a broken configuration, not the broker's answer: it
            # surfaces (the sweep logs it and goes on to the next session)
            raise
        # Unreachable, or refusing the connection (a wrong password or
        # virtual host: amqp's AccessRefused, NotAllowed, which kombu lets
        # through as they are): the session is committed, so the caller must
        # not fail (a 500 after the run was saved, and a retry started a
        # second one). Recorded, for the sweeper to send again.
        unreachable = isinstance(error, UNREACHABLE)
        logger.log(
            logging.WARNING if unreachable else logging.ERROR,
            "Session %s stays queued: the broker %s (%s: %s); the sweeper sends "
            "it again",
            session_id,
            "could not be reached" if unreachable else "refused the run",
            type(error).__name__,
            _CREDENTIALS.sub("***@", str(error))[:500],
        )
        record_failure(session_id, error=error)
        return False
    return True


def _broker_error(error: Exception) -> bool:
    """Whether ``error`` is the broker's: unreachable (``UNREACHABLE``), or
    one of its transport's connection or channel errors (a refused login,
    an unknown virtual host)."""
    if isinstance(error, UNREACHABLE):
        return True
    try:
        connection = current_app.connection_for_write()
    except Exception:  # (a broker URL that does not parse)
        return False
    try:
        errors = (*connection.connection_errors, *connection.channel_errors)
    except Exception:  # (a transport that cannot be loaded)
        return False
    finally:
        connection.release()
    return isinstance(error, errors)


def record_failure(session_id: Any, *, error: BaseException) -> None:
    """Record on the session that its run could not be sent: ``dispatched_at``
    cleared (the sweeper sends a session without one at every sweep), a short
    reason (the error's type only: its text may name hosts), when, and one
    more failure. A session that started or ended meanwhile is left alone
    (another copy of the message reached a worker); a database error is
    logged, not raised (the session stays queued for the sweeper anyway)."""
    reason = (
        f"The broker could not be reached ({type(error).__name__})."
        if isinstance(error, UNREACHABLE)
        else f"{REFUSED} ({type(error).__name__})."
    )
    try:
        AgentSession.objects.filter(
            pk=session_id, status__in=(Status.QUEUED, Status.RUNNING)
        ).update(
            dispatched_at=None,
            dispatch_error=reason[:200],
            dispatch_failed_at=timezone.now(),
            dispatch_failures=F("dispatch_failures") + 1,
        )
    except DatabaseError:
        logger.exception("Could not record the failed send of session %s", session_id)
