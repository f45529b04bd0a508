"""Sections and prompt templates -> the runtime ``Prompt``.

``build_prompt`` reads the whole catalog it needs with a constant number of
queries, whatever the number of sections and tools.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db.models import Prefetch

from tooling.models import (
    PolicyDefinition,
    PromptTemplate,
    SectionDefinition,
    SectionHostedTool,
    SectionTool,
)
from tooling.runtime import (
    HostedTool,
    MarkdownSection,
    PlanningStrategy,
    Prompt,
    PromptError,
    PromptValidationError,
    StructuredOutput,
    Tool,
    ToolChoice,
    ToolPolicy,
    planning_template,
    planning_tools,
)

from .hosted import build_hosted_tool
from .policies import build_policy
from .tools import build_tool


def section_params_type(
    key: str, template: str, default_params: Mapping[str, Any], enabled_when: str
) -> type[Any] | None:
    """The section's declared parameters as a dataclass.

    ``default_params`` declares them: ``{"name": default}``, where ``null``
    means required. The predicate's parameter is declared implicitly (optional).
    The runtime then checks that every ``$placeholder`` is declared.
    """
    for name in default_params:
        if not isinstance(name, str) or not name.isidentifier():
            raise PromptValidationError(
                f"Parameter name '{name}' must be a Python identifier.",
                section_path=(key,),
                placeholder="default_params",
            )
    names = list(default_params)
    if enabled_when and enabled_when not in names:
        if not enabled_when.isidentifier():
            raise PromptValidationError(
                f"Parameter name '{enabled_when}' must be a Python identifier.",
                section_path=(key,),
                placeholder="enabled_when_param",
            )
        names.append(enabled_when)
    if not names:
        return None
    fields: list[Any] = []
    for name in names:
        default = default_params.get(name)
        if default is not None or name == enabled_when:
            fields.append((name, Any, dataclasses.field(default=default)))
    required = [(name, Any) for name in names if all(f[0] != name for f in fields)]
    return dataclasses.make_dataclass(
        f"{key.replace('.', '_').replace('-', '_')}_params",
        [*required, *fields],
        frozen=True,
    )


def _param_is_set(name: str) -> Callable[[Any], bool]:
    def enabled(params: Any) -> bool:
        return getattr(params, name, None) not in (None, "", False)

    return enabled


def build_section(
    definition: SectionDefinition,
    *,
    children: Sequence[MarkdownSection] = (),
    tools: Sequence[Tool[Any, Any]] = (),
    hosted_tools: Sequence[HostedTool[Any]] = (),
    policies: Sequence[ToolPolicy] = (),
) -> MarkdownSection:
    default_params = definition.default_params or {}
    if not isinstance(default_params, Mapping):
        raise PromptValidationError(
            "Default params must be a JSON object.", placeholder="default_params"
        )
    enabled_when = (definition.enabled_when_param or "").strip()
    params_type = section_params_type(
        definition.key, definition.template or "", default_params, enabled_when
    )
    enabled: Any = definition.enabled
    if definition.enabled and enabled_when:
        enabled = _param_is_set(enabled_when)
    template = definition.template or ""
    if definition.planning_strategy:
        strategy = _planning_strategy(definition.planning_strategy)
        template = "\n\n".join(
            part for part in (template.strip(), planning_template(strategy)) if part
        )
        tools = [*planning_tools(), *tools]

    return MarkdownSection(
        title=definition.title,
        key=definition.key,
        template=template,
        params_type=params_type,
        children=children,
        enabled=enabled,
        tools=tools,
        hosted_tools=hosted_tools,
        policies=policies,
    )


def _planning_strategy(value: str) -> PlanningStrategy:
    try:
        return PlanningStrategy(value)
    except ValueError:
        known = ", ".join(strategy.value for strategy in PlanningStrategy)
        raise PromptValidationError(
            f"Unknown planning strategy '{value}'; expected one of: {known}.",
            placeholder="planning_strategy",
        ) from None


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


def _section_tree(
    definition: SectionDefinition,
    children_of: Mapping[int | None, list[SectionDefinition]],
    trail: tuple[int, ...] = (),
) -> MarkdownSection:
    if definition.pk in trail:
        raise PromptValidationError(
            f"Section '{definition.key}' is its own ancestor.",
            section_path=(definition.key,),
        )
    children = [
        _section_tree(child, children_of, (*trail, definition.pk))
        for child in children_of.get(definition.pk, [])
    ]
    tools = [
        build_tool(link.tool)
        for link in definition.sectiontool_set.all()
        if link.tool.enabled
    ]
    hosted = [
        build_hosted_tool(link.hosted_tool)
        for link in definition.sectionhostedtool_set.all()
        if link.hosted_tool.enabled
    ]
    policies = [build_policy(policy) for policy in definition.policies.all()]
    try:
        return build_section(
            definition,
            children=children,
            tools=tools,
            hosted_tools=hosted,
            policies=policies,
        )
    except PromptValidationError as error:
        if not error.section_path:
            error.section_path = (definition.key,)
        raise


def tool_choice_for(template: PromptTemplate) -> ToolChoice | None:
    value = (template.tool_choice or "auto").strip()
    return None if value == "auto" else ToolChoice.parse(value)


def output_for(template: PromptTemplate) -> StructuredOutput | None:
    if template.output_schema in (None, {}):
        return None
    return StructuredOutput.from_schema(
        template.output_schema, name=template.name or template.key
    )


def build_prompt(template: PromptTemplate) -> Prompt:
    """The runtime prompt of a saved template (a constant number of queries,
    whatever the catalog size)."""
    sections = _all_sections()
    roots = [sections[link.section_id] for link in template.prompt_sections.all()]
    return build_prompt_from_parts(
        template, roots=roots, policies=list(template.policies.all()), sections=sections
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


def build_prompt_from_parts(
    template: PromptTemplate,
    *,
    roots: Sequence[SectionDefinition],
    policies: Sequence[PolicyDefinition] | None,
    sections: Mapping[int, SectionDefinition] | None = None,
) -> Prompt:
    """Build a prompt from a template's fields and the given root sections and
    prompt-level policies (used before they are saved, by the admin)."""
    sections = sections if sections is not None else _all_sections()
    children_of: dict[int | None, list[SectionDefinition]] = {}
    for section in sections.values():
        children_of.setdefault(section.parent_id, []).append(section)
    runtime_roots = [
        _section_tree(sections.get(root.pk, root), children_of) for root in roots
    ]
    prompt_tools = _tool_names(runtime_roots)
    tool_params: dict[str, Mapping[str, str]] = {}
    for section in sections.values():
        for link in section.sectiontool_set.all():
            if link.tool.param_descriptions and link.tool.name in prompt_tools:
                tool_params[link.tool.name] = link.tool.param_descriptions
    return Prompt(
        ns=template.namespace,
        key=template.key,
        name=template.name or template.ref,
        sections=runtime_roots,
        policies=[build_policy(policy) for policy in policies or []],
        output=output_for(template),
        tool_choice=tool_choice_for(template),
        param_descriptions=tool_params,
    )


def _tool_names(sections: Sequence[MarkdownSection]) -> set[str]:
    names: set[str] = set()
    for section in sections:
        names.update(tool.name for tool in section.tools)
        names.update(_tool_names(section.children))  # type: ignore[arg-type]
    return names


def load_template(ref: str) -> PromptTemplate:
    """The enabled template named ``<namespace>/<key>`` with its catalog links."""
    return PromptTemplate.objects.enabled().with_catalog().get_by_ref(ref)


def catalog_hash(prompt_payload: Mapping[str, Any]) -> str:
    """A content hash of what the model will see (text, tools, options)."""
    encoded = json.dumps(prompt_payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(encoded).hexdigest()
