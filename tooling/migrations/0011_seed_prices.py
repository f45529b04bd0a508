"""Seed the price list with OpenAI's public list prices (docs/costs.md).

These are data, dated, for the operator to check and edit in the admin (Price
list): prices change, and a new row with a later ``effective_from`` replaces a
price from that day on. Every seeded row takes effect on 2025-01-01 and names
its source. Model rates are USD per million tokens; cache writes are billed
like uncached input (OpenAI charges nothing extra for them); no model has a
separate reasoning rate (reasoning tokens are billed as output).

Reversing the migration removes the seeded rows still as seeded (same model or
kind and variant, day and source); rows the operator edited stay.
"""

from datetime import date
from decimal import Decimal

from django.db import migrations

EFFECTIVE_FROM = date(2025, 1, 1)
SOURCE = "openai.com/api/pricing, as listed 2026-11"
# gpt-5.4 (the demo model) was not known when these were written: its rows
# copy its family's rates and say so.
LIKE_GPT5 = "price not known when seeded (2026-11): set like gpt-5; check " + SOURCE
LIKE_GPT5_MINI = (
    "price not known when seeded (2026-11): set like gpt-5-mini; check " + SOURCE
)
# a model listed without a cached-input price: cached input at the input rate
NO_CACHE_DISCOUNT = f"{SOURCE} (no cached-input discount listed)"

# model: (input, cached input, output) per million tokens, and the source
MODELS = {
    "gpt-5": ("1.25", "0.125", "10.00", SOURCE),
    "gpt-5-mini": ("0.25", "0.025", "2.00", SOURCE),
    "gpt-5-nano": ("0.05", "0.005", "0.40", SOURCE),
    "gpt-5.4": ("1.25", "0.125", "10.00", LIKE_GPT5),
    "gpt-5.4-mini": ("0.25", "0.025", "2.00", LIKE_GPT5_MINI),
    "gpt-4.1": ("2.00", "0.50", "8.00", SOURCE),
    "gpt-4.1-mini": ("0.40", "0.10", "1.60", SOURCE),
    "gpt-4.1-nano": ("0.10", "0.025", "0.40", SOURCE),
    "gpt-4o": ("2.50", "1.25", "10.00", SOURCE),
    "gpt-4o-mini": ("0.15", "0.075", "0.60", SOURCE),
    "o3": ("2.00", "0.50", "8.00", SOURCE),
    "o4-mini": ("1.10", "0.275", "4.40", SOURCE),
    # Family members priced apart from the name they start with: without
    # their own row, the longest-prefix rule would price them at their base
    # model's (much lower) rates, and budgets would let them overspend.
    "gpt-5-pro": ("15.00", "15.00", "120.00", NO_CACHE_DISCOUNT),
    "o3-pro": ("20.00", "20.00", "80.00", NO_CACHE_DISCOUNT),
    "o3-mini": ("1.10", "0.55", "4.40", SOURCE),
    "o3-deep-research": ("10.00", "2.50", "40.00", SOURCE),
    "o4-mini-deep-research": ("2.00", "0.50", "8.00", SOURCE),
    "o1": ("15.00", "7.50", "60.00", SOURCE),
    "o1-pro": ("150.00", "150.00", "600.00", NO_CACHE_DISCOUNT),
    "o1-mini": ("1.10", "0.55", "4.40", SOURCE),
    "gpt-4o-2024-05-13": ("5.00", "5.00", "15.00", NO_CACHE_DISCOUNT),
}

CONTAINERS = {"1g": "0.03", "4g": "0.12", "16g": "0.48", "64g": "1.92"}
SHELL_SOURCE = f"{SOURCE} (containers, as for code interpreter)"
# gpt-image-1, per image: quality -> size -> USD
IMAGES = {
    "low": {"1024x1024": "0.011", "1024x1536": "0.016", "1536x1024": "0.016"},
    "medium": {"1024x1024": "0.042", "1024x1536": "0.063", "1536x1024": "0.063"},
    "high": {"1024x1024": "0.167", "1024x1536": "0.25", "1536x1024": "0.25"},
}
IMAGE_SOURCE = f"{SOURCE} (gpt-image-1, per image)"


def hosted_rows():
    """(kind, unit, variant, price, source) of every seeded hosted price."""
    yield "web_search", "call", "", "0.01", f"{SOURCE} ($10 per 1k calls)"
    yield "file_search", "call", "", "0.0025", f"{SOURCE} ($2.50 per 1k calls)"
    for memory, price in CONTAINERS.items():
        yield "code_interpreter", "container", memory, price, SOURCE
        yield "shell", "container", memory, price, SHELL_SOURCE
    for quality, sizes in IMAGES.items():
        for size, price in sizes.items():
            yield "image_generation", "image", f"{quality}:{size}", price, IMAGE_SOURCE


def seed(apps, schema_editor):
    """Add the seeded rows that are missing (idempotent)."""
    ModelPrice = apps.get_model("tooling", "ModelPrice")
    HostedToolPrice = apps.get_model("tooling", "HostedToolPrice")
    for model, (input_rate, cached, output, source) in MODELS.items():
        ModelPrice.objects.get_or_create(
            model=model,
            effective_from=EFFECTIVE_FROM,
            defaults={
                "input_per_mtok": Decimal(input_rate),
                "cached_input_per_mtok": Decimal(cached),
                "cache_write_per_mtok": Decimal(input_rate),
                "output_per_mtok": Decimal(output),
                "reasoning_per_mtok": None,
                "source": source,
            },
        )
    for kind, unit, variant, price, source in hosted_rows():
        HostedToolPrice.objects.get_or_create(
            kind=kind,
            variant=variant,
            effective_from=EFFECTIVE_FROM,
            defaults={"unit": unit, "price": Decimal(price), "source": source},
        )


def unseed(apps, schema_editor):
    ModelPrice = apps.get_model("tooling", "ModelPrice")
    HostedToolPrice = apps.get_model("tooling", "HostedToolPrice")
    for model, (_, _, _, source) in MODELS.items():
        ModelPrice.objects.filter(
            model=model, effective_from=EFFECTIVE_FROM, source=source
        ).delete()
    for kind, _, variant, _, source in hosted_rows():
        HostedToolPrice.objects.filter(
            kind=kind, variant=variant, effective_from=EFFECTIVE_FROM, source=source
        ).delete()


class Migration(migrations.Migration):
    dependencies = [("tooling", "0010_issue13_schema")]

    operations = [migrations.RunPython(seed, unseed)]
