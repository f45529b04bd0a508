"""``Prompt``: a validated tree of sections, rendered into a ``RenderedPrompt``.

``Prompt[Answer](...)`` asks for a structured final answer of dataclass
``Answer`` (as ``output=StructuredOutput.from_dataclass(Answer)`` does).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from .call_limits import check_call_limit_targets
from .errors import PromptRenderError, PromptValidationError
from .hosted.base import HostedTool
from .limits import check_hosted_tool_limits
from .policies import ToolPolicy
from .prompt_checks import (
    check_param_descriptions,
    check_policy_references,
    check_tool_choice,
)

# Re-exported: they lived here before rendered.py held them.
from .rendered import OutputT
from .rendered import PromptResponse as PromptResponse
from .rendered import RenderedPrompt as RenderedPrompt
from .rendered import StructuredOutput as StructuredOutput
from .rendered import ToolChoice as ToolChoice
from .rendered import ToolChoiceMode as ToolChoiceMode
from .rendered import sanitize_schema_name as sanitize_schema_name
from .section_render import SectionNode, render_section, section_params
from .sections import Section
from .serde import dump
from .subscripts import SubscriptAlias, subscript_args, type_name
from .tools import Tool
from .trust import TrustLevel, WithheldTool


class Prompt(Generic[OutputT]):
    """A tree of sections plus prompt-level policies, output and tool choice.

    Construction validates the whole tree: duplicate paths, duplicate tool
    names (function and hosted share one namespace, disabled sections
    included), policies that name tools the prompt does not have, parameter
    description overrides and the tool choice. ``Prompt[Answer]`` sets the
    structured output to dataclass ``Answer``; ``Prompt[str]`` (or no
    subscript) asks for plain text. ``hosted_tool_limits`` caps the calls a
    run may make to each hosted tool (see ``adapters/openai/quotas.py``).
    """

    def __class_getitem__(cls, item: Any) -> Any:
        if isinstance(item, tuple | TypeVar) or item is Any:
            return super().__class_getitem__(item)  # type: ignore[misc]
        return SubscriptAlias(cls, item)

    def __init__(
        self,
        *,
        ns: str,
        key: str,
        name: str | None = None,
        sections: Sequence[Section] = (),
        policies: Sequence[ToolPolicy] = (),
        output: StructuredOutput | None = None,
        tool_choice: ToolChoice | None = None,
        param_descriptions: Mapping[str, Mapping[str, str]] | None = None,
        hosted_tool_limits: Mapping[str, int] | None = None,
    ) -> None:
        if not isinstance(ns, str) or not ns.strip():
            raise PromptValidationError("Prompt namespace must not be empty.")
        if not isinstance(key, str) or not key.strip():
            raise PromptValidationError("Prompt key must not be empty.")
        self.ns = ns.strip()
        self.key = key.strip()
        self.name = (name or self.key).strip()
        self.sections = tuple(sections)
        self.policies = tuple(policies)
        self.output = self._implied_output(output)
        self.tool_choice = tool_choice
        self._nodes = tuple(self._walk(self.sections, (), ()))
        self._tool_sections = self._check_tools()
        self.param_descriptions = check_param_descriptions(
            self, param_descriptions or {}
        )
        check_policy_references(self)
        check_tool_choice(self)
        self.hosted_tool_limits = check_hosted_tool_limits(
            self, {} if hosted_tool_limits is None else hosted_tool_limits
        )
        check_call_limit_targets(self)
        self.param_names = self._collect_param_names()

    def __repr__(self) -> str:
        return f"<Prompt {self.ns}/{self.key}>"

    def _implied_output(
        self, output: StructuredOutput | None
    ) -> StructuredOutput | None:
        """``output`` as the subscript (``Prompt[Answer]``) declares it; an
        explicit output of another type is an error."""
        arguments = subscript_args(self)
        if not arguments:
            return output
        (implied,) = arguments
        label = f"Prompt[{type_name(implied)}]"
        if implied in (None, type(None), str):
            if output is not None:
                raise PromptValidationError(
                    f"{label} asks for plain text but output= gives a structured "
                    "output.",
                    placeholder="output",
                )
            return None
        if not (isinstance(implied, type) and dataclasses.is_dataclass(implied)):
            raise PromptValidationError(
                f"{label}: the output type must be a dataclass (or str for plain "
                "text).",
                placeholder="output",
                dataclass_type=implied,
            )
        if output is None:
            return StructuredOutput.from_dataclass(implied)
        if output.output_type is not implied:
            raise PromptValidationError(
                f"{label} conflicts with output= for "
                f"{type_name(output.output_type) if output.output_type else 'a schema'}"
                ".",
                placeholder="output",
                dataclass_type=implied,
            )
        return output

    def declared_tools(self) -> tuple[Tool[Any, Any], ...]:
        """Every function tool of the section tree, in declaration order,
        whether or not its section is enabled."""
        return tuple(tool for node in self._nodes for tool in node.section.tools())

    def declared_hosted_tools(self) -> tuple[HostedTool[Any], ...]:
        """Every hosted tool of the section tree, in declaration order, whether
        or not its section is enabled (what a run could ever be offered)."""
        return tuple(
            hosted for node in self._nodes for hosted in node.section.hosted_tools()
        )

    def declared_policies(self) -> tuple[ToolPolicy, ...]:
        """The prompt's own policies, then every section's, in declaration
        order, whether or not its section is enabled."""
        return (
            *self.policies,
            *(policy for node in self._nodes for policy in node.section.policies),
        )

    def _walk(
        self,
        sections: Sequence[Section],
        parent_path: tuple[str, ...],
        ancestors: tuple[Section, ...],
    ) -> Iterator[SectionNode]:
        seen: set[str] = set()
        for section in sections:
            if not isinstance(section, Section):
                raise PromptValidationError(
                    "Prompt sections must be Section instances."
                )
            path = (*parent_path, section.key)
            if section.key in seen:
                raise PromptValidationError(
                    f"Duplicate section key '{'.'.join(path)}'.", section_path=path
                )
            seen.add(section.key)
            yield SectionNode(section, path, len(parent_path), ancestors)
            yield from self._walk(section.children, path, (*ancestors, section))

    def _check_tools(self) -> dict[str, SectionNode]:
        owners: dict[str, SectionNode] = {}
        for node in self._nodes:
            names = [tool.name for tool in node.section.tools()]
            names += [hosted.name for hosted in node.section.hosted_tools()]
            for tool_name in names:
                if tool_name in owners:
                    first = ".".join(owners[tool_name].path)
                    raise PromptValidationError(
                        f"Duplicate tool name '{tool_name}' in prompt "
                        f"'{self.ns}/{self.key}': sections '{first}' and "
                        f"'{'.'.join(node.path)}' both declare it.",
                        section_path=node.path,
                        placeholder=tool_name,
                    )
                owners[tool_name] = node
        return owners

    def _collect_param_names(self) -> frozenset[str]:
        names: set[str] = set()
        for node in self._nodes:
            names.update(node.section.param_names)
        return frozenset(names)

    def policies_for_tool(self, name: str) -> tuple[ToolPolicy, ...]:
        """Policies of the declaring section and its ancestors, then the
        prompt's own; each policy once."""
        node = self._tool_sections.get(name)
        chain: list[ToolPolicy] = []
        if node is not None:
            for section in (*node.ancestors, node.section):
                chain.extend(section.policies)
        chain.extend(self.policies)
        unique: list[ToolPolicy] = []
        for policy in chain:
            if not any(policy is seen for seen in unique):
                unique.append(policy)
        return tuple(unique)

    def render(
        self,
        *bound: Any,
        values: Mapping[str, Any] | None = None,
        session: Any = None,
        trust_level: TrustLevel | str = TrustLevel.STANDARD,
    ) -> RenderedPrompt:
        """Render with dataclass params (``bound``) and/or a flat mapping.

        ``values`` maps parameter names to values; every key must be a
        parameter of some section. Hosted tools that need a higher
        ``trust_level`` are left out and listed in ``withheld_hosted_tools``;
        a ``tool_choice`` naming one of them is an error.
        """
        trust = TrustLevel.parse(trust_level)
        by_type = self._bind(bound)
        values = dict(values or {})
        unknown = sorted(set(values) - self.param_names)
        if unknown:
            accepted = ", ".join(sorted(self.param_names)) or "none"
            # At most ten names, each cut to 100 characters: a request may
            # hold thousands of keys, each up to its size limit.
            named = ", ".join(repr(name[:100]) for name in unknown[:10])
            more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
            raise PromptRenderError(
                f"Unknown parameter(s) {named}{more}; this prompt accepts: {accepted}.",
                placeholder=unknown[0],
            )
        blocks: list[str] = []
        tools: list[Tool[Any, Any]] = []
        hosted: list[HostedTool[Any]] = []
        withheld: list[WithheldTool] = []
        used: dict[str, Any] = {}
        policies: dict[str, tuple[ToolPolicy, ...]] = {}
        counters: list[int] = []
        hidden_depth: int | None = None
        for node in self._nodes:
            if hidden_depth is not None:
                if node.depth > hidden_depth:
                    continue
                hidden_depth = None
            section = node.section
            params = section_params(section, node.path, by_type, values)
            if not section.is_enabled(params, session=session):
                hidden_depth = node.depth
                continue
            del counters[node.depth + 1 :]
            while len(counters) <= node.depth:
                counters.append(0)
            counters[node.depth] += 1
            number = ".".join(str(c) for c in counters[: node.depth + 1])
            text = render_section(node, params, number)
            if text.strip():
                blocks.append(text)
            elif not section.children:
                counters[node.depth] -= 1
            if params is not None:
                used.update(dump(params))
            section_tools = section.tools()
            tools.extend(section_tools)
            for hosted_tool in section.hosted_tools():
                if hosted_tool.min_trust > trust:
                    withheld.append(
                        WithheldTool(
                            name=hosted_tool.name,
                            kind=hosted_tool.kind,
                            min_trust=hosted_tool.min_trust,
                            trust_level=trust,
                        )
                    )
                else:
                    hosted.append(hosted_tool)
            for tool_name in [t.name for t in section_tools]:
                policies[tool_name] = self.policies_for_tool(tool_name)
        self._check_choice_not_withheld(withheld)
        return RenderedPrompt(
            prompt_name=self.name,
            text="\n\n".join(blocks),
            tools=tuple(tools),
            hosted_tools=tuple(hosted),
            tool_param_descriptions=self.param_descriptions,
            policies_by_tool=MappingProxyType(policies),
            output=self.output,
            tool_choice=self.tool_choice,
            params=MappingProxyType(used),
            trust_level=trust,
            withheld_hosted_tools=tuple(withheld),
            hosted_tool_limits=self.hosted_tool_limits,
        )

    def _check_choice_not_withheld(self, withheld: Sequence[WithheldTool]) -> None:
        if self.tool_choice is None:
            return
        for tool in withheld:
            if tool.name in self.tool_choice.tools:
                raise PromptRenderError(
                    f"tool_choice names '{tool.name}', which is withheld: "
                    f"{tool.reason}",
                    placeholder=tool.name,
                )

    def _bind(self, bound: Sequence[Any]) -> dict[type[Any], Any]:
        by_type: dict[type[Any], Any] = {}
        section_types = {n.section.params_type for n in self._nodes}
        for value in bound:
            kind = type(value)
            if not dataclasses.is_dataclass(value) or isinstance(value, type):
                raise PromptRenderError("Prompt params must be dataclass instances.")
            if kind in by_type:
                raise PromptRenderError(
                    f"Duplicate params type supplied to prompt: {kind.__name__}."
                )
            if kind not in section_types:
                raise PromptRenderError(
                    f"Unexpected params type supplied to prompt: {kind.__name__}."
                )
            by_type[kind] = value
        return by_type
