"""JSON no database stores, refused where it enters (forms, models, the API).

PostgreSQL refuses a NUL byte in text and in ``jsonb`` (keys included), and no
UTF-8 encoder accepts a lone surrogate, which a JSON escape (``"\\ud800"``)
produces. Audit values from the provider are *converted* on the way in
(``tooling.runtime.text.storable``: nothing a run produced is lost); what an
operator or a client types is *refused*, naming where it is: by the API's
strict input (``tooling.api.input``), and by ``StorableJSONField`` on the
catalog models, whose form field refuses it on every admin form. So is nesting
deeper than ``MAX_DEPTH``: no catalog value or parameter needs it, and
Python's JSON encoder and decoder recurse; and so are NaN and the infinities,
which Python's decoder reads (``NaN``, ``1e400``) and no JSON column stores.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.deconstruct import deconstructible

from tooling.runtime.text import storable_text

UNSTORABLE = "Must not contain NUL bytes or lone surrogates."
NOT_FINITE = "Must not contain NaN or Infinity (not JSON; PostgreSQL refuses them)"
MAX_DEPTH = 64
TOO_DEEP = f"Must not be nested more than {MAX_DEPTH} levels deep."


def walk_json(
    value: Any, key_name: Callable[[Any], str] = str
) -> Iterator[tuple[Any, str]]:
    """Every value within the JSON value ``value``, itself first, each with its
    dotted path (``""``: the value itself; a key in it as ``key_name`` names
    it), depth first and in order. A loop, not recursion: any nesting is
    walked."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        yield item, path
        if isinstance(item, Mapping):
            stack.extend(
                (inner, _join(path, key_name(key)))
                for key, inner in reversed(list(item.items()))
            )
        elif isinstance(item, list | tuple):
            stack.extend(
                (inner, _join(path, str(index)))
                for index, inner in reversed(list(enumerate(item)))
            )


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _storable_key(key: Any) -> str:
    return storable_text(str(key))[0]


def unstorable_paths(value: Any) -> list[str]:
    """The dotted paths in the JSON value ``value`` that hold unstorable text
    (``""``: the value itself; a bad key is reported at its parent). The paths
    are storable themselves: a bad character in a key shows as U+FFFD."""
    found = [
        path
        for item, path in walk_json(value, _storable_key)
        if text_matches(item, lambda text: bool(storable_text(text)[1]))
    ]
    return list(dict.fromkeys(found))


def text_matches(item: Any, test: Callable[[str], bool]) -> bool:
    """Whether ``item`` (a value ``walk_json`` came to) is a text that passes
    ``test``, or an object with a key that does."""
    if isinstance(item, str):
        return test(item)
    return isinstance(item, Mapping) and any(
        isinstance(key, str) and test(key) for key in item
    )


def nonfinite_paths(value: Any) -> list[str]:
    """The dotted paths in ``value`` that hold NaN or an infinity (Python's
    JSON decoder reads ``NaN``, ``Infinity`` and ``1e400``; no JSON column
    stores them)."""
    return [
        path or "the value itself"
        for item, path in walk_json(value, _storable_key)
        if isinstance(item, float) and not math.isfinite(item)
    ]


def depth(value: Any) -> int:
    """How deeply ``value`` nests containers (a scalar: 0)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping):
            item = list(item.values())
        if isinstance(item, list | tuple):
            deepest = max(deepest, level + 1)
            stack.extend((inner, level + 1) for inner in item)
    return deepest


@deconstructible
class StorableJSONValidator:
    """Refuses a JSON value holding a NUL byte or a lone surrogate anywhere,
    NaN or an infinity, or nested more than ``MAX_DEPTH`` levels."""

    code = "unstorable"

    def __call__(self, value: Any) -> None:
        if depth(value) > MAX_DEPTH:
            raise ValidationError(TOO_DEEP, code=self.code)
        paths = unstorable_paths(value)
        if paths:
            where = ", ".join(path or "the value itself" for path in paths[:5])
            raise ValidationError(
                f"{UNSTORABLE.removesuffix('.')} (at {where}).", code=self.code
            )
        nonfinite = nonfinite_paths(value)
        if nonfinite:
            where = ", ".join(nonfinite[:5])
            raise ValidationError(f"{NOT_FINITE} (at {where}).", code=self.code)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StorableJSONValidator)

    def __hash__(self) -> int:
        return hash(StorableJSONValidator)


validate_storable_json = StorableJSONValidator()


class DuplicateKey(ValueError):
    """An object of the JSON text holds one key twice (``key``)."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(
            f"the key {json.dumps(key, ensure_ascii=True)} appears twice in one "
            "object (only the last would be kept)"
        )


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An ``object_pairs_hook``: the object, or ``DuplicateKey``. Python's
    decoder keeps the last of two equal keys without a word, so
    ``{"deploy": ["build"], "deploy": ["lint"]}`` would lose a rule."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise DuplicateKey(key)
        found[key] = value
    return found


class UniqueKeysDecoder(json.JSONDecoder):
    """``json.JSONDecoder`` refusing an object with a key twice (``unique_keys``)
    and a number too large for a float (``finite_float``)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["object_pairs_hook"] = unique_keys
        kwargs.setdefault("parse_float", finite_float)
        super().__init__(**kwargs)


# A number too large for a float (``1e400``): Python's decoder reads it as
# infinity, which no JSON writer writes back ("Value must be valid JSON.").
TOO_LARGE = "A number is too large (a float is at most about 1.8e308)."


def finite_float(text: str) -> float:
    """A ``parse_float``: the number, or ``ValueError(TOO_LARGE)``."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(TOO_LARGE)
    return value


# An integer past Python's limit of digits (4,300 by default), said as such:
# Python's own message ("... integer string conversion ...") tells how to raise
# the limit.
TOO_MANY_DIGITS = "A number has too many digits."


def too_many_digits(error: ValueError) -> bool:
    """Whether ``error`` is Python's refusal of an integer past its limit of
    digits."""
    return type(error) is ValueError and "integer string conversion" in str(error)


def loads(text: str | bytes) -> Any:
    """``json.loads``, with nesting too deep for the decoder a ``ValueError``
    (``TOO_DEEP``), an integer past Python's digits another
    (``TOO_MANY_DIGITS``) and an object holding a key twice a ``DuplicateKey``
    (one)."""
    try:
        return json.loads(text, object_pairs_hook=unique_keys, parse_float=finite_float)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    except ValueError as error:
        if too_many_digits(error):
            raise ValueError(TOO_MANY_DIGITS) from None
        raise


def json_error_message(error: json.JSONDecodeError) -> str:
    """``Enter valid JSON: Expecting ',' delimiter at line 3, column 5.``"""
    return (
        f"Enter valid JSON: {error.msg} at line {error.lineno}, column {error.colno}."
    )


class StorableJSONFormField(forms.JSONField):
    """A form's JSON field that refuses what ``validate_storable_json`` does,
    and input too deeply nested to decode, as form errors. Text that is not
    JSON is refused naming the decoder's complaint, line and column; the
    field keeps the text as typed (``forms.JSONField.bound_data``).

    Every JSON field of the catalog's forms is one: the catalog models'
    ``StorableJSONField`` makes it their form field."""

    default_validators = [validate_storable_json]
    widget = forms.Textarea(attrs={"rows": 8, "class": "vLargeTextField"})

    def __init__(self, **kwargs: Any) -> None:
        # an object holding a key twice is refused, not read as its last
        if kwargs.get("decoder") is None:
            kwargs["decoder"] = UniqueKeysDecoder
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> Any:
        try:
            return super().to_python(value)
        except RecursionError:
            raise ValidationError(TOO_DEEP, code="invalid") from None
        except DuplicateKey as error:
            raise ValidationError(
                f"Enter valid JSON: {error}.", code="invalid"
            ) from None
        except ValidationError as error:
            if error.code != "invalid" or not isinstance(value, str):
                raise
            try:
                json.loads(value, cls=self.decoder)
            except json.JSONDecodeError as decode_error:
                raise ValidationError(
                    json_error_message(decode_error), code="invalid"
                ) from None
            raise
        except ValueError as error:  # past Python's digits, or a float's range
            message = TOO_MANY_DIGITS if too_many_digits(error) else str(error)
            raise ValidationError(
                f"Enter valid JSON: {message}", code="invalid"
            ) from None

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value  # the text as typed
        # An object or a list is shown indented, a key a line: readable, and
        # a decoding error's line and column point somewhere useful.
        indent = 2 if isinstance(value, dict | list) and value else None
        text = json.dumps(value, ensure_ascii=False, cls=self.encoder, indent=indent)
        if storable_text(text)[1]:
            # Shown again as typed (escaped), so the page can be encoded.
            return json.dumps(value, ensure_ascii=True, cls=self.encoder, indent=indent)
        return text

    def bound_data(self, data: Any, initial: Any) -> Any:
        if isinstance(data, str) and not self.disabled and not storable_text(data)[1]:
            # A form shown again keeps the text as typed, valid or not (not
            # re-indented); ``prepare_value`` passes this marker through.
            return forms.fields.InvalidJSONInput(data)
        try:
            return super().bound_data(data, initial)
        except (RecursionError, ValueError):
            return forms.fields.InvalidJSONInput(data)


class StorableJSONField(models.JSONField):
    """A model's JSON field that refuses (in ``full_clean`` and in its form
    field) what ``validate_storable_json`` does."""

    default_validators = [validate_storable_json]

    def formfield(
        self,
        form_class: type[forms.Field] | None = None,
        choices_form_class: type[forms.ChoiceField] | None = None,
        **kwargs: Any,
    ) -> forms.Field | None:
        return super().formfield(
            form_class=form_class or StorableJSONFormField,
            choices_form_class=choices_form_class,
            **kwargs,
        )
