"""Admin forms. Each validates by building the runtime object (assembly.py), so
an operator sees the rule and message the runtime enforces."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from tooling import assembly
from tooling.handlers import registry
from tooling.models import (
    HostedToolDefinition,
    PolicyDefinition,
    PromptTemplate,
    SectionDefinition,
    ToolDefinition,
)
from tooling.runtime import PromptError, ToolChoice

# Which form field a runtime error's ``placeholder`` belongs to.
_FIELD_OF = {
    "name": "name",
    "description": "description",
    "examples": "examples",
    "handler": "handler_key",
    "handler_key": "handler_key",
    "ParamsT": "handler_key",
    "ResultT": "handler_key",
    "key": "key",
    "kind": "kind",
    "config": "config",
    "dependencies": "config",
    "allowed_domains": "allowed_domains",
    "country_code": "country",
    "timezone": "timezone",
    "search_context_size": "search_context_size",
    "default_params": "default_params",
    "enabled_when_param": "enabled_when_param",
    "output_schema": "output_schema",
}


def runtime_error(
    error: PromptError, form: forms.BaseForm, default: str | None = None
) -> ValidationError:
    """A ``ValidationError`` attached to the field the runtime blamed."""
    name = _FIELD_OF.get(error.placeholder or "", default)
    if name in form.fields:
        return ValidationError({name: error.message})
    return ValidationError(error.message)


def validated(
    form: forms.ModelForm, build: Callable[[], Any], default: str | None = None
) -> Any:
    try:
        return build()
    except PromptError as error:
        raise runtime_error(error, form, default) from error


class ToolDefinitionForm(forms.ModelForm):
    handler_key = forms.ChoiceField(label="Handler", choices=())

    class Meta:
        model = ToolDefinition
        fields = [
            "name",
            "handler_key",
            "description",
            "param_descriptions",
            "examples",
            "enabled",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["handler_key"].choices = [("", "---------"), *registry.choices()]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        candidate = ToolDefinition(
            name=cleaned.get("name", ""),
            handler_key=cleaned.get("handler_key", ""),
            description=cleaned.get("description", ""),
            examples=cleaned.get("examples") or [],
        )
        tool = validated(self, lambda: assembly.build_tool(candidate))
        overrides = cleaned.get("param_descriptions") or {}
        if not isinstance(overrides, dict) or not all(
            isinstance(v, str) for v in overrides.values()
        ):
            raise ValidationError(
                {"param_descriptions": 'Use {"parameter": "description"}.'}
            )
        if overrides and not tool.accepts_overrides:
            raise ValidationError(
                {
                    "param_descriptions": f"Handler '{candidate.handler_key}' does not "
                    "accept overrides; leave the parameter descriptions empty."
                }
            )
        known = (
            set(tool.params_type.__dataclass_fields__) if tool.params_type else set()
        )
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValidationError(
                {
                    "param_descriptions": "Unknown parameter(s): "
                    f"{', '.join(unknown)}; "
                    f"the handler takes: {', '.join(sorted(known)) or 'none'}."
                }
            )
        for field_name, text in overrides.items():
            if not text.strip() or not text.isascii() or len(text) > 200:
                raise ValidationError(
                    {
                        "param_descriptions": f"Description of '{field_name}' must be "
                        "1-200 ASCII characters."
                    }
                )
        return cleaned


def _lines(value: str) -> list[str]:
    return [
        line.strip() for line in value.replace(",", "\n").splitlines() if line.strip()
    ]


class HostedToolDefinitionForm(forms.ModelForm):
    """Typed fields per kind; web search gets its own fields, other kinds a
    JSON config validated by building the runtime config."""

    allowed_domains = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="Web search: one domain per line, without https:// (max 100).",
    )
    country = forms.CharField(
        required=False, max_length=2, help_text="Web search: ISO 3166-1 alpha-2."
    )
    city = forms.CharField(required=False, max_length=100)
    region = forms.CharField(required=False, max_length=100)
    timezone = forms.CharField(
        required=False, max_length=64, help_text="Web search: IANA, e.g. Europe/Berlin."
    )
    search_context_size = forms.ChoiceField(
        required=False,
        choices=[
            ("", "default"),
            ("low", "low"),
            ("medium", "medium"),
            ("high", "high"),
        ],
    )
    allow_live_access = forms.BooleanField(required=False, initial=True)

    web_search_fields = (
        "allowed_domains",
        "country",
        "city",
        "region",
        "timezone",
        "search_context_size",
        "allow_live_access",
    )

    class Meta:
        model = HostedToolDefinition
        fields = ["name", "kind", "description", "config", "enabled"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["config"].required = False
        instance = self.instance
        if instance.pk and instance.kind == HostedToolDefinition.Kind.WEB_SEARCH:
            config = instance.config or {}
            self.initial["allowed_domains"] = "\n".join(
                config.get("allowed_domains", [])
            )
            for name in (
                "country",
                "city",
                "region",
                "timezone",
                "search_context_size",
            ):
                self.initial[name] = config.get(name, "")
            self.initial["allow_live_access"] = config.get("allow_live_access", True)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        if cleaned.get("kind") == HostedToolDefinition.Kind.WEB_SEARCH:
            config: dict[str, Any] = {
                "allowed_domains": _lines(cleaned.get("allowed_domains", "")),
                "allow_live_access": bool(cleaned.get("allow_live_access")),
            }
            for name in (
                "country",
                "city",
                "region",
                "timezone",
                "search_context_size",
            ):
                if cleaned.get(name):
                    config[name] = cleaned[name].strip()
            cleaned["config"] = config
        elif cleaned.get("config") is None:
            cleaned["config"] = {}
        candidate = HostedToolDefinition(
            name=cleaned.get("name", ""),
            kind=cleaned.get("kind", ""),
            description=cleaned.get("description", ""),
            config=cleaned["config"],
        )
        validated(self, lambda: assembly.build_hosted_tool(candidate), "config")
        return cleaned

    def save(self, commit: bool = True) -> HostedToolDefinition:
        self.instance.config = self.cleaned_data["config"]
        return super().save(commit)


class PolicyDefinitionForm(forms.ModelForm):
    class Meta:
        model = PolicyDefinition
        fields = ["name", "kind", "config", "description"]
        help_texts = {
            "config": 'Sequential dependency: {"dependencies": {"deploy": ["build", '
            '"test"]}}. Read before write: {"read_tools": ["read_file"], '
            '"write_tools": ["write_file", "edit_file"], "mount_point": ""}.'
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        candidate = PolicyDefinition(
            name=cleaned.get("name", ""),
            kind=cleaned.get("kind", ""),
            config=cleaned.get("config") or {},
        )
        validated(self, lambda: assembly.build_policy(candidate), "config")
        return cleaned


class SectionDefinitionForm(forms.ModelForm):
    class Meta:
        model = SectionDefinition
        fields = [
            "key",
            "title",
            "template",
            "default_params",
            "enabled",
            "enabled_when_param",
            "parent",
            "position",
            "policies",
        ]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        candidate = SectionDefinition(
            key=cleaned.get("key", ""),
            title=cleaned.get("title", ""),
            template=cleaned.get("template", ""),
            default_params=cleaned.get("default_params") or {},
            enabled=cleaned.get("enabled", True),
            enabled_when_param=cleaned.get("enabled_when_param", ""),
        )
        validated(self, lambda: assembly.build_section(candidate), "template")
        parent = cleaned.get("parent")
        while parent is not None:
            if self.instance.pk and parent.pk == self.instance.pk:
                raise ValidationError(
                    {"parent": "A section cannot be its own ancestor."}
                )
            parent = parent.parent
        return cleaned


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
            "enabled",
        ]

    def clean_tool_choice(self) -> str:
        value = (self.cleaned_data.get("tool_choice") or "auto").strip()
        try:
            ToolChoice.parse(value)
        except PromptError as error:
            raise ValidationError(error.message) from error
        return value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        schema = cleaned.get("output_schema")
        if schema not in (None, {}, ""):
            candidate = PromptTemplate(
                namespace=cleaned.get("namespace", ""),
                key=cleaned.get("key", ""),
                name=cleaned.get("name", ""),
                output_schema=schema,
            )
            validated(self, lambda: assembly.output_for(candidate), "output_schema")
        return cleaned


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
            assembly.build_prompt_from_parts(
                self.instance, roots=sections, policies=policies
            )
        except PromptError as error:
            raise ValidationError(error.message) from error


class PreviewForm(forms.Form):
    params = forms.JSONField(
        required=False,
        initial=dict,
        widget=forms.Textarea(attrs={"rows": 6, "cols": 80}),
        help_text="Sample parameters as a JSON object.",
    )

    def clean_params(self) -> dict[str, Any]:
        value = self.cleaned_data.get("params")
        if value in (None, ""):
            return {}
        if not isinstance(value, dict):
            raise ValidationError("Params must be a JSON object.")
        return value


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
