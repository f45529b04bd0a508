"""Who changed the catalog, when, what and why (docs/catalog-history.md).

A ``CatalogChange`` is one save, disable, enable or delete of one catalog row
through the admin: the row's state before and after (``tooling.history.
snapshot``: its fields and the lists edited on the same page, such as a
section's tools), the fields that changed, who made it and why. Rows are
append-only (triggers refuse ``UPDATE`` and ``DELETE``). ``CatalogChangePrompt``
names each prompt whose frozen revision the change could alter, so a prompt's
history lists every change that touched it, its sections', tools' and
policies' included.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.utils import timezone

from tooling.append_only import AppendOnlyModel, AppendOnlyQuerySet


class CatalogChange(AppendOnlyModel):
    class Action(models.TextChoices):
        CREATED = "created", "created"
        CHANGED = "changed", "changed"
        DISABLED = "disabled", "disabled"
        ENABLED = "enabled", "enabled"
        DELETED = "deleted", "deleted"

    at = models.DateTimeField(default=timezone.now, db_index=True)
    content_type = models.ForeignKey(
        ContentType, on_delete=models.PROTECT, related_name="+"
    )
    object_id = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=200)
    action = models.CharField(max_length=16, choices=Action.choices)
    # No database constraint: deleting a user keeps the record of what they
    # did (``actor_name``), and an append-only row cannot be set to NULL.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    actor_name = models.CharField(max_length=150, blank=True)
    reason = models.TextField(blank=True)
    fields = models.JSONField(default=list, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    #: ``tooling.history.snapshot.version`` of ``after`` (of ``before`` for a
    #: deletion): what a form opened after this change carries
    version = models.CharField(max_length=64, blank=True)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(
                fields=["content_type", "object_id", "at"], name="change_object_at"
            )
        ]

    def __str__(self) -> str:
        return f"{self.object_repr} {self.action} by {self.actor_name or '?'}"


class CatalogChangePrompt(AppendOnlyModel):
    """A prompt (by reference: it may be deleted later) that ``change`` could
    alter the revision of."""

    change = models.ForeignKey(
        CatalogChange, on_delete=models.CASCADE, related_name="prompts"
    )
    prompt_ref = models.CharField(max_length=201, db_index=True)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["change", "prompt_ref"], name="unique_change_prompt"
            )
        ]

    def __str__(self) -> str:
        return self.prompt_ref
