"""The models the catalog knows: the model capability form (which hosted
tool kinds a model may use; a row that would leave out a kind a saved prompt
offers is refused, naming the prompts), the names the prompt form suggests,
and the warnings a prompt's model earns (``model_names``, ``model_warnings``)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from tooling import assembly
from tooling.assembly.edits import describe
from tooling.models import ModelCapability, ModelPrice
from tooling.runtime.hosted.spec import hosted_kind_names

from .fields import DatalistInput


def validate_model_name(value: str) -> None:
    """A model's name as the API spells it: one word of visible ASCII
    (``gpt-5``, ``ft:gpt-4o-mini:org::id``). A zero-width space or a
    non-breaking hyphen looked like the model in every list and warning, was
    unknown to the price list (unpriced calls, outside the budgets) and
    failed only when the prompt ran."""
    for position, char in enumerate(value, start=1):
        if not "!" <= char <= "~":
            raise ValidationError(
                "A model name is one word of letters, digits and ASCII "
                'punctuation, as the API spells it ("gpt-5"): not '
                "%(char)s at character %(position)s.",
                code="invalid_model_name",
                params={
                    "char": "a space" if char == " " else f"U+{ord(char):04X}",
                    "position": position,
                },
            )


def model_names() -> list[str]:
    """The models the catalog knows: those of the model capability table and
    of the price list, by name."""
    capable = ModelCapability.objects.values_list("model", flat=True)
    priced = ModelPrice.objects.values_list("model", flat=True).distinct()
    return sorted({*capable, *priced})


def model_warnings(model: str, hosted_kinds: Iterable[str] = ()) -> list[str]:
    """What an operator should know about a prompt's model, though it may be
    saved: a model in neither the capability table nor the price list (a
    typo, such as ``gtp-5.4``, fails only when the prompt runs), and hosted
    tools offered to a model whose capabilities the catalog does not know."""
    kinds = sorted(set(hosted_kinds))
    capable = ModelCapability.objects.filter(model=model).exists()
    priced = sorted(set(ModelPrice.objects.values_list("model", flat=True)))
    # a price of "gpt-5" prices the snapshot "gpt-5-2025-08-07" (pricing.py)
    is_priced = any(model == name or model.startswith(f"{name}-") for name in priced)
    warnings = []
    if not capable and not is_priced:
        close = difflib.get_close_matches(model, model_names(), n=1, cutoff=0.75)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        warnings.append(
            f"Model '{model}' is in neither the model capability table nor the "
            "price list: check its spelling (the provider refuses an unknown "
            f"model when the prompt runs; its runs are not priced).{hint}"
        )
    if not capable and kinds:
        warnings.append(
            f"Model '{model}' has no row in the model capability table, so the "
            f"hosted tools this prompt offers ({', '.join(kinds)}) are not "
            "checked against what it supports: add its row to have them checked."
        )
    return warnings


class ModelCapabilityForm(forms.ModelForm):
    """``hosted_kinds`` must be a list of kinds the catalog knows."""

    class Meta:
        model = ModelCapability
        fields = ["model", "hosted_kinds"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "model" not in self.fields:  # read-only (view permission only)
            return
        priced = ModelPrice.objects.values_list("model", flat=True).distinct()
        self.fields["model"].widget = DatalistInput(
            sorted(set(priced)), attrs={"class": "vTextField", "maxlength": 100}
        )
        self.fields[
            "model"
        ].help_text = (
            "The model, as the API spells it (the suggestions: the price list's)."
        )
        self.fields["hosted_kinds"].help_text = (
            "A JSON list of the hosted tool kinds this model may use, e.g. "
            '["web_search", "file_search"]; known kinds: '
            f"{', '.join(hosted_kind_names())}. An empty list allows none; a "
            "model without a row may use every kind."
        )

    def clean_model(self) -> str:
        model: str = self.cleaned_data["model"]
        validate_model_name(model)  # shown in every prompt's suggestions
        return model

    def clean_hosted_kinds(self) -> list[str]:
        value = self.cleaned_data.get("hosted_kinds")
        if value in (None, ""):
            return []
        known = hosted_kind_names()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValidationError(
                'Give a JSON list of kind names, e.g. ["web_search"]; known kinds: '
                f"{', '.join(known)}."
            )
        unknown = [kind for kind in value if kind not in known]
        if unknown:
            raise ValidationError(
                f"Unknown hosted tool kind(s): {', '.join(repr(k) for k in unknown)}; "
                f"known kinds: {', '.join(known)}."
            )
        return list(dict.fromkeys(value))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        model, kinds = cleaned.get("model"), cleaned.get("hosted_kinds")
        if self.errors or not model or kinds is None:
            return cleaned
        # A prompt on this model whose hosted tools the row would leave out
        # could no longer be previewed, run or released.
        problems = assembly.prompts_broken_by_capability(model, kinds)
        if problems:
            raise ValidationError(describe(problems, "This row"))
        return cleaned
