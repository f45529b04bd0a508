"""Hosted (provider-executed) tools: the base type and one module per kind."""

from .apply_patch import (
    ApplyPatchConfig,
    ApplyPatchSection,
    PatchApplied,
    apply_patch_tool,
)
from .base import (
    HostedTool,
    HostedToolConfig,
    HostedToolOutput,
    unsupported_kind_message,
)
from .code_interpreter import (
    CodeInterpreterConfig,
    CodeInterpreterResult,
    CodeInterpreterSection,
    CodeRun,
    ContainerFile,
    code_interpreter_tool,
)
from .file_search import (
    ComparisonFilter,
    CompoundFilter,
    FileSearchCall,
    FileSearchConfig,
    FileSearchHit,
    FileSearchResult,
    FileSearchSection,
    RankingOptions,
    file_search_tool,
)
from .image_generation import (
    GeneratedImage,
    ImageGenerationConfig,
    ImageGenerationResult,
    ImageGenerationSection,
    image_generation_tool,
)
from .mcp import (
    McpApprovalRequest,
    McpConfig,
    McpResult,
    McpSection,
    McpToolCall,
    mcp_tool,
)
from .section import HostedToolSection
from .shell import (
    ShellCall,
    ShellCommandRun,
    ShellConfig,
    ShellResult,
    ShellSection,
    shell_tool,
)
from .web_search import (
    Citation,
    DomainFilter,
    GeoHint,
    WebSearchCall,
    WebSearchConfig,
    WebSearchResult,
    WebSearchSection,
    source_key,
    web_search_tool,
)

__all__ = [
    "ApplyPatchConfig",
    "ApplyPatchSection",
    "Citation",
    "CodeInterpreterConfig",
    "CodeInterpreterResult",
    "CodeInterpreterSection",
    "CodeRun",
    "ComparisonFilter",
    "CompoundFilter",
    "ContainerFile",
    "DomainFilter",
    "FileSearchCall",
    "FileSearchConfig",
    "FileSearchHit",
    "FileSearchResult",
    "FileSearchSection",
    "GeneratedImage",
    "GeoHint",
    "HostedTool",
    "HostedToolConfig",
    "HostedToolOutput",
    "HostedToolSection",
    "ImageGenerationConfig",
    "ImageGenerationResult",
    "ImageGenerationSection",
    "McpApprovalRequest",
    "McpConfig",
    "McpResult",
    "McpSection",
    "McpToolCall",
    "PatchApplied",
    "RankingOptions",
    "ShellCall",
    "ShellCommandRun",
    "ShellConfig",
    "ShellResult",
    "ShellSection",
    "WebSearchCall",
    "WebSearchConfig",
    "WebSearchResult",
    "WebSearchSection",
    "apply_patch_tool",
    "code_interpreter_tool",
    "file_search_tool",
    "image_generation_tool",
    "mcp_tool",
    "shell_tool",
    "source_key",
    "unsupported_kind_message",
    "web_search_tool",
]

# -- The catalog's kinds (``spec.HostedKindSpec``), registered in the order the
# admin lists them. A new kind's module declares its spec; add it here.
from .apply_patch import APPLY_PATCH_SPEC
from .code_interpreter import CODE_INTERPRETER_SPEC
from .file_search import FILE_SEARCH_SPEC
from .image_generation import IMAGE_GENERATION_SPEC
from .mcp import MCP_SPEC
from .shell import SHELL_SPEC
from .spec import (
    HostedKindSpec,
    HostedOption,
    hosted_kind,
    hosted_kind_names,
    hosted_kinds,
    register_kind,
    unregister_kind,
)
from .web_search import WEB_SEARCH_SPEC

for _spec in (
    WEB_SEARCH_SPEC,
    FILE_SEARCH_SPEC,
    CODE_INTERPRETER_SPEC,
    IMAGE_GENERATION_SPEC,
    MCP_SPEC,
    SHELL_SPEC,
    APPLY_PATCH_SPEC,
):
    register_kind(_spec)

__all__ += [
    "HostedKindSpec",
    "HostedOption",
    "hosted_kind",
    "hosted_kind_names",
    "hosted_kinds",
    "register_kind",
    "unregister_kind",
]
