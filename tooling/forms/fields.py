"""Form fields and widgets the catalog forms share: the country picker, the
model name input with its suggestions, a decimal written plainly, and a
three-way choice (unset, yes, no)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from tooling.runtime.hosted.countries import COUNTRY_NAMES, country_code, country_label
from tooling.runtime.number_text import PLAIN_DECIMAL, plain_decimal, whole_number


def widget_id(name: str, attrs: dict[str, Any] | None) -> str:
    """The id of what the widget named ``name`` renders: the one ``attrs``
    give, or Django's ``id_<name>``."""
    return (attrs or {}).get("id") or f"id_{name}"


def _sort_key(label: str) -> str:
    # "Åland Islands" among the A's, not after "Zimbabwe"
    folded = unicodedata.normalize("NFKD", label)
    return "".join(c for c in folded if not unicodedata.combining(c)).casefold()


def country_choices(blank: str | None = "---------") -> list[tuple[str, str]]:
    """Every ISO 3166-1 country as ``(code, "Name (CODE)")``, by name."""
    countries = sorted(
        ((code, country_label(code)) for code in COUNTRY_NAMES),
        key=lambda choice: _sort_key(choice[1]),
    )
    return [("", blank), *countries] if blank is not None else countries


class CountryField(forms.ChoiceField):
    """An ISO 3166-1 alpha-2 code, picked from the countries by name.

    A posted code or exact name (letter case aside: ``de``, ``Germany``,
    ``DEU``, ``Federal Republic of Germany``) is taken as its code; anything
    else is refused, naming what was given: never cut to two letters.
    """

    default_error_messages = {
        "invalid_choice": "'%(value)s' is not a country: pick one from the list "
        "(a country's ISO 3166-1 name or alpha-2 code, e.g. 'Germany' or 'DE').",
    }

    def __init__(self, *, blank: str | None = "---------", **kwargs: Any) -> None:
        super().__init__(choices=country_choices(blank), **kwargs)

    def to_python(self, value: Any) -> str:
        text = super().to_python(value).strip()
        if not text:
            return ""
        code = country_code(text)
        if code is None:
            raise ValidationError(
                self.error_messages["invalid_choice"],
                code="invalid_choice",
                params={"value": text[:100]},
            )
        return code

    def prepare_value(self, value: Any) -> Any:
        # a stored "de" or "Germany" shows as the country it names
        if isinstance(value, str) and value:
            return country_code(value) or value
        return value


class DatalistInput(forms.TextInput):
    """A text input that suggests ``suggestions`` (an HTML ``datalist``) and
    still takes anything typed."""

    def __init__(
        self, suggestions: Iterable[str] = (), attrs: dict[str, Any] | None = None
    ) -> None:
        super().__init__(attrs)
        self.suggestions = list(suggestions)

    def render(
        self,
        name: str,
        value: Any,
        attrs: dict[str, Any] | None = None,
        renderer: Any = None,
    ) -> SafeString:
        list_id = f"{widget_id(name, attrs)}_suggestions"
        attrs = {**(attrs or {}), "list": list_id}
        field = super().render(name, value, attrs, renderer)
        options = format_html_join(
            "", '<option value="{}"></option>', ((s,) for s in self.suggestions)
        )
        return format_html('{}<datalist id="{}">{}</datalist>', field, list_id, options)


class PlainDecimalField(forms.DecimalField):
    """A decimal written plainly (``tooling.runtime.number_text``): Django's
    ``DecimalField`` also reads ``1_000``, `` 5``, ``+5``, ``1e3`` and any
    script's digits."""

    default_error_messages = {"invalid": f"Enter a number: {PLAIN_DECIMAL}."}

    def to_python(self, value: Any) -> Any:
        if value in self.empty_values:
            return None
        if plain_decimal(str(value)) is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


class PlainIntegerField(forms.IntegerField):
    """A whole number written in ASCII digits, a ``-`` before a negative one:
    Django's ``IntegerField`` also reads full-width and Arabic-Indic digits
    (U+FF11, U+0663), ``1_000`` and ``+5``, which the money fields beside it
    refuse."""

    default_error_messages = {"invalid": "Enter a whole number: digits 0-9."}

    def to_python(self, value: Any) -> Any:
        if value in self.empty_values:
            return None
        text = str(value).strip()
        if whole_number(text.removeprefix("-")) is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(text)


class PlainFloatField(forms.FloatField):
    """A number written plainly (``tooling.runtime.number_text``), a ``-``
    before a negative one: Django's ``FloatField`` also reads other scripts'
    digits, ``1_0``, ``+5`` and ``1e3``."""

    default_error_messages = {"invalid": f"Enter a number: {PLAIN_DECIMAL}."}

    def to_python(self, value: Any) -> Any:
        if value in self.empty_values:
            return None
        text = str(value).strip()
        if plain_decimal(text.removeprefix("-")) is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(text)


#: A model admin's ``formfield_overrides``: amounts written plainly, as the API
#: and the filters take them (Django's ``DecimalField`` also reads "1_000" and
#: any script's digits).
PLAIN_AMOUNTS: Mapping[type[models.Field[Any, Any]], Mapping[str, Any]] = {
    models.DecimalField: {"form_class": PlainDecimalField}
}


class ThreeWaySelect(forms.NullBooleanSelect):
    """Posts what was sent: a value that is none of the choices is refused
    by the field, not read as "the site's default" (Django's reads it so)."""

    def value_from_datadict(self, data: Any, files: Any, name: str) -> Any:
        return data.get(name)


class ThreeWayField(forms.NullBooleanField):
    """Unset, yes or no; anything else is an error."""

    # django-stubs give NullBooleanField BooleanField's bool: None is its point
    def to_python(self, value: Any) -> bool | None:  # type: ignore[override]
        if value in (None, "", "unknown"):
            return None
        if value in (True, "True", "true", "2"):
            return True
        if value in (False, "False", "false", "3"):
            return False
        raise ValidationError(
            "Choose the site's default, yes or no.", code="invalid_choice"
        )

    def validate(self, value: Any) -> None:
        pass
