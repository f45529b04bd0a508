"""Reading messages and citations out of Responses API output items."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ...hosted.web_search import Citation
from .codecs.base import field


def _text_parts(item: Any) -> Iterable[tuple[int, Any]]:
    for index, part in enumerate(field(item, "content", []) or []):
        if field(part, "type") == "output_text":
            yield index, part


def message_text(items: Sequence[Any]) -> str:
    """All ``output_text`` of all assistant messages, in order."""
    chunks: list[str] = []
    for item in items:
        if field(item, "type") != "message":
            continue
        for _, part in _text_parts(item):
            chunks.append(str(field(part, "text", "")))
    return "".join(chunks)


def citations_from_items(items: Sequence[Any]) -> list[Citation]:
    """Every citation annotation of every text part of every message."""
    citations: list[Citation] = []
    for item in items:
        if field(item, "type") != "message":
            continue
        message_id = field(item, "id")
        for index, part in _text_parts(item):
            text = str(field(part, "text", ""))
            for annotation in field(part, "annotations", []) or []:
                citation = _citation(annotation, text, message_id, index)
                if citation is not None:
                    citations.append(citation)
    return citations


def _span(annotation: Any, text: str) -> tuple[tuple[int, int] | None, str]:
    start, end = field(annotation, "start_index"), field(annotation, "end_index")
    if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end:
        return (start, end), text[start:end]
    return None, ""


def _citation(
    annotation: Any, text: str, message_id: Any, index: int
) -> Citation | None:
    kind = field(annotation, "type")
    if kind == "url_citation":
        span, cited = _span(annotation, text)
        return Citation(
            url=str(field(annotation, "url", "")),
            title=str(field(annotation, "title", "")),
            span=span,
            cited_text=cited,
            kind=kind,
            message_id=message_id,
            content_index=index,
        )
    if kind == "container_file_citation":
        span, cited = _span(annotation, text)
        return Citation(
            url="",
            title=str(field(annotation, "filename", "")),
            span=span,
            cited_text=cited,
            kind=kind,
            file_id=field(annotation, "file_id"),
            filename=field(annotation, "filename"),
            container_id=field(annotation, "container_id"),
            message_id=message_id,
            content_index=index,
        )
    if kind == "file_citation":
        position = field(annotation, "index")
        span = (position, position) if isinstance(position, int) else None
        return Citation(
            url="",
            title=str(field(annotation, "filename", "")),
            span=span,
            kind=kind,
            file_id=field(annotation, "file_id"),
            filename=field(annotation, "filename"),
            message_id=message_id,
            content_index=index,
        )
    return None
