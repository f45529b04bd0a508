"""Whether and when a failed Responses API request is tried again: the SDK's
rules (408, 409, 429 except ``insufficient_quota``, 5xx; the ``x-should-retry``
header wins; ``retry-after-ms``/``retry-after`` honoured up to a minute, else
exponential backoff with jitter). ``sending.Sender`` applies them, and its
deadline has the last word."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping

import openai

_RETRY_STATUSES = frozenset({408, 409, 429})
_MAX_RETRY_AFTER = 60.0


def retry_delay(error: openai.APIStatusError, number: int) -> float | None:
    """Seconds to wait before retrying ``error`` (attempt ``number``), or
    ``None``: not retried."""
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
    after = retry_after(headers)
    if after is not None:
        return after if after <= _MAX_RETRY_AFTER else None
    return backoff(number)


def backoff(number: int) -> float:
    """Seconds before the retry of attempt ``number`` that no header set:
    0.5, 1, 2 ... up to 8, less up to a quarter at random."""
    return min(0.5 * 2.0 ** (number - 1), 8.0) * (1 - 0.25 * random.random())


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a response's headers ask for, in seconds (``None``: none)."""
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
