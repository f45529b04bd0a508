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


def check_fields(model_admin: admin.ModelAdmin[Any]) -> None:
    """Give ``model_admin``'s many-to-many fields
    ``KeyCheckedMultipleChoiceField`` and its integer fields
    ``PlainIntegerField`` (unless it names form classes of its own)."""
    # (a dict: ``BaseModelAdmin.__init__`` merged the class's into a copy)
    overrides: Any = model_admin.formfield_overrides
    for field, form_class in (
        (models.ManyToManyField, KeyCheckedMultipleChoiceField),
        (models.IntegerField, PlainIntegerField),
    ):
        overrides.setdefault(field, {}).setdefault("form_class", form_class)
