"""A catalog row as its history keeps it, and the difference of two.

A snapshot holds the row's own fields (not its id or timestamps), a foreign key
as the related row's name, and each many-to-many list in its order (a
section's tools by position, a prompt's sections by position; a plain list,
such as policies, sorted by name). Values are JSON: what ``CatalogChange``
stores.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

SKIPPED = frozenset({"id", "created_at", "updated_at"})


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def _linked(obj: models.Model, m2m: Any) -> list[str]:
    through = m2m.remote_field.through
    if through._meta.auto_created:
        return sorted(str(row) for row in getattr(obj, m2m.name).all())
    source = target = None
    for candidate in through._meta.concrete_fields:
        if not candidate.is_relation:
            continue
        if candidate.related_model is type(obj) and source is None:
            source = candidate
        elif candidate.related_model is m2m.related_model:
            target = candidate
    if source is None or target is None:  # pragma: no cover (a new kind of link)
        raise TypeError(f"{through.__name__} does not link {type(obj).__name__}.")
    names = {f.name for f in through._meta.concrete_fields}
    order = [*(["position"] if "position" in names else []), "pk"]
    rows = (
        through._default_manager.filter(**{source.name: obj})
        .select_related(target.name)
        .order_by(*order)
    )
    return [str(getattr(row, target.name)) for row in rows]


def snapshot(obj: models.Model) -> dict[str, Any]:
    """``obj`` as stored now (read ``obj`` fresh from the database first)."""
    data: dict[str, Any] = {}
    for item in obj._meta.concrete_fields:
        if item.name in SKIPPED or item.primary_key:
            continue
        if item.is_relation:
            related = getattr(obj, item.name)
            data[item.name] = None if related is None else str(related)
        else:
            data[item.name] = _plain(item.value_from_object(obj))
    for m2m in obj._meta.many_to_many:
        data[m2m.name] = _linked(obj, m2m)
    return data


def version(data: dict[str, Any] | None) -> str:
    """A short digest of a snapshot: two forms opened on the same state carry
    the same version."""
    if data is None:
        return ""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True)
class FieldChange:
    """One field's change: ``lines`` for text (a unified line diff),
    ``added``/``removed`` for lists, ``before``/``after`` otherwise."""

    name: str
    before: Any = None
    after: Any = None
    lines: list[str] = field(default_factory=list)
    added: list[Any] = field(default_factory=list)
    removed: list[Any] = field(default_factory=list)
    reordered: bool = False

    @property
    def shown_before(self) -> str:
        return _shown(self.before)

    @property
    def shown_after(self) -> str:
        return _shown(self.after)

    @property
    def kind(self) -> str:
        if self.lines:
            return "text"
        if isinstance(self.before, list) or isinstance(self.after, list):
            return "list"
        return "value"


def _shown(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def changed_fields(
    before: dict[str, Any] | None, after: dict[str, Any] | None
) -> list[str]:
    before, after = before or {}, after or {}
    names = [*before, *(name for name in after if name not in before)]
    return [name for name in names if before.get(name) != after.get(name)]


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and ("\n" in value or len(value) > 80)


def diff(
    before: dict[str, Any] | None, after: dict[str, Any] | None
) -> list[FieldChange]:
    """What changed from ``before`` to ``after``, field by field (a created
    row: every field against nothing; a deleted one: nothing after)."""
    old, new = before or {}, after or {}
    changes = []
    for name in changed_fields(before, after):
        a, b = old.get(name), new.get(name)
        if _is_text(a) or _is_text(b):
            lines = list(
                difflib.unified_diff(
                    (a or "").splitlines(),
                    (b or "").splitlines(),
                    "before",
                    "after",
                    lineterm="",
                    n=2,
                )
            )[2:]
            changes.append(FieldChange(name, a, b, lines=lines))
        elif isinstance(a, list) or isinstance(b, list):
            a_list, b_list = list(a or []), list(b or [])
            added = [item for item in b_list if item not in a_list]
            removed = [item for item in a_list if item not in b_list]
            changes.append(
                FieldChange(
                    name,
                    a,
                    b,
                    added=added,
                    removed=removed,
                    reordered=not added and not removed,
                )
            )
        else:
            changes.append(FieldChange(name, a, b))
    return changes
