"""A handler module for the crash-in-a-handler test
(``test_crash_in_a_handler.py``), loaded by its workers through
``WINK_HANDLER_MODULES``: ``slow.lookup`` is a read-only handler that appends
a line to the file named by ``WINK_SLOW_LOG`` when it starts and when it
finishes, keyed by the call's idempotency key, so the test can tell when a
worker is inside it and which calls ran again.

The call whose ``text`` equals ``WINK_SLOW_HOLD`` is the long one: it waits
(beating the run's heartbeat, as a well-behaved long handler does) until the
file named by ``WINK_SLOW_RELEASE`` exists, at most ``HOLD_SECONDS``. The
test SIGKILLs the worker while it waits, then creates the release file, so
the resumed run's second try of that call returns at once."""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from tooling.runtime import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from tooling.handlers import HandlerRegistry

# The most the held call waits for its release: far beyond the test's kill,
# which comes as soon as the call's start is in the log.
HOLD_SECONDS = 600.0
POLL_SECONDS = 0.05


@dataclasses.dataclass(frozen=True, slots=True)
class LookupParams:
    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class Found:
    text: str


def _note(what: str, key: str | None, run: str, text: str) -> None:
    # one small append per line: whole lines, whatever the other processes do
    with open(os.environ["WINK_SLOW_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{what} {key} {run} {text}\n")


def lookup(params: LookupParams, *, context: ToolContext) -> ToolResult[Found]:
    run = uuid.uuid4().hex[:8]
    key = context.idempotency_key
    _note("start", key, run, params.text)
    if params.text == os.environ.get("WINK_SLOW_HOLD"):
        release = Path(os.environ["WINK_SLOW_RELEASE"])
        deadline = time.monotonic() + HOLD_SECONDS
        while not release.exists() and time.monotonic() < deadline:
            context.beat()  # the lease outlives the handler while it works
            time.sleep(POLL_SECONDS)  # the handler's long, read-only work
    _note("end", key, run, params.text)
    return ToolResult.ok(Found(params.text))


def register_handlers(registry: HandlerRegistry) -> None:
    """``slow.lookup`` (read-only: it changes nothing outside the run)."""
    registry.register(
        "slow.lookup",
        Tool(
            name="lookup",
            description="Look a text up (slowly).",
            handler=lookup,
            read_only=True,
        ),
    )
