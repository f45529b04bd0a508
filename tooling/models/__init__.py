"""The catalog's models: tools and policies (``tools.py``), prompts and their
sections (``catalog.py``), revisions (``revisions.py``), the price list and
budgets (``pricing.py``), history and releases. Import them from here."""

from tooling.models.catalog import (
    SECTION_TREE_LOCK,
    ModelCapability,
    PromptSection,
    PromptTemplate,
    PromptTemplateQuerySet,
    SectionDefinition,
    SectionHostedTool,
    SectionTool,
    lock_section_tree,
    would_cycle,
)
from tooling.models.history import CatalogChange, CatalogChangePrompt
from tooling.models.pricing import HostedToolPrice, ModelPrice, UserBudget
from tooling.models.releases import LABEL_RULE, PromptLabel, Release
from tooling.models.revisions import (
    CatalogGeneration,
    CatalogRevision,
    CatalogRevisionQuerySet,
    generation_token,
)
from tooling.models.tools import (
    HostedToolDefinition,
    HostedToolDefinitionQuerySet,
    PolicyDefinition,
    TimestampedModel,
    ToolDefinition,
    ToolDefinitionQuerySet,
    TrustLevel,
    hosted_kind_choices,
)

__all__ = [
    "LABEL_RULE",
    "SECTION_TREE_LOCK",
    "CatalogChange",
    "CatalogChangePrompt",
    "CatalogGeneration",
    "CatalogRevision",
    "CatalogRevisionQuerySet",
    "HostedToolDefinition",
    "HostedToolDefinitionQuerySet",
    "HostedToolPrice",
    "ModelCapability",
    "ModelPrice",
    "PolicyDefinition",
    "PromptLabel",
    "PromptSection",
    "PromptTemplate",
    "PromptTemplateQuerySet",
    "Release",
    "SectionDefinition",
    "SectionHostedTool",
    "SectionTool",
    "TimestampedModel",
    "ToolDefinition",
    "ToolDefinitionQuerySet",
    "TrustLevel",
    "UserBudget",
    "generation_token",
    "hosted_kind_choices",
    "lock_section_tree",
    "would_cycle",
]
