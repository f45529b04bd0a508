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
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, NoReturn

from .approvals import (
    ApprovalDecision,
    Decisions,
    decision_under,
    decisions_on,
    mismatch_reason,
)
from .context import ToolContext
from .deadlines import BudgetTracker, Deadline
from .errors import (
    ApprovalPending,
    BudgetExceededError,
    DeadlineExceededError,
    PromptEvaluationError,
    RunAborted,
    ToolValidationError,
)
from .events import (
    ApprovalRequested,
    EventSink,
    PolicyDenied,
    RejectedToolParams,
    StateChanged,
    ToolInvoked,
    event_id_for,
)
from .policies import PolicyDecision, ToolPolicy
from .prompt import Prompt, RenderedPrompt
from .reducers import Reducer, prompt_reducers, reduce_event
from .results import ToolResult
from .serde import SerdeError, parse
from .session import Resources, SessionProtocol, Transaction
from .text import sendable, sendable_text
from .tools import Tool

logger = logging.getLogger(__name__)


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


class _TrackingSession:
    """Passes everything through to the session, remembering which state keys
    a handler (or a policy) wrote."""

    def __init__(self, inner: SessionProtocol) -> None:
        self.inner = inner
        self.written: dict[str, Any] = {}

    @property
    def session_id(self) -> str:
        return self.inner.session_id

    @property
    def resources(self) -> Resources:
        return self.inner.resources

    def get_state(self, key: str) -> Any | None:
        return self.inner.get_state(key)

    def put_state(self, key: str, value: Any) -> None:
        self.inner.put_state(key, value)  # a refused write is not a change
        self.written[key] = value

    def reset(self) -> None:
        """Passed through; a reset is not recorded as ``StateChanged``."""
        self.written = {}
        self.inner.reset()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """A nested transaction; writes it rolls back are forgotten too."""
        before = dict(self.written)
        handle = _WatchedTransaction()
        try:
            with self.inner.transaction() as inner:
                handle.inner = inner
                yield handle
        except BaseException:
            self.written = before
            raise
        if handle.rolled_back:
            self.written = before


class _WatchedTransaction:
    def __init__(self) -> None:
        self.inner: Transaction | None = None
        self.rolled_back = False

    def rollback(self) -> None:
        self.rolled_back = True
        if self.inner is not None:
            self.inner.rollback()


# Answers a local call instead of its handler: ``(tool, raw arguments)`` to
# the result the model gets, or ``None`` to run the handler. A replay answers
# calls from the run it replays; policies still decide and record each call.
ToolAnswers = Callable[[Tool[Any, Any], str], ToolResult[Any] | None]


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
        sequence = next(self._sequence)
        timing = _Timing()
        try:
            with self.session.transaction():  # the call's state and its record
                execution, stop = self._execute(call, sequence, timing)
        except ApprovalPending as pending:
            # emitted after the rollback, so it is recorded in its own step
            self.sink.emit(pending.request)
            raise
        if stop is not None:
            raise stop
        return execution

    def _execute(
        self, call: FunctionCall, sequence: int, timing: _Timing
    ) -> tuple[ToolExecution, PromptEvaluationError | None]:
        tool = self.rendered.tool(call.name)
        if call.problem is not None:
            return self._reject(call, tool, call.problem, sequence, timing), None
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
            message = mismatch_reason(call.call_id or "")
            return self._reject(call, tool, message, sequence, timing), None
        if tool is None or tool.handler is None:
            if tool is None and self.rendered.hosted_tool(call.name) is None:
                message = (
                    f"Unknown tool '{_short(call.name)}'. Available tools: "
                    f"{', '.join(t.name for t in self.rendered.tools) or 'none'}."
                )
            else:
                message = f"Tool '{call.name}' does not have a registered handler."
            return self._reject(call, tool, message, sequence, timing), None
        params_or_error = self._parse(tool, call)
        if isinstance(params_or_error, RejectedToolParams):
            result: ToolResult[Any] = ToolResult.error(params_or_error.error)
            execution = self._finish(
                call, tool, params_or_error, result, {}, sequence, timing
            )
            return execution, None
        params = params_or_error
        tracking = _TrackingSession(self.session)
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
        with timing.policies(policies):
            denial = self._check_policies(
                tool, params, policies, context, call, sequence, decided
            )
        if denial is not None:
            result = ToolResult.error(denial)
            return self._finish(call, tool, params, result, {}, sequence, timing), None
        self._abort_if_expired(tool.name)
        with timing.policies(policies):
            refusal = self._before_run(tool, params, policies, context, call, sequence)
        if refusal is not None:
            result = ToolResult.error(refusal)
            return self._finish(call, tool, params, result, {}, sequence, timing), None
        with self.session.transaction() as transaction:
            answered = self.answers(tool, call.arguments) if self.answers else None
            if answered is not None:  # from another run's record (a replay)
                result, stop = answered, None
            else:
                result, stop = self._run_handler(tool, params, context)
            if result.success:
                with timing.policies(policies):
                    result = self._record_result(
                        tool, params, result, policies, context
                    )
            if not result.success:
                transaction.rollback()
        written = tracking.written if result.success else {}
        events = published if result.success else []
        execution = self._finish(
            call, tool, params, result, written, sequence, timing, events
        )
        return execution, stop

    def _reject(
        self,
        call: FunctionCall,
        tool: Tool[Any, Any] | None,
        message: str,
        sequence: int,
        timing: _Timing,
    ) -> ToolExecution:
        params = RejectedToolParams(call.arguments, message)
        result: ToolResult[Any] = ToolResult.error(message)
        return self._finish(call, tool, params, result, {}, sequence, timing)

    def _parse(self, tool: Tool[Any, Any], call: FunctionCall) -> Any:
        raw = call.arguments or ""
        try:
            decoded = json.loads(raw) if raw.strip() else {}
        except ValueError as error:
            return RejectedToolParams(
                raw, f"Tool validation failed: arguments are not valid JSON ({error})."
            )
        if not isinstance(decoded, dict):
            return RejectedToolParams(
                raw, "Tool validation failed: arguments must be a JSON object."
            )
        decoded = sendable(decoded)[0]  # "\\ud800" decodes to a lone surrogate
        if tool.params_type is None:
            if decoded:
                return RejectedToolParams(
                    raw, "Tool validation failed: Tool does not accept any arguments."
                )
            return None
        try:
            return parse(tool.params_type, decoded)
        except SerdeError as error:
            return RejectedToolParams(raw, f"Tool validation failed: {error}")

    def _check_policies(
        self,
        tool: Tool[Any, Any],
        params: Any,
        policies: tuple[ToolPolicy, ...],
        context: ToolContext,
        call: FunctionCall,
        sequence: int,
        decided: tuple[ApprovalDecision, ...] = (),
    ) -> str | None:
        """The first denial's reason, or ``None`` when every policy allows;
        raises ``ApprovalPending`` when none denies and one asks (the first
        that asks). Each policy sees only the human decision made under it
        (``decided``: the call's decisions)."""
        asking: tuple[ToolPolicy, PolicyDecision] | None = None
        for policy in policies:
            own = decision_under(decided, policy.name)
            checked = (
                context if own is None else dataclasses.replace(context, approval=own)
            )
            try:
                decision = policy.check(tool, params, context=checked)
            except RunAborted:
                raise
            except Exception as error:  # fail closed
                logger.exception(
                    "Policy %s raised while checking %s", policy.name, tool.name
                )
                decision = PolicyDecision.deny(
                    f"Policy '{policy.name}' could not decide: {error}"
                )
            if decision.outcome == "ask":
                asking = asking or (policy, decision)
                continue
            if not decision.allowed:
                reason = decision.reason or f"Policy '{policy.name}' denied the call."
                return self._denied(policy, tool, params, call, sequence, reason)
        if asking is not None:
            self._pause(tool, params, call, sequence, *asking)
        return None

    def _pause(
        self,
        tool: Tool[Any, Any],
        params: Any,
        call: FunctionCall,
        sequence: int,
        policy: ToolPolicy,
        decision: PolicyDecision,
    ) -> NoReturn:
        reason = decision.reason or f"Policy '{policy.name}' asks for a decision."
        request = ApprovalRequested(
            prompt_name=self.rendered.prompt_name,
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
        raise ApprovalPending(reason, request=request)

    def _before_run(
        self,
        tool: Tool[Any, Any],
        params: Any,
        policies: tuple[ToolPolicy, ...],
        context: ToolContext,
        call: FunctionCall,
        sequence: int,
    ) -> str | None:
        """Call each policy's optional ``before_run(tool, params, *, context)``
        once every policy allowed the call, just before its handler runs.

        It runs outside the handler's transaction: what it saves stays whether
        the handler succeeds or fails (``CallLimitPolicy`` counts calls that
        ran this way; ``on_result`` only sees successes). One that raises
        denies the call, fail-closed, and its siblings' saves roll back; the
        denial is recorded after that rollback, which would drop it too.
        """
        hooks = [
            (policy, hook)
            for policy in policies
            if (hook := getattr(policy, "before_run", None)) is not None
        ]
        if not hooks:
            return None
        failed: tuple[ToolPolicy, Exception] | None = None
        with context.session.transaction() as transaction:
            for policy, hook in hooks:
                try:
                    hook(tool, params, context=context)
                except RunAborted:
                    raise
                except Exception as error:
                    logger.exception("Policy %s raised in before_run", policy.name)
                    transaction.rollback()
                    failed = (policy, error)
                    break
        if failed is None:
            return None
        reason = f"Policy '{failed[0].name}' could not record the call: {failed[1]}"
        return self._denied(failed[0], tool, params, call, sequence, reason)

    def _denied(
        self,
        policy: ToolPolicy,
        tool: Tool[Any, Any],
        params: Any,
        call: FunctionCall,
        sequence: int,
        reason: str,
    ) -> str:
        """Record ``policy``'s denial of the call; return the reason."""
        self.sink.emit(
            PolicyDenied(
                prompt_name=self.rendered.prompt_name,
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

    def _record_result(
        self,
        tool: Tool[Any, Any],
        params: Any,
        result: ToolResult[Any],
        policies: tuple[ToolPolicy, ...],
        context: ToolContext,
    ) -> ToolResult[Any]:
        for policy in policies:
            try:
                policy.on_result(tool, params, result, context=context)
            except RunAborted:
                raise
            except Exception as error:  # the call fails rather than the run
                logger.exception("Policy %s raised in on_result", policy.name)
                return ToolResult.error(
                    f"Policy '{policy.name}' could not record the result: {error}"
                )
        return result

    def _run_handler(
        self, tool: Tool[Any, Any], params: Any, context: ToolContext
    ) -> tuple[ToolResult[Any], PromptEvaluationError | None]:
        """The handler's result, and the error that stops the run after the
        call is recorded (a ``PromptEvaluationError`` or an expired deadline)."""
        assert tool.handler is not None
        try:
            result = tool.handler(params, context=context)
        except RunAborted:
            raise
        except PromptEvaluationError as error:
            return ToolResult.error(error.message), error
        except DeadlineExceededError as error:
            stop = PromptEvaluationError(
                str(error) or f"Tool '{tool.name}' exceeded the deadline.",
                prompt_name=self.rendered.prompt_name,
                phase="deadline",
                provider_payload=self.deadline.payload() if self.deadline else None,
            )
            stop.__cause__ = error
            return ToolResult.error(stop.message), stop
        except ToolValidationError as error:
            return ToolResult.error(f"Tool validation failed: {error}"), None
        except TypeError as error:
            logger.exception("Tool %s raised TypeError", tool.name)
            message = f"Tool '{tool.name}' raised TypeError: {error}"
            return ToolResult.error(message), None
        except Exception as error:
            if isinstance(error, getattr(self.session, "lost_errors", ())):
                raise  # the session's store was lost: the run resumes
            logger.exception("Tool %s failed", tool.name)
            message = f"Tool '{tool.name}' execution failed: {error}"
            return ToolResult.error(message), None
        if not isinstance(result, ToolResult):
            message = (
                f"Tool '{tool.name}' returned {type(result).__name__}, "
                "not a ToolResult."
            )
            return ToolResult.error(message), None
        if not result.success and result.value is not None:
            return dataclasses.replace(result, value=None), None
        return result, None

    def _finish(
        self,
        call: FunctionCall,
        tool: Tool[Any, Any] | None,
        params: Any,
        result: ToolResult[Any],
        written: dict[str, Any],
        sequence: int,
        timing: _Timing,
        published: Sequence[object] = (),
    ) -> ToolExecution:
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
                prompt_name=self.rendered.prompt_name,
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


class _Timing:
    """A call's clock: when the executor took it up, and the time its
    policies took (checks, ``before_run``, ``on_result``)."""

    __slots__ = ("_began", "policy_ms", "started_at")

    def __init__(self) -> None:
        self.started_at = datetime.now(UTC)
        self._began = time.perf_counter()
        #: ``None`` while no policy applies to the call
        self.policy_ms: float | None = None

    @contextlib.contextmanager
    def policies(self, policies: tuple[ToolPolicy, ...]) -> Iterator[None]:
        if not policies:
            yield
            return
        began = time.perf_counter()
        try:
            yield
        finally:
            spent = (time.perf_counter() - began) * 1000
            self.policy_ms = (self.policy_ms or 0.0) + spent

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self._began) * 1000


def _short(name: str, limit: int = 80) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "\u2026"


def _counter() -> Iterator[int]:
    value = 0
    while True:
        value += 1
        yield value
