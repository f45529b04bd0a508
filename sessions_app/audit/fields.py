"""Fields the audit API's serializers share."""

from __future__ import annotations

from rest_framework import serializers


def usd_field(
    help_text: str, *, null: bool = True, digits: int = 18, places: int = 10
) -> serializers.DecimalField:
    """USD as a decimal string (never a float: JSON numbers lose cents).
    ``digits``/``places`` as the column's (a cost by default); a sum of many
    needs more digits, or DRF's rounding refuses it."""
    return serializers.DecimalField(
        max_digits=digits,
        decimal_places=places,
        coerce_to_string=True,
        read_only=True,
        allow_null=null,
        help_text=help_text,
    )
