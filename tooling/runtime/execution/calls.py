"""A function call the model asked for, what the executor hands back for it,
and the hook that answers a call instead of its handler (``ToolAnswers``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..results import ToolResult
from ..tools import Tool


@dataclasses.dataclass(frozen=True, slots=True)
class FunctionCall:
    """A function call requested by the model.

    ``problem`` marks a call the adapter found malformed (arguments that are
    not a string, a missing or repeated ``call_id``): it is recorded as a
    failed call with that message and never run.
    """

    name: str
    arguments: str
    call_id: str | None
    turn: int = 0
    problem: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class ToolExecution:
    """What the executor hands back: the result and the text for the model."""

    call: FunctionCall
    result: ToolResult[Any]
    output: str


# Answers a local call instead of its handler: ``(tool, raw arguments)`` to
# the result the model gets, or ``None`` to run the handler. A replay answers
# calls from the run it replays; policies still decide and record each call.
ToolAnswers = Callable[[Tool[Any, Any], str], ToolResult[Any] | None]
