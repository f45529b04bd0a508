"""Money on the pages: ``{{ amount|usd }}``, one rule wherever a cost shows.

Amounts are ``Decimal`` (or whole numbers, or their text, as a form or the API
hands them over); a float is never money here, so it shows as nothing rather
than as a figure rounded through binary. USD:

- ``$12.35`` from a dollar up (cents);
- ``$0.0123`` from a cent to a dollar (four places, so per-call costs differ);
- below a cent, at least two significant digits: ``$0.0042``, ``$0.00042``;
- below ``$0.0001``: ``< $0.0001`` (a cost, not nothing); zero is ``$0.00``.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any

from django import template

register = template.Library()

CENT = Decimal("0.01")
TINY = Decimal("0.0001")
DOLLAR = Decimal(1)
#: Digits an amount may have, places included; a larger figure (no column
#: holds one) is not an amount, rather than an error on the page.
DIGITS = 40


def as_decimal(value: Any) -> Decimal | None:
    """``value`` as a finite Decimal, or None (floats and booleans included:
    they are not money)."""
    if isinstance(value, bool | float) or value is None:
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, str):
        try:
            value = Decimal(value.strip())
        except InvalidOperation:
            return None
    if not isinstance(value, Decimal) or not value.is_finite():
        return None
    return value


def _places(amount: Decimal) -> int:
    if amount >= DOLLAR:
        return 2
    if amount >= CENT:
        return 4
    # Two significant digits: 0.0042 -> 4 places, 0.00042 -> 5.
    return max(4, -amount.adjusted() + 1)


def format_usd(value: Any) -> str:
    """The text of ``usd`` (see the module); "" for what is not an amount."""
    amount = as_decimal(value)
    if amount is None:
        return ""
    sign = "-" if amount < 0 else ""
    amount = abs(amount)
    if amount == 0:
        return "$0.00"
    if amount < TINY:
        return f"{'> -' if sign else '< '}$0.0001"
    places = _places(amount)
    with localcontext() as context:
        context.prec = DIGITS
        try:
            shown = amount.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)
        except InvalidOperation:
            return ""
        if shown >= DOLLAR and places > 2:  # 0.99995 rounded up to a dollar
            places = 2
            shown = shown.quantize(CENT)
        # Past four places only significant digits: $0.0001, not $0.00010.
        while places > 4 and shown == shown.quantize(Decimal(1).scaleb(1 - places)):
            places -= 1
            shown = shown.quantize(Decimal(1).scaleb(-places))
    return f"{sign}${shown:,f}"


@register.filter
def usd(value: Any) -> str:
    """``{{ session.cost|usd }}``: see the module for the rule."""
    return format_usd(value)
