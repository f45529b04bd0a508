"""The session row (``AgentSession``), its querysets and the field helpers
the audit rows share."""

from __future__ import annotations

import datetime
import uuid
from decimal import Decimal
from typing import Any, cast

from django.conf import settings
from django.db import connections, models, transaction
from django.db.models.functions import Cast, Coalesce, Concat
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils import timezone

from sessions_app import access
from sessions_app.models.spend import DAY, MONTH, DailySpend, DailySpendDay
from tooling.append_only import (
    AppendOnlyError,
    AppendOnlyQuerySet,
    purging,
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


def session_search_text() -> Any:
    """The text a search reads of a session: its parameters (as JSON text)
    and its output. Migration 0020 indexes ``UPPER()`` of this very
    expression with trigrams on PostgreSQL, which an ``icontains`` of it
    reads."""
    return Concat(Cast("params", models.TextField()), "output_text")


def session_duration() -> Any:
    """How long a session ran (finished minus started; NULL until it ends).
    Migration 0022 indexes this expression on PostgreSQL."""
    return models.ExpressionWrapper(
        models.F("finished_at") - models.F("started_at"),
        output_field=models.DurationField(),
    )


class AgentSessionQuerySet(VisibleQuerySetMixin, models.QuerySet["AgentSession"]):
    session_field = ""

    def with_counts(self) -> AgentSessionQuerySet:
        return self.annotate(
            tool_call_count=count_of(self._rows_of("tool_invocations")),
            citation_count=count_of(self._rows_of("citations")),
        )

    def _rows_of(self, relation: str) -> type[models.Model]:
        """The model of the rows behind a reverse relation of the session
        (found through the relation: their module imports this one)."""
        return cast(
            type[models.Model], self.model._meta.get_field(relation).related_model
        )

    def summaries(self) -> AgentSessionQuerySet:
        """For lists: counts of tool calls and citations, the username of
        who started it (``created_by_username``), how long it ran
        (``duration``); no large fields."""
        users = self._rows_of("created_by")
        # The username as a per-row subquery (like the counts): no join, so
        # the planner still reads each filter's index in order.
        username = models.Subquery(
            users._default_manager.filter(pk=models.OuterRef("created_by"))
            .order_by()
            .values("username")[:1]
        )
        return (
            self.with_counts()
            .annotate(created_by_username=username, duration=session_duration())
            .defer(*SESSION_BODY_FIELDS)
        )

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError(
            "Sessions are removed only by the retention command "
            "(manage.py purge_sessions), which records what it removed."
        )

    delete.alters_data = True  # type: ignore[attr-defined]
    delete.queryset_only = True  # type: ignore[attr-defined]

    def purge(self) -> tuple[int, dict[str, int]]:
        """Delete these sessions with their whole record, in one transaction.

        Only the retention command calls this; it marks the transaction as a
        purge (``tooling.append_only.purging``), which the append-only triggers
        let through.
        """
        with transaction.atomic(using=self.db), purging(connections[self.db]):
            span = self.aggregate(
                first=models.Min("created_at"), last=models.Max("created_at")
            )
            if span["first"] is not None:
                # The days these sessions were created on (in any time zone:
                # a day's slack each side) are read from the rows again until
                # they are rolled up anew (sessions_app.costs.rollup).
                slack = datetime.timedelta(days=1)
                first = (span["first"] - slack).date()
                days = {"day__gte": first, "day__lte": (span["last"] + slack).date()}
                months = {**days, "day__gte": first.replace(day=1)}
                for model in (DailySpendDay, DailySpend):
                    rows = model.objects.using(self.db)
                    rows.filter(period=DAY, **days).delete()
                    rows.filter(period=MONTH, **months).delete()
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
    # NULL, not "": a nullable column is added without rebuilding the table
    label = models.CharField(  # noqa: DJ001
        max_length=32,
        null=True,
        blank=True,
        help_text="The label the run started from (production, staging ...); "
        "empty: the catalog as it was, or a revision named explicitly.",
    )
    # No database constraint: a replay keeps its source's id after the source
    # is purged (sessions are append-only, the link is never set to NULL).
    replay_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="replays",
        help_text="The session this one replays (docs/replay.md).",
    )
    replay_live_tools = models.BooleanField(
        null=True,
        blank=True,
        help_text="A replay: whether read-only tools run live (otherwise every "
        "call is answered from the source's record).",
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
    # The run's limits and lease (sessions_app.runs.lifecycle).
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
    # The last failed send of the run to a worker (sessions_app.runs.dispatch): the
    # broker could not be reached; the sweeper sends it again.
    dispatch_error = models.CharField(
        max_length=200,
        blank=True,
        help_text="Why the last send to a worker failed (empty once it was sent).",
    )
    dispatch_failed_at = models.DateTimeField(
        null=True, blank=True, help_text="When a send to a worker last failed."
    )
    dispatch_failures = models.PositiveIntegerField(
        default=0, help_text="How many sends to a worker failed (broker unreachable)."
    )
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
            models.Index(
                fields=["revision", "created_at"], name="session_revision_created"
            ),
            # The cost filters (the duration and text search indexes are
            # PostgreSQL's own: migration 0020).
            models.Index(fields=["cost"], name="session_cost"),
        ]

    def __str__(self) -> str:
        return f"{self.prompt_ref} {self.id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError(
                "A session row changes only through its lifecycle "
                "(sessions_app.runs.lifecycle), never by save()."
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
