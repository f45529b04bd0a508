"""Output items of the hosted (provider-executed) tools, one builder per kind:
``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
``image_generation_call`` and ``mcp_list_tools`` + ``mcp_call`` (the hosted
shell's items are built in ``shell``).

An MCP server that requires approval for the tool gets an
``mcp_approval_request`` instead of the call; the next request's
``mcp_approval_response`` decides: approved, the ``mcp_call`` is played
(pointing at the request); denied, the server's tool is not called."""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from collections.abc import Callable, Mapping
from typing import Any

from .context import Context, digest
from .reasoning import reasoning_item, reasons
from .shell import hosted_shell_items

DEFAULT_DOMAINS = ("docs.python.org", "www.djangoproject.com", "developers.openai.com")
MARKER_SEARCH_FAILS = "[offline:web_search_fails]"
MARKER_MCP_ERROR = "[offline:mcp_error]"
# searches again on every turn while web_search is offered (quota demos)
MARKER_SEARCH_EACH_TURN = "[offline:search_each_turn]"


def _tiny_png() -> str:
    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    pixels = zlib.compress(b"\x00\x4f\x8a\xd9\xff", 9)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
    return base64.b64encode(png + chunk(b"IEND", b"")).decode("ascii")


TINY_PNG_BASE64 = _tiny_png()


def _slug(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())[:6]
    return "-".join(words)[:48].strip("-") or "overview"


def _domains(tool: Mapping[str, Any] | None) -> list[str]:
    filters = (tool or {}).get("filters") or {}
    allowed = filters.get("allowed_domains") if isinstance(filters, Mapping) else None
    domains: list[str] = []
    for raw in allowed or []:
        host = str(raw).strip().lower()
        host = re.sub(r"^[a-z]+://", "", host).split("/")[0].removeprefix("*.")
        if host and host not in domains:
            domains.append(host)
    return domains or list(DEFAULT_DOMAINS)


def search_sources(query: str, tool: Mapping[str, Any] | None) -> list[str]:
    """The three source URLs the offline search 'finds' for ``query``."""
    domains = _domains(tool)
    slug = _slug(query)
    sections = ("guide", "reference", "faq")
    return [
        f"https://{domains[index % len(domains)]}/{sections[index]}/{slug}"
        for index in range(3)
    ]


def _web_search_items(ctx: Context, tool: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A search; a reasoning model then opens the first page it found and
    looks for the query's longest word in it (one call per action, each after
    a reasoning item, as the real API sends them). A question about the
    weather, sports or stocks also reads the matching real-time feed (a
    source with a name and no URL)."""
    failed = MARKER_SEARCH_FAILS in ctx.marker_text
    action: dict[str, Any] = {
        "type": "search",
        "query": ctx.query,
        "queries": [ctx.query],
    }
    urls = search_sources(ctx.query, tool)
    if not failed and "web_search_call.action.sources" in ctx.include:
        action["sources"] = [{"type": "url", "url": url} for url in urls]
        action["sources"] += [{"type": "api", "name": feed} for feed in _feeds(ctx)]
    items = [
        {
            "id": ctx.ids.new("ws"),
            "type": "web_search_call",
            "status": "failed" if failed else "completed",
            "action": action,
        }
    ]
    if failed or not reasons(ctx):
        return items
    words = sorted(re.findall(r"[A-Za-z0-9]{3,}", ctx.query), key=len, reverse=True)
    follow_ups: tuple[dict[str, Any], ...] = (
        {"type": "open_page", "url": urls[0]},
        {"type": "find_in_page", "url": urls[0], "pattern": (words or ["the"])[0]},
    )
    for follow_up in follow_ups:
        items.append(reasoning_item(ctx, f"Reading {urls[0]} for the answer."))
        items.append(
            {
                "id": ctx.ids.new("ws"),
                "type": "web_search_call",
                "status": "completed",
                "action": follow_up,
            }
        )
    return items


# Real-time feeds the real web search reads (sources with a name, no URL).
_FEEDS = (
    ("oai-weather", re.compile(r"\b(weather|forecast)\b", re.I)),
    ("oai-sports", re.compile(r"\b(scores|league|sports?)\b", re.I)),
    ("oai-finance", re.compile(r"\b(stocks?|stock market|exchange rates?)\b", re.I)),
)


def _feeds(ctx: Context) -> list[str]:
    return [name for name, words in _FEEDS if words.search(ctx.query)]


def file_results(query: str, tool: Mapping[str, Any]) -> list[dict[str, Any]]:
    stores = tool.get("vector_store_ids") or ["vs_offline"]
    store = str(stores[0])
    limit = tool.get("max_num_results")
    files = (("handbook.md", 0.92), ("faq.md", 0.81))
    results = [
        {
            "file_id": f"file-{digest(store, name)[:22]}",
            "filename": name,
            "score": score,
            "text": f"Offline excerpt from {name} about {query}.",
            "attributes": {"vector_store_id": store},
        }
        for name, score in files
    ]
    return results[: limit if isinstance(limit, int) and limit > 0 else None]


def _file_search_items(ctx: Context, tool: Mapping[str, Any]) -> list[dict[str, Any]]:
    results = None
    if "file_search_call.results" in ctx.include:
        results = file_results(ctx.query, tool)
    return [
        {
            "id": ctx.ids.new("fs"),
            "type": "file_search_call",
            "status": "completed",
            "queries": [ctx.query],
            "results": results,
        }
    ]


def _container_id(tool: Mapping[str, Any], seed: str) -> str:
    container = tool.get("container")
    if isinstance(container, str) and container:
        return container
    return f"cntr_{digest(seed, 'container')[:24]}"


CHART_WORDS = re.compile(r"\b(chart|plot|graph)s?\b", re.IGNORECASE)
_CHART_CODE = (
    "import matplotlib.pyplot as plt\n"
    "plt.bar(['step'], [2])\n"
    "plt.savefig('/mnt/data/chart.png')\n"
    "plt.show()"
)


def _code_items(ctx: Context, tool: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A run that writes ``result.csv``; when the prompt asks for a chart
    (or plot, or graph), a second run in the same container draws it (an
    image output)."""
    code = (
        "import csv\n"
        "rows = [('step', 'value'), ('1', '2')]\n"
        "with open('/mnt/data/result.csv', 'w', newline='') as handle:\n"
        "    csv.writer(handle).writerows(rows)\n"
        "print(len(rows))"
    )
    included = "code_interpreter_call.outputs" in ctx.include
    container = _container_id(tool, ctx.ids.seed)
    runs = [(code, [{"type": "logs", "logs": "2\n"}])]
    if CHART_WORDS.search(ctx.marker_text):
        image = f"data:image/png;base64,{TINY_PNG_BASE64}"
        runs.append((_CHART_CODE, [{"type": "image", "url": image}]))
    return [
        {
            "id": ctx.ids.new("ci"),
            "type": "code_interpreter_call",
            "status": "completed",
            "container_id": container,
            "code": source,
            "outputs": outputs if included else None,
        }
        for source, outputs in runs
    ]


def _choice(tool: Mapping[str, Any], key: str, default: str) -> str:
    value = tool.get(key)
    return default if value in (None, "auto") else str(value)


def _image_items(ctx: Context, tool: Mapping[str, Any]) -> list[dict[str, Any]]:
    # No "action": the real API's item does not carry one.
    return [
        {
            "id": ctx.ids.new("ig"),
            "type": "image_generation_call",
            "status": "completed",
            "result": TINY_PNG_BASE64,
            "revised_prompt": f"A simple illustration of {ctx.query}",
            "size": _choice(tool, "size", "1024x1024"),
            "quality": _choice(tool, "quality", "medium"),
            "output_format": "png",  # the bytes are always a PNG
            "background": _choice(tool, "background", "opaque"),
        }
    ]


def _mcp_tool_names(tool: Mapping[str, Any]) -> list[str]:
    allowed = tool.get("allowed_tools")
    if isinstance(allowed, Mapping):
        allowed = allowed.get("tool_names")
    names = [str(name) for name in allowed or [] if name]
    if names:
        return names
    # a connector offers search and fetch, a custom server its own tools
    return ["search", "fetch"] if tool.get("connector_id") else ["ask_question"]


def _mcp_server(tool: Mapping[str, Any]) -> str:
    """What answers: the connector, or the server's label."""
    connector = tool.get("connector_id")
    label = str(tool.get("server_label") or "mcp")
    return f"{connector} ({label})" if connector else label


def awaits_approval(item: Mapping[str, Any]) -> bool:
    """Whether the model must wait for the product's approval response."""
    return item.get("type") == "mcp_approval_request"


def requires_approval(tool: Mapping[str, Any], name: str) -> bool:
    """``require_approval`` of an ``mcp`` tool: ``"always"``, or an object
    whose ``always.tool_names`` names the tool."""
    rule = tool.get("require_approval")
    if rule == "always":
        return True
    if isinstance(rule, Mapping):
        always = rule.get("always")
        names = always.get("tool_names") if isinstance(always, Mapping) else None
        return isinstance(names, list) and name in names
    return False


def _mcp_items(ctx: Context, tool: Mapping[str, Any]) -> list[dict[str, Any]]:
    label = str(tool.get("server_label") or "mcp")
    names = _mcp_tool_names(tool)
    requests = [
        item
        for item in ctx.history.hosted_of("mcp_approval_request")
        if item.get("server_label") == label
    ]
    if requests:  # asked before: the answer decides
        request_id = str(requests[-1].get("id"))
        if not ctx.history.approvals.get(request_id, False):
            return []  # denied (or left unanswered): the tool is not called
        call = _mcp_call(ctx, tool, str(requests[-1].get("name") or names[0]))
        call["approval_request_id"] = request_id
        return [call]
    listing = {
        "id": ctx.ids.new("mcpl"),
        "type": "mcp_list_tools",
        "server_label": label,
        "tools": [
            {
                "name": name,
                "input_schema": {
                    "type": "object",
                    "properties": {"question": {"type": "string"}},
                    "required": ["question"],
                },
                "description": f"Offline stand-in for {_mcp_server(tool)}.{name}.",
                "annotations": {"readOnlyHint": True},
            }
            for name in names
        ],
        "error": None,
    }
    if requires_approval(tool, names[0]):
        request = {
            "id": ctx.ids.new("mcpr"),
            "type": "mcp_approval_request",
            "server_label": label,
            "name": names[0],
            "arguments": json.dumps({"question": ctx.query}),
        }
        return [listing, request]
    return [listing, _mcp_call(ctx, tool, names[0])]


def _mcp_call(ctx: Context, tool: Mapping[str, Any], name: str) -> dict[str, Any]:
    failed = MARKER_MCP_ERROR in ctx.marker_text
    answer = f"Offline answer from {_mcp_server(tool)}: {ctx.query}."
    return {
        "id": ctx.ids.new("mcp"),
        "type": "mcp_call",
        "server_label": str(tool.get("server_label") or "mcp"),
        "name": name,
        "arguments": json.dumps({"question": ctx.query}),
        "output": None if failed else answer,
        "error": (
            {
                "type": "http_error",
                "code": 502,
                "message": "Bad gateway from MCP server",
            }
            if failed
            else None
        ),
        "status": "failed" if failed else "completed",
        "approval_request_id": None,
    }


def hosted_items(ctx: Context, allowed: set[str] | None) -> list[dict[str, Any]]:
    history = ctx.history
    items: list[dict[str, Any]] = []

    def permitted(key: str) -> bool:
        return allowed is None or key in allowed

    searches = ctx.tools_of("web_search")
    if (
        searches
        and permitted("web_search")
        and (
            not history.hosted_of("web_search_call")
            or MARKER_SEARCH_EACH_TURN in ctx.marker_text
        )
    ):
        items.extend(_web_search_items(ctx, searches[0]))
    builders: tuple[tuple[str, str, Callable[..., list[dict[str, Any]]]], ...] = (
        ("file_search", "file_search_call", _file_search_items),
        ("code_interpreter", "code_interpreter_call", _code_items),
        ("image_generation", "image_generation_call", _image_items),
    )
    for kind, item_type, build in builders:
        offered = [t for t in ctx.tools if t.get("type") == kind]
        if offered and permitted(kind) and not history.hosted_of(item_type):
            items.extend(build(ctx, offered[0]))
    items.extend(hosted_shell_items(ctx, permitted))
    done = {str(item.get("server_label")) for item in history.hosted_of("mcp_call")}
    done |= {  # asked, and the answer was not a yes
        str(item.get("server_label"))
        for item in history.hosted_of("mcp_approval_request")
        if not history.approvals.get(str(item.get("id")), False)
    }
    for tool in ctx.tools_of("mcp"):
        label = str(tool.get("server_label") or "mcp")
        if label not in done and permitted(f"mcp:{label}"):
            done.add(label)
            items.extend(_mcp_items(ctx, tool))
    return items


def within_tool_call_limit(
    ctx: Context, items: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``items`` without the built-in calls past the request's
    ``max_tool_calls`` (the API's cap on built-in calls per response)."""
    limit = ctx.request.get("max_tool_calls")
    if not isinstance(limit, int) or isinstance(limit, bool):
        return items
    kept: list[dict[str, Any]] = []
    calls = 0
    for item in items:
        if str(item.get("type", "")).endswith("_call"):
            calls += 1
            if calls > limit:
                continue
        kept.append(item)
    return kept
