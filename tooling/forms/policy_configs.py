"""Policy configs as the structured editor sees them.

``canonical(kind, config)`` is the config the kind's fields write for what
``config`` means to the runtime (``tooling.assembly.build_policy``): tool
lists sorted and without repeats, keys sorted where order means nothing,
defaults left out (an empty tool list, a blank mount point, an absent
approver), a one-value condition as the value itself. Two configs of one
kind mean the same exactly when their canonical forms are the same JSON
(``same``). It is ``None`` when the fields cannot show ``config`` without
losing something (an unknown key, a value of another type); ``unexpressible``
says what, and such a config is edited as JSON.

Conditions of approval rules are lines ``argument = value``
(``condition_lines``, ``parse_conditions``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError

from tooling.models import PolicyDefinition

from .editors import quoted

Kind = PolicyDefinition.Kind
#: A whole number too long to show (``str()`` refuses past 4300 digits).
_HUGE = 10**18


class Unexpressible(Exception):
    """The fields cannot show a config; the message says why."""


def same(left: Any, right: Any) -> bool:
    """Whether two JSON values are the same JSON (``true`` is not ``1``),
    whatever the order of their objects' keys."""
    try:
        return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)
    except (TypeError, ValueError):
        return False


def _object(config: Any, allowed: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(config, Mapping):
        raise Unexpressible("it is not a JSON object")
    unknown = sorted(quoted(key) for key in config if key not in allowed)
    if unknown:
        raise Unexpressible(f"unknown key(s): {', '.join(unknown)}")
    return config


def _tool_names(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(
        isinstance(name, str) and name for name in value
    ):
        raise Unexpressible(f"{where} is not a list of tool names")
    return sorted(set(value))


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < _HUGE


def _sequential(config: Any) -> dict[str, Any]:
    dependencies = _object(config, ("dependencies",)).get("dependencies", {})
    if not isinstance(dependencies, Mapping):
        raise Unexpressible("dependencies is not an object")
    canonical: dict[str, list[str]] = {}
    for tool in sorted(dependencies):
        if not tool:
            raise Unexpressible("a dependency names no tool")
        after = _tool_names(dependencies[tool], f"what {quoted(tool)} runs after")
        if not after:
            raise Unexpressible(f"{quoted(tool)} runs after no tool")
        canonical[tool] = after
    return {"dependencies": canonical}


def _read_before_write(config: Any) -> dict[str, Any]:
    config = _object(config, ("read_tools", "write_tools", "mount_point"))
    canonical: dict[str, Any] = {}
    for key in ("read_tools", "write_tools"):
        value = config.get(key)
        if value:  # empty or absent: the defaults (``build_policy``)
            canonical[key] = _tool_names(value, key)
    mount_point = config.get("mount_point")
    if mount_point:
        if not isinstance(mount_point, str):
            raise Unexpressible("mount_point is not text")
        if mount_point.strip("/"):
            canonical["mount_point"] = mount_point.strip("/")
    return canonical


def _call_limit(config: Any) -> dict[str, Any]:
    limits = _object(config, ("limits",)).get("limits", {})
    if not isinstance(limits, Mapping):
        raise Unexpressible("limits is not an object")
    canonical: dict[str, int] = {}
    for tool in sorted(limits):
        if not tool or not _whole(limits[tool]):
            raise Unexpressible(f"the limit of {quoted(tool)} is not a whole number")
        canonical[tool] = limits[tool]
    return {"limits": canonical}


_SCALARS = (str, int, float, bool, type(None))


def _condition_value(value: Any, where: str) -> Any:
    if not isinstance(value, _SCALARS) or (
        isinstance(value, float) and not math.isfinite(value)
    ):
        raise Unexpressible(f"{where} is not a string, number, boolean or null")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _HUGE:
        raise Unexpressible(f"{where} is too long a number")
    return value


def _rule(number: int, rule: Any) -> dict[str, Any]:
    where = f"rule {number}"
    rule = _object(rule, ("tool", "when"))
    tool = rule.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        raise Unexpressible(f"{where} names no tool")
    canonical: dict[str, Any] = {"tool": tool.strip()}
    if "when" not in rule:
        return canonical
    when = rule["when"]
    if not isinstance(when, Mapping) or not when:
        raise Unexpressible(f"the conditions of {where} are not an object")
    conditions: dict[str, Any] = {}
    for key, value in when.items():
        name = key.strip() if isinstance(key, str) else ""
        if condition_key_problem(name) or name in conditions:
            raise Unexpressible(f"{where} has the condition key {quoted(key)}")
        values = value if isinstance(value, list) else [value]
        if not values:
            raise Unexpressible(f"{where} has no value for {quoted(name)}")
        shown = [_condition_value(v, f"a value of {quoted(name)}") for v in values]
        conditions[name] = shown[0] if len(shown) == 1 else shown
    canonical["when"] = conditions
    return canonical


def _approval(config: Any) -> dict[str, Any]:
    config = _object(config, ("rules", "approvers", "deadline_seconds", "four_eyes"))
    rules = config.get("rules", [])
    if not isinstance(rules, list):
        raise Unexpressible("rules is not a list")
    canonical: dict[str, Any] = {
        "rules": [_rule(number, rule) for number, rule in enumerate(rules, start=1)]
    }
    approvers = config.get("approvers")
    if approvers is not None:
        approvers = _object(approvers, ("permission", "group"))
        named = {}
        for key in ("permission", "group"):
            value = approvers.get(key)
            if value is None or value == "":
                continue
            if not isinstance(value, str) or not value.strip():
                raise Unexpressible(f"approvers.{key} is not a name")
            named[key] = value.strip()
        if named:
            canonical["approvers"] = named
    deadline = config.get("deadline_seconds")
    if deadline is not None:
        if not _whole(deadline):
            raise Unexpressible("deadline_seconds is not a whole number")
        canonical["deadline_seconds"] = deadline
    four_eyes = config.get("four_eyes")
    if four_eyes is not None:
        if not isinstance(four_eyes, bool):
            raise Unexpressible("four_eyes is not true or false")
        canonical["four_eyes"] = four_eyes
    return canonical


_CANONICAL = {
    Kind.SEQUENTIAL_DEPENDENCY: _sequential,
    Kind.READ_BEFORE_WRITE: _read_before_write,
    Kind.CALL_LIMIT: _call_limit,
    Kind.APPROVAL: _approval,
}


def unexpressible(kind: str, config: Any) -> str | None:
    """Why the fields of ``kind`` cannot show ``config`` (``None``: they can)."""
    try:
        _CANONICAL[Kind(kind)](config)
    except (Unexpressible, ValueError) as error:
        return str(error) or "it is not a config of this kind"
    return None


def canonical(kind: str, config: Any) -> dict[str, Any] | None:
    """The config the fields of ``kind`` write for what ``config`` means, or
    ``None`` when they cannot show it."""
    try:
        return _CANONICAL[Kind(kind)](config)
    except (Unexpressible, ValueError):
        return None


def referenced_names(config: Any) -> set[str]:
    """Every tool name a config of any kind names (for the tool choices)."""
    names: set[str] = set()
    if not isinstance(config, Mapping):
        return names
    for key in ("dependencies", "limits"):
        value = config.get(key)
        if isinstance(value, Mapping):
            names.update(name for name in value if isinstance(name, str))
            if key == "dependencies":
                for after in value.values():
                    if isinstance(after, list):
                        names.update(n for n in after if isinstance(n, str))
    for key in ("read_tools", "write_tools"):
        value = config.get(key)
        if isinstance(value, list):
            names.update(name for name in value if isinstance(name, str))
    rules = config.get("rules")
    if isinstance(rules, list):
        for rule in rules:
            if isinstance(rule, Mapping) and isinstance(rule.get("tool"), str):
                names.add(rule["tool"].strip())
    return {name for name in names if name}


# -- conditions as lines ------------------------------------------------------


def condition_key_problem(key: str) -> str | None:
    """What is wrong with ``key`` as a condition's argument name (the
    runtime's rule, and what a line can hold), or ``None``."""
    if not key or any(not part.strip() for part in key.split(".")):
        return (
            f"{quoted(key)} is not an argument name (dotted for nested arguments, "
            "such as target.region)"
        )
    if "=" in key or "\n" in key or "\r" in key:
        return f"{quoted(key)} is not an argument name"
    return None


class _NotAScalar(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotAScalar(name)


_NUMBER = re.compile(r"-?[0-9][0-9.eE+-]*")


def parse_value(text: str) -> Any:
    """A condition's value as typed: JSON text of a string, number, boolean
    or null (``3``, ``true``, ``"3"``), else the text itself as a string.
    Refused (``ValueError``): a list or an object, a number out of range."""
    text = text.strip()
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except _NotAScalar:
        return text  # NaN, Infinity: text
    except ValueError:
        if _NUMBER.fullmatch(text):
            raise ValueError(f"{quoted(text)} is too long a number") from None
        if text.startswith('"'):
            raise ValueError(
                f"{quoted(text)} starts a quoted text that does not end: close it "
                'with a " (write \\" for a quote inside)'
            ) from None
        return text
    except RecursionError:
        raise ValueError("a value is one string, number, true, false or null") from None
    if isinstance(value, list | dict):
        raise ValueError(
            f"{quoted(text)} is a list or an object: a value is one string, number, "
            'true, false or null (several values: a line each; a text like this: "...")'
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{quoted(text)} is not a finite number")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _HUGE:
        raise ValueError(f"{quoted(text)} is too long a number")
    return value


def show_value(value: Any) -> str:
    """A condition's value as a line shows it: text as it is when that reads
    back as the same text, else JSON (``"3"``, ``true``, ``null``)."""
    if (
        isinstance(value, str)
        and value
        and value == value.strip()
        and "\n" not in value
        and "\r" not in value
    ):
        try:
            if parse_value(value) == value:
                return value
        except ValueError:
            pass
    return json.dumps(value, ensure_ascii=False)


def condition_lines(when: Mapping[str, Any]) -> str:
    """``{"environment": ["production", "dr"]}`` as ``environment = production``
    and ``environment = dr``, a line each."""
    lines = []
    for key, value in when.items():
        for item in value if isinstance(value, list) else [value]:
            lines.append(f"{key} = {show_value(item)}")
    return "\n".join(lines)


def parse_conditions(text: str, where: str) -> dict[str, Any]:
    """The lines of ``condition_lines`` read back; every line's mistake at
    once (``ValidationError``, each naming ``where`` and the line)."""
    values: dict[str, list[Any]] = {}
    problems = []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        key, sep, rest = line.partition("=")
        key = key.strip()
        if not sep:
            problems.append(
                f"{where}, line {number}: write a condition as argument = value "
                f"(for example environment = production), not {quoted(line.strip())}."
            )
            continue
        problem = condition_key_problem(key)
        if problem:
            problems.append(f"{where}, line {number}: {problem}.")
            continue
        try:
            values.setdefault(key, []).append(parse_value(rest))
        except ValueError as error:
            problems.append(f"{where}, line {number}: {error}.")
    if problems:
        raise ValidationError(problems)
    return {
        key: items[0] if len(items) == 1 else items for key, items in values.items()
    }
