"""Masking credentials before anything is recorded, shown or logged.

``redact_tools``/``redact_request`` mask the credential fields of the tools in
a request body (MCP ``headers``, ``authorization``) by their place.
``SecretRedactor`` masks the run's secret values wherever else they appear: a
provider (or a proxy) may echo the request's ``tools`` in its response, quote
a header in an error message, or an MCP server may return its token in a tool
output. The run applies it to every body, error and attempt it records, and
to each response as it is received, so nothing downstream (native calls,
citations, the history replayed to the provider, a resumed run) sees more.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from ...events import ProviderAttempt

REDACTED = "[redacted]"

_SECRET_TOOL_KEYS = ("headers", "authorization")
# Shorter values are not searched for (they would mask ordinary words).
MIN_SECRET_LENGTH = 4
# "Bearer <token>": the token alone is a secret too.
_TOKEN_PART_LENGTH = 8
_MAX_DEPTH = 256  # deeper JSON is refused by the database side anyway

T = TypeVar("T")


def redact_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``tools`` with credentials (MCP headers, authorization) masked."""
    redacted: list[dict[str, Any]] = []
    for tool in tools:
        copy = dict(tool)
        for key in _SECRET_TOOL_KEYS:
            value = copy.get(key)
            if isinstance(value, Mapping):
                copy[key] = {name: REDACTED for name in value}
            elif value is not None:
                copy[key] = REDACTED
        redacted.append(copy)
    return redacted


def redact_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a request body that is safe to record, show or log."""
    copy = dict(body)
    if "tools" in copy:
        copy["tools"] = redact_tools(copy["tools"])
    return copy


def redact_response(body: T) -> T:
    """``body`` (a response) with the ``tools`` it echoes masked as a
    request's are, every header whatever its name (the same object when it
    echoes none)."""
    if not isinstance(body, dict) or not isinstance(body.get("tools"), list):
        return body
    tools = body["tools"]
    if not any(
        isinstance(tool, Mapping) and tool.keys() & set(_SECRET_TOOL_KEYS)
        for tool in tools
    ):
        return body
    masked = [
        redact_tools([tool])[0] if isinstance(tool, Mapping) else tool for tool in tools
    ]
    result: T = type(body)({**body, "tools": masked})
    return result


# An MCP header whose value is a credential, by its name (Authorization,
# X-Api-Key, Cookie, X-Auth-Token, ...). Every header is masked where the
# request carries it; only these are also looked for wherever else a body may
# quote them: a version or a tenant header ("2025-06-18") is ordinary text the
# model may use, and masking it would change what the run acts on.
CREDENTIAL_HEADER = re.compile(
    r"auth|token|secret|key|cookie|session|passw|signature|credential|bearer",
    re.IGNORECASE,
)


def tool_secrets(tools: Iterable[Any]) -> list[str]:
    """The credential values in a ``tools`` array: each ``authorization`` and
    the value of each MCP header named like a credential
    (``CREDENTIAL_HEADER``)."""
    found: list[str] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        for key in _SECRET_TOOL_KEYS:
            value = tool.get(key)
            if isinstance(value, Mapping):
                found += [
                    item
                    for name, item in value.items()
                    if isinstance(item, str)
                    and isinstance(name, str)
                    and CREDENTIAL_HEADER.search(name)
                ]
            elif isinstance(value, str):
                found.append(value)
    return found


class SecretRedactor:
    """Replaces every occurrence of the given secrets, inside any string at
    any depth of a JSON-like value (keys too), with ``[redacted]``.

    A value shorter than ``MIN_SECRET_LENGTH`` characters is ignored; a value
    made of several words ("Bearer <token>") is looked for whole and each of
    its long words alone. Redacting returns the same object when nothing
    changed, and otherwise a copy of the same shape (mapping types that can
    be rebuilt from pairs are kept, such as the adapter's ``JsonObject``).
    """

    __slots__ = ("_pattern", "_probe")

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        values: set[str] = set()
        for secret in secrets:
            if not isinstance(secret, str) or len(secret) < MIN_SECRET_LENGTH:
                continue
            values.add(secret)
            values.update(w for w in secret.split() if len(w) >= _TOKEN_PART_LENGTH)
        ordered = sorted(values, key=len, reverse=True)  # the longest first
        self._pattern = (
            re.compile("|".join(re.escape(value) for value in ordered))
            if ordered
            else None
        )
        # The secrets as a JSON text writes them: one search of a whole value's
        # JSON tells whether walking it is needed (most bodies hold none).
        written = {json.dumps(v, ensure_ascii=False)[1:-1] for v in values}
        self._probe = tuple(values | written)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, text: str) -> str:
        """``text`` with every secret replaced (the same object if none was)."""
        if self._pattern is None or self._pattern.search(text) is None:
            return text
        return self._pattern.sub(REDACTED, text)

    def __call__(self, value: T) -> T:
        """``value`` (JSON-like) with every secret replaced in every string."""
        if not self._probe:
            return value
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            text = None  # not JSON: walk it
        if text is not None and not any(probe in text for probe in self._probe):
            return value
        result: T = self._walk(value, 0)
        return result

    def _walk(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if depth > _MAX_DEPTH:
            return value
        if isinstance(value, Mapping):
            pairs = [
                (self._walk(k, depth + 1), self._walk(v, depth + 1))
                for k, v in value.items()
            ]
            if all(
                new_k is k and new_v is v
                for (new_k, new_v), (k, v) in zip(pairs, value.items(), strict=True)
            ):
                return value
            if isinstance(value, dict):
                try:  # keep the mapping's type (the adapter's JsonObject)
                    return type(value)(pairs)
                except TypeError:
                    pass
            return dict(pairs)
        if isinstance(value, list | tuple):
            items = [self._walk(item, depth + 1) for item in value]
            if all(new is old for new, old in zip(items, value, strict=True)):
                return value
            return items if isinstance(value, list) else tuple(items)
        return value

    def attempts(
        self, attempts: tuple[ProviderAttempt, ...]
    ) -> tuple[ProviderAttempt, ...]:
        """``attempts`` with the secrets in their error messages replaced."""
        redacted = []
        for attempt in attempts:
            error = attempt.error
            if error is not None and self.text(error) is not error:
                attempt = dataclasses.replace(attempt, error=self.text(error))
            redacted.append(attempt)
        return tuple(redacted)
