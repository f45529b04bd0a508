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
(``policy_conditions``). ``fields_initial`` and ``config_from_fields`` turn a
canonical config into the values of its kind's fields and back.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from tooling.models import PolicyDefinition

from .editors import MAX_ROWS, one_line, quoted
from .policy_conditions import HUGE, condition_key_problem

Kind = PolicyDefinition.Kind


#: Each kind's fields, in the order shown.
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    Kind.SEQUENTIAL_DEPENDENCY: ("dependencies",),
    Kind.READ_BEFORE_WRITE: ("read_tools", "write_tools", "mount_point"),
    Kind.CALL_LIMIT: ("limits",),
    Kind.APPROVAL: (
        "rules",
        "approvers_permission",
        "approvers_group",
        "deadline_seconds",
        "four_eyes",
    ),
}
EDITOR_FIELDS = frozenset(name for names in KIND_FIELDS.values() for name in names)


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


def _rows(value: Any, what: str) -> None:
    if len(value) > MAX_ROWS:
        raise Unexpressible(f"more than {MAX_ROWS} {what}, the most the rows take")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < HUGE


def _sequential(config: Any) -> dict[str, Any]:
    dependencies = _object(config, ("dependencies",)).get("dependencies", {})
    if not isinstance(dependencies, Mapping):
        raise Unexpressible("dependencies is not an object")
    _rows(dependencies, "dependencies")
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
        if not one_line(mount_point):
            raise Unexpressible("mount_point holds a line break")
        if mount_point.strip("/"):
            canonical["mount_point"] = mount_point.strip("/")
    return canonical


def _call_limit(config: Any) -> dict[str, Any]:
    limits = _object(config, ("limits",)).get("limits", {})
    if not isinstance(limits, Mapping):
        raise Unexpressible("limits is not an object")
    _rows(limits, "limits")
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
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= HUGE:
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
        written = [json.dumps(v, sort_keys=True) for v in shown]
        if len(set(written)) < len(written):
            # the lines would repeat one, which they refuse (parse_conditions):
            # the config is shown as it is, in JSON
            raise Unexpressible(f"{where} repeats a value of {quoted(name)}")
        conditions[name] = shown[0] if len(shown) == 1 else shown
    canonical["when"] = conditions
    return canonical


def _approval(config: Any) -> dict[str, Any]:
    config = _object(config, ("rules", "approvers", "deadline_seconds", "four_eyes"))
    rules = config.get("rules", [])
    if not isinstance(rules, list):
        raise Unexpressible("rules is not a list")
    _rows(rules, "rules")
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
            if not one_line(value):
                raise Unexpressible(f"approvers.{key} holds a line break")
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


def fields_initial(kind: str, config: dict[str, Any]) -> dict[str, Any]:
    """The fields of ``kind`` showing the canonical ``config``."""
    if kind == Kind.SEQUENTIAL_DEPENDENCY:
        return {"dependencies": config["dependencies"]}
    if kind == Kind.READ_BEFORE_WRITE:
        return {
            "read_tools": config.get("read_tools", []),
            "write_tools": config.get("write_tools", []),
            "mount_point": config.get("mount_point", ""),
        }
    if kind == Kind.CALL_LIMIT:
        return {"limits": config["limits"]}
    approvers = config.get("approvers", {})
    return {
        "rules": config["rules"],
        "approvers_permission": approvers.get("permission", ""),
        "approvers_group": approvers.get("group", ""),
        "deadline_seconds": config.get("deadline_seconds"),
        "four_eyes": config.get("four_eyes"),
    }


def config_from_fields(kind: str, parts: dict[str, Any]) -> dict[str, Any]:
    """The canonical config of ``kind`` that its fields' values write (a part
    left out: its default)."""
    if kind == Kind.SEQUENTIAL_DEPENDENCY:
        return {"dependencies": parts.get("dependencies") or {}}
    if kind == Kind.READ_BEFORE_WRITE:
        config: dict[str, Any] = {}
        for key in ("read_tools", "write_tools"):
            if parts.get(key):
                config[key] = sorted(set(parts[key]))
        mount_point = (parts.get("mount_point") or "").strip("/")
        if mount_point:
            config["mount_point"] = mount_point
        return config
    if kind == Kind.CALL_LIMIT:
        return {"limits": parts.get("limits") or {}}
    config = {"rules": parts.get("rules") or []}
    approvers = {
        key: parts[f"approvers_{key}"].strip()
        for key in ("permission", "group")
        if (parts.get(f"approvers_{key}") or "").strip()
    }
    if approvers:
        config["approvers"] = approvers
    if parts.get("deadline_seconds") is not None:
        config["deadline_seconds"] = parts["deadline_seconds"]
    if parts.get("four_eyes") is not None:
        config["four_eyes"] = parts["four_eyes"]
    return config
