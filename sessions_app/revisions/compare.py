"""The difference of two catalog revisions, as people read it.

The rendered text as a line diff; the prompt's settings field by field; the
sections, function tools, hosted tools and policies by name: added, removed,
or changed with the fields that changed (``tooling.history.snapshot.diff``,
the same field diff the catalog's history shows).
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from typing import Any

from tooling.history.snapshot import FieldChange, diff

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

    @property
    def same(self) -> bool:
        return not (
            self.settings or self.text or any(group.entries for group in self.groups)
        )


def text_diff(before: str, after: str) -> list[str]:
    """A unified line diff of two texts, without its two file header lines."""
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), "before", "after", lineterm="", n=3
    )
    return list(lines)[2:]


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


def _entries(before: list[Entry], after: list[Entry]) -> list[EntryDiff]:
    old = {entry.name: entry for entry in before}
    new = {entry.name: entry for entry in after}
    found = []
    for name in [*old, *(name for name in new if name not in old)]:
        a, b = old.get(name), new.get(name)
        changes = diff(flat(a.fields if a else None), flat(b.fields if b else None))
        if a is None:
            found.append(EntryDiff(name, "added", changes))
        elif b is None:
            found.append(EntryDiff(name, "removed", changes))
        elif changes:
            found.append(EntryDiff(name, "changed", changes))
    return found


def compare(before: RevisionView, after: RevisionView) -> RevisionDiff:
    """What changed from ``before`` to ``after``."""
    groups_before, groups_after = before.groups, after.groups
    return RevisionDiff(
        before=before,
        after=after,
        settings=diff(flat(before.settings), flat(after.settings)),
        text=text_diff(before.text, after.text),
        groups=[
            GroupDiff(key, title, _entries(groups_before[key], groups_after[key]))
            for key, title in GROUP_TITLES.items()
        ],
    )
