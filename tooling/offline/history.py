"""Reading a request's ``input``: the conversation the runtime replays.

The Responses API is used statelessly, so each request carries the whole
history: messages, the model's earlier output items and the tool outputs. This
module turns it into calls with their outcomes, classifying the runtime's
recoverable denials (``Tool 'x' requires: a, b`` and ``File 'p' must be read
before overwriting.``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import OfflineRequestError

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
    r"|Tool '[^']+' (execution failed|raised |returned |does not have)"
    # a human's "no" (tooling.runtime.approvals), or no decision in time
    r"|Denied by |No decision (within|in time)|The call id '[^']*' carries a human)"
)


@dataclasses.dataclass(frozen=True, slots=True)
class Failure:
    kind: str  # "requires" | "read_first" | "other"
    names: tuple[str, ...] = ()
    path: str | None = None


@dataclasses.dataclass(slots=True)
class Call:
    call_id: str
    name: str
    arguments: str
    key: str
    output: str | None = None
    failure: Failure | None = None

    @property
    def ok(self) -> bool:
        return self.output is not None and self.failure is None


@dataclasses.dataclass(slots=True)
class History:
    messages: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    calls: list[Call] = dataclasses.field(default_factory=list)
    hosted: list[Mapping[str, Any]] = dataclasses.field(default_factory=list)
    prior_turns: int = 0
    calling_turns: int = 0
    # mcp_approval_response items: approval_request_id -> approve
    approvals: dict[str, bool] = dataclasses.field(default_factory=dict)

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


def args_key(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except ValueError:
        return arguments


def _classify_output(text: str) -> Failure | None:
    """``None`` when a tool output reads as success, else what kind of failure."""
    head = text.lstrip()
    match = _REQUIRES.match(head)
    if match:
        names = tuple(
            name.strip().rstrip(".")
            for name in match["names"].split(",")
            if name.strip()
        )
        return Failure("requires", names=names)
    match = _READ_FIRST.match(head)
    if match:
        return Failure("read_first", path=match["path"])
    if _OTHER_FAILURE.match(head):
        return Failure("other")
    return None


def _approval_response(history: History, item: Mapping[str, Any]) -> None:
    request_id, approve = item.get("approval_request_id"), item.get("approve")
    if not isinstance(request_id, str) or not request_id:
        raise OfflineRequestError(
            400, "mcp_approval_response needs an approval_request_id.", "input"
        )
    if not isinstance(approve, bool):
        raise OfflineRequestError(
            400, "mcp_approval_response needs a boolean 'approve'.", "input"
        )
    history.approvals[request_id] = approve


def parse_history(raw: Any) -> History:
    if isinstance(raw, str):
        raw = [{"role": "user", "content": raw}]
    if not isinstance(raw, list):
        raise OfflineRequestError(
            400, "Invalid type for 'input': expected a string or an array.", "input"
        )
    history = History()
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
            elif kind == "mcp_approval_response":
                _approval_response(history, item)
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
                Call(
                    call_id=str(item.get("call_id") or item.get("id")),
                    name=str(item.get("name")),
                    arguments=arguments,
                    key=args_key(arguments),
                )
            )
        elif isinstance(kind, str) and kind != "message":
            history.hosted.append(item)
    requested = {
        str(item.get("id")) for item in history.hosted_of("mcp_approval_request")
    }
    for request_id in history.approvals:
        if request_id not in requested:
            raise OfflineRequestError(
                400,
                "No MCP approval request found for mcp_approval_response with "
                f"approval_request_id {request_id}.",
                "input",
            )
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
