"""The cost page's charts: inline SVG built here, on the server.

No script, no chart library, no CDN: the page works under a strict Content
Security Policy (the SVG uses presentation attributes, never ``style``), and
a chart is as readable without JavaScript as the table beside it. Each row
of a breakdown is one ``rect.bar``; every label passes through ``format_html``
(prompt names and usernames are someone else's text).
"""

from __future__ import annotations

import math
from decimal import Decimal

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from sessions_app.costs.spend import Spend, SpendRow
from sessions_app.templatetags.money import format_usd

register = template.Library()

WIDTH = 720
LABEL_WIDTH = 230
VALUE_WIDTH = 110
ROW_HEIGHT = 24
BAR_HEIGHT = 16
LABEL_CHARS = 34
DAY_HEIGHT = 180
DAY_TOP = 16
DAY_AXIS = 22
DAY_TICKS = 8
COLOURS = {"group": "#0969da", "other": "#8c959f", "tokens": "#bf8700"}


def _px(value: Decimal | float | int) -> str:
    """A coordinate with at most one decimal (presentation, not money)."""
    return f"{Decimal(value).quantize(Decimal('0.1')):f}"


def _share(cost: Decimal, largest: Decimal, length: int) -> Decimal:
    if largest <= 0 or cost <= 0:
        return Decimal(0)
    return max(Decimal(1), cost / largest * length)


def _short(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _tip(spend: Spend, row: SpendRow) -> str:
    unpriced = f", {row.unpriced} unpriced" if row.unpriced else ""
    counted = spend.count_label if row.count != 1 else spend.count_label[:-1]
    return f"{row.label}: {format_usd(row.cost)} ({row.count} {counted}{unpriced})"


def _bars(spend: Spend) -> SafeString:
    """Horizontal bars, one per row, largest first."""
    area = WIDTH - LABEL_WIDTH - VALUE_WIDTH
    height = ROW_HEIGHT * len(spend.rows) + 4
    largest = spend.largest
    rows = format_html_join(
        "",
        '<g class="chart-row" data-key="{}"><title>{}</title>'
        '<text x="{}" y="{}" text-anchor="end" font-size="12">{}</text>'
        '<rect class="bar bar-{}" x="{}" y="{}" width="{}" height="{}" fill="{}">'
        "</rect>"
        '<text x="{}" y="{}" font-size="12">{}</text></g>',
        (
            (
                row.key,
                _tip(spend, row),
                LABEL_WIDTH - 8,
                index * ROW_HEIGHT + 16,
                _short(row.label),
                row.kind,
                LABEL_WIDTH,
                index * ROW_HEIGHT + 4,
                _px(width),
                BAR_HEIGHT,
                COLOURS[row.kind],
                _px(LABEL_WIDTH + width + 6),
                index * ROW_HEIGHT + 16,
                format_usd(row.cost),
            )
            for index, row in enumerate(spend.rows)
            for width in (_share(row.cost, largest, area),)
        ),
    )
    return format_html(
        '<svg class="chart chart-{}" xmlns="http://www.w3.org/2000/svg" '
        'role="img" aria-label="{}" viewBox="0 0 {} {}" width="100%" height="{}" '
        'preserveAspectRatio="xMinYMin meet">{}</svg>',
        spend.group,
        f"Spend by {spend.label.lower()}, bar chart",
        WIDTH,
        height,
        height,
        rows,
    )


def _days(spend: Spend) -> SafeString:
    """Vertical bars, one per day (month) of the range, with a few date
    ticks."""
    count = len(spend.rows)
    plot = Decimal(WIDTH - 60)
    step = plot / count
    gap = step / 5 if step > 3 else Decimal(0)
    largest = spend.largest
    every = max(1, math.ceil(count / DAY_TICKS))
    # A day without its year (MM-DD); a month whole (YYYY-MM).
    tick = (lambda key: key[5:]) if spend.group == "day" else (lambda key: key)
    base = DAY_TOP + DAY_HEIGHT
    bars = format_html_join(
        "",
        '<g class="chart-row" data-key="{}"><title>{}</title>'
        '<rect class="bar bar-{}" x="{}" y="{}" width="{}" height="{}" fill="{}">'
        "</rect></g>",
        (
            (
                row.key,
                _tip(spend, row),
                row.kind,
                _px(50 + index * step + gap / 2),
                _px(base - tall),
                _px(step - gap),
                _px(tall),
                COLOURS[row.kind],
            )
            for index, row in enumerate(spend.rows)
            for tall in (_share(row.cost, largest, DAY_HEIGHT),)
        ),
    )
    ticks = format_html_join(
        "",
        '<text x="{}" y="{}" font-size="11" text-anchor="middle">{}</text>',
        (
            (_px(50 + index * step + step / 2), base + 16, tick(row.key))
            for index, row in enumerate(spend.rows)
            if index % every == 0 or index == count - 1
        ),
    )
    return format_html(
        '<svg class="chart chart-{}" xmlns="http://www.w3.org/2000/svg" '
        'role="img" aria-label="{}" viewBox="0 0 {} {}" '
        'width="100%" height="{}" preserveAspectRatio="xMinYMin meet">'
        '<text x="46" y="{}" font-size="11" text-anchor="end">{}</text>'
        '<line x1="50" y1="{}" x2="{}" y2="{}" stroke="#d0d7de"></line>'
        "{}{}</svg>",
        spend.group,
        f"Spend by {spend.label.lower()}, bar chart",
        WIDTH,
        base + DAY_AXIS,
        base + DAY_AXIS,
        DAY_TOP + 4,
        format_usd(largest),
        base,
        WIDTH - 10,
        base,
        bars,
        ticks,
    )


@register.simple_tag
def spend_chart(spend: Spend) -> SafeString:
    """``{% spend_chart spend %}``: the breakdown as a bar chart (nothing when
    it has no rows)."""
    if not spend.rows:
        return SafeString("")
    return _days(spend) if spend.by_time else _bars(spend)


@register.simple_tag
def spend_rows(spend: Spend, rows: list[tuple[SpendRow, str]]) -> SafeString:
    """A breakdown's table rows, built in one pass (a year's 366 days
    through the template language cost a one-year page several times a
    one-day one, issue #28); by day or month, those with sessions. A group
    links to its sessions, a month to its days."""
    title = "Its days" if spend.group == "month" else "Its sessions"
    return format_html_join(
        "",
        '<tr class="row-{}"><td>{}</td><td class="num">{}</td>'
        '<td class="num">{}</td><td class="num">{}</td></tr>',
        (
            (
                row.kind,
                format_html('<a href="{}" title="{}">{}</a>', link, title, row.label)
                if link
                else row.label,
                format_usd(row.cost),
                row.count,
                row.unpriced or "",
            )
            for row, link in rows
            if row.count or not spend.by_time
        ),
    )
