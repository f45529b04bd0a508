"""A fake Responses API for runtime tests: the real ``openai`` SDK over
``httpx.MockTransport``, fed realistic JSON, with builders for response bodies
and output items."""

import json
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import openai

MODEL = "gpt-test"

# -- a fake provider speaking Responses API JSON through the real SDK ---------------

Reply = dict[str, Any] | httpx.Response | Exception | Callable[[], Any]


class FakeProvider:
    """Queued replies for ``POST /v1/responses``; captures every request body."""

    def __init__(self, *replies: Reply, max_retries: int = 0) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[httpx.Headers] = []
        self.client = openai.OpenAI(
            api_key="sk-test",
            base_url="http://provider.test/v1",
            # The SDK takes an httpx client too, though typed for httpx2's.
            http_client=httpx.Client(transport=httpx.MockTransport(self.handle)),  # type: ignore[arg-type]
            max_retries=max_retries,
        )

    def handle(self, request: httpx.Request) -> httpx.Response:
        assert request.method == "POST"
        assert request.url.path == "/v1/responses"
        self.requests.append(json.loads(request.content))
        self.headers.append(request.headers)
        reply = self.replies.pop(0)
        while callable(reply):
            reply = reply()
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, httpx.Response):
            return reply
        headers = {"x-request-id": f"req_{len(self.requests)}"}
        return httpx.Response(200, json=reply, headers=headers)


def response(
    *items: dict[str, Any],
    id: str = "resp_1",
    status: str = "completed",
    usage: tuple[int, int] = (10, 5),
    cached: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": id,
        "object": "response",
        "created_at": 1767225600,
        "status": status,
        "model": MODEL,
        "output": list(items),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "usage": {
            "input_tokens": usage[0],
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": usage[1],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage[0] + usage[1],
        },
    }
    body.update(extra)
    return body


def text_part(text: str, *annotations: dict[str, Any]) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": list(annotations)}


def message(
    text: str = "Done.", *annotations: dict[str, Any], id: str = "msg_1"
) -> dict[str, Any]:
    return message_parts([text_part(text, *annotations)], id=id)


def message_parts(parts: list[dict[str, Any]], *, id: str = "msg_1") -> dict[str, Any]:
    return {
        "type": "message",
        "id": id,
        "role": "assistant",
        "status": "completed",
        "content": parts,
    }


def function_call(
    name: str = "lookup",
    arguments: Any = None,
    call_id: str = "call_1",
) -> dict[str, Any]:
    args = (
        arguments
        if isinstance(arguments, str)
        else json.dumps(arguments or {"query": "x"})
    )
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": args,
        "status": "completed",
    }


def reasoning(id: str = "rs_1") -> dict[str, Any]:
    return {"type": "reasoning", "id": id, "summary": [], "encrypted_content": "opaque"}


def web_search_call(
    id: str = "ws_1", query: str = "tides", sources: Sequence[str] = ()
) -> dict[str, Any]:
    return {
        "type": "web_search_call",
        "id": id,
        "status": "completed",
        "action": {
            "type": "search",
            "query": query,
            "sources": [{"type": "url", "url": url} for url in sources],
        },
    }


def url_citation(url: str, start: int, end: int, title: str = "") -> dict[str, Any]:
    return {
        "type": "url_citation",
        "url": url,
        "title": title or url,
        "start_index": start,
        "end_index": end,
    }
