"""CSV cells a spreadsheet shows as they are: never run as a formula (OWASP
"CSV injection": a leading apostrophe makes the cell text), embeddings,
overrides and isolates shown as marks as on the pages (a spreadsheet would
reorder the text; the marks of right-to-left writing, U+200E, U+200F and
U+061C, are kept: Arabic or Hebrew text needs them), and
decimals written out in full. Every CSV the product writes goes through
``csv_cell`` (the cost report, an experiment's results)."""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from typing import Any

# What can reorder the text after it: embeddings, overrides and isolates.
REORDERING = re.compile("[\u202a-\u202e\u2066-\u2069]")

# A spreadsheet runs a cell that starts with one of these as a formula, or
# with their full-width forms, which some read as the same; and some skip
# what comes before them first: spaces, line breaks, control and format
# characters (a NUL, a left-to-right mark).
FORMULA_STARTS = (
    "=",
    "+",
    "-",
    "@",
    "\t",
    "\r",
    "\uff1d",
    "\uff0b",
    "\uff0d",
    "\uff20",
)


def _runs_as_formula(text: str) -> bool:
    for position, character in enumerate(text):
        if text.startswith(FORMULA_STARTS, position):
            return True
        if not (character.isspace() or unicodedata.category(character) in ("Cc", "Cf")):
            return False
    return False


def csv_cell(value: Any) -> str:
    """``value`` as a CSV cell (``None``: empty)."""
    if value is None:
        return ""
    if isinstance(value, Decimal):
        text = f"{value:f}"
    else:
        text = REORDERING.sub(lambda found: f"[U+{ord(found.group()):04X}]", str(value))
    return "'" + text if _runs_as_formula(text) else text
