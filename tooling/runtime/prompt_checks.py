"""What a ``Prompt`` checks when it is built, beyond its tree's shape: the
parameter descriptions it overrides, the tools and arguments its policies name,
and its tool choice (``check_hosted_tool_limits`` and
``check_call_limit_targets`` are their own modules'). Each reads the prompt
through its public methods and raises ``PromptValidationError``."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .approval_rules import check_condition_arguments
from .errors import PromptValidationError
from .serde import fields_of

if TYPE_CHECKING:
    from .prompt import Prompt
    from .tools import Tool


def _function_tools(prompt: Prompt[Any]) -> dict[str, Tool[Any, Any]]:
    return {tool.name: tool for tool in prompt.declared_tools()}


def _tool_names(prompt: Prompt[Any]) -> set[str]:
    names = {tool.name for tool in prompt.declared_tools()}
    return names | {hosted.name for hosted in prompt.declared_hosted_tools()}


def check_param_descriptions(
    prompt: Prompt[Any], overrides: Mapping[str, Mapping[str, str]]
) -> Mapping[str, Mapping[str, str]]:
    """``overrides`` (tool, then parameter, to description), checked: tools
    of the prompt that accept overrides, parameters they take."""
    tools = _function_tools(prompt)
    checked: dict[str, Mapping[str, str]] = {}
    for tool_name, fields in overrides.items():
        tool = tools.get(tool_name)
        if tool is None:
            raise PromptValidationError(
                f"Parameter descriptions given for unknown tool '{tool_name}'."
            )
        if not tool.accepts_overrides:
            raise PromptValidationError(
                f"Tool '{tool_name}' does not accept overrides."
            )
        known = (
            {info.name for info in fields_of(tool.params_type)}
            if (tool.params_type)
            else set()
        )
        for field_name in fields:
            if field_name not in known:
                raise PromptValidationError(
                    f"Tool '{tool_name}' has no parameter '{field_name}'."
                )
        checked[tool_name] = MappingProxyType(dict(fields))
    return MappingProxyType(checked)


def check_policy_references(prompt: Prompt[Any]) -> None:
    """Every tool a policy names is the prompt's, and every argument an
    approval rule's condition reads is one its tool takes."""
    names = _tool_names(prompt)
    tools = _function_tools(prompt)
    for policy in prompt.declared_policies():
        referenced = getattr(policy, "referenced_tools", None)
        if referenced is None:
            continue
        for tool_name in sorted(referenced()):
            if tool_name not in names:
                raise PromptValidationError(
                    f"Policy '{policy.name}' refers to tool '{tool_name}', which "
                    f"prompt '{prompt.ns}/{prompt.key}' does not have.",
                    placeholder=tool_name,
                )
        arguments = getattr(policy, "referenced_arguments", None)
        if arguments is not None:
            for tool_name, argument_names in sorted(arguments().items()):
                tool = tools.get(tool_name)
                if tool is not None:  # a hosted tool's are the provider's
                    check_condition_arguments(policy.name, tool, argument_names)


def check_tool_choice(prompt: Prompt[Any]) -> None:
    """A tool choice names tools of the prompt."""
    if prompt.tool_choice is None:
        return
    names = _tool_names(prompt)
    for tool_name in prompt.tool_choice.tools:
        if tool_name not in names:
            raise PromptValidationError(
                f"tool_choice names '{tool_name}', which prompt "
                f"'{prompt.ns}/{prompt.key}' does not have.",
                placeholder=tool_name,
            )
