"""Catalog rows -> runtime objects. The one place where conversion happens.

Each ``build_*`` function constructs the runtime object, so its validation
(names, descriptions, placeholders, domains ...) is the runtime's own; forms
call the same functions and show the same messages. ``build_prompt`` reads
only the rows its prompt reaches (``reached_sections``), with a constant number
of queries, whatever the size of the rest of the catalog.

``tools`` converts function tools, ``hosted`` hosted tools (one config builder
per kind), ``policies`` policies and ``prompts`` sections and prompt settings;
``revisions`` freezes a prompt into the JSON of a catalog revision and thaws it
back into a ``Prompt`` (every prompt is built that way); ``catalog`` reads the
database.
"""

from .catalog import (
    all_sections,
    build_prompt,
    build_prompt_from_parts,
    freeze_template,
    freeze_templates,
    load_template,
    reached_sections,
    revision_data,
    revision_prompt,
)
from .catalog_edit import CatalogEdit
from .edits import prompts_broken_by, prompts_broken_by_capability, with_descendants
from .hosted import build_hosted_tool, hosted_config, model_capabilities
from .parameters import ParameterSpec, parameter_problems, prompt_parameters
from .policies import build_policy
from .pricing import price_sheet
from .prompts import (
    build_section,
    output_for,
    section_params_type,
    tool_choice_for,
)
from .revisions import freeze_prompt, model_capabilities_of, thaw_prompt
from .tools import build_example, build_tool, example_problems

__all__ = [
    "CatalogEdit",
    "ParameterSpec",
    "all_sections",
    "build_example",
    "build_hosted_tool",
    "build_policy",
    "build_prompt",
    "build_prompt_from_parts",
    "build_section",
    "build_tool",
    "example_problems",
    "freeze_prompt",
    "freeze_template",
    "freeze_templates",
    "hosted_config",
    "load_template",
    "model_capabilities",
    "model_capabilities_of",
    "output_for",
    "parameter_problems",
    "price_sheet",
    "prompt_parameters",
    "prompts_broken_by",
    "prompts_broken_by_capability",
    "reached_sections",
    "revision_data",
    "revision_prompt",
    "section_params_type",
    "thaw_prompt",
    "tool_choice_for",
    "with_descendants",
]
