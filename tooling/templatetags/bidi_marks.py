"""``{{ text|neutralise }}``: bidi controls shown as ``[U+202E]``-style marks
(``tooling.bidi``), for the parts of a page that show catalog or model text
beside a form whose values must stay as typed (the preview page)."""

from __future__ import annotations

from django import template

from tooling.bidi import neutralise as neutralise_text

register = template.Library()


@register.filter
def neutralise(value: object) -> str:
    return neutralise_text(str(value))
