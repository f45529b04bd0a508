"""The admin of the price list and the users' daily budgets (docs/costs.md).

Forms refuse what the runtime would never charge: a hosted price whose unit
is not its kind's, or whose variant no call can have (the rules are the
runtime's, ``tooling.runtime.pricing.fee_problem``); amounts are non-negative
(the models' validators) and a second price for the same model, or kind and
variant, from the same day is a form error (the unique constraints).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from tooling.forms.capabilities import validate_model_name
from tooling.forms.fields import PLAIN_AMOUNTS
from tooling.history.admin import HistoryAdminMixin
from tooling.models import HostedToolPrice, ModelPrice, UserBudget
from tooling.runtime.pricing import fee_problem

# the form's fields and the changelist's columns
MODEL_PRICE_FIELDS = (
    "model",
    "effective_from",
    "input_per_mtok",
    "cached_input_per_mtok",
    "cache_write_per_mtok",
    "output_per_mtok",
    "reasoning_per_mtok",
    "source",
)


class ModelPriceForm(forms.ModelForm):
    class Meta:
        model = ModelPrice
        fields = MODEL_PRICE_FIELDS

    def clean_model(self) -> str:
        model = str(self.cleaned_data["model"]).strip()
        if not model:
            raise forms.ValidationError(
                'A model name is one word, as the API spells it ("gpt-5").'
            )
        validate_model_name(model)  # shown in every prompt's suggestions
        return model


class HostedToolPriceForm(forms.ModelForm):
    class Meta:
        model = HostedToolPrice
        fields = ["kind", "unit", "variant", "price", "effective_from", "source"]

    def clean_variant(self) -> str:
        return str(self.cleaned_data.get("variant") or "").strip().lower()

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        kind, unit = cleaned.get("kind"), cleaned.get("unit")
        if kind and unit:
            problem = fee_problem(kind, unit, cleaned.get("variant", ""))
            if problem is not None:
                self.add_error(*problem)
        return cleaned


@admin.register(ModelPrice)
class ModelPriceAdmin(HistoryAdminMixin, admin.ModelAdmin):
    formfield_overrides = PLAIN_AMOUNTS
    form = ModelPriceForm
    list_display = MODEL_PRICE_FIELDS
    list_filter = ["effective_from"]
    search_fields = ["model"]
    date_hierarchy = "effective_from"


@admin.register(HostedToolPrice)
class HostedToolPriceAdmin(HistoryAdminMixin, admin.ModelAdmin):
    formfield_overrides = PLAIN_AMOUNTS
    form = HostedToolPriceForm
    list_display = ["kind", "unit", "variant", "price", "effective_from", "source"]
    list_filter = ["kind", "unit", "effective_from"]
    search_fields = ["kind", "variant"]
    date_hierarchy = "effective_from"


@admin.register(UserBudget)
class UserBudgetAdmin(admin.ModelAdmin):
    formfield_overrides = PLAIN_AMOUNTS
    list_display = ["user", "daily_limit", "updated_at"]
    list_select_related = ["user"]
    search_fields = ["user__username", "user__email"]
    raw_id_fields = ["user"]
