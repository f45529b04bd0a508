"""Policy entries -> runtime ``ToolPolicy`` objects, with their typed configs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tooling.models import PolicyDefinition
from tooling.runtime import (
    ApprovalPolicy,
    CallLimitPolicy,
    PromptValidationError,
    ReadBeforeWritePolicy,
    SequentialDependencyPolicy,
    ToolPolicy,
)


def build_policy(definition: PolicyDefinition) -> ToolPolicy:
    # (0, false, [] and "" too: only an object is a config)
    config = {} if definition.config is None else definition.config
    if not isinstance(config, Mapping):
        raise PromptValidationError(
            "Config must be a JSON object.", placeholder="config"
        )
    if definition.kind == PolicyDefinition.Kind.SEQUENTIAL_DEPENDENCY:
        unknown = set(config) - {"dependencies"}
        if unknown:
            raise PromptValidationError(
                "Unknown sequential dependency option(s): "
                f"{', '.join(sorted(map(str, unknown)))} (allowed: dependencies).",
                placeholder="config",
            )
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
            read_tools=_tool_names(config, "read_tools"),
            write_tools=_tool_names(config, "write_tools"),
            mount_point=_mount_point(config),
            name=definition.name,
        )
    if definition.kind == PolicyDefinition.Kind.CALL_LIMIT:
        unknown = set(config) - {"limits"}
        if unknown:
            raise PromptValidationError(
                f"Unknown call limit option(s): {', '.join(sorted(unknown))}.",
                placeholder="config",
            )
        limits = config.get("limits")
        if not isinstance(limits, Mapping) or not limits:
            raise PromptValidationError(
                'A call limit policy needs "limits": {"tool": most calls per run}.',
                placeholder="limits",
            )
        return CallLimitPolicy(limits, name=definition.name)
    if definition.kind == PolicyDefinition.Kind.APPROVAL:
        return _approval_policy(definition, config)
    raise PromptValidationError(
        f"Unknown policy kind '{definition.kind}'.", placeholder="kind"
    )


def _tool_names(config: Mapping[str, Any], key: str) -> list[str] | None:
    """A read-before-write tool list (empty or absent: the defaults)."""
    value = config.get(key)
    if not value:
        return None
    if not isinstance(value, list) or not all(
        isinstance(name, str) and name.strip() for name in value
    ):
        raise PromptValidationError(
            f'"{key}" must be a list of tool names, such as ["read_file"].',
            placeholder=key,
        )
    return value


def _mount_point(config: Mapping[str, Any]) -> str | None:
    value = config.get("mount_point")
    if not value:
        return None
    if not isinstance(value, str):
        raise PromptValidationError(
            '"mount_point" must be a folder path, such as "workspace".',
            placeholder="mount_point",
        )
    return value


def _approval_policy(
    definition: PolicyDefinition, config: Mapping[str, Any]
) -> ApprovalPolicy:
    """``{"rules": [...], "approvers": {"permission"?, "group"?},
    "deadline_seconds"?, "four_eyes"?}``; the runtime checks each part's
    shape."""
    unknown = set(config) - {"rules", "approvers", "deadline_seconds", "four_eyes"}
    if unknown:
        raise PromptValidationError(
            f"Unknown approval option(s): {', '.join(sorted(map(str, unknown)))} "
            "(allowed: rules, approvers, deadline_seconds, four_eyes).",
            placeholder="config",
        )
    if "rules" not in config:
        raise PromptValidationError(
            'An approval policy needs "rules": [{"tool": "deploy", "when": '
            '{"environment": "production"}}].',
            placeholder="rules",
        )
    return ApprovalPolicy(
        config["rules"],
        approvers=config.get("approvers"),
        deadline_seconds=config.get("deadline_seconds"),
        four_eyes=config.get("four_eyes"),
        name=definition.name,
    )
