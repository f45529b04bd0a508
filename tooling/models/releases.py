"""Labels and releases (docs/releases.md, ADR 0024).

A ``PromptLabel`` names one stored revision of one prompt (``production``,
``staging``): runs start from a label. Moving a label is a ``Release``: applied
at once for an unprotected label, or for a protected one (``production`` by
default, ``WINK_PROTECTED_LABELS``) when a second person who may approve
releases approves it, never its author. A release row keeps both names; it
changes only from ``pending`` to one decision, by a conditional update.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from tooling.models.catalog import PromptTemplate
from tooling.models.revisions import CatalogRevision

LABEL_RULE = RegexValidator(
    r"^[a-z][a-z0-9_-]{0,31}$",
    "A label is 1 to 32 lower-case letters, digits, '-' or '_', starting with a "
    "letter (for example production, staging).",
)


class PromptLabel(models.Model):
    prompt = models.ForeignKey(
        PromptTemplate, on_delete=models.CASCADE, related_name="labels"
    )
    name = models.CharField(max_length=32, validators=[LABEL_RULE])
    revision = models.ForeignKey(
        CatalogRevision, on_delete=models.PROTECT, related_name="+"
    )
    moved_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["prompt", "name"]
        constraints = [
            models.UniqueConstraint(fields=["prompt", "name"], name="unique_label")
        ]

    def __str__(self) -> str:
        return f"{self.prompt.ref}@{self.name}"


class Release(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for approval"
        RELEASED = "released", "Released"
        REJECTED = "rejected", "Rejected"
        WITHDRAWN = "withdrawn", "Withdrawn"

    # The prompt may be deleted later; its reference stays.
    prompt = models.ForeignKey(
        PromptTemplate,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="releases",
    )
    prompt_ref = models.CharField(max_length=201, db_index=True)
    label = models.CharField(max_length=32, validators=[LABEL_RULE])
    from_revision = models.ForeignKey(
        CatalogRevision,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Where the label pointed when the release was requested.",
    )
    to_revision = models.ForeignKey(
        CatalogRevision, on_delete=models.PROTECT, related_name="+"
    )
    reason = models.TextField(blank=True)
    rollback = models.BooleanField(
        default=False,
        help_text="Back to a revision this label was released to before.",
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    requested_by_name = models.CharField(max_length=150, blank=True)
    requested_at = models.DateTimeField(default=timezone.now)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_by_name = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True, help_text="Why it was approved or rejected.")

    class Meta:
        ordering = ["-requested_at", "-id"]
        permissions = [
            ("approve_release", "Can approve releases of protected labels"),
        ]
        constraints = [
            # one open request per label: decide it before asking again
            models.UniqueConstraint(
                fields=["prompt_ref", "label"],
                condition=Q(status="pending"),
                name="one_pending_release",
            )
        ]
        indexes = [
            models.Index(
                fields=["prompt_ref", "label", "requested_at"],
                name="release_label_requested",
            )
        ]

    def __str__(self) -> str:
        return f"{self.prompt_ref}@{self.label} → {self.to_revision_id or ''}"[:200]

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING
