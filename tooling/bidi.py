"""Bidirectional control characters, shown neutralised on pages.

Model output and text people type (a change's reason, a release's note) can
hold right-to-left overrides and isolates that reorder how the text around
them is displayed ("Trojan Source"). A page passed through ``neutralised``
shows each as a visible ``[U+202E]``-style mark after rendering, so what a
reader sees is the order the characters are in. The record keeps them; only
the page changes. The audit pages, the catalog's History pages and the release
page use it (``sessions_app.audit.bidi`` adds a mixin for class-based views).
"""

from __future__ import annotations

import re
from typing import Any

from django.http import HttpResponse
from django.template.response import SimpleTemplateResponse

from tooling.runtime.text import BIDI_CONTROLS


def neutralise(text: str) -> str:
    return BIDI_CONTROLS.sub(lambda match: f"[U+{ord(match.group()):04X}]", text)


# The attribute values a browser sends back or follows: a filter box's value
# (a search for a control, submitted again with another filter) and a link's
# target (a recorded URL). Their controls are written as character references,
# which the browser reads as the characters themselves, so the search or the
# link stays the one recorded; a mark there would be searched for, or lead
# elsewhere. Django writes attribute values quoted with ``"`` and escapes a
# ``"`` inside, so a value ends at the next ``"``.
_SENT_BACK = re.compile(r'(?<=\s)(value|href)="([^"]*)"')
# And a text box's text (a reason typed in a form shown again after an
# error): a textarea's content is text whose character references the
# browser reads; Django escapes a ``<`` in it, so it ends at its closing tag.
_TEXT_BOX = re.compile(r"(<textarea\b[^>]*>)(.*?)(</textarea>)", re.DOTALL)


def _references(text: str) -> str:
    return BIDI_CONTROLS.sub(lambda control: f"&#x{ord(control.group()):04X};", text)


def _referenced(match: re.Match[str]) -> str:
    return f'{match[1]}="{_references(match[2])}"'


def _boxed(match: re.Match[str]) -> str:
    return f"{match[1]}{_references(match[2])}{match[3]}"


def neutralise_page(html: str) -> str:
    """``html`` with every bidi control shown as a mark, except in the
    attribute values a browser sends back or follows (``_SENT_BACK``) and in
    text boxes (``_TEXT_BOX``), where they are character references."""
    return neutralise(_TEXT_BOX.sub(_boxed, _SENT_BACK.sub(_referenced, html)))


def _rewrite(response: HttpResponse) -> HttpResponse:
    if response.streaming or "text/html" not in response.get("Content-Type", ""):
        return response
    charset = response.charset or "utf-8"
    text = response.content.decode(charset, errors="replace")
    if BIDI_CONTROLS.search(text):
        response.content = neutralise_page(text).encode(charset)
    return response


def neutralised(response: Any) -> Any:
    """``response`` with bidi controls shown as marks (after it is rendered)."""
    if isinstance(response, SimpleTemplateResponse) and not response.is_rendered:
        response.add_post_render_callback(_rewrite)
        return response
    if isinstance(response, HttpResponse):
        return _rewrite(response)
    return response


class NeutralisedAdminPages:
    """For a ``ModelAdmin``: its list and change pages show bidi controls as
    marks, except an editable change form (a mark in its values would be
    saved back)."""

    def changelist_view(self, request: Any, extra_context: Any = None) -> Any:
        return neutralised(super().changelist_view(request, extra_context))  # type: ignore[misc]

    def change_view(
        self,
        request: Any,
        object_id: str,
        form_url: str = "",
        extra_context: Any = None,
    ) -> Any:
        response = super().change_view(  # type: ignore[misc]
            request, object_id, form_url, extra_context
        )
        context = getattr(response, "context_data", None) or {}
        if context.get("has_change_permission"):
            return response
        return neutralised(response)
