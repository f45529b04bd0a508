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

from typing import Any

from django.db.models import Case, IntegerField, QuerySet, Value, When

from sessions_app.models import AgentSession, ApprovalRequest

PENDING = ApprovalRequest.Status.PENDING


def visible_to(user: Any) -> QuerySet[ApprovalRequest]:
    """The approvals ``user`` sees: those they may decide, and those of the
    sessions they may see (``ApprovalRequest.objects.visible_to``)."""
    return ApprovalRequest.objects.visible_to(user)


def pending_first(approvals: QuerySet[ApprovalRequest]) -> QuerySet[ApprovalRequest]:
    """Pending approvals first (the soonest deadline first), then the
    decided ones, newest first."""
    return approvals.annotate(
        closed=Case(
            When(status=PENDING, then=Value(0)),
            default=Value(1),
            output_field=IntegerField(),
        ),
        due=Case(When(status=PENDING, then="expires_at"), default=None),
    ).order_by("closed", "due", "-requested_at", "-pk")


def pending_for(session: AgentSession) -> ApprovalRequest | None:
    """The approval ``session`` waits for, if any (at most one is pending)."""
    return session.approvals.filter(status=PENDING).first()
