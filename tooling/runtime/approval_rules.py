"""An approval policy's parts, checked where the catalog enters: its rules
(a tool, and the argument conditions under which a call of it needs a human
"yes": ``ApprovalRule``), its approvers, its deadline and its four eyes
(``tooling.runtime.approvals`` has the policy itself and its decisions).

Conditions: keys are argument names, dotted for nested objects
(``"target.region"``); a value matches when it is equal to the argument (JSON
types compared strictly: ``true`` is not ``1``); a list matches any of its
values; every key must match; an argument the call lacks never matches. No
``when`` asks about every call of the tool. A condition on an argument the
tool does not take is refused (``check_condition_arguments``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .errors import PromptValidationError
from .serde import fields_of, split_optional

if TYPE_CHECKING:
    from .tools import Tool

APPROVER_KEYS = ("permission", "group")
MAX_DEADLINE_SECONDS = 366 * 24 * 3600
_RULE_KEYS = frozenset({"tool", "when"})
_SCALARS = (str, int, float, bool, type(None))
_MISSING = object()


@dataclasses.dataclass(frozen=True, slots=True)
class ApprovalRule:
    """One tool that needs approval, and when (``when`` empty: always)."""

    tool: str
    when: Mapping[str, tuple[Any, ...]] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )

    def matches(self, arguments: Mapping[str, Any]) -> bool:
        return all(
            _matches_any(_lookup(arguments, key), accepted)
            for key, accepted in self.when.items()
        )

    def describe(self) -> str:
        if not self.when:
            return ""
        parts = [
            f"{key} is {_show(values[0])}"
            if len(values) == 1
            else f"{key} is one of {', '.join(_show(v) for v in values)}"
            for key, values in self.when.items()
        ]
        return " and ".join(parts)


def _show(value: Any) -> str:
    """A condition value as the operator wrote it (JSON: ``true``, ``null``)."""
    return f"'{value}'" if isinstance(value, str) else json.dumps(value)


def _same(left: Any, right: Any) -> bool:
    """Equality on JSON values without Python's ``True == 1``."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left is right
    if isinstance(left, str) or isinstance(right, str):
        return isinstance(left, str) and isinstance(right, str) and left == right
    return bool(left == right)


def _matches_any(value: Any, accepted: tuple[Any, ...]) -> bool:
    if value is _MISSING:
        return False
    return any(_same(value, candidate) for candidate in accepted)


def _lookup(arguments: Mapping[str, Any], key: str) -> Any:
    value: Any = arguments
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def check_rule(index: int, raw: object) -> ApprovalRule:
    where = f"Approval rule {index + 1}"
    if not isinstance(raw, Mapping):
        raise PromptValidationError(
            f'{where} must be an object such as {{"tool": "deploy"}}.',
            placeholder="rules",
        )
    unknown = sorted(str(key) for key in raw if key not in _RULE_KEYS)
    if unknown:
        raise PromptValidationError(
            f"{where} has unknown key(s): {', '.join(unknown)} (allowed: tool, when).",
            placeholder="rules",
        )
    tool = raw.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        raise PromptValidationError(
            f'{where} needs "tool": the name of a tool of the prompt.',
            placeholder="rules",
        )
    if "when" not in raw:
        return ApprovalRule(tool.strip())
    when = raw["when"]
    if not isinstance(when, Mapping) or not when:
        raise PromptValidationError(
            f'{where}: "when" must be an object of argument conditions, such as '
            '{"environment": "production"}; leave it out to ask about every call.',
            placeholder="rules",
        )
    conditions: dict[str, tuple[Any, ...]] = {}
    for key, value in when.items():
        if (
            not isinstance(key, str)
            or not key.strip()
            or any(not part.strip() for part in key.split("."))
        ):
            raise PromptValidationError(
                f"{where}: condition keys must be argument names (dotted for "
                f"nested arguments), not {key!r}.",
                placeholder="rules",
            )
        values = tuple(value) if isinstance(value, list | tuple) else (value,)
        if not values:
            raise PromptValidationError(
                f"{where}: the list of values for '{key}' is empty.",
                placeholder="rules",
            )
        for candidate in values:
            if not isinstance(candidate, _SCALARS) or (
                isinstance(candidate, float) and candidate != candidate
            ):
                raise PromptValidationError(
                    f"{where}: the value of '{key}' must be a string, number, "
                    "boolean or null, or a list of them.",
                    placeholder="rules",
                )
        conditions[key.strip()] = values
    return ApprovalRule(tool.strip(), MappingProxyType(conditions))


def check_condition_arguments(
    policy_name: str, tool: Tool[Any, Any], names: frozenset[str]
) -> None:
    """Refuse a condition on an argument ``tool`` does not take: it never
    matches, so a misspelt one would let every call through unasked. Checked
    as deep as the parameters are dataclasses (a mapping's keys are not
    declared)."""
    for name in sorted(names):
        owner: Any = split_optional(tool.params_type)[0]
        path: list[str] = []
        for part in name.split("."):
            if owner is None or not dataclasses.is_dataclass(owner):
                break
            fields = {info.name: info for info in fields_of(owner)}
            path.append(part)
            if part not in fields:
                known = ", ".join(sorted(fields)) or "none"
                raise PromptValidationError(
                    f"Policy '{policy_name}' has a condition on "
                    f"'{'.'.join(path)}', which tool '{tool.name}' does not "
                    f"take (its arguments: {known}): the rule would never ask.",
                    placeholder="rules",
                )
            owner = split_optional(fields[part].annotation)[0]


def check_approvers(approvers: object) -> Mapping[str, str]:
    if approvers is None:
        return MappingProxyType({})
    if not isinstance(approvers, Mapping):
        raise PromptValidationError(
            'approvers must be an object: {"permission": "app_label.codename"} '
            'and/or {"group": "name"}.',
            placeholder="approvers",
        )
    unknown = sorted(str(key) for key in approvers if key not in APPROVER_KEYS)
    if unknown:
        raise PromptValidationError(
            f"approvers has unknown key(s): {', '.join(unknown)} "
            "(allowed: permission, group).",
            placeholder="approvers",
        )
    checked: dict[str, str] = {}
    for key in APPROVER_KEYS:
        value = approvers.get(key)
        if value is None or value == "":
            continue
        if not isinstance(value, str) or not value.strip() or len(value) > 150:
            raise PromptValidationError(
                f"approvers.{key} must be a non-blank name of at most 150 characters.",
                placeholder="approvers",
            )
        value = value.strip()
        if key == "permission" and (value.count(".") != 1 or not all(value.split("."))):
            raise PromptValidationError(
                f"approvers.permission '{value}' must be 'app_label.codename', "
                "for example 'sessions_app.decide_any_approval'.",
                placeholder="approvers",
            )
        checked[key] = value
    return MappingProxyType(checked)


def check_four_eyes(value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise PromptValidationError(
        "four_eyes must be true (the run's author may not decide its requests) "
        "or false, or left out for the default (WINK_APPROVAL_FOUR_EYES).",
        placeholder="four_eyes",
    )


def check_deadline(seconds: object) -> int | None:
    if seconds is None:
        return None
    if (
        not isinstance(seconds, int)
        or isinstance(seconds, bool)
        or not 1 <= seconds <= MAX_DEADLINE_SECONDS
    ):
        raise PromptValidationError(
            "deadline_seconds must be a whole number of seconds from 1 to "
            f"{MAX_DEADLINE_SECONDS} (a year), or left out for the default.",
            placeholder="deadline_seconds",
        )
    return seconds
