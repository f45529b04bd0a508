"""Hosted tool and model capability forms: typed fields per kind, derived from
the kinds' specs (``tooling.runtime.hosted.spec``) and validated by building
the runtime tool."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.utils.text import capfirst

from tooling import assembly, shell_executors
from tooling.assembly import CatalogEdit
from tooling.models import (
    HostedToolDefinition,
    TrustLevel,
)
from tooling.runtime import PromptError
from tooling.runtime.hosted.mcp_url import credential_query_names, credential_shapes
from tooling.runtime.hosted.spec import (
    HostedKindSpec,
    HostedOption,
    hosted_kinds,
    is_empty,
)
from tooling.storable_json import StorableJSONFormField

from .editors import validate_no_bidi, validate_no_bidi_text
from .fields import CountryField, PlainFloatField, PlainIntegerField
from .validation import refuse_breaking, runtime_error

#: Stand-ins while a hosted tool's other fields are checked: a name or a
#: description already refused must not hide the options' own errors.
_STAND_IN = {"name": "hosted_tool", "description": "A hosted tool."}


def _lines(value: str) -> list[str]:
    return [
        line.strip() for line in value.replace(",", "\n").splitlines() if line.strip()
    ]


class _OptionalJSONField(StorableJSONFormField):
    """A JSON field that shows nothing (not ``null``) when it has no value."""

    def prepare_value(self, value: Any) -> Any:
        return "" if value is None else super().prepare_value(value)


def _header_env_lines(value: str, field: str) -> dict[str, str]:
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
                    field: f"Write '{line.strip()}' as Header-Name=ENV_VAR, "
                    "for example Authorization=DEEPWIKI_MCP_AUTH."
                }
            )
        if header in mapping:
            raise ValidationError({field: f"Header '{header}' is given twice."})
        mapping[header] = variable
    return mapping


def _executor_choices() -> list[tuple[str, str]]:
    return [("", "none"), *((name, name) for name in shell_executors.names())]


def _form_field(option: HostedOption) -> forms.Field:
    """The admin's field for one option, from its shape."""
    common: dict[str, Any] = {
        "required": False,
        "label": option.label or capfirst(option.name.replace("_", " ")),
        "help_text": option.help,
    }
    shape = option.shape
    # text an operator types reads as it is: no bidi control may reorder it
    typed = [validate_no_bidi_text]
    if shape in ("lines", "header_env"):
        textarea = forms.Textarea(attrs={"rows": option.rows})
        return forms.CharField(widget=textarea, validators=typed, **common)
    if shape == "json":
        textarea = forms.Textarea(attrs={"rows": option.rows})
        return _OptionalJSONField(
            widget=textarea, validators=[validate_no_bidi], **common
        )
    if shape == "choice":
        blank = [] if option.blank is None else [("", option.blank)]
        choices = [*blank, *((value, value) for value in option.choices)]
        return forms.ChoiceField(choices=choices, initial=option.default, **common)
    if shape == "country":
        return CountryField(blank=option.blank, **common)
    if shape == "executor":
        return forms.ChoiceField(
            choices=_executor_choices,
            error_messages={
                "invalid_choice": "'%(value)s' is not a registered shell executor."
            },
            **common,
        )
    if shape == "integer":
        return PlainIntegerField(initial=option.default, **common)
    if shape == "number":
        return PlainFloatField(initial=option.default, **common)
    if shape == "boolean":
        return forms.BooleanField(initial=option.default, **common)
    return forms.CharField(
        max_length=option.max_length,
        initial=option.default,
        validators=typed,
        **common,
    )


#: Names the form (or the admin page) already uses for other things.
_RESERVED = frozenset({"config", "stored_config"})


def _named_options(
    specs: tuple[HostedKindSpec[Any], ...], taken: set[str]
) -> dict[str, tuple[tuple[str, HostedOption], ...]]:
    """Each kind's options with their form field names: the option's name
    (or ``form_name``), or ``<kind>_<name>`` when an earlier kind (or the form
    itself) already uses it."""
    named: dict[str, tuple[tuple[str, HostedOption], ...]] = {}
    for spec in specs:
        fields: list[tuple[str, HostedOption]] = []
        for option in spec.options:
            name = option.form_name or option.name
            if name in taken:
                name = f"{spec.kind}_{option.name}"
            if name in taken:
                raise ImproperlyConfigured(
                    f"Hosted kind '{spec.kind}': form field '{name}' for option "
                    f"'{option.name}' is already used; give the option a form_name."
                )
            taken.add(name)
            fields.append((name, option))
        named[spec.kind] = tuple(fields)
    return named


class HostedToolFormBase(forms.ModelForm):
    """Typed fields per kind, written into the JSON ``config`` by ``clean()``.

    The fields come from the registered kinds' specs (``hosted_tool_form()``
    builds the form class); only the fields of the chosen kind are used.
    Everything is validated by building the runtime tool
    (``assembly.build_hosted_tool``), so the admin shows the runtime's rules
    and messages on the field they concern.
    """

    #: kind -> ((form field name, option), ...)
    kind_options: ClassVar[dict[str, tuple[tuple[str, HostedOption], ...]]] = {}
    #: kind -> its form field names
    kind_fields: ClassVar[dict[str, tuple[str, ...]]] = {}

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
        # (Not there at all on a read-only form: the view permission only.)
        if "min_trust_level" in self.fields:
            self.fields["min_trust_level"].required = False
        instance = self.instance
        if instance.pk and instance.kind in self.kind_options:
            config = instance.config if isinstance(instance.config, dict) else {}
            self.initial.update(self._initial_from(instance.kind, config))

    def clean_min_trust_level(self) -> str:
        return self.cleaned_data.get("min_trust_level") or TrustLevel.STANDARD

    def _initial_from(self, kind: str, config: dict[str, Any]) -> dict[str, Any]:
        initial: dict[str, Any] = {}
        for name, option in self.kind_options[kind]:
            value = config.get(option.name)
            if value is None:
                value = option.default
            if option.shape == "lines":
                if isinstance(value, list | tuple):
                    initial[name] = "\n".join(str(v) for v in value)
                elif isinstance(value, str):
                    initial[name] = value
            elif option.shape == "header_env":
                if isinstance(value, Mapping):
                    initial[name] = "\n".join(
                        f"{header}={variable}" for header, variable in value.items()
                    )
            elif value is not None:
                initial[name] = value
        return initial

    def _field_of(self, kind: str, key: str | None) -> str | None:
        """The chosen kind's form field that writes config ``key`` (or fills
        config field ``key``: the runtime's placeholder names either)."""
        options = self.kind_options[kind]
        for name, option in options:
            if option.name == key:
                return name
        for name, option in options:
            if option.config_field == key:
                return name
        return None

    def _refuse_credentials_in_url(self, kind: str, config: dict[str, Any]) -> None:
        """An MCP server's URL that carries a credential: refused here,
        where it is entered (the runtime still runs a stored one)."""
        url = config.get("server_url")
        field = self._field_of(kind, "server_url")
        if kind != "mcp" or not isinstance(url, str) or field is None:
            return
        names = credential_query_names(url) + credential_shapes(url)
        if names:
            self.add_error(
                field,
                f"server_url must not carry credentials in its query, path or "
                f"fragment ({', '.join(names)}): every page that shows the tool "
                "shows its URL. Pass them in headers, which are masked.",
            )
            config.pop("server_url")

    def _config_from(self, kind: str, cleaned: dict[str, Any]) -> dict[str, Any]:
        """The chosen kind's config from its fields; a field already refused
        is left out, and one whose text cannot be read gets its error."""
        config: dict[str, Any] = {}
        for name, option in self.kind_options[kind]:
            if name in self.errors:
                continue
            value = cleaned.get(name)
            if option.shape == "lines":
                value = _lines(value or "")
                # a domain is one whatever its case or a final point (ids and
                # tool names are not)
                same = _domain_key if name == "allowed_domains" else str
                counted = Counter(same(line) for line in value)
                twice = [line for line in value if counted.pop(same(line), 0) > 1]
                if twice:
                    listed = ", ".join(repr(line[:100]) for line in twice[:10])
                    self.add_error(name, f"Listed more than once: {listed}.")
                    continue
            elif option.shape == "header_env":
                try:
                    value = _header_env_lines(value or "", name)
                except ValidationError as error:
                    self.add_error(None, error)
                    continue
            elif option.shape == "boolean":
                value = bool(value)
            elif isinstance(value, str):
                value = value.strip().upper() if option.upper else value.strip()
            if option.shape != "boolean" and not option.keep_empty and is_empty(value):
                continue
            config[option.name] = value
        return config

    def _check_runtime(
        self, kind: str, cleaned: dict[str, Any], config: dict[str, Any]
    ) -> None:
        """Every field's runtime error at once: the runtime stops at its first
        error, so the blamed option is left out (a refused name or description
        stood in for) and the tool built again, until it builds or an error
        names no field still unblamed."""
        config = dict(config)
        given = {
            field: _STAND_IN[field] if field in self.errors else cleaned.get(field, "")
            for field in _STAND_IN
        }
        option_of = {name: option.name for name, option in self.kind_options[kind]}
        for _ in range(len(option_of) + len(_STAND_IN) + 1):
            candidate = HostedToolDefinition(kind=kind, config=config, **given)
            try:
                assembly.build_hosted_tool(candidate)
            except PromptError as error:
                field = self._field_of(kind, error.placeholder)
                if field is not None and field not in self.errors:
                    self.add_error(field, error.message)
                    config.pop(option_of[field], None)
                    continue
                if error.placeholder in _STAND_IN:
                    field = error.placeholder
                    if field not in self.errors:
                        self.add_error(field, error.message)
                        given[field] = _STAND_IN[field]
                        continue
                if field is None and not self.errors:
                    self.add_error(None, runtime_error(error, self, "kind"))
            return

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        kind = cleaned.get("kind")
        # Only the chosen kind's fields count: mistakes elsewhere are ignored.
        for other, names in self.kind_fields.items():
            if other != kind:
                for name in names:
                    self.errors.pop(name, None)
        if kind not in self.kind_fields:
            return cleaned
        config = self._config_from(kind, cleaned)
        self._refuse_credentials_in_url(kind, config)
        self._check_runtime(kind, cleaned, config)
        if self.errors:
            return cleaned
        cleaned["config"] = config
        if self.instance.pk is not None:
            # An edit (disabling included) must not break the prompts using it.
            candidate = HostedToolDefinition(
                pk=self.instance.pk,
                name=cleaned.get("name", ""),
                kind=kind,
                description=cleaned.get("description", ""),
                config=config,
                enabled=cleaned.get("enabled", True),
                min_trust_level=cleaned.get("min_trust_level") or "",
            )
            refuse_breaking(CatalogEdit.saving(candidate))
        return cleaned

    def save(self, commit: bool = True) -> HostedToolDefinition:
        self.instance.config = self.cleaned_data["config"]
        return super().save(commit)


def hosted_tool_form() -> type[HostedToolFormBase]:
    """The hosted tool form class for the kinds registered now (the admin
    builds it per request, so a kind registered later gets its fields)."""
    taken = set(HostedToolFormBase.base_fields) | _RESERVED
    named = _named_options(hosted_kinds(), taken)
    attrs: dict[str, Any] = {
        name: _form_field(option)
        for options in named.values()
        for name, option in options
    }
    attrs["kind_options"] = named
    attrs["kind_fields"] = {
        kind: tuple(name for name, _ in options) for kind, options in named.items()
    }
    attrs["__module__"] = __name__
    attrs["__qualname__"] = "HostedToolDefinitionForm"
    return type("HostedToolDefinitionForm", (HostedToolFormBase,), attrs)


#: The form for the kinds registered at import (the admin uses
#: ``hosted_tool_form()``, which sees kinds registered later too).
HostedToolDefinitionForm = hosted_tool_form()


def _domain_key(line: str) -> str:
    """A domain as two lines naming it compare: ``DOCS.Python.org.`` is
    ``docs.python.org``."""
    return line.casefold().rstrip(".")
