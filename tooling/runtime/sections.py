"""Sections: the nested markdown blocks a prompt is made of.

A section owns a ``string.Template`` (``$name`` / ``${name}``, ``$$`` for a
dollar sign) whose placeholders must be fields of its params dataclass; this
is checked when the section is built. The params type may be given as
``params_type=``, taken from ``default_params``, or written as a subscript:
``MarkdownSection[Params](...)`` or ``class Mine(Section[Params])``.
Sections carry the function tools, hosted tools and policies they introduce,
and may be disabled (a flag or a predicate); a disabled section hides its
whole branch.

``Prompt.render`` numbers the enabled sections and calls
``section.render(params, depth, number)`` for each one's text (heading, body
and tool examples by default); a subclass overriding ``render`` controls its
own text, and one that renders nothing adds no block to the prompt.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import re
import string
import textwrap
from collections.abc import Callable, Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    Protocol,
    Self,
    get_args,
    get_origin,
)

from .errors import PromptRenderError, PromptValidationError
from .hosted.base import HostedTool
from .policies import ToolPolicy
from .reducers import Reducer
from .results import render_tool_payload
from .serde import dump, fields_of
from .subscripts import SubscriptAlias, is_concrete, subscript_args, type_name
from .text import storable_text
from .tools import Tool

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    ParamsT = TypeVar("ParamsT", default=Any)
else:
    from typing import TypeVar

    ParamsT = TypeVar("ParamsT")

SECTION_KEY = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")

EnabledPredicate = Callable[..., bool]


class SupportsDataclass(Protocol):
    """Any dataclass instance (the type of a section's params)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


@dataclasses.dataclass(frozen=True, slots=True)
class EmptyParams:
    """Params of a section that takes none (``MarkdownSection[EmptyParams]``)."""


def key_from_title(title: str) -> str:
    """A section key derived from its title ("Task Notes" -> "task-notes"),
    for sections declared without one."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", title.strip().lower()).strip("-._")
    return slug[:64].rstrip("-._")


def normalise_section_key(key: str) -> str:
    value = key.strip().lower() if isinstance(key, str) else ""
    if not SECTION_KEY.fullmatch(value):
        raise PromptValidationError(
            f"Section key '{key}' must match ^[a-z0-9][a-z0-9._-]{{0,63}}$ "
            "(lowercase letters, digits, '.', '_' or '-', starting with a letter "
            "or digit).",
            placeholder="key",
        )
    return value


def template_placeholders(template: str) -> tuple[str, ...]:
    """Placeholder names in a ``string.Template``; invalid ones raise."""
    found: list[str] = []
    for match in string.Template.pattern.finditer(template):
        if match.group("invalid") is not None:
            start = match.start("invalid")
            snippet = (template[start : start + 12].splitlines() or [""])[0]
            raise PromptValidationError(
                f"Invalid placeholder at character {start}: '{snippet}'. Use $name "
                "or ${name} with a letter or underscore first, and $$ for a "
                "literal dollar sign.",
                placeholder=snippet,
            )
        name = match.group("named") or match.group("braced")
        if name and name not in found:
            found.append(name)
    return tuple(found)


CLONE_OPTIONS = (
    "title",
    "key",
    "template",
    "params_type",
    "default_params",
    "children",
    "enabled",
    "tools",
    "hosted_tools",
    "policies",
    "accepts_overrides",
)


def _params_position(cls: type[Any]) -> int | None:
    """Which type parameter of ``cls`` is the section's ``ParamsT``; ``None``
    when its params type is already fixed or it is not generic."""
    if cls is Section:
        return 0
    parameters = cls.__dict__.get("__parameters__", ())
    for base in cls.__dict__.get("__orig_bases__", ()):
        origin = get_origin(base)
        if not (isinstance(origin, type) and issubclass(origin, Section)):
            continue
        position = _params_position(origin)
        if position is None:
            return None
        argument = get_args(base)[position]
        return parameters.index(argument) if argument in parameters else None
    return None


def _declared_params_type(cls: type[Any]) -> type[Any] | None:
    """The params type a subclass fixes in its bases (``Section[Params]``)."""
    for base in cls.__dict__.get("__orig_bases__", ()):
        origin = get_origin(base)
        if isinstance(origin, type) and issubclass(origin, Section):
            position = _params_position(origin)
            if position is not None:
                argument = get_args(base)[position]
                return argument if is_concrete(argument) else None
    return None


def _safe_text(text: str, what: str, key: str | None) -> str:
    """``text`` unless it holds a NUL byte or a lone surrogate (which no
    request or database accepts)."""
    if storable_text(text)[1]:
        owner = f"Section '{key}'" if key else "A section"
        raise PromptValidationError(
            f"{owner} {what} must not contain NUL bytes or lone surrogates.",
            section_path=(key,) if key else (),
            placeholder=what,
        )
    return text


class Section(Generic[ParamsT]):
    """A titled block of the prompt; see the module docstring."""

    declared_params_type: ClassVar[type[Any] | None] = None
    """The params type fixed by ``class Mine(Section[Params])``, if any."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = _declared_params_type(cls)
        if declared is not None:
            cls.declared_params_type = declared

    def __class_getitem__(cls, item: Any) -> Any:
        """``MarkdownSection[Params]``: calling it builds a section whose
        params type is ``Params``."""
        position = _params_position(cls)
        arguments = item if isinstance(item, tuple) else (item,)
        if (
            position is not None
            and len(arguments) == len(getattr(cls, "__parameters__", ()))
            and is_concrete(arguments[position])
        ):
            return SubscriptAlias(cls, item)
        return super().__class_getitem__(item)  # type: ignore[misc]

    def __init__(
        self,
        *,
        title: str,
        key: str | None = None,
        template: str = "",
        params_type: type[ParamsT] | None = None,
        default_params: ParamsT | None = None,
        children: Sequence[Section[Any]] = (),
        enabled: bool | EnabledPredicate = True,
        tools: Sequence[Tool[Any, Any]] = (),
        hosted_tools: Sequence[HostedTool[Any]] = (),
        policies: Sequence[ToolPolicy] = (),
        accepts_overrides: bool = True,
    ) -> None:
        if key is None:
            key = self._key_from(title)
        self.key = normalise_section_key(key)
        if not isinstance(title, str) or not title.strip():
            raise PromptValidationError(
                f"Section '{self.key}' needs a title.", section_path=(self.key,)
            )
        self.title = _safe_text(title.strip(), "title", self.key)
        if not isinstance(template, str):
            raise PromptValidationError(
                f"Section '{self.key}' template must be a string.",
                section_path=(self.key,),
                placeholder="template",
            )
        self.template = _safe_text(
            textwrap.dedent(template).strip(), "template", self.key
        )
        params_type = self._implied_params_type(params_type)
        if params_type is None and default_params is not None:
            params_type = type(default_params)
        if params_type is not None and not (
            isinstance(params_type, type) and dataclasses.is_dataclass(params_type)
        ):
            raise PromptValidationError(
                "Section params must be a dataclass type.",
                section_path=(self.key,),
                dataclass_type=params_type,
            )
        if default_params is not None and type(default_params) is not params_type:
            raise PromptValidationError(
                "Section default params must be an instance of its params type.",
                section_path=(self.key,),
                dataclass_type=params_type,
            )
        self.params_type: type[ParamsT] | None = params_type
        self.default_params = default_params
        self.children = tuple(children)
        self.enabled = enabled
        self._tools = tuple(tools)
        self._hosted_tools = tuple(hosted_tools)
        self.policies = tuple(policies)
        self.accepts_overrides = accepts_overrides
        self._check_children()
        self._check_tools()
        self._check_placeholders()
        self._predicate_takes = self._inspect_predicate()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.key!r}>"

    @staticmethod
    def _key_from(title: Any) -> str:
        if not isinstance(title, str) or not title.strip():
            raise PromptValidationError("A section needs a title.")
        _safe_text(title, "title", None)
        key = key_from_title(title)
        if not key:
            raise PromptValidationError(
                f"Section '{title.strip()}' needs a key: none can be derived from "
                "its title.",
                placeholder="key",
            )
        return key

    def _implied_params_type(self, given: Any) -> Any:
        """``params_type`` as the subscript or the class declares it; an
        explicit different one is an error."""
        cls = type(self)
        arguments = subscript_args(self)
        position = _params_position(cls)
        if arguments and position is not None:
            implied: Any = arguments[position]
            label = f"{cls.__name__}[{type_name(implied)}]"
        elif cls.declared_params_type is not None:
            implied = cls.declared_params_type
            label = f"{cls.__name__} (a section of {type_name(implied)})"
        else:
            return given
        if given is not None and given is not implied:
            raise PromptValidationError(
                f"{label} conflicts with params_type={type_name(given)}.",
                section_path=(self.key,),
                dataclass_type=given,
            )
        return implied

    def tools(self) -> tuple[Tool[Any, Any], ...]:
        """Function tools this section exposes (subclasses may override)."""
        return self._tools

    def hosted_tools(self) -> tuple[HostedTool[Any], ...]:
        """Hosted tools this section exposes (subclasses may override)."""
        return self._hosted_tools

    def reducers(self) -> tuple[Reducer, ...]:
        """Reducers of the events its tools' handlers publish; none by default."""
        return ()

    @property
    def placeholders(self) -> tuple[str, ...]:
        return template_placeholders(self.template)

    @property
    def param_names(self) -> tuple[str, ...]:
        if self.params_type is None:
            return ()
        return tuple(info.name for info in fields_of(self.params_type))

    def _check_children(self) -> None:
        for child in self.children:
            if not isinstance(child, Section):
                raise PromptValidationError(
                    "Section children must be sections.", section_path=(self.key,)
                )

    def _check_tools(self) -> None:
        for tool in self.tools():
            if not isinstance(tool, Tool):
                raise PromptValidationError(
                    "Section tools must be Tool instances; hosted tools go in "
                    "hosted_tools.",
                    section_path=(self.key,),
                )
        for hosted in self.hosted_tools():
            if not isinstance(hosted, HostedTool):
                raise PromptValidationError(
                    "Section hosted_tools must be HostedTool instances.",
                    section_path=(self.key,),
                )

    def _check_placeholders(self) -> None:
        names = template_placeholders(self.template)
        if names and self.params_type is None:
            raise PromptValidationError(
                "Section does not accept parameters but declares placeholders "
                f"({', '.join('$' + n for n in names)}).",
                section_path=(self.key,),
                placeholder=names[0],
            )
        known = set(self.param_names)
        for name in names:
            if name not in known:
                raise PromptValidationError(
                    f"Template references unknown placeholder '${name}' (known: "
                    f"{', '.join(sorted(known)) or 'none'}).",
                    section_path=(self.key,),
                    dataclass_type=self.params_type,
                    placeholder=name,
                )

    def _inspect_predicate(self) -> tuple[bool, bool]:
        if isinstance(self.enabled, bool):
            return (False, False)
        if not callable(self.enabled):
            raise PromptValidationError(
                "Section enabled must be a bool or a callable.",
                section_path=(self.key,),
            )
        parameters = inspect.signature(self.enabled).parameters.values()
        positional = [
            p
            for p in parameters
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        session = any(
            p.name == "session" and p.kind is p.KEYWORD_ONLY for p in parameters
        )
        if len(positional) > 1:
            raise PromptValidationError(
                "An enabled predicate takes (), (params), (*, session) or "
                "(params, *, session).",
                section_path=(self.key,),
            )
        return (bool(positional), session)

    def is_enabled(self, params: Any, *, session: Any = None) -> bool:
        if isinstance(self.enabled, bool):
            return self.enabled
        takes_params, takes_session = self._predicate_takes
        args = (params,) if takes_params else ()
        kwargs = {"session": session} if takes_session else {}
        try:
            return bool(self.enabled(*args, **kwargs))
        except Exception as error:
            raise PromptRenderError(
                f"Section enabled predicate failed: {error}", section_path=(self.key,)
            ) from error

    def render_body(self, params: Any, path: tuple[str, ...]) -> str:
        if not self.template:
            return ""
        values: dict[str, str] = {}
        if params is not None:
            values = {name: str(getattr(params, name)) for name in self.param_names}
        try:
            return string.Template(self.template).substitute(values).strip()
        except KeyError as error:
            name = str(error.args[0])
            raise PromptRenderError(
                "Missing placeholder during render.",
                section_path=path,
                placeholder=name,
            ) from error

    def render(
        self, params: ParamsT | None, depth: int, number: str, *args: Any, **kwargs: Any
    ) -> str:
        """This section's block of the prompt: a numbered heading, the rendered
        template and the examples of its tools. ``depth`` 0 is a top-level
        section; ``number`` is its dotted position ("2.1").

        ``Prompt.render`` also passes ``path=`` (the dotted key path the
        heading names; its own key when not given) to a ``render`` that
        accepts it. The open ``*args, **kwargs`` let an override keep the
        three-argument form ``render(params, depth, number)``.
        """
        path = _render_path(self, args, kwargs)
        heading = f"{'#' * (depth + 2)} {number}. {self.title} ({'.'.join(path)})"
        body = self.render_body(params, path)
        examples = tool_examples_block(self.tools())
        return "\n\n".join([heading] + [part for part in (body, examples) if part])

    def clone(self, **kwargs: Any) -> Self:
        """A copy of this section with the given constructor options
        (``CLONE_OPTIONS``) replaced and checked again; its children are
        cloned too unless ``children=`` is given. Other state of a subclass is
        copied as it is."""
        unknown = sorted(set(kwargs) - set(CLONE_OPTIONS))
        if unknown:
            raise PromptValidationError(
                f"{type(self).__name__}.clone() got unknown option(s) "
                f"{', '.join(repr(name) for name in unknown)}; it accepts: "
                f"{', '.join(CLONE_OPTIONS)}.",
                section_path=(self.key,),
                placeholder=unknown[0],
            )
        options: dict[str, Any] = {
            "title": self.title,
            "key": self.key,
            "template": self.template,
            "params_type": self.params_type,
            "default_params": self.default_params,
            "children": tuple(child.clone() for child in self.children),
            "enabled": self.enabled,
            "tools": self._tools,
            "hosted_tools": self._hosted_tools,
            "policies": self.policies,
            "accepts_overrides": self.accepts_overrides,
        }
        options.update(kwargs)
        twin = copy.copy(self)
        Section.__init__(twin, **options)
        return twin


def _render_path(
    section: Section[Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[str, ...]:
    path = kwargs.pop("path", ())
    if args or kwargs:
        unexpected = [repr(a) for a in args] + [f"{k}=" for k in kwargs]
        raise TypeError(
            f"{type(section).__name__}.render() takes (params, depth, number, *, "
            f"path=()); got unexpected {', '.join(unexpected)}."
        )
    if not isinstance(path, tuple) or not all(isinstance(k, str) for k in path):
        raise TypeError("render() path must be a tuple of section keys.")
    return path or (section.key,)


class MarkdownSection(Section[ParamsT]):
    """A section whose body is a markdown ``string.Template``."""


def tool_examples_block(tools: Sequence[Tool[Any, Any]]) -> str:
    """The "Tools:" list of a section: each tool with examples, its
    description and every example's input and output."""
    lines: list[str] = []
    for tool in tools:
        if not tool.examples:
            continue
        lines.append(f"- {tool.name}: {tool.description}")
        for example in tool.examples:
            lines.append(f"  - {example.description}")
            lines.append(
                f"    input: {json.dumps(dump(example.input, exclude_none=True))}"
            )
            output = render_tool_payload(example.output).splitlines() or [""]
            lines.append(f"    output: {output[0]}")
            lines.extend(f"      {line}" for line in output[1:])
    return "Tools:\n" + "\n".join(lines) if lines else ""
