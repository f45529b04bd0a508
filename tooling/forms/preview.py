"""The preview page's parameter form: one field per parameter the prompt
declares (``assembly.prompt_parameters``), typed by its default, required when
it has none, pre-filled with its default.

The page's JSON box holds names the prompt does not declare, or a whole set
pasted: a name in the box wins over its field left as it was shown (its
default), a field changed wins over the box, and a required field is not
required when the box names it. A parameter left at its default is sent with
it, which renders the same as leaving it out; an optional flag of any type
(``enabled_when_param``) left empty is left out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from django import forms

from tooling.assembly import ParameterSpec
from tooling.runtime.text import storable_text
from tooling.storable_json import UNSTORABLE, StorableJSONFormField

from .fields import PlainFloatField, PlainIntegerField

FIELD_PREFIX = "param"
_LONG_TEXT = 60


def _string_field(spec: ParameterSpec) -> forms.Field:
    default = spec.default if isinstance(spec.default, str) else ""
    long = "\n" in default or len(default) > _LONG_TEXT
    # emptied, the field shows what the preview uses instead (found by
    # hostile QA: it came back empty, the default rendered without a word)
    shown = {} if spec.required else {"placeholder": f"empty: {default!r} (default)"}
    widget = (
        forms.Textarea(attrs={"rows": 3, "cols": 60, **shown})
        if long
        else forms.TextInput(attrs={"size": 60, **shown})
    )
    # emptied: None, not "" (``values`` leaves it out: its default applies)
    return forms.CharField(
        required=spec.required, strip=False, widget=widget, empty_value=None
    )


def _boolean_field(spec: ParameterSpec) -> forms.Field:
    return forms.TypedChoiceField(
        choices=[("true", "true"), ("false", "false")],
        coerce=lambda value: value == "true",
        required=True,
    )


def _json_field(spec: ParameterSpec, hint: str) -> forms.Field:
    return StorableJSONFormField(
        required=spec.required,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text=hint,
    )


class ScalarField(forms.CharField):
    """A string, number or boolean: ``42``, ``2.5``, ``true`` are the number
    and the boolean, ``"42"`` (quoted) the text 42, anything else text."""

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        if not isinstance(text, str) or text in self.empty_values:
            return text
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            return text
        if isinstance(parsed, str) and storable_text(parsed)[1]:
            # a JSON escape of a NUL or a lone surrogate ("\ud800")
            raise forms.ValidationError(UNSTORABLE, code="unstorable")
        if isinstance(parsed, bool | int | str) or (
            isinstance(parsed, float) and math.isfinite(parsed)
        ):
            return parsed
        return text


def field_for(spec: ParameterSpec) -> forms.Field:
    """The form field of one parameter, its label the parameter's name."""
    kind = spec.type
    if kind == "string":
        field = _string_field(spec)
    elif kind == "integer":
        field = PlainIntegerField(required=spec.required)
    elif kind == "number":
        field = PlainFloatField(required=spec.required)
    elif kind == "boolean":
        field = _boolean_field(spec)
    elif kind in ("array", "object"):
        field = _json_field(
            spec, f"JSON: {'a list' if kind == 'array' else 'an object'}."
        )
    elif kind == "scalar":  # required, without a default
        field = ScalarField(required=True, strip=False)
    else:  # any: an optional flag
        field = _json_field(spec, 'Any JSON value (true, 3, "text"); empty: not set.')
    field.label = spec.name
    where = ", ".join(spec.sections)
    needed = "required" if spec.required else f"default {json.dumps(spec.default)}"
    about = f"{kind}, {needed}; used by {where}."
    field.help_text = f"{field.help_text} {about}".strip()
    return field


def _initial(spec: ParameterSpec) -> Any:
    if spec.required or spec.type in ("any", "scalar"):
        return None
    if spec.type == "boolean":
        return "true" if spec.default else "false"
    return spec.default


class ParameterForm(forms.Form):
    """The declared parameters of a prompt as typed fields."""

    def __init__(
        self,
        specs: Sequence[ParameterSpec],
        data: Any = None,
        *,
        boxed: Iterable[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(data, prefix=FIELD_PREFIX, **kwargs)
        self.specs = list(specs)
        self.names: dict[str, str] = {}
        boxed = set(boxed)
        for index, spec in enumerate(self.specs):
            name = f"p{index}"
            self.names[name] = spec.name
            self.fields[name] = field_for(spec)
            self.initial[name] = _initial(spec)
            if self.is_bound and (
                self.add_prefix(name) not in self.data or spec.name in boxed
            ):
                # posted without the field (the JSON box alone), or the box
                # names it: the renderer says if it is missing after all
                self.fields[name].required = False

    def values(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The parameters typed (a valid form only): ``(as shown, changed)``,
        the fields left as the page showed them and those changed. A field
        the request did not carry (a post of the JSON box alone) gives
        nothing; one left empty gives nothing (its default applies)."""
        shown: dict[str, Any] = {}
        changed: dict[str, Any] = {}
        for name, parameter in self.names.items():
            if self.add_prefix(name) not in self.data:
                continue
            value = self.cleaned_data.get(name)
            if value is None:
                continue
            (changed if name in self.changed_data else shown)[parameter] = value
        return shown, changed


def boxed_names(data: Any) -> set[str]:
    """The names the page's JSON box holds (none when it is not a JSON
    object: its own field reports that)."""
    try:
        value = json.loads((data or {}).get("params") or "{}")
    except (ValueError, RecursionError, TypeError):
        return set()
    return {str(name) for name in value} if isinstance(value, dict) else set()
