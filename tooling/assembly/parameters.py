"""The parameters a prompt takes, read from its revision, and checking values.

A section declares its parameters with defaults (``{"name": default}``, where
``null`` makes one required); the default's JSON type is the parameter's type.
A required parameter (no default) takes any scalar; the parameter an
``enabled_when_param`` names is an optional flag of any type (declared
with a ``null`` default in that section too).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from tooling.runtime.serde import type_name

ANY = "any"
SCALAR = "scalar"


@dataclasses.dataclass(frozen=True)
class ParameterSpec:
    name: str
    type: str  # string, integer, number, boolean, array, object, scalar or any
    required: bool
    default: Any
    sections: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"sections": list(self.sections)}


def _type_of(value: Any) -> str:
    """The JSON type a default gives its parameter (``null``: any)."""
    name = type_name(value)
    return ANY if name == "null" else name


def _sections(entries: Any) -> Iterator[Mapping[str, Any]]:
    for entry in entries or []:
        if isinstance(entry, Mapping):
            yield entry
            yield from _sections(entry.get("children"))


def prompt_parameters(revision: Mapping[str, Any]) -> list[ParameterSpec]:
    """Every parameter of the prompt, in section order."""
    found: dict[str, ParameterSpec] = {}
    for section in _sections(revision.get("sections")):
        key = str(section.get("key", ""))
        declared = section.get("default_params")
        entries = list(declared.items()) if isinstance(declared, Mapping) else []
        flag = (section.get("enabled_when_param") or "").strip()
        if flag and flag not in dict(entries):
            entries.append((flag, ...))
        for name, default in entries:
            # the flag declared without a default is not required by its own
            # section: left out, the section is left out
            if default is ... or (name == flag and default is None):
                spec = ParameterSpec(name, ANY, False, None, (key,))
            elif default is None:
                spec = ParameterSpec(name, SCALAR, True, None, (key,))
            else:
                spec = ParameterSpec(name, _type_of(default), False, default, (key,))
            known = found.get(name)
            if known is None:
                found[name] = spec
            else:  # shared: required if one section requires it; types differ: any
                found[name] = dataclasses.replace(
                    known,
                    type=known.type if known.type == spec.type else ANY,
                    required=known.required or spec.required,
                    sections=(*known.sections, key),
                )
    return list(found.values())


def _accepts(kind: str, value: Any) -> bool:
    if kind == ANY:
        return True
    if kind == SCALAR:
        return isinstance(value, str | int | float | bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return _type_of(value) == kind


def _describe(value: Any) -> str:
    kind = type_name(value)
    return {"null": "null", "integer": "a number", "number": "a number"}.get(
        kind, f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"
    )


def _wanted(kind: str) -> str:
    if kind == SCALAR:
        return "a string, number or boolean"
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def parameter_problems(
    specs: list[ParameterSpec], values: Mapping[str, Any]
) -> list[str]:
    """Why ``values`` do not fit the parameters (unknown names are the
    renderer's to report)."""
    problems: list[str] = []
    by_name = {spec.name: spec for spec in specs}
    for name, value in values.items():
        spec = by_name.get(name)
        if spec is None or _accepts(spec.type, value):
            continue
        problems.append(
            f"Parameter '{name}' must be {_wanted(spec.type)}; got {_describe(value)}."
        )
    return problems
