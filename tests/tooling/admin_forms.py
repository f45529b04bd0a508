"""What a browser would post back for an admin change page, as test data."""

from __future__ import annotations

from typing import Any

from django import forms


def _add_form(data: dict[str, Any], form: forms.BaseForm) -> None:
    for name, field in form.fields.items():
        bound = form[name]
        value = bound.value()
        if isinstance(field.widget, forms.CheckboxInput):
            if value:
                data[bound.html_name] = "on"
            continue
        if value is None:
            continue
        if isinstance(value, list | tuple):
            data[bound.html_name] = [str(item) for item in value]
        else:
            data[bound.html_name] = str(value)


def change_form_data(client: Any, url: str) -> dict[str, Any]:
    """The data of the admin form at ``url`` (inlines included), as loaded."""
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    data: dict[str, Any] = {}
    _add_form(data, response.context["adminform"].form)
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        _add_form(data, formset.management_form)
        for form in formset.forms:
            _add_form(data, form)
    return data
