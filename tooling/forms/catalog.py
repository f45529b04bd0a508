"""The prompt template form and its sections' formset, and the preview form
(the section forms: ``sections``; the function tool form: ``tools``; the
policy form: ``policies``). Each validates by building the runtime object."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from tooling import assembly
from tooling.models import (
    CatalogRevision,
    PromptLabel,
    PromptTemplate,
    Release,
    TrustLevel,
)
from tooling.models.catalog import validate_prompt_name
from tooling.runtime import PromptError, ToolChoice, unsupported_kind_message
from tooling.runtime.limits import MAX_CALLS_PER_RUN, is_call_limit
from tooling.runtime.rendered import check_entered_schema
from tooling.runtime.text import BIDI_CONTROLS
from tooling.storable_json import StorableJSONFormField

from .capabilities import model_names, validate_model_name
from .fields import DatalistInput
from .validation import validated


class PromptTemplateForm(forms.ModelForm):
    class Meta:
        model = PromptTemplate
        fields = [
            "namespace",
            "key",
            "name",
            "description",
            "model",
            "policies",
            "output_schema",
            "tool_choice",
            "deadline_seconds",
            "max_total_tokens",
            "max_turns",
            "hosted_tool_limits",
            "enabled",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "model" not in self.fields:  # read-only (view permission only)
            return
        # read per form: a model priced a minute ago is suggested now
        self.fields["model"].widget = DatalistInput(
            model_names(), attrs={"class": "vTextField", "maxlength": 100}
        )
        self.fields["model"].help_text = (
            "The OpenAI model, as the API spells it. The suggestions are the "
            "models of the model capability table and the price list; another "
            "name is saved too, with a warning."
        )

    def _prompt_name(self, field: str) -> str:
        """``validate_prompt_name``, unless the name is the one saved: a
        prompt named before the rule can still be edited (a rename may be
        refused: ``_refuse_renaming_a_recorded_prompt``)."""
        value: str = self.cleaned_data[field]
        if self.instance.pk is None or value != getattr(self.instance, field):
            validate_prompt_name(value)
        return value

    def clean_model(self) -> str:
        model: str = self.cleaned_data["model"]
        if self.instance.pk is None or model != self.instance.model:
            validate_model_name(model)  # (a name saved before may stay)
        return model

    def clean_namespace(self) -> str:
        return self._prompt_name("namespace")

    def clean_key(self) -> str:
        return self._prompt_name("key")

    def clean_hosted_tool_limits(self) -> dict[str, int]:
        """The limits' shape; their names are checked against the prompt's
        hosted tools when the whole prompt is built (``PromptSectionFormSet``),
        by the runtime's own rule."""
        value = self.cleaned_data.get("hosted_tool_limits")
        if value in (None, "", {}):
            return {}
        if not isinstance(value, dict):
            raise ValidationError(
                'Hosted tool limits must be a JSON object, e.g. {"web_search": 2}.'
            )
        problems = [
            f"'{name[:64]}': the most calls per run must be a whole number from "
            f"0 to {MAX_CALLS_PER_RUN}."
            for name, limit in value.items()
            if not is_call_limit(limit)
        ]
        if problems:
            raise ValidationError(problems)
        return value

    def clean_tool_choice(self) -> str:
        value = (self.cleaned_data.get("tool_choice") or "auto").strip()
        try:
            ToolChoice.parse(value)
        except PromptError as error:
            raise ValidationError(error.message) from error
        return value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        self._refuse_renaming_a_recorded_prompt(cleaned)
        schema = cleaned.get("output_schema")
        if schema not in (None, {}, ""):
            candidate = PromptTemplate(
                namespace=cleaned.get("namespace", ""),
                key=cleaned.get("key", ""),
                name=cleaned.get("name", ""),
                output_schema=schema,
            )
            validated(self, lambda: assembly.output_for(candidate), "output_schema")
            if "output_schema" not in self.errors and isinstance(schema, dict):
                entered: dict[str, Any] = schema
                validated(self, lambda: check_entered_schema(entered), "output_schema")
        return cleaned

    def _refuse_renaming_a_recorded_prompt(self, cleaned: dict[str, Any]) -> None:
        """Sessions, revisions, releases and history name a prompt by its
        ``namespace/key``: once it has run or been released, a new name would
        cut it off from them (its label would point at a revision of another
        name, and no run would start)."""
        old = self.instance
        if old.pk is None or not {"namespace", "key"} <= cleaned.keys():
            return
        saved = PromptTemplate.objects.filter(pk=old.pk).values("namespace", "key")
        before = saved.first()
        if before is None or (before["namespace"], before["key"]) == (
            cleaned["namespace"],
            cleaned["key"],
        ):
            return
        ref = f"{before['namespace']}/{before['key']}"
        if (
            PromptLabel.objects.filter(prompt_id=old.pk).exists()
            or Release.objects.filter(prompt_ref=ref).exists()
            or CatalogRevision.objects.filter(prompt_ref=ref).exists()
        ):
            raise ValidationError(
                f"'{ref}' has run or been released under this name: its sessions, "
                "revisions, releases and history keep it, so it cannot be renamed. "
                "Add a prompt under the new name instead (and disable this one)."
            )


class PromptSectionFormSet(forms.BaseInlineFormSet):
    """Validates the whole prompt (sections, tools, policies, tool choice) by
    building it, before anything is saved."""

    def clean(self) -> None:
        super().clean()
        if any(self.errors):
            return
        links = []
        for form in self.forms:
            data = getattr(form, "cleaned_data", None)
            if not data or data.get("DELETE") or not data.get("section"):
                continue
            links.append((data.get("position") or 0, data["section"]))
        if not links:
            raise ValidationError("A prompt needs at least one section.")
        sections = [section for _, section in sorted(links, key=lambda x: x[0])]
        policies = getattr(self.instance, "_pending_policies", None)
        try:
            prompt = assembly.build_prompt_from_parts(
                self.instance, roots=sections, policies=policies
            )
        except PromptError as error:
            raise ValidationError(error.message) from error
        # for the warnings shown once the prompt is saved (model_warnings)
        self.instance._hosted_kinds = sorted(
            {tool.kind for tool in prompt.declared_hosted_tools()}
        )
        capabilities = assembly.model_capabilities(self.instance.model)
        if capabilities is not None:
            message = unsupported_kind_message(
                self.instance.model,
                capabilities[self.instance.model],
                prompt.declared_hosted_tools(),
            )
            if message is not None:
                raise ValidationError(message)


class PreviewForm(forms.Form):
    params = StorableJSONFormField(
        required=False,
        initial=dict,
        widget=forms.Textarea(attrs={"rows": 6, "cols": 80}),
        help_text="Sample parameters as a JSON object.",
    )
    trust_level = forms.ChoiceField(
        choices=TrustLevel.choices,
        initial=TrustLevel.STANDARD,
        required=False,
        help_text="The session's trust level: hosted tools that need a higher "
        "level are withheld.",
    )

    def clean_trust_level(self) -> str:
        return self.cleaned_data.get("trust_level") or TrustLevel.STANDARD

    def clean_params(self) -> dict[str, Any]:
        value = self.cleaned_data.get("params")
        if value in (None, ""):
            return {}
        if not isinstance(value, dict):
            raise ValidationError("Params must be a JSON object.")
        return value


def pretty(value: Any) -> str:
    """``value`` as indented JSON, its characters as they are but for bidi
    controls, written as JSON escapes (``\\u202e``): the text is still exactly
    the JSON (a copy parses to the same value) and cannot reorder the page."""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    # (JSON's structure is ASCII: a bidi control is inside a string)
    return BIDI_CONTROLS.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
