"""Reading revisions with what surrounds them: their runs, their neighbours,
the catalog changes that produced them, and the live catalog to compare with.

"The changes that produced a revision" are the catalog changes that touched its
prompt after the revision before it (of the same prompt) was first seen and
until it was first seen itself: a revision is stored the first time a run
executes it, so those are the edits between the two runs' catalogs.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from sessions_app.models import AgentSession
from tooling import assembly
from tooling.models import CatalogChange, CatalogRevision, PromptTemplate
from tooling.runtime import PromptError

from .reading import RevisionView, view_of

HASH = re.compile(r"[0-9a-f]{64}")
LIVE = "live"


@dataclasses.dataclass(frozen=True)
class Side:
    """One side of a comparison: a stored revision, or the live catalog's."""

    view: RevisionView
    revision: CatalogRevision | None  # None: the live catalog, never run
    live: bool = False


def is_hash(value: str) -> bool:
    return bool(HASH.fullmatch(value))


def revision(digest: str) -> CatalogRevision | None:
    if not is_hash(digest):
        return None
    return CatalogRevision.objects.filter(pk=digest).first()


def first_run_at(revision: CatalogRevision) -> datetime | None:
    return (
        AgentSession.objects.filter(revision=revision)
        .order_by("created_at")
        .values_list("created_at", flat=True)
        .first()
    )


def runs(revision: CatalogRevision, user: Any) -> QuerySet[AgentSession]:
    """The sessions of ``revision`` that ``user`` may see, newest first."""
    return (
        AgentSession.objects.visible_to(user)
        .filter(revision=revision)
        .order_by("-created_at")
    )


def previous(revision: CatalogRevision) -> CatalogRevision | None:
    """The revision of the same prompt first seen just before ``revision``."""
    return (
        CatalogRevision.objects.filter(
            prompt_ref=revision.prompt_ref, created_at__lt=revision.created_at
        )
        .order_by("-created_at")
        .defer("data")
        .first()
    )


def following(revision: CatalogRevision) -> CatalogRevision | None:
    """The revision of the same prompt first seen just after ``revision``."""
    return (
        CatalogRevision.objects.filter(
            prompt_ref=revision.prompt_ref, created_at__gt=revision.created_at
        )
        .order_by("created_at")
        .defer("data")
        .first()
    )


def changes_of_prompt(
    prompt_ref: str, *, after: datetime | None, until: datetime | None
) -> QuerySet[CatalogChange]:
    """Catalog changes that touched ``prompt_ref`` in ``(after, until]``,
    oldest first."""
    changes = CatalogChange.objects.filter(prompts__prompt_ref=prompt_ref)
    if after is not None:
        changes = changes.filter(at__gt=after)
    if until is not None:
        changes = changes.filter(at__lte=until)
    return changes.order_by("at", "id").distinct()


def changes_behind(revision: CatalogRevision) -> QuerySet[CatalogChange]:
    """The catalog changes that produced ``revision`` (module docstring)."""
    before = previous(revision)
    return changes_of_prompt(
        revision.prompt_ref,
        after=before.created_at if before is not None else None,
        until=revision.created_at,
    )


def stored_side(revision: CatalogRevision) -> Side:
    return Side(view_of(revision.hash, revision.data), revision)


def live_side(prompt_ref: str) -> Side | str:
    """The live catalog's revision of ``prompt_ref`` (not stored: nothing ran
    it yet), or why there is none."""
    try:
        template = assembly.load_template(prompt_ref)
    except PromptTemplate.DoesNotExist:
        return f"The prompt {prompt_ref} is not in the catalog or is disabled."
    try:
        data = assembly.freeze_template(template)
    except PromptError as error:
        return f"The catalog's {prompt_ref} cannot be frozen: {error.message}"
    digest = CatalogRevision.hash_of(data)
    stored = CatalogRevision.objects.filter(pk=digest).defer("data").first()
    return Side(view_of(digest, data), stored, live=True)


def changes_between(
    revision: CatalogRevision, after: Side
) -> QuerySet[CatalogChange] | list[CatalogChange]:
    """The catalog changes of ``revision``'s prompt between the two sides (only
    when they are one prompt's, the earlier first)."""
    if after.view.prompt_ref != revision.prompt_ref:
        return []
    until = None if after.live or after.revision is None else after.revision.created_at
    start = revision.created_at
    if until is not None and until < start:
        start, until = until, start
    return changes_of_prompt(revision.prompt_ref, after=start, until=until)
