"""Which function calls the cooperative model makes next: every offered tool
once, and for a recoverable denial the missing prerequisite (or a read of the
file) followed by a retry of the denied call.

Arguments are sample values for the tool's schema (``schema_values``), except
that a top-level argument with choices (``enum``) takes the one choice the
prompt names, if it names exactly one: "Release to production" deploys to
``production`` where the schema's first choice is ``staging``. The prompt's
"Tools:" example lists are not its words (they illustrate one choice).
"""

from __future__ import annotations

import dataclasses
import json
import re
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


def _prose(text: str) -> str:
    """``text`` without its "Tools:" example lists (``tool_examples_block``:
    the "Tools:" line, then lines that start with "- " or an indent)."""
    kept: list[str] = []
    in_tools = False
    for line in text.splitlines():
        if line == "Tools:":
            in_tools = True
            continue
        if in_tools and line.startswith(("- ", " ")):
            continue
        in_tools = False
        kept.append(line)
    return "\n".join(kept)


def named_choices(schema: Mapping[str, Any], arguments: Any, text: str) -> Any:
    """``arguments`` with each top-level ``enum`` argument set to the one
    choice ``text`` names as a word (unchanged when it names none or several)."""
    if not text or not isinstance(arguments, dict):
        return arguments
    text = _prose(text)
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return arguments
    for name, sub in properties.items():
        options = sub.get("enum") if isinstance(sub, Mapping) else None
        if name not in arguments or not isinstance(options, list):
            continue
        named = [
            option
            for option in options
            if isinstance(option, str)
            and option
            and re.search(rf"(?<!\w){re.escape(option)}(?!\w)", text)
        ]
        if len(named) == 1:
            arguments[name] = named[0]
    return arguments


def sample_arguments(schema: Mapping[str, Any], text: str = "") -> str:
    """Arguments for a call of a tool with parameters ``schema``, as JSON."""
    return dumps_args(named_choices(schema, sample_value(schema), text))


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


def _needs(
    failure: Failure, functions: Mapping[str, Mapping[str, Any]], text: str
) -> list[_Need]:
    if failure.kind == "requires":
        return [
            _Need(name, sample_arguments(functions[name], text))
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
    history: History, functions: Mapping[str, Mapping[str, Any]], text: str = ""
) -> list[tuple[str, str]]:
    """The calls to make next; ``text`` (the prompt) may name enum choices."""
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
        needs = _needs(call.failure, functions, text)
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
            add(name, sample_arguments(schema, text))
    return planned
