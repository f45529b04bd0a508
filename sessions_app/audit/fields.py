"""Fields the audit API's serializers share."""

from __future__ import annotations

import math
from typing import Any

from django.db import models
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


class FiniteFloatField(serializers.FloatField):
    """A stored float as JSON can carry it: not a number or an infinity
    (which no recorder writes, but a row written otherwise may hold) is
    null, where strict JSON would fail the whole response."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["allow_null"] = True
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> Any:
        number = float(value)
        return number if math.isfinite(number) else None


#: A model serializer's field mapping with every float a ``FiniteFloatField``.
FINITE_FLOAT_MAPPING = {
    **serializers.ModelSerializer.serializer_field_mapping,
    models.FloatField: FiniteFloatField,
}
