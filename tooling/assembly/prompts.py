"""Sections and prompt settings -> runtime sections, output and tool choice.

``revisions.thaw_prompt`` assembles these into a ``Prompt``; the forms call
them to validate one section or setting at a time.
"""

from __future__ import annotations

import copy
import dataclasses
import keyword
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tooling.models import (
    PromptTemplate,
    SectionDefinition,
)
from tooling.runtime import (
    HostedTool,
    MarkdownSection,
    PlanningStrategy,
    PromptValidationError,
    StructuredOutput,
    Tool,
    ToolChoice,
    ToolPolicy,
    planning_template,
    planning_tools,
)


def section_params_type(
    key: str, template: str, default_params: Mapping[str, Any], enabled_when: str
) -> type[Any] | None:
    """The section's declared parameters as a dataclass.

    ``default_params`` declares them: ``{"name": default}``, where ``null``
    means required. The predicate's parameter is declared implicitly (optional).
    The runtime then checks that every ``$placeholder`` is declared.
    """
    for name in default_params:
        if not _is_parameter_name(name):
            raise PromptValidationError(
                f"Parameter name '{name}' must be a Python identifier (not a keyword).",
                section_path=(key,),
                placeholder="default_params",
            )
    names = list(default_params)
    if enabled_when and enabled_when not in names:
        if not _is_parameter_name(enabled_when):
            raise PromptValidationError(
                f"Parameter name '{enabled_when}' must be a Python identifier "
                "(not a keyword).",
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
            fields.append((name, Any, _field(default)))
    required = [(name, Any) for name in names if all(f[0] != name for f in fields)]
    return dataclasses.make_dataclass(
        f"{key.replace('.', '_').replace('-', '_')}_params",
        [*required, *fields],
        frozen=True,
    )


def _is_parameter_name(name: Any) -> bool:
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def _field(default: Any) -> Any:
    """A dataclass field defaulting to ``default``; a list or an object is
    copied for each instance (a dataclass refuses a mutable default)."""
    if isinstance(default, list | dict):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default))
    return dataclasses.field(default=default)


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


def tool_choice_for(template: PromptTemplate) -> ToolChoice | None:
    value = (template.tool_choice or "auto").strip()
    return None if value == "auto" else ToolChoice.parse(value)


def output_for(template: PromptTemplate) -> StructuredOutput | None:
    if template.output_schema in (None, {}):
        return None
    return StructuredOutput.from_schema(
        template.output_schema, name=template.name or template.key
    )
