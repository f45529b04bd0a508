"""Writing the catalog's history, and reading who changed a row since a form
was opened."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.text import get_text_list

from tooling.bidi import neutralise
from tooling.history.snapshot import changed_fields, snapshot, version
from tooling.models import (
    CatalogChange,
    CatalogChangePrompt,
    HostedToolDefinition,
    ModelCapability,
    PolicyDefinition,
    PromptSection,
    PromptTemplate,
    SectionDefinition,
    SectionHostedTool,
    SectionTool,
    ToolDefinition,
)

Action = CatalogChange.Action

REASON_MAX = 1000


def fresh(obj: models.Model) -> models.Model | None:
    """``obj``'s row as stored now (``None`` once it is gone)."""
    return type(obj)._default_manager.filter(pk=obj.pk).first()


def _with_ancestors(section_ids: Iterable[int]) -> set[int]:
    """The sections and every section above them (a cycle ends the walk)."""
    parents = dict(SectionDefinition.objects.values_list("pk", "parent_id"))
    found: set[int] = set()
    for pk in section_ids:
        current: int | None = pk
        while current is not None and current not in found:
            found.add(current)
            current = parents.get(current)
    return found


def _prompts_over(section_ids: Iterable[int]) -> set[str]:
    ids = _with_ancestors(section_ids)
    if not ids:
        return set()
    rows = PromptSection.objects.filter(section_id__in=ids).values_list(
        "prompt__namespace", "prompt__key"
    )
    return {f"{namespace}/{key}" for namespace, key in rows}


def prompts_touched(obj: models.Model) -> set[str]:
    """The prompts whose frozen revision a change of ``obj`` (as stored now)
    could alter: the prompt itself; the prompts that hold a section, or a
    section above it; those whose sections hold a tool, a hosted tool or a
    policy (or that name the policy themselves); those on a model whose
    capabilities change. Prices change no revision."""
    if obj.pk is None:
        return set()
    if isinstance(obj, PromptTemplate):
        return {obj.ref}
    if isinstance(obj, SectionDefinition):
        return _prompts_over([obj.pk])
    if isinstance(obj, ToolDefinition):
        return _prompts_over(
            SectionTool.objects.filter(tool=obj).values_list("section_id", flat=True)
        )
    if isinstance(obj, HostedToolDefinition):
        return _prompts_over(
            SectionHostedTool.objects.filter(hosted_tool=obj).values_list(
                "section_id", flat=True
            )
        )
    if isinstance(obj, PolicyDefinition):
        sections = SectionDefinition.objects.filter(policies=obj).values_list(
            "pk", flat=True
        )
        direct = PromptTemplate.objects.filter(policies=obj).values_list(
            "namespace", "key"
        )
        return _prompts_over(sections) | {f"{ns}/{key}" for ns, key in direct}
    if isinstance(obj, ModelCapability):
        rows = PromptTemplate.objects.filter(model=obj.model).values_list(
            "namespace", "key"
        )
        return {f"{ns}/{key}" for ns, key in rows}
    return set()


def action_for(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    if before is None:
        return Action.CREATED
    if after is None:
        return Action.DELETED
    was, now = before.get("enabled"), after.get("enabled")
    if was is True and now is False:
        return Action.DISABLED
    if was is False and now is True:
        return Action.ENABLED
    return Action.CHANGED


def record(
    obj: models.Model,
    *,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    user: Any = None,
    reason: str = "",
    prompts: Iterable[str] = (),
    object_id: Any = None,
) -> CatalogChange | None:
    """Record one change of ``obj`` (``before``/``after``: its snapshots,
    ``None`` for a row not there); nothing when a save changed nothing.
    ``object_id``: the key ``obj`` had, for a row deleted (Django sets a
    deleted instance's key to ``None``)."""
    fields = changed_fields(before, after)
    if before is not None and after is not None and not fields:
        return None
    authenticated = user is not None and getattr(user, "is_authenticated", False)
    change = CatalogChange.objects.create(
        at=timezone.now(),
        content_type=ContentType.objects.get_for_model(type(obj)),
        object_id=str(obj.pk if object_id is None else object_id),
        object_repr=str(obj)[:200],
        action=action_for(before, after),
        actor=user if authenticated else None,
        actor_name=user.get_username()[:150] if authenticated else "",
        reason=(reason or "").strip()[:REASON_MAX],
        fields=fields,
        before=before,
        after=after,
        version=version(after if after is not None else before),
    )
    CatalogChangePrompt.objects.bulk_create(
        CatalogChangePrompt(change=change, prompt_ref=ref[:201])
        for ref in sorted(set(prompts))
    )
    return change


def history_of(obj: models.Model) -> models.QuerySet[CatalogChange]:
    """The changes of ``obj``, newest first; of a prompt, every change that
    touched it (``CatalogChangePrompt``)."""
    if isinstance(obj, PromptTemplate):
        return CatalogChange.objects.filter(prompts__prompt_ref=obj.ref).distinct()
    return history_of_row(obj)


def _describe(change: CatalogChange) -> str:
    who = change.actor_name or "someone"
    when = date_format(timezone.localtime(change.at), "DATETIME_FORMAT")
    what = (
        f"changed {get_text_list(change.fields, 'and')}"
        if change.action == Action.CHANGED and change.fields
        else change.action
    )
    text = f"{who} {what} on {when}"
    return f"{text} (reason: {change.reason})" if change.reason else text


def stale_edit(obj: models.Model, opened: str) -> tuple[str, str] | None:
    """Whether ``obj`` changed since a form was opened on version ``opened``:
    ``None`` if not, else the message naming who changed what, and the
    current version. Locks the row until the transaction ends (PostgreSQL),
    so that two saves of the same form cannot both pass."""
    if obj.pk is None or not opened:
        return None
    model = type(obj)
    rows = model._default_manager.all()
    if not transaction.get_autocommit():
        rows = rows.select_for_update()
    current_row = rows.filter(pk=obj.pk).first()
    if current_row is None:
        return (f"This {model._meta.verbose_name} was deleted meanwhile.", "")
    current = version(snapshot(current_row))
    if current == opened:
        return None
    since = []
    for change in history_of_row(current_row)[:20]:
        if change.version == opened:
            break
        since.append(change)
    label = model._meta.verbose_name
    if since:
        told = "; ".join(_describe(change) for change in reversed(since))
        # (a description may end with a point: "at 2:13 a.m.")
        message = f"Someone else changed this {label} after you opened it: {told}"
        message += "" if message.endswith(".") else "."
    else:
        message = f"This {label} was changed after you opened it."
    # shown on the editable form, which the page does not neutralise: the
    # other person's reason must not reorder the instructions after it
    return (
        neutralise(
            f"{message} Your changes were not saved. Submit again to replace "
            "theirs with yours, or reload the page to start from theirs."
        ),
        current,
    )


def history_of_row(obj: models.Model) -> models.QuerySet[CatalogChange]:
    """The changes of ``obj`` itself (a prompt's own, not its sections')."""
    return CatalogChange.objects.filter(
        content_type=ContentType.objects.get_for_model(type(obj)),
        object_id=str(obj.pk),
    )
