"""Hosted (provider-executed) tools: the base type and one module per kind."""

from .base import HostedTool, HostedToolConfig, HostedToolOutput
from .web_search import (
    Citation,
    DomainFilter,
    GeoHint,
    WebSearchCall,
    WebSearchConfig,
    WebSearchResult,
    web_search_tool,
)

__all__ = [
    "Citation",
    "DomainFilter",
    "GeoHint",
    "HostedTool",
    "HostedToolConfig",
    "HostedToolOutput",
    "WebSearchCall",
    "WebSearchConfig",
    "WebSearchResult",
    "web_search_tool",
]
