"""What a response's ``status`` means for the run: only ``completed`` is an
answer to act on.

An HTTP 200 is not success. ``failed`` and ``incomplete`` say why in
``error`` / ``incomplete_details``; ``queued``, ``in_progress`` and
``cancelled`` belong to background mode (``background: true``), which the
product never asks for: such a response has no output yet, and reading it as
an answer would end the run "succeeded" with nothing. Any other status is
unknown and refused the same way. A body without a status is read as
completed, as the SDK's lenient parsing reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .send_failures import excerpt

BACKGROUND_STATUSES = frozenset({"queued", "in_progress", "cancelled"})


def status_problem(data: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """Why the response ``data`` cannot be acted on (the message and the
    error's payload), or ``None`` when it is complete."""
    status = data.get("status")
    if status is None or status == "completed":
        return None
    response_id = data.get("id")
    if status == "failed":
        failure = data.get("error")
        failure = failure if isinstance(failure, Mapping) else {}
        return (
            f"The provider reported the response as failed: "
            f"{failure.get('code') or 'error'}: "
            f"{failure.get('message') or 'no message'}",
            {"response_id": response_id, "error": failure},
        )
    if status == "incomplete":
        details = data.get("incomplete_details")
        details = details if isinstance(details, Mapping) else {}
        reason = details.get("reason") or "unknown"
        return (
            f"The provider returned an incomplete response (reason: {reason}).",
            {"response_id": response_id, "reason": reason},
        )
    shown = excerpt(str(status), 40)
    if isinstance(status, str) and status in BACKGROUND_STATUSES:
        message = (
            f"The provider answered with status '{shown}': the product does "
            "not use background mode; the response has no output to act on."
        )
    else:
        message = (
            f"The provider answered with an unknown status '{shown}'; only a "
            "completed response is acted on."
        )
    return message, {"response_id": response_id, "status": shown}


__all__ = ["BACKGROUND_STATUSES", "status_problem"]
