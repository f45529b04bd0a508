"""OpenAI Responses codec for ``web_search``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....errors import PromptValidationError
from ....hosted.base import HostedTool
from ....hosted.web_search import (
    WebSearchCall,
    WebSearchConfig,
    WebSearchResult,
    source_key,
)
from ..parsing import citations_from_items, message_text
from .base import NativeCall, field, status_ok


def _sources(action: Any) -> tuple[str, ...]:
    urls: list[str] = []
    for source in field(action, "sources", []) or []:
        url = field(source, "url")
        if isinstance(url, str) and url and url not in urls:
            urls.append(url)
    return tuple(urls)


def _api_sources(action: Any) -> tuple[str, ...]:
    """The named sources without a URL: real-time feeds the search read
    (``{"type": "api", "name": "oai-weather"}``)."""
    names: list[str] = []
    for source in field(action, "sources", []) or []:
        url, name = field(source, "url"), field(source, "name")
        if url is None and isinstance(name, str) and name and name not in names:
            names.append(name)
    return tuple(names)


def web_search_call(item: Any) -> WebSearchCall:
    action = field(item, "action")
    action_type = field(action, "type") if action is not None else None
    query = field(action, "query") if action is not None else None
    if query is None and action is not None:
        queries = field(action, "queries", [])
        query = queries[0] if queries else None
    return WebSearchCall(
        call_id=str(field(item, "id", "")),
        status=str(field(item, "status", "completed")),
        action_type=action_type,
        query=query,
        url=field(action, "url") if action is not None else None,
        pattern=field(action, "pattern") if action is not None else None,
        sources=_sources(action) if action is not None else (),
        api_sources=_api_sources(action) if action is not None else (),
    )


def _config(tool: HostedTool[Any]) -> WebSearchConfig:
    config = tool.config
    if not isinstance(config, WebSearchConfig):
        raise TypeError(
            f"Hosted tool '{tool.name}' of kind 'web_search' needs a "
            f"WebSearchConfig, not {type(config).__name__}."
        )
    return config


class OpenAIWebSearchCodec:
    """``web_search``: filters and ``user_location`` at the top level of the tool."""

    kind = "web_search"
    item_types = ("web_search_call",)
    include = ("web_search_call.action.sources",)
    # NativeTool support (see ..native): the default config, the fields a
    # call's params carry and the type of a parsed call.
    config_type = WebSearchConfig
    call_fields = ("action", "query", "url", "pattern")
    value_type = WebSearchCall

    def serialize(self, tool: HostedTool[Any]) -> dict[str, Any]:
        config = _config(tool)
        spec: dict[str, Any] = {"type": "web_search"}
        if config.domain_filter is not None and config.domain_filter.blocked:
            raise PromptValidationError(
                f"Hosted tool '{tool.name}' blocks domains "
                f"({', '.join(config.domain_filter.blocked)}), but OpenAI's web "
                "search has no block-list: list the domains to search in "
                "DomainFilter.allowed instead.",
                placeholder="blocked_domains",
            )
        if config.domain_filter is not None and config.domain_filter.allowed:
            spec["filters"] = {"allowed_domains": list(config.domain_filter.allowed)}
        if config.geo_hint is not None:
            hint = config.geo_hint
            location: dict[str, Any] = {"type": "approximate"}
            for key, value in (
                ("country", hint.country_code),
                ("city", hint.city),
                ("region", hint.region),
                ("timezone", hint.timezone),
            ):
                if value:
                    location[key] = value
            spec["user_location"] = location
        if config.search_context_size:
            spec["search_context_size"] = config.search_context_size
        if not config.allow_live_access:
            spec["external_web_access"] = False
        return spec

    def tool_choice(self, tool: HostedTool[Any]) -> dict[str, Any]:
        # The SDK's hosted tool_choice literal lists only web_search_preview;
        # allowed_tools with mode "required" is the documented way to force it.
        return {
            "type": "allowed_tools",
            "mode": "required",
            "tools": [{"type": "web_search"}],
        }

    def matches(self, item: Any, tool: HostedTool[Any]) -> bool:
        return True

    def parse_call(self, item: Any) -> NativeCall | None:
        call = web_search_call(item)
        params: dict[str, Any] = {"action": call.action_type}
        for key in ("query", "url", "pattern"):
            value = getattr(call, key)
            if value is not None:
                params[key] = value
        action = call.action_type or "search"
        target = call.query or call.url or ""
        summary = f"web search ({call.status}): {action}"
        if target:
            summary += f" {target!r}"
        if call.sources:
            summary += f"; {len(call.sources)} source(s)"
        if call.api_sources:
            summary += f"; {len(call.api_sources)} API source(s)"
        success = status_ok(call.status)
        message = (
            summary if success else f"Web search call {call.call_id} {call.status}."
        )
        rendered = "\n".join(
            [
                summary,
                *(f"- {url}" for url in call.sources),
                *(f"- api: {name}" for name in call.api_sources),
            ]
        )
        return NativeCall(call.call_id, params, call, success, message, rendered)

    def parse_output(
        self, response_items: Sequence[Any], tool: HostedTool[Any]
    ) -> WebSearchResult | None:
        calls = [
            web_search_call(item)
            for item in response_items
            if field(item, "type") == "web_search_call"
        ]
        if not calls:
            return None
        sources: list[str] = []
        api_sources: list[str] = []
        for call in calls:
            sources.extend(url for url in call.sources if url not in sources)
            api_sources.extend(n for n in call.api_sources if n not in api_sources)
        citations = tuple(
            c for c in citations_from_items(response_items) if c.kind == "url_citation"
        )
        known = {source_key(url) for url in sources}
        for citation in citations:
            if source_key(citation.url) not in known:
                known.add(source_key(citation.url))
                sources.append(citation.url)
        return WebSearchResult(
            text=message_text(response_items),
            citations=citations,
            source_urls=tuple(sources),
            api_sources=tuple(api_sources),
            calls=tuple(calls),
        )
