"""One evaluation on the Responses API: the turn loop of ``OpenAIAdapter``.

Each turn sends the whole history (``Sender``: deadline-bounded, retried),
records the provider call, turns native call items into ``ToolInvoked``
events, runs the function calls through the ``ToolExecutor`` and replays their
outputs, until the model answers.

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

import json
import logging
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ...deadlines import BudgetTracker, Deadline, TokenUsage
from ...errors import (
    BudgetExceededError,
    EvaluationPhase,
    PromptEvaluationError,
)
from ...events import (
    EventSink,
    PromptExecuted,
    PromptRendered,
    ProviderCallCompleted,
    ProviderCallFailed,
    ToolInvoked,
    event_id_for,
)
from ...execution.calls import FunctionCall
from ...execution.executor import ToolExecutor
from ...hosted.base import HostedTool
from ...pricing import PriceSheet
from ...prompt import Prompt, PromptResponse, RenderedPrompt
from ...results import ToolResult
from ...serde import SerdeError, parse
from ...session import SessionProtocol
from ...text import sendable
from ...tools import Tool
from .approvals import McpApprovals
from .codecs.base import JsonObject, field
from .costs import RunCosts
from .local_calls import LocalCalls
from .native import typed_native_call
from .parsing import (
    citations_from_items,
    commentary_texts,
    message_text,
    only_commentary,
)
from .quotas import HostedQuotas
from .redaction import (
    SecretRedactor,
    redact_request,
    redact_response,
    redact_tools,
    tool_secrets,
)
from .resume import RunRecord
from .sending import Sender, SendFailure, excerpt
from .statuses import status_problem

if TYPE_CHECKING:
    from .adapter import OpenAIAdapter

logger = logging.getLogger(__name__)

ADAPTER_NAME = "openai"
PROVIDER = "openai"
_IGNORED_ITEM_TYPES = frozenset({"reasoning", "message", "function_call"})

_JSON_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


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
        adapter: OpenAIAdapter,
        prompt: Prompt,
        session: SessionProtocol,
        sink: EventSink,
        deadline: Deadline | None,
        tracker: BudgetTracker | None,
        heartbeat: Callable[[], None] | None,
        run_id: str,
        resume: RunRecord | None = None,
        pricing: PriceSheet | None = None,
    ) -> None:
        self.adapter = adapter
        self.prompt = prompt
        self.session = session
        self.sink = sink
        self.deadline = deadline
        self.tracker = tracker
        self.heartbeat = heartbeat
        self.run_id = run_id
        self.resume = resume or RunRecord()
        self.usage = TokenUsage()
        self.costs = RunCosts(pricing, adapter.model, tracker)
        self.last_cost: Decimal | None = None  # the latest response's
        self.sequence = SequenceCounter()
        self.all_items: list[Any] = []
        self.citations: list[Any] = []
        self.call_ids: set[str] = set()
        self.native_tools: dict[str, Tool[Any, Any]] = {}
        # Set once a reply held surrogate escapes: the history is then made
        # sendable before each request (it is never changed in place).
        self.scrub_history = False
        # The run's secrets (the API key; the tools' credentials once the
        # request is built) never reach an event: see ``_send``.
        self.redact = SecretRedactor([_api_key(adapter.request_client)])
        self.sender = Sender(
            adapter.request_client,
            max_retries=adapter.max_retries,
            timeout=adapter.timeout,
            deadline=deadline,
            heartbeat=heartbeat,
            poll_seconds=adapter.poll_seconds,
            # the secrets are known once the request is built (``execute``)
            redact=lambda text: self.redact.text(text),
        )

    def event_id(self, *parts: object) -> str:
        return event_id_for(self.run_id, *parts)

    def _fail(
        self, message: str, phase: Any, payload: Mapping[str, Any] | None = None
    ) -> PromptEvaluationError:
        return PromptEvaluationError(
            message, prompt_name=self.prompt.name, phase=phase, provider_payload=payload
        )

    def execute(self, rendered: RenderedPrompt, max_turns: int) -> PromptResponse:
        adapter = self.adapter
        body = adapter.request_preview(rendered)  # validates before any request
        self.redact = SecretRedactor(
            [*tool_secrets(body.get("tools", ())), _api_key(adapter.request_client)]
        )
        rendered, self.native_tools = adapter.bind_native(rendered)
        self.sink.emit(
            PromptRendered(
                prompt_name=rendered.prompt_name,
                text=rendered.text,
                tools_payload=tuple(redact_tools(body.get("tools", ()))),
                params=rendered.params,
                trust_level=rendered.trust_level,
                withheld_hosted_tools=rendered.withheld_hosted_tools,
                session_id=self.session.session_id,
                event_id=self.event_id("rendered"),
            )
        )
        executor = ToolExecutor(
            prompt=self.prompt,
            rendered=rendered,
            session=self.session,
            sink=self.sink,
            adapter=adapter,
            adapter_name=adapter.name,
            deadline=self.deadline,
            budget_tracker=self.tracker,
            heartbeat=self.heartbeat,
            sequence=self.sequence,
            run_id=self.run_id,
            approvals=self.resume.approvals,
            answers=self.resume.answers,
        )
        mcp_approvals = McpApprovals(
            decisions=self.resume.approvals,
            rendered=rendered,
            sink=self.sink,
            session_id=self.session.session_id,
            run_id=self.run_id,
        )
        local = LocalCalls(
            executor, rendered, adapter.shell_executors, self.call_ids, self.sequence
        )
        hosted_by_type = self._hosted_by_item_type(rendered)
        self.quotas = HostedQuotas(
            rendered=rendered,
            serialize=adapter._serialize,
            sink=self.sink,
            session_id=self.session.session_id,
            run_id=self.run_id,
            ceiling=adapter.extra_request.get("max_tool_calls"),
        )
        history: list[Any] = list(body.pop("input"))
        recorded = self.resume.responses
        sent = 0
        for turn in range(1, max_turns + 1):
            if turn <= len(recorded):
                self.quotas.withdraw_used_up(turn)  # as the request was
                data = self.redact(JsonObject.wrap(recorded[turn - 1]))
                self.scrub_history = self.scrub_history or _has_surrogates(data)
                self._account(data)
                self._check_status(data)
            else:
                self._check_limits(
                    "Deadline expired before provider request.", before_request=True
                )
                self.quotas.withdraw_used_up(turn)
                data = self._send(self.quotas.request(body), history, sent, turn)
            sent = len(history)
            output = _items(data)
            self.all_items.extend(output)
            calls: list[FunctionCall] = []
            answers: list[Mapping[str, Any]] = []  # client calls not run
            for position, item in enumerate(output):
                item_type = field(item, "type")
                if item_type == "function_call":
                    calls.append(self._function_call(item, turn))
                elif local.claims(item):  # apply_patch, local shell: run here
                    calls.append(local.call(item, turn))
                    self.quotas.count(calls[-1].name, turn)
                elif item_type in hosted_by_type:
                    answer = self._record_native(
                        item, hosted_by_type[item_type], rendered, turn, output
                    )
                    if answer is not None:
                        answers.append(answer)
                elif item_type not in _IGNORED_ITEM_TYPES:
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
                history.append(
                    {
                        "type": "function_call_output",
                        "call_id": call.call_id,
                        "output": output_text,
                    }
                )
            if rendered.tool_choice is not None and rendered.tool_choice.forcing:
                body["tool_choice"] = self.adapter.tool_choice_payload(
                    rendered.tool_choice.relaxed(), rendered
                )
        raise self._fail(
            f"The model did not answer within the maximum of {max_turns} turn(s).",
            "limit",
        )

    def _function_call(self, item: Any, turn: int) -> FunctionCall:
        """A function call item as the executor takes it; a malformed one carries
        the problem, which the executor records as the call's failure."""
        name = field(item, "name", "")
        call_id = field(item, "call_id") or field(item, "id")
        arguments = field(item, "arguments", "")
        problem: str | None = None
        if not isinstance(arguments, str):
            kind = "an object" if isinstance(arguments, Mapping) else "not a string"
            problem = (
                f"Tool validation failed: arguments must be a JSON-encoded string; "
                f"the model sent {kind}."
            )
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        if not isinstance(call_id, str) or not call_id:
            problem = "The function call has no call_id; it was not run."
            call_id = None
        elif call_id in self.call_ids:
            problem = (
                f"The call_id '{excerpt(call_id, 100)}' was already used by an "
                "earlier function call of this run; this call was not run."
            )
        else:
            self.call_ids.add(call_id)
        return FunctionCall(
            name=name if isinstance(name, str) else json.dumps(name, default=str),
            arguments=arguments,
            call_id=call_id,
            turn=turn,
            problem=problem,
        )

    def _hosted_by_item_type(
        self, rendered: RenderedPrompt
    ) -> dict[str, list[HostedTool[Any]]]:
        mapping: dict[str, list[HostedTool[Any]]] = {}
        for hosted in rendered.hosted_tools:
            codec = self.adapter._codec(hosted, rendered.prompt_name)
            for item_type in codec.item_types:
                mapping.setdefault(item_type, []).append(hosted)
        return mapping

    def _check_limits(
        self,
        deadline_message: str,
        phase: EvaluationPhase = "deadline",
        *,
        before_request: bool = False,
    ) -> None:
        if self.heartbeat is not None:
            self.heartbeat()
        if self.deadline is not None and self.deadline.expired():
            raise self._fail(deadline_message, phase, self.deadline.payload())
        if self.tracker is not None:
            try:
                self.tracker.check()
                if before_request:  # the money budget (costs.py)
                    self.costs.check_before_request()
            except BudgetExceededError as error:
                raise self._fail(str(error), "budget") from error

    def _account(self, data: Mapping[str, Any]) -> TokenUsage:
        """Add a response's usage and cost to the run's (``last_cost``) and
        collect its citations."""
        usage = TokenUsage.from_payload(data.get("usage"))
        self.usage = self.usage + usage
        self.last_cost = self.costs.provider_call(usage)
        if self.tracker is not None:
            self.tracker.record(usage)
        citations = citations_from_items(_items(data), earlier=self.all_items)
        self.citations.extend(citations)
        return usage

    def _send(
        self, body: dict[str, Any], history: list[Any], sent: int, turn: int
    ) -> dict[str, Any]:
        request = {**body, "input": history}
        if self.scrub_history:
            request = sendable(request)[0]
        # Recorded bodies, errors and attempts hold no secret: the tools'
        # credentials are masked by place, and every secret of the run
        # wherever else it appears (a provider may echo them).
        redact = self.redact
        record = redact(redact_request({**body, "input": history[sent:]}))
        started_at = datetime.now(UTC)
        try:
            reply = self.sender.send(request)
        except SendFailure as failure:
            message = redact.text(failure.message)
            self.sink.emit(
                ProviderCallFailed(
                    prompt_name=self.prompt.name,
                    turn=turn,
                    request=record,
                    input_offset=sent,
                    error=message,
                    error_type=failure.error_type,
                    status_code=failure.status_code,
                    request_id=failure.request_id,
                    latency_ms=sum(a.latency_ms for a in failure.attempts),
                    attempts=redact.attempts(failure.attempts),
                    phase=failure.phase,
                    started_at=started_at,
                    session_id=self.session.session_id,
                    event_id=self.event_id("provider", turn),
                )
            )
            raise self._fail(message, failure.phase, redact(failure.payload)) from None
        # Redacted as received: what is recorded is what the run acts on and
        # replays, so a resumed run (which reads the record) does the same.
        data = redact(redact_response(reply.data))
        self.scrub_history = self.scrub_history or reply.has_surrogates
        earlier = len(self.citations)
        usage = self._account(data)
        known = set(_IGNORED_ITEM_TYPES)
        for codec in self.adapter.hosted_tool_codecs.values():
            known.update(codec.item_types)
        unknown = tuple(
            str(field(item, "type"))
            for item in _items(data)
            if field(item, "type") not in known
        )
        self.sink.emit(
            ProviderCallCompleted(
                prompt_name=self.prompt.name,
                turn=turn,
                request=record,
                input_offset=sent,
                response=data,
                response_id=_text_or_none(data.get("id")),
                status=str(data.get("status")),
                usage=usage,
                latency_ms=reply.latency_ms,
                citations=tuple(self.citations[earlier:]),
                commentary=commentary_texts(_items(data)),
                unknown_item_types=unknown,
                request_id=reply.request_id,
                attempts=redact.attempts(reply.attempts),
                cost=self.last_cost,
                started_at=started_at,
                session_id=self.session.session_id,
                event_id=self.event_id("provider", turn),
            )
        )
        self._check_status(data)
        return data

    def _check_status(self, data: Mapping[str, Any]) -> None:
        """A 200 is not success: only a ``completed`` response is acted on
        (``statuses.status_problem``)."""
        problem = status_problem(data)
        if problem is not None:
            raise self._fail(problem[0], "response", problem[1])

    def _record_native(
        self,
        item: Any,
        candidates: Sequence[HostedTool[Any]],
        rendered: RenderedPrompt,
        turn: int,
        output: Sequence[Any] = (),
    ) -> Mapping[str, Any] | None:
        """Record one native call item; return the input item answering it
        when it is a client call the product did not run (``NativeCall.answer``)."""
        hosted = candidates[0]
        codec = self.adapter._codec(hosted, rendered.prompt_name)
        item_type = field(item, "type")
        alike: list[str] = []  # the tools that may have run it (quotas.py)
        try:
            matching = [c for c in candidates if codec.matches(item, c)]
            alike = [c.name for c in matching]
            hosted = self.quotas.attribute(matching or candidates, turn)
            # a kind whose call and output are separate items reads the response
            paired = getattr(codec, "parse_call_in", None)
            call = paired(item, output) if paired else codec.parse_call(item)
        except Exception as error:  # an item the codec cannot read: record it
            logger.warning("Could not read a %s item: %r", item_type, error)
            message = (
                f"The provider's {item_type} item could not be read "
                f"({type(error).__name__}: {excerpt(str(error), 200)})."
            )
            item_id = field(item, "id")
            self._emit_native(
                rendered,
                hosted,
                turn,
                call_id=item_id if isinstance(item_id, str) else None,
                params={},
                result=ToolResult.error(message),
                rendered_output="",
                alike=alike,
            )
            return None
        if call is None:
            return None
        params: Any = dict(call.params)
        result: ToolResult[Any] = ToolResult(
            message=call.message,
            value=call.value if call.success else None,
            success=call.success,
        )
        rendered_output = call.rendered
        native = self.native_tools.get(hosted.name)
        if native is not None:  # a NativeTool: its own params and result types
            params, result, rendered_output = typed_native_call(native, call, item)
        self._emit_native(
            rendered,
            hosted,
            turn,
            call_id=call.call_id,
            params=params,
            result=result,
            rendered_output=rendered_output,
            raw_params=call.params,
            alike=alike,
            answer=call.answer,
        )
        return call.answer

    def _emit_native(
        self,
        rendered: RenderedPrompt,
        hosted: HostedTool[Any],
        turn: int,
        *,
        call_id: str | None,
        params: Any,
        result: ToolResult[Any],
        rendered_output: str,
        raw_params: Mapping[str, Any] | None = None,
        alike: Sequence[str] = (),
        answer: Mapping[str, Any] | None = None,
    ) -> None:
        """Emit a native call's ``ToolInvoked`` with its fee, priced from
        ``raw_params`` (the codec's reading of the call; ``params`` may be a
        ``NativeTool``'s typed params). A call answered by the product
        (``answer``) ran nothing: no fee, and what the model received is kept
        as its ``model_output``."""
        sequence = next(self.sequence)
        if answer is not None:
            cost = self.costs.nothing_ran()
        else:
            cost = self.costs.native_call(
                hosted, raw_params if raw_params is not None else _mapping(params)
            )
        self.quotas.count(hosted.name, turn, alike=alike)
        self.sink.emit(
            ToolInvoked(
                prompt_name=rendered.prompt_name,
                adapter=self.adapter.name,
                name=hosted.name,
                call_id=call_id,
                params=params,
                result=result,
                rendered_output=rendered_output,
                model_output=""
                if answer is None
                else json.dumps(answer.get("output"), ensure_ascii=False),
                native=True,
                provider=PROVIDER,
                kind=hosted.kind,
                turn=turn,
                sequence=sequence,
                cost=cost,
                session_id=self.session.session_id,
                event_id=self.event_id("tool", sequence),
            )
        )

    def _finish(
        self, rendered: RenderedPrompt, data: Mapping[str, Any], turns: int
    ) -> PromptResponse:
        self._check_limits("Deadline expired while finalizing provider response.")
        text = message_text(_items(data))
        output: Any = None
        if rendered.output is not None:
            output = self._parse_output(rendered, text)
        hosted_outputs: dict[str, Any] = {}
        for hosted in rendered.hosted_tools:
            codec = self.adapter._codec(hosted, rendered.prompt_name)
            try:
                parsed = codec.parse_output(self.all_items, hosted)
            except Exception:  # a typed output is a convenience, not the record
                logger.warning("Could not build the %s output", hosted.kind)
                continue
            if parsed is not None:
                hosted_outputs[hosted.name] = parsed
        self.sink.emit(
            PromptExecuted(
                prompt_name=rendered.prompt_name,
                text=text,
                output=output,
                usage=self.usage,
                turns=turns,
                session_id=self.session.session_id,
                event_id=self.event_id("end"),
            )
        )
        return PromptResponse(
            prompt_name=rendered.prompt_name,
            text=text if rendered.output is None else None,
            output=output,
            hosted_outputs=MappingProxyType(hosted_outputs),
            citations=tuple(self.citations),
            usage=self.usage,
            turns=turns,
            response_id=_text_or_none(data.get("id")),
        )

    def _parse_output(self, rendered: RenderedPrompt, text: str) -> Any:
        assert rendered.output is not None
        decoded = _decode_json(text)
        if decoded is _NOTHING:
            raise self._fail("No JSON object found in the model's answer.", "response")
        if not isinstance(decoded, dict):
            raise self._fail(
                "The model's answer is JSON but not an object.", "response"
            )
        output_type = rendered.output.output_type
        if output_type is not None:
            try:
                return parse(output_type, decoded)
            except SerdeError as error:
                raise self._fail(
                    f"The model's answer does not match the output type: {error}",
                    "response",
                ) from error
        missing = [
            k for k in rendered.output.schema.get("required", []) if k not in decoded
        ]
        if missing:
            raise self._fail(
                f"The model's answer lacks required key(s): {', '.join(missing)}.",
                "response",
            )
        return decoded


def _api_key(client: Any) -> str | None:
    key = getattr(client, "api_key", None)
    return key if isinstance(key, str) else None


def _has_surrogates(data: Any) -> bool:
    return sendable(data)[1]


def _items(data: Mapping[str, Any]) -> list[Any]:
    output = data.get("output")
    return list(output) if isinstance(output, list) else []


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


_NOTHING = object()


def _decode_json(text: str) -> Any:
    candidates = [text.strip()]
    candidates += [match.strip() for match in _JSON_FENCE.findall(text)]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    start = text.find("{")
    if start >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
            return value
        except (ValueError, RecursionError):
            pass
    return _NOTHING
