"""What follows a session's end: its search text, written with the end, and
the word that it ended, ``session_ended``, sent once the end committed.

Whatever ends a session (the run's own end, a cancel of a queued or paused
session, the sweeper settling a stale one) calls ``announce`` inside the
transaction that writes the end. The session's search text
(``sessions_app.models.search``) is written in that transaction, so an ended
session always has one; the signal goes out after that transaction commits
(``transaction.on_commit``), never for an end that rolled back, and a paused
session is not ended. Receivers (the OpenTelemetry export,
``sessions_app.telemetry``) are told the session's id; what a receiver raises
is logged, never raised into the run (``Signal.send_robust``).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.dispatch import Signal

from sessions_app.models import AgentSession
from sessions_app.models.search import index_ended

logger = logging.getLogger(__name__)

#: sent with ``session_id=`` after a session's end committed
session_ended = Signal()


def announce(
    session_id: Any,
    session: AgentSession | None = None,
    output_text: str | None = None,
) -> None:
    """Write ``session_id``'s whole search text (``index_ended``: from
    ``session`` and ``output_text`` when the caller holds them), and send
    ``session_ended`` for it once the current transaction commits (at once
    outside one)."""
    index_ended(session_id, session, output_text)
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
