"""Settings from the environment: each reader fails at startup with a message
that names the variable and what it must look like."""

from __future__ import annotations

import os
import re
from decimal import Decimal, InvalidOperation
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name} must be a boolean (one of 1/0, true/false, yes/no, on/off); "
        f"got {raw!r}."
    )


def env_list(name: str, default: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part]


def env_number(name: str, default: float, *, minimum: float = 0) -> float:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number; got {raw!r}.") from None
    if not value >= minimum or value == float("inf"):
        raise ImproperlyConfigured(f"{name} must be at least {minimum}; got {raw!r}.")
    return value


_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def env_rate(name: str, default: str) -> tuple[int, int] | None:
    """A rate such as ``5/15m`` (at most 5 per 15 minutes): a count, then a
    period of seconds, minutes, hours or days (``30/minute``, ``100/2h``, ``10/d``);
    ``(count, seconds)``, or ``None`` for ``off``; unset or empty: ``default``."""
    raw = os.environ.get(name, "").strip() or default
    if raw.lower() == "off":
        return None
    match = re.fullmatch(
        r"(\d+)/(\d*)\s*(s|sec|second|m|min|minute|h|hour|d|day)s?",
        raw,
        flags=re.IGNORECASE,
    )
    if not match or int(match[1]) < 1 or match[2] == "0" or int(match[1]) > 1000:
        raise ImproperlyConfigured(
            f"{name} must look like 5/15m (1 to 1000, then a period: a number of "
            f"seconds, minutes, hours or days: s, m, h or d), or off; got {raw!r}."
        )
    return int(match[1]), int(match[2] or 1) * _PERIODS[match[3][0].lower()]


_PLAIN_AMOUNT = re.compile(r"[0-9]+(\.[0-9]+)?", re.ASCII)


def env_usd(name: str) -> Decimal | None:
    """An amount of US dollars (``"5"``, ``"0.25"``); unset or empty: ``None``."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    # written plainly: Decimal also reads 1e3, 1_000 and other scripts' digits,
    # which the docs and other programs reading the setting do not take
    if not _PLAIN_AMOUNT.fullmatch(raw):
        raise ImproperlyConfigured(
            f"{name} must be an amount of US dollars such as 5 or 0.25 (digits 0-9 "
            f"and one point); got {raw!r}."
        )
    try:
        value = Decimal(raw)
    except InvalidOperation:  # (the pattern lets none through)
        raise ImproperlyConfigured(
            f"{name} must be an amount of US dollars such as 5 or 0.25; got {raw!r}."
        ) from None
    if not value.is_finite() or value < 0 or value >= Decimal("1e8"):
        raise ImproperlyConfigured(
            f"{name} must be at least 0 and below 100000000; got {raw!r}."
        )
    if value != value.quantize(Decimal("0.0001")):
        raise ImproperlyConfigured(
            f"{name} may have at most 4 decimal places; got {raw!r}."
        )
    return value


def env_otlp_traces_endpoint() -> str:
    """Where OTLP/HTTP traces go, as OpenTelemetry's exporters read it:
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as it is, else
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base URL) with ``/v1/traces``; empty
    when neither is set (no export). Only http(s) URLs are taken."""
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if traces:
        name, url = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces
    elif base:
        name, url = "OTEL_EXPORTER_OTLP_ENDPOINT", base.rstrip("/") + "/v1/traces"
    else:
        return ""
    if not re.match(r"https?://[^/?#\s]+", url):
        raise ImproperlyConfigured(
            f"{name} must be an http(s) URL such as http://127.0.0.1:4318; got {url!r}."
        )
    return url


def env_http_url(name: str, example: str) -> str:
    """The http(s) URL in environment variable ``name`` (empty: unset),
    refused at start with the reason when a client could not use it (a
    port that is not a number, no host, another scheme); the value is not
    repeated (it may hold a credential)."""
    url = os.environ.get(name, "").strip()
    if not url:
        return ""
    problem = None
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed [ of an IPv6 address
        problem = "it cannot be read as a URL"
    else:
        try:
            parts.port  # noqa: B018  (a port that is not a number raises)
        except ValueError:
            problem = "its port is not a number from 0 to 65535"
        else:
            if parts.scheme not in ("http", "https"):
                problem = "it does not start with http:// or https://"
            elif not parts.hostname or any(char.isspace() for char in parts.netloc):
                problem = "it names no host, or its host holds a space"
    if problem:
        raise ImproperlyConfigured(
            f"{name} must be an http(s) URL such as {example}: {problem}."
        )
    return url
