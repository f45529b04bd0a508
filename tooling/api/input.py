"""Strict API input: what a client sends is checked where it enters.

- ``StrictSerializer``: unknown top-level fields are refused by name (an action
  taking no input reads its body with ``EmptyBodySerializer``); every
  string anywhere in the body (keys included) must be storable text (no NUL
  byte, no lone surrogate); a value over ``WINK_API_MAX_PARAM_BYTES`` (JSON
  encoded, ``tooling.param_size``) is a 413 naming it.
- ``StrictFilterSet``: every query value must be storable text; datetimes must
  have an offset PostgreSQL accepts (within ±15:59) and are compared in UTC;
  numbers (``PlainNumberFilter``) are plain decimals of ASCII digits.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import django_filters
from django import forms
from django_filters import fields as filter_fields
from rest_framework import serializers

from tooling.api.errors import RequestTooLarge
from tooling.forms.fields import PlainDecimalField
from tooling.param_size import too_large
from tooling.runtime.text import storable, storable_text
from tooling.storable_json import (
    MAX_DEPTH,
    TOO_DEEP,
    UNSTORABLE,
    depth,
    unstorable_paths,
)

MAX_OFFSET = dt.timedelta(hours=15, minutes=59)

# A body's unknown fields named in its 400: at most this many, each name at
# most this long (a body of 20,000 keys is not echoed back).
UNKNOWN_NAMED = 20
UNKNOWN_NAME_CHARS = 100


def refuse_too_large(members: Any, name: str) -> None:
    """A 413 naming ``name`` and the first of ``members`` (a run's parameters,
    when a JSON object) over ``WINK_API_MAX_PARAM_BYTES`` (``too_large``)."""
    if not isinstance(members, Mapping):
        return
    message = too_large(members)
    if message is not None:
        raise RequestTooLarge(f"{name}.{message}")


class StrictSerializer(serializers.Serializer[Any]):
    """A request body serializer that refuses what it does not know."""

    #: Whether the schema says ``additionalProperties: false``: a body only
    #: read, yes; one that is also a response's shape (its fields may grow),
    #: no (``tooling.api.schema``).
    closed_schema = True

    def run_validation(self, data: Any = serializers.empty) -> Any:
        if data is None and self.parent is None:  # a body of JSON null
            # (DRF: "No data provided"; a nested one may allow null)
            raise serializers.ValidationError(
                {"non_field_errors": ["Expected a JSON object, not null."]}
            )
        return super().run_validation(data)

    # Fields whose values (a JSON object's members) are each size-limited.
    sized_fields: tuple[str, ...] = ()

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise serializers.ValidationError(
                {"non_field_errors": ["Expected a JSON object."]}
            )
        unknown = sorted(str(name) for name in set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(self._unknown(unknown))
        self._refuse_non_text(data)
        if depth(data) > MAX_DEPTH:
            raise serializers.ValidationError({"non_field_errors": [TOO_DEEP]})
        bad = unstorable_paths(dict(data))
        if bad:
            raise serializers.ValidationError(
                {path or "non_field_errors": [UNSTORABLE] for path in bad}
            )
        self.refuse_too_large(data)
        return super().to_internal_value(data)

    def _unknown(self, names: list[str]) -> dict[str, list[str]]:
        """The 400's body for fields this request does not take: each named
        (the first ``UNKNOWN_NAMED``; a name as it can be rendered, a NUL or a
        lone surrogate as U+FFFD, shortened past ``UNKNOWN_NAME_CHARS``)."""
        known = ", ".join(sorted(self.fields))
        refusal = (
            f"Unknown field; expected: {known}."
            if known
            else "Unknown field; this request takes none (send {} or no body)."
        )
        errors: dict[str, list[str]] = {}
        for name in names[:UNKNOWN_NAMED]:
            shown = storable_text(name)[0]
            if len(shown) > UNKNOWN_NAME_CHARS:
                shown = shown[:UNKNOWN_NAME_CHARS] + "\u2026"
            # two names shown alike (or shown as a key of ours) each keep a key
            key, again = shown, 1
            while key in errors or key == "non_field_errors":
                again += 1
                key = f"{shown} ({again})"
            errors[key] = [refusal]
        if len(names) > UNKNOWN_NAMED:
            more = len(names) - UNKNOWN_NAMED
            errors["non_field_errors"] = [f"And {more} more unknown field(s)."]
        return errors

    def _refuse_non_text(self, data: Mapping[Any, Any]) -> None:
        """A number or a boolean where text goes (DRF's ``CharField`` writes
        ``777`` as ``"777"``): a 400 naming the field. (A read-only field,
        ``id`` or ``created_at`` sent back, is ignored, as DRF does: a client
        may post what it read.)"""
        errors = {
            str(name): ["Not a valid string."]
            for name, value in data.items()
            if isinstance(field := self.fields.get(name), serializers.CharField)
            and not field.read_only
            and value is not None
            and not isinstance(value, str)
        }
        if errors:
            raise serializers.ValidationError(errors)

    def refuse_too_large(self, data: Mapping[Any, Any]) -> None:
        """A 413 for a member of a ``sized_fields`` field over the limit (a
        serializer with nested parameters checks those too)."""
        for field in self.sized_fields:
            refuse_too_large(data.get(field), field)


class EmptyBodySerializer(StrictSerializer):
    """The body of an action that takes no input (``cancel/``, ``grade/``): none,
    or ``{}``. Read as any other body, so malformed JSON is a 400, another
    media type a 415 and a field a 400 naming it: a client's mistaken body is
    refused, not ignored."""


#: The schema of such a body, for ``extend_schema(request=...)`` (an empty
#: serializer documents no body at all, and ``{}`` is accepted too).
EMPTY_BODY = {
    "application/json": {
        "type": "object",
        "additionalProperties": False,
        "maxProperties": 0,
        "description": "No body, or an empty object.",
    }
}


def no_body(data: Any) -> None:
    """Refuse a request body (``request.data``) other than none or ``{}``."""
    if data is None:  # a JSON null (DRF would say "No data provided.")
        raise serializers.ValidationError(
            "This action takes no input: send no body, or {}."
        )
    EmptyBodySerializer(data=data).is_valid(raise_exception=True)


class JsonBooleanField(serializers.BooleanField):
    """A body's ``true`` or ``false``, nothing else: DRF's ``BooleanField``
    also reads ``"yes"``, ``"on"``, ``1`` and ``"0"``."""

    def to_internal_value(self, data: Any) -> bool:
        if data is True or data is False:
            return data
        self.fail("invalid", input=data)
        raise AssertionError  # (``fail`` raises)


class StrictBooleanField(forms.Field):
    """``true``/``false`` (or ``1``/``0``); anything else is an error, not
    "no filter" as django-filter's boolean widgets make it."""

    widget = forms.TextInput

    def to_python(self, value: Any) -> bool | None:
        if value in (None, ""):
            return None
        text = str(value).strip().lower()
        if text in ("true", "1"):
            return True
        if text in ("false", "0"):
            return False
        raise forms.ValidationError("Enter true or false.", code="invalid")


class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField


class PlainNumberFilter(django_filters.NumberFilter):
    """django-filter's ``NumberFilter``, reading a plain decimal only."""

    field_class = PlainDecimalField


class UtcIsoDateTimeField(filter_fields.IsoDateTimeField):
    """An ISO 8601 datetime whose offset PostgreSQL accepts, compared in UTC."""

    def to_python(self, value: Any) -> Any:
        parsed = super().to_python(value)
        if parsed is None:
            return None
        offset = parsed.utcoffset()
        if offset is not None and abs(offset) > MAX_OFFSET:
            raise forms.ValidationError(
                "The UTC offset must be between -15:59 and +15:59.",
                code="invalid",
            )
        try:
            return parsed.astimezone(dt.UTC)
        except (OverflowError, ValueError):
            raise forms.ValidationError(
                "The datetime is out of range.", code="invalid"
            ) from None


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    """One bound of a datetime range (``created_at_after``): a filter of its
    own, so an invalid value is an error keyed by the parameter the client
    sent (a range filter keys both bounds' errors by the field's name)."""

    field_class = UtcIsoDateTimeField


class StrictFilterForm(forms.Form):
    """Refuses query values no database stores, whatever filter reads them."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for name, values in self.data.lists() if hasattr(self.data, "lists") else []:
            if name in self.errors:
                continue  # its field's own refusal ("Null characters ...")
            if any(storable(value)[1] for value in values if isinstance(value, str)):
                if name in self.fields:
                    self.add_error(name, UNSTORABLE)
                else:  # a page's cursor: named, as no field shows it
                    self.add_error(None, f"{name[:50]!r}: {UNSTORABLE}")
        return cleaned


class StrictFilterSet(django_filters.FilterSet):
    """A FilterSet whose form refuses unstorable query values (a 400 in the
    API, an empty list on the pages)."""

    @property
    def form(self) -> forms.Form:
        if not hasattr(self, "_form"):
            Form = self.get_form_class()
            strict = type(f"Strict{Form.__name__}", (StrictFilterForm, Form), {})
            if self.is_bound:
                self._form = strict(self.data, prefix=self.form_prefix)
            else:
                self._form = strict(prefix=self.form_prefix)
        return self._form
