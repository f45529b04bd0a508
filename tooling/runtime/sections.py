"""Sections: the nested markdown blocks a prompt is made of.

A section owns a ``string.Template`` (``$name`` / ``${name}``, ``$$`` for a
dollar sign) whose placeholders must be fields of its params dataclass; this
is checked when the section is built. Sections carry the function tools,
hosted tools and policies they introduce, and may be disabled (a flag or a
predicate); a disabled section hides its whole branch.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import string
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from .errors import PromptRenderError, PromptValidationError
from .hosted.base import HostedTool
from .policies import ToolPolicy
from .serde import fields_of
from .tools import Tool

SECTION_KEY = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")

EnabledPredicate = Callable[..., bool]


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


class Section:
    """A titled block of the prompt; see the module docstring."""

    def __init__(
        self,
        *,
        title: str,
        key: str,
        template: str = "",
        params_type: type[Any] | None = None,
        default_params: Any | None = None,
        children: Sequence[Section] = (),
        enabled: bool | EnabledPredicate = True,
        tools: Sequence[Tool[Any, Any]] = (),
        hosted_tools: Sequence[HostedTool[Any]] = (),
        policies: Sequence[ToolPolicy] = (),
        accepts_overrides: bool = True,
    ) -> None:
        self.key = normalise_section_key(key)
        if not isinstance(title, str) or not title.strip():
            raise PromptValidationError(
                f"Section '{self.key}' needs a title.", section_path=(self.key,)
            )
        self.title = title.strip()
        self.template = textwrap.dedent(template).strip()
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
        self.params_type = params_type
        self.default_params = default_params
        self.children = tuple(children)
        self.enabled = enabled
        self.tools = tuple(tools)
        self._hosted_tools = tuple(hosted_tools)
        self.policies = tuple(policies)
        self.accepts_overrides = accepts_overrides
        self._check_children()
        self._check_tools()
        self._check_placeholders()
        self._predicate_takes = self._inspect_predicate()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.key!r}>"

    def hosted_tools(self) -> tuple[HostedTool[Any], ...]:
        """Hosted tools this section exposes (subclasses may override)."""
        return self._hosted_tools

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
        for tool in self.tools:
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


class MarkdownSection(Section):
    """A section whose body is a markdown ``string.Template``."""
