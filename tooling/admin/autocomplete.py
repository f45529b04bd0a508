"""``SafeAutocomplete``: an inline's autocomplete fields (``autocomplete_fields``)
re-render a refused form without looking up a value that cannot be a key.

Django's ``AutocompleteSelect`` looks the posted value up to show it again; a
value that is not a key of the related table (``bogus``, or a number past
what the database stores) raised from the lookup: a form posted by a script
or tampered with was a 500 instead of its "Select a valid choice" error."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.widgets import AutocompleteSelect
from django.core.exceptions import ValidationError
from django.db import models
from django.http import HttpRequest

# A key past a signed 64-bit integer is no row's (SQLite raises on it).
KEY_LIMIT = 2**63


class KeyOnlyAutocompleteSelect(AutocompleteSelect):
    """Shows again only the posted values that can be keys."""

    def optgroups(self, name: str, value: Any, attr: Any = None) -> Any:
        remote = self.field.remote_field
        target = remote.model._meta.get_field(remote.field_name)
        return super().optgroups(name, [v for v in value if _is_key(target, v)], attr)


def _is_key(field: models.Field[Any, Any], value: Any) -> bool:
    try:
        key = field.to_python(value)
    except (ValidationError, TypeError, ValueError):
        return False
    return not isinstance(key, int) or -KEY_LIMIT < key < KEY_LIMIT


class SafeAutocomplete:
    """For a ``ModelAdmin`` or an inline with ``autocomplete_fields``."""

    def formfield_for_foreignkey(
        self, db_field: Any, request: HttpRequest, **kwargs: Any
    ) -> Any:
        if "widget" not in kwargs and db_field.name in self.get_autocomplete_fields(  # type: ignore[attr-defined]
            request
        ):
            kwargs["widget"] = KeyOnlyAutocompleteSelect(
                db_field,
                self.admin_site,  # type: ignore[attr-defined]
                using=kwargs.get("using"),
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]
