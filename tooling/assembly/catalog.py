"""Reading the catalog: templates, the section tree, and prompts built from them.

Every function reads what it needs with a constant number of queries, whatever
the size of the catalog, and builds prompts through ``freeze_prompt`` and
``thaw_prompt`` (``revisions.py``), the same path a run takes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import Prefetch

from tooling.models import (
    PolicyDefinition,
    PromptTemplate,
    SectionDefinition,
    SectionHostedTool,
    SectionTool,
)
from tooling.runtime import Prompt, PromptError

from .revisions import freeze_prompt, thaw_prompt


def _all_sections() -> dict[int, SectionDefinition]:
    queryset = SectionDefinition.objects.prefetch_related(
        Prefetch(
            "sectiontool_set",
            queryset=SectionTool.objects.select_related("tool").order_by(
                "position", "id"
            ),
        ),
        Prefetch(
            "sectionhostedtool_set",
            queryset=SectionHostedTool.objects.select_related("hosted_tool").order_by(
                "position", "id"
            ),
        ),
        "policies",
    ).order_by("position", "key")
    return {section.pk: section for section in queryset}


def build_prompt(template: PromptTemplate) -> Prompt:
    """The runtime prompt of a saved template, from the live catalog."""
    return thaw_prompt(
        freeze_prompt(template, sections=_all_sections(), with_capabilities=False)
    )


def freeze_template(template: PromptTemplate) -> dict[str, Any]:
    """The revision JSON of a saved template (see ``revisions.freeze_prompt``)."""
    return freeze_prompt(template, sections=_all_sections())


def build_prompt_from_parts(
    template: PromptTemplate,
    *,
    roots: Sequence[SectionDefinition],
    policies: Sequence[PolicyDefinition] | None,
    sections: Mapping[int, SectionDefinition] | None = None,
) -> Prompt:
    """Build a prompt from a template's fields and the given root sections and
    prompt-level policies (used before they are saved, by the admin)."""
    return thaw_prompt(
        freeze_prompt(
            template,
            sections=sections if sections is not None else _all_sections(),
            roots=roots,
            policies=list(policies or []),
            with_capabilities=False,
        )
    )


def prompts_broken_by_policy(candidate: PolicyDefinition) -> list[tuple[str, str]]:
    """``(prompt ref, message)`` for each saved prompt that would no longer
    build if the policy ``candidate.pk`` had ``candidate``'s kind and config.

    Nothing is written: the loaded copies of the policy take the candidate's
    kind and config, in memory only. Queries: a constant number.
    """
    sections = _all_sections()
    templates = list(PromptTemplate.objects.with_catalog())
    loaded = [p for section in sections.values() for p in section.policies.all()]
    loaded += [p for template in templates for p in template.policies.all()]
    for policy in loaded:
        if policy.pk == candidate.pk:
            policy.kind, policy.config = candidate.kind, candidate.config
    children_of: dict[int | None, list[SectionDefinition]] = {}
    for section in sections.values():
        children_of.setdefault(section.parent_id, []).append(section)

    def uses(section: SectionDefinition, seen: frozenset[int] = frozenset()) -> bool:
        if section.pk in seen:
            return False  # a cycle: reported by the build itself
        if any(p.pk == candidate.pk for p in section.policies.all()):
            return True
        below = children_of.get(section.pk, [])
        return any(uses(child, seen | {section.pk}) for child in below)

    problems: list[tuple[str, str]] = []
    for template in templates:
        roots = [sections[link.section_id] for link in template.prompt_sections.all()]
        direct = any(p.pk == candidate.pk for p in template.policies.all())
        if not direct and not any(uses(root) for root in roots):
            continue
        try:
            build_prompt_from_parts(
                template,
                roots=roots,
                policies=list(template.policies.all()),
                sections=sections,
            )
        except PromptError as error:
            problems.append((template.ref, error.message))
    return problems


def load_template(ref: str) -> PromptTemplate:
    """The enabled template named ``<namespace>/<key>`` with its catalog links."""
    return PromptTemplate.objects.enabled().with_catalog().get_by_ref(ref)
