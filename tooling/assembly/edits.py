"""Catalog edits not saved yet, and the prompts they would break.

A ``CatalogEdit`` says how the catalog would look after an edit: rows replaced
by their edited copies, rows removed (a delete, with what the delete cascades
to), and a section's tool, hosted tool and policy links replaced. Freezing a
prompt applies it in memory (``revisions.freeze_prompt(edit=...)``), so the
check builds each prompt exactly as a run would after the edit, and nothing is
written. ``prompts_broken_by`` reads the catalog with a constant number of
queries, whatever its size.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import models

from tooling.models import (
    HostedToolDefinition,
    PolicyDefinition,
    PromptTemplate,
    SectionDefinition,
    ToolDefinition,
)
from tooling.runtime import PromptError

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


def with_descendants(
    section: SectionDefinition, sections: dict[int, SectionDefinition]
) -> list[SectionDefinition]:
    """``section`` and every section under it (what deleting it cascades to);
    terminates on any data, cycles included."""
    children_of: dict[int | None, list[SectionDefinition]] = {}
    for candidate in sections.values():
        children_of.setdefault(candidate.parent_id, []).append(candidate)
    found: dict[int, SectionDefinition] = {}
    stack = [section]
    while stack:
        current = stack.pop()
        if current.pk in found:
            continue
        found[current.pk] = current
        stack.extend(children_of.get(current.pk, []))
    return list(found.values())


def prompts_broken_by(edit: CatalogEdit) -> list[tuple[str, str]]:
    """``(prompt ref, message)`` for every saved prompt that builds today and
    would not build after ``edit``. Queries: a constant number."""
    from .catalog import all_sections
    from .revisions import freeze_prompt, thaw_prompt

    sections = all_sections()
    problems: list[tuple[str, str]] = []
    for template in PromptTemplate.objects.with_catalog():
        try:
            before = freeze_prompt(template, sections=sections, with_capabilities=False)
        except PromptError:
            continue  # already broken: not this edit's doing
        try:
            after = freeze_prompt(
                template, sections=sections, with_capabilities=False, edit=edit
            )
        except PromptError as error:
            problems.append((template.ref, error.message))
            continue
        if after == before:
            continue
        try:
            thaw_prompt(before)
        except PromptError:
            continue
        if not after["sections"]:
            problems.append((template.ref, "it would have no section left."))
            continue
        try:
            thaw_prompt(after)
        except PromptError as error:
            problems.append((template.ref, error.message))
    return problems


def describe(problems: Sequence[tuple[str, str]], action: str) -> list[str]:
    """One message per broken prompt: ``This change would break prompt 'x': ...``."""
    return [
        f"{action} would break prompt '{ref}': {message}" for ref, message in problems
    ]
