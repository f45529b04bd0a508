"""What an interrupted run recorded, handed back to ``evaluate`` to resume it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ...approvals import Decisions
from ...execution.calls import ToolAnswers


@dataclasses.dataclass(frozen=True, slots=True)
class RunRecord:
    """The record a resumed evaluation continues from.

    ``responses`` are the decoded bodies of the provider calls that completed,
    turn 1 first; ``tool_outputs`` maps the sequence number of every recorded
    local tool call to the exact text the model received for it;
    ``approvals`` maps the call id of a function call (or the item id of an
    ``mcp_approval_request``) the run paused on to the human's decision, or
    to its decisions when several policies asked about the call: each
    ``ApprovalDecision`` names the policy it was made under (``policy_name``)
    and answers only that one (a decision naming none answers them all).

    ``evaluate(resume=record)`` rebuilds the conversation from these: it never
    requests a recorded response again and never runs a recorded call again.
    Everything else (the rendered prompt, the order of the calls, their
    sequence numbers and event ids) is derived the same way as the first time,
    so the history it sends next is the history the interrupted run would have
    sent. ``answers``, when set, answers the calls it has not recorded.
    """

    responses: tuple[Mapping[str, Any], ...] = ()
    tool_outputs: Mapping[int, str] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    approvals: Decisions = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    #: answers local calls instead of their handlers (a replay of another
    #: run: ``ToolExecutor``'s ``answers``); not part of the resumed record
    answers: ToolAnswers | None = None

    @property
    def turns(self) -> int:
        return len(self.responses)
