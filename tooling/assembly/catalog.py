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
    ModelCapability,
    PolicyDefinition,
    PromptTemplate,
    SectionDefinition,
    SectionHostedTool,
    SectionTool,
)
from tooling.runtime import Prompt, PromptError

from .revisions import freeze_prompt, thaw_prompt


def all_sections() -> dict[int, SectionDefinition]:
    """Every section, with its tools, hosted tools and policies (4 queries)."""
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
        freeze_prompt(template, sections=all_sections(), with_capabilities=False)
    )


def freeze_template(template: PromptTemplate) -> dict[str, Any]:
    """The revision JSON of a saved template (see ``revisions.freeze_prompt``)."""
    return freeze_prompt(template, sections=all_sections())


def freeze_templates(
    templates: Sequence[PromptTemplate],
) -> dict[int, dict[str, Any] | PromptError]:
    """The revision JSON of each template (or why it cannot be frozen), with a
    constant number of queries for any number of templates."""
    sections = all_sections()
    kinds = {
        row.model: sorted(str(kind) for kind in row.hosted_kinds or [])
        for row in ModelCapability.objects.filter(
            model__in={template.model for template in templates}
        )
    }
    frozen: dict[int, dict[str, Any] | PromptError] = {}
    for template in templates:
        try:
            data = freeze_prompt(template, sections=sections, with_capabilities=False)
        except PromptError as error:
            frozen[template.pk] = error
            continue
        data["model_hosted_kinds"] = kinds.get(template.model)
        frozen[template.pk] = data
    return frozen


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
            sections=sections if sections is not None else all_sections(),
            roots=roots,
            policies=list(policies or []),
            with_capabilities=False,
        )
    )


def load_template(ref: str) -> PromptTemplate:
    """The enabled template named ``<namespace>/<key>`` with its catalog links."""
    return PromptTemplate.objects.enabled().with_catalog().get_by_ref(ref)
