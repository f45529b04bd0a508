"""Hosted tool entries -> runtime ``HostedTool``s, one config builder per kind.

MCP header values are read from the environment here, when the prompt is
built: the catalog stores only the variables' names, and only variables the
operator allowed may be named (``WINK_MCP_HEADER_ENV_PREFIX``, default
``WINK_MCP_``, or ``WINK_MCP_HEADER_ENV_ALLOW``): an MCP server can never be
handed the application's own secrets.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.conf import settings

from tooling.models import HostedToolDefinition, ModelCapability
from tooling.runtime import (
    CodeInterpreterConfig,
    DomainFilter,
    FileSearchConfig,
    GeoHint,
    HostedTool,
    ImageGenerationConfig,
    McpConfig,
    PromptValidationError,
    RankingOptions,
    WebSearchConfig,
    code_interpreter_tool,
    file_search_tool,
    image_generation_tool,
    mcp_tool,
    web_search_tool,
)


def _web_search_config(config: Mapping[str, Any]) -> WebSearchConfig:
    domains = config.get("allowed_domains") or []
    geo_fields = ("country", "city", "region", "timezone")
    geo = None
    if any(config.get(name) for name in geo_fields):
        geo = GeoHint(
            country_code=config.get("country") or None,
            city=config.get("city") or None,
            region=config.get("region") or None,
            timezone=config.get("timezone") or None,
        )
    return WebSearchConfig(
        domain_filter=DomainFilter(allowed=tuple(domains)) if domains else None,
        geo_hint=geo,
        allow_live_access=bool(config.get("allow_live_access", True)),
        search_context_size=config.get("search_context_size") or None,
    )


# The JSON keys each kind's ``config`` may hold (the form fields write them).
FILE_SEARCH_OPTIONS = (
    "vector_store_ids",
    "max_results",
    "filters",
    "ranker",
    "score_threshold",
    "embedding_weight",
    "text_weight",
)
CODE_INTERPRETER_OPTIONS = ("container_id", "memory_limit", "file_ids")
IMAGE_GENERATION_OPTIONS = (
    "size",
    "quality",
    "output_format",
    "background",
    "model",
    "output_compression",
    "moderation",
    "action",
    "partial_images",
)
MCP_OPTIONS = (
    "server_label",
    "server_url",
    "allowed_tools",
    "require_approval",
    "server_description",
    "header_env",
)
_RANKING_OPTIONS = ("ranker", "score_threshold", "embedding_weight", "text_weight")

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


def _check_options(kind: str, config: Mapping[str, Any], known: Sequence[str]) -> None:
    unknown = sorted(str(key) for key in config if key not in known)
    if unknown:
        raise PromptValidationError(
            f"Unknown {kind} option(s): {', '.join(unknown)}; "
            f"expected: {', '.join(known)}.",
            placeholder="config",
        )


def _file_search_config(config: Mapping[str, Any]) -> FileSearchConfig:
    _check_options("file_search", config, FILE_SEARCH_OPTIONS)
    ranking = {name: config.get(name) for name in _RANKING_OPTIONS}
    return FileSearchConfig(
        vector_store_ids=config.get("vector_store_ids") or (),
        max_results=config.get("max_results"),
        filters=config.get("filters"),
        ranking=(
            RankingOptions(**ranking)
            if any(value is not None for value in ranking.values())
            else None
        ),
    )


def _code_interpreter_config(config: Mapping[str, Any]) -> CodeInterpreterConfig:
    _check_options("code_interpreter", config, CODE_INTERPRETER_OPTIONS)
    return CodeInterpreterConfig(
        container_id=config.get("container_id") or None,
        memory_limit=config.get("memory_limit") or None,
        file_ids=config.get("file_ids") or (),
    )


def _image_generation_config(config: Mapping[str, Any]) -> ImageGenerationConfig:
    _check_options("image_generation", config, IMAGE_GENERATION_OPTIONS)
    return ImageGenerationConfig(
        **{name: config.get(name) for name in IMAGE_GENERATION_OPTIONS}
    )


def _mcp_headers(
    header_env: Any, environ: Mapping[str, str]
) -> tuple[dict[str, str], list[tuple[str, str, str | None]]]:
    """Header values read from ``environ``, and the variables that are unset."""
    if not isinstance(header_env, Mapping):
        raise PromptValidationError(
            "header_env must map header names to environment variable names: "
            '{"Authorization": "WINK_MCP_CRM_TOKEN"}.',
            placeholder="header_env",
        )
    headers: dict[str, str] = {}
    missing: list[tuple[str, str, str | None]] = []
    for header, variable in header_env.items():
        if not isinstance(variable, str) or not ENV_VAR_NAME.fullmatch(variable):
            raise PromptValidationError(
                f"MCP header '{header}' needs an environment variable name matching "
                f"^[A-Z_][A-Z0-9_]*$ (got {variable!r}).",
                placeholder="header_env",
            )
        if not allowed_header_variable(variable):
            raise PromptValidationError(
                f"MCP header '{header}' cannot read '{variable}': MCP headers read "
                f"only the environment variables the operator allowed "
                f"({header_variable_rule()}; settings WINK_MCP_HEADER_ENV_PREFIX "
                "and WINK_MCP_HEADER_ENV_ALLOW).",
                placeholder="header_env",
            )
        value = environ.get(variable)
        if not value:
            missing.append((str(header), variable, value))
        headers[str(header)] = value or ""
    return headers, missing


def _mcp_config(
    config: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> McpConfig:
    """The MCP config; header values come from the environment, never the row.

    ``header_env`` maps header names to environment variable names; the values
    are read when the prompt is built, so the catalog (and any export of it)
    holds no secret.
    """
    if "headers" in config:
        raise PromptValidationError(
            "MCP header values are never stored in the catalog: name an environment "
            'variable per header instead, as header_env {"Authorization": '
            '"WINK_MCP_CRM_TOKEN"}.',
            placeholder="header_env",
        )
    _check_options("mcp", config, MCP_OPTIONS)
    headers, missing = _mcp_headers(
        config.get("header_env") or {}, os.environ if environ is None else environ
    )
    # The runtime checks everything (header names included) before a missing
    # variable is reported, so every other mistake is named first.
    result = McpConfig(
        server_label=config.get("server_label", ""),
        server_url=config.get("server_url", ""),
        allowed_tools=config.get("allowed_tools") or (),
        require_approval=config.get("require_approval") or "never",
        headers=headers,
        server_description=config.get("server_description") or None,
    )
    if missing:
        header, variable, value = missing[0]
        state = "which is not set" if value is None else "which is empty"
        raise PromptValidationError(
            f"MCP header '{header}' reads environment variable '{variable}', {state}.",
            placeholder="header_env",
        )
    return result


def _described(definition: HostedToolDefinition) -> dict[str, Any]:
    """The tool's name, and its description unless blank (the factory default)."""
    named: dict[str, Any] = {"name": definition.name}
    if definition.description:
        named["description"] = definition.description
    return named


HOSTED_BUILDERS: dict[str, Callable[[HostedToolDefinition], HostedTool[Any]]] = {
    "web_search": lambda d: web_search_tool(
        _web_search_config(d.config or {}), name=d.name, description=d.description
    ),
    "file_search": lambda d: file_search_tool(
        _file_search_config(d.config or {}), **_described(d)
    ),
    "code_interpreter": lambda d: code_interpreter_tool(
        _code_interpreter_config(d.config or {}), **_described(d)
    ),
    "image_generation": lambda d: image_generation_tool(
        _image_generation_config(d.config or {}), **_described(d)
    ),
    "mcp": lambda d: mcp_tool(_mcp_config(d.config or {}), **_described(d)),
}


def build_hosted_tool(definition: HostedToolDefinition) -> HostedTool[Any]:
    builder = HOSTED_BUILDERS.get(definition.kind)
    if builder is None:
        raise PromptValidationError(
            f"Hosted tool kind '{definition.kind}' is not supported.",
            placeholder="kind",
        )
    if not isinstance(definition.config or {}, Mapping):
        raise PromptValidationError(
            "Config must be a JSON object.", placeholder="config"
        )
    try:
        tool = builder(definition)
        return dataclasses.replace(
            tool, min_trust=definition.min_trust_level or tool.min_trust
        )
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
