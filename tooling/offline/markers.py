"""Behaviours of the real API a test or demo asks for with a marker in the
prompt (instructions or a user message); without one the offline model does
none of them.

- ``[offline:commentary]``: every response starts with a ``message`` whose
  ``phase`` is ``commentary`` (what the model is about to do); the answer is
  the ``final_answer`` message, as newer models send them.
- ``[offline:commentary_only]``: the first response is that commentary alone
  (no call, no answer); the next request gets the rest.
- ``[offline:status_<status>]`` (``queued``, ``in_progress``, ``cancelled``,
  ``failed``, ``incomplete``): every response has that status, with what the
  real API sends beside it: a background response still running (or
  cancelled) has no output and no usage; a failed one an ``error``; an
  incomplete one ``incomplete_details`` and its message cut short.
"""

from __future__ import annotations

from typing import Any

from .context import Context

MARKER_COMMENTARY = "[offline:commentary]"
MARKER_COMMENTARY_ONLY = "[offline:commentary_only]"
STATUSES = ("queued", "in_progress", "cancelled", "failed", "incomplete")
MARKER_STATUS = {status: f"[offline:status_{status}]" for status in STATUSES}


def comments(ctx: Context) -> bool:
    text = ctx.marker_text
    return MARKER_COMMENTARY in text or MARKER_COMMENTARY_ONLY in text


def only_comments(ctx: Context) -> bool:
    """Whether this response is commentary alone (the first turn, asked for)."""
    return MARKER_COMMENTARY_ONLY in ctx.marker_text and ctx.history.prior_turns == 0


def commentary_item(ctx: Context) -> dict[str, Any]:
    text = f'I will work on "{ctx.query}" with the tools offered, then answer.'
    return {
        "id": ctx.ids.new("msg"),
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "phase": "commentary",
        "content": [
            {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        ],
    }


def played_status(ctx: Context) -> str | None:
    for status, marker in MARKER_STATUS.items():
        if marker in ctx.marker_text:
            return status
    return None


def with_status(response: dict[str, Any], status: str) -> dict[str, Any]:
    """``response`` as the real API sends one with ``status``."""
    played = {**response, "status": status}
    if status in ("queued", "in_progress", "cancelled"):
        played.update(output=[], usage=None, background=True, completed_at=None)
    elif status == "failed":
        played.update(
            output=[],
            usage=None,
            completed_at=None,
            error={
                "code": "server_error",
                "message": "The offline provider played a failed response "
                f"({MARKER_STATUS['failed']}).",
            },
        )
    elif status == "incomplete":
        played.update(
            incomplete_details={"reason": "max_output_tokens"},
            output=[_cut(item) for item in response["output"]],
        )
    return played


def _cut(item: dict[str, Any]) -> dict[str, Any]:
    if item.get("type") != "message":
        return item
    content = [
        {**part, "text": part["text"][: len(part["text"]) // 2], "annotations": []}
        if part.get("type") == "output_text"
        else part
        for part in item.get("content") or []
    ]
    return {**item, "status": "incomplete", "content": content}
