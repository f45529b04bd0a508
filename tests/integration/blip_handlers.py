"""A handler module for the database blip soak (``test_database_blips.py``),
loaded by its workers through ``WINK_HANDLER_MODULES``: ``blips.count``
appends a line to the file named by ``WINK_BLIP_LOG`` when it starts and when
it finishes, keyed by the call's idempotency key, so the test can tell a
handler that ran twice to its end from one interrupted while it ran. Halfway
through, it reads the session's files (a query): a connection lost there
interrupts the handler itself."""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from typing import TYPE_CHECKING

from tooling.runtime import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from tooling.handlers import HandlerRegistry

# The handler's work, outside the database, before and after its query: a
# connection lost in the second part is noticed only when its step commits.
BEFORE_QUERY_SECONDS = 0.02
AFTER_QUERY_SECONDS = 0.08


@dataclasses.dataclass(frozen=True, slots=True)
class CountParams:
    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class Counted:
    text: str


def _note(line: str) -> None:
    # one small append per line: whole lines, whatever the other processes do
    with open(os.environ["WINK_BLIP_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{line}\n")


def count(params: CountParams, *, context: ToolContext) -> ToolResult[Counted]:
    run = uuid.uuid4().hex[:8]
    _note(f"start {context.idempotency_key} {run}")
    time.sleep(BEFORE_QUERY_SECONDS)  # the handler's work
    filesystem = context.filesystem
    if filesystem is not None:
        filesystem.exists("blips.txt")
    time.sleep(AFTER_QUERY_SECONDS)
    _note(f"end {context.idempotency_key} {run}")
    return ToolResult.ok(Counted(params.text))


def register_handlers(registry: HandlerRegistry) -> None:
    """``blips.count`` (an effect: it is not read-only)."""
    registry.register(
        "blips.count",
        Tool(name="count", description="Count a call.", handler=count),
    )
