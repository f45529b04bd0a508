"""A catalog edit not saved yet: how the catalog would look after it.

A ``CatalogEdit`` holds rows replaced by their edited copies, rows removed (a
delete, with what the delete cascades to), and a section's tool, hosted tool
and policy links replaced. ``revisions.freeze_prompt(edit=...)`` applies it in
memory; ``edits.prompts_broken_by`` uses that to find the prompts the edit
would break. It needs nothing else of the assembly, so every module of it may
import this one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import models

from tooling.models import (
    HostedToolDefinition,
    PolicyDefinition,
    SectionDefinition,
    ToolDefinition,
)

Key = tuple[type[models.Model], Any]


def _key(row: models.Model) -> Key:
    return (type(row)._meta.concrete_model, row.pk)  # type: ignore[return-value]


@dataclasses.dataclass
class CatalogEdit:
    """An unsaved edit of the catalog, applied while freezing prompts."""

    replaced: dict[Key, Any] = dataclasses.field(default_factory=dict)
    removed: set[Key] = dataclasses.field(default_factory=set)
    section_tools: dict[Any, Sequence[ToolDefinition]] = dataclasses.field(
        default_factory=dict
    )
    section_hosted: dict[Any, Sequence[HostedToolDefinition]] = dataclasses.field(
        default_factory=dict
    )
    section_policies: dict[Any, Sequence[PolicyDefinition]] = dataclasses.field(
        default_factory=dict
    )
    # A section being added (not saved yet: its pk is None).
    added_section: SectionDefinition | None = None

    @classmethod
    def saving(cls, candidate: models.Model) -> CatalogEdit:
        """``candidate`` (an unsaved copy with the row's pk) replaces the row."""
        return cls(replaced={_key(candidate): candidate})

    @classmethod
    def deleting(cls, rows: Iterable[models.Model]) -> CatalogEdit:
        return cls(removed={_key(row) for row in rows})

    def row(self, row: Any) -> Any:
        """The row as the edit leaves it: its replacement, or ``None`` if removed."""
        if row is None or row.pk is None:
            return row
        key = _key(row)
        if key in self.removed:
            return None
        return self.replaced.get(key, row)

    def rows(self, rows: Iterable[Any]) -> list[Any]:
        kept = (self.row(row) for row in rows)
        return [row for row in kept if row is not None]

    def tools_of(self, section: SectionDefinition) -> list[ToolDefinition]:
        if section.pk in self.section_tools:
            tools = list(self.section_tools[section.pk])
        else:
            tools = [link.tool for link in section.sectiontool_set.all()]
        return self.rows(tools)

    def hosted_tools_of(self, section: SectionDefinition) -> list[HostedToolDefinition]:
        if section.pk in self.section_hosted:
            hosted = list(self.section_hosted[section.pk])
        else:
            hosted = [link.hosted_tool for link in section.sectionhostedtool_set.all()]
        return self.rows(hosted)

    def policies_of(self, section: SectionDefinition) -> list[PolicyDefinition]:
        if section.pk in self.section_policies:
            return self.rows(self.section_policies[section.pk])
        return self.rows(section.policies.all())


NO_EDIT = CatalogEdit()
