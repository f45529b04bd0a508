"""What governs a run of a prompt, read from its frozen revision: the model and
the hosted kinds it takes, the limits (turns, tokens, time, spend, hosted
calls), the policies and approval rules with the tools they apply to, and the
tools offered (with whether the prompt's "Tools:" list shows them: only tools
with examples are listed there; every tool is sent to the model).

The preview page shows it before anything runs; the revision pages read the
policies from here too (one reading of where a policy applies).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from django.conf import settings

from tooling.models import PolicyDefinition
from tooling.runtime import RenderedPrompt

APPROVAL = PolicyDefinition.Kind.APPROVAL.value


def run_deadline(template_seconds: int | None) -> int:
    """A run's time limit: the template's deadline, capped by
    ``WINK_RUN_MAX_SECONDS`` (which is also the limit of a template without)."""
    cap = int(settings.WINK_RUN_MAX_SECONDS)
    return min(template_seconds or cap, cap)


Walked = tuple[Mapping[str, Any], str | None, int]


def walk_sections(entries: Any, parent: str | None = None) -> Iterator[Walked]:
    """Each section of a revision with its parent's key and its position,
    depth first."""
    for position, entry in enumerate(entries if isinstance(entries, list) else []):
        if isinstance(entry, Mapping):
            yield entry, parent, position
            yield from walk_sections(entry.get("children"), str(entry.get("key", "")))


def dicts(items: Any) -> list[Mapping[str, Any]]:
    return (
        [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []
    )


@dataclasses.dataclass(frozen=True)
class PolicyRule:
    name: str
    kind: str
    config: Any
    #: ``prompt`` or ``section <key>``, each place it is attached
    applies_to: list[str]
    #: the function tools it governs (those of its sections; every tool of
    #: the prompt for a prompt-wide policy)
    tools: list[str]

    @property
    def is_approval(self) -> bool:
        return self.kind == APPROVAL

    @property
    def config_json(self) -> str:
        return json.dumps(self.config, indent=2, ensure_ascii=False, default=str)


@dataclasses.dataclass(frozen=True)
class OfferedTool:
    name: str
    kind: str  # "function" or the hosted kind
    section: str
    description: str
    examples: int
    #: a hosted kind the model's capability row leaves out (``None``: unknown)
    supported: bool | None = None
    min_trust_level: str = ""


@dataclasses.dataclass(frozen=True)
class Governance:
    model: str
    #: the hosted kinds the model takes (``None``: no capability row)
    model_hosted_kinds: list[str] | None
    max_turns: int | None
    max_total_tokens: int | None
    deadline_seconds: int
    deadline_is_default: bool
    max_cost_per_session: Decimal | None
    hosted_tool_limits: dict[str, Any]
    tool_choice: str
    policies: list[PolicyRule]
    tools: list[OfferedTool]

    @property
    def approval_rules(self) -> list[PolicyRule]:
        return [policy for policy in self.policies if policy.is_approval]

    @property
    def other_policies(self) -> list[PolicyRule]:
        return [policy for policy in self.policies if not policy.is_approval]

    @property
    def unlisted_tools(self) -> list[OfferedTool]:
        """Function tools the prompt's "Tools:" list leaves out (no examples)."""
        return [t for t in self.tools if t.kind == "function" and not t.examples]


def policy_rules(data: Mapping[str, Any]) -> list[PolicyRule]:
    """Each policy of a revision once, with where it is attached and the
    function tools it governs."""
    sections = list(walk_sections(data.get("sections")))
    every_tool = [
        str(tool.get("name", ""))
        for section, _, _ in sections
        for tool in dicts(section.get("tools"))
    ]
    found: dict[str, PolicyRule] = {}
    scoped = [("prompt", policy, every_tool) for policy in dicts(data.get("policies"))]
    for section, _, _ in sections:
        tools = [str(tool.get("name", "")) for tool in dicts(section.get("tools"))]
        scope = f"section {section.get('key')}"
        scoped += [(scope, policy, tools) for policy in dicts(section.get("policies"))]
    for scope, policy, tools in scoped:
        name = str(policy.get("name", ""))
        named = _ruled_tools(policy)
        if named is not None:  # an approval rule names the tools it asks about
            tools = [tool for tool in tools if tool in named]
        rule = found.setdefault(
            name,
            PolicyRule(
                name=name,
                kind=str(policy.get("kind", "")),
                config=policy.get("config"),
                applies_to=[],
                tools=[],
            ),
        )
        rule.applies_to.append(scope)
        rule.tools.extend(tool for tool in tools if tool not in rule.tools)
    return list(found.values())


def _ruled_tools(policy: Mapping[str, Any]) -> set[str] | None:
    """The tools an approval policy's rules name (``None``: not an approval
    policy, or a rule without a tool, which asks about every tool)."""
    config = policy.get("config")
    if policy.get("kind") != APPROVAL or not isinstance(config, Mapping):
        return None
    rules = dicts(config.get("rules"))
    names = {rule.get("tool") for rule in rules}
    if not rules or not all(isinstance(name, str) and name for name in names):
        return None
    return {str(name) for name in names}


def governance_of(
    data: Mapping[str, Any],
    *,
    rendered: RenderedPrompt | None = None,
    max_cost_per_session: Decimal | None = None,
) -> Governance:
    """What governs a run of the revision ``data`` (``max_cost_per_session``:
    the template's, which the revision does not hold). A function tool's
    description and examples are its handler's unless the catalog sets them:
    ``rendered`` (the prompt built from ``data``) says what the model gets."""
    built = {tool.name: tool for tool in rendered.tools} if rendered else {}
    prompt = data.get("prompt")
    prompt = prompt if isinstance(prompt, Mapping) else {}
    kinds = data.get("model_hosted_kinds")
    kinds = [str(kind) for kind in kinds] if isinstance(kinds, list) else None
    template_deadline = prompt.get("deadline_seconds")
    tools: list[OfferedTool] = []
    for section, _, _ in walk_sections(data.get("sections")):
        key = str(section.get("key", ""))
        for tool in dicts(section.get("tools")):
            name = str(tool.get("name", ""))
            examples = tool.get("examples")
            count = len(examples) if isinstance(examples, list) else 0
            description = str(tool.get("description") or "")
            runtime = built.get(name)
            if runtime is not None:
                count, description = len(runtime.examples), runtime.description
            tools.append(
                OfferedTool(
                    name=name,
                    kind="function",
                    section=key,
                    description=description,
                    examples=count,
                )
            )
        for hosted in dicts(section.get("hosted_tools")):
            kind = str(hosted.get("kind", ""))
            tools.append(
                OfferedTool(
                    name=str(hosted.get("name", "")),
                    kind=kind,
                    section=key,
                    description=str(hosted.get("description") or ""),
                    examples=0,
                    supported=None if kinds is None else kind in kinds,
                    min_trust_level=str(hosted.get("min_trust_level") or ""),
                )
            )
    limits = prompt.get("hosted_tool_limits")
    return Governance(
        model=str(prompt.get("model", "")),
        model_hosted_kinds=kinds,
        max_turns=prompt.get("max_turns"),
        max_total_tokens=prompt.get("max_total_tokens"),
        deadline_seconds=run_deadline(template_deadline),
        deadline_is_default=not template_deadline,
        max_cost_per_session=max_cost_per_session,
        hosted_tool_limits=dict(limits) if isinstance(limits, Mapping) else {},
        tool_choice=str(prompt.get("tool_choice") or "auto"),
        policies=policy_rules(data),
        tools=tools,
    )
