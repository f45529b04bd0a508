"""``CallRecorder``: the events that record one function call.

A call ends with, in order, the events its handler published and one
``StateChanged`` per state key it wrote (the executor hands these over only
for a call that succeeded), then its ``ToolInvoked``. A policy's denial
(``PolicyDenied``) is recorded when it is made, before those. The
``ApprovalRequested`` of a call a policy asks about is built here; the
executor emits it after the call's transaction rolled back, in its own step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..events import (
    ApprovalRequested,
    EventSink,
    PolicyDenied,
    RejectedToolParams,
    StateChanged,
    ToolInvoked,
    event_id_for,
)
from ..policies import PolicyDecision, ToolPolicy
from ..results import ToolResult
from ..session import SessionProtocol
from ..text import sendable_text
from ..tools import Tool
from .calls import FunctionCall, ToolExecution
from .timing import CallTiming


@dataclasses.dataclass(frozen=True, slots=True)
class CallRecorder:
    """Records ``call`` (the ``sequence``-th of the run ``run_id``) on ``sink``."""

    call: FunctionCall
    sequence: int
    timing: CallTiming
    sink: EventSink
    session: SessionProtocol
    prompt_name: str
    adapter_name: str
    run_id: str

    def reject(self, tool: Tool[Any, Any] | None, message: str) -> ToolExecution:
        """Record the call as refused before it ran, with ``message``."""
        params = RejectedToolParams(self.call.arguments, message)
        result: ToolResult[Any] = ToolResult.error(message)
        return self.finish(tool, params, result, {})

    def denied(
        self, policy: ToolPolicy, tool: Tool[Any, Any], params: Any, reason: str
    ) -> str:
        """Record ``policy``'s denial of the call; return the reason."""
        call, sequence = self.call, self.sequence
        self.sink.emit(
            PolicyDenied(
                prompt_name=self.prompt_name,
                policy_name=policy.name,
                tool_name=tool.name,
                call_id=call.call_id,
                reason=reason,
                params=params,
                turn=call.turn,
                sequence=sequence,
                session_id=self.session.session_id,
                event_id=event_id_for(self.run_id, "denial", sequence),
            )
        )
        return reason

    def approval_requested(
        self,
        tool: Tool[Any, Any],
        params: Any,
        policy: ToolPolicy,
        decision: PolicyDecision,
        reason: str,
    ) -> ApprovalRequested:
        """The request for a human decision ``policy`` asks about the call."""
        call, sequence = self.call, self.sequence
        return ApprovalRequested(
            prompt_name=self.prompt_name,
            kind="function",
            tool_name=tool.name,
            call_id=call.call_id,
            turn=call.turn,
            reason=reason,
            params=params,
            raw_arguments=call.arguments,
            sequence=sequence,
            policy_name=policy.name,
            approvers=dict(decision.approvers),
            deadline_seconds=decision.deadline_seconds,
            four_eyes=decision.four_eyes,
            session_id=self.session.session_id,
            # one request per policy that asks about the call, in turn
            event_id=event_id_for(self.run_id, "approval", sequence, policy.name),
        )

    def finish(
        self,
        tool: Tool[Any, Any] | None,
        params: Any,
        result: ToolResult[Any],
        written: dict[str, Any],
        published: Sequence[object] = (),
    ) -> ToolExecution:
        """Record the call's events, state changes and ``ToolInvoked``; return
        what the model will read."""
        call, sequence, timing = self.call, self.sequence, self.timing
        session_id = self.session.session_id
        for event in published:  # the handler's own events, in order
            self.sink.emit(event)
        for key, value in written.items():
            self.sink.emit(
                StateChanged(
                    key=key,
                    value=value,
                    tool_name=call.name,
                    call_id=call.call_id,
                    turn=call.turn,
                    sequence=sequence,
                    session_id=session_id,
                    event_id=event_id_for(self.run_id, "state", sequence, key),
                )
            )
        # The model's next request must be encodable whatever the tool said.
        output = sendable_text(result.model_text())[0]
        self.sink.emit(
            ToolInvoked(
                prompt_name=self.prompt_name,
                adapter=self.adapter_name,
                name=call.name,
                call_id=call.call_id,
                params=params,
                result=result,
                rendered_output=result.render(),
                turn=call.turn,
                sequence=sequence,
                raw_arguments=call.arguments,
                model_output=output,
                started_at=timing.started_at,
                duration_ms=timing.elapsed_ms(),
                policy_ms=timing.policy_ms,
                session_id=session_id,
                event_id=event_id_for(self.run_id, "tool", sequence),
            )
        )
        return ToolExecution(call=call, result=result, output=output)
