"""Sending one Responses API request: bounded by the deadline, retried, observed.

The SDK's own retries are off (the adapter calls the client with
``max_retries=0``); ``Sender`` retries instead, with the SDK's rules (408, 409,
429 except ``insufficient_quota``, 5xx, timeouts and cut connections; the
``x-should-retry`` header wins; ``retry-after-ms``/``retry-after`` honoured,
else exponential backoff), so that:

- every attempt is recorded (``ProviderAttempt``: status code, error, latency);
- each attempt's timeout is the smaller of the configured timeout and what is
  left of the deadline, and no retry starts that the deadline would cut short;
- with a deadline or a heartbeat, the HTTP call runs on a helper thread while
  the caller's thread waits in short slices, calling the heartbeat (which may
  raise ``RunAborted``) and giving up at the deadline whatever the provider
  does: a server that trickles bytes defeats any per-read timeout, not this.
  An abandoned call ends on its own timeout; its reply is ignored.

The body is decoded here, once: a 200 whose body is not a JSON object is a
failed call, not a crash. It is returned as received; ``has_surrogates``
tells the run that replaying it needs ``tooling.runtime.text.sendable`` first.
An error message quotes the start of a body: the run's secrets are masked
(``redact``) before it is cut, so no part of a secret the cut falls inside is
left behind.
"""

from __future__ import annotations

import concurrent.futures
import email.utils
import json
import math
import random
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import openai

from ...deadlines import Deadline
from ...events import ProviderAttempt
from . import helpers
from .codecs.base import JsonObject

T = TypeVar("T")

_RETRY_STATUSES = frozenset({408, 409, 429})
_MAX_RETRY_AFTER = 60.0
_EXCERPT = 300
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


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


class Reply:
    """A decoded response body and how it was obtained."""

    __slots__ = ("attempts", "data", "has_surrogates", "latency_ms", "request_id")

    def __init__(
        self,
        data: dict[str, Any],
        *,
        request_id: str | None,
        attempts: tuple[ProviderAttempt, ...],
        latency_ms: float,
        has_surrogates: bool,
    ) -> None:
        self.data = data
        self.request_id = request_id
        self.attempts = attempts
        self.latency_ms = latency_ms
        self.has_surrogates = has_surrogates


class _DeadlinePassed(Exception):
    pass


def excerpt(text: str, limit: int = _EXCERPT) -> str:
    """The start of ``text`` on one line, for an error message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def configured_timeout(client: openai.OpenAI) -> float:
    """The client's read timeout in seconds (600 when it has none)."""
    timeout: Any = getattr(client, "timeout", None)
    if isinstance(timeout, int | float) and timeout > 0:
        return float(timeout)
    read = getattr(timeout, "read", None)
    if isinstance(read, int | float) and read > 0:
        return float(read)
    return 600.0


class Sender:
    """Sends request bodies for one evaluation; see the module docstring."""

    def __init__(
        self,
        client: openai.OpenAI,
        *,
        max_retries: int,
        timeout: float,
        deadline: Deadline | None,
        heartbeat: Callable[[], None] | None,
        poll_seconds: float = 1.0,
        redact: Callable[[str], str] = str,
    ) -> None:
        self.client = client
        self.redact = redact
        self.max_retries = max(0, max_retries)
        self.timeout = timeout
        self.deadline = deadline
        self.heartbeat = heartbeat
        self.poll_seconds = poll_seconds

    # -- time ---------------------------------------------------------------

    def _remaining(self) -> float:
        if self.deadline is None:
            return math.inf
        return self.deadline.remaining().total_seconds()

    def _wait_for(self, call: Callable[[], T]) -> T:
        """``call()``; on a helper thread when there is a deadline or heartbeat,
        so this thread can beat and give up at the deadline."""
        if self.deadline is None and self.heartbeat is None:
            return call()
        if self.heartbeat is not None:
            self.heartbeat()  # also: the run holds no database connection now
        future = helpers.executor().submit(call)
        while True:
            remaining = self._remaining()
            if remaining <= 0:
                future.cancel()
                raise _DeadlinePassed
            try:
                return future.result(timeout=min(self.poll_seconds, remaining))
            except concurrent.futures.TimeoutError:
                if self.heartbeat is not None:
                    self.heartbeat()  # may raise RunAborted: the call is abandoned

    def _pause(self, seconds: float) -> None:
        """Sleep before a retry, beating every slice."""
        until = time.monotonic() + seconds
        while (left := until - time.monotonic()) > 0:
            time.sleep(min(self.poll_seconds, left))
            if self.heartbeat is not None:
                self.heartbeat()

    # -- sending ------------------------------------------------------------

    def send(self, body: Mapping[str, Any]) -> Reply:
        """POST ``body`` until a usable reply, a final error or the deadline."""
        attempts: list[ProviderAttempt] = []
        started = time.perf_counter()
        # The whole body goes as ``extra_body``, ``model`` too: the SDK sends
        # it as given, without walking its typed parameters (the transform of
        # ``model=`` alone cost about 80 us per call, issue 11).
        whole = dict(body)
        number = 0
        while True:
            number += 1
            remaining = self._remaining()
            if remaining <= 0:
                raise self._deadline_failure(attempts, number, 0.0, before=True)
            timeout = min(self.timeout, remaining)
            attempt_started = time.perf_counter()
            offset = (attempt_started - started) * 1000

            def post(timeout: float = timeout) -> Any:
                return self.client.responses.with_raw_response.create(
                    extra_body=whole, timeout=timeout
                )

            try:
                raw = self._wait_for(post)
            except _DeadlinePassed:
                latency = (time.perf_counter() - attempt_started) * 1000
                raise self._deadline_failure(
                    attempts, number, latency, offset=offset
                ) from None
            except openai.APIStatusError as error:
                latency = (time.perf_counter() - attempt_started) * 1000
                attempts.append(self._failed_attempt(number, error, latency, offset))
                delay = self._retry_delay(error, number)
                if delay is None or not self._may_retry(number, delay):
                    raise self._status_failure(error, attempts) from error
            except openai.APIConnectionError as error:
                latency = (time.perf_counter() - attempt_started) * 1000
                attempts.append(self._failed_attempt(number, error, latency, offset))
                delay = self._backoff(number)
                if not self._may_retry(number, delay):
                    raise self._connection_failure(error, attempts) from error
            else:
                latency = (time.perf_counter() - attempt_started) * 1000
                return self._decode(raw, attempts, number, latency, started, offset)
            self._pause(delay)

    def _may_retry(self, number: int, delay: float) -> bool:
        """Whether attempt ``number`` may be followed by another after ``delay``
        seconds: retries left, and time left before the deadline."""
        return number <= self.max_retries and delay < self._remaining()

    def _decode(
        self,
        raw: Any,
        attempts: list[ProviderAttempt],
        number: int,
        latency: float,
        started: float,
        offset: float,
    ) -> Reply:
        response = raw.http_response
        request_id = response.headers.get("x-request-id")
        status = response.status_code
        content: bytes = response.content
        problem: str | None = None
        data: Any = None
        try:
            data = json.loads(
                content, object_hook=JsonObject, parse_constant=_refuse_constant
            )
        except (ValueError, RecursionError):
            problem = "is not valid JSON"
        if problem is None and not isinstance(data, dict):
            problem = f"is JSON but not an object ({type(data).__name__})"
        if problem is None and not isinstance(data.get("output", []), list | None):
            problem = "has an 'output' that is not a list"
        if problem is not None:
            content_type = response.headers.get("content-type", "no content-type")
            text = self.redact(content.decode("utf-8", errors="replace"))
            message = (
                f"The provider answered HTTP {status} ({content_type}) with a body "
                f"that {problem}: {excerpt(text) or '(empty)'}"
            )
            attempts.append(
                ProviderAttempt(
                    number,
                    status,
                    latency,
                    message,
                    "InvalidResponseBody",
                    request_id,
                    offset,
                )
            )
            raise SendFailure(
                message,
                phase="response",
                error_type="InvalidResponseBody",
                attempts=tuple(attempts),
                status_code=status,
                request_id=request_id,
                payload={"status_code": status, "request_id": request_id},
            )
        attempts.append(
            ProviderAttempt(
                number, status, latency, request_id=request_id, offset_ms=offset
            )
        )
        return Reply(
            data,
            request_id=request_id,
            attempts=tuple(attempts),
            latency_ms=(time.perf_counter() - started) * 1000,
            # JSON can escape what no encoder accepts: a conversation holding
            # such a reply must be made sendable before it is sent again.
            has_surrogates=bool(_SURROGATE_ESCAPE.search(content)),
        )

    # -- retries ------------------------------------------------------------

    def _retry_delay(self, error: openai.APIStatusError, number: int) -> float | None:
        """Seconds to wait before retrying ``error``, or ``None``: not retried."""
        headers = error.response.headers
        should = headers.get("x-should-retry")
        if should == "false":
            return None
        if should != "true":
            if error.code == "insufficient_quota":
                return None  # not transient: retrying only wastes attempts
            code = error.status_code
            if code not in _RETRY_STATUSES and code < 500:
                return None
        after = _retry_after(headers)
        if after is not None:
            return after if after <= _MAX_RETRY_AFTER else None
        return self._backoff(number)

    @staticmethod
    def _backoff(number: int) -> float:
        return min(0.5 * 2.0 ** (number - 1), 8.0) * (1 - 0.25 * random.random())

    # -- failures -----------------------------------------------------------

    def _failed_attempt(
        self, number: int, error: openai.APIError, latency: float, offset: float
    ) -> ProviderAttempt:
        return ProviderAttempt(
            number,
            getattr(error, "status_code", None),
            latency,
            _describe(error, self.redact),
            type(error).__name__,
            getattr(error, "request_id", None),
            offset,
        )

    def _status_failure(
        self, error: openai.APIStatusError, attempts: list[ProviderAttempt]
    ) -> SendFailure:
        return SendFailure(
            f"The provider rejected the request: {_describe(error, self.redact)}",
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

    def _connection_failure(
        self, error: openai.APIConnectionError, attempts: list[ProviderAttempt]
    ) -> SendFailure:
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

    def _deadline_failure(
        self,
        attempts: list[ProviderAttempt],
        number: int,
        latency: float,
        *,
        before: bool = False,
        offset: float | None = None,
    ) -> SendFailure:
        assert self.deadline is not None
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
            payload=self.deadline.payload(),
        )


def _describe(error: openai.APIError, redact: Callable[[str], str] = str) -> str:
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


def _retry_after(headers: Mapping[str, str]) -> float | None:
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
