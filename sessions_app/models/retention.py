"""The record of each purge (``manage.py purge_sessions``): what one batch of
the retention command removed, kept after the fact; append-only, as the
audit rows it outlives (``audit.py``)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from tooling.append_only import AppendOnlyModel, AppendOnlyQuerySet


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
