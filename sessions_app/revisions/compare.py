"""The difference of two catalog revisions, as people read it.

The rendered text as a line diff; the prompt's settings field by field; the
sections, function tools, hosted tools and policies by name: added, removed,
or changed with the fields that changed (``tooling.history.snapshot.diff``,
the same field diff the catalog's history shows).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tooling.history.snapshot import DiffBudget, FieldChange, diff, line_diff

from .reading import Entry, RevisionView

GROUP_TITLES = {
    "sections": "Sections",
    "tools": "Function tools",
    "hosted_tools": "Hosted tools",
    "policies": "Policies and approval rules",
}


@dataclasses.dataclass(frozen=True)
class EntryDiff:
    name: str
    status: str  # added, removed or changed
    changes: list[FieldChange]


@dataclasses.dataclass(frozen=True)
class GroupDiff:
    key: str
    title: str
    entries: list[EntryDiff]


@dataclasses.dataclass(frozen=True)
class RevisionDiff:
    before: RevisionView
    after: RevisionView
    settings: list[FieldChange]
    text: list[str]
    groups: list[GroupDiff]
    # why the rendered prompts were not compared line by line ("too_long",
    # "page_full"; ``DiffBudget``): the page gives their sizes instead
    text_not_compared: str = ""

    @property
    def same(self) -> bool:
        return not (
            self.settings
            or self.text
            or self.text_not_compared
            or any(group.entries for group in self.groups)
        )

    @property
    def text_sizes(self) -> str:
        return FieldChange("text", self.before.text, self.after.text).sizes


def flat(fields: Mapping[str, Any] | None, prefix: str = "") -> dict[str, Any] | None:
    """``fields`` with nested objects spread into dotted names
    (``config.allowed_domains``), so a diff names the key that changed; an
    empty object stays a value."""
    if fields is None:
        return None
    found: dict[str, Any] = {}
    for name, value in fields.items():
        if isinstance(value, Mapping) and value:
            found.update(flat(value, f"{prefix}{name}.") or {})
        else:
            found[f"{prefix}{name}"] = value
    return found


def _entries(
    before: list[Entry], after: list[Entry], budget: DiffBudget
) -> list[EntryDiff]:
    old = {entry.name: entry for entry in before}
    new = {entry.name: entry for entry in after}
    found = []
    for name in [*old, *(name for name in new if name not in old)]:
        a, b = old.get(name), new.get(name)
        changes = diff(
            flat(a.fields if a else None), flat(b.fields if b else None), budget=budget
        )
        if a is None:
            found.append(EntryDiff(name, "added", changes))
        elif b is None:
            found.append(EntryDiff(name, "removed", changes))
        elif changes:
            found.append(EntryDiff(name, "changed", changes))
    return found


def compare(before: RevisionView, after: RevisionView) -> RevisionDiff:
    """What changed from ``before`` to ``after``: line by line within one
    ``DiffBudget`` (the rendered prompts first), sizes past it."""
    budget = DiffBudget()
    text, refused = line_diff(before.text, after.text, budget=budget, context=3)
    groups_before, groups_after = before.groups, after.groups
    return RevisionDiff(
        before=before,
        after=after,
        settings=diff(flat(before.settings), flat(after.settings), budget=budget),
        text=text,
        text_not_compared=refused,
        groups=[
            GroupDiff(
                key, title, _entries(groups_before[key], groups_after[key], budget)
            )
            for key, title in GROUP_TITLES.items()
        ],
    )
