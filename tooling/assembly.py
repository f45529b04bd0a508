"""Catalog rows -> runtime objects. The one place where conversion happens.

Each ``build_*`` function constructs the runtime object, so its validation
(names, descriptions, placeholders, domains ...) is the runtime's own; forms
call the same functions and show the same messages. ``build_prompt`` reads
the whole catalog it needs with a constant number of queries.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db.models import Prefetch

from tooling.handlers import registry
from tooling.models import (
    HostedToolDefinition,
    ModelCapability,
    PolicyDefinition,
    PromptTemplate,
    SectionDefinition,
    SectionHostedTool,
    SectionTool,
    ToolDefinition,
)
from tooling.runtime import (
    CodeInterpreterConfig,
    DomainFilter,
    FileSearchConfig,
    GeoHint,
    HostedTool,
    ImageGenerationConfig,
    MarkdownSection,
    McpConfig,
    PlanningStrategy,
    Prompt,
    PromptValidationError,
    RankingOptions,
    ReadBeforeWritePolicy,
    SequentialDependencyPolicy,
    StructuredOutput,
    Tool,
    ToolChoice,
    ToolExample,
    ToolPolicy,
    WebSearchConfig,
    code_interpreter_tool,
    file_search_tool,
    image_generation_tool,
    mcp_tool,
    planning_template,
    planning_tools,
    web_search_tool,
)
from tooling.runtime.serde import SerdeError, parse

# -- function tools ----------------------------------------------------------


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
    examples = []
    for number, item in enumerate(raw, start=1):
        if not isinstance(item, Mapping) or set(item) - {
            "description",
            "input",
            "output",
        }:
            raise PromptValidationError(
                f"Example {number} must be an object with description, input and "
                "output.",
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
        examples.append(
            ToolExample(
                description=str(item.get("description", "")),
                input=params,
                output=output,
            )
        )
    return examples


# -- hosted tools ------------------------------------------------------------


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
# The application's own secrets: an MCP server must never receive them.
RESERVED_ENV_VARS = frozenset(
    {
        "SECRET_KEY",
        "DATABASE_URL",
        "OPENAI_API_KEY",
        "CELERY_BROKER_URL",
        "CELERY_RESULT_BACKEND",
        "WINK_DEMO_PASSWORD",
    }
)


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
            '{"Authorization": "MY_MCP_TOKEN"}.',
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
        if variable in RESERVED_ENV_VARS:
            raise PromptValidationError(
                f"MCP header '{header}' cannot read '{variable}': it is one of the "
                "application's own settings. Use a variable of its own.",
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
            '"MY_MCP_TOKEN"}.',
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


# -- policies ----------------------------------------------------------------


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
            read_tools=config.get("read_tools") or ("read_file",),
            write_tools=config.get("write_tools") or ("write_file", "edit_file"),
            mount_point=config.get("mount_point") or None,
            name=definition.name,
        )
    raise PromptValidationError(
        f"Unknown policy kind '{definition.kind}'.", placeholder="kind"
    )


# -- sections and prompts ----------------------------------------------------


def section_params_type(
    key: str, template: str, default_params: Mapping[str, Any], enabled_when: str
) -> type[Any] | None:
    """The section's declared parameters as a dataclass.

    ``default_params`` declares them: ``{"name": default}``, where ``null``
    means required. The predicate's parameter is declared implicitly (optional).
    The runtime then checks that every ``$placeholder`` is declared.
    """
    for name in default_params:
        if not isinstance(name, str) or not name.isidentifier():
            raise PromptValidationError(
                f"Parameter name '{name}' must be a Python identifier.",
                section_path=(key,),
                placeholder="default_params",
            )
    names = list(default_params)
    if enabled_when and enabled_when not in names:
        if not enabled_when.isidentifier():
            raise PromptValidationError(
                f"Parameter name '{enabled_when}' must be a Python identifier.",
                section_path=(key,),
                placeholder="enabled_when_param",
            )
        names.append(enabled_when)
    if not names:
        return None
    fields: list[Any] = []
    for name in names:
        default = default_params.get(name)
        if default is not None or name == enabled_when:
            fields.append((name, Any, dataclasses.field(default=default)))
    required = [(name, Any) for name in names if all(f[0] != name for f in fields)]
    return dataclasses.make_dataclass(
        f"{key.replace('.', '_').replace('-', '_')}_params",
        [*required, *fields],
        frozen=True,
    )


def _param_is_set(name: str) -> Callable[[Any], bool]:
    def enabled(params: Any) -> bool:
        return getattr(params, name, None) not in (None, "", False)

    return enabled


def build_section(
    definition: SectionDefinition,
    *,
    children: Sequence[MarkdownSection] = (),
    tools: Sequence[Tool[Any, Any]] = (),
    hosted_tools: Sequence[HostedTool[Any]] = (),
    policies: Sequence[ToolPolicy] = (),
) -> MarkdownSection:
    default_params = definition.default_params or {}
    if not isinstance(default_params, Mapping):
        raise PromptValidationError(
            "Default params must be a JSON object.", placeholder="default_params"
        )
    enabled_when = (definition.enabled_when_param or "").strip()
    params_type = section_params_type(
        definition.key, definition.template or "", default_params, enabled_when
    )
    enabled: Any = definition.enabled
    if definition.enabled and enabled_when:
        enabled = _param_is_set(enabled_when)
    template = definition.template or ""
    if definition.planning_strategy:
        strategy = _planning_strategy(definition.planning_strategy)
        template = "\n\n".join(
            part for part in (template.strip(), planning_template(strategy)) if part
        )
        tools = [*planning_tools(), *tools]

    return MarkdownSection(
        title=definition.title,
        key=definition.key,
        template=template,
        params_type=params_type,
        children=children,
        enabled=enabled,
        tools=tools,
        hosted_tools=hosted_tools,
        policies=policies,
    )


def _planning_strategy(value: str) -> PlanningStrategy:
    try:
        return PlanningStrategy(value)
    except ValueError:
        known = ", ".join(strategy.value for strategy in PlanningStrategy)
        raise PromptValidationError(
            f"Unknown planning strategy '{value}'; expected one of: {known}.",
            placeholder="planning_strategy",
        ) from None


def _all_sections() -> dict[int, SectionDefinition]:
    queryset = SectionDefinition.objects.prefetch_related(
        Prefetch(
            "sectiontool_set",
            queryset=SectionTool.objects.select_related("tool").order_by(
                "position", "id"
            ),
        ),
        Prefetch(
            "sectionhostedtool_set",
            queryset=SectionHostedTool.objects.select_related("hosted_tool").order_by(
                "position", "id"
            ),
        ),
        "policies",
    ).order_by("position", "key")
    return {section.pk: section for section in queryset}


def _section_tree(
    definition: SectionDefinition,
    children_of: Mapping[int | None, list[SectionDefinition]],
    trail: tuple[int, ...] = (),
) -> MarkdownSection:
    if definition.pk in trail:
        raise PromptValidationError(
            f"Section '{definition.key}' is its own ancestor.",
            section_path=(definition.key,),
        )
    children = [
        _section_tree(child, children_of, (*trail, definition.pk))
        for child in children_of.get(definition.pk, [])
    ]
    tools = [
        build_tool(link.tool)
        for link in definition.sectiontool_set.all()
        if link.tool.enabled
    ]
    hosted = [
        build_hosted_tool(link.hosted_tool)
        for link in definition.sectionhostedtool_set.all()
        if link.hosted_tool.enabled
    ]
    policies = [build_policy(policy) for policy in definition.policies.all()]
    try:
        return build_section(
            definition,
            children=children,
            tools=tools,
            hosted_tools=hosted,
            policies=policies,
        )
    except PromptValidationError as error:
        if not error.section_path:
            error.section_path = (definition.key,)
        raise


def tool_choice_for(template: PromptTemplate) -> ToolChoice | None:
    value = (template.tool_choice or "auto").strip()
    return None if value == "auto" else ToolChoice.parse(value)


def output_for(template: PromptTemplate) -> StructuredOutput | None:
    if template.output_schema in (None, {}):
        return None
    return StructuredOutput.from_schema(
        template.output_schema, name=template.name or template.key
    )


def build_prompt(template: PromptTemplate) -> Prompt:
    """The runtime prompt of a saved template (a constant number of queries,
    whatever the catalog size)."""
    sections = _all_sections()
    roots = [sections[link.section_id] for link in template.prompt_sections.all()]
    return build_prompt_from_parts(
        template, roots=roots, policies=list(template.policies.all()), sections=sections
    )


def build_prompt_from_parts(
    template: PromptTemplate,
    *,
    roots: Sequence[SectionDefinition],
    policies: Sequence[PolicyDefinition] | None,
    sections: Mapping[int, SectionDefinition] | None = None,
) -> Prompt:
    """Build a prompt from a template's fields and the given root sections and
    prompt-level policies (used before they are saved, by the admin)."""
    sections = sections if sections is not None else _all_sections()
    children_of: dict[int | None, list[SectionDefinition]] = {}
    for section in sections.values():
        children_of.setdefault(section.parent_id, []).append(section)
    runtime_roots = [
        _section_tree(sections.get(root.pk, root), children_of) for root in roots
    ]
    prompt_tools = _tool_names(runtime_roots)
    tool_params: dict[str, Mapping[str, str]] = {}
    for section in sections.values():
        for link in section.sectiontool_set.all():
            if link.tool.param_descriptions and link.tool.name in prompt_tools:
                tool_params[link.tool.name] = link.tool.param_descriptions
    return Prompt(
        ns=template.namespace,
        key=template.key,
        name=template.name or template.ref,
        sections=runtime_roots,
        policies=[build_policy(policy) for policy in policies or []],
        output=output_for(template),
        tool_choice=tool_choice_for(template),
        param_descriptions=tool_params,
    )


def _tool_names(sections: Sequence[MarkdownSection]) -> set[str]:
    names: set[str] = set()
    for section in sections:
        names.update(tool.name for tool in section.tools)
        names.update(_tool_names(section.children))  # type: ignore[arg-type]
    return names


def model_capabilities(model: str) -> dict[str, frozenset[str]] | None:
    """The allow-list for ``model``, or ``None`` when the catalog has no row."""
    row = ModelCapability.objects.filter(model=model).first()
    if row is None:
        return None
    return {model: frozenset(row.hosted_kinds or [])}


def load_template(ref: str) -> PromptTemplate:
    """The enabled template named ``<namespace>/<key>`` with its catalog links."""
    return PromptTemplate.objects.enabled().with_catalog().get_by_ref(ref)


def catalog_hash(prompt_payload: Mapping[str, Any]) -> str:
    """A content hash of what the model will see (text, tools, options)."""
    encoded = json.dumps(prompt_payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(encoded).hexdigest()
