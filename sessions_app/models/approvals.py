"""``ApprovalRequest``: a call that waits for a human decision."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Case, Exists, F, OuterRef, Q, Value, When
from django.utils import timezone

from sessions_app import access
from sessions_app.models.audit import PolicyDenial, ProviderCall, ToolInvocation
from sessions_app.models.fields import event_id_field, text_altered_field
from sessions_app.models.sessions import AgentSession
from tooling.append_only import (
    AppendOnlyError,
)

# The inbox's order (``approvals.inbox.pending_first``): pending requests
# first, the soonest deadline first, then the decided ones, newest first. The
# same expressions make the index that serves it (``approval_inbox_order``).
INBOX_CLOSED = Case(
    When(status="pending", then=Value(0)),
    default=Value(1),
    output_field=models.IntegerField(),
)
INBOX_DUE = Case(
    When(status="pending", then=F("expires_at")),
    default=None,
    output_field=models.DateTimeField(),
)


class ApprovalRequestQuerySet(models.QuerySet["ApprovalRequest"]):
    def decidable_by(self, user: Any) -> Any:
        """The approvals ``user`` may decide (``access.may_decide``, as one
        query): all for ``decide_any_approval``, else those whose policy
        names a permission ``user`` holds or a group ``user`` is in; never,
        under four eyes, those of the runs ``user`` started."""
        if not access.is_user(user) or not getattr(user, "is_active", False):
            return self.none()
        others = self.exclude(four_eyes=True, session__created_by=user)
        if user.has_perm(access.DECIDE_ANY):
            return others
        permissions = sorted(user.get_all_permissions())
        groups = list(user.groups.values_list("name", flat=True))
        return others.filter(
            Q(approvers__permission__in=permissions) | Q(approvers__group__in=groups)
        )

    def with_call_record(self) -> Any:
        """Each approval with what its run recorded of the call after the
        decision, for an approved request (null for any other status):
        ``call_recorded``, whether the run got to it (a function call is
        recorded; an MCP request was answered on the run's next provider
        request), and ``call_refused``, whether another policy refused it
        (a function call's denial; an MCP request the run answered "no").
        ``approvals.outcome`` reads them.

        A run that succeeded got past the call (nothing is looked up for
        it); otherwise an indexed lookup (``tool_call_id``,
        ``unique_call_turn``), and one more for a denial
        (``denial_timeline``). The inbox reads them for its page's approved
        rows only (``inbox.attach_call_records``, docs/benchmarks.md)."""
        session = OuterRef("session")
        recorded = ToolInvocation.objects.filter(
            session=session, call_id=OuterRef("call_id")
        )
        # (answered: a request after it that got a response; a failed one
        # may or may not have reached the provider)
        answered = ProviderCall.objects.filter(
            session=session, turn__gt=OuterRef("turn"), response__isnull=False
        )
        refused = PolicyDenial.objects.filter(
            session=session, turn=OuterRef("turn"), sequence=OuterRef("sequence")
        )
        # an MCP request the run answered "no" (``McpApprovals``: its id seen
        # twice) is denied by its request's id
        refused_mcp = PolicyDenial.objects.filter(
            session=session, turn=OuterRef("turn"), call_id=OuterRef("call_id")
        )
        not_approved = ~Q(status="approved")
        return self.annotate(
            call_recorded=Case(
                When(not_approved, then=Value(None)),
                When(session__status="succeeded", then=Value(True)),
                When(kind="mcp", then=Exists(answered)),
                default=Exists(recorded),
                output_field=models.BooleanField(null=True),
            ),
            call_refused=Case(
                When(not_approved, then=Value(None)),
                When(kind="mcp", then=Exists(refused_mcp)),
                default=Exists(refused),
                output_field=models.BooleanField(null=True),
            ),
        )

    def visible_to(self, user: Any) -> Any:
        """What ``user`` may see: the approvals they may decide, and those of
        the sessions they see (``AgentSession.objects.visible_to``)."""
        if not access.is_user(user):
            return self.none()
        if access.sees_all(user) or user.has_perm(access.DECIDE_ANY):
            return self
        decidable = self.decidable_by(user).values("pk")
        return self.filter(Q(pk__in=decidable) | Q(session__created_by=user))


class ApprovalRequest(models.Model):
    """A call that waits for a human "yes" (docs/approvals.md).

    A workflow row, not an audit row: it is created pending when the run
    pauses and decided once, by one conditional update
    (``sessions_app.approvals``); ``save()`` never changes it.
    """

    class Kind(models.TextChoices):
        FUNCTION = "function", "Function tool call"
        MCP = "mcp", "MCP tool call (provider-side)"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        DENIED = "denied", "Denied"
        EXPIRED = "expired", "Expired (denied automatically)"
        CANCELLED = "cancelled", "Cancelled (the run was cancelled)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(
        AgentSession,
        on_delete=models.CASCADE,
        related_name="approvals",
        db_index=False,  # approval_timeline leads with it
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.FUNCTION)
    tool_name = models.CharField(max_length=64)
    # NULL, not "": the per-session uniqueness below only applies to real ids.
    call_id = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001
    sequence = models.PositiveIntegerField(
        null=True, blank=True, help_text="The call's sequence number (function calls)."
    )
    turn = models.PositiveIntegerField(default=0)
    params = models.JSONField(null=True, blank=True)
    raw_arguments = models.TextField(blank=True)
    server_label = models.CharField(max_length=64, blank=True)
    policy_name = models.CharField(max_length=64, blank=True)
    reason = models.TextField(help_text="Why a human must decide.")
    approvers = models.JSONField(
        default=dict,
        blank=True,
        help_text='Who may decide: {"permission": "app.codename", "group": "name"}; '
        "empty: holders of sessions_app.decide_any_approval.",
    )
    four_eyes = models.BooleanField(
        default=False,
        help_text="The run's author may not decide it (the policy's four_eyes, "
        "else WINK_APPROVAL_FOUR_EYES, when it was requested).",
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING
    )
    requested_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True)
    event_id = event_id_field()
    text_altered = text_altered_field()

    objects = ApprovalRequestQuerySet.as_manager()

    class Meta:
        ordering = ["-requested_at"]
        permissions = [
            ("decide_any_approval", "Can approve or deny any approval request"),
        ]
        constraints = [
            # one request per policy that asks about a call (in turn)
            models.UniqueConstraint(
                fields=["session", "call_id", "policy_name"],
                condition=Q(call_id__isnull=False),
                name="unique_approval_call_policy",
            ),
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(status="pending"),
                name="one_pending_approval",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "requested_at"], name="approval_inbox"),
            models.Index(
                INBOX_CLOSED,
                INBOX_DUE,
                F("requested_at").desc(),
                F("id").desc(),
                name="approval_inbox_order",
            ),
            models.Index(fields=["status", "expires_at"], name="approval_expiry"),
            models.Index(fields=["session", "turn"], name="approval_timeline"),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.status})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError(
                "An approval changes only by its decision "
                "(sessions_app.approvals), never by save()."
            )
        super().save(*args, **kwargs)
