"""The first rows of each of a session's lists, bounded: what a session's
detail in the API holds (``first_rows``), whatever the session's length."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.db.models import F, QuerySet

from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    StateChange,
    ToolInvocation,
    VirtualFile,
)

TRAIL_LISTS = (
    "provider_calls",
    "tool_invocations",
    "citations",
    "policy_denials",
    "state_changes",
    "files",
)


@dataclasses.dataclass(frozen=True)
class Trail:
    """The first rows of each of a session's lists, in timeline order;
    ``truncated`` names the lists that hold more (page through them)."""

    provider_calls: list[ProviderCall]
    tool_invocations: list[ToolInvocation]
    citations: list[Citation]
    policy_denials: list[PolicyDenial]
    state_changes: list[StateChange]
    files: list[VirtualFile]
    truncated: tuple[str, ...]


def first_rows(session: AgentSession, *, limit: int) -> Trail:
    """At most ``limit`` rows of each list (one query each, in index order):
    what a session's detail holds, whatever the session's length."""
    querysets: dict[str, QuerySet[Any]] = {
        "provider_calls": ProviderCall.objects.filter(session=session)
        .defer("request", "response")
        .order_by("turn"),
        "tool_invocations": ToolInvocation.objects.filter(session=session).order_by(
            "sequence"
        ),
        "citations": session.citations.annotate(turn=F("provider_call__turn")).order_by(
            "turn", "id"
        ),
        "policy_denials": PolicyDenial.objects.filter(session=session).order_by(
            "turn", "sequence", "id"
        ),
        "state_changes": StateChange.objects.filter(session=session).order_by(
            "turn", "sequence", "id"
        ),
        "files": VirtualFile.objects.filter(session=session).order_by("path"),
    }
    rows: dict[str, list[Any]] = {}
    truncated: list[str] = []
    for name in TRAIL_LISTS:
        found = list(querysets[name][: limit + 1])
        if len(found) > limit:
            truncated.append(name)
        rows[name] = found[:limit]
    return Trail(**rows, truncated=tuple(truncated))
