"""Catalog rows -> a revision's JSON -> the runtime ``Prompt``.

``freeze_prompt`` serialises everything a prompt needs to run (its settings,
its section tree with templates and parameter defaults, function tools by
handler key, hosted tool configs, policies, hosted tool limits, and the
model's allowed hosted kinds) and validates nothing: invalid entries are
frozen as they are.
``thaw_prompt`` builds the runtime ``Prompt`` from that JSON with the same
``build_*`` functions the forms use, so every rule and message is the
runtime's own.

Every prompt is built this way, from the live catalog (``build_prompt``, the
admin) or from a stored ``CatalogRevision`` (a run): what was previewed is
what runs. Secrets never enter a revision: MCP headers are frozen as the
names of environment variables and read when the revision is thawed.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import Any

from tooling.models import (
    ModelCapability,
    PolicyDefinition,
    PromptTemplate,
    SectionDefinition,
)
from tooling.runtime import (
    MarkdownSection,
    Prompt,
    PromptValidationError,
)

from .catalog_edit import NO_EDIT, CatalogEdit
from .hosted import build_hosted_tool
from .policies import build_policy
from .prompts import build_section, output_for, tool_choice_for
from .tools import build_tool

FORMAT = 1

_PROMPT_FIELDS = (
    "namespace",
    "key",
    "name",
    "model",
    "output_schema",
    "tool_choice",
    "deadline_seconds",
    "max_total_tokens",
    "max_turns",
)
_SECTION_FIELDS = (
    "key",
    "title",
    "template",
    "default_params",
    "enabled",
    "enabled_when_param",
    "planning_strategy",
)
_TOOL_FIELDS = ("name", "handler_key", "description", "param_descriptions", "examples")
_HOSTED_FIELDS = ("name", "kind", "description", "config", "min_trust_level")
_POLICY_FIELDS = ("name", "kind", "config")


def _fields(row: Any, names: Sequence[str]) -> dict[str, Any]:
    return {name: getattr(row, name) for name in names}


# -- freezing --------------------------------------------------------------------


def freeze_prompt(
    template: PromptTemplate,
    *,
    sections: Mapping[int, SectionDefinition],
    roots: Sequence[SectionDefinition] | None = None,
    policies: Sequence[PolicyDefinition] | None = None,
    with_capabilities: bool = True,
    edit: CatalogEdit | None = None,
) -> dict[str, Any]:
    """The revision JSON of ``template``.

    ``sections`` is the loaded catalog (with tools, hosted tools and policies
    prefetched); ``roots`` and ``policies`` default to the template's saved
    ones (the admin passes unsaved ones to validate a form).
    ``with_capabilities`` adds the model's allowed hosted kinds (one query).
    ``edit`` applies an unsaved catalog edit in memory (``edits.py``).
    """
    edit = edit or NO_EDIT
    if roots is None:
        roots = [sections[link.section_id] for link in template.prompt_sections.all()]
    if policies is None:
        policies = list(template.policies.all())
    children_of: dict[int | None, list[SectionDefinition]] = {}
    for section in edit.rows(sections.values()):
        children_of.setdefault(section.parent_id, []).append(section)
    if edit.added_section is not None:
        added = edit.added_section
        children_of.setdefault(added.parent_id, []).append(added)
    roots = edit.rows(sections.get(root.pk, root) for root in roots)
    data: dict[str, Any] = {
        "format": FORMAT,
        "prompt": _fields(template, _PROMPT_FIELDS),
        "policies": [_fields(policy, _POLICY_FIELDS) for policy in edit.rows(policies)],
        "sections": [_freeze_section(root, children_of, (), edit) for root in roots],
    }
    _check_each_section_once(data["sections"])
    limits = getattr(template, "hosted_tool_limits", None)
    if limits:  # left out when empty: the hash of a prompt without limits stays
        data["prompt"]["hosted_tool_limits"] = limits
    if with_capabilities:
        row = ModelCapability.objects.filter(model=template.model).first()
        data["model_hosted_kinds"] = (
            None if row is None else sorted(str(k) for k in row.hosted_kinds or [])
        )
    return data


def _check_each_section_once(
    sections: Sequence[Mapping[str, Any]],
    seen: dict[str, str] | None = None,
    under: str = "",
) -> None:
    """Refuse a section that is in the prompt twice (a root that is also
    below another root): its text and tools would be there twice."""
    seen = {} if seen is None else seen
    for section in sections:
        key = section["key"]
        where = f"under '{under}'" if under else "at the top"
        if key in seen:
            raise PromptValidationError(
                f"Section '{key}' is in this prompt twice ({seen[key]} and "
                f"{where}): include it once (its sections come with it).",
                section_path=(key,),
            )
        seen[key] = where
        _check_each_section_once(section.get("children") or (), seen, key)


def _freeze_section(
    definition: SectionDefinition,
    children_of: Mapping[int | None, list[SectionDefinition]],
    trail: tuple[int, ...],
    edit: CatalogEdit,
) -> dict[str, Any]:
    if definition.pk is not None and definition.pk in trail:
        raise PromptValidationError(
            f"Section '{definition.key}' is its own ancestor.",
            section_path=(definition.key,),
        )
    below = children_of.get(definition.pk, []) if definition.pk is not None else []
    return {
        **_fields(definition, _SECTION_FIELDS),
        "tools": [
            _fields(tool, _TOOL_FIELDS)
            for tool in edit.tools_of(definition)
            if tool.enabled
        ],
        "hosted_tools": [
            _fields(hosted, _HOSTED_FIELDS)
            for hosted in edit.hosted_tools_of(definition)
            if hosted.enabled
        ],
        "policies": [
            _fields(policy, _POLICY_FIELDS) for policy in edit.policies_of(definition)
        ],
        "children": [
            _freeze_section(child, children_of, (*trail, definition.pk), edit)
            for child in below
        ],
    }


# -- thawing ---------------------------------------------------------------------


def _row(entry: Mapping[str, Any], names: Sequence[str]) -> Any:
    """An attribute view of a frozen entry, as the ``build_*`` functions read
    a catalog row."""
    missing = [name for name in names if name not in entry]
    if missing:
        raise PromptValidationError(
            f"The catalog revision is malformed: an entry lacks {', '.join(missing)}."
        )
    return types.SimpleNamespace(**{name: entry[name] for name in names})


def model_capabilities_of(data: Mapping[str, Any]) -> dict[str, frozenset[str]] | None:
    """The adapter's ``model_capabilities`` for a revision (``None``: the
    catalog does not restrict the model)."""
    kinds = data.get("model_hosted_kinds")
    if kinds is None:
        return None
    return {str(data["prompt"]["model"]): frozenset(str(kind) for kind in kinds)}


def thaw_prompt(data: Mapping[str, Any]) -> Prompt:
    """The runtime ``Prompt`` of a revision; invalid content raises the
    runtime's ``PromptError`` with its message."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise PromptValidationError(
            f"The catalog revision has an unknown format (expected {FORMAT})."
        )
    try:
        prompt = _row(data["prompt"], _PROMPT_FIELDS)
        roots = [_thaw_section(entry) for entry in data["sections"]]
        policies = [build_policy(_row(p, _POLICY_FIELDS)) for p in data["policies"]]
        # revisions frozen before hosted tool limits existed have none
        limits = data["prompt"].get("hosted_tool_limits")
    except (KeyError, TypeError, AttributeError) as error:
        raise PromptValidationError(
            f"The catalog revision is malformed ({type(error).__name__}: {error})."
        ) from error
    return Prompt(
        ns=prompt.namespace,
        key=prompt.key,
        name=prompt.name or f"{prompt.namespace}/{prompt.key}",
        sections=roots,
        policies=policies,
        output=output_for(prompt),
        tool_choice=tool_choice_for(prompt),
        param_descriptions=_param_descriptions(data["sections"]),
        hosted_tool_limits=limits,
    )


def _thaw_section(entry: Mapping[str, Any]) -> MarkdownSection:
    definition = _row(entry, _SECTION_FIELDS)
    children = [_thaw_section(child) for child in entry["children"]]
    tools = [build_tool(_row(tool, _TOOL_FIELDS)) for tool in entry["tools"]]
    hosted = [
        build_hosted_tool(_row(tool, _HOSTED_FIELDS)) for tool in entry["hosted_tools"]
    ]
    policies = [build_policy(_row(p, _POLICY_FIELDS)) for p in entry["policies"]]
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


def _param_descriptions(
    sections: Sequence[Mapping[str, Any]],
) -> dict[str, Mapping[str, str]]:
    found: dict[str, Mapping[str, str]] = {}
    for section in sections:
        for tool in section["tools"]:
            if tool.get("param_descriptions"):
                found[tool["name"]] = tool["param_descriptions"]
        found.update(_param_descriptions(section["children"]))
    return found
