"""A session's working state (what tools change), kept apart from the audit
rows so a tool's rollback never touches the record."""

from __future__ import annotations

from django.db import models

from sessions_app.models.sessions import (
    AgentSession,
)


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
