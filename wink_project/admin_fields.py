"""What every admin form's fields take, whatever model admin shows them
(``check_fields``, which the admin site applies to each model admin it
registers, Django's own included):

- a many-to-many choice (a prompt's or a section's policies, an experiment's
  graders, a group's permissions) only values that can be keys of its rows:
  Django checks the values posted in one query, and one past the largest
  integer (``2**63``) was a 500 on SQLite. It is refused first, as Django
  refuses ``abc`` (``KeyCheckedMultipleChoiceField``);
- an integer only ASCII digits (``PlainIntegerField``), as the amounts.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models

from tooling.forms.fields import PlainIntegerField
from wink_project.admin_selection import not_keys


class KeyCheckedMultipleChoiceField(forms.ModelMultipleChoiceField):
    """Django's many-to-many choice, refusing a value that cannot be a key of
    its rows (``2**63``, ``1e400``) with the message Django gives ``abc``,
    before the database is asked."""

    def clean(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            assert self.queryset is not None
            meta = self.queryset.model._meta
            key = (
                meta.pk
                if self.to_field_name is None
                else meta.get_field(self.to_field_name)
            )
            assert isinstance(key, models.Field)
            if not_keys([str(item) for item in value], key):
                bad = next(item for item in value if not_keys([str(item)], key))
                raise ValidationError(
                    self.error_messages["invalid_pk_value"],
                    code="invalid_pk_value",
                    params={"pk": bad},
                )
        return super().clean(value)


# The form class each kind of model field gets (Django's defaults name
# ``BigIntegerField`` apart from ``IntegerField``, and the first in a field's
# MRO wins: both are named).
FORM_CLASSES: tuple[tuple[type[models.Field[Any, Any]], type[forms.Field]], ...] = (
    (models.ManyToManyField, KeyCheckedMultipleChoiceField),
    (models.IntegerField, PlainIntegerField),
    (models.BigIntegerField, PlainIntegerField),
)


def _with_form_classes(overrides: Any) -> dict[Any, Any]:
    """``overrides`` (a ``formfield_overrides``) with ``FORM_CLASSES`` where it
    names no form class of its own: a new dict, its values copied."""
    merged = {field: dict(options) for field, options in overrides.items()}
    for field, form_class in FORM_CLASSES:
        merged.setdefault(field, {}).setdefault("form_class", form_class)
    return merged


def check_fields(model_admin: admin.ModelAdmin[Any]) -> None:
    """Give ``model_admin``'s fields, and its inlines', the form classes of
    ``FORM_CLASSES`` (unless they name their own)."""
    # (the instance's: ``BaseModelAdmin.__init__`` merged the class's and
    # Django's defaults into a dict of its own; an inline is instantiated per
    # request, from its class's, which is replaced by a new dict here)
    overrides: Any = model_admin.formfield_overrides
    merged = _with_form_classes(overrides)
    overrides.clear()
    overrides.update(merged)
    for inline in model_admin.inlines:
        inline.formfield_overrides = _with_form_classes(inline.formfield_overrides)
