"""What one turn of the offline model works from: the request, its history,
deterministic ids and the query its tools search for."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .history import History


class Ids:
    """Deterministic ids: a hash of the request seed and a counter."""

    def __init__(self, seed: str) -> None:
        self.seed = seed
        self.count = 0

    def new(self, prefix: str) -> str:
        self.count += 1
        digest = hashlib.sha256(f"{self.seed}:{self.count}".encode()).hexdigest()
        return f"{prefix}_{digest[:24]}"


@dataclasses.dataclass(slots=True)
class Context:
    request: Mapping[str, Any]
    history: History
    ids: Ids
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


_QUERY_LENGTH = 80


def _shorten(text: str) -> str:
    if len(text) <= _QUERY_LENGTH:
        return text
    return text[:_QUERY_LENGTH].rsplit(" ", 1)[0].rstrip(" ,;:")


def query_for(history: History, instructions: str) -> str:
    """What the hosted tools search for: the last user message, else the prompt.

    Markdown headings are skipped (a rendered prompt starts with one); the first
    question found wins, without a lead-in such as "Answer the question:";
    otherwise the first line of text.
    """
    users = [text for role, text in history.messages if role == "user" and text.strip()]
    if users:
        candidates = users[-1:]
    else:
        prompts = [text for role, text in history.messages if role != "user"]
        candidates = [*prompts, instructions]
    lines = [
        cleaned
        for text in candidates
        for line in text.splitlines()
        if not line.lstrip().startswith("#") and (cleaned := _strip_markdown(line))
    ]
    for line in lines:
        if "?" in line:
            question = line[: line.index("?") + 1].rsplit(": ", 1)[-1]
            return _shorten(question.strip())
    return _shorten(lines[0]) if lines else "offline search"


def allowed_names(choice: Any) -> set[str] | None:
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


def digest(*parts: str) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()
