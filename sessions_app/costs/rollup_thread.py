"""The spend roll-up on a thread of a worker (``start_thread``): a worker that
sweeps on a thread (``wink_project.celery``) rolls the closed days up every
``WINK_SPEND_ROLLUP_INTERVAL`` seconds beside its sweeps (ADR 0027); what a run
does is ``rollup.roll_up``."""

from __future__ import annotations

import logging
import threading
import time

from django.db import connection

from sessions_app.costs import rollup

logger = logging.getLogger(__name__)


def roll_up_once() -> rollup.RollUpReport | None:
    """``roll_up``, logged; never raises (a thread goes on), and gives its
    connection back (the next run is an interval away)."""
    try:
        report = rollup.roll_up()
    except Exception:
        logger.exception("Rolling up the spend failed; trying again at the next run")
        return None
    finally:
        connection.close()
    if report.rolled_up:
        logger.info("%s", report)
    return report


def _roll_up_forever(interval: float) -> None:
    while True:
        began = time.monotonic()
        roll_up_once()
        time.sleep(max(0.0, interval - (time.monotonic() - began)))


def start_thread(interval: float) -> threading.Thread:
    """Roll up every ``interval`` seconds on a thread of this process (a
    worker that sweeps on a thread, ``wink_project.celery``); from now."""
    thread = threading.Thread(
        target=_roll_up_forever,
        args=(interval,),
        name="wink-spend-rollup",
        daemon=True,
    )
    thread.start()
    logger.info("Rolling up the spend on a thread of this worker every %s s", interval)
    return thread
