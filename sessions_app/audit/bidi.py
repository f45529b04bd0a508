"""Bidirectional control characters, shown neutralised on the audit pages.

Model output can hold right-to-left overrides and isolates that reorder how
the text around them is displayed ("Trojan Source"). The audit pages replace
each with a visible ``[U+202E]``-style mark after rendering, so what an
operator reads is the order the characters are in. The record keeps them;
only the page changes. The audit pages are read-only, so no form can submit
the marks back.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.template.response import SimpleTemplateResponse

from tooling.runtime.text import BIDI_CONTROLS


def neutralise(text: str) -> str:
    return BIDI_CONTROLS.sub(lambda match: f"[U+{ord(match.group()):04X}]", text)


def _rewrite(response: HttpResponse) -> HttpResponse:
    if response.streaming or "text/html" not in response.get("Content-Type", ""):
        return response
    charset = response.charset or "utf-8"
    text = response.content.decode(charset, errors="replace")
    if BIDI_CONTROLS.search(text):
        response.content = neutralise(text).encode(charset)
    return response


def neutralised(response: Any) -> Any:
    """``response`` with bidi controls shown as marks (after it is rendered)."""
    if isinstance(response, SimpleTemplateResponse) and not response.is_rendered:
        response.add_post_render_callback(_rewrite)
        return response
    if isinstance(response, HttpResponse):
        return _rewrite(response)
    return response


class NeutraliseBidiMixin:
    """For views: their pages show bidi controls neutralised."""

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        return neutralised(super().dispatch(request, *args, **kwargs))  # type: ignore[misc]
