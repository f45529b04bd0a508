"""What a Celery worker process adds to a run (ADR 0022): helper threads and
provider connections sized to its runs in flight, and a sweeper on a thread
of its own.

On the threads pool every run in flight holds a pool thread for its whole
life; a sweep sent by Celery beat would wait for a free one (with 500 runs in
flight, until runs end). So a worker on the threads or solo pool sweeps on
its own daemon thread every ``WINK_SWEEP_INTERVAL`` (``WINK_WORKER_SWEEPER``),
the first time at start (runs a killed worker left behind). Sweeps of several
workers at once are safe: each re-dispatch is a conditional update
(``lifecycle.mark_dispatched``), so a run is sent once.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings

from sessions_app.runs import store
from sessions_app.runs.sweeping import log_sweep, sweep_stale_sessions
from tooling import providers
from tooling.runtime.adapters.openai import helpers

logger = logging.getLogger(__name__)

#: Celery pools (their module in ``celery.concurrency``) whose worker sweeps
#: on a thread of its own; not prefork, whose parent process must not open
#: database connections its children would inherit
SWEEPING_POOLS = frozenset({"thread", "solo"})


def prepare(concurrency: int) -> None:
    """Before the worker takes tasks: one provider helper thread and one kept
    HTTP connection per run it may keep in flight (the defaults, 32 and 100,
    would queue the calls of more runs, or reconnect them)."""
    helpers.set_helper_threads(max(32, concurrency))
    providers.set_connections(concurrency)


def start_sweeper(pool: str) -> threading.Thread | None:
    """Sweep on a thread of this process (a worker whose ``pool`` is one of
    ``SWEEPING_POOLS``, with ``WINK_WORKER_SWEEPER`` on); the thread, or
    ``None``."""
    if not settings.WINK_WORKER_SWEEPER or pool not in SWEEPING_POOLS:
        return None
    thread = threading.Thread(
        target=_sweep_forever,
        args=(float(settings.WINK_SWEEP_INTERVAL),),
        name="wink-sweeper",
        daemon=True,
    )
    thread.start()
    logger.info(
        "Sweeping stale runs on a thread of this worker every %s s",
        settings.WINK_SWEEP_INTERVAL,
    )
    return thread


def sweep_once() -> None:
    """One sweep, logged; never raises (the thread goes on)."""
    try:
        log_sweep(sweep_stale_sessions())
    except Exception:
        logger.exception("The sweep failed; trying again at the next one")
    finally:
        store.release()


def _sweep_forever(interval: float) -> None:
    while True:
        began = time.monotonic()
        sweep_once()
        time.sleep(max(0.0, interval - (time.monotonic() - began)))
