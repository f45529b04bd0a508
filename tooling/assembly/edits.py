"""The prompts an unsaved catalog edit would break.

A ``CatalogEdit`` (``catalog_edit.py``) says how the catalog would look after
an edit. Freezing a prompt applies it in memory
(``revisions.freeze_prompt(edit=...)``), so the check builds each prompt
exactly as a run would after the edit, and nothing is written.
``prompts_broken_by`` builds only the prompts an edit can change, reading only
the rows they reach, with a constant number of queries whatever the size of
the catalog.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import models
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from tooling.models import (
    HostedToolDefinition,
    PolicyDefinition,
    PromptSection,
    PromptTemplate,
    SectionDefinition,
    SectionHostedTool,
    SectionTool,
    ToolDefinition,
)
from tooling.runtime import PromptError, unsupported_kind_message

from .catalog import (
    all_sections,
    ancestor_ids,
    freeze_templates,
    reached_sections,
    sql_names,
)
from .catalog_edit import CatalogEdit
from .hosted import model_capabilities
from .revisions import freeze_prompt, thaw_prompt


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
    would not build after ``edit``. Only the prompts the edit can change are
    built (those reaching an edited row), reading only the sections they
    reach. Queries: a constant number, whatever the size of the catalog."""
    touched = _prompts_touched_by(edit)
    if touched is None:  # an edit of rows this module does not know
        return _broken(
            list(PromptTemplate.objects.with_catalog()), all_sections(), edit
        )
    templates = list(touched)
    if not templates:
        return []
    seeds = [
        link.section_id
        for template in templates
        for link in template.prompt_sections.all()
    ]
    # A section moved under a reached one brings its whole subtree along.
    seeds += [pk for model, pk in edit.replaced if model is SectionDefinition]
    return _broken(templates, reached_sections(seeds), edit)


def _prompts_touched_by(edit: CatalogEdit) -> QuerySet[PromptTemplate] | None:
    """The saved prompts whose build ``edit`` can change (``None``: unknown).

    A prompt can change only if one of its sections is edited (its fields,
    parent, links or a linked tool, hosted tool or policy), gains a child
    (a new section, or one moved under it) or loses one (the child is
    edited), or if one of its own policies is edited. So: the prompts with a
    root section at or above such a section (one recursive query finds those
    sections) and the prompts holding an edited policy. Rows without a pk are
    not saved: nothing uses them yet.

    The sections above are read into Python first, so that the prompts are
    then found through indexes with known values (PostgreSQL plans a join
    with a recursive query as a scan of the whole table)."""
    ids: dict[type[models.Model], set[Any]] = {
        SectionDefinition: set(),
        ToolDefinition: set(),
        HostedToolDefinition: set(),
        PolicyDefinition: set(),
    }
    for model, pk in (*edit.replaced, *edit.removed):
        if model not in ids:
            return None
        if pk is not None:
            ids[model].add(pk)
    sections = ids[SectionDefinition]
    for (model, pk), row in edit.replaced.items():
        if model is SectionDefinition and pk is not None and row.parent_id is not None:
            sections.add(row.parent_id)  # its new parent gains a child
    for links in (edit.section_tools, edit.section_hosted, edit.section_policies):
        sections.update(pk for pk in links if pk is not None)
    if edit.added_section is not None and edit.added_section.parent_id is not None:
        sections.add(edit.added_section.parent_id)

    seeds = [
        part
        for part in (
            _select_in(SectionDefinition, "id", "id", sections),
            _select_in(SectionTool, "section", "tool", ids[ToolDefinition]),
            _select_in(
                SectionHostedTool, "section", "hosted_tool", ids[HostedToolDefinition]
            ),
            _select_in(
                SectionDefinition.policies.through,
                "sectiondefinition",
                "policydefinition",
                ids[PolicyDefinition],
            ),
        )
        if part is not None
    ]
    above: list[int] = []
    if seeds:
        sql = " UNION ".join(part for part, _ in seeds)
        above = ancestor_ids(
            f"SELECT wink_seed.id FROM ({sql}) wink_seed",
            [param for _, params in seeds for param in params],
        )
    prompts = [
        part
        for part in (
            _select_in(PromptSection, "prompt", "section", set(above)),
            _select_in(
                PromptTemplate.policies.through,
                "prompttemplate",
                "policydefinition",
                ids[PolicyDefinition],
            ),
        )
        if part is not None
    ]
    if not prompts:
        return PromptTemplate.objects.none()
    return PromptTemplate.objects.with_catalog().filter(
        pk__in=RawSQL(
            " UNION ".join(part for part, _ in prompts),
            [param for _, params in prompts for param in params],
        )
    )


def _select_in(
    model: type[models.Model], column: str, where: str, values: set[Any]
) -> tuple[str, list[Any]] | None:
    """``SELECT <column> AS id FROM <model> WHERE <where> IN (values)``, with
    its parameters (``None`` without values)."""
    if not values:
        return None
    table, selected, tested = sql_names(model, column, where)
    marks = ", ".join(["%s"] * len(values))
    return (
        f"SELECT {selected} AS id FROM {table} WHERE {tested} IN ({marks})",
        sorted(values),
    )


def _broken(
    templates: Iterable[PromptTemplate],
    sections: Mapping[int, SectionDefinition],
    edit: CatalogEdit,
) -> list[tuple[str, str]]:
    """``prompts_broken_by`` among ``templates``, ``sections`` holding every
    section they reach (and every section the edit moves under them)."""
    problems: list[tuple[str, str]] = []
    for template in templates:
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
        if not any(section["enabled"] for section in after["sections"]):
            problems.append(
                (
                    template.ref,
                    "it would have no enabled section left (its prompt "
                    "would be empty).",
                )
            )
            continue
        try:
            thaw_prompt(after)
        except PromptError as error:
            problems.append((template.ref, error.message))
    return problems


def prompts_broken_by_capability(
    model: str, hosted_kinds: Sequence[str]
) -> list[tuple[str, str]]:
    """``(prompt ref, message)`` for every saved prompt on ``model`` that
    builds today and would not if the model could use only ``hosted_kinds``
    (a model capability row written or changed): a hosted tool of another
    kind in its sections."""
    templates = list(PromptTemplate.objects.with_catalog().filter(model=model))
    every = freeze_templates(templates)  # a constant number of queries
    now = model_capabilities(model)  # the row as it is (None: every kind)
    problems: list[tuple[str, str]] = []
    for template in templates:
        frozen = every[template.pk]
        if isinstance(frozen, PromptError):
            continue  # already broken: not this edit's doing
        try:
            prompt = thaw_prompt(frozen)
        except PromptError:
            continue
        declared = prompt.declared_hosted_tools()
        if now is not None and unsupported_kind_message(model, now[model], declared):
            continue  # already refused by the row as it is
        message = unsupported_kind_message(model, hosted_kinds, declared)
        if message is not None:
            problems.append((template.ref, message))
    return problems


def describe(problems: Sequence[tuple[str, str]], action: str) -> list[str]:
    """One message per broken prompt: ``This change would break prompt 'x': ...``."""
    return [
        f"{action} would break prompt '{ref}': {message}" for ref, message in problems
    ]
