"""How a ``Prompt`` renders one section: the parameters it is given
(``section_params``) and its ``render`` called with them (``render_section``)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from .errors import PromptRenderError, PromptValidationError
from .sections import Section
from .serde import fields_of


@dataclasses.dataclass(frozen=True, slots=True)
class SectionNode:
    """A section where it sits in a prompt's tree."""

    section: Section
    path: tuple[str, ...]
    depth: int
    ancestors: tuple[Section, ...]


def section_params(
    section: Section,
    path: tuple[str, ...],
    by_type: Mapping[type[Any], Any],
    values: Mapping[str, Any],
) -> Any:
    """The parameters ``section`` (at ``path``) renders with: the instance
    given for its type (``by_type``), else its defaults with the values given
    by name (``values``), else its type built from them."""
    kind = section.params_type
    if kind is None:
        return None
    if kind in by_type:
        return by_type[kind]
    base = section.default_params
    given = {name: values[name] for name in section.param_names if name in values}
    if base is not None:
        return dataclasses.replace(base, **given) if given else base
    try:
        return kind(**given)
    except TypeError as error:
        missing = [
            info.name
            for info in fields_of(kind)
            if info.required and info.name not in given
        ]
        if not missing:
            raise PromptRenderError(
                f"Parameters for section '{'.'.join(path)}' are invalid: {error}",
                section_path=path,
            ) from error
        raise PromptRenderError(
            f"Missing parameter(s) {', '.join(repr(m) for m in missing)} for "
            f"section '{'.'.join(path)}'.",
            section_path=path,
            dataclass_type=kind,
            placeholder=missing[0],
        ) from error


def render_section(node: SectionNode, params: Any, number: str) -> str:
    """``node.section.render(...)``, passing ``path=`` only to a ``render``
    that accepts it (an override written as ``render(params, depth,
    number)`` does not)."""
    section = node.section
    extra = {"path": node.path} if _takes_path(type(section).render) else {}
    try:
        text = section.render(params, node.depth, number, **extra)
    except (PromptRenderError, PromptValidationError):
        raise
    except Exception as error:
        raise PromptRenderError(
            f"Section '{'.'.join(node.path)}' failed to render: {error}",
            section_path=node.path,
        ) from error
    if not isinstance(text, str):
        raise PromptRenderError(
            f"Section '{'.'.join(node.path)}' render() returned "
            f"{type(text).__name__}, not str.",
            section_path=node.path,
        )
    return text


@lru_cache(maxsize=256)
def _takes_path(render: Callable[..., str]) -> bool:
    try:
        parameters = inspect.signature(render).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        (p.name == "path" and p.kind is not p.POSITIONAL_ONLY)
        or p.kind is p.VAR_KEYWORD
        for p in parameters
    )
