"""OpenAI Responses codec for remote ``mcp`` servers."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ....hosted.base import HostedTool
from ....hosted.mcp import McpApprovalRequest, McpConfig, McpResult, McpToolCall
from .base import NativeCall, field, status_ok

_OUTPUT_PREVIEW = 2000


def _config(tool: HostedTool[Any]) -> McpConfig:
    config = tool.config
    if not isinstance(config, McpConfig):
        raise TypeError(
            f"Hosted tool '{tool.name}' of kind 'mcp' needs an McpConfig, not "
            f"{type(config).__name__}."
        )
    return config


def decode_arguments(raw: Any) -> Any:
    """JSON-decoded arguments, or the raw value when it is not JSON."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply
        return raw


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = [str(field(part, "text", "")) for part in content]
        if any(texts):
            return " ".join(t for t in texts if t)
    if isinstance(content, Mapping) and isinstance(content.get("text"), str):
        return str(content["text"])
    try:
        return json.dumps(content, default=str)
    except (TypeError, ValueError):
        return str(content)


def format_mcp_error(error: Any) -> str | None:
    """``http_error 502: Bad gateway`` and the like; ``None`` for no error.

    The 3.54 SDK models ``error`` as a union of objects; older payloads
    carried a plain string, which is returned as it is.
    """
    if error is None:
        return None
    if isinstance(error, str):
        return error
    kind = str(field(error, "type", "error"))
    if kind == "mcp_tool_execution_error":
        text = _content_text(field(error, "content"))
        return f"{kind}: {text}" if text else kind
    code = field(error, "code")
    message = field(error, "message")
    head = f"{kind} {code}" if code is not None else kind
    return f"{head}: {message}" if message else head


def mcp_call(item: Any) -> McpToolCall:
    raw = field(item, "arguments", "")
    error = format_mcp_error(field(item, "error"))
    status = field(item, "status")
    return McpToolCall(
        call_id=str(field(item, "id", "")),
        server_label=str(field(item, "server_label", "")),
        name=str(field(item, "name", "")),
        arguments=decode_arguments(raw),
        output=field(item, "output"),
        error=error,
        status=str(status)
        if status is not None
        else ("failed" if error else "completed"),
        raw_arguments=raw if isinstance(raw, str) else json.dumps(raw, default=str),
        approval_request_id=field(item, "approval_request_id"),
    )


def mcp_approval_request(item: Any) -> McpApprovalRequest:
    raw = field(item, "arguments", "")
    return McpApprovalRequest(
        request_id=str(field(item, "id", "")),
        server_label=str(field(item, "server_label", "")),
        name=str(field(item, "name", "")),
        arguments=decode_arguments(raw),
        raw_arguments=raw if isinstance(raw, str) else json.dumps(raw, default=str),
    )


def listed_tool_names(item: Any) -> tuple[str, ...]:
    names = (field(tool, "name") for tool in field(item, "tools", []) or [])
    return tuple(str(name) for name in names if name)


class OpenAIMcpCodec:
    """``mcp``: one remote server (a URL or an OpenAI connector) per tool, told
    apart by ``server_label``.

    An ``mcp_approval_request`` is not a call: the run answers it with a
    human's decision (``adapters/openai/approvals.py``) and the call, if
    approved, comes back as an ``mcp_call`` on the next response.
    """

    kind = "mcp"
    item_types = ("mcp_call", "mcp_list_tools", "mcp_approval_request")
    include: tuple[str, ...] = ()

    def serialize(self, tool: HostedTool[Any]) -> dict[str, Any]:
        config = _config(tool)
        spec: dict[str, Any] = {"type": "mcp", "server_label": config.server_label}
        if config.connector_id is not None:
            spec["connector_id"] = config.connector_id
        else:
            spec["server_url"] = config.server_url
        if config.allowed_tools:
            spec["allowed_tools"] = list(config.allowed_tools)
        spec["require_approval"] = config.require_approval
        if config.headers:
            spec["headers"] = dict(config.headers)
        if config.authorization is not None:
            spec["authorization"] = config.authorization
        if config.server_description:
            spec["server_description"] = config.server_description
        return spec

    def tool_choice(self, tool: HostedTool[Any]) -> dict[str, Any]:
        return {"type": "mcp", "server_label": _config(tool).server_label}

    def matches(self, item: Any, tool: HostedTool[Any]) -> bool:
        return bool(field(item, "server_label") == _config(tool).server_label)

    def parse_call(self, item: Any) -> NativeCall | None:
        item_type = field(item, "type")
        if item_type in ("mcp_list_tools", "mcp_approval_request"):
            return None  # a listing; a request a human answers (approvals.py)
        call = mcp_call(item)
        params = {
            "server_label": call.server_label,
            "name": call.name,
            "arguments": call.arguments,
        }
        success = status_ok(call.status) and call.error is None
        where = f"MCP call '{call.name}' on '{call.server_label}'"
        if success:
            message = f"{where} completed."
            rendered = (call.output or "")[:_OUTPUT_PREVIEW]
        elif call.error is not None:
            message = f"{where} failed: {call.error}"
            rendered = message
        else:
            message = f"{where} {call.status}."
            rendered = message
        return NativeCall(call.call_id, params, call, success, message, rendered)

    def parse_output(
        self, response_items: Sequence[Any], tool: HostedTool[Any]
    ) -> McpResult | None:
        label = _config(tool).server_label
        calls: list[McpToolCall] = []
        listed: list[str] = []
        requests: list[McpApprovalRequest] = []
        list_errors: list[str] = []
        seen = False
        for item in response_items:
            item_type = field(item, "type")
            if item_type not in self.item_types or field(item, "server_label") != label:
                continue
            seen = True
            if item_type == "mcp_call":
                calls.append(mcp_call(item))
            elif item_type == "mcp_approval_request":
                requests.append(mcp_approval_request(item))
            else:
                listed.extend(n for n in listed_tool_names(item) if n not in listed)
                error = field(item, "error")
                if error:
                    list_errors.append(str(error))
        if not seen:
            return None
        return McpResult(
            calls=tuple(calls),
            listed_tools=tuple(listed),
            approval_requests=tuple(requests),
            list_errors=tuple(list_errors),
        )
