"""The append-only audit rows of a session: provider calls, tool calls,
policy denials, quota decisions, citations, state changes (the record of each
purge: ``retention.py``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.db import models
from django.db.models import Q
from django.db.models.functions import Cast, Concat, Reverse
from django.utils import timezone

from sessions_app.models.fields import cost_field, event_id_field, text_altered_field
from sessions_app.models.sessions import (
    SESSION_BODY_FIELDS,
    AgentSession,
    AuditQuerySet,
    VisibleQuerySetMixin,
)
from tooling.append_only import (
    AppendOnlyModel,
    AppendOnlyQuerySet,
)

# A provider call whose usage has no price (a failed request has no usage:
# nothing to price, and it is not counted).
UNPRICED_CALL = Q(cost__isnull=True, response__isnull=False)


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
    commentary = models.JSONField(
        default=list,
        blank=True,
        help_text="The text of each message the model marked as commentary "
        "(phase 'commentary'), in order: on the record, not part of the output.",
    )
    attempts = models.JSONField(
        default=list,
        blank=True,
        help_text="Every HTTP attempt (retries included): number, status_code, "
        "latency_ms, error, error_type, request_id.",
    )
    attempt_count = models.PositiveSmallIntegerField(default=1)
    started_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the request was first sent; latency_ms runs from here "
        "(empty on calls recorded before timings).",
    )
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


def tool_search_text() -> Any:
    """The text a search reads of a tool call: its arguments, parsed
    (``params`` as JSON text) and as the model sent them. Migration 0020
    indexes ``UPPER()`` of this very expression with trigrams on PostgreSQL."""
    return Concat(Cast("params", models.TextField()), "raw_arguments")


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
    started_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="A local call: when the executor took it up (empty for "
        "native calls, which ran inside their provider call).",
    )
    duration_ms = models.FloatField(
        null=True,
        blank=True,
        help_text="A local call: from started_at until it was recorded "
        "(policy checks and handler included).",
    )
    policy_ms = models.FloatField(
        null=True,
        blank=True,
        help_text="The part of duration_ms spent in the tool's policies.",
    )
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
            # The timeline filtered to native calls (a long session's few).
            models.Index(
                fields=["session", "turn", "sequence"],
                condition=Q(native=True),
                name="tool_native_timeline",
            ),
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


_ORIGIN_LABELS = {
    "url_citation": "web search",
    "file_citation": "file search",
    "container_file_citation": "code interpreter",
}


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
        help_text="The native call this citation most likely came from: the "
        "web_search_call of a URL, the file_search_call of a file, the "
        "code_interpreter_call of a container file.",
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

    @property
    def origin_label(self) -> str:
        """What made the call ``search_call_id`` names, in words."""
        return _ORIGIN_LABELS.get(self.kind, "call")


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
