"""CSV cells a spreadsheet shows as they are: never run as a formula (OWASP
"CSV injection": a leading apostrophe makes the cell text), embeddings,
overrides and isolates shown as marks as on the pages (a spreadsheet would
reorder the text; the marks of right-to-left writing, U+200E, U+200F and
U+061C, are kept: Arabic or Hebrew text needs them), and
decimals written out in full. Every CSV the product writes goes through
``csv_cell`` (the cost report, an experiment's results)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

# What can reorder the text after it: embeddings, overrides and isolates.
REORDERING = re.compile("[\u202a-\u202e\u2066-\u2069]")

# A spreadsheet runs a cell that starts with one of these as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> str:
    """``value`` as a CSV cell (``None``: empty)."""
    if value is None:
        return ""
    if isinstance(value, Decimal):
        text = f"{value:f}"
    else:
        text = REORDERING.sub(lambda found: f"[U+{ord(found.group()):04X}]", str(value))
    return "'" + text if text.startswith(FORMULA_STARTS) else text
