"""The function tool form's parameter descriptions editor: a text box per
parameter of the chosen handler for its description override (its examples
editor: ``example_editors``).

It still takes JSON posted under the field's own name (a script, the form
before the editor), and shows a value it cannot show as boxes as JSON in one
text area, said so: nothing saved is lost or rewritten unseen.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django import forms
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from tooling.handlers import registry
from tooling.storable_json import (
    StorableJSONFormField,
)

from .editors import (
    EditorJSONField,
    changed,
    one_line,
    raw_json_area,
    validate_no_bidi,
)
from .fields import widget_id
from .handler_params import handler_parameters
from .policy_configs import same


class PostedOverrides(dict[str, str]):
    """The description boxes of the chosen handler as posted."""


def overrides_shown(value: Any) -> bool:
    """Whether boxes can show ``value``: an object of one-line texts whose
    keys a box's name can carry back (not empty, no ``:``)."""
    return isinstance(value, Mapping) and all(
        isinstance(key, str)
        and key
        and ":" not in key
        and isinstance(text, str)
        and one_line(text)
        for key, text in value.items()
    )


class ParamDescriptionsWidget(forms.Widget):
    """A box per parameter of each handler, only the chosen handler's shown
    (``handler_params.js`` follows the select; without JavaScript the saved
    handler's). Boxes are named ``<name>:<handler>:<parameter>``."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs)
        self.selected = ""
        self.handler_name = "handler_key"

    def value_from_datadict(self, data: Any, files: Any, name: str) -> Any:
        if name in data:
            return data.get(name)  # JSON text
        handler = data.get(self.handler_name)
        posted = PostedOverrides()
        if not isinstance(handler, str):
            return posted
        prefix = f"{name}:{handler}:"
        for key in data:
            if isinstance(key, str) and key.startswith(prefix):
                parameter = key[len(prefix) :]
                text = data.get(key)
                if ":" not in parameter and parameter:
                    posted[parameter] = text if isinstance(text, str) else ""
        return posted

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return name not in data and f"{name}-editor" not in data

    def _group(
        self, name: str, base_id: str, key: str, overrides: Mapping[str, str]
    ) -> SafeString:
        tool = registry.get(key)
        parameters = handler_parameters(tool)
        known = {parameter.name for parameter in parameters}
        chosen = key == self.selected
        # Another handler's boxes show the descriptions of the parameters it
        # shares with the chosen one: picking it keeps them, as the JSON did.
        shown = tool.accepts_overrides or chosen
        rows = [
            (p.name, p.type, p.description, overrides.get(p.name, "") if shown else "")
            for p in parameters
        ]
        stale = {k: v for k, v in overrides.items() if k not in known} if chosen else {}
        rows += [
            (name, "not a parameter of this handler: clear it", "", text)
            for name, text in stale.items()
        ]
        if not tool.accepts_overrides and not (chosen and overrides):
            body = format_html(
                "<p>{}</p>", f"Handler '{key}' does not accept overrides."
            )
        elif not rows:
            body = format_html("<p>{}</p>", "It takes no parameters.")
        else:
            body = format_html(
                '<table class="param-overrides-table"><thead><tr><th>Parameter</th>'
                "<th>Type</th><th>Description the model reads (empty: the "
                "handler's)</th></tr></thead><tbody>{}</tbody></table>",
                format_html_join(
                    "",
                    '<tr><td><label for="{}"><code>{}</code></label></td><td>{}</td>'
                    '<td><input type="text" name="{}" id="{}" value="{}" '
                    'placeholder="{}" class="vTextField param-override"></td></tr>',
                    (
                        (
                            f"{base_id}-{key}-{parameter}",
                            parameter,
                            type_label,
                            f"{name}:{key}:{parameter}",
                            f"{base_id}-{key}-{parameter}",
                            text,
                            description,
                        )
                        for parameter, type_label, description, text in rows
                    ),
                ),
            )
        return format_html(
            '<div class="param-overrides" data-handler="{}"{}>{}</div>',
            key,
            "" if key == self.selected else " hidden",
            body,
        )

    def render(
        self,
        name: str,
        value: Any,
        attrs: dict[str, Any] | None = None,
        renderer: Any = None,
    ) -> SafeString:
        base_id = widget_id(name, attrs)
        if isinstance(value, str) or not overrides_shown(value or {}):
            text = value if isinstance(value, str) else json.dumps(value, indent=2)
            return raw_json_area(
                name,
                text,
                base_id,
                "These descriptions cannot be shown as a box per parameter: they "
                'are edited as JSON, {"parameter": "description"}.',
                rows=8,
            )
        groups = format_html_join(
            "",
            "{}",
            ((self._group(name, base_id, key, value),) for key in registry),
        )
        none = format_html(
            '<p class="param-overrides" data-handler=""{}>{}</p>',
            "" if self.selected not in registry else " hidden",
            "Pick a handler to describe its parameters.",
        )
        return format_html(
            '{}{}<input type="hidden" name="{}-editor" value="boxes">',
            none,
            groups,
            name,
        )


class ParamDescriptionsField(EditorJSONField):
    """``{"parameter": "description"}`` from the chosen handler's boxes (a
    blank box: the handler's own description), or from JSON text."""

    widget = ParamDescriptionsWidget  # type: ignore[assignment]
    default_validators = [*StorableJSONFormField.default_validators, validate_no_bidi]
    posted = PostedOverrides

    def to_python(self, value: Any) -> Any:
        if isinstance(value, PostedOverrides):
            return {key: text.strip() for key, text in value.items() if text.strip()}
        return super().to_python(value)

    def has_changed(self, initial: Any, data: Any) -> bool:
        return changed(self, initial, data, empty={}, same=same_overrides)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, Mapping) and overrides_shown(value):
            return value
        if value is None:
            return {}
        return super().prepare_value(value)


def same_overrides(before: Any, after: Any) -> bool:
    """Whether two descriptions say the same (the boxes strip what is typed:
    surrounding spaces aside)."""
    if same(before, after):
        return True
    if not overrides_shown(before) or not overrides_shown(after):
        return False
    return same(
        {key: text.strip() for key, text in before.items()},
        {key: text.strip() for key, text in after.items()},
    )


# -- examples -------------------------------------------------------------------
