"""The catalog's revisions: content-hashed snapshots of what one prompt needs
to run (sessions run from them, never from the live catalog), and the
generation token every catalog write changes."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import models
from django.utils import timezone

from tooling.append_only import AppendOnlyModel, AppendOnlyQuerySet


class CatalogGeneration(models.Model):
    """One row whose token changes with every catalog write (database
    triggers: ``tooling/generation.py``)."""

    token = models.CharField(max_length=32)

    def __str__(self) -> str:
        return self.token


def generation_token() -> models.Subquery:
    """The catalog's generation token as a subquery, for reading it in the same
    query as the row it goes with (``tooling.generation``)."""
    return models.Subquery(CatalogGeneration.objects.filter(pk=1).values("token")[:1])


class CatalogRevisionQuerySet(AppendOnlyQuerySet["CatalogRevision"]):
    def get_or_create_for(self, data: dict[str, Any]) -> CatalogRevision:
        """The revision holding ``data``, created the first time it is seen."""
        digest = CatalogRevision.hash_of(data)
        revision, _ = self.get_or_create(
            hash=digest,
            defaults={"data": data, "prompt_ref": CatalogRevision.ref_of(data)},
        )
        return revision

    def unsaved_for(self, data: dict[str, Any]) -> CatalogRevision:
        """The revision holding ``data``, not written: to insert with ``ON
        CONFLICT DO NOTHING`` (an identical one already stored is the same
        row, its ``created_at`` the first time it was seen)."""
        return CatalogRevision(
            hash=CatalogRevision.hash_of(data),
            data=data,
            prompt_ref=CatalogRevision.ref_of(data),
        )


class CatalogRevision(AppendOnlyModel):
    """An immutable, content-hashed snapshot of what one prompt needs to run.

    ``data`` is ``tooling.assembly.freeze_prompt``'s output: the prompt's
    settings, its section tree with templates and defaults, function tools by
    handler key, hosted tool configs, policies and the model's allowed hosted
    kinds. Sessions run from their revision, never from the live catalog, and
    every session with the same content shares one row: two sessions with the
    same hash ran the same catalog.
    """

    hash = models.CharField(
        primary_key=True,
        max_length=64,
        editable=False,
        help_text="SHA-256 of the canonical JSON of data.",
    )
    prompt_ref = models.CharField(max_length=201, db_index=True, editable=False)
    data = models.JSONField(editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = CatalogRevisionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["created_at"], name="revision_created"),
            models.Index(
                fields=["prompt_ref", "created_at"], name="revision_prompt_created"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prompt_ref} @ {self.hash[:12]}"

    @staticmethod
    def hash_of(data: dict[str, Any]) -> str:
        canonical = json.dumps(
            data, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()

    @staticmethod
    def ref_of(data: dict[str, Any]) -> str:
        prompt = data.get("prompt") or {}
        return f"{prompt.get('namespace', '')}/{prompt.get('key', '')}"[:201]
