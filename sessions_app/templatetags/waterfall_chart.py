"""A session's waterfall (``audit/waterfall.py``) drawn as inline SVG.

Like the cost charts: no script, no library, no CDN, presentation attributes
only (the Content-Security-Policy allows no inline style). Tool names and
errors are someone else's text: every label and title passes through
``format_html``.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from sessions_app.audit.timings import humane_ms
from sessions_app.audit.waterfall import Bar, Waterfall

register = template.Library()

WIDTH = 960
LABEL_WIDTH = 230
VALUE_WIDTH = 90
ROW_HEIGHT = 20
BAR_HEIGHT = 12
AXIS_HEIGHT = 22
LABEL_CHARS = 32
TICKS = 4
MIN_WIDTH = 1.5
FILL = {
    "queue": "#d0d7de",
    "provider": "#0969da",
    "tool": "#1a7f37",
    "native": "#8c959f",
    "approval": "#bf8700",
}
FAILED = "#cf222e"


def _px(value: float) -> str:
    return f"{value:.1f}"


def _short(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _span(start_ms: float, length_ms: float, scale: float) -> tuple[float, float]:
    """``(x, width)`` of a span on the plot, kept inside it whatever the row
    said (at least ``MIN_WIDTH`` wide, so a short step stays visible)."""
    area = WIDTH - LABEL_WIDTH - VALUE_WIDTH
    x = min(max(start_ms * scale, 0.0), area - MIN_WIDTH)
    width = min(max(length_ms * scale, MIN_WIDTH), area - x)
    return LABEL_WIDTH + x, width


def _rects(bar: Bar, y: float, scale: float) -> SafeString:
    """The bar, or for a provider call its attempts over a faint line (the
    gaps are the retries' backoff)."""
    x, width = _span(bar.start_ms, bar.duration_ms, scale)
    fill = FAILED if bar.failed else FILL[bar.kind]
    if bar.kind == "provider" and len(bar.segments) > 1:
        line = format_html(
            '<rect class="wf-span" x="{}" y="{}" width="{}" height="2" fill="{}">'
            "</rect>",
            _px(x),
            _px(y + BAR_HEIGHT / 2 - 1),
            _px(width),
            FILL["provider"],
        )
        attempts = format_html_join(
            "",
            '<rect class="wf-attempt{}" x="{}" y="{}" width="{}" height="{}" '
            'fill="{}"></rect>',
            (
                (
                    " wf-failed" if failed else "",
                    _px(at),
                    _px(y),
                    _px(wide),
                    BAR_HEIGHT,
                    FAILED if failed else FILL["provider"],
                )
                for offset, length, failed in bar.segments
                # an attempt inside its call's span
                for at, wide in (
                    _span(
                        bar.start_ms + min(offset, bar.duration_ms),
                        min(length, max(bar.duration_ms - offset, 0.0)),
                        scale,
                    ),
                )
            ),
        )
        return format_html("{}{}", line, attempts)
    return format_html(
        '<rect class="wf-bar{}" x="{}" y="{}" width="{}" height="{}" fill="{}"{}>'
        "</rect>",
        " wf-failed" if bar.failed else "",
        _px(x),
        _px(y),
        _px(width),
        BAR_HEIGHT,
        fill,
        format_html(' fill-opacity="{}"', "0.45") if bar.kind == "native" else "",
    )


def _value(bar: Bar) -> str:
    if bar.kind == "native":
        return "in call"
    text = humane_ms(bar.duration_ms)
    return f"{text}+" if bar.open else text


@register.simple_tag
def waterfall_chart(waterfall: Waterfall) -> SafeString:
    area = WIDTH - LABEL_WIDTH - VALUE_WIDTH
    scale = area / waterfall.total_ms
    height = AXIS_HEIGHT + ROW_HEIGHT * len(waterfall.bars) + 4
    ticks = format_html_join(
        "",
        '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#d0d7de"></line>'
        '<text x="{}" y="14" font-size="11" text-anchor="{}">{}</text>',
        (
            (
                _px(x),
                AXIS_HEIGHT - 4,
                _px(x),
                height,
                _px(x),
                "start" if index == 0 else "end" if index == TICKS else "middle",
                humane_ms(waterfall.total_ms * index / TICKS),
            )
            for index in range(TICKS + 1)
            for x in (LABEL_WIDTH + area * index / TICKS,)
        ),
    )
    rows = format_html_join(
        "",
        '<g class="wf-row wf-{}"><title>{} · starts at {} · {}</title>'
        '<text x="{}" y="{}" font-size="12" text-anchor="end">{}</text>{}'
        '<text x="{}" y="{}" font-size="11" fill="#656d76">{}</text></g>',
        (
            (
                bar.kind,
                bar.detail,
                humane_ms(bar.start_ms),
                _value(bar),
                LABEL_WIDTH - 8,
                _px(y + BAR_HEIGHT - 1),
                _short(bar.label),
                _rects(bar, y, scale),
                WIDTH - VALUE_WIDTH + 6,
                _px(y + BAR_HEIGHT - 1),
                _value(bar),
            )
            for index, bar in enumerate(waterfall.bars)
            for y in (AXIS_HEIGHT + index * ROW_HEIGHT + 4,)
        ),
    )
    return format_html(
        '<svg class="waterfall" xmlns="http://www.w3.org/2000/svg" role="img" '
        'aria-label="{}" viewBox="0 0 {} {}" width="100%" height="{}" '
        'preserveAspectRatio="xMinYMin meet">{}{}</svg>',
        f"Where the run's time went: {len(waterfall.bars)} steps over "
        f"{humane_ms(waterfall.total_ms)}",
        WIDTH,
        height,
        height,
        ticks,
        rows,
    )
