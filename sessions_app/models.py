"""The audit trail of agent runs.

``AgentSession`` moves forward through its lifecycle (queued, running, then
succeeded, failed or cancelled; ``sessions_app.lifecycle`` makes every move
with one conditional update). Every row below it is append-only
(``tooling.append_only``): recorders create them, nothing updates or deletes
them, and on PostgreSQL a trigger refuses it too. The one sanctioned removal
is ``AgentSession.objects.purge()``, used by the retention command, which
records what it removed (``SessionPurge``).

``SessionStateEntry`` and ``VirtualFile`` are the session's working state
(what tools change), kept apart from the audit rows so a tool's rollback never
touches the record.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connections, models, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce, Reverse
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils import timezone

from sessions_app import access
from tooling.append_only import (
    PURGE_SETTING,
    AppendOnlyError,
    AppendOnlyModel,
    AppendOnlyQuerySet,
)
from tooling.models import TrustLevel

# Session fields lists never show; they can be large.
SESSION_BODY_FIELDS = (
    "rendered_prompt",
    "tools_payload",
    "request_options",
    "output_text",
    "output",
    "error_payload",
    "params",
)


class VisibleQuerySetMixin:
    """``visible_to(user)``: the rows of the sessions ``user`` may see
    (``sessions_app.access``); ``session_field`` leads from a row to its
    session."""

    session_field = "session"

    def visible_to(self, user: Any) -> Any:
        queryset: Any = self
        if access.sees_all(user):
            return queryset
        if not access.is_user(user):
            return queryset.none()
        prefix = f"{self.session_field}__" if self.session_field else ""
        return queryset.filter(**{f"{prefix}created_by": user})


class AuditQuerySet(VisibleQuerySetMixin, AppendOnlyQuerySet[Any]):
    """Append-only rows of a session, scoped by who may see the session."""


def count_of(model: type[models.Model]) -> Any:
    """How many ``model`` rows each session has: a correlated subquery, so a
    list computes it for the rows of its page only (never a join and a
    ``GROUP BY`` over the whole table)."""
    return Coalesce(
        models.Subquery(
            model._default_manager.filter(session=models.OuterRef("pk"))
            .order_by()
            .values("session")
            .annotate(n=models.Count("*"))  # no column: an index-only count
            .values("n")
        ),
        0,
    )


class AgentSessionQuerySet(VisibleQuerySetMixin, models.QuerySet["AgentSession"]):
    session_field = ""

    def with_counts(self) -> AgentSessionQuerySet:
        return self.annotate(
            tool_call_count=count_of(ToolInvocation),
            citation_count=count_of(Citation),
        )

    def summaries(self) -> AgentSessionQuerySet:
        """For lists: counts of tool calls and citations, no large fields."""
        return self.with_counts().defer(*SESSION_BODY_FIELDS)

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError(
            "Sessions are removed only by the retention command "
            "(manage.py purge_sessions), which records what it removed."
        )

    delete.alters_data = True  # type: ignore[attr-defined]
    delete.queryset_only = True  # type: ignore[attr-defined]

    def purge(self) -> tuple[int, dict[str, int]]:
        """Delete these sessions with their whole record, in one transaction.

        Only the retention command calls this; on PostgreSQL it sets
        ``wink.purge`` for the transaction, which the append-only triggers
        let through.
        """
        with transaction.atomic(using=self.db):
            connection = connections[self.db]
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute(f"SET LOCAL {PURGE_SETTING} = 'on'")
            return super().delete()


class AgentSession(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"

    TERMINAL = frozenset({Status.SUCCEEDED, Status.FAILED, Status.CANCELLED})

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    prompt = models.ForeignKey(
        "tooling.PromptTemplate",
        null=True,
        on_delete=models.SET_NULL,
        related_name="sessions",
    )
    prompt_ref = models.CharField(max_length=201)
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.QUEUED
    )
    revision = models.ForeignKey(
        "tooling.CatalogRevision",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="sessions",
        help_text="The catalog revision the run executes (not the live catalog).",
    )
    params = models.JSONField(default=dict, blank=True)
    trust_level = models.CharField(
        max_length=16, choices=TrustLevel.choices, default=TrustLevel.STANDARD
    )
    model = models.CharField(max_length=100)
    provider = models.CharField(max_length=20)
    rendered_prompt = models.TextField(blank=True)
    tools_payload = models.JSONField(default=list, blank=True)
    withheld_tools = models.JSONField(
        default=list,
        blank=True,
        help_text="Hosted tools left out for the session's trust level: "
        "[{name, kind, min_trust_level, reason}].",
    )
    request_options = models.JSONField(
        default=dict,
        blank=True,
        help_text="The first request without input and tools: tool_choice, "
        "include, text.format ...",
    )
    output_text = models.TextField(blank=True)
    output = models.JSONField(null=True, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    turns = models.PositiveIntegerField(default=0)
    error_phase = models.CharField(max_length=20, blank=True)
    error_message = models.TextField(blank=True)
    error_payload = models.JSONField(default=dict, blank=True)
    text_altered = models.BooleanField(
        default=False,
        help_text="Output or error text held characters no database stores "
        "(NUL, lone surrogates); they were replaced by U+FFFD.",
    )
    # The run's limits and lease (sessions_app.lifecycle).
    deadline_seconds = models.PositiveIntegerField(
        default=0, help_text="The run's time limit: the template's, capped."
    )
    deadline_at = models.DateTimeField(
        null=True, blank=True, help_text="Set when the run is first claimed."
    )
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="How many times a worker claimed the run."
    )
    claim_token = models.UUIDField(null=True, blank=True, editable=False)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    pauses = models.PositiveSmallIntegerField(
        default=0, help_text="How many times the run paused for a human decision."
    )
    deadline_left_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The run's time left when it paused: waiting for a decision does "
        "not use up its deadline.",
    )
    # Spend (docs/costs.md), USD.
    cost = models.DecimalField(
        max_digits=18,
        decimal_places=10,
        default=Decimal(0),
        help_text="Provider calls and native tool fees so far, in USD.",
    )
    cost_budget = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="The most this run may spend: its template's budget, capped by "
        "its user's daily budget left when it started.",
    )
    unpriced_calls = models.PositiveIntegerField(
        default=0, help_text="Calls with no price in effect (not in cost)."
    )
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="agent_sessions",
        db_index=False,  # session_user_created leads with it
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = AgentSessionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        permissions = [
            ("view_all_sessions", "Can view all sessions"),
            ("start_session", "Can start sessions (runs that call the provider)"),
            ("start_trusted_session", "Can start sessions at the trusted level"),
            ("cancel_any_session", "Can cancel any session"),
        ]
        # Each list filter reads its rows newest first from one index, so a
        # page costs the same at any table size (docs/benchmarks.md).
        indexes = [
            models.Index(
                fields=["status", "lease_expires_at"], name="session_status_lease"
            ),
            models.Index(
                fields=["status", "created_at"], name="session_status_created"
            ),
            models.Index(
                fields=["prompt_ref", "created_at"], name="session_prompt_created"
            ),
            models.Index(
                fields=["created_by", "created_at"], name="session_user_created"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prompt_ref} {self.id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError(
                "A session row changes only through its lifecycle "
                "(sessions_app.lifecycle), never by save()."
            )
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        return session_url(self.pk)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError(
            "Sessions are removed only by the retention command "
            "(manage.py purge_sessions)."
        )

    @property
    def is_finished(self) -> bool:
        return self.status in self.TERMINAL

    @property
    def revision_hash(self) -> str:
        return self.revision_id or ""


_PLACEHOLDER = str(uuid.UUID(int=0))
_SESSION_URLS: dict[tuple[str, str], str] = {}


def session_url(pk: Any) -> str:
    """The session page's URL: ``reverse()`` once per script prefix and
    URLconf, then text (a list builds one per row, and ``reverse()`` is the
    slowest part of a row)."""
    key = (get_script_prefix(), str(get_urlconf() or settings.ROOT_URLCONF))
    pattern = _SESSION_URLS.get(key)
    if pattern is None:
        pattern = reverse("sessions_app:session-detail", args=[_PLACEHOLDER])
        _SESSION_URLS[key] = pattern
    return pattern.replace(_PLACEHOLDER, str(pk))


def event_id_field() -> models.UUIDField[Any, Any]:
    """The id of the runtime event a row records: unique, so recording the same
    event twice (a resumed run, a second worker) cannot add a row."""
    return models.UUIDField(null=True, unique=True, editable=False)


def cost_field(help_text: str) -> models.DecimalField[Any, Any]:
    """USD; NULL when no price is in effect (or nothing to price)."""
    return models.DecimalField(
        max_digits=18,
        decimal_places=10,
        null=True,
        blank=True,
        help_text=f"USD. {help_text} Empty: unpriced.",
    )


def text_altered_field() -> models.BooleanField[Any, Any]:
    return models.BooleanField(
        default=False,
        help_text="Text in this row was not storable as received (NUL bytes, lone "
        "surrogates, over-long ids or names) and was replaced or cut.",
    )


class ProviderCall(AppendOnlyModel):
    """One request/response exchange (``request.input`` holds only new items)."""

    session = models.ForeignKey(
        AgentSession,
        on_delete=models.CASCADE,
        related_name="provider_calls",
        db_index=False,  # unique_call_turn (session, turn) leads with it
    )
    turn = models.PositiveIntegerField()
    request = models.JSONField(default=dict)
    input_offset = models.PositiveIntegerField(default=0)
    response = models.JSONField(null=True, blank=True)
    response_id = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=20, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0)
    request_id = models.CharField(max_length=100, blank=True)
    error = models.TextField(blank=True)
    error_type = models.CharField(max_length=100, blank=True)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    unknown_item_types = models.JSONField(default=list, blank=True)
    attempts = models.JSONField(
        default=list,
        blank=True,
        help_text="Every HTTP attempt (retries included): number, status_code, "
        "latency_ms, error, error_type, request_id.",
    )
    attempt_count = models.PositiveSmallIntegerField(default=1)
    cost = cost_field("From the usage and the model's rates in effect.")
    event_id = event_id_field()
    text_altered = text_altered_field()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["session", "turn"]
        constraints = [
            models.UniqueConstraint(fields=["session", "turn"], name="unique_call_turn")
        ]

    def __str__(self) -> str:
        return f"{self.session_id} turn {self.turn}"


class ToolInvocation(AppendOnlyModel):
    """A tool call, local or native, on the session's one timeline."""

    session = models.ForeignKey(
        AgentSession,
        on_delete=models.CASCADE,
        related_name="tool_invocations",
        db_index=False,  # the indexes below lead with it
    )
    sequence = models.PositiveIntegerField()
    turn = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=64)
    # NULL, not "": the per-session uniqueness below only applies to real ids.
    call_id = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001
    native = models.BooleanField(default=False)
    provider = models.CharField(max_length=20, blank=True)
    kind = models.CharField(max_length=32, default="function")
    params = models.JSONField(null=True, blank=True)
    raw_arguments = models.TextField(blank=True)
    success = models.BooleanField()
    message = models.TextField(blank=True)
    value = models.JSONField(null=True, blank=True)
    rendered_output = models.TextField(blank=True)
    model_output = models.TextField(
        blank=True,
        help_text="The exact text the model received for this call (local calls).",
    )
    cost = cost_field("A native call's fee; empty for local calls.")
    event_id = event_id_field()
    text_altered = text_altered_field()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["session", "sequence"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "sequence"], name="unique_tool_sequence"
            ),
        ]
        indexes = [
            models.Index(fields=["session", "call_id"], name="tool_call_id"),
            # A session's timeline, page by page (timeline.py).
            models.Index(fields=["session", "turn", "sequence"], name="tool_timeline"),
            # The list filters, newest first.
            models.Index(fields=["name", "created_at"], name="tool_name_created"),
            models.Index(fields=["native", "created_at"], name="tool_native_created"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({'ok' if self.success else 'failed'})"


class PolicyDenial(AppendOnlyModel):
    session = models.ForeignKey(
        AgentSession,
        on_delete=models.CASCADE,
        related_name="policy_denials",
        db_index=False,  # denial_timeline leads with it
    )
    policy_name = models.CharField(max_length=64)
    tool_name = models.CharField(max_length=64)
    call_id = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001
    reason = models.TextField()
    params = models.JSONField(null=True, blank=True)
    turn = models.PositiveIntegerField(default=0)
    sequence = models.PositiveIntegerField(
        default=0, help_text="The sequence number of the call it denied."
    )
    event_id = event_id_field()
    text_altered = text_altered_field()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["session", "created_at", "id"]
        indexes = [
            models.Index(
                fields=["session", "turn", "sequence"], name="denial_timeline"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.policy_name} denied {self.tool_name}"


class ApprovalRequestQuerySet(models.QuerySet["ApprovalRequest"]):
    def decidable_by(self, user: Any) -> Any:
        """The approvals ``user`` may decide (``access.may_decide``, as one
        query): all for ``decide_any_approval``, else those whose policy
        names a permission ``user`` holds or a group ``user`` is in."""
        if not access.is_user(user) or not getattr(user, "is_active", False):
            return self.none()
        if user.has_perm(access.DECIDE_ANY):
            return self
        permissions = sorted(user.get_all_permissions())
        groups = list(user.groups.values_list("name", flat=True))
        return self.filter(
            Q(approvers__permission__in=permissions) | Q(approvers__group__in=groups)
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
            models.UniqueConstraint(
                fields=["session", "call_id"],
                condition=Q(call_id__isnull=False),
                name="unique_approval_call",
            ),
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(status="pending"),
                name="one_pending_approval",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "requested_at"], name="approval_inbox"),
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


class QuotaDecision(AppendOnlyModel):
    """A hosted tool no longer offered: its calls per run are used up
    (docs/quotas.md)."""

    session = models.ForeignKey(
        AgentSession,
        on_delete=models.CASCADE,
        related_name="quota_decisions",
        db_index=False,  # quota_timeline leads with it
    )
    turn = models.PositiveIntegerField(
        help_text="The turn whose request no longer offers the tool."
    )
    tool_name = models.CharField(max_length=64)
    kind = models.CharField(max_length=32)
    used = models.PositiveIntegerField()
    limit = models.PositiveIntegerField()
    event_id = event_id_field()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["session", "turn", "id"]
        indexes = [
            models.Index(fields=["session", "turn"], name="quota_timeline"),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} withdrawn after {self.used} of {self.limit}"


class CitationQuerySet(VisibleQuerySetMixin, AppendOnlyQuerySet["Citation"]):
    def listing(self) -> CitationQuerySet:
        """Newest first, with their turn and the session fields lists read.

        The page is cut from this table alone (no join for the planner to
        weigh against a filter's index); the turn is a subquery computed for
        the page's rows, and the sessions are read in one more query."""
        return (
            self.annotate(
                turn=models.Subquery(
                    ProviderCall.objects.filter(pk=models.OuterRef("provider_call_id"))
                    .order_by()
                    .values("turn")[:1]
                )
            )
            .prefetch_related(
                models.Prefetch(
                    "session",
                    # tools_payload stays: it holds the web search's allowed
                    # domains.
                    queryset=AgentSession.objects.defer(
                        *(f for f in SESSION_BODY_FIELDS if f != "tools_payload")
                    ),
                )
            )
            .order_by("-created_at", "-id")
        )

    def for_domain(self, domain: str) -> CitationQuerySet:
        """Citations of ``domain`` and its subdomains. A subdomain's reversed
        name starts with the reversed ``.domain``: PostgreSQL reads that prefix
        from an index (migration 0008) instead of testing every row."""
        domain = domain.lower().strip()
        return self.alias(domain_reversed=Reverse("domain")).filter(
            Q(domain=domain) | Q(domain_reversed__startswith=f".{domain}"[::-1])
        )


class Citation(AppendOnlyModel):
    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="citations"
    )
    provider_call = models.ForeignKey(
        ProviderCall, on_delete=models.CASCADE, related_name="citations"
    )
    kind = models.CharField(max_length=32, default="url_citation")
    url = models.TextField(blank=True)
    domain = models.CharField(max_length=255, blank=True, db_index=True)
    title = models.TextField(blank=True)
    start_index = models.PositiveIntegerField(null=True, blank=True)
    end_index = models.PositiveIntegerField(null=True, blank=True)
    cited_text = models.TextField(blank=True)
    file_id = models.CharField(max_length=100, blank=True)
    filename = models.CharField(max_length=255, blank=True)
    container_id = models.CharField(max_length=100, blank=True)
    message_id = models.CharField(max_length=100, blank=True)
    content_index = models.PositiveIntegerField(default=0)
    search_call_id = models.CharField(
        max_length=100,
        blank=True,
        help_text="The web_search_call this citation most likely came from.",
    )
    text_altered = text_altered_field()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = CitationQuerySet.as_manager()

    class Meta:
        ordering = ["session", "provider_call__turn", "id"]

    def __str__(self) -> str:
        return self.title or self.url or self.filename

    @staticmethod
    def domain_of(url: str) -> str:
        try:
            host = urlsplit(url).hostname or ""
        except ValueError:
            return ""
        return host.lower()

    @property
    def is_linkable(self) -> bool:
        return self.url.lower().startswith(("http://", "https://"))


class StateChange(AppendOnlyModel):
    """A tool changed a state slice (the plan, a policy's memory ...)."""

    session = models.ForeignKey(
        AgentSession,
        on_delete=models.CASCADE,
        related_name="state_changes",
        db_index=False,  # change_timeline leads with it
    )
    key = models.CharField(max_length=100)
    value = models.JSONField(null=True)
    tool_name = models.CharField(max_length=64)
    call_id = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001
    turn = models.PositiveIntegerField(default=0)
    sequence = models.PositiveIntegerField(
        default=0, help_text="The sequence number of the call that made it."
    )
    event_id = event_id_field()
    text_altered = text_altered_field()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["session", "created_at", "id"]
        indexes = [
            models.Index(
                fields=["session", "turn", "sequence"], name="change_timeline"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} by {self.tool_name}"


class SessionStateEntry(models.Model):
    """The current value of a state slice (working state, not audit)."""

    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="state_entries"
    )
    key = models.CharField(max_length=100)
    value_type = models.CharField(max_length=200)
    value = models.JSONField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "key"], name="unique_state_key")
        ]

    def __str__(self) -> str:
        return self.key


class VirtualFile(models.Model):
    """A file in the session's virtual filesystem (working state)."""

    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="files"
    )
    path = models.CharField(max_length=255)
    content = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path"]
        constraints = [
            models.UniqueConstraint(fields=["session", "path"], name="unique_file_path")
        ]

    def __str__(self) -> str:
        return self.path


class SessionPurge(AppendOnlyModel):
    """What one batch of the retention command removed (kept after the fact)."""

    run_id = models.UUIDField(
        db_index=True, help_text="One purge_sessions run; batches share it."
    )
    older_than = models.DateTimeField(
        help_text="Sessions created before this were eligible."
    )
    statuses = models.JSONField(default=list)
    session_count = models.PositiveIntegerField()
    session_ids = models.JSONField(default=list)
    row_counts = models.JSONField(
        default=dict, help_text="Rows removed per model, sessions included."
    )
    requested_by = models.CharField(
        max_length=200, blank=True, help_text="Who ran the command (OS user)."
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"purged {self.session_count} session(s) older than {self.older_than}"
