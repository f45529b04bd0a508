"""The final ``message``: a summary of what the tools did, with ``url_citation``
annotations on the web sources (inside JSON answers too), a ``file_citation``
and a ``container_file_citation`` when those tools ran."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from .context import Context, digest
from .hosted import file_results, search_sources
from .patches import awaits_answer, local_summary
from .schema_values import check_value, check_value_in, sample_value

_URL_PROPERTY = re.compile(r"source|url|citation|link|reference", re.IGNORECASE)
_SUMMARY_NAMES = ("answer", "summary", "result", "response", "text", "content")


class _Text:
    """Text under construction, with annotations whose spans stay exact."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.annotations: list[dict[str, Any]] = []

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)

    def cite(self, text: str, annotation: dict[str, Any]) -> None:
        start = self.length
        self.add(text)
        if annotation["type"] == "file_citation":
            annotation["index"] = start
        else:
            annotation["start_index"], annotation["end_index"] = start, self.length
        self.annotations.append(annotation)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _url_citation(url: str, start: int, end: int, query: str) -> dict[str, Any]:
    host = urlsplit(url).hostname or url
    return {
        "type": "url_citation",
        "start_index": start,
        "end_index": end,
        "url": url,
        "title": f"{query} - {host}",
    }


def _cited_urls(ctx: Context, output: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """The first two source URLs of the conversation's web search, and whether
    a search ran at all."""
    searches = [*ctx.history.hosted_of("web_search_call")]
    searches += [item for item in output if item.get("type") == "web_search_call"]
    tools = ctx.tools_of("web_search")
    for item in searches:
        if item.get("status") != "completed":
            continue
        action = item.get("action") or {}
        sources = action.get("sources") or []
        urls = [
            str(s["url"]) for s in sources if isinstance(s, Mapping) and s.get("url")
        ]
        if not urls and action.get("query"):
            urls = search_sources(str(action["query"]), tools[0] if tools else None)
        if urls:
            return urls[:2], True
    return [], bool(searches)


def _search_lead(ctx: Context, output: list[dict[str, Any]]) -> str | None:
    """What the web search found, as the answer's first sentence."""
    urls, searched = _cited_urls(ctx, output)
    if not searched:
        return None
    if not urls:
        return f'The web search for "{ctx.query}" failed.'
    found: list[str] = []
    for item in [*ctx.history.hosted, *output]:
        if item.get("type") == "web_search_call" and item.get("status") == "completed":
            for source in (item.get("action") or {}).get("sources") or []:
                if isinstance(source, Mapping) and source.get("url") not in found:
                    found.append(str(source.get("url")))
    hosts = sorted({urlsplit(url).hostname or url for url in found or urls})
    return (
        f'For "{ctx.query}" the web search found {len(found or urls)} source(s) '
        f"on {', '.join(hosts)}; {len(urls)} are cited."
    )


def _summary(ctx: Context, output: list[dict[str, Any]]) -> str:
    sentences: list[str] = []
    lead = _search_lead(ctx, output)
    if lead is not None:
        sentences.append(lead)
    calls = ctx.history.calls
    if calls:
        outcomes = ", ".join(f"{c.name} {'ok' if c.ok else 'failed'}" for c in calls)
        sentences.append(f"Tool calls: {outcomes}.")
    else:
        sentences.append("No function tools were called.")
    hosted = [*ctx.history.hosted, *output]
    labels: list[str] = []
    for item in hosted:
        kind = str(item.get("type"))
        if kind in ("mcp_list_tools", "reasoning", "shell_call_output", "message"):
            continue
        if awaits_answer(item):  # run by the product: summarised below
            continue
        label = kind.removesuffix("_call")
        if kind == "mcp_approval_request":
            answer = ctx.history.approvals.get(str(item.get("id")))
            verdict = "approved" if answer else "not approved"
            name = f"{item.get('server_label')}.{item.get('name')}"
            labels.append(f"mcp {name} {verdict}")
            continue
        if kind == "mcp_call":
            label = f"mcp {item.get('server_label')}.{item.get('name')}"
        labels.append(f"{label} {item.get('status', 'completed')}")
    if labels:
        sentences.append(f"Hosted tools: {', '.join(labels)}.")
    local = local_summary(ctx)
    if local:
        sentences.append(local)
    return " ".join(sentences)


def _file_citation(
    ctx: Context, hosted: list[Mapping[str, Any]]
) -> dict[str, Any] | None:
    for item in hosted:
        if item.get("type") != "file_search_call":
            continue
        results = item.get("results")
        if not results:
            tools = [t for t in ctx.tools if t.get("type") == "file_search"]
            results = file_results(ctx.query, tools[0] if tools else {})
        first = results[0]
        return {
            "type": "file_citation",
            "file_id": first["file_id"],
            "filename": first["filename"],
            "index": 0,
        }
    return None


def _container_citation(hosted: list[Mapping[str, Any]]) -> dict[str, Any] | None:
    for item in hosted:
        if item.get("type") == "code_interpreter_call" and item.get("container_id"):
            container = str(item["container_id"])
            return {
                "type": "container_file_citation",
                "container_id": container,
                "file_id": f"cfile_{digest(container, 'result.csv')[:24]}",
                "filename": "result.csv",
                "start_index": 0,
                "end_index": 0,
            }
    return None


def _plain_answer(ctx: Context, output: list[dict[str, Any]]) -> _Text:
    text = _Text()
    text.add(_summary(ctx, output))
    urls, searched = _cited_urls(ctx, output)
    for url in urls:
        host = urlsplit(url).hostname or url
        text.add(f' The page on {host} is relevant to "{ctx.query}" ')
        text.cite(f"([{host}]({url}))", _url_citation(url, 0, 0, ctx.query))
        text.add(".")
    if searched and not urls:
        text.add(" The web search failed, so no sources are cited.")
    hosted = [*ctx.history.hosted, *output]
    file_citation = _file_citation(ctx, hosted)
    if file_citation is not None:
        text.add(" The file search matched ")
        text.cite(str(file_citation["filename"]), file_citation)
        text.add(".")
    container_citation = _container_citation(hosted)
    if container_citation is not None:
        text.add(" The code interpreter wrote ")
        text.cite("result.csv", container_citation)
        text.add(".")
    return text


def _string_property(
    properties: Mapping[str, Any], root: Mapping[str, Any], summary: str
) -> str | None:
    ordered = [name for name in _SUMMARY_NAMES if name in properties]
    ordered += [name for name in properties if name not in ordered]
    for name in ordered:
        schema = properties[name]
        plain = isinstance(schema, Mapping) and not {"enum", "const"} & set(schema)
        if plain and not check_value_in(summary, schema, root):
            return name
    return None


def _url_property(properties: Mapping[str, Any]) -> str | None:
    for name, schema in properties.items():
        if not _URL_PROPERTY.search(name) or not isinstance(schema, Mapping):
            continue
        items = schema.get("items")
        if (
            "array" in str(schema.get("type"))
            and isinstance(items, Mapping)
            and "string" in str(items.get("type"))
            and "enum" not in items
        ):
            return name
    return None


def _structured_answer(
    ctx: Context, output: list[dict[str, Any]], fmt: Mapping[str, Any]
) -> _Text:
    summary = _summary(ctx, output)
    urls, _searched = _cited_urls(ctx, output)
    schema = fmt.get("schema") if fmt.get("type") == "json_schema" else None
    if not isinstance(schema, Mapping):
        schema = {
            "type": "object",
            "properties": {
                "answer": {"type": "string"},
                "sources": {"type": "array", "items": {"type": "string"}},
            },
        }
    value = sample_value(schema)
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties") or {}
        url_key = _url_property(properties)
        text_key = _string_property(properties, schema, summary)
        edits: dict[str, Any] = {}
        if url_key is not None and urls:
            edits[url_key] = list(urls)
        if text_key is not None:
            edits[text_key] = summary
            if urls and url_key is None:
                edits[text_key] = f"{summary} Sources: {', '.join(urls)}."
        for key, edited in edits.items():
            candidate = {**value, key: edited}
            if not check_value(candidate, schema):
                value = candidate
    text = _Text()
    rendered = json.dumps(value, ensure_ascii=False)
    text.add(rendered)
    position = 0
    for url in urls:
        needle = json.dumps(url, ensure_ascii=False)[1:-1]
        start = rendered.find(f'"{needle}"', position)
        start = start + 1 if start >= 0 else rendered.find(needle, position)
        if start < 0:
            continue
        end = start + len(needle)
        text.annotations.append(_url_citation(url, start, end, ctx.query))
        position = end
    return text


def message_item(ctx: Context, output: list[dict[str, Any]]) -> dict[str, Any]:
    text_config = ctx.request.get("text")
    fmt = text_config.get("format") if isinstance(text_config, Mapping) else None
    if isinstance(fmt, Mapping) and fmt.get("type") in ("json_schema", "json_object"):
        text = _structured_answer(ctx, output, fmt)
    else:
        text = _plain_answer(ctx, output)
    return {
        "id": ctx.ids.new("msg"),
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "phase": "final_answer",
        "content": [
            {
                "type": "output_text",
                "text": text.text,
                "annotations": text.annotations,
                "logprobs": [],
            }
        ],
    }
