"""The ``response`` object around a turn's output, and the request checks the
real API makes before it answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import OfflineRequestError
from .reasoning import usage_of

FIXED_EPOCH = 1767225600  # 2026-01-01T00:00:00Z; created_at = FIXED_EPOCH + turn


def token_usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
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
        usage = usage_of(request, output)
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


def validate_request(request: Mapping[str, Any]) -> None:
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
    for index, tool in enumerate(tools or []):
        servers = [k for k in _MCP_SERVER_KEYS if tool.get(k)]
        if tool.get("type") == "mcp" and len(servers) != 1:
            raise OfflineRequestError(
                400,
                f"Invalid 'tools[{index}]': an mcp tool needs exactly one of "
                "server_url, connector_id or tunnel_id.",
                f"tools[{index}]",
            )


# Where an mcp tool's server is (the API takes exactly one).
_MCP_SERVER_KEYS = ("server_url", "connector_id", "tunnel_id")
