"""CSV cells a spreadsheet shows as they are: never run as a formula (OWASP
"CSV injection": a leading apostrophe makes the cell text), bidi controls
shown as marks as on the pages (a spreadsheet would reorder the text), and
decimals written out in full. Every CSV the product writes goes through
``csv_cell`` (the cost report, an experiment's results)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tooling.bidi import neutralise

# A spreadsheet runs a cell that starts with one of these as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> str:
    """``value`` as a CSV cell (``None``: empty)."""
    if value is None:
        return ""
    text = f"{value:f}" if isinstance(value, Decimal) else neutralise(str(value))
    return "'" + text if text.startswith(FORMULA_STARTS) else text
