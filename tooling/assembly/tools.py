"""Function tool entries -> runtime ``Tool``s (handler, overrides, examples)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from tooling.handlers import registry
from tooling.models import ToolDefinition
from tooling.runtime import PromptValidationError, Tool, ToolExample
from tooling.runtime.serde import SerdeError, parse
from tooling.runtime.tools import validate_description


def build_tool(definition: ToolDefinition) -> Tool[Any, Any]:
    """The runtime tool of a catalog entry: handler, name, overrides, examples."""
    if definition.handler_key not in registry:
        raise PromptValidationError(
            f"Handler '{definition.handler_key}' is not registered.",
            placeholder="handler_key",
        )
    base = registry.get(definition.handler_key)
    description = (definition.description or "").strip()
    if description and description != base.description and not base.accepts_overrides:
        raise PromptValidationError(
            f"Handler '{definition.handler_key}' does not accept overrides; leave the "
            "description empty.",
            placeholder="description",
        )
    examples = tuple(_build_examples(base, definition.examples or []))
    return dataclasses.replace(
        base,
        name=definition.name,
        description=description or base.description,
        examples=(*base.examples, *examples),
    )


def _build_examples(base: Tool[Any, Any], raw: Any) -> list[ToolExample[Any, Any]]:
    if not isinstance(raw, list):
        raise PromptValidationError(
            "Examples must be a list of objects.", placeholder="examples"
        )
    return [build_example(base, number, item) for number, item in enumerate(raw, 1)]


def build_example(
    base: Tool[Any, Any], number: int, item: Any
) -> ToolExample[Any, Any]:
    """Example ``number`` of a catalog entry for the tool ``base``, checked
    against the handler's types (every error names the example)."""
    if not isinstance(item, Mapping) or set(item) - {"description", "input", "output"}:
        raise PromptValidationError(
            f"Example {number} must be an object with description, input and output.",
            placeholder="examples",
        )
    try:
        params = (
            parse(base.params_type, item.get("input") or {})
            if base.params_type
            else None
        )
        output: Any = None
        if base.result_type is not None:
            raw_output = item.get("output")
            if base.result_container == "array":
                if not isinstance(raw_output, list):
                    raise SerdeError("output", "expected an array")
                output = tuple(parse(base.result_type, o) for o in raw_output)
            else:
                output = parse(base.result_type, raw_output or {})
    except SerdeError as error:
        raise PromptValidationError(
            f"Example {number} does not match the handler's types: {error}",
            placeholder="examples",
        ) from error
    try:
        return ToolExample(
            description=str(item.get("description", "")), input=params, output=output
        )
    except PromptValidationError as error:
        raise PromptValidationError(
            f"Example {number}: {error.message}", placeholder="examples"
        ) from error


def example_problems(
    handler_key: str, examples: Iterable[tuple[int, Any]]
) -> list[str]:
    """What is wrong with each of ``examples`` (``(number, example)`` pairs)
    for the handler ``handler_key``: every example's error, each naming it."""
    base = registry.get(handler_key)
    problems = []
    for number, item in examples:
        try:
            build_example(base, number, item)
        except PromptValidationError as error:
            problems.append(error.message)
            if isinstance(error.__cause__, SerdeError):
                # Its types are checked first: its description too.
                try:
                    validate_description(
                        str(item.get("description", "")),  # a mapping: typed
                        owner="Tool example",
                    )
                except PromptValidationError as also:
                    problems.append(f"Example {number}: {also.message}")
    return problems
