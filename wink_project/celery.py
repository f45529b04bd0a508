"""The Celery application. Without CELERY_BROKER_URL, tasks run inline (eager)."""

import os
from typing import Any

from celery import Celery, signals
from django.db import close_old_connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wink_project.settings")

app = Celery("wink_project")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.task_prerun.connect
@signals.task_postrun.connect
def _check_database_connections(sender: Any = None, **_: Any) -> None:
    """Around each task in a worker, what Django does around a request: keep
    the connection unless it is broken or older than ``CONN_MAX_AGE``.

    Celery's Django fixup would close it instead (``CELERY_DB_REUSE_MAX`` turns
    that off): a new connection per run, to a PostgreSQL backend whose caches
    start cold, cost about 15 ms of every 250 ms run in ``make bench-celery``.
    A task run inline (eager) is left alone: it runs in its caller's
    connection, perhaps inside its transaction.
    """
    if not getattr(sender.request, "is_eager", False):
        close_old_connections()


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _mask_secrets(logger: Any = None, **_: Any) -> None:
    """A worker's log is Celery's (it replaces the root logger's handlers at
    start): its handlers mask secrets as the project's do
    (wink_project/log_masking.py)."""
    from wink_project.log_masking import SecretMaskingFilter

    for handler in getattr(logger, "handlers", ()):
        if not any(isinstance(each, SecretMaskingFilter) for each in handler.filters):
            handler.addFilter(SecretMaskingFilter())


@signals.worker_init.connect
def _prepare_worker(sender: Any = None, **_: Any) -> None:
    """Size the provider's helper threads and connections to the runs this
    worker keeps in flight (sessions_app/runs/worker.py)."""
    from sessions_app.runs import worker

    worker.prepare(int(getattr(sender, "concurrency", 0) or 0))


@signals.worker_ready.connect
def _start_sweeper(sender: Any = None, **_: Any) -> None:
    """Sweep on a thread of this worker (threads and solo pools): a sweep
    sent by beat would wait for a free pool thread."""
    from sessions_app.runs import worker

    # the pool this worker runs (the command line's or the settings'):
    # celery.concurrency.thread, .solo, .prefork, ...
    pool = type(getattr(sender, "pool", None)).__module__.rsplit(".", 1)[-1]
    if worker.start_sweeper(pool) is not None:
        # and the closed days' spend, beside it (ADR 0027)
        from django.conf import settings

        from sessions_app.costs import rollup_thread

        rollup_thread.start_thread(float(settings.WINK_SPEND_ROLLUP_INTERVAL))


@signals.worker_process_shutdown.connect
@signals.worker_shutdown.connect
def _send_queued_traces(**_: Any) -> None:
    """Send the OpenTelemetry spans still queued before the process exits: a
    prefork child exits without running ``atexit`` handlers, where the SDK
    would flush them (``docs/opentelemetry.md``)."""
    from sessions_app import telemetry

    telemetry.shutdown()
