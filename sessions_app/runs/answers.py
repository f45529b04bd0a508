"""A replay's answers: its local calls answered from the run it replays.

A call whose tool and arguments (as JSON, keys in any order) match a call
of the source run that its handler answered successfully gets the source's
answer: the exact text its model read and its value. Several such recorded
calls answer in their order, the last one again once they run out. A call
the source was refused (a policy's denial, bad arguments) or whose handler
failed is no answer: the replay decides it anew, and then it has none.

When the replay allows live calls, read-only tools (``Tool.read_only``: they
change nothing outside the run) always run live, so what they keep in the
run's own state and files stays consistent; other tools never do. A call
without an answer that may not run live fails with a message the model
reads. Policies decide and record every call as usual (``ToolExecutor``'s
``answers``; docs/replay.md).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from sessions_app.models import AgentSession, ToolInvocation
from tooling.runtime import Tool, ToolResult

# The most local calls of the source read (a run's calls are bounded by its
# turns; this bounds a pathological one).
MOST_CALLS = 5000


def arguments_key(name: str, arguments: str) -> tuple[str, str] | None:
    """A call's tool and arguments in a comparable form (``None``: its
    arguments are not a JSON value)."""
    try:
        decoded = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):  # not JSON, or nested too deeply
        return None
    return name, json.dumps(decoded, sort_keys=True, separators=(",", ":"))


class RecordedAnswers:
    """``ToolAnswers`` from the source run's local calls."""

    def __init__(self, recorded: list[dict[str, Any]], *, live_tools: bool) -> None:
        self.live_tools = live_tools
        self._answers: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for row in recorded:
            key = arguments_key(row["name"], row["raw_arguments"])
            if key is not None:
                self._answers[key].append(row)
        self._used: dict[tuple[str, str], int] = defaultdict(int)

    def __call__(self, tool: Tool[Any, Any], arguments: str) -> ToolResult[Any] | None:
        if self.live_tools and tool.read_only:
            return None  # runs live
        key = arguments_key(tool.name, arguments)
        answers = self._answers.get(key) if key is not None else None
        if answers:
            assert key is not None
            row = answers[min(self._used[key], len(answers) - 1)]
            self._used[key] += 1
            return ToolResult(
                message=row["model_output"],
                value=row["value"],
                # the model reads exactly what the source's model read
                exclude_value_from_context=True,
            )
        why = (
            "it is not read-only"
            if self.live_tools
            else "this replay does not run tools live"
        )
        return ToolResult.error(
            f"Replay: the replayed run has no answer of {tool.name} to these "
            f"arguments, and it is not run now ({why})."
        )


def answers_for(session: AgentSession) -> RecordedAnswers | None:
    """The answers of a replay (``None``: ``session`` replays nothing)."""
    if session.replay_of_id is None:
        return None
    recorded = list(
        ToolInvocation.objects.filter(
            session_id=session.replay_of_id, native=False, success=True
        )
        .order_by("sequence")
        .values("name", "raw_arguments", "model_output", "value")[:MOST_CALLS]
    )
    return RecordedAnswers(recorded, live_tools=bool(session.replay_live_tools))
