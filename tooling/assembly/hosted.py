"""Hosted tool entries -> runtime ``HostedTool``s, through each kind's spec.

A kind's spec (``tooling.runtime.hosted.spec``) says which keys its stored
``config`` may hold and how they become its config dataclass; this module
adds only what the deployment owns: the values of the ``header_env`` and
``secret_env`` shapes and the registered names of the ``executor`` shape.

MCP header values and the MCP authorization token are read from the
environment here, when the prompt is built: the catalog stores only the
variables' names, and only variables the operator allowed may be named
(``WINK_MCP_HEADER_ENV_PREFIX``, default ``WINK_MCP_``, or
``WINK_MCP_HEADER_ENV_ALLOW``): an MCP server can never be handed the
application's own secrets.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.views.decorators.debug import sensitive_variables

from tooling import shell_executors
from tooling.models import HostedToolDefinition, ModelCapability
from tooling.runtime import HostedTool, McpConfig, PromptValidationError, TrustLevel
from tooling.runtime.hosted.mcp import MCP_SPEC
from tooling.runtime.hosted.spec import HostedKindSpec, HostedOption, hosted_kind

ENV_VAR_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


def allowed_header_variable(variable: str) -> bool:
    """Whether an MCP header may read ``variable`` (settings decide)."""
    prefix = settings.WINK_MCP_HEADER_ENV_PREFIX
    return bool(prefix and variable.startswith(prefix)) or (
        variable in settings.WINK_MCP_HEADER_ENV_ALLOW
    )


def header_variable_rule() -> str:
    prefix = settings.WINK_MCP_HEADER_ENV_PREFIX
    listed = ", ".join(settings.WINK_MCP_HEADER_ENV_ALLOW)
    parts = [f"names starting with {prefix}"] if prefix else []
    if listed:
        parts.append(f"one of {listed}")
    return " or ".join(parts) or "none (no variable is allowed)"


def _checked_variable(option: str, what: str, variable: Any) -> str:
    """``variable`` when an MCP credential (``what``: "MCP header 'X'",
    "MCP authorization") may read it."""
    if not isinstance(variable, str) or not ENV_VAR_NAME.fullmatch(variable):
        raise PromptValidationError(
            f"{what} needs an environment variable name matching "
            f"^[A-Z_][A-Z0-9_]*$ (got {variable!r}).",
            placeholder=option,
        )
    if not allowed_header_variable(variable):
        readers = "MCP headers" if what.startswith("MCP header") else "MCP credentials"
        raise PromptValidationError(
            f"{what} cannot read '{variable}': {readers} read "
            f"only the environment variables the operator allowed "
            f"({header_variable_rule()}; settings WINK_MCP_HEADER_ENV_PREFIX "
            "and WINK_MCP_HEADER_ENV_ALLOW).",
            placeholder=option,
        )
    return variable


#: (option, what reads it, variable, its value: None unset, "" empty)
Missing = tuple[str, str, str, str | None]


# The values are secrets: error pages never show these locals.
@sensitive_variables("headers", "value", "environ")
def _header_values(
    option: str, header_env: Any, environ: Mapping[str, str]
) -> tuple[dict[str, str], list[Missing]]:
    """Header values read from ``environ``, and the variables that are unset."""
    if not isinstance(header_env, Mapping):
        raise PromptValidationError(
            f"{option} must map header names to environment variable names: "
            '{"Authorization": "WINK_MCP_CRM_TOKEN"}.',
            placeholder=option,
        )
    headers: dict[str, str] = {}
    missing: list[Missing] = []
    for header, variable in header_env.items():
        what = f"MCP header '{header}'"
        variable = _checked_variable(option, what, variable)
        value = environ.get(variable)
        if not value:
            missing.append((option, what, variable, value))
        headers[str(header)] = value or ""
    return headers, missing


class _Deployment:
    """Resolves the deployment's shapes while a config is built, and reports
    what is missing only afterwards, so every other mistake is named first
    (the runtime checks everything, header names included, before that)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.missing: list[Missing] = []
        self.executors: list[str] = []

    # header values and connector tokens: error pages never show these locals
    @sensitive_variables("headers", "secret")
    def __call__(self, option: HostedOption, value: Any) -> Any:
        if option.shape == "header_env":
            headers, missing = _header_values(option.name, value, self.environ)
            self.missing += missing
            return headers
        if option.shape == "secret_env":
            variable = _checked_variable(option.name, "MCP authorization", value)
            secret = self.environ.get(variable)
            if not secret:
                self.missing.append(
                    (option.name, "MCP authorization", variable, secret)
                )
                # a placeholder the config accepts: the run is refused anyway
                return "unset"
            return secret
        if option.shape == "executor" and isinstance(value, str):
            self.executors.append(value.strip())
        return value

    def check(self) -> None:
        registered = shell_executors.names()
        for name in self.executors:
            if name and name not in registered:
                raise PromptValidationError(
                    f"No shell executor is registered as '{name}'; registered: "
                    f"{', '.join(registered) or 'none'}.",
                    placeholder="executor",
                )
        if self.missing:
            option, what, variable, value = self.missing[0]
            state = "which is not set" if value is None else "which is empty"
            raise PromptValidationError(
                f"{what} reads environment variable '{variable}', {state}.",
                placeholder=option,
            )


def hosted_config(
    spec: HostedKindSpec[Any],
    config: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
) -> Any:
    """The config dataclass a stored ``config`` describes for ``spec``'s kind;
    ``environ`` (default ``os.environ``) gives the header values."""
    deployment = _Deployment(os.environ if environ is None else environ)
    result = spec.config_from(config, deployment)
    deployment.check()
    return result


def _mcp_config(
    config: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> McpConfig:
    """The MCP config; header values come from the environment, never the row."""
    result: McpConfig = hosted_config(MCP_SPEC, config, environ)
    return result


def build_hosted_tool(definition: HostedToolDefinition) -> HostedTool[Any]:
    spec = hosted_kind(definition.kind)
    if spec is None:
        raise PromptValidationError(
            f"Hosted tool kind '{definition.kind}' is not supported.",
            placeholder="kind",
        )
    # (0, false, [] and "" too: only an object is a config)
    config = {} if definition.config is None else definition.config
    if not isinstance(config, Mapping):
        raise PromptValidationError(
            "Config must be a JSON object.", placeholder="config"
        )
    try:
        tool = spec.tool(
            hosted_config(spec, config),
            name=definition.name,
            description=definition.description,
        )
        if definition.min_trust_level:
            tool = dataclasses.replace(
                tool, min_trust=TrustLevel.parse(definition.min_trust_level)
            )
        return tool
    except (TypeError, ValueError) as error:
        if isinstance(error, PromptValidationError):
            raise
        raise PromptValidationError(
            f"Invalid {definition.kind} config: {error}", placeholder="config"
        ) from error


def model_capabilities(model: str) -> dict[str, frozenset[str]] | None:
    """The allow-list for ``model``, or ``None`` when the catalog has no row."""
    row = ModelCapability.objects.filter(model=model).first()
    if row is None:
        return None
    return {model: frozenset(row.hosted_kinds or [])}
