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

import datetime
import json
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import (
    Exists,
    F,
    JSONField,
    OuterRef,
    QuerySet,
    Subquery,
)
from django.db.models.functions import JSONObject
from django.utils import timezone

from sessions_app.approvals import outcome
from sessions_app.models import (
    SESSION_BODY_FIELDS,
    AgentSession,
    ApprovalRequest,
    ApprovalRequestQuerySet,
    ProviderCall,
    ToolInvocation,
)
from sessions_app.models.approvals import INBOX_CLOSED, INBOX_DUE

PENDING = ApprovalRequest.Status.PENDING
# How much of a run's parameters or a call's arguments one line of the inbox
# shows (the detail page shows them whole).
COMPACT_LENGTH = 160
# What one row of the inbox page reads of a request and its run (``listed``);
# the rest is for the request's own page.
LISTED_FIELDS = (
    "session",
    "tool_name",
    "server_label",
    "params",
    "raw_arguments",
    "reason",
    "status",
    "requested_at",
    "expires_at",
    "decided_at",
    "decided_by",
    "session__prompt_ref",
    "session__params",
    "session__status",
    "session__attempts",
    "session__created_by",
)


def visible_to(user: Any) -> ApprovalRequestQuerySet:
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


def with_context(approvals: ApprovalRequestQuerySet) -> QuerySet[ApprovalRequest]:
    """``approvals`` with what tells one request from another, in the same
    query (no query per row): the run's parameters and author (joined), and
    the step recorded before the request (``step_before``): the session's
    last tool call and last provider call up to the request, as correlated
    subqueries, three in all: a step's facts as one small JSON object, a
    tool call's arguments as they are (a subquery per fact, seven, cost the
    inbox's page about 1.5 ms more at 100,000 sessions: docs/benchmarks.md).
    The session's large fields are not read, its parameters are. What
    became of an approved call is read for one request with
    ``with_call_record``, for a page with ``attach_call_records``."""
    upto = {"session": OuterRef("session"), "created_at__lte": OuterRef("requested_at")}
    # The last in the timeline's order, read backwards from its indexes
    # (tool_timeline, unique_call_turn): a long session's thousands of calls
    # are not sorted for it.
    tools = ToolInvocation.objects.filter(**upto).order_by("-turn", "-sequence")
    calls = ProviderCall.objects.filter(**upto).order_by("-turn")

    def last(rows: QuerySet[Any], value: Any) -> Subquery:
        latest = rows.annotate(last_value=value).values("last_value")[:1]
        return Subquery(latest, output_field=JSONField())

    return (
        approvals.select_related("session__created_by", "decided_by")
        .defer(
            *(f"session__{name}" for name in SESSION_BODY_FIELDS if name != "params")
        )
        .annotate(
            before_tool=last(
                tools, JSONObject(at="created_at", name="name", success="success")
            ),
            before_tool_params=last(tools, F("params")),
            before_call=last(
                calls, JSONObject(at="created_at", turn="turn", status="status")
            ),
        )
    )


def listed(approvals: QuerySet[ApprovalRequest]) -> QuerySet[ApprovalRequest]:
    """``approvals`` (``with_context``) reading only what a row of the inbox
    shows: ``LISTED_FIELDS`` and the two users' names. A run's and a user's
    other columns, read and converted for 50 rows, cost the page about 4 ms
    of its 25 at 100,000 sessions (docs/benchmarks.md)."""
    username = get_user_model().USERNAME_FIELD
    return approvals.only(
        *LISTED_FIELDS,
        f"session__created_by__{username}",
        f"decided_by__{username}",
    )


def attach_call_records(approvals: list[ApprovalRequest]) -> None:
    """Give the approved requests of ``approvals`` (a page already read)
    what their runs recorded of the call (``with_call_record``), in one more
    query, only when the page holds any: the inbox's first page, its pending
    requests, builds and reads none of it (building the annotations cost the
    page about 2 ms at 20,000 requests, docs/benchmarks.md)."""
    approved = [a.pk for a in approvals if a.status == ApprovalRequest.Status.APPROVED]
    if not approved:
        return
    records = {
        pk: (recorded, refused)
        for pk, recorded, refused in ApprovalRequest.objects.filter(pk__in=approved)
        .with_call_record()
        .values_list("pk", "call_recorded", "call_refused")
    }
    for approval in approvals:
        if approval.pk in records:
            approval.call_recorded, approval.call_refused = records[approval.pk]  # type: ignore[attr-defined]


def with_run_visible(
    approvals: QuerySet[ApprovalRequest], user: Any
) -> QuerySet[ApprovalRequest]:
    """``approvals`` with ``run_visible``: whether ``user`` may open the
    request's session itself (an approver may decide a call of a run they
    may not open). For one request (the detail page), not for a list: on a
    list PostgreSQL plans the subquery as a hash of every session the user
    sees (100,000 rows read to show 50: 29 ms of the inbox's first page at
    100,000 sessions, docs/benchmarks.md)."""
    visible = AgentSession.objects.visible_to(user).filter(pk=OuterRef("session"))
    return approvals.annotate(run_visible=Exists(visible))


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
    tool = getattr(approval, "before_tool", None) or {}
    call = getattr(approval, "before_call", None) or {}
    name, turn = tool.get("name"), call.get("turn")
    if name:
        outcome = "succeeded" if tool.get("success") else "failed"
        arguments = compact(getattr(approval, "before_tool_params", None), 80)
        text = f"tool call {name}({arguments}) {outcome}"
        if turn is not None and _moment(call) > _moment(tool):
            text += f", then provider call of turn {turn}"
        return StepBefore("tool_call", text)
    if turn is not None:
        status = call.get("status") or "no status"
        return StepBefore("provider_call", f"provider call of turn {turn} ({status})")
    return StepBefore("", "")


def _moment(facts: dict[str, Any]) -> datetime.datetime:
    """When a step of ``with_context``'s JSON facts was recorded (ISO 8601
    text in JSON: with its offset on PostgreSQL, in UTC without it on
    SQLite; the two steps of one request come from the same database)."""
    return datetime.datetime.fromisoformat(facts["at"])


@dataclass(frozen=True, slots=True)
class ShownStatus:
    value: str
    label: str
    # Said beside the decision on the request's page (empty: nothing to add).
    note: str = ""


RUN_ENDED = ShownStatus("cancelled", "Closed (the run ended)")
OVERDUE = ShownStatus(
    ApprovalRequest.Status.EXPIRED.value, "Expired (the sweeper closes it)"
)


def shown_status(approval: ApprovalRequest) -> ShownStatus:
    """The approval's status as a person should read it: a request still
    marked pending whose run was cancelled (or ended otherwise) waits for
    nobody, and one past its deadline can no longer be decided (a decision
    is refused as closed): each is shown so, before the sweeper records it.
    An approved call its run did not record as run is not shown as a plain
    "Approved" (``outcome``: refused, did not run, may have run)."""
    result = outcome.of(approval)
    if result is not None and result is not outcome.Outcome.RAN:
        return ShownStatus(
            ApprovalRequest.Status.APPROVED.value,
            outcome.label(result),
            note=outcome.note(approval, result),
        )
    if approval.status == PENDING:
        run = approval.session.status
        if run == AgentSession.Status.CANCELLED:
            cancelled = ApprovalRequest.Status.CANCELLED
            return ShownStatus(cancelled.value, cancelled.label)
        if run in AgentSession.TERMINAL:
            return RUN_ENDED
        if approval.expires_at <= timezone.now():
            return OVERDUE
    return ShownStatus(approval.status, approval.get_status_display())
