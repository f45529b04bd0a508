"""What a registered handler takes, for the tool form: each parameter's name,
type, description and whether the model must give it, from the handler's
params dataclass (the schema the model sees, ``dataclass_schema``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from tooling.handlers import registry
from tooling.runtime import Tool
from tooling.runtime.schema import dataclass_schema
from tooling.runtime.serde import fields_of


@dataclasses.dataclass(frozen=True, slots=True)
class HandlerParameter:
    name: str
    type: str
    description: str
    required: bool


def _type_label(schema: Mapping[str, Any]) -> str:
    """``string``, ``integer or null``, ``list of string``, ``one of: a, b``."""
    if "enum" in schema:
        values = [value for value in schema["enum"] if value is not None]
        return "one of: " + ", ".join(str(value) for value in values)
    if "anyOf" in schema:
        options = [o for o in schema["anyOf"] if o.get("type") != "null"]
        return " or ".join(_type_label(option) for option in options) or "any"
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else " or ".join(kinds)
    if kind == "array":
        return f"list of {_type_label(schema.get('items') or {})}"
    if kind == "object" and "properties" not in schema:
        return "object"
    return str(kind or "any")


def handler_parameters(tool: Tool[Any, Any]) -> tuple[HandlerParameter, ...]:
    """The parameters ``tool``'s handler takes, in declaration order."""
    if tool.params_type is None:
        return ()
    properties = dataclass_schema(tool.params_type)["properties"]
    return tuple(
        HandlerParameter(
            name=info.name,
            type=_type_label(properties.get(info.name, {})),
            description=info.description or "",
            required=info.required,
        )
        for info in fields_of(tool.params_type)
    )


def _table(key: str) -> SafeString:
    parameters = handler_parameters(registry.get(key))
    if not parameters:
        return format_html("<p>{}</p>", "It takes no parameters.")
    rows = format_html_join(
        "",
        "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
        (
            (p.name, p.type, "required" if p.required else "optional", p.description)
            for p in parameters
        ),
    )
    return format_html(
        '<table class="handler-parameters"><thead><tr><th>Parameter</th>'
        "<th>Type</th><th>Given</th><th>Description</th></tr></thead>"
        "<tbody>{}</tbody></table>",
        rows,
    )


def handler_parameters_panel(selected: str) -> SafeString:
    """One table per registered handler, only ``selected``'s shown
    (``handler_params.js`` shows the one picked in the form)."""
    panels = format_html_join(
        "",
        '<div class="handler-params" data-handler="{}"{}>{}</div>',
        ((key, "" if key == selected else " hidden", _table(key)) for key in registry),
    )
    none = format_html(
        '<p class="handler-params" data-handler=""{}>{}</p>',
        "" if selected not in registry else " hidden",
        "Pick a handler to see the parameters it takes.",
    )
    return format_html("{}{}", none, panels)
