"""Inline or Celery: the one place that decides how a run is started.

Services call ``dispatch_run`` and never import a task module; the tasks
(``tasks.py``) register under the names defined here. Without a broker
(``CELERY_TASK_ALWAYS_EAGER``) nothing is queued and the caller runs the
session inline.
"""

from __future__ import annotations

from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction

RUN_SESSION_TASK = "sessions_app.run_session"
SWEEP_TASK = "sessions_app.sweep_stale_sessions"


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
    commits; ``False`` when there is no broker (the caller runs it inline)."""
    if runs_inline():
        return False
    soft, hard = time_limits(deadline_seconds)
    transaction.on_commit(
        lambda: current_app.send_task(
            RUN_SESSION_TASK,
            args=[str(session_id)],
            soft_time_limit=soft,
            time_limit=hard,
        )
    )
    return True
