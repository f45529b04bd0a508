"""The audit trail of agent runs.

``AgentSession`` moves through its lifecycle (pending, running, then
succeeded or failed); every row below it is append-only: recorders create
them and nothing updates or deletes them. ``SessionStateEntry`` and
``VirtualFile`` are the session's working state (what tools change), kept
apart from the audit rows so a tool's rollback never touches the record.
"""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from tooling.models import TrustLevel


class AgentSessionQuerySet(models.QuerySet["AgentSession"]):
    def with_counts(self) -> AgentSessionQuerySet:
        return self.annotate(
            tool_call_count=models.Count("tool_invocations", distinct=True),
            citation_count=models.Count("citations", distinct=True),
        )


class AgentSession(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    prompt = models.ForeignKey(
        "tooling.PromptTemplate",
        null=True,
        on_delete=models.SET_NULL,
        related_name="sessions",
    )
    prompt_ref = models.CharField(max_length=201, db_index=True)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True
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
    catalog_hash = models.CharField(max_length=64, blank=True)
    output_text = models.TextField(blank=True)
    output = models.JSONField(null=True, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    turns = models.PositiveIntegerField(default=0)
    error_phase = models.CharField(max_length=20, blank=True)
    error_message = models.TextField(blank=True)
    error_payload = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="agent_sessions",
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = AgentSessionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        permissions = [
            ("start_trusted_session", "Can start sessions at the trusted level"),
        ]

    def __str__(self) -> str:
        return f"{self.prompt_ref} {self.id}"

    def get_absolute_url(self) -> str:
        return reverse("sessions_app:session-detail", args=[self.pk])


class ProviderCall(models.Model):
    """One request/response exchange (``request.input`` holds only new items)."""

    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="provider_calls"
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
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["session", "turn"]
        constraints = [
            models.UniqueConstraint(fields=["session", "turn"], name="unique_call_turn")
        ]

    def __str__(self) -> str:
        return f"{self.session_id} turn {self.turn}"


class ToolInvocation(models.Model):
    """A tool call, local or native, on the session's one timeline."""

    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="tool_invocations"
    )
    sequence = models.PositiveIntegerField()
    turn = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=64, db_index=True)
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
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["session", "sequence"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "call_id"],
                condition=Q(call_id__isnull=False),
                name="unique_tool_call_per_session",
            ),
            models.UniqueConstraint(
                fields=["session", "sequence"], name="unique_tool_sequence"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({'ok' if self.success else 'failed'})"


class PolicyDenial(models.Model):
    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="policy_denials"
    )
    policy_name = models.CharField(max_length=64)
    tool_name = models.CharField(max_length=64)
    call_id = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001
    reason = models.TextField()
    params = models.JSONField(null=True, blank=True)
    turn = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["session", "created_at", "id"]

    def __str__(self) -> str:
        return f"{self.policy_name} denied {self.tool_name}"


class CitationQuerySet(models.QuerySet["Citation"]):
    def for_domain(self, domain: str) -> CitationQuerySet:
        domain = domain.lower().strip()
        return self.filter(Q(domain=domain) | Q(domain__endswith=f".{domain}"))


class Citation(models.Model):
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


class StateChange(models.Model):
    """A tool changed a state slice (the plan, a policy's memory ...)."""

    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="state_changes"
    )
    key = models.CharField(max_length=100)
    value = models.JSONField(null=True)
    tool_name = models.CharField(max_length=64)
    call_id = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["session", "created_at", "id"]

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
