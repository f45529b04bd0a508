"""Sending one Responses API request: bounded by the deadline, retried, observed.

The SDK's own retries are off (the adapter calls the client with
``max_retries=0``); ``Sender`` retries instead, with the SDK's rules
(``retries``: 408, 409, 429 except ``insufficient_quota``, 5xx, timeouts and
cut connections; the ``x-should-retry`` header wins; ``retry-after-ms``/
``retry-after`` honoured, else exponential backoff), so that:

- every attempt is recorded (``ProviderAttempt``: status code, error, latency);
- each attempt's timeout is the smaller of the configured timeout and what is
  left of the deadline, and no retry starts that the deadline would cut short;
- with a deadline or a heartbeat, the HTTP call runs on a helper thread while
  the caller's thread waits in short slices, calling the heartbeat (which may
  raise ``RunAborted``) and giving up at the deadline whatever the provider
  does: a server that trickles bytes defeats any per-read timeout, not this.
  An abandoned call ends on its own timeout; its reply is ignored.

Each way a request fails is a ``send_failures.SendFailure``. The body is
decoded here, once: a 200 whose body is not a JSON object is a failed call,
not a crash. It is returned as received; ``has_surrogates``
tells the run that replaying it needs ``tooling.runtime.text.sendable`` first.
An error message quotes the start of a body: the run's secrets are masked
(``redact``) before it is cut, so no part of a secret the cut falls inside is
left behind.
"""

from __future__ import annotations

import concurrent.futures
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import openai

from ...deadlines import Deadline
from ...events import ProviderAttempt
from . import helpers
from .codecs.base import JsonObject
from .retries import backoff, retry_delay
from .send_failures import (
    SendFailure,
    connection_failure,
    deadline_failure,
    excerpt,
    failed_attempt,
    status_failure,
)

T = TypeVar("T")

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


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

    def _deadline_failure(
        self,
        attempts: list[ProviderAttempt],
        number: int,
        latency: float,
        **where: Any,
    ) -> SendFailure:
        assert self.deadline is not None  # only a deadline runs out
        return deadline_failure(self.deadline, attempts, number, latency, **where)

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
                attempts.append(
                    failed_attempt(number, error, latency, offset, self.redact)
                )
                delay = retry_delay(error, number)
                if delay is None or not self._may_retry(number, delay):
                    raise status_failure(error, attempts, self.redact) from error
            except openai.APIConnectionError as error:
                latency = (time.perf_counter() - attempt_started) * 1000
                attempts.append(
                    failed_attempt(number, error, latency, offset, self.redact)
                )
                delay = backoff(number)
                if not self._may_retry(number, delay):
                    raise connection_failure(error, attempts) from error
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


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
