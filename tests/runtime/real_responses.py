"""Response bodies recorded from the real Responses API
(``tests/fixtures/real_responses/``), served over HTTP to the real ``openai``
SDK through ``FakeProvider`` (an ``httpx.MockTransport``)."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from .fakes import FakeProvider

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "real_responses"

PHASE = "phase__vercel-ai__openai-phase_1.json"
WEB_SEARCH = "web_search__vercel-ai__openai-web-search-tool_1.json"
FILE_SEARCH = "file_search__vercel-ai__openai-file-search-tool_1.json"
FILE_SEARCH_RESULTS = "file_search_results__vercel-ai__openai-file-search-tool_2.json"
CODE_INTERPRETER = "code_interpreter__vercel-ai__openai-code-interpreter-tool_1.json"
SHELL_LOCAL = "shell_local__vercel-ai__openai-shell-tool_1.json"
SHELL_CONTAINER = "shell_container__vercel-ai__openai-shell-container_1.json"
IMAGE_GENERATION = "image_generation__vercel-ai__openai-image-generation-tool_1.json"
REASONING = "reasoning_encrypted__vercel-ai__openai-reasoning-encrypted-content_1.json"


@cache
def _text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def body(name: str) -> dict[str, Any]:
    """A fresh copy of the recorded body ``name`` (tests may edit it)."""
    return copy.deepcopy(json.loads(_text(name)))


def items_of(name: str, item_type: str) -> list[dict[str, Any]]:
    return [item for item in body(name)["output"] if item["type"] == item_type]


def replay(*bodies: dict[str, Any] | str) -> FakeProvider:
    """A provider answering each request with the next body (a name is loaded)."""
    return FakeProvider(*(body(b) if isinstance(b, str) else b for b in bodies))
