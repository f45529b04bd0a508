"""OpenAI Responses codec for ``file_search``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ....hosted.base import HostedTool
from ....hosted.file_search import (
    FileSearchCall,
    FileSearchConfig,
    FileSearchHit,
    FileSearchResult,
)
from ..parsing import citations_from_items
from .base import NativeCall, field, status_ok


def _config(tool: HostedTool[Any]) -> FileSearchConfig:
    config = tool.config
    if not isinstance(config, FileSearchConfig):
        raise TypeError(
            f"Hosted tool '{tool.name}' of kind 'file_search' needs a "
            f"FileSearchConfig, not {type(config).__name__}."
        )
    return config


def _hit(result: Any) -> FileSearchHit:
    attributes = field(result, "attributes", {})
    score = field(result, "score")
    return FileSearchHit(
        file_id=str(field(result, "file_id", "")),
        filename=field(result, "filename"),
        score=float(score) if isinstance(score, int | float) else None,
        text=str(field(result, "text", "")),
        attributes=MappingProxyType(
            dict(attributes) if isinstance(attributes, Mapping) else {}
        ),
    )


def file_search_call(item: Any) -> FileSearchCall:
    """One ``file_search_call`` item (``results`` need the include)."""
    queries = field(item, "queries", []) or []
    return FileSearchCall(
        call_id=str(field(item, "id", "")),
        status=str(field(item, "status", "completed")),
        queries=tuple(str(q) for q in queries),
        results=tuple(_hit(r) for r in field(item, "results", []) or []),
    )


def _summary(call: FileSearchCall) -> str:
    summary = f"file search ({call.status})"
    if call.queries:
        summary += f": {', '.join(repr(q) for q in call.queries)}"
    return f"{summary}; {len(call.results)} result(s)"


class OpenAIFileSearchCodec:
    """``file_search``: vector stores, result limit, attribute filters, ranking."""

    kind = "file_search"
    item_types = ("file_search_call",)
    include = ("file_search_call.results",)
    # NativeTool support (see ..native): the default config, the fields a
    # call's params carry and the type of a parsed call.
    config_type = FileSearchConfig
    call_fields = ("queries",)
    value_type = FileSearchCall

    def serialize(self, tool: HostedTool[Any]) -> dict[str, Any]:
        config = _config(tool)
        spec: dict[str, Any] = {
            "type": "file_search",
            "vector_store_ids": list(config.vector_store_ids),
        }
        if config.max_results is not None:
            spec["max_num_results"] = config.max_results
        if config.filter is not None:
            spec["filters"] = config.filter.as_dict()
        ranking = config.ranking
        if ranking is not None and not ranking.is_empty:
            options: dict[str, Any] = {}
            if ranking.ranker is not None:
                options["ranker"] = ranking.ranker
            if ranking.score_threshold is not None:
                options["score_threshold"] = ranking.score_threshold
            if ranking.embedding_weight is not None:
                options["hybrid_search"] = {
                    "embedding_weight": ranking.embedding_weight,
                    "text_weight": ranking.text_weight,
                }
            spec["ranking_options"] = options
        return spec

    def tool_choice(self, tool: HostedTool[Any]) -> dict[str, Any]:
        return {"type": "file_search"}

    def matches(self, item: Any, tool: HostedTool[Any]) -> bool:
        return True

    def parse_call(self, item: Any) -> NativeCall | None:
        call = file_search_call(item)
        params: dict[str, Any] = {"queries": list(call.queries)}
        summary = _summary(call)
        success = status_ok(call.status)
        message = (
            summary if success else f"File search call {call.call_id} {call.status}."
        )
        lines = [summary]
        for hit in call.results:
            score = f" ({hit.score:.2f})" if hit.score is not None else ""
            lines.append(f"- {hit.filename or hit.file_id}{score}: {hit.text[:200]}")
        return NativeCall(
            call.call_id, params, call, success, message, "\n".join(lines)
        )

    def parse_output(
        self, response_items: Sequence[Any], tool: HostedTool[Any]
    ) -> FileSearchResult | None:
        calls = [
            file_search_call(item)
            for item in response_items
            if field(item, "type") == "file_search_call"
        ]
        if not calls:
            return None
        queries: list[str] = []
        for call in calls:
            queries.extend(q for q in call.queries if q not in queries)
        citations = tuple(
            c for c in citations_from_items(response_items) if c.kind == "file_citation"
        )
        return FileSearchResult(
            queries=tuple(queries),
            results=tuple(hit for call in calls for hit in call.results),
            calls=tuple(calls),
            citations=citations,
        )
