"""Releases: moving a prompt's label to another revision (docs/releases.md).

- ``request_release`` asks to point ``label`` at a revision of the prompt (the
  draft, i.e. the catalog as it is now, frozen and stored; or any stored
  revision of the prompt). An unprotected label moves at once. A protected one
  (``WINK_PROTECTED_LABELS``) waits for ``approve`` by a second person who
  holds ``approve_release``, never the requester (superusers included); a
  rollback (back to the revision the label pointed at before its latest
  move) moves at once: that revision was released already.
- ``approve``, ``reject`` and ``withdraw`` decide a pending release, once:
  the row moves from ``pending`` by a conditional update, and an approval
  whose label moved since the request is refused (request again).
- ``label_revision`` is what a run starts from.

Everything is checked here, for the admin and the API alike; refusals raise
``ValidationError`` (bad input) or ``PermissionDenied`` (who may not).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from tooling import assembly
from tooling.models import (
    LABEL_RULE,
    CatalogRevision,
    PromptLabel,
    PromptTemplate,
    Release,
)
from tooling.runtime import PromptError

REQUEST = "tooling.add_release"
APPROVE = "tooling.approve_release"
VIEW = "tooling.view_release"
DRAFT = "draft"

Status = Release.Status


class ReleaseConflict(ValidationError):
    """The release cannot be made in the label's or the release's present
    state (already decided, the label moved since, another one waiting): the
    API answers 409."""


def protected_labels() -> list[str]:
    return list(settings.WINK_PROTECTED_LABELS)


def is_protected(label: str) -> bool:
    return label in protected_labels()


REQUEST_DENIED = "Requesting a release needs the add_release permission."


def may_request(user: Any) -> bool:
    return bool(user and user.is_authenticated and user.has_perm(REQUEST))


def may_approve(user: Any, release: Release | None = None) -> bool:
    """``approve_release``, and not the release's requester (four eyes)."""
    if not (user and user.is_authenticated and user.is_active):
        return False
    if release is not None and release.requested_by_id == user.pk:
        return False
    return bool(user.has_perm(APPROVE))


def may_view(user: Any) -> bool:
    return bool(user and user.is_authenticated and user.has_perm(VIEW))


def draft_revision(template: PromptTemplate) -> CatalogRevision:
    """The catalog's current state of ``template`` as a stored revision."""
    template = PromptTemplate.objects.with_catalog().get(pk=template.pk)
    try:
        data = assembly.freeze_template(template)
        assembly.thaw_prompt(data)
    except PromptError as error:
        raise ValidationError(
            f"The draft of {template.ref} cannot be released: {error.message}"
        ) from error
    return CatalogRevision.objects.get_or_create_for(data)


def revision_for(
    template: PromptTemplate, wanted: str, *, user: Any
) -> CatalogRevision:
    """``wanted`` (``draft`` or a hash) as a revision of ``template``, for
    ``user`` to request its release. The permission is checked first: the
    draft is frozen into a stored (append-only) revision, which someone who
    may not request a release must not write, nor learn whether it builds."""
    if not may_request(user):
        raise PermissionDenied(REQUEST_DENIED)
    if wanted == DRAFT:
        return draft_revision(template)
    revision = CatalogRevision.objects.filter(pk=wanted).first()
    if revision is None or revision.prompt_ref != template.ref:
        raise ValidationError(
            {"revision": f"No revision of {template.ref} has the hash '{wanted}'."}
        )
    return revision


def current(template: PromptTemplate, label: str) -> PromptLabel | None:
    return PromptLabel.objects.filter(prompt=template, name=label).first()


def _name(user: Any) -> str:
    return str(user.get_username()) if user is not None else ""


def request_release(
    *,
    template: PromptTemplate,
    label: str,
    revision: CatalogRevision,
    user: Any,
    reason: str = "",
) -> Release:
    """Ask to move ``label`` of ``template`` to ``revision`` (module docstring)."""
    if not may_request(user):
        raise PermissionDenied(REQUEST_DENIED)
    LABEL_RULE(label)
    if revision.prompt_ref != template.ref:
        raise ValidationError(
            {"revision": f"Revision {revision.hash[:12]} is not one of {template.ref}."}
        )
    with transaction.atomic():
        _lock(template)
        now = current(template, label)
        if now is not None and now.revision_id == revision.hash:
            raise ReleaseConflict(
                f"{label} already points at revision {revision.hash[:12]}."
            )
        rollback = now is not None and _previous(template, label) == revision.hash
        release = Release(
            prompt=template,
            prompt_ref=template.ref,
            label=label,
            from_revision=now.revision if now is not None else None,
            to_revision=revision,
            reason=reason,
            rollback=rollback,
            requested_by=user,
            requested_by_name=_name(user),
        )
        if is_protected(label) and not rollback:
            try:
                with transaction.atomic():
                    release.save()
            except IntegrityError:
                raise ReleaseConflict(
                    f"A release of {label} is already waiting for approval: "
                    "approve, reject or withdraw it first."
                ) from None
            return release
        release.status = Status.RELEASED
        release.decided_by, release.decided_by_name = user, _name(user)
        release.decided_at = timezone.now()
        release.save()
        _move(template, label, revision)
    return release


def _lock(template: PromptTemplate) -> None:
    """Serialise the moves of ``template``'s labels: a request, an approval
    and a rollback of the same prompt read and move its labels one at a time
    (a row lock on PostgreSQL; SQLite serialises writers)."""
    list(PromptTemplate.objects.select_for_update().filter(pk=template.pk).values("pk"))


def _previous(template: PromptTemplate, label: str) -> str | None:
    """The revision ``label`` pointed at before its latest move: where a
    rollback takes it back to."""
    return (
        Release.objects.filter(
            prompt_ref=template.ref, label=label, status=Status.RELEASED
        )
        .order_by("-decided_at", "-id")
        .values_list("from_revision_id", flat=True)
        .first()
    )


def _move(template: PromptTemplate, label: str, revision: CatalogRevision) -> None:
    PromptLabel.objects.update_or_create(
        prompt=template,
        name=label,
        defaults={"revision": revision, "moved_at": timezone.now()},
    )


def _decide(release: Release, user: Any, status: str, note: str) -> int:
    return Release.objects.filter(pk=release.pk, status=Status.PENDING).update(
        status=status,
        decided_by=user,
        decided_by_name=_name(user),
        decided_at=timezone.now(),
        note=note,
    )


def _still_pending(release: Release) -> None:
    if not release.is_pending:
        raise ReleaseConflict(
            f"This release was already decided ({release.get_status_display()})."
        )


def approve(release: Release, *, user: Any, note: str = "") -> Release:
    """Move the label as ``release`` asks (a second person's approval)."""
    if release.requested_by_id is not None and release.requested_by_id == user.pk:
        raise PermissionDenied(
            "You requested this release; a second person must approve it."
        )
    if not may_approve(user, release):
        raise PermissionDenied("Approving a release needs approve_release.")
    gone = ValidationError(f"{release.prompt_ref} is no longer in the catalog.")
    if release.prompt is None:
        raise gone
    with transaction.atomic():
        # the prompt first, then the release: the order every move takes
        _lock(release.prompt)
        release = Release.objects.select_for_update().get(pk=release.pk)
        _still_pending(release)
        if release.prompt is None:
            raise gone
        now = current(release.prompt, release.label)
        now_hash = now.revision_id if now is not None else None
        if now_hash != release.from_revision_id:
            raise ReleaseConflict(
                f"{release.label} moved since this release was requested (it now "
                f"points at {str(now_hash)[:12]}); reject it and request again."
            )
        _decide(release, user, Status.RELEASED, note)
        _move(release.prompt, release.label, release.to_revision)
    release.refresh_from_db()
    return release


def reject(release: Release, *, user: Any, note: str = "") -> Release:
    if not may_approve(user, release):
        raise PermissionDenied(
            "Rejecting a release needs approve_release (its requester withdraws it)."
        )
    return _close(release, user, Status.REJECTED, note)


def withdraw(release: Release, *, user: Any, note: str = "") -> Release:
    if release.requested_by_id is None or release.requested_by_id != user.pk:
        raise PermissionDenied("Only the release's requester may withdraw it.")
    return _close(release, user, Status.WITHDRAWN, note)


def _close(release: Release, user: Any, status: str, note: str) -> Release:
    if not _decide(release, user, status, note):
        release.refresh_from_db()
        _still_pending(release)
    release.refresh_from_db()
    return release


def seed_label(template: PromptTemplate, label: str, *, note: str) -> bool:
    """Point ``label`` of a prompt that has no labels yet at its draft, with
    no second person: a fresh install's first release (``manage.py
    seed_demo``), recorded as a release by ``seed`` with ``note``. Whether it
    did (a prompt with labels is left alone)."""
    if PromptLabel.objects.filter(prompt=template).exists():
        return False
    revision = draft_revision(template)
    with transaction.atomic():
        Release.objects.create(
            prompt=template,
            prompt_ref=template.ref,
            label=label,
            to_revision=revision,
            reason=note,
            status=Status.RELEASED,
            requested_by_name="seed",
            decided_by_name="seed",
            decided_at=timezone.now(),
        )
        _move(template, label, revision)
    return True


def label_revision(template: PromptTemplate, label: str) -> CatalogRevision:
    """The revision ``label`` of ``template`` points at (a run's start)."""
    found = current(template, label)
    if found is None:
        raise ValidationError({"label": f"{template.ref} has no label '{label}'."})
    return found.revision
