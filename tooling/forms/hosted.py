"""Hosted tool and model capability forms: typed fields per kind, validated
by building the runtime tool."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from tooling import assembly
from tooling.assembly import CatalogEdit
from tooling.models import (
    HostedToolDefinition,
    ModelCapability,
    TrustLevel,
)
from tooling.runtime.hosted.code_interpreter import MEMORY_LIMITS
from tooling.runtime.hosted.file_search import MAX_RESULTS_LIMIT, RANKERS
from tooling.runtime.hosted.image_generation import (
    ACTIONS,
    BACKGROUNDS,
    FORMATS,
    MAX_PARTIAL_IMAGES,
    MODERATIONS,
    QUALITIES,
)
from tooling.runtime.hosted.mcp import APPROVAL_MODES
from tooling.storable_json import StorableJSONFormField

from .validation import refuse_breaking, validated


def _lines(value: str) -> list[str]:
    return [
        line.strip() for line in value.replace(",", "\n").splitlines() if line.strip()
    ]


class _OptionalJSONField(StorableJSONFormField):
    """A JSON field that shows nothing (not ``null``) when it has no value."""

    def prepare_value(self, value: Any) -> Any:
        return "" if value is None else super().prepare_value(value)


def _choices(values: tuple[str, ...]) -> list[tuple[str, str]]:
    return [("", "provider default"), *((value, value) for value in values)]


def _header_env_lines(value: str) -> dict[str, str]:
    """``Header-Name=ENV_VAR`` lines as a mapping (names only, never values)."""
    mapping: dict[str, str] = {}
    for line in value.splitlines():
        if not line.strip():
            continue
        header, sep, variable = line.partition("=")
        header, variable = header.strip(), variable.strip()
        if not sep or not header or not variable:
            raise ValidationError(
                {
                    "header_env": f"Write '{line.strip()}' as Header-Name=ENV_VAR, "
                    "for example Authorization=DEEPWIKI_MCP_AUTH."
                }
            )
        if header in mapping:
            raise ValidationError({"header_env": f"Header '{header}' is given twice."})
        mapping[header] = variable
    return mapping


class HostedToolDefinitionForm(forms.ModelForm):
    """Typed fields per kind, written into the JSON ``config`` by ``clean()``.

    Only the fields of the chosen kind are used. Everything is validated by
    building the runtime tool (``assembly.build_hosted_tool``), so the admin
    shows the runtime's rules and messages on the field they concern.
    """

    # -- web_search
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

    # -- file_search
    vector_store_ids = forms.CharField(
        label="Vector store ids",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One vector store id per line (at least one).",
    )
    max_results = forms.IntegerField(
        required=False, help_text=f"1 to {MAX_RESULTS_LIMIT}; empty: provider default."
    )
    filters = _OptionalJSONField(
        label="Attribute filters",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text='Optional JSON, e.g. {"type": "eq", "key": "tenant", "value": '
        '"acme"}, or {"type": "and", "filters": [...]}.',
    )
    ranker = forms.ChoiceField(required=False, choices=_choices(RANKERS))
    score_threshold = forms.FloatField(required=False, help_text="0 to 1.")
    embedding_weight = forms.FloatField(
        required=False, help_text="Hybrid search: set both weights or neither."
    )
    text_weight = forms.FloatField(required=False)

    # -- code_interpreter
    container_id = forms.CharField(
        label="Container id",
        required=False,
        max_length=200,
        help_text="An existing container; leave empty for an auto container "
        "(then memory limit and file ids apply).",
    )
    memory_limit = forms.ChoiceField(required=False, choices=_choices(MEMORY_LIMITS))
    file_ids = forms.CharField(
        label="File ids",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Auto container: files to copy in, one id per line.",
    )

    # -- image_generation
    size = forms.CharField(
        required=False,
        max_length=20,
        help_text="auto or WIDTHxHEIGHT, e.g. 1024x1024, 1024x1536, 1536x1024.",
    )
    quality = forms.ChoiceField(required=False, choices=_choices(QUALITIES))
    output_format = forms.ChoiceField(required=False, choices=_choices(FORMATS))
    background = forms.ChoiceField(required=False, choices=_choices(BACKGROUNDS))
    image_model = forms.CharField(
        label="Image model",
        required=False,
        max_length=100,
        help_text="e.g. gpt-image-1; empty: provider default.",
    )
    output_compression = forms.IntegerField(required=False, help_text="0 to 100.")
    moderation = forms.ChoiceField(required=False, choices=_choices(MODERATIONS))
    action = forms.ChoiceField(required=False, choices=_choices(ACTIONS))
    partial_images = forms.IntegerField(
        required=False,
        help_text=f"0 to {MAX_PARTIAL_IMAGES} (only used when streaming).",
    )

    # -- mcp
    server_label = forms.CharField(
        label="Server label",
        required=False,
        max_length=64,
        help_text="1-64 of A-Z, a-z, 0-9, '_' or '-'.",
    )
    server_url = forms.CharField(
        label="Server URL",
        required=False,
        max_length=500,
        help_text="https:// (or http://) URL of the MCP server, without credentials.",
    )
    allowed_tools = forms.CharField(
        label="Allowed tools",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One tool name per line; empty: every tool of the server.",
    )
    require_approval = forms.ChoiceField(
        required=False,
        choices=[(mode, mode) for mode in APPROVAL_MODES],
        initial="never",
        help_text="This runtime cannot answer approval requests: with 'always' "
        "every call is reported as failed.",
    )
    server_description = forms.CharField(
        label="Server description", required=False, max_length=500
    )
    header_env = forms.CharField(
        label="Header variables",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One Header-Name=ENV_VAR per line, e.g. "
        "Authorization=DEEPWIKI_MCP_AUTH. Only the variable's name is stored; its "
        "value is read from the environment when the prompt is built and is never "
        "stored or shown.",
    )

    web_search_fields = (
        "allowed_domains",
        "country",
        "city",
        "region",
        "timezone",
        "search_context_size",
        "allow_live_access",
    )
    file_search_fields = (
        "vector_store_ids",
        "max_results",
        "filters",
        "ranker",
        "score_threshold",
        "embedding_weight",
        "text_weight",
    )
    code_interpreter_fields = ("container_id", "memory_limit", "file_ids")
    image_generation_fields = (
        "size",
        "quality",
        "output_format",
        "background",
        "image_model",
        "output_compression",
        "moderation",
        "action",
        "partial_images",
    )
    mcp_fields = (
        "server_label",
        "server_url",
        "allowed_tools",
        "require_approval",
        "server_description",
        "header_env",
    )
    kind_fields: dict[str, tuple[str, ...]] = {
        HostedToolDefinition.Kind.WEB_SEARCH: web_search_fields,
        HostedToolDefinition.Kind.FILE_SEARCH: file_search_fields,
        HostedToolDefinition.Kind.CODE_INTERPRETER: code_interpreter_fields,
        HostedToolDefinition.Kind.IMAGE_GENERATION: image_generation_fields,
        HostedToolDefinition.Kind.MCP: mcp_fields,
    }
    # Form field -> config key, where they differ.
    config_keys = {"image_model": "model"}
    line_fields = frozenset(
        {"vector_store_ids", "file_ids", "allowed_tools", "allowed_domains"}
    )

    class Meta:
        model = HostedToolDefinition
        fields = ["name", "kind", "description", "min_trust_level", "enabled"]
        help_texts = {
            "kind": "Fill in the section of this kind below; the other sections "
            "are ignored."
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Left out (a script posting the form), it keeps the model's default.
        self.fields["min_trust_level"].required = False
        instance = self.instance
        if instance.pk and instance.kind in self.kind_fields:
            config = instance.config if isinstance(instance.config, dict) else {}
            self.initial.update(self._initial_from(instance.kind, config))

    def clean_country(self) -> str:
        return (self.cleaned_data.get("country") or "").strip().upper()

    def clean_min_trust_level(self) -> str:
        return self.cleaned_data.get("min_trust_level") or TrustLevel.STANDARD

    def _initial_from(self, kind: str, config: dict[str, Any]) -> dict[str, Any]:
        initial: dict[str, Any] = {}
        for name in self.kind_fields[kind]:
            key = self.config_keys.get(name, name)
            value = config.get(key)
            if name in self.line_fields:
                initial[name] = "\n".join(str(v) for v in value or [])
            elif name == "header_env":
                initial[name] = "\n".join(
                    f"{header}={variable}" for header, variable in (value or {}).items()
                )
            elif value is not None:
                initial[name] = value
        if kind == HostedToolDefinition.Kind.WEB_SEARCH:
            initial["allow_live_access"] = config.get("allow_live_access", True)
        return initial

    def _config_from(self, kind: str, cleaned: dict[str, Any]) -> dict[str, Any]:
        if kind == HostedToolDefinition.Kind.WEB_SEARCH:
            config: dict[str, Any] = {
                "allowed_domains": _lines(cleaned.get("allowed_domains", "")),
                "allow_live_access": bool(cleaned.get("allow_live_access")),
            }
            for name in ("country", "city", "region", "timezone"):
                if cleaned.get(name):
                    config[name] = cleaned[name].strip()
            if cleaned.get("search_context_size"):
                config["search_context_size"] = cleaned["search_context_size"]
            return config
        config = {}
        for name in self.kind_fields[kind]:
            value = cleaned.get(name)
            if name in self.line_fields:
                value = _lines(value or "")
            elif name == "header_env":
                value = _header_env_lines(value or "")
            elif isinstance(value, str):
                value = value.strip()
            if value is None or value in ("", [], {}):
                continue
            config[self.config_keys.get(name, name)] = value
        return config

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        kind = cleaned.get("kind")
        # Only the chosen kind's fields count: mistakes elsewhere are ignored.
        for other, names in self.kind_fields.items():
            if other != kind:
                for name in names:
                    self._errors.pop(name, None)
        if self.errors or kind not in self.kind_fields:
            return cleaned
        cleaned["config"] = self._config_from(kind, cleaned)
        candidate = HostedToolDefinition(
            name=cleaned.get("name", ""),
            kind=kind,
            description=cleaned.get("description", ""),
            config=cleaned["config"],
        )
        validated(self, lambda: assembly.build_hosted_tool(candidate), "kind")
        if self.instance.pk is not None:
            # An edit (disabling included) must not break the prompts using it.
            candidate.pk = self.instance.pk
            candidate.enabled = cleaned.get("enabled", True)
            candidate.min_trust_level = cleaned.get("min_trust_level") or ""
            refuse_breaking(CatalogEdit.saving(candidate))
        return cleaned

    def save(self, commit: bool = True) -> HostedToolDefinition:
        self.instance.config = self.cleaned_data["config"]
        return super().save(commit)


class ModelCapabilityForm(forms.ModelForm):
    """``hosted_kinds`` must be a list of kinds the catalog knows."""

    class Meta:
        model = ModelCapability
        fields = ["model", "hosted_kinds"]
        help_texts = {
            "hosted_kinds": "A JSON list of the hosted tool kinds this model may "
            f'use, e.g. ["web_search", "file_search"]; known kinds: '
            f"{', '.join(HostedToolDefinition.Kind.values)}. An empty list allows "
            "none; a model without a row may use every kind."
        }

    def clean_hosted_kinds(self) -> list[str]:
        value = self.cleaned_data.get("hosted_kinds")
        if value in (None, ""):
            return []
        known = HostedToolDefinition.Kind.values
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
