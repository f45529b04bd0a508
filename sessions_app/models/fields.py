"""The fields every audit row of a session shares: the id of the event it
records, a cost in USD, and whether its text was altered to be stored."""

from __future__ import annotations

from typing import Any

from django.db import models


def event_id_field() -> models.UUIDField[Any, Any]:
    """The id of the runtime event a row records: unique, so recording the same
    event twice (a resumed run, a second worker) cannot add a row."""
    return models.UUIDField(null=True, unique=True, editable=False)


def cost_field(help_text: str) -> models.DecimalField[Any, Any]:
    """USD; NULL when no price is in effect (or nothing to price)."""
    return models.DecimalField(
        max_digits=18,
        decimal_places=10,
        null=True,
        blank=True,
        help_text=f"USD. {help_text} Empty: unpriced.",
    )


def text_altered_field() -> models.BooleanField[Any, Any]:
    return models.BooleanField(
        default=False,
        help_text="Text in this row was not storable as received (NUL bytes, lone "
        "surrogates, over-long ids or names) and was replaced or cut.",
    )
