"""The catalog's tools and policies: function tools bound to registered
handlers, hosted tools the provider runs, and tool policies (what a prompt's
sections offer the model, ``catalog.py``)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from tooling.runtime.choices import TRUST_LEVEL_CHOICES
from tooling.runtime.hosted.spec import hosted_kinds
from tooling.runtime.trust import TrustLevel as RuntimeTrustLevel
from tooling.storable_json import StorableJSONField


class TimestampedModel(models.Model):
    created_at = models.DateTimeField(
        default=timezone.now, db_index=True, editable=False
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class ToolDefinitionQuerySet(models.QuerySet["ToolDefinition"]):
    def enabled(self) -> ToolDefinitionQuerySet:
        return self.filter(enabled=True)


class ToolDefinition(TimestampedModel):
    """A function tool: a name the model sees, bound to a registered handler."""

    name = models.CharField(
        max_length=64,
        unique=True,
        help_text="What the model calls: 1-64 of a-z, 0-9, '_' or '-'.",
    )
    handler_key = models.CharField(
        "handler",
        max_length=100,
        help_text="A handler registered in tooling.handlers (never an import path).",
    )
    description = models.CharField(
        max_length=200,
        blank=True,
        help_text="Overrides the handler's description (1-200 ASCII characters). "
        "Only for tools that accept overrides.",
    )
    param_descriptions = StorableJSONField(
        default=dict,
        blank=True,
        help_text='Per-parameter description overrides: {"field": "description"}.',
    )
    examples = StorableJSONField(
        default=list,
        blank=True,
        help_text='Examples: [{"description": ..., "input": {...}, "output": {...}}], '
        "checked against the handler's types.",
    )
    enabled = models.BooleanField(default=True)

    objects = ToolDefinitionQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class HostedToolDefinitionQuerySet(models.QuerySet["HostedToolDefinition"]):
    def enabled(self) -> HostedToolDefinitionQuerySet:
        return self.filter(enabled=True)


def _trust(level: RuntimeTrustLevel) -> tuple[str, str]:
    """The level's value and label, as ``TRUST_LEVEL_CHOICES`` gives them."""
    return level.label, dict(TRUST_LEVEL_CHOICES)[level.label]


class TrustLevel(models.TextChoices):
    """The runtime's trust levels (``tooling.runtime.TrustLevel``), lowest first,
    with the values and labels the runtime gives them."""

    UNTRUSTED = _trust(RuntimeTrustLevel.UNTRUSTED)
    STANDARD = _trust(RuntimeTrustLevel.STANDARD)
    TRUSTED = _trust(RuntimeTrustLevel.TRUSTED)


def hosted_kind_choices() -> list[tuple[str, str]]:
    """The hosted kinds the runtime registered (``tooling.runtime.hosted.spec``),
    as ``(kind, label)`` choices."""
    return [(spec.kind, spec.label) for spec in hosted_kinds()]


class HostedToolDefinition(TimestampedModel):
    """A provider-executed tool (web search, file search ...) with its config."""

    #: The registered kinds as choices (``HostedToolDefinition.Kind.SHELL``
    #: ...), built from the runtime's registry when this module is imported.
    Kind = models.TextChoices(  # type: ignore[call-overload]
        "Kind", [(kind.upper(), (kind, label)) for kind, label in hosted_kind_choices()]
    )

    name = models.CharField(max_length=64, unique=True)
    # Callable choices: a kind registered later is valid without a migration.
    kind = models.CharField(max_length=32, choices=hosted_kind_choices)
    description = models.CharField(max_length=200)
    config = StorableJSONField(default=dict, blank=True)
    min_trust_level = models.CharField(
        "minimum trust level",
        max_length=16,
        choices=TrustLevel.choices,
        default=TrustLevel.STANDARD,
        help_text="Sessions below this trust level are not offered this tool "
        "(it is left out of the request and listed as withheld on the session).",
    )
    enabled = models.BooleanField(default=True)

    objects = HostedToolDefinitionQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class PolicyDefinition(TimestampedModel):
    """A tool policy and its typed configuration."""

    class Kind(models.TextChoices):
        SEQUENTIAL_DEPENDENCY = "sequential_dependency", "Sequential dependency"
        READ_BEFORE_WRITE = "read_before_write", "Read before write"
        APPROVAL = "approval", "Approval (a human decides)"
        CALL_LIMIT = "call_limit", "Call limit per run"

    name = models.CharField(
        max_length=64, unique=True, help_text="Shown in denials and the audit trail."
    )
    kind = models.CharField(max_length=32, choices=Kind.choices)
    config = StorableJSONField(default=dict, blank=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
