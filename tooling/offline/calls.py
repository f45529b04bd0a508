"""Which function calls the cooperative model makes next: every offered tool
once, and for a recoverable denial the missing prerequisite (or a read of the
file) followed by a retry of the denied call."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .history import Call, Failure, History, args_key
from .schema_values import sample_value

MAX_CALLS_PER_KEY = 3


def dumps_args(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclasses.dataclass(frozen=True, slots=True)
class _Need:
    """A prerequisite call: what satisfies it, and how to make it."""

    name: str
    arguments: str
    path: str | None = None

    def satisfied_by(self, call: Call) -> bool:
        if call.name != self.name:
            return False
        if self.path is None:
            return True
        return _path_argument(call.arguments) == self.path


def _path_argument(arguments: str) -> str | None:
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return None
    if isinstance(decoded, Mapping):
        for key in ("path", "file_path"):
            if isinstance(decoded.get(key), str):
                return str(decoded[key])
    return None


def function_tools(tools: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {
        str(t["name"]): t.get("parameters") or {}
        for t in tools
        if t.get("type") == "function" and t.get("name")
    }


def _read_tool(functions: Mapping[str, Any]) -> str | None:
    if "read_file" in functions:
        return "read_file"
    return next((name for name in functions if name.startswith("read")), None)


def _needs(failure: Failure, functions: Mapping[str, Mapping[str, Any]]) -> list[_Need]:
    if failure.kind == "requires":
        return [
            _Need(name, dumps_args(sample_value(functions[name])))
            for name in failure.names
            if name in functions
        ]
    if failure.kind == "read_first" and failure.path is not None:
        reader = _read_tool(functions)
        if reader is None:
            return []
        schema = functions[reader]
        arguments = sample_value(schema)
        if not isinstance(arguments, dict):
            arguments = {}
        properties = schema.get("properties") or {}
        key = (
            "file_path"
            if "file_path" in properties and "path" not in properties
            else "path"
        )
        arguments[key] = failure.path
        return [_Need(reader, dumps_args(arguments), path=failure.path)]
    return []


def plan_calls(
    history: History, functions: Mapping[str, Mapping[str, Any]]
) -> list[tuple[str, str]]:
    calls = history.calls
    counts = Counter((call.name, call.key) for call in calls)
    planned: list[tuple[str, str]] = []
    planned_keys: set[tuple[str, str]] = set()

    def add(name: str, arguments: str) -> None:
        key = (name, args_key(arguments))
        if key in planned_keys or counts[key] >= MAX_CALLS_PER_KEY:
            return
        planned_keys.add(key)
        planned.append((name, arguments))

    for position, call in enumerate(calls):
        if call.failure is None or call.failure.kind == "other":
            continue
        if call.name not in functions:
            continue  # no longer offered
        later = calls[position + 1 :]
        if any(c.name == call.name and c.key == call.key for c in later):
            continue  # already retried
        needs = _needs(call.failure, functions)
        if not needs:
            continue  # nothing offered can fix it
        unmet = [
            need
            for need in needs
            if not any(need.satisfied_by(c) and c.ok for c in calls)
        ]
        if not unmet:
            add(call.name, call.arguments)
            continue
        for need in unmet:
            if not any(need.satisfied_by(c) for c in later):
                add(need.name, need.arguments)
    attempted = {call.name for call in calls}
    for name, schema in functions.items():
        if name not in attempted:
            add(name, dumps_args(sample_value(schema)))
    return planned
