"""Policy entries -> runtime ``ToolPolicy`` objects, with their typed configs."""

from __future__ import annotations

from collections.abc import Mapping

from tooling.models import PolicyDefinition
from tooling.runtime import (
    PromptValidationError,
    ReadBeforeWritePolicy,
    SequentialDependencyPolicy,
    ToolPolicy,
)


def build_policy(definition: PolicyDefinition) -> ToolPolicy:
    config = definition.config or {}
    if not isinstance(config, Mapping):
        raise PromptValidationError(
            "Config must be a JSON object.", placeholder="config"
        )
    if definition.kind == PolicyDefinition.Kind.SEQUENTIAL_DEPENDENCY:
        dependencies = config.get("dependencies")
        if not isinstance(dependencies, Mapping) or not dependencies:
            raise PromptValidationError(
                'A sequential dependency policy needs "dependencies": '
                '{"tool": ["prerequisite", ...]}.',
                placeholder="dependencies",
            )
        for tool_name, required in dependencies.items():
            if not isinstance(required, list) or not all(
                isinstance(r, str) for r in required
            ):
                raise PromptValidationError(
                    f"Dependencies of '{tool_name}' must be a list of tool names.",
                    placeholder="dependencies",
                )
        return SequentialDependencyPolicy(dependencies, name=definition.name)
    if definition.kind == PolicyDefinition.Kind.READ_BEFORE_WRITE:
        unknown = set(config) - {"read_tools", "write_tools", "mount_point"}
        if unknown:
            raise PromptValidationError(
                f"Unknown read-before-write option(s): {', '.join(sorted(unknown))}.",
                placeholder="config",
            )
        return ReadBeforeWritePolicy(
            read_tools=config.get("read_tools") or None,
            write_tools=config.get("write_tools") or None,
            mount_point=config.get("mount_point") or None,
            name=definition.name,
        )
    raise PromptValidationError(
        f"Unknown policy kind '{definition.kind}'.", placeholder="kind"
    )
