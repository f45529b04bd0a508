"""The word that a session ended: ``session_ended``, sent once the end's
transaction committed.

Whatever ends a session (the run's own end, a cancel of a queued or paused
session, the sweeper settling a stale one) calls ``announce`` inside the
transaction that writes the end; the signal goes out after that transaction
commits (``transaction.on_commit``), never for an end that rolled back, and a
paused session is not ended. Receivers (the OpenTelemetry export,
``sessions_app.telemetry``) are told the session's id; what a receiver raises
is logged, never raised into the run (``Signal.send_robust``).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.dispatch import Signal

logger = logging.getLogger(__name__)

#: sent with ``session_id=`` after a session's end committed
session_ended = Signal()


def announce(session_id: Any) -> None:
    """Send ``session_ended`` for ``session_id`` once the current transaction
    commits (at once outside one)."""
    transaction.on_commit(lambda: _send(session_id))


def _send(session_id: Any) -> None:
    for receiver, response in session_ended.send_robust(
        sender=None, session_id=session_id
    ):
        if isinstance(response, Exception):
            logger.error(
                "A receiver of session %s's end failed: %r",
                session_id,
                receiver,
                exc_info=response,
            )
