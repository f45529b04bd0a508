"""``ToolExecutor``: runs one function call under the prompt's policies.

Dispatch steps, in order: lookup, argument parsing, policy checks, deadline
check, context, the policies' ``before_run`` hooks, snapshot (the session
transaction), handler, policy update, restore on failure, ``ToolInvoked``,
response.

Every policy of the tool is checked: the first denial denies the call (and is
recorded as ``PolicyDenied``); otherwise a policy that *asks* pauses the run:
the call's transaction rolls back, ``ApprovalRequested`` is emitted and
``ApprovalPending`` stops the evaluation without recording the call. The
resumed run hands the human decisions (``approvals``, keyed by call id) to the
policies through ``ToolContext.approval``, each policy only the one made under
it; the first policy still asking pauses the run again (a call two approval
policies ask about needs both). A decision made for another call
(``ApprovalDecision.applies_to``: its id reused, or other arguments) rejects
the call instead. A tool failure never aborts
the run: unknown tools, malformed arguments, denials and handler errors all
come back to the model as failed results. Only an expired deadline, a
``PromptEvaluationError`` from a handler, or an exhausted budget stop the
evaluation (the call that stopped it is still recorded, as failed), and a
``RunAborted`` stops it without recording the call at all.

A handler may publish events through its context (``context.publish``): the
prompt's reducers apply them to the session at once, inside the call's
transaction, and the events reach the sink before the call's
``StateChanged`` and ``ToolInvoked``, only if the call succeeds.

Two nested session transactions frame each call. The inner one holds the
handler's state changes and is rolled back on *every* failed outcome; the
outer one also holds the call's audit events (``PolicyDenied``,
``StateChanged``, ``ToolInvoked``), so a sink writing to the same store
commits the state changes and their record together: after a crash either
both exist or neither, and a resumed run knows exactly which calls ran.

The steps live beside this module: ``arguments.py`` (parsing),
``policy_gate.py`` (checks, pauses, ``before_run``, ``on_result``),
``handler.py`` (the handler), ``recording.py`` (the call's events).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from types import MappingProxyType
from typing import Any

from ..approvals import Decisions, decisions_on, mismatch_reason
from ..context import ToolContext
from ..deadlines import BudgetTracker, Deadline
from ..errors import (
    ApprovalPending,
    BudgetExceededError,
    PromptEvaluationError,
)
from ..events import EventSink, RejectedToolParams
from ..prompt import Prompt, RenderedPrompt
from ..reducers import Reducer, prompt_reducers, reduce_event
from ..results import ToolResult
from ..session import SessionProtocol
from ..text import shortened
from .arguments import parse_arguments
from .calls import FunctionCall, ToolAnswers, ToolExecution
from .handler import run_handler
from .policy_gate import check_policies, policies_before_run, policies_on_result
from .recording import CallRecorder
from .timing import CallTiming
from .tracking import TrackingSession


class ToolExecutor:
    """Executes function calls for one evaluation."""

    def __init__(
        self,
        *,
        prompt: Prompt,
        rendered: RenderedPrompt,
        session: SessionProtocol,
        sink: EventSink,
        adapter: Any = None,
        adapter_name: str = "openai",
        deadline: Deadline | None = None,
        budget_tracker: BudgetTracker | None = None,
        heartbeat: Callable[[], None] | None = None,
        sequence: Iterator[int] | None = None,
        run_id: str | None = None,
        approvals: Decisions | None = None,
        answers: ToolAnswers | None = None,
    ) -> None:
        self.prompt = prompt
        self.answers = answers
        self.rendered = rendered
        self.session = session
        self.sink = sink
        self.adapter = adapter
        self.adapter_name = adapter_name
        self.deadline = deadline
        self.budget_tracker = budget_tracker
        self.heartbeat = heartbeat
        self._sequence = sequence if sequence is not None else _counter()
        self.run_id = run_id or str(uuid.uuid4())
        self.reducers = prompt_reducers(prompt)
        self.approvals: Decisions = (
            approvals if approvals is not None else MappingProxyType({})
        )

    def _abort_if_expired(self, name: str) -> None:
        if self.deadline is not None and self.deadline.expired():
            raise PromptEvaluationError(
                f"Deadline expired before executing tool '{name}'.",
                prompt_name=self.rendered.prompt_name,
                phase="deadline",
                provider_payload=self.deadline.payload(),
            )

    def _check_budget(self) -> None:
        if self.budget_tracker is None:
            return
        try:
            self.budget_tracker.check()
        except BudgetExceededError as error:
            raise PromptEvaluationError(
                str(error), prompt_name=self.rendered.prompt_name, phase="budget"
            ) from error

    def execute(self, call: FunctionCall) -> ToolExecution:
        """Run one call and record it; return what the model will read."""
        self._abort_if_expired(call.name)
        self._check_budget()
        if self.heartbeat is not None:
            self.heartbeat()
        recorder = CallRecorder(
            call=call,
            sequence=next(self._sequence),
            timing=CallTiming(),
            sink=self.sink,
            session=self.session,
            prompt_name=self.rendered.prompt_name,
            adapter_name=self.adapter_name,
            run_id=self.run_id,
        )
        try:
            with self.session.transaction():  # the call's state and its record
                execution, stop = self._execute(call, recorder)
        except ApprovalPending as pending:
            # emitted after the rollback, so it is recorded in its own step
            self.sink.emit(pending.request)
            raise
        if stop is not None:
            raise stop
        return execution

    def _execute(
        self, call: FunctionCall, recorder: CallRecorder
    ) -> tuple[ToolExecution, PromptEvaluationError | None]:
        tool = self.rendered.tool(call.name)
        if call.problem is not None:
            return recorder.reject(tool, call.problem), None
        decided = decisions_on(self.approvals, call.call_id)
        if not all(
            decision.applies_to(
                kind="function",
                tool_name=call.name,
                arguments=call.arguments,
                turn=call.turn,
            )
            for decision in decided
        ):
            return recorder.reject(tool, mismatch_reason(call.call_id or "")), None
        if tool is None or tool.handler is None:
            if tool is None and self.rendered.hosted_tool(call.name) is None:
                message = (
                    f"Unknown tool '{shortened(call.name)}'. Available tools: "
                    f"{', '.join(t.name for t in self.rendered.tools) or 'none'}."
                )
            else:
                message = f"Tool '{call.name}' does not have a registered handler."
            return recorder.reject(tool, message), None
        params_or_error = parse_arguments(tool, call)
        if isinstance(params_or_error, RejectedToolParams):
            result: ToolResult[Any] = ToolResult.error(params_or_error.error)
            return recorder.finish(tool, params_or_error, result, {}), None
        params = params_or_error
        tracking = TrackingSession(self.session)
        published: list[object] = []

        def publish(event: object, reducers: Iterable[Reducer]) -> None:
            reduce_event(tracking, event, (*self.reducers, *reducers))
            published.append(event)

        context = ToolContext(
            prompt=self.prompt,
            rendered_prompt=self.rendered,
            adapter=self.adapter,
            session=tracking,
            deadline=self.deadline,
            budget_tracker=self.budget_tracker,
            heartbeat=self.heartbeat,
            call_id=call.call_id,
            publisher=publish,
        )
        policies = self.rendered.policies_by_tool.get(tool.name, ())
        timing = recorder.timing
        with timing.policies(policies):
            denial = check_policies(tool, params, policies, context, recorder, decided)
        if denial is not None:
            result = ToolResult.error(denial)
            return recorder.finish(tool, params, result, {}), None
        self._abort_if_expired(tool.name)
        with timing.policies(policies):
            refusal = policies_before_run(tool, params, policies, context, recorder)
        if refusal is not None:
            result = ToolResult.error(refusal)
            return recorder.finish(tool, params, result, {}), None
        with self.session.transaction() as transaction:
            answered = self.answers(tool, call.arguments) if self.answers else None
            if answered is not None:  # from another run's record (a replay)
                result, stop = answered, None
            else:
                result, stop = run_handler(
                    tool,
                    params,
                    context,
                    session=self.session,
                    prompt_name=self.rendered.prompt_name,
                    deadline=self.deadline,
                )
            if result.success:
                with timing.policies(policies):
                    result = policies_on_result(tool, params, result, policies, context)
            if not result.success:
                transaction.rollback()
        written = tracking.written if result.success else {}
        events = published if result.success else []
        execution = recorder.finish(tool, params, result, written, events)
        return execution, stop


def _counter() -> Iterator[int]:
    value = 0
    while True:
        value += 1
        yield value
