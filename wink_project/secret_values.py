"""The deployment's secret values, and masking them wherever they appear.

Hiding a setting by its name is not enough: a secret travels. The database
password sits in the locals of ``connect()`` (``conn_params``, the connection
string), the OpenAI key in a client's attributes, an MCP header value in the
config it was built into. ``configured_secrets()`` lists the values to look
for; a ``Masker`` replaces each occurrence, inside any text, with a
substitute. Values shorter than ``MIN_SECRET_LENGTH`` are left alone (masking
"ab" everywhere would make a page unreadable); a libpq connection string's
``password=...``, a URL's ``user:password@`` and a query's ``?token=...`` are
masked whatever their length.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings

MIN_SECRET_LENGTH = 4

# Names whose value is a secret: in settings (at any depth: DATABASES' PASSWORD,
# an OPTIONS' sslpassword) and in the environment.
SECRET_NAME = re.compile(
    r"PASSWORD$|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY|CREDENTIAL|(^|_)DSN$",
    flags=re.IGNORECASE,
)
# A URL's userinfo (scheme://user:password@host).
URL_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/@\s]*@", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"\b[a-z][a-z0-9+.-]*://[^/@\s:]*:([^/@\s]+)@", re.I)
# libpq's "key=value" connection strings (psycopg's conninfo).
_CONNINFO_PASSWORD = re.compile(
    r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s'\"]+)", re.IGNORECASE
)
# A URL query's value whose name says it is secret (?access_token=...): each
# name=value read whole (possessively: linear in the text), then its name tested.
_QUERY_PARAM = re.compile(r"((?:^|[?&])([^=&#\s]*+)=)[^&#\s'\"]*+")
_SECRET_PARAM = re.compile(
    r"pass|secret|token|key|auth|credential|signature", flags=re.IGNORECASE
)
# The same within an address carried, encoded, in another's query (a login
# page's ?next=/audit/costs.csv%3Ftoken%3D...): %3F, %26 and %3D for ?, & and =.
_ENCODED_QUERY_PARAM = re.compile(
    r"((?:%3F|%26)([^=&#\s%]*+)%3D)(?:[^&#\s'\"%]|%(?!26)[0-9A-Fa-f]{2})*+",
    flags=re.IGNORECASE,
)
# OpenTelemetry's exporter variables: a collector's headers (an API key) and
# an endpoint whose query may carry one.
_OTLP_HEADERS = re.compile(r"^OTEL_EXPORTER_OTLP_(?:[A-Z]+_)?HEADERS$")
_OTLP_ENDPOINT = re.compile(r"^OTEL_EXPORTER_OTLP_(?:[A-Z]+_)?ENDPOINT$")
_SECRET_HEADER = re.compile(
    r"auth|key|token|secret|pass|team|credential|signature", flags=re.IGNORECASE
)
# A header value such as "Bearer <token>": the token alone is a secret too.
_TOKEN_PART_LENGTH = 8
_MAX_DEPTH = 8


def mcp_header_variable(name: str) -> bool:
    """Whether an MCP header may read the variable ``name`` (the rule of
    ``tooling.assembly.hosted.allowed_header_variable``); the settings that
    state the rule are not such variables."""
    if name in ("WINK_MCP_HEADER_ENV_PREFIX", "WINK_MCP_HEADER_ENV_ALLOW"):
        return False
    prefix = getattr(settings, "WINK_MCP_HEADER_ENV_PREFIX", "")
    allowed = getattr(settings, "WINK_MCP_HEADER_ENV_ALLOW", ())
    return bool(prefix and name.startswith(prefix)) or name in allowed


def _url_passwords(text: str) -> list[str]:
    found = []
    for match in _URL_PASSWORD.finditer(text):
        found += [match.group(1), unquote(match.group(1))]
    return found


def _otlp_secrets(name: str, value: str) -> list[str]:
    """The secrets an OpenTelemetry exporter variable holds: the value of
    each header named like a credential (``authorization``, ``x-api-key``,
    ``x-honeycomb-team``; ``key=value,...``), an endpoint's query."""
    if _OTLP_HEADERS.match(name):
        found = []
        for pair in value.split(","):
            header, _, item = pair.partition("=")
            if _SECRET_HEADER.search(unquote(header)):
                found.append(unquote(item).strip())
        return found
    if _OTLP_ENDPOINT.match(name):
        return [urlsplit(value.strip()).query]
    return []


def _from_setting(name: str, value: Any, found: set[str], depth: int = 0) -> None:
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, str):
        if SECRET_NAME.search(name):
            found.add(value)
        found.update(_url_passwords(value))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _from_setting(str(key), item, found, depth + 1)
    elif isinstance(value, list | tuple):  # SECRET_KEY_FALLBACKS, ...
        for item in value:
            _from_setting(name, item, found, depth + 1)


def configured_secrets() -> set[str]:
    """Every secret value the settings and the environment hold: settings and
    variables named like a password, secret, token, API key or DSN
    (``SECRET_NAME``; every ``DATABASES`` PASSWORD, ``SECRET_KEY`` and its
    fallbacks, ``OPENAI_API_KEY``, ``EMAIL_HOST_PASSWORD``, the approval
    webhook's secret), the approval webhook's URL, the password of every URL
    (database, broker, result backend, caches, the OTLP collector), the
    variables MCP headers may read, and an OTLP exporter's header values and
    its endpoint's query."""
    found: set[str] = set()
    for name in dir(settings):
        if name.isupper():
            _from_setting(name, getattr(settings, name, None), found)
    webhook = getattr(settings, "WINK_APPROVAL_WEBHOOK_URL", "")
    if isinstance(webhook, str):
        found.add(webhook)  # its path or query may be the token
    for name, value in os.environ.items():
        if SECRET_NAME.search(name) or mcp_header_variable(name):
            found.add(value)
        found.update(_url_passwords(value))
        found.update(_otlp_secrets(name, value))
    return found


def _forms(secret: str) -> set[str]:
    """How ``secret`` may be written in text: as it is, inside a Python repr
    (either quote) or a JSON string."""
    quoted = secret.replace("\\", "\\\\")
    return {
        secret,
        repr(secret)[1:-1],
        quoted.replace("'", "\\'"),
        quoted.replace('"', '\\"'),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
    }


class Masker:
    """Replaces every occurrence of the given secrets with ``substitute``, and
    so a URL's userinfo, a connection string's password and a query value
    named like a secret (``?access_token=...``)."""

    def __init__(self, secrets: Iterable[str], substitute: str) -> None:
        self.substitute = substitute
        values: set[str] = set()
        for secret in secrets:
            if not isinstance(secret, str) or len(secret) < MIN_SECRET_LENGTH:
                continue
            values.add(secret)
            values.update(
                part
                for part in secret.split()
                if len(part) >= _TOKEN_PART_LENGTH and part != secret
            )
        forms = {form for value in values for form in _forms(value)}
        ordered = sorted(forms, key=len, reverse=True)  # the longest first
        self._text = (
            re.compile("|".join(re.escape(form) for form in ordered))
            if ordered
            else None
        )
        encoded = {form.encode("utf-8", "surrogatepass") for form in ordered}
        encoded |= {
            repr(value.encode("utf-8", "surrogatepass"))[2:-1].encode()
            for value in values
        }
        self._bytes = (
            re.compile(
                b"|".join(
                    re.escape(form) for form in sorted(encoded, key=len, reverse=True)
                )
            )
            if encoded
            else None
        )

    def text(self, text: str) -> str:
        """``text`` with every secret masked (the same object when none was)."""
        masked = text
        if self._text is not None and self._text.search(masked):
            masked = self._text.sub(self.substitute, masked)
        if "@" in masked and "://" in masked:
            masked = URL_USERINFO.sub(rf"\1{self.substitute}@", masked)
        if "=" in masked:  # a connection string, or a query string
            masked = _CONNINFO_PASSWORD.sub(rf"\1{self.substitute}", masked)
            masked = _QUERY_PARAM.sub(self._query_value, masked)
        if "%3" in masked.upper():  # a query string inside another, encoded
            masked = _ENCODED_QUERY_PARAM.sub(self._query_value, masked)
        return text if masked == text else masked

    def _query_value(self, match: re.Match[str]) -> str:
        if _SECRET_PARAM.search(match.group(2)):
            return match.group(1) + self.substitute
        return match.group(0)

    def bytes(self, data: bytes) -> bytes:
        if self._bytes is None or not self._bytes.search(data):
            return data
        return self._bytes.sub(self.substitute.encode(), data)
