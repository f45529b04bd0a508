"""Output items the product executes itself: ``apply_patch_call`` and a
``shell_call`` for a ``local`` shell.

Like function calls, each must be answered (``apply_patch_call_output``,
``shell_call_output``) before the model goes on; a request that leaves one
unanswered is refused with the real API's 400.

apply_patch, on the first file named in backticks in the prompt (``notes.md``
by default), one operation per turn:

1. a ``create_file``; when the file already exists, an ``update_file`` that
   changes its first line instead (the model works from the file's text when
   it has read it or created it, else from a guess);
2. after the create, that same ``update_file``;
3. when a patch is refused because the file must be read first, a
   ``read_file`` call (if offered), then the update again, built from what it
   read (a missing file gets a ``create_file``);
4. after a completed update, a patch whose context is not in the file (it
   fails with "Context not found"), so a failed patch can be shown and tested;
5. then the model answers.

Local shell: one call with three commands (one that lists the files, one that
counts the lines of the file, one that never ends and times out after half a
second), then a call the command policy refuses (``rm``), then an answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .context import Context
from .errors import OfflineRequestError

DEFAULT_PATH = "notes.md"
GUESSED_LINE = "# Notes"
EDIT_SUFFIX = " (edited offline)"
STALE_DIFF = "@@\n-This line is not in the file.\n+Neither is this one.\n"
CREATED_DIFF = "+# Notes\n+\n+Created by the offline model.\n"
CREATED_TEXT = "# Notes\n\nCreated by the offline model.\n"
SHELL_TIMEOUT_MS = 500
SHELL_OUTPUT_LIMIT = 4_096
REFUSED_PROGRAM = "rm -rf"
MAX_PATCHES = 6

_PATH = re.compile(r"`([A-Za-z0-9_][A-Za-z0-9_./-]*\.[A-Za-z0-9]+)`")
_READ_FIRST = "must be read before overwriting"
_MISSING = "does not exist; use create_file"
_EXISTS = "already exists; use update_file"


def target_path(ctx: Context) -> str:
    """The file the offline model patches: the first backticked file name in
    the instructions and messages, else ``notes.md``."""
    match = _PATH.search(ctx.marker_text)
    return match.group(1) if match else DEFAULT_PATH


def _input(ctx: Context) -> list[Mapping[str, Any]]:
    raw = ctx.request.get("input")
    return (
        [item for item in raw if isinstance(item, Mapping)]
        if isinstance(raw, list)
        else []
    )


def _answered(
    items: Sequence[Mapping[str, Any]], call_type: str, output_type: str
) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """Every ``call_type`` item of the history with its answer, in order; an
    unanswered call is refused like the real API refuses it."""
    answers = {
        item.get("call_id"): item for item in items if item.get("type") == output_type
    }
    pairs: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
    for item in items:
        if item.get("type") != call_type:
            continue
        if call_type == "shell_call" and not _local(item):
            continue
        answer = answers.get(item.get("call_id"))
        if answer is None:
            raise OfflineRequestError(
                400,
                f"No tool output found for {call_type} {item.get('call_id')}.",
                "input",
            )
        pairs.append((item, answer))
    return pairs


def _local(item: Mapping[str, Any]) -> bool:
    environment = item.get("environment")
    return isinstance(environment, Mapping) and environment.get("type") == "local"


def _read_content(items: Sequence[Mapping[str, Any]], path: str) -> str | None:
    """The text of the latest successful ``read_file`` of ``path``."""
    reads = {
        item.get("call_id")
        for item in items
        if item.get("type") == "function_call"
        and item.get("name") == "read_file"
        and _path_of(item.get("arguments")) == path
    }
    content: str | None = None
    for item in items:
        if item.get("type") != "function_call_output":
            continue
        if item.get("call_id") not in reads:
            continue
        text = item.get("output")
        if isinstance(text, str) and text.startswith("Read '"):
            content = text.split("\n\n", 1)[1] if "\n\n" in text else ""
    return content


def _path_of(arguments: Any) -> str | None:
    try:
        decoded = json.loads(arguments) if isinstance(arguments, str) else None
    except ValueError:
        return None
    path = decoded.get("path") if isinstance(decoded, Mapping) else None
    return path if isinstance(path, str) else None


def _update_diff(content: str | None) -> str:
    lines = [line for line in (content or "").split("\n") if line.strip()]
    first = lines[0] if lines else GUESSED_LINE
    return f"@@\n-{first}\n+{first}{EDIT_SUFFIX}\n"


def _patch_item(ctx: Context, operation: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": ctx.ids.new("apc"),
        "type": "apply_patch_call",
        "call_id": ctx.ids.new("call"),
        "status": "completed",
        "operation": operation,
    }


def _read_call(ctx: Context, path: str) -> dict[str, Any]:
    return {
        "id": ctx.ids.new("fc"),
        "type": "function_call",
        "call_id": ctx.ids.new("call"),
        "name": "read_file",
        "arguments": json.dumps({"path": path}),
        "status": "completed",
    }


def _operation(call: Mapping[str, Any]) -> Mapping[str, Any]:
    operation = call.get("operation")
    return operation if isinstance(operation, Mapping) else {}


def _patch_step(ctx: Context) -> list[dict[str, Any]]:
    items = _input(ctx)
    pairs = _answered(items, "apply_patch_call", "apply_patch_call_output")
    path = target_path(ctx)
    create = {"type": "create_file", "path": path, "diff": CREATED_DIFF}
    if not pairs:
        return [_patch_item(ctx, create)]
    if len(pairs) >= MAX_PATCHES:
        return []
    content = _read_content(items, path)
    if content is None and any(
        _operation(call).get("type") == "create_file"
        and answer.get("status") == "completed"
        for call, answer in pairs
    ):
        content = CREATED_TEXT  # what it created itself
    update = {"type": "update_file", "path": path, "diff": _update_diff(content)}
    last_call, last = pairs[-1]
    text = str(last.get("output") or "")
    if last.get("status") == "completed":
        if _operation(last_call).get("type") == "create_file":
            return [_patch_item(ctx, update)]
        if any("Context not found" in str(a.get("output")) for _c, a in pairs):
            return []
        stale = {"type": "update_file", "path": path, "diff": STALE_DIFF}
        return [_patch_item(ctx, stale)]
    if _READ_FIRST in text:
        if _read_content(items, path) is not None:
            return [_patch_item(ctx, update)]
        offered = any(
            tool.get("type") == "function" and tool.get("name") == "read_file"
            for tool in ctx.tools
        )
        return [_read_call(ctx, path)] if offered else []
    if _EXISTS in text:
        return [_patch_item(ctx, update)]
    if _MISSING in text:
        return [_patch_item(ctx, create)]
    return []


def _shell_item(ctx: Context, commands: list[str]) -> dict[str, Any]:
    return {
        "id": ctx.ids.new("sh"),
        "type": "shell_call",
        "call_id": ctx.ids.new("call"),
        "status": "completed",
        "action": {
            "commands": commands,
            "timeout_ms": SHELL_TIMEOUT_MS,
            "max_output_length": SHELL_OUTPUT_LIMIT,
        },
        "environment": {"type": "local"},
    }


def _shell_step(ctx: Context) -> list[dict[str, Any]]:
    pairs = _answered(_input(ctx), "shell_call", "shell_call_output")
    path = target_path(ctx)
    if not pairs:
        return [_shell_item(ctx, ["ls", f"wc -l {path}", f"tail -F {path}"])]
    if len(pairs) == 1:
        return [_shell_item(ctx, [f"{REFUSED_PROGRAM} {path}"])]
    return []


def _is_local_shell(tool: Mapping[str, Any]) -> bool:
    environment = tool.get("environment")
    return isinstance(environment, Mapping) and environment.get("type") == "local"


def local_items(ctx: Context, permitted: Callable[[str], bool]) -> list[dict[str, Any]]:
    """This turn's apply_patch and local shell calls (none once done)."""
    items: list[dict[str, Any]] = []
    if any(t.get("type") == "apply_patch" for t in ctx.tools) and permitted(
        "apply_patch"
    ):
        items.extend(_patch_step(ctx))
    if any(
        t.get("type") == "shell" and _is_local_shell(t) for t in ctx.tools
    ) and permitted("shell"):
        items.extend(_shell_step(ctx))
    return items


def local_summary(ctx: Context) -> str | None:
    """A sentence on the patches and local shell calls the product answered:
    each operation with its status, each call with its commands' outcomes."""
    items = _input(ctx)
    parts: list[str] = []
    for call, answer in _answered(items, "apply_patch_call", "apply_patch_call_output"):
        operation = call.get("operation")
        kind = operation.get("type") if isinstance(operation, Mapping) else "patch"
        parts.append(f"{kind} {answer.get('status') or 'failed'}")
    for _call, answer in _answered(items, "shell_call", "shell_call_output"):
        entries = answer.get("output")
        outcomes = [
            _outcome_label(entry.get("outcome"))
            for entry in (entries if isinstance(entries, list) else [])
            if isinstance(entry, Mapping)
        ]
        parts.append(f"shell ({', '.join(outcomes) or 'no output'})")
    return f"Local calls: {', '.join(parts)}." if parts else None


def _outcome_label(outcome: Any) -> str:
    if not isinstance(outcome, Mapping):
        return "?"
    if outcome.get("type") == "timeout":
        return "timeout"
    return f"exit {outcome.get('exit_code')}"


def awaits_answer(item: Mapping[str, Any]) -> bool:
    """Whether the model must wait for the product to answer ``item``."""
    kind = item.get("type")
    return kind in ("function_call", "apply_patch_call") or (
        kind == "shell_call" and _local(item)
    )


__all__ = ["awaits_answer", "local_items", "local_summary", "target_path"]
