"""Template filters for the audit pages.

Everything these filters receive may come from a model or the web (output
text, citation titles and URLs, tool parameters): they escape all of it and
only ever emit markup they build themselves.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable
from typing import Any

from django import template
from django.utils.html import conditional_escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from sessions_app.approvals import outcome
from sessions_app.audit.filters import is_outside_allowed_domains
from sessions_app.audit.timings import approval_span, humane_ms
from sessions_app.models import Citation

register = template.Library()


def is_http_url(url: Any) -> bool:
    return isinstance(url, str) and url.lower().startswith(("http://", "https://"))


# How much of a URL that is not linked is shown beside its text.
UNLINKED_URL_SHOWN = 300


@register.simple_tag
def safe_link(url: Any, text: Any = "") -> SafeString:
    """An ``<a>`` for http(s) URLs; anything else as escaped plain text, the
    URL shown beside a text of its own (what the model cited, which an
    auditor must see: ``javascript:...``), cut to ``UNLINKED_URL_SHOWN``."""
    label = text or url or ""
    if is_http_url(url):
        return format_html(
            '<a href="{}" rel="noopener noreferrer nofollow">{}</a>', url, label
        )
    if isinstance(url, str) and url and label != url:
        shown = url[:UNLINKED_URL_SHOWN] + (
            "…" if len(url) > UNLINKED_URL_SHOWN else ""
        )
        return format_html('{} <code class="unlinked">{}</code>', label, shown)
    return conditional_escape(label)


@register.filter(expects_localtime=True)
def stamp(value: Any, pattern: str = "%Y-%m-%d %H:%M:%S") -> str:
    """A timestamp in the current time zone, by a ``strftime`` pattern: what
    ``date`` does for the fixed formats of the lists, at a fraction of its
    cost (a list formats one per row)."""
    if not isinstance(value, datetime.datetime):
        return ""
    return value.strftime(pattern)


@register.filter
def seconds(value: Any) -> str:
    """How long a session ran: ``0.42 s``, ``12.3 s``, ``4 min 05 s``,
    ``2 h 03 min``; empty for anything but a ``timedelta``."""
    if not isinstance(value, datetime.timedelta):
        return ""
    total = value.total_seconds()
    if total < 10:
        return f"{total:.2f} s"
    if total < 60:
        return f"{total:.1f} s"
    whole = int(total)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


@register.filter
def clip(value: Any, length: int) -> str:
    """At most ``length`` characters, the last an ellipsis when cut (a plain
    string: the template escapes it)."""
    text = "" if value is None else str(value)
    return text if len(text) <= length else text[: length - 1] + "…"


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON (a plain string: the template escapes it)."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


@register.filter
def ms(value: Any) -> str:
    """A duration in milliseconds as people read it (``1.2 s``)."""
    return humane_ms(float(value)) if isinstance(value, int | float) else "—"


@register.filter
def waited(approval: Any) -> str:
    """How long an approval request waited (so far, while pending)."""
    span = approval_span(approval, datetime.datetime.now(datetime.UTC))
    return humane_ms(span.duration_ms) + (" so far" if span.open else "")


# JSON of at most this many lines shows open; longer, folded under its summary.
JSON_OPEN_LINES = 12


@register.simple_tag
def json_block(
    value: Any, summary: str, open_lines: int = JSON_OPEN_LINES
) -> SafeString:
    """JSON in a ``<details>`` (collapsible everywhere): open when short,
    folded when long, the summary saying how long. The text is escaped."""
    text = pretty_json(value)
    lines = text.count("\n") + 1
    return format_html(
        '<details class="json"{}><summary>{} <span class="muted">({} line{})'
        "</span></summary><pre>{}</pre></details>",
        " open" if lines <= open_lines else "",
        summary,
        lines,
        "" if lines == 1 else "s",
        text,
    )


@register.filter
def outside_allowed_domains(citation: Citation) -> bool:
    return is_outside_allowed_domains(citation)


def _cited_spans(
    text: str, citations: Iterable[Citation]
) -> list[tuple[int, int, list[Citation]]]:
    """The first occurrence of each citation's cited text, overlaps merged."""
    found: list[tuple[int, int, Citation]] = []
    for citation in citations:
        needle = citation.cited_text
        if not needle:
            continue
        start = text.find(needle)
        if start >= 0:
            found.append((start, start + len(needle), citation))
    found.sort(key=lambda span: (span[0], -span[1]))
    merged: list[tuple[int, int, list[Citation]]] = []
    for start, end, citation in found:
        if merged and start < merged[-1][1]:
            last_start, last_end, cited = merged[-1]
            merged[-1] = (last_start, max(last_end, end), [*cited, citation])
        else:
            merged.append((start, end, [citation]))
    return merged


@register.filter
def highlight_citations(output_text: Any, citations: Iterable[Citation]) -> SafeString:
    """The escaped output with each cited span in ``<mark>``, linked to its source.

    A span's reference is the citation's position in ``citations`` (1-based),
    matching a ``#citation-<pk>`` anchor in the sources list.

    Spans are found by searching each citation's cited text (its indices point
    into the message part it came from, not into the joined output text).
    """
    text = "" if output_text is None else str(output_text)
    citations = list(citations or ())
    numbers = {id(citation): n for n, citation in enumerate(citations, start=1)}
    parts: list[str] = []
    position = 0
    for start, end, cited in _cited_spans(text, citations):
        parts.append(conditional_escape(text[position:start]))
        titles = "; ".join(c.title or c.url or c.filename for c in cited)
        refs = format_html_join(
            "",
            '<a href="#citation-{}">[{}]</a>',
            ((c.pk, numbers[id(c)]) for c in cited),
        )
        parts.append(
            format_html(
                '<mark title="{}">{}</mark><sup class="ref">{}</sup>',
                titles,
                text[start:end],
                refs,
            )
        )
        position = end
    parts.append(conditional_escape(text[position:]))
    # Every part was escaped or built by format_html above.
    return mark_safe("".join(parts))


@register.filter
def call_outcome_note(approval: Any) -> str:
    """What became of an approved call, when not a plain "it ran"
    (``approvals.outcome``; the row annotated ``with_call_record``): empty
    otherwise."""
    result = outcome.of(approval)
    if result is None or result is outcome.Outcome.RAN:
        return ""
    return outcome.note(approval, result)
