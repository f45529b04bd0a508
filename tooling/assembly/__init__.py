"""Catalog rows -> runtime objects. The one place where conversion happens.

Each ``build_*`` function constructs the runtime object, so its validation
(names, descriptions, placeholders, domains ...) is the runtime's own; forms
call the same functions and show the same messages. ``build_prompt`` reads
the whole catalog it needs with a constant number of queries.

``tools`` converts function tools, ``hosted`` hosted tools (one config builder
per kind), ``policies`` policies and ``prompts`` sections and templates.
"""

from .hosted import HOSTED_BUILDERS, build_hosted_tool, model_capabilities
from .policies import build_policy
from .prompts import (
    build_prompt,
    build_prompt_from_parts,
    build_section,
    catalog_hash,
    load_template,
    output_for,
    prompts_broken_by_policy,
    section_params_type,
    tool_choice_for,
)
from .tools import build_tool

__all__ = [
    "HOSTED_BUILDERS",
    "build_hosted_tool",
    "build_policy",
    "build_prompt",
    "build_prompt_from_parts",
    "build_section",
    "build_tool",
    "catalog_hash",
    "load_template",
    "model_capabilities",
    "output_for",
    "prompts_broken_by_policy",
    "section_params_type",
    "tool_choice_for",
]
