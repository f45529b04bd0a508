"""Masking credentials in request bodies before they are recorded, shown or
logged (MCP headers, authorization)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

REDACTED = "[redacted]"

_SECRET_TOOL_KEYS = ("headers", "authorization")


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
