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
    # Why a text was not compared line by line ("too_long" or "page_full"):
    # the page shows the sizes instead (see ``DiffBudget``).
    not_compared: str = ""

    @property
    def sizes(self) -> str:
        """The two texts' sizes, for a text not compared line by line."""
        return f"before {_size(self.before)}, after {_size(self.after)}"

    @property
    def shown_before(self) -> str:
        return _shown(self.before)

    @property
    def shown_after(self) -> str:
        return _shown(self.after)

    @property
    def kind(self) -> str:
        if self.not_compared:
            return "not_compared"
        if self.lines:
            return "text"
        if isinstance(self.before, list) or isinstance(self.after, list):
            return "list"
        return "value"


def _size(value: Any) -> str:
    if not isinstance(value, str):
        return "nothing"
    lines = len(value.splitlines())
    return (
        f"{lines:,} line{'' if lines == 1 else 's'} "
        f"({len(value):,} character{'' if len(value) == 1 else 's'})"
    )


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


# A line diff (difflib) costs up to the product of the two texts' lengths: a
# 20,000-line template saved with its lines reordered takes about a minute.
# So a text is compared line by line only while each side is within these
# bounds, and a page compares at most PAGE_LINES lines (both sides counted)
# in all; past them it shows the texts' sizes instead.
TEXT_LINES_MAX = 2_000
#: why a text was not compared line by line ("": it was), as the API names it
NOT_COMPARED = ["", "too_long", "page_full"]
TEXT_CHARS_MAX = 200_000
PAGE_LINES = 10_000


@dataclass
class DiffBudget:
    """What one page may still compare line by line (``diff(budget=...)``)."""

    lines: int = PAGE_LINES

    def allows(self, a: list[str], b: list[str], chars: int) -> str:
        """``""`` when ``a`` and ``b`` may be compared (and takes their
        lines from the budget), else why not."""
        if max(len(a), len(b)) > TEXT_LINES_MAX or chars > TEXT_CHARS_MAX:
            return "too_long"
        if len(a) + len(b) > self.lines:
            return "page_full"
        self.lines -= len(a) + len(b)
        return ""


def line_diff(
    before: str, after: str, *, budget: DiffBudget | None = None, context: int = 2
) -> tuple[list[str], str]:
    """A unified line diff of two texts without its two header lines, and
    ``""``; or no lines and why not (``DiffBudget.allows``): with a
    ``budget``, texts past its bounds are not compared line by line."""
    if before == after:
        return [], ""
    a_lines, b_lines = before.splitlines(), after.splitlines()
    if budget is not None:
        refused = budget.allows(a_lines, b_lines, max(len(before), len(after)))
        if refused:
            return [], refused
    lines = difflib.unified_diff(
        a_lines, b_lines, "before", "after", lineterm="", n=context
    )
    return list(lines)[2:], ""


def _text_change(name: str, a: Any, b: Any, budget: DiffBudget | None) -> FieldChange:
    lines, refused = line_diff(
        a if isinstance(a, str) else "", b if isinstance(b, str) else "", budget=budget
    )
    if refused:
        return FieldChange(name, a, b, not_compared=refused)
    return FieldChange(name, a, b, lines=lines)


def _missing(items: list[Any], other: list[Any]) -> list[Any]:
    """The items of ``items`` not in ``other``, in order (by set when the
    items are hashable: a long list is not compared item by item)."""
    try:
        seen = set(other)
        return [item for item in items if item not in seen]
    except TypeError:  # a dict or a list among them
        return [item for item in items if item not in other]


def diff(
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    *,
    budget: DiffBudget | None = None,
) -> list[FieldChange]:
    """What changed from ``before`` to ``after``, field by field (a created
    row: every field against nothing; a deleted one: nothing after). With a
    ``budget``, a text longer than its bounds, or past what the page may
    still compare, is not compared line by line (``not_compared``)."""
    old, new = before or {}, after or {}
    changes = []
    for name in changed_fields(before, after):
        a, b = old.get(name), new.get(name)
        if _is_text(a) or _is_text(b):
            changes.append(_text_change(name, a, b, budget))
        elif isinstance(a, list) or isinstance(b, list):
            a_list, b_list = list(a or []), list(b or [])
            added = _missing(b_list, a_list)
            removed = _missing(a_list, b_list)
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
