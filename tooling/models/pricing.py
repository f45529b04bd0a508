"""The price list and spending limits: what model tokens and hosted tool calls
cost, from which day, and how much a user may spend per day.

Prices are data an operator edits (seeded with public list prices, see
docs/costs.md); a run is priced with the rows in effect when it starts
(``tooling.assembly.pricing``). Amounts are USD, as ``Decimal``.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Exists, OuterRef

from tooling.models.tools import TimestampedModel, hosted_kind_choices

NON_NEGATIVE = [MinValueValidator(Decimal(0))]


def _rate(help_text: str, **kwargs: object) -> models.DecimalField[Decimal, Decimal]:
    return models.DecimalField(
        max_digits=12,
        decimal_places=6,
        validators=NON_NEGATIVE,
        help_text=help_text,
        **kwargs,  # type: ignore[arg-type]
    )


class ModelPriceQuerySet(models.QuerySet["ModelPrice"]):
    def in_effect(self, on: date) -> ModelPriceQuerySet:
        """Each model's rates in effect on ``on``: its row with the latest
        ``effective_from`` on or before that day (one query)."""
        newer = ModelPrice.objects.filter(
            model=OuterRef("model"),
            effective_from__gt=OuterRef("effective_from"),
            effective_from__lte=on,
        )
        return self.filter(effective_from__lte=on).filter(~Exists(newer))


class HostedToolPriceQuerySet(models.QuerySet["HostedToolPrice"]):
    def in_effect(self, on: date) -> HostedToolPriceQuerySet:
        """Each ``(kind, variant)``'s price in effect on ``on`` (one query)."""
        newer = HostedToolPrice.objects.filter(
            kind=OuterRef("kind"),
            variant=OuterRef("variant"),
            effective_from__gt=OuterRef("effective_from"),
            effective_from__lte=on,
        )
        return self.filter(effective_from__lte=on).filter(~Exists(newer))


class ModelPrice(TimestampedModel):
    """A model's token rates (USD per million tokens) from a day on."""

    model = models.CharField(
        max_length=100,
        help_text="A model name. A session's model matches it exactly, or as a "
        'snapshot: "gpt-5" prices "gpt-5-2025-08-07".',
    )
    effective_from = models.DateField(help_text="The first day these rates apply.")
    input_per_mtok = _rate("Uncached input, per million tokens.")
    cached_input_per_mtok = _rate("Cached input, per million tokens.")
    cache_write_per_mtok = _rate(
        "Input tokens written to the prompt cache, per million (billed at this "
        "rate instead of the input rate; OpenAI: the input rate).",
        default=Decimal(0),
    )
    output_per_mtok = _rate("Output, per million tokens.")
    reasoning_per_mtok = _rate(
        "Reasoning tokens, per million. Empty: billed as output (they are part of it).",
        null=True,
        blank=True,
    )
    source = models.CharField(
        max_length=200, blank=True, help_text="Where the rates come from, and when."
    )

    objects = ModelPriceQuerySet.as_manager()

    class Meta:
        ordering = ["model", "-effective_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["model", "effective_from"], name="model_price_unique_day"
            )
        ]

    def __str__(self) -> str:
        return f"{self.model} from {self.effective_from}"


class HostedToolPrice(TimestampedModel):
    """The fee of a hosted tool's unit (a call, a container, an image)."""

    class Unit(models.TextChoices):
        CALL = "call", "per call"
        CONTAINER = "container", "per container"
        IMAGE = "image", "per image"

    kind = models.CharField(max_length=32, choices=hosted_kind_choices)
    unit = models.CharField(max_length=16, choices=Unit.choices)
    variant = models.CharField(
        max_length=64,
        blank=True,
        help_text='Empty: the kind\'s default. Containers: memory ("1g", "4g", '
        '"16g", "64g"). Images: "<quality>:<size>", e.g. "medium:1024x1024".',
    )
    price = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        validators=NON_NEGATIVE,
        help_text="USD per unit.",
    )
    effective_from = models.DateField(help_text="The first day this price applies.")
    source = models.CharField(
        max_length=200, blank=True, help_text="Where the price comes from, and when."
    )

    objects = HostedToolPriceQuerySet.as_manager()

    class Meta:
        ordering = ["kind", "variant", "-effective_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "variant", "effective_from"],
                name="hosted_price_unique_day",
            )
        ]

    def __str__(self) -> str:
        variant = f" {self.variant}" if self.variant else ""
        return f"{self.kind}{variant} from {self.effective_from}"


class UserBudget(TimestampedModel):
    """How much one user's runs may spend per day (overrides
    ``WINK_DAILY_BUDGET_USD``)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="budget"
    )
    daily_limit = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        validators=NON_NEGATIVE,
        help_text="USD per day (the project's time zone). 0 refuses every run.",
    )

    class Meta:
        ordering = ["user"]

    def __str__(self) -> str:
        return f"{self.user} ${self.daily_limit}/day"
