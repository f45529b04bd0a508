"""The cooperative scripted model: a Responses API request dict in, a response out.

``ScriptedModel.respond`` reads the whole (stateless, manually replayed)
history in ``request["input"]`` and decides deterministically what a helpful
model would do next:

1. on its first turn, run every offered hosted tool once (``web_search``,
   ``file_search``, ``code_interpreter``, ``image_generation``, ``mcp``);
2. call every offered function tool not yet attempted, in offered order, as
   parallel ``function_call`` items with arguments valid for its schema;
3. recover from the runtime's recoverable denials (``Tool 'x' requires: a, b``
   and ``File 'p' must be read before overwriting.``) by calling the missing
   prerequisite, then retrying the denied call with the same arguments;
4. otherwise answer with a ``message`` summarising the tool outcomes, citing
   web sources with ``url_citation`` annotations (also inside JSON answers).

Everything is derived from a hash of the request: same request, same bytes.
Only the standard library is used.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
import struct
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from .schema_values import check_value, check_value_in, sample_value

__all__ = [
    "FIXED_EPOCH",
    "MARKER_MCP_ERROR",
    "MARKER_SEARCH_FAILS",
    "TINY_PNG_BASE64",
    "OfflineRequestError",
    "ScriptedModel",
    "build_response",
    "error_payload",
    "parallel_calls_script",
    "search_sources",
]

FIXED_EPOCH = 1767225600  # 2026-01-01T00:00:00Z; created_at = FIXED_EPOCH + turn
MAX_CALLS_PER_KEY = 3
MAX_CALLING_TURNS = 8
DEFAULT_DOMAINS = ("docs.python.org", "www.djangoproject.com", "developers.openai.com")
MARKER_SEARCH_FAILS = "[offline:web_search_fails]"
MARKER_MCP_ERROR = "[offline:mcp_error]"

Script = Callable[[dict[str, Any]], dict[str, Any]]

_INPUT_ITEM_TYPES = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "mcp_approval_response",
        "item_reference",
    }
)
_REQUIRES = re.compile(r"Tool '(?P<tool>[^']+)' requires: (?P<names>[^\n]+)")
_READ_FIRST = re.compile(r"File '(?P<path>[^\n]+)' must be read before overwriting\.")
_OTHER_FAILURE = re.compile(
    r"(Tool validation failed|Policy denied|Policy '[^']*' |Unknown tool '"
    r"|Tool '[^']+' (execution failed|raised |returned |does not have))"
)
_URL_PROPERTY = re.compile(r"source|url|citation|link|reference", re.IGNORECASE)
_SUMMARY_NAMES = ("answer", "summary", "result", "response", "text", "content")


def error_payload(
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    error_type: str = "invalid_request_error",
) -> dict[str, Any]:
    """The body of an OpenAI error response: ``{"error": {...}}``."""
    return {
        "error": {"message": message, "type": error_type, "param": param, "code": code}
    }


class OfflineRequestError(Exception):
    """A request the real API would reject; served as an HTTP error body."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        *,
        code: str | None = None,
        error_type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.error_type = error_type

    def payload(self) -> dict[str, Any]:
        """The JSON error body for this error."""
        return error_payload(
            self.message, param=self.param, code=self.code, error_type=self.error_type
        )


# -- the history ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Failure:
    kind: str  # "requires" | "read_first" | "other"
    names: tuple[str, ...] = ()
    path: str | None = None


@dataclasses.dataclass(slots=True)
class _Call:
    call_id: str
    name: str
    arguments: str
    key: str
    output: str | None = None
    failure: _Failure | None = None

    @property
    def ok(self) -> bool:
        return self.output is not None and self.failure is None


@dataclasses.dataclass(slots=True)
class _History:
    messages: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    calls: list[_Call] = dataclasses.field(default_factory=list)
    hosted: list[Mapping[str, Any]] = dataclasses.field(default_factory=list)
    prior_turns: int = 0
    calling_turns: int = 0

    def hosted_of(self, kind: str) -> list[Mapping[str, Any]]:
        return [item for item in self.hosted if item.get("type") == kind]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = [
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        ]
        return "\n".join(texts)
    return ""


def _args_key(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except ValueError:
        return arguments


def _classify_output(text: str) -> _Failure | None:
    """``None`` when a tool output reads as success, else what kind of failure."""
    head = text.lstrip()
    match = _REQUIRES.match(head)
    if match:
        names = tuple(
            name.strip().rstrip(".")
            for name in match["names"].split(",")
            if name.strip()
        )
        return _Failure("requires", names=names)
    match = _READ_FIRST.match(head)
    if match:
        return _Failure("read_first", path=match["path"])
    if _OTHER_FAILURE.match(head):
        return _Failure("other")
    return None


def _parse_history(raw: Any) -> _History:
    if isinstance(raw, str):
        raw = [{"role": "user", "content": raw}]
    if not isinstance(raw, list):
        raise OfflineRequestError(
            400, "Invalid type for 'input': expected a string or an array.", "input"
        )
    history = _History()
    outputs: list[tuple[str, str]] = []
    in_run = run_has_call = False
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise OfflineRequestError(
                400, f"Invalid type for 'input[{index}]': expected an object.", "input"
            )
        kind, role = item.get("type"), item.get("role")
        if role in ("user", "system", "developer") and kind in (None, "message"):
            history.messages.append((str(role), _text_of(item.get("content"))))
            in_run = False
            continue
        if kind in _INPUT_ITEM_TYPES:
            if kind == "function_call_output":
                outputs.append((str(item.get("call_id")), _text_of(item.get("output"))))
            in_run = False
            continue
        if not in_run:
            history.prior_turns += 1
            in_run, run_has_call = True, False
        if kind == "function_call":
            if not run_has_call:
                history.calling_turns += 1
                run_has_call = True
            arguments = str(item.get("arguments") or "")
            history.calls.append(
                _Call(
                    call_id=str(item.get("call_id") or item.get("id")),
                    name=str(item.get("name")),
                    arguments=arguments,
                    key=_args_key(arguments),
                )
            )
        elif isinstance(kind, str) and kind != "message":
            history.hosted.append(item)
    by_id = {call.call_id: call for call in history.calls}
    for call_id, text in outputs:
        call = by_id.get(call_id)
        if call is None:
            raise OfflineRequestError(
                400,
                f"No tool call found for function call output with call_id {call_id}.",
                "input",
            )
        call.output = text
        call.failure = _classify_output(text)
    for call in history.calls:
        if call.output is None:
            raise OfflineRequestError(
                400, f"No tool output found for function call {call.call_id}.", "input"
            )
    return history


# -- the request ----------------------------------------------------------------


class _Ids:
    """Deterministic ids: a hash of the request seed and a counter."""

    def __init__(self, seed: str) -> None:
        self.seed = seed
        self.count = 0

    def new(self, prefix: str) -> str:
        self.count += 1
        digest = hashlib.sha256(f"{self.seed}:{self.count}".encode()).hexdigest()
        return f"{prefix}_{digest[:24]}"


@dataclasses.dataclass(slots=True)
class _Context:
    request: Mapping[str, Any]
    history: _History
    ids: _Ids
    tools: list[Mapping[str, Any]]
    include: frozenset[str]
    query: str
    marker_text: str

    def tools_of(self, prefix: str) -> list[Mapping[str, Any]]:
        return [t for t in self.tools if str(t.get("type", "")).startswith(prefix)]


def _strip_markdown(line: str) -> str:
    line = re.sub(r"\[offline:[a-z_]+\]", "", line)
    line = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", line)
    line = re.sub(r"^\s*(#+|>|[-*+]|\d+\.)\s*", "", line)
    line = re.sub(r"\*\*|__|`", "", line)
    line = re.sub(r"(?<!\w)[*_]|[*_](?!\w)", "", line)
    return " ".join(line.split())


def _query_for(history: _History, instructions: str) -> str:
    users = [text for role, text in history.messages if role == "user" and text.strip()]
    if users:
        candidates = users[-1:]
    else:
        prompts = [text for role, text in history.messages if role != "user"]
        candidates = [*prompts, instructions]
    for text in candidates:
        for line in text.splitlines():
            cleaned = _strip_markdown(line)
            if cleaned:
                return cleaned[:80].rstrip()
    return "offline search"


def _allowed_names(choice: Any) -> set[str] | None:
    """Tool keys a ``tool_choice`` permits (``None``: everything)."""
    if isinstance(choice, str):
        return set() if choice == "none" else None
    if not isinstance(choice, Mapping):
        return None
    refs: Iterable[Any] = [choice]
    if choice.get("type") == "allowed_tools":
        refs = choice.get("tools") or []
    keys: set[str] = set()
    for ref in refs:
        if not isinstance(ref, Mapping):
            continue
        kind = str(ref.get("type", ""))
        if kind in ("function", "custom"):
            keys.add(f"function:{ref.get('name')}")
        elif kind == "mcp":
            keys.add(f"mcp:{ref.get('server_label')}")
        else:
            keys.add(_hosted_kind(kind))
    return keys


def _hosted_kind(tool_type: str) -> str:
    return "web_search" if tool_type.startswith("web_search") else tool_type


# -- hosted tools ---------------------------------------------------------------


def _tiny_png() -> str:
    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    pixels = zlib.compress(b"\x00\x4f\x8a\xd9\xff", 9)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
    return base64.b64encode(png + chunk(b"IEND", b"")).decode("ascii")


TINY_PNG_BASE64 = _tiny_png()


def _digest(*parts: str) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()


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


def _web_search_item(ctx: _Context, tool: Mapping[str, Any]) -> dict[str, Any]:
    failed = MARKER_SEARCH_FAILS in ctx.marker_text
    action: dict[str, Any] = {
        "type": "search",
        "query": ctx.query,
        "queries": [ctx.query],
    }
    if not failed and "web_search_call.action.sources" in ctx.include:
        urls = search_sources(ctx.query, tool)
        action["sources"] = [{"type": "url", "url": url} for url in urls]
    return {
        "id": ctx.ids.new("ws"),
        "type": "web_search_call",
        "status": "failed" if failed else "completed",
        "action": action,
    }


def _file_results(query: str, tool: Mapping[str, Any]) -> list[dict[str, Any]]:
    stores = tool.get("vector_store_ids") or ["vs_offline"]
    store = str(stores[0])
    limit = tool.get("max_num_results")
    files = (("handbook.md", 0.92), ("faq.md", 0.81))
    results = [
        {
            "file_id": f"file-{_digest(store, name)[:22]}",
            "filename": name,
            "score": score,
            "text": f"Offline excerpt from {name} about {query}.",
            "attributes": {"vector_store_id": store},
        }
        for name, score in files
    ]
    return results[: limit if isinstance(limit, int) and limit > 0 else None]


def _file_search_item(ctx: _Context, tool: Mapping[str, Any]) -> dict[str, Any]:
    results = None
    if "file_search_call.results" in ctx.include:
        results = _file_results(ctx.query, tool)
    return {
        "id": ctx.ids.new("fs"),
        "type": "file_search_call",
        "status": "completed",
        "queries": [ctx.query],
        "results": results,
    }


def _container_id(tool: Mapping[str, Any], seed: str) -> str:
    container = tool.get("container")
    if isinstance(container, str) and container:
        return container
    return f"cntr_{_digest(seed, 'container')[:24]}"


def _code_item(ctx: _Context, tool: Mapping[str, Any]) -> dict[str, Any]:
    code = (
        "import csv\n"
        "rows = [('step', 'value'), ('1', '2')]\n"
        "with open('/mnt/data/result.csv', 'w', newline='') as handle:\n"
        "    csv.writer(handle).writerows(rows)\n"
        "print(len(rows))"
    )
    outputs = None
    if "code_interpreter_call.outputs" in ctx.include:
        outputs = [{"type": "logs", "logs": "2\n"}]
    return {
        "id": ctx.ids.new("ci"),
        "type": "code_interpreter_call",
        "status": "completed",
        "container_id": _container_id(tool, ctx.ids.seed),
        "code": code,
        "outputs": outputs,
    }


def _choice(tool: Mapping[str, Any], key: str, default: str) -> str:
    value = tool.get(key)
    return default if value in (None, "auto") else str(value)


def _image_item(ctx: _Context, tool: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": ctx.ids.new("ig"),
        "type": "image_generation_call",
        "status": "completed",
        "result": TINY_PNG_BASE64,
        "revised_prompt": f"A simple illustration of {ctx.query}",
        "size": _choice(tool, "size", "1024x1024"),
        "quality": _choice(tool, "quality", "medium"),
        "output_format": "png",  # the bytes are always a PNG
        "background": _choice(tool, "background", "opaque"),
        "action": _choice(tool, "action", "generate"),
    }


def _mcp_tool_names(tool: Mapping[str, Any]) -> list[str]:
    allowed = tool.get("allowed_tools")
    if isinstance(allowed, Mapping):
        allowed = allowed.get("tool_names")
    names = [str(name) for name in allowed or [] if name]
    return names or ["ask_question"]


def _mcp_items(ctx: _Context, tool: Mapping[str, Any]) -> list[dict[str, Any]]:
    label = str(tool.get("server_label") or "mcp")
    names = _mcp_tool_names(tool)
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
                "description": f"Offline stand-in for {label}.{name}.",
                "annotations": {"readOnlyHint": True},
            }
            for name in names
        ],
        "error": None,
    }
    failed = MARKER_MCP_ERROR in ctx.marker_text
    call = {
        "id": ctx.ids.new("mcp"),
        "type": "mcp_call",
        "server_label": label,
        "name": names[0],
        "arguments": json.dumps({"question": ctx.query}),
        "output": None if failed else f"Offline answer from {label}: {ctx.query}.",
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
    return [listing, call]


def _hosted_items(ctx: _Context, allowed: set[str] | None) -> list[dict[str, Any]]:
    history = ctx.history
    items: list[dict[str, Any]] = []

    def permitted(key: str) -> bool:
        return allowed is None or key in allowed

    searches = ctx.tools_of("web_search")
    if (
        searches
        and permitted("web_search")
        and not history.hosted_of("web_search_call")
    ):
        items.append(_web_search_item(ctx, searches[0]))
    builders: tuple[tuple[str, str, Callable[..., dict[str, Any]]], ...] = (
        ("file_search", "file_search_call", _file_search_item),
        ("code_interpreter", "code_interpreter_call", _code_item),
        ("image_generation", "image_generation_call", _image_item),
    )
    for kind, item_type, build in builders:
        offered = [t for t in ctx.tools if t.get("type") == kind]
        if offered and permitted(kind) and not history.hosted_of(item_type):
            items.append(build(ctx, offered[0]))
    done = {str(item.get("server_label")) for item in history.hosted_of("mcp_call")}
    for tool in ctx.tools_of("mcp"):
        label = str(tool.get("server_label") or "mcp")
        if label not in done and permitted(f"mcp:{label}"):
            done.add(label)
            items.extend(_mcp_items(ctx, tool))
    return items


# -- function calls -------------------------------------------------------------


def _dumps_args(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclasses.dataclass(frozen=True, slots=True)
class _Need:
    """A prerequisite call: what satisfies it, and how to make it."""

    name: str
    arguments: str
    path: str | None = None

    def satisfied_by(self, call: _Call) -> bool:
        if call.name != self.name:
            return False
        if self.path is None:
            return True
        return _path_argument(call.arguments) == self.path


def _path_argument(arguments: str) -> str | None:
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return None
    if isinstance(decoded, Mapping):
        for key in ("path", "file_path"):
            if isinstance(decoded.get(key), str):
                return str(decoded[key])
    return None


def _function_tools(tools: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {
        str(t["name"]): t.get("parameters") or {}
        for t in tools
        if t.get("type") == "function" and t.get("name")
    }


def _read_tool(functions: Mapping[str, Any]) -> str | None:
    if "read_file" in functions:
        return "read_file"
    return next((name for name in functions if name.startswith("read")), None)


def _needs(
    failure: _Failure, functions: Mapping[str, Mapping[str, Any]]
) -> list[_Need]:
    if failure.kind == "requires":
        return [
            _Need(name, _dumps_args(sample_value(functions[name])))
            for name in failure.names
            if name in functions
        ]
    if failure.kind == "read_first" and failure.path is not None:
        reader = _read_tool(functions)
        if reader is None:
            return []
        schema = functions[reader]
        arguments = sample_value(schema)
        if not isinstance(arguments, dict):
            arguments = {}
        properties = schema.get("properties") or {}
        key = (
            "file_path"
            if "file_path" in properties and "path" not in properties
            else "path"
        )
        arguments[key] = failure.path
        return [_Need(reader, _dumps_args(arguments), path=failure.path)]
    return []


def _plan_calls(
    history: _History, functions: Mapping[str, Mapping[str, Any]]
) -> list[tuple[str, str]]:
    calls = history.calls
    counts = Counter((call.name, call.key) for call in calls)
    planned: list[tuple[str, str]] = []
    planned_keys: set[tuple[str, str]] = set()

    def add(name: str, arguments: str) -> None:
        key = (name, _args_key(arguments))
        if key in planned_keys or counts[key] >= MAX_CALLS_PER_KEY:
            return
        planned_keys.add(key)
        planned.append((name, arguments))

    for position, call in enumerate(calls):
        if call.failure is None or call.failure.kind == "other":
            continue
        if call.name not in functions:
            continue  # no longer offered
        later = calls[position + 1 :]
        if any(c.name == call.name and c.key == call.key for c in later):
            continue  # already retried
        needs = _needs(call.failure, functions)
        if not needs:
            continue  # nothing offered can fix it
        unmet = [
            need
            for need in needs
            if not any(need.satisfied_by(c) and c.ok for c in calls)
        ]
        if not unmet:
            add(call.name, call.arguments)
            continue
        for need in unmet:
            if not any(need.satisfied_by(c) for c in later):
                add(need.name, need.arguments)
    attempted = {call.name for call in calls}
    for name, schema in functions.items():
        if name not in attempted:
            add(name, _dumps_args(sample_value(schema)))
    return planned


# -- the answer -----------------------------------------------------------------


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


def _url_citation(url: str, start: int, end: int) -> dict[str, Any]:
    host = urlsplit(url).hostname or url
    return {
        "type": "url_citation",
        "start_index": start,
        "end_index": end,
        "url": url,
        "title": f"Title for {host}",
    }


def _cited_urls(ctx: _Context, output: list[dict[str, Any]]) -> tuple[list[str], bool]:
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


def _summary(ctx: _Context, output: list[dict[str, Any]]) -> str:
    sentences: list[str] = []
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
        if kind == "mcp_list_tools" or kind == "reasoning":
            continue
        label = kind.removesuffix("_call")
        if kind == "mcp_call":
            label = f"mcp {item.get('server_label')}.{item.get('name')}"
        labels.append(f"{label} {item.get('status', 'completed')}")
    if labels:
        sentences.append(f"Hosted tools: {', '.join(labels)}.")
    return " ".join(sentences)


def _file_citation(
    ctx: _Context, hosted: list[Mapping[str, Any]]
) -> dict[str, Any] | None:
    for item in hosted:
        if item.get("type") != "file_search_call":
            continue
        results = item.get("results")
        if not results:
            tools = [t for t in ctx.tools if t.get("type") == "file_search"]
            results = _file_results(ctx.query, tools[0] if tools else {})
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
                "file_id": f"cfile_{_digest(container, 'result.csv')[:24]}",
                "filename": "result.csv",
                "start_index": 0,
                "end_index": 0,
            }
    return None


def _plain_answer(ctx: _Context, output: list[dict[str, Any]]) -> _Text:
    text = _Text()
    text.add(_summary(ctx, output))
    urls, searched = _cited_urls(ctx, output)
    for url in urls:
        host = urlsplit(url).hostname or url
        text.add(f' The page on {host} is relevant to "{ctx.query}" ')
        text.cite(f"([{host}]({url}))", _url_citation(url, 0, 0))
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
    ctx: _Context, output: list[dict[str, Any]], fmt: Mapping[str, Any]
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
        text.annotations.append(_url_citation(url, start, end))
        position = end
    return text


def _message_item(ctx: _Context, output: list[dict[str, Any]]) -> dict[str, Any]:
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


# -- the response ---------------------------------------------------------------


def _usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def build_response(
    request: Mapping[str, Any],
    output: list[dict[str, Any]],
    *,
    response_id: str,
    turn: int,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A complete ``response`` object around ``output``, echoing the request."""
    text = request.get("text")
    text = dict(text) if isinstance(text, Mapping) else {}
    text.setdefault("format", {"type": "text"})
    text.setdefault("verbosity", "medium")
    if usage is None:
        usage = _usage(
            len(json.dumps(request.get("input"))) // 4, len(json.dumps(output)) // 4
        )
    return {
        "id": response_id,
        "object": "response",
        "created_at": FIXED_EPOCH + turn,
        "completed_at": FIXED_EPOCH + turn,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "max_tool_calls": request.get("max_tool_calls"),
        "model": request.get("model"),
        "output": output,
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": request.get("reasoning") or {"effort": None, "summary": None},
        "store": request.get("store", True),
        "temperature": request.get("temperature", 1.0),
        "text": text,
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": list(request.get("tools") or []),
        "top_p": request.get("top_p", 1.0),
        "truncation": request.get("truncation", "disabled"),
        "usage": usage,
        "user": None,
        "metadata": request.get("metadata") or {},
        "service_tier": "default",
        "background": False,
    }


def _validate(request: Mapping[str, Any]) -> None:
    if not isinstance(request.get("model"), str) or not request["model"]:
        raise OfflineRequestError(400, "Missing required parameter: 'model'.", "model")
    if "input" not in request or request["input"] is None:
        raise OfflineRequestError(400, "Missing required parameter: 'input'.", "input")
    if request.get("previous_response_id"):
        raise OfflineRequestError(
            400,
            f"Previous response with id '{request['previous_response_id']}' not found. "
            "The offline provider stores nothing: send the whole history as input.",
            "previous_response_id",
        )
    if request.get("stream"):
        raise OfflineRequestError(
            400, "The offline provider does not support streaming.", "stream"
        )
    tools = request.get("tools")
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, Mapping) for t in tools)
    ):
        raise OfflineRequestError(
            400, "Invalid type for 'tools': expected an array.", "tools"
        )


class ScriptedModel:
    """A deterministic, cooperative stand-in for a Responses API model.

    Without ``script`` it plans each turn from the request's history (see the
    module docstring). With ``script``, ``respond`` returns ``script(request)``
    unchanged: benchmarks and tests use that to play a fixed conversation.
    """

    def __init__(self, script: Script | None = None) -> None:
        self.script = script

    def respond(self, request: dict[str, Any]) -> dict[str, Any]:
        """The response object for one ``POST /v1/responses`` body.

        Raises ``OfflineRequestError`` for requests the real API rejects.
        """
        if self.script is not None:
            return self.script(request)
        _validate(request)
        history = _parse_history(request["input"])
        seed = hashlib.sha256(
            json.dumps(request, sort_keys=True, default=str).encode()
        ).hexdigest()
        instructions = str(request.get("instructions") or "")
        ctx = _Context(
            request=request,
            history=history,
            ids=_Ids(seed),
            tools=list(request.get("tools") or []),
            include=frozenset(str(v) for v in request.get("include") or []),
            query=_query_for(history, instructions),
            marker_text="\n".join([instructions, *(t for _r, t in history.messages)]),
        )
        output = self._turn(ctx)
        turn = history.prior_turns + 1
        return build_response(
            request, output, response_id=f"resp_{seed[:12]}", turn=turn
        )

    def _turn(self, ctx: _Context) -> list[dict[str, Any]]:
        allowed = _allowed_names(ctx.request.get("tool_choice", "auto"))
        output: list[dict[str, Any]] = []
        if allowed != set():
            output.extend(_hosted_items(ctx, allowed))
            if ctx.history.calling_turns < MAX_CALLING_TURNS:
                functions = _function_tools(ctx.tools)
                planned = [
                    (name, arguments)
                    for name, arguments in _plan_calls(ctx.history, functions)
                    if allowed is None or f"function:{name}" in allowed
                ]
                if ctx.request.get("parallel_tool_calls") is False:
                    planned = planned[:1]
                for name, arguments in planned:
                    output.append(
                        {
                            "id": ctx.ids.new("fc"),
                            "type": "function_call",
                            "call_id": ctx.ids.new("call"),
                            "name": name,
                            "arguments": arguments,
                            "status": "completed",
                        }
                    )
        if not any(item["type"] == "function_call" for item in output):
            output.append(_message_item(ctx, output))
        return output


def parallel_calls_script(
    turns: int = 5, calls_per_turn: int = 2, tool_name: str = "echo"
) -> Script:
    """The benchmark conversation as a ``ScriptedModel`` script.

    Turn ``k`` (the number of ``function_call_output`` items in the input,
    divided by ``calls_per_turn``) answers ``calls_per_turn`` parallel calls to
    ``tool_name`` with ``{"text": "turn k call j"}``; after ``turns`` answered
    turns it replies "done". ``turns + 1`` POSTs in all. Responses are built
    once, up front; each request only counts outputs and copies one dict.
    """
    if turns < 0 or calls_per_turn < 1:
        raise ValueError("turns must be >= 0 and calls_per_turn >= 1.")
    bodies: list[dict[str, Any]] = []
    for turn in range(turns + 1):
        output: list[dict[str, Any]]
        if turn < turns:
            output = [
                {
                    "id": f"fc_bench_{turn + 1}_{call + 1}",
                    "type": "function_call",
                    "call_id": f"call_bench_{turn + 1}_{call + 1}",
                    "name": tool_name,
                    "arguments": json.dumps(
                        {"text": f"turn {turn + 1} call {call + 1}"}
                    ),
                    "status": "completed",
                }
                for call in range(calls_per_turn)
            ]
        else:
            output = [
                {
                    "id": "msg_bench_done",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {
                            "type": "output_text",
                            "text": "done",
                            "annotations": [],
                            "logprobs": [],
                        }
                    ],
                }
            ]
        bodies.append(
            build_response(
                {"model": "offline-bench", "parallel_tool_calls": True},
                output,
                response_id=f"resp_bench_{turn + 1}",
                turn=turn + 1,
                usage=_usage(100 * (turn + 1), 20),
            )
        )

    def script(request: dict[str, Any]) -> dict[str, Any]:
        items = request.get("input")
        answered = 0
        if isinstance(items, list):
            answered = sum(
                1
                for item in items
                if isinstance(item, dict) and item.get("type") == "function_call_output"
            )
        body = bodies[min(answered // calls_per_turn, turns)]
        return {**body, "model": request.get("model", body["model"])}

    return script
