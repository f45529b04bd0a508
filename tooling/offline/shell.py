"""Output items of the hosted shell: ``shell_call`` + ``shell_call_output``.

One call runs three commands in the container: one that succeeds (listing
the container's files), one that fails with stderr and exit code 1, and one
that runs out of time, so every outcome the provider reports can be shown
and tested offline. A ``local`` shell is never run here: the product executes
those commands itself (see ``tooling.offline.patches``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .context import Context, digest

TIMEOUT_MS = 10_000
MAX_OUTPUT_LENGTH = 4_096
COMMANDS = ("ls -1 /mnt/data", "cat notes.txt", "sleep 120")


def _environment(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    environment = tool.get("environment")
    return environment if isinstance(environment, Mapping) else {}


def is_hosted(tool: Mapping[str, Any]) -> bool:
    """Whether the provider runs this shell tool's commands."""
    return _environment(tool).get("type", "container_auto") != "local"


def _container_id(tool: Mapping[str, Any], seed: str) -> str:
    container = _environment(tool).get("container_id")
    if isinstance(container, str) and container:
        return container
    return f"cntr_{digest(seed, 'shell')[:24]}"


def _listing(tool: Mapping[str, Any]) -> str:
    files = _environment(tool).get("file_ids")
    names = [str(f) for f in files or [] if f] if isinstance(files, list) else []
    return "".join(f"{name}\n" for name in names)


def shell_items(ctx: Context, tool: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A completed ``shell_call`` and its output: exit 0, exit 1, timeout."""
    call_id = ctx.ids.new("call")
    call = {
        "id": ctx.ids.new("sh"),
        "type": "shell_call",
        "call_id": call_id,
        "status": "completed",
        "action": {
            "commands": list(COMMANDS),
            "timeout_ms": TIMEOUT_MS,
            "max_output_length": MAX_OUTPUT_LENGTH,
        },
        "environment": {
            "type": "container_reference",
            "container_id": _container_id(tool, ctx.ids.seed),
        },
    }
    output = {
        "id": ctx.ids.new("sho"),
        "type": "shell_call_output",
        "call_id": call_id,
        "status": "completed",
        "max_output_length": MAX_OUTPUT_LENGTH,
        "output": [
            {
                "stdout": _listing(tool),
                "stderr": "",
                "outcome": {"type": "exit", "exit_code": 0},
            },
            {
                "stdout": "",
                "stderr": "cat: notes.txt: No such file or directory\n",
                "outcome": {"type": "exit", "exit_code": 1},
            },
            {"stdout": "", "stderr": "", "outcome": {"type": "timeout"}},
        ],
    }
    return [call, output]


def hosted_shell_items(
    ctx: Context, permitted: Callable[[str], bool]
) -> list[dict[str, Any]]:
    """The first hosted shell tool's items, once per conversation."""
    shells = [t for t in ctx.tools if t.get("type") == "shell" and is_hosted(t)]
    ran = any(
        is_hosted({"environment": item.get("environment") or {}})
        for item in ctx.history.hosted_of("shell_call")
    )
    if not shells or not permitted("shell") or ran:
        return []
    return shell_items(ctx, shells[0])
