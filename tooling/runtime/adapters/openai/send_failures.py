"""A request that got no usable response: ``SendFailure`` (what the run records
and the phase it ends), built for each way an attempt fails, and the start of a
text on one line for an error message (``excerpt``).

Every message quoting the provider's words is masked with the run's ``redact``
before it is cut, so no part of a secret the cut falls inside is left behind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import openai

from ...deadlines import Deadline
from ...events import ProviderAttempt

_EXCERPT = 300


class SendFailure(Exception):
    """No usable response: what the run records and the phase it ends."""

    def __init__(
        self,
        message: str,
        *,
        phase: str,
        error_type: str,
        attempts: tuple[ProviderAttempt, ...],
        status_code: int | None = None,
        request_id: str | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.phase = phase
        self.error_type = error_type
        self.attempts = attempts
        self.status_code = status_code
        self.request_id = request_id
        self.payload = dict(payload or {})


def excerpt(text: str, limit: int = _EXCERPT) -> str:
    """The start of ``text`` on one line, for an error message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def failed_attempt(
    number: int,
    error: openai.APIError,
    latency: float,
    offset: float,
    redact: Callable[[str], str],
) -> ProviderAttempt:
    """Attempt ``number``, which ``error`` ended after ``latency`` ms."""
    return ProviderAttempt(
        number,
        getattr(error, "status_code", None),
        latency,
        describe(error, redact),
        type(error).__name__,
        getattr(error, "request_id", None),
        offset,
    )


def status_failure(
    error: openai.APIStatusError,
    attempts: list[ProviderAttempt],
    redact: Callable[[str], str],
) -> SendFailure:
    """The provider answered with an error status not retried (or no more)."""
    return SendFailure(
        f"The provider rejected the request: {describe(error, redact)}",
        phase="request",
        error_type=type(error).__name__,
        attempts=tuple(attempts),
        status_code=error.status_code,
        request_id=error.request_id,
        payload={
            "error_type": type(error).__name__,
            "status_code": error.status_code,
            "code": error.code,
            "request_id": error.request_id,
            "attempts": len(attempts),
        },
    )


def connection_failure(
    error: openai.APIConnectionError, attempts: list[ProviderAttempt]
) -> SendFailure:
    """No answer: the connection failed or timed out (and no retry is left)."""
    if isinstance(error, openai.APITimeoutError):
        message = "The provider request timed out."
    else:
        message = "Could not connect to the provider."
    if len(attempts) > 1:
        message = f"{message[:-1]} ({len(attempts)} attempts)."
    return SendFailure(
        message,
        phase="request",
        error_type=type(error).__name__,
        attempts=tuple(attempts),
        payload={
            "error_type": type(error).__name__,
            "status_code": None,
            "code": None,
            "request_id": None,
            "attempts": len(attempts),
        },
    )


def deadline_failure(
    deadline: Deadline,
    attempts: list[ProviderAttempt],
    number: int,
    latency: float,
    *,
    before: bool = False,
    offset: float | None = None,
) -> SendFailure:
    """The run's deadline came: ``before`` attempt ``number`` (or a retry of
    it), or ``latency`` ms into it (that attempt is recorded as cut short)."""
    if before and not attempts:
        message = "Deadline expired before provider request."
    elif before:
        message = "Deadline expired before the request could be retried."
    else:
        message = (
            f"Deadline expired while waiting for the provider "
            f"({latency / 1000:.1f} s into attempt {number})."
        )
        attempts.append(
            ProviderAttempt(
                number,
                None,
                latency,
                message,
                "DeadlineExceeded",
                offset_ms=offset,
            )
        )
    return SendFailure(
        message,
        phase="deadline",
        error_type="DeadlineExceeded",
        attempts=tuple(attempts),
        payload=deadline.payload(),
    )


def describe(error: openai.APIError, redact: Callable[[str], str] = str) -> str:
    """The error's message on one line, without an HTML page's worth of text,
    ``redact`` applied before it is cut."""
    if isinstance(error, openai.APITimeoutError):
        return "Request timed out."
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__
        return f"Connection error ({type(cause).__name__})." if cause else str(error)
    if isinstance(error, openai.APIStatusError):
        body = error.body
        detail = body.get("message") if isinstance(body, Mapping) else None
        if not isinstance(detail, str) or not detail:
            detail = error.response.text or "(no message)"
        return f"HTTP {error.status_code}: {excerpt(redact(detail), 500)}"
    return excerpt(redact(str(error.message)), 500)
