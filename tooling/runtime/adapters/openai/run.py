"""One evaluation on the Responses API: the turn loop of ``OpenAIAdapter``.

Each turn sends the whole history (``ProviderCalls``: deadline-bounded,
retried, recorded), hands each output item to what handles its kind: function
calls (``function_calls.py``) and the calls the product executes
(``local_calls.py``) run through the ``ToolExecutor`` and their outputs are
replayed; hosted tools' calls are recorded (``hosted_calls.py``); MCP approval
requests are answered (``approvals.py``); until the model answers
(``answer.py`` reads a declared output).

The loop works on the decoded JSON of each response, never on the SDK's
lenient models, and treats every item as untrusted: a malformed function call
(arguments that are an object, a repeated ``call_id``, an unknown tool) becomes
a recorded, failed call the model can read; a native item a codec cannot read
becomes a recorded, failed native call; neither stops the run.

Event ids are derived from the run id and the step (``event_id_for``), and a
``RunRecord`` lets a resumed run replay what was recorded: recorded responses
are not requested again and recorded calls are not run again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from ...deadlines import TokenUsage
from ...errors import (
    BudgetExceededError,
    EvaluationPhase,
    PromptEvaluationError,
)
from ...events import (
    PromptExecuted,
    PromptRendered,
    event_id_for,
)
from ...execution.calls import FunctionCall
from ...execution.executor import ToolExecutor
from ...pricing import PriceSheet
from ...prompt import Prompt, PromptResponse, RenderedPrompt
from .answer import hosted_outputs, structured_output
from .approvals import McpApprovals
from .codecs.base import field
from .context import RunContext
from .costs import RunCosts
from .function_calls import function_call, function_call_output
from .hosted_calls import HostedCalls
from .local_calls import LocalCalls
from .parsing import (
    BASE_ITEM_TYPES,
    message_text,
    only_commentary,
    output_items,
    response_id,
)
from .provider_calls import ProviderCalls
from .quotas import HostedQuotas
from .redaction import redact_tools
from .resume import RunRecord

logger = logging.getLogger(__name__)

ADAPTER_NAME = "openai"


class SequenceCounter:
    """The run's tool-call sequence: 1, 2, 3 ... shared by native and local
    calls; ``peek`` tells the number the next call will get."""

    def __init__(self, start: int = 1) -> None:
        self._next = start

    def __iter__(self) -> Iterator[int]:
        return self

    def __next__(self) -> int:
        value = self._next
        self._next += 1
        return value

    def peek(self) -> int:
        return self._next


class Run:
    """The state of one evaluation."""

    def __init__(
        self,
        context: RunContext,
        prompt: Prompt,
        resume: RunRecord | None = None,
        pricing: PriceSheet | None = None,
    ) -> None:
        self.context = context
        self.prompt = prompt
        self.resume = resume or RunRecord()
        self.costs = RunCosts(pricing, context.adapter.model, context.tracker)
        self.sequence = SequenceCounter()
        self.call_ids: set[str] = set()
        self.provider = ProviderCalls(context, self.costs)

    @property
    def usage(self) -> TokenUsage:
        """The tokens the run's responses used so far."""
        return self.provider.usage

    def event_id(self, *parts: object) -> str:
        return event_id_for(self.context.run_id, *parts)

    def _fail(
        self, message: str, phase: Any, payload: Mapping[str, Any] | None = None
    ) -> PromptEvaluationError:
        return PromptEvaluationError(
            message, prompt_name=self.prompt.name, phase=phase, provider_payload=payload
        )

    def execute(self, rendered: RenderedPrompt, max_turns: int) -> PromptResponse:
        context = self.context
        adapter = context.adapter
        provider = self.provider
        body = adapter.request_preview(rendered)  # validates before any request
        provider.know_tools(body.get("tools", ()))
        rendered, native_tools = adapter.bind_native(rendered)
        context.sink.emit(
            PromptRendered(
                prompt_name=rendered.prompt_name,
                text=rendered.text,
                tools_payload=tuple(redact_tools(body.get("tools", ()))),
                params=rendered.params,
                trust_level=rendered.trust_level,
                withheld_hosted_tools=rendered.withheld_hosted_tools,
                session_id=context.session.session_id,
                event_id=self.event_id("rendered"),
            )
        )
        executor = ToolExecutor(
            prompt=self.prompt,
            rendered=rendered,
            session=context.session,
            sink=context.sink,
            adapter=adapter,
            adapter_name=adapter.name,
            deadline=context.deadline,
            budget_tracker=context.tracker,
            heartbeat=context.heartbeat,
            sequence=self.sequence,
            run_id=context.run_id,
            approvals=self.resume.approvals,
            answers=self.resume.answers,
        )
        mcp_approvals = McpApprovals(
            decisions=self.resume.approvals,
            rendered=rendered,
            sink=context.sink,
            session_id=context.session.session_id,
            run_id=context.run_id,
        )
        local = LocalCalls(
            executor, rendered, adapter.shell_executors, self.call_ids, self.sequence
        )
        quotas = HostedQuotas(
            rendered=rendered,
            serialize=adapter._serialize,
            sink=context.sink,
            session_id=context.session.session_id,
            run_id=context.run_id,
            ceiling=adapter.extra_request.get("max_tool_calls"),
        )
        hosted = HostedCalls(
            rendered=rendered,
            codec_for=adapter._codec,
            adapter_name=adapter.name,
            native_tools=native_tools,
            quotas=quotas,
            costs=self.costs,
            sequence=self.sequence,
            sink=context.sink,
            session=context.session,
            run_id=context.run_id,
        )
        history: list[Any] = list(body.pop("input"))
        recorded = self.resume.responses
        sent = 0
        for turn in range(1, max_turns + 1):
            if turn <= len(recorded):
                quotas.withdraw_used_up(turn)  # as the request was
                data: Mapping[str, Any] = provider.replay(recorded[turn - 1])
            else:
                self._check_limits(
                    "Deadline expired before provider request.", before_request=True
                )
                quotas.withdraw_used_up(turn)
                data = provider.send(quotas.request(body), history, sent, turn)
            sent = len(history)
            output = output_items(data)
            calls: list[FunctionCall] = []
            answers: list[Mapping[str, Any]] = []  # client calls not run
            for position, item in enumerate(output):
                item_type = field(item, "type")
                if item_type == "function_call":
                    calls.append(function_call(item, turn, self.call_ids))
                elif local.claims(item):  # apply_patch, local shell: run here
                    calls.append(local.call(item, turn))
                    quotas.count(calls[-1].name, turn)
                elif hosted.claims(item):
                    answer = hosted.record(item, turn, output)
                    if answer is not None:
                        answers.append(answer)
                elif item_type not in BASE_ITEM_TYPES:
                    logger.warning(
                        "Unknown output item type %r at %d", item_type, position
                    )
            history.extend(output)
            history.extend(answers)
            # answered from the record, or the run pauses for a human here
            approvals = mcp_approvals.answer(output, turn)
            history.extend(approvals)
            if not calls and not approvals and not answers:
                if only_commentary(output):
                    # Commentary is not an answer: the request goes again with
                    # it in the history and the model goes on (the turn limit
                    # and the budget bound how often).
                    continue
                return self._finish(rendered, data, turn)
            for call in calls:
                replayed = self.resume.tool_outputs.get(self.sequence.peek())
                if local.owns(call):
                    if replayed is not None:
                        next(self.sequence)
                        history.append(local.answer(call, replayed))
                    else:
                        history.append(local.answer(call, *local.execute(call)))
                    continue
                if replayed is not None:
                    next(self.sequence)
                    output_text = replayed
                else:
                    output_text = executor.execute(call).output
                history.append(function_call_output(call, output_text))
            if rendered.tool_choice is not None and rendered.tool_choice.forcing:
                body["tool_choice"] = context.adapter.tool_choice_payload(
                    rendered.tool_choice.relaxed(), rendered
                )
        raise self._fail(
            f"The model did not answer within the maximum of {max_turns} turn(s).",
            "limit",
        )

    def _check_limits(
        self,
        deadline_message: str,
        phase: EvaluationPhase = "deadline",
        *,
        before_request: bool = False,
    ) -> None:
        if self.context.heartbeat is not None:
            self.context.heartbeat()
        if self.context.deadline is not None and self.context.deadline.expired():
            raise self._fail(deadline_message, phase, self.context.deadline.payload())
        if self.context.tracker is not None:
            try:
                self.context.tracker.check()
                if before_request:  # the money budget (costs.py)
                    self.costs.check_before_request()
            except BudgetExceededError as error:
                raise self._fail(str(error), "budget") from error

    def _finish(
        self, rendered: RenderedPrompt, data: Mapping[str, Any], turns: int
    ) -> PromptResponse:
        self._check_limits("Deadline expired while finalizing provider response.")
        text = message_text(output_items(data))
        output: Any = None
        if rendered.output is not None:
            output = structured_output(rendered, text, self.prompt.name)
        by_tool = hosted_outputs(
            rendered, self.provider.items, self.context.adapter._codec
        )
        self.context.sink.emit(
            PromptExecuted(
                prompt_name=rendered.prompt_name,
                text=text,
                output=output,
                usage=self.usage,
                turns=turns,
                session_id=self.context.session.session_id,
                event_id=self.event_id("end"),
            )
        )
        return PromptResponse(
            prompt_name=rendered.prompt_name,
            text=text if rendered.output is None else None,
            output=output,
            hosted_outputs=MappingProxyType(by_tool),
            citations=tuple(self.provider.citations),
            usage=self.usage,
            turns=turns,
            response_id=response_id(data),
        )
