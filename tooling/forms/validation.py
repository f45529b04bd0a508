"""How runtime errors reach the admin: each on the field it concerns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from tooling.assembly import prompts_broken_by
from tooling.assembly.edits import describe
from tooling.runtime import PromptError, template_placeholders

# Which form field a runtime error's ``placeholder`` belongs to.
_FIELD_OF = {
    "name": "name",
    "description": "description",
    "examples": "examples",
    "handler": "handler_key",
    "handler_key": "handler_key",
    "ParamsT": "handler_key",
    "ResultT": "handler_key",
    "key": "key",
    "kind": "kind",
    "config": "config",
    "dependencies": "config",
    "default_params": "default_params",
    "planning_strategy": "planning_strategy",
    "trust_level": "min_trust_level",
    "enabled_when_param": "enabled_when_param",
    "output_schema": "output_schema",
}


def field_of(error: PromptError) -> str | None:
    """The form field (by name) a runtime error's placeholder belongs to."""
    return _FIELD_OF.get(error.placeholder or "")


def runtime_error(
    error: PromptError,
    form: forms.BaseForm,
    default: str | None = None,
    *,
    template: str = "",
) -> ValidationError:
    """A ``ValidationError`` attached to the field the runtime blamed.

    An error about one of ``template``'s placeholders belongs to the template
    field, even when the placeholder is named like another field (``$key``).
    """
    if template and error.placeholder in _placeholders(template):
        name: str | None = "template"
    else:
        name = _FIELD_OF.get(error.placeholder or "", default)
    if name in form.fields:
        return ValidationError({name: error.message})
    return ValidationError(error.message)


def _placeholders(template: str) -> frozenset[str]:
    """The template's placeholders; none when it does not parse (its own
    error is then the one being reported, on the field the caller chose)."""
    try:
        return frozenset(template_placeholders(template))
    except PromptError:
        return frozenset()


def validated(
    form: forms.ModelForm,
    build: Callable[[], Any],
    default: str | None = None,
    *,
    template: str = "",
) -> Any:
    try:
        return build()
    except PromptError as error:
        raise runtime_error(error, form, default, template=template) from error


def refuse_breaking(edit: Any, action: str = "This change") -> None:
    """Refuse (``ValidationError``) an edit that would break saved prompts,
    naming each prompt and why."""
    problems = prompts_broken_by(edit)
    if problems:
        raise ValidationError(describe(problems, action))


def errors_in_words(form: forms.Form) -> str:
    """A refused form's errors as one line, each after its field's label
    (``Note: Ensure this value has at most 1000 characters (it has 1500).``):
    for a page that answers a post with a message and a redirect."""
    parts = []
    for name, errors in form.errors.items():
        field = form.fields.get(name)
        label = (field.label if field is not None else None) or name.replace("_", " ")
        words = " ".join(str(message) for message in errors)
        parts.append(words if name == NON_FIELD_ERRORS else f"{label}: {words}")
    return " ".join(parts)
