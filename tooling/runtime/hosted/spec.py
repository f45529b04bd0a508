"""``HostedKindSpec``: everything the catalog needs to know about one hosted
kind, declared once next to its config, and the registry of kinds.

A kind's module ends with its spec: the kind's name and label, its config
type and tool factory, and its options as data (``HostedOption``: the key a
stored JSON config holds, its shape, label, help and choices). The catalog
derives from the registry the admin form's fields and fieldsets, the builder
that turns a stored config into the config dataclass (unknown keys refused),
and the kinds a ``HostedToolDefinition`` may have; no option name is written
anywhere else. ``docs/hosted-kinds.md`` shows the steps to add a kind.

Three shapes name things only the deployment has, and the host resolves them
when the prompt is built: ``header_env`` (header names mapped to environment
variable names; the host reads the values), ``secret_env`` (the name of one
environment variable holding a secret; the host reads it) and ``executor``
(the name of a registered local executor).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, Literal, get_args

from ..errors import PromptValidationError
from .base import ConfigT, HostedTool

OptionShape = Literal[
    "text",  # one line of text (stripped)
    "lines",  # a list of strings, one a line in the form
    "choice",  # one of ``choices``
    "integer",
    "number",
    "boolean",
    "country",  # an ISO 3166-1 alpha-2 code, picked by the country's name
    "json",  # any JSON value (an object, usually)
    "header_env",  # {"Header-Name": "ENV_VAR"}: the host reads the values
    "secret_env",  # "ENV_VAR": the host reads the value (a token)
    "executor",  # the name of an executor the host registered
]
OPTION_SHAPES: tuple[str, ...] = get_args(OptionShape)


@dataclasses.dataclass(frozen=True, slots=True)
class HostedOption:
    """One option of a kind, as its stored JSON config holds it.

    ``name`` is the JSON key; ``field`` the config dataclass field it fills
    (default: the same name). ``default`` is used when the key is absent or
    empty (``None``: the config's own default) and is the form's initial
    value. ``blank`` labels the empty choice of a ``choice`` or a
    ``country`` (``None``: a value must be picked). ``form_name`` names the
    form field when the key alone would be ambiguous in the admin; a key
    another kind already shows is otherwise shown as ``<kind>_<name>``.
    ``keep_empty`` stores an empty value instead of leaving the key out;
    ``upper`` upper-cases a text.
    """

    name: str
    shape: OptionShape = "text"
    label: str = ""
    help: str = ""
    choices: tuple[str, ...] = ()
    blank: str | None = "provider default"
    default: Any = None
    max_length: int | None = None
    rows: int = 3
    form_name: str = ""
    field: str = ""
    keep_empty: bool = False
    upper: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise PromptValidationError(
                f"Hosted option name {self.name!r} must be an identifier."
            )
        if self.shape not in OPTION_SHAPES:
            raise PromptValidationError(
                f"Hosted option '{self.name}' has unknown shape {self.shape!r}; "
                f"expected one of: {', '.join(OPTION_SHAPES)}."
            )
        if self.shape == "choice" and not self.choices:
            raise PromptValidationError(
                f"Hosted option '{self.name}' is a choice without choices."
            )

    @property
    def config_field(self) -> str:
        return self.field or self.name


def is_empty(value: Any) -> bool:
    """Whether a stored value stands for "not given"."""
    return value is None or (
        isinstance(value, str | list | tuple | dict) and len(value) == 0
    )


@dataclasses.dataclass(frozen=True, slots=True)
class HostedKindSpec(Generic[ConfigT]):
    """One hosted kind, as the catalog sees it.

    ``build`` turns the given option values (JSON keys, empty ones left out,
    defaults applied) into the config; without it the values are passed to
    ``config_type`` as keyword arguments (each under its ``config_field``).
    ``strict`` refuses keys no option declares. ``refused`` maps a key that
    must never be stored to the message refusing it and the option it
    points at. ``description`` tells the admin what the kind's settings are.
    """

    kind: str
    label: str
    config_type: type[ConfigT]
    tool_factory: Callable[..., HostedTool[ConfigT]]
    options: tuple[HostedOption, ...] = ()
    description: str = ""
    build: Callable[[Mapping[str, Any]], ConfigT] | None = None
    strict: bool = True
    refused: Mapping[str, tuple[str, str]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind.isidentifier():
            raise PromptValidationError(
                f"Hosted kind {self.kind!r} must be an identifier."
            )
        names = [option.name for option in self.options]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise PromptValidationError(
                f"Hosted kind '{self.kind}' declares option(s) twice: "
                f"{', '.join(twice)}."
            )

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(option.name for option in self.options)

    def option(self, name: str) -> HostedOption | None:
        return next((o for o in self.options if o.name == name), None)

    def check_keys(self, stored: Mapping[str, Any]) -> None:
        """Refuse the keys this kind never stores (``refused`` first)."""
        for key, (message, placeholder) in self.refused.items():
            if key in stored:
                raise PromptValidationError(message, placeholder=placeholder)
        if not self.strict:
            return
        known = self.option_names
        unknown = sorted(str(key) for key in stored if key not in known)
        if unknown:
            raise PromptValidationError(
                f"Unknown {self.kind} option(s): {', '.join(unknown)}; "
                f"expected: {', '.join(known)}.",
                placeholder="config",
            )

    def values(
        self,
        stored: Mapping[str, Any],
        resolve: Callable[[HostedOption, Any], Any] | None = None,
    ) -> dict[str, Any]:
        """The options' values by JSON key: empty ones left out (or their
        ``default``), booleans as booleans, ``resolve`` applied to the rest
        (the host resolves the ``header_env``, ``secret_env`` and ``executor``
        shapes)."""
        values: dict[str, Any] = {}
        for option in self.options:
            value = stored.get(option.name)
            if option.shape == "boolean" and option.name in stored:
                values[option.name] = bool(value)
                continue
            if is_empty(value):
                if option.default is not None:
                    values[option.name] = option.default
                continue
            values[option.name] = value if resolve is None else resolve(option, value)
        return values

    def config_from(
        self,
        stored: Mapping[str, Any],
        resolve: Callable[[HostedOption, Any], Any] | None = None,
    ) -> ConfigT:
        """The config a stored JSON object describes (checked by the config)."""
        if not isinstance(stored, Mapping):
            raise PromptValidationError(
                "Config must be a JSON object.", placeholder="config"
            )
        self.check_keys(stored)
        values = self.values(stored, resolve)
        if self.build is not None:
            return self.build(values)
        fields = {self._field(name): value for name, value in values.items()}
        return self.config_type(**fields)

    def _field(self, name: str) -> str:
        option = self.option(name)
        return name if option is None else option.config_field

    def tool(
        self, config: ConfigT, *, name: str, description: str = ""
    ) -> HostedTool[ConfigT]:
        """The tool, named ``name``; a blank description keeps the factory's."""
        if description:
            return self.tool_factory(config, name=name, description=description)
        return self.tool_factory(config, name=name)


_lock = threading.Lock()
_kinds: dict[str, HostedKindSpec[Any]] = {}


def register_kind(spec: HostedKindSpec[Any]) -> HostedKindSpec[Any]:
    """Make ``spec`` known (a kind is registered once); returns it."""
    if not isinstance(spec, HostedKindSpec):
        raise PromptValidationError(
            f"register_kind() takes a HostedKindSpec, not {type(spec).__name__}."
        )
    with _lock:
        if spec.kind in _kinds:
            raise PromptValidationError(
                f"Hosted kind '{spec.kind}' is already registered."
            )
        _kinds[spec.kind] = spec
    return spec


def unregister_kind(kind: str) -> HostedKindSpec[Any]:
    """Forget ``kind`` (tests registering a kind of their own use it)."""
    with _lock:
        try:
            return _kinds.pop(kind)
        except KeyError:
            raise PromptValidationError(
                f"Hosted kind '{kind}' is not registered."
            ) from None


def hosted_kinds() -> tuple[HostedKindSpec[Any], ...]:
    """Every registered kind, in registration order."""
    with _lock:
        return tuple(_kinds.values())


def hosted_kind(kind: str) -> HostedKindSpec[Any] | None:
    with _lock:
        return _kinds.get(kind)


def hosted_kind_names() -> tuple[str, ...]:
    return tuple(spec.kind for spec in hosted_kinds())
