"""One evaluation on the Responses API: the turn loop of ``OpenAIAdapter``.

Each turn sends the whole history, records the provider call, turns native
call items into ``ToolInvoked`` events, runs the function calls through the
``ToolExecutor`` and replays their outputs, until the model answers.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import openai

from ...deadlines import BudgetTracker, Deadline, TokenUsage
from ...errors import BudgetExceededError, EvaluationPhase, PromptEvaluationError
from ...events import (
    EventSink,
    PromptExecuted,
    PromptRendered,
    ProviderCallCompleted,
    ProviderCallFailed,
    ToolInvoked,
)
from ...executor import FunctionCall, ToolExecutor
from ...hosted.base import HostedTool
from ...prompt import Prompt, PromptResponse, RenderedPrompt
from ...results import ToolResult
from ...serde import SerdeError, parse
from ...session import SessionProtocol
from .codecs.base import field
from .parsing import citations_from_items
from .redaction import redact_request, redact_tools

if TYPE_CHECKING:
    from .adapter import OpenAIAdapter

logger = logging.getLogger(__name__)

ADAPTER_NAME = "openai"
PROVIDER = "openai"
_IGNORED_ITEM_TYPES = frozenset({"reasoning", "message", "function_call"})

_JSON_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def _counter() -> Iterator[int]:
    return itertools.count(1)


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
    ) -> None:
        self.adapter = adapter
        self.prompt = prompt
        self.session = session
        self.sink = sink
        self.deadline = deadline
        self.tracker = tracker
        self.heartbeat = heartbeat
        self.usage = TokenUsage()
        self.sequence = _counter()
        self.all_items: list[Any] = []
        self.citations: list[Any] = []

    def _fail(
        self, message: str, phase: Any, payload: Mapping[str, Any] | None = None
    ) -> PromptEvaluationError:
        return PromptEvaluationError(
            message, prompt_name=self.prompt.name, phase=phase, provider_payload=payload
        )

    def execute(self, rendered: RenderedPrompt, max_turns: int) -> PromptResponse:
        adapter = self.adapter
        body = adapter.request_preview(rendered)  # validates before any request
        self.sink.emit(
            PromptRendered(
                prompt_name=rendered.prompt_name,
                text=rendered.text,
                tools_payload=tuple(redact_tools(body.get("tools", ()))),
                params=rendered.params,
                trust_level=rendered.trust_level,
                withheld_hosted_tools=rendered.withheld_hosted_tools,
                session_id=self.session.session_id,
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
        )
        hosted_by_type = self._hosted_by_item_type(rendered)
        history: list[Any] = list(body.pop("input"))
        sent = 0
        for turn in range(1, max_turns + 1):
            self._check_limits("Deadline expired before provider request.")
            response, data = self._send(body, history, sent, turn)
            sent = len(history)
            output = list(response.output or [])
            raw_output = list(data.get("output") or [])
            self.all_items.extend(output)
            calls: list[FunctionCall] = []
            for position, item in enumerate(output):
                item_type = field(item, "type")
                if item_type == "function_call":
                    calls.append(
                        FunctionCall(
                            name=str(field(item, "name", "")),
                            arguments=field(item, "arguments", "") or "",
                            call_id=field(item, "call_id") or field(item, "id"),
                            turn=turn,
                        )
                    )
                elif item_type in hosted_by_type:
                    self._record_native(item, hosted_by_type[item_type], rendered, turn)
                elif item_type not in _IGNORED_ITEM_TYPES:
                    logger.warning(
                        "Unknown output item type %r at %d", item_type, position
                    )
            history.extend(raw_output)
            if not calls:
                return self._finish(rendered, response, turn)
            for call in calls:
                execution = executor.execute(call)
                history.append(
                    {
                        "type": "function_call_output",
                        "call_id": call.call_id,
                        "output": execution.output,
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
        self, deadline_message: str, phase: EvaluationPhase = "request"
    ) -> None:
        if self.heartbeat is not None:
            self.heartbeat()
        if self.deadline is not None and self.deadline.expired():
            raise self._fail(deadline_message, phase, self.deadline.payload())
        if self.tracker is not None:
            try:
                self.tracker.check()
            except BudgetExceededError as error:
                raise self._fail(str(error), "budget") from error

    def _send(
        self, body: dict[str, Any], history: list[Any], sent: int, turn: int
    ) -> tuple[Any, dict[str, Any]]:
        request = {**body, "input": history}
        record = redact_request({**body, "input": history[sent:]})
        started = time.perf_counter()
        try:
            raw = self.adapter.client.responses.with_raw_response.create(
                model=body["model"],
                extra_body={k: v for k, v in request.items() if k != "model"},
            )
            response = raw.parse()
            data = raw.http_response.json()
        except openai.APIError as error:
            latency = (time.perf_counter() - started) * 1000
            raise self._provider_error(error, record, sent, turn, latency) from error
        latency = (time.perf_counter() - started) * 1000
        usage = TokenUsage.from_payload(data.get("usage"))
        self.usage = self.usage + usage
        if self.tracker is not None:
            self.tracker.record(usage)
        citations = citations_from_items(
            list(response.output or []), earlier=self.all_items
        )
        self.citations.extend(citations)
        known = set(_IGNORED_ITEM_TYPES)
        for codec in self.adapter.hosted_tool_codecs.values():
            known.update(codec.item_types)
        unknown = tuple(
            str(item.get("type"))
            for item in data.get("output") or []
            if item.get("type") not in known
        )
        self.sink.emit(
            ProviderCallCompleted(
                prompt_name=self.prompt.name,
                turn=turn,
                request=record,
                input_offset=sent,
                response=data,
                response_id=data.get("id"),
                status=str(data.get("status")),
                usage=usage,
                latency_ms=latency,
                citations=tuple(citations),
                unknown_item_types=unknown,
                request_id=raw.headers.get("x-request-id"),
                session_id=self.session.session_id,
            )
        )
        status = data.get("status")
        if status == "failed":
            failure = data.get("error") or {}
            raise self._fail(
                f"The provider reported the response as failed: "
                f"{failure.get('code') or 'error'}: "
                f"{failure.get('message') or 'no message'}",
                "response",
                {"response_id": data.get("id"), "error": failure},
            )
        if status == "incomplete":
            reason = (data.get("incomplete_details") or {}).get("reason") or "unknown"
            raise self._fail(
                f"The provider returned an incomplete response (reason: {reason}).",
                "response",
                {"response_id": data.get("id"), "reason": reason},
            )
        return response, data

    def _provider_error(
        self,
        error: openai.APIError,
        record: Mapping[str, Any],
        sent: int,
        turn: int,
        latency: float,
    ) -> PromptEvaluationError:
        status_code = getattr(error, "status_code", None)
        request_id = getattr(error, "request_id", None)
        if isinstance(error, openai.APITimeoutError):
            message = "The provider request timed out."
        elif isinstance(error, openai.APIConnectionError):
            message = "Could not connect to the provider."
        else:
            message = f"The provider rejected the request: {error.message}"
        self.sink.emit(
            ProviderCallFailed(
                prompt_name=self.prompt.name,
                turn=turn,
                request=record,
                input_offset=sent,
                error=message,
                error_type=type(error).__name__,
                status_code=status_code,
                request_id=request_id,
                latency_ms=latency,
                session_id=self.session.session_id,
            )
        )
        payload = {
            "error_type": type(error).__name__,
            "status_code": status_code,
            "code": getattr(error, "code", None),
            "request_id": request_id,
        }
        return self._fail(message, "request", payload)

    def _record_native(
        self,
        item: Any,
        candidates: Sequence[HostedTool[Any]],
        rendered: RenderedPrompt,
        turn: int,
    ) -> None:
        hosted = candidates[0]
        codec = self.adapter._codec(hosted, rendered.prompt_name)
        for candidate in candidates:
            if codec.matches(item, candidate):
                hosted = candidate
                break
        call = codec.parse_call(item)
        if call is None:
            return
        result: ToolResult[Any] = ToolResult(
            message=call.message,
            value=call.value if call.success else None,
            success=call.success,
        )
        self.sink.emit(
            ToolInvoked(
                prompt_name=rendered.prompt_name,
                adapter=self.adapter.name,
                name=hosted.name,
                call_id=call.call_id,
                params=dict(call.params),
                result=result,
                rendered_output=call.rendered,
                native=True,
                provider=PROVIDER,
                kind=hosted.kind,
                turn=turn,
                sequence=next(self.sequence),
                session_id=self.session.session_id,
            )
        )

    def _finish(
        self, rendered: RenderedPrompt, response: Any, turns: int
    ) -> PromptResponse:
        self._check_limits(
            "Deadline expired while finalizing provider response.", "response"
        )
        text = response.output_text or ""
        output: Any = None
        if rendered.output is not None:
            output = self._parse_output(rendered, text)
        hosted_outputs: dict[str, Any] = {}
        for hosted in rendered.hosted_tools:
            codec = self.adapter._codec(hosted, rendered.prompt_name)
            parsed = codec.parse_output(self.all_items, hosted)
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
            response_id=getattr(response, "id", None),
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


_NOTHING = object()


def _decode_json(text: str) -> Any:
    candidates = [text.strip()]
    candidates += [match.strip() for match in _JSON_FENCE.findall(text)]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    start = text.find("{")
    if start >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
            return value
        except ValueError:
            pass
    return _NOTHING
