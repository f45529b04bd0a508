"""Numbers written as text (a query value, a config's amount), read strictly.

Python's ``int()``, ``float()`` and ``Decimal()`` read more than a person or a
client means by a number: an underscore between digits (``1_000``), surrounding
whitespace, a sign, the decimal digits of any script (``١٢``, Arabic-Indic
twelve), and for ``float()``/``Decimal()`` an exponent (``1e400``), ``NaN`` and
``Infinity``. Another program reading the same text does not read it the same
way. Here a whole number is ASCII digits only, and a decimal is written plainly:
ASCII digits with at most one point between or before them (``0.05``, ``.5``,
``12``): no sign, exponent, separator or whitespace. Each function answers
``None`` for anything else; its caller says what it expected.
"""

from __future__ import annotations

import re
from decimal import Decimal

_WHOLE = re.compile(r"[0-9]+")
_PLAIN_DECIMAL = re.compile(r"[0-9]*\.?[0-9]+")

#: What a plain decimal is, for messages.
PLAIN_DECIMAL = "digits, with a point before a fraction (0.05): no sign or exponent"


def whole_number(text: str) -> int | None:
    """``text`` as a whole number if it is ASCII digits only (Python's limit
    on the digits of an integer read from text applies: past it, ``None``)."""
    if not _WHOLE.fullmatch(text):
        return None
    try:
        return int(text)
    except ValueError:  # over sys.get_int_max_str_digits() digits
        return None


def plain_decimal(text: str) -> Decimal | None:
    """``text`` as a ``Decimal`` if it is a plain decimal (see the module)."""
    if not _PLAIN_DECIMAL.fullmatch(text):
        return None
    return Decimal(text)
