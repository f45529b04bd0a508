"""Price rows -> the runtime's ``PriceSheet`` (``tooling.runtime.pricing``).

``price_sheet`` reads the model rates and hosted fees in effect on a day, in
two queries. Given the catalog generation token read before them (the one
``load_template`` reads with the template), the sheet is cached per token and
day: price tables bump the generation like every catalog table
(``tooling.generation``), so a cached sheet is never older than the catalog
the token names, and the next run on an unchanged catalog reads no price row.

A row the runtime refuses (a negative rate or an unknown unit written around
the admin's validation) is left out and logged: its model or kind is then
unpriced, which the session shows, rather than failing the run.
"""

from __future__ import annotations

import logging
from datetime import date

from django.utils import timezone

from tooling.models import HostedToolPrice, ModelPrice
from tooling.runtime.pricing import HostedFee, ModelRate, PriceSheet

from .lru import LRUCache

logger = logging.getLogger(__name__)

_SHEETS: LRUCache[tuple[str, date], PriceSheet] = LRUCache(32)


_RATE_FIELDS = (
    "pk",
    "model",
    "input_per_mtok",
    "cached_input_per_mtok",
    "cache_write_per_mtok",
    "output_per_mtok",
    "reasoning_per_mtok",
)
_FEE_FIELDS = ("pk", "kind", "unit", "price", "variant")


def _read(on: date) -> PriceSheet:
    # values_list: no model instances, the sheet is all a run needs
    rates: list[ModelRate] = []
    for pk, *rate in ModelPrice.objects.in_effect(on).values_list(*_RATE_FIELDS):
        try:
            rates.append(ModelRate(*rate))
        except (TypeError, ValueError) as error:
            logger.warning("Model price %s is not usable: %s", pk, error)
    fees: list[HostedFee] = []
    for pk, *fee in HostedToolPrice.objects.in_effect(on).values_list(*_FEE_FIELDS):
        try:
            fees.append(HostedFee(*fee))
        except (TypeError, ValueError) as error:
            logger.warning("Hosted tool price %s is not usable: %s", pk, error)
    return PriceSheet.of(rates, fees)


def price_sheet(*, on: date | None = None, token: str | None = None) -> PriceSheet:
    """The prices in effect on ``on`` (default: today, in the project's time
    zone). ``token``: the catalog generation read before this call (see the
    module docstring); without one nothing is cached."""
    on = on or timezone.localdate(timezone=timezone.get_default_timezone())
    if not token:
        return _read(on)
    key = (token, on)
    sheet = _SHEETS.get(key)
    if sheet is None:
        sheet = _read(on)
        _SHEETS.put(key, sheet)
    return sheet


def clear_cache() -> None:
    _SHEETS.clear()


__all__ = ["clear_cache", "price_sheet"]
