"""The approval inbox: which approval requests a user sees, in what order.

One rule for the admin, the page and the API (docs/approvals.md, "Who sees
what"):

- a user who may decide an approval (``access.may_decide``: its permission or
  group, ``decide_any_approval`` by default, superusers) sees it, even when
  they may not see its session (the session link is then a 404 for them);
- a user who may see a session (its author; ``view_all_sessions``) sees its
  approvals, read-only unless they may also decide them.

Everything else does not exist for them (404). Deciding goes through
``sessions_app.approvals.decisions.decide``, which checks again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db.models import (
    Exists,
    JSONField,
    OuterRef,
    QuerySet,
    Subquery,
)

from sessions_app.models import (
    SESSION_BODY_FIELDS,
    AgentSession,
    ApprovalRequest,
    ProviderCall,
    ToolInvocation,
)
from sessions_app.models.approvals import INBOX_CLOSED, INBOX_DUE

PENDING = ApprovalRequest.Status.PENDING
# How much of a run's parameters or a call's arguments one line of the inbox
# shows (the detail page shows them whole).
COMPACT_LENGTH = 160


def visible_to(user: Any) -> QuerySet[ApprovalRequest]:
    """The approvals ``user`` sees: those they may decide, and those of the
    sessions they may see (``ApprovalRequest.objects.visible_to``)."""
    return ApprovalRequest.objects.visible_to(user)


def pending_first(approvals: QuerySet[ApprovalRequest]) -> QuerySet[ApprovalRequest]:
    """Pending approvals first (the soonest deadline first), then the
    decided ones, newest first."""
    return approvals.annotate(closed=INBOX_CLOSED, due=INBOX_DUE).order_by(
        "closed", "due", "-requested_at", "-pk"
    )


def pending_for(session: AgentSession) -> ApprovalRequest | None:
    """The approval ``session`` waits for, if any (at most one is pending)."""
    return session.approvals.filter(status=PENDING).first()


def with_context(
    approvals: QuerySet[ApprovalRequest], user: Any
) -> QuerySet[ApprovalRequest]:
    """``approvals`` with what tells one request from another, in the same
    query (no query per row): the run's parameters and author (joined), and
    the step recorded before the request (``step_before``): the session's
    last tool call and last provider call up to the request, as correlated
    subqueries. The session's large fields are not read, its parameters
    are. ``run_visible``: whether ``user`` may open the session itself (an
    approver may decide a call of a run they may not open)."""
    upto = {"session": OuterRef("session"), "created_at__lte": OuterRef("requested_at")}
    tools = ToolInvocation.objects.filter(**upto).order_by("-created_at", "-sequence")
    calls = ProviderCall.objects.filter(**upto).order_by("-created_at", "-turn")

    def last(rows: QuerySet[Any], field: str, **output: Any) -> Subquery:
        return Subquery(rows.values(field)[:1], **output)

    return (
        approvals.select_related("session__created_by", "decided_by")
        .defer(
            *(f"session__{name}" for name in SESSION_BODY_FIELDS if name != "params")
        )
        .annotate(
            run_visible=Exists(
                AgentSession.objects.visible_to(user).filter(pk=OuterRef("session"))
            ),
            before_tool_at=last(tools, "created_at"),
            before_tool_name=last(tools, "name"),
            before_tool_params=last(tools, "params", output_field=JSONField()),
            before_tool_success=last(tools, "success"),
            before_call_at=last(calls, "created_at"),
            before_call_turn=last(calls, "turn"),
            before_call_status=last(calls, "status"),
        )
    )


def compact(value: Any, limit: int = COMPACT_LENGTH) -> str:
    """``value`` as one line of JSON, cut to ``limit`` characters (with
    "..."); plain text, escaped where it is shown."""
    if value is None:
        return ""
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True, slots=True)
class StepBefore:
    """The step a session recorded last before an approval was requested."""

    kind: str  # "tool_call" | "provider_call" | ""
    text: str


def step_before(approval: ApprovalRequest) -> StepBefore:
    """One line about what the run did last before asking: its last tool
    call (name, arguments, outcome), else its last provider call; read from
    the annotations of ``with_context``."""
    name = getattr(approval, "before_tool_name", None)
    turn = getattr(approval, "before_call_turn", None)
    if name:
        outcome = (
            "succeeded" if getattr(approval, "before_tool_success", None) else "failed"
        )
        arguments = compact(getattr(approval, "before_tool_params", None), 80)
        text = f"tool call {name}({arguments}) {outcome}"
        tool_at = getattr(approval, "before_tool_at", None)
        call_at = getattr(approval, "before_call_at", None)
        if turn is not None and tool_at and call_at and call_at > tool_at:
            text += f", then provider call of turn {turn}"
        return StepBefore("tool_call", text)
    if turn is not None:
        status = getattr(approval, "before_call_status", "") or "no status"
        return StepBefore("provider_call", f"provider call of turn {turn} ({status})")
    return StepBefore("", "")


@dataclass(frozen=True, slots=True)
class ShownStatus:
    value: str
    label: str


RUN_ENDED = ShownStatus("cancelled", "Closed (the run ended)")


def shown_status(approval: ApprovalRequest) -> ShownStatus:
    """The approval's status as a person should read it: a request still
    marked pending whose run was cancelled (or ended otherwise) waits for
    nobody, and is shown so."""
    if approval.status == PENDING:
        run = approval.session.status
        if run == AgentSession.Status.CANCELLED:
            cancelled = ApprovalRequest.Status.CANCELLED
            return ShownStatus(cancelled.value, cancelled.label)
        if run in AgentSession.TERMINAL:
            return RUN_ENDED
    return ShownStatus(approval.status, approval.get_status_display())
