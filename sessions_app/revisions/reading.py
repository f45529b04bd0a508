"""A catalog revision as people read it, built from its frozen data alone.

The page and the API show what the model sees: the prompt rendered with its
defaults (a required parameter without one shown as ``<name>``) at the highest
trust level, so no hosted tool is withheld; the tools as the first request
sends them (credentials masked); the sections, function tools, hosted tools
and policies as named entries, which ``compare.py`` diffs. A revision that can
no longer be built (a handler unregistered since) is still readable: its
entries come from the data, its problems are listed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError

from tooling import assembly, governance, services
from tooling.models import TrustLevel

SECTION_FIELDS = (
    "title",
    "parent",
    "position",
    "enabled",
    "enabled_when_param",
    "planning_strategy",
    "default_params",
    "template",
)
TOOL_FIELDS = (
    "section",
    "handler_key",
    "description",
    "parameters",
    "param_descriptions",
    "examples",
)
HOSTED_FIELDS = ("section", "kind", "description", "min_trust_level", "config")
POLICY_FIELDS = ("kind", "config", "applies_to")


@dataclasses.dataclass(frozen=True)
class Entry:
    """A named part of a revision (a section, a tool, a policy) and its fields."""

    name: str
    fields: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class RevisionView:
    hash: str
    prompt_ref: str
    settings: dict[str, Any]
    parameters: list[dict[str, Any]]
    text: str
    tools_payload: list[Any]
    sections: list[Entry]
    tools: list[Entry]
    hosted_tools: list[Entry]
    policies: list[Entry]
    problems: list[str]

    @property
    def groups(self) -> dict[str, list[Entry]]:
        return {
            "sections": self.sections,
            "tools": self.tools,
            "hosted_tools": self.hosted_tools,
            "policies": self.policies,
        }


def placeholder(name: str) -> str:
    return f"<{name}>"


def view_of(digest: str, data: Mapping[str, Any]) -> RevisionView:
    """The readable view of the revision ``digest`` holding ``data``."""
    prompt = data.get("prompt")
    prompt = dict(prompt) if isinstance(prompt, Mapping) else {}
    settings = {k: v for k, v in prompt.items() if k not in ("namespace", "key")}
    settings["model_hosted_kinds"] = data.get("model_hosted_kinds")
    parameters = [spec.as_dict() for spec in assembly.prompt_parameters(data)]
    values = {p["name"]: placeholder(p["name"]) for p in parameters if p["required"]}
    sections = list(governance.walk_sections(data.get("sections")))
    problems: list[str] = []
    text, payload = "", []
    try:
        preview = services.preview_revision(
            revision=dict(data), params=values, trust_level=TrustLevel.TRUSTED
        )
    except ValidationError as error:
        problems = [f"This revision cannot be rendered: {m}" for m in error.messages]
        text = _outline(sections)
    else:
        text = preview.text
        payload = list(preview.safe_request.get("tools", []))
    return RevisionView(
        hash=digest,
        prompt_ref=f"{prompt.get('namespace', '')}/{prompt.get('key', '')}",
        settings=settings,
        parameters=parameters,
        text=text,
        tools_payload=payload,
        sections=[_section_entry(s, parent, i) for s, parent, i in sections],
        tools=_tools(sections, payload),
        hosted_tools=_hosted(sections),
        policies=[
            Entry(
                rule.name,
                {
                    "kind": rule.kind,
                    "config": rule.config,
                    "applies_to": rule.applies_to,
                },
            )
            for rule in governance.policy_rules(data)
        ],
        problems=problems,
    )


Walked = governance.Walked


def _list(entry: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    return governance.dicts(entry.get(name))


def _outline(sections: list[Walked]) -> str:
    """The sections' titles and templates, unrendered."""
    parts = []
    for section, _, _ in sections:
        parts.append(f"## {section.get('title', '')}\n\n{section.get('template', '')}")
    return "\n\n".join(parts)


def _section_entry(section: Mapping[str, Any], parent: str | None, at: int) -> Entry:
    fields = {name: section.get(name) for name in SECTION_FIELDS}
    fields.update(parent=parent, position=at)
    return Entry(str(section.get("key", "")), fields)


def _tools(sections: list[Walked], payload: list[Any]) -> list[Entry]:
    schemas = {
        tool.get("name"): tool.get("parameters")
        for tool in payload
        if isinstance(tool, Mapping) and tool.get("type") == "function"
    }
    entries = []
    for section, _, _ in sections:
        for tool in _list(section, "tools"):
            name = str(tool.get("name", ""))
            fields = {field: tool.get(field) for field in TOOL_FIELDS}
            fields.update(section=section.get("key"), parameters=schemas.get(name))
            entries.append(Entry(name, fields))
    return entries


def _hosted(sections: list[Walked]) -> list[Entry]:
    entries = []
    for section, _, _ in sections:
        for tool in _list(section, "hosted_tools"):
            fields = {field: tool.get(field) for field in HOSTED_FIELDS}
            fields["section"] = section.get("key")
            entries.append(Entry(str(tool.get("name", "")), fields))
    return entries
