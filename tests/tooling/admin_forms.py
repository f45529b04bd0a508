"""What a browser would post back for an admin change page, as test data.

Each field's widget is rendered and its controls read as a browser reads
them: a text input's value (its line breaks dropped, as a browser's value
sanitisation does), a text area's text, a select's chosen options, a ticked
box or radio button; nothing inside a ``<template>`` (a row an editor's script
copies) and nothing disabled. So a widget of several inputs (a rows
editor, a box per parameter) posts what it shows."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from django import forms

_NOT_POSTED = {"submit", "button", "image", "reset", "file"}
#: Inputs whose value a browser holds on one line (HTML's value sanitisation
#: algorithm strips their line breaks).
_ONE_LINE = {"text", "search", "tel", "url", "email", "password"}


class _Controls(HTMLParser):
    """The (name, value) pairs a browser posts for the controls in some HTML."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pairs: list[tuple[str, str]] = []
        self._templates = 0
        self._select: tuple[str, bool] | None = None
        self._options: list[tuple[str, bool]] = []
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "template":
            self._templates += 1
        if self._templates:
            return
        found = dict(attrs)
        name = found.get("name") or ""
        if tag == "option" and self._select is not None:
            self._options.append((found.get("value") or "", "selected" in found))
        if not name or "disabled" in found:
            return
        if tag == "input":
            kind = (found.get("type") or "text").lower()
            if kind in ("checkbox", "radio"):
                if "checked" in found:
                    self.pairs.append((name, found.get("value") or "on"))
            elif kind in _ONE_LINE:
                value = found.get("value") or ""
                self.pairs.append((name, value.replace("\r", "").replace("\n", "")))
            elif kind not in _NOT_POSTED:
                self.pairs.append((name, found.get("value") or ""))
        elif tag == "select":
            self._select = (name, "multiple" in found)
            self._options = []
        elif tag == "textarea":
            self._textarea = name
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "template":
            self._templates -= 1
        if self._templates:
            return
        if tag == "select" and self._select is not None:
            name, multiple = self._select
            chosen = [value for value, selected in self._options if selected]
            if not multiple:
                chosen = chosen[-1:] or [value for value, _ in self._options[:1]]
            self.pairs.extend((name, value) for value in chosen)
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            text = "".join(self._text)
            # an HTML parser drops the newline that starts a text area's text
            text = text[2:] if text.startswith("\r\n") else text.removeprefix("\n")
            self.pairs.append((self._textarea, text))
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea is not None and not self._templates:
            self._text.append(data)


def _add_form(data: dict[str, Any], form: forms.BaseForm) -> None:
    for name in form.fields:
        parser = _Controls()
        parser.feed(str(form[name]))
        parser.close()
        for key, value in parser.pairs:
            if key in data:
                before = data[key]
                data[key] = (
                    [*before, value] if isinstance(before, list) else [before, value]
                )
            else:
                data[key] = value


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


def opened_version(client: Any, url: str) -> dict[str, str]:
    """The version field of the admin change form at ``url`` as a browser
    posts it back (a change form without it is refused)."""
    form = client.get(url).context["adminform"].form
    return {"catalog_version": str(form["catalog_version"].value() or "")}
