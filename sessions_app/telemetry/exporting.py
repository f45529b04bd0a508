"""A finished session as an OpenTelemetry trace, read from its recorded rows
(docs/opentelemetry.md has the names and attributes).

    invoke_agent {prompt_ref}                 the run (the session)
    ├── chat {model}                          each provider call (CLIENT)
    │   └── execute_tool {name}               its turn's native (hosted) calls
    ├── execute_tool {name}                   each local tool call
    │     event gen_ai.guardrail.result       a policy's denial of that call
    └── approval {tool}                       each approval request's wait

A span's times come from its row (``sessions_app.audit.timings``); a native
call has none of its own and spans its provider call. The ids derive from
the session and the rows (``_span_id``): exported twice, a session lands on
the same trace with the same spans. The rows are read once the session
ended, so a resumed or replayed run exports each recorded call once.

Arguments and results (``gen_ai.tool.call.arguments``/``.result``) and
human-written decision reasons are exported only when
``WINK_OTEL_CAPTURE_CONTENT`` is on (the GenAI conventions' opt-in content);
prompts, outputs, provider bodies and headers never are. Recorded rows hold
no secret (the run redacts them before recording); content is redacted of
the provider's API key once more before it leaves.
"""

from __future__ import annotations

import collections
import datetime
import hashlib
import json
import logging
import threading
import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from django.conf import settings
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from sessions_app.approvals import outcome
from sessions_app.audit.timings import Span as Timing
from sessions_app.audit.timings import approval_span, provider_span, tool_span
from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    PolicyDenial,
    ProviderCall,
    ToolInvocation,
)
from tooling.runtime.adapters.openai.redaction import SecretRedactor

from . import rows
from .provider import SCOPE, tracer_provider, using

logger = logging.getLogger(__name__)

#: the longest captured argument or result, in characters
MAX_CONTENT = 8192
#: how many exported sessions a process remembers (exported once each)
REMEMBERED = 10_000

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_NS = datetime.timedelta(microseconds=1)

# hosted tool kinds by their GenAI tool type: a retrieval tool is a
# ``datastore``; other provider-side tools are ``extension``s
_DATASTORES = frozenset({"file_search"})

_exported: collections.OrderedDict[str, None] = collections.OrderedDict()
_exported_lock = threading.Lock()


def on_session_ended(*, session_id: Any, **_: Any) -> None:
    """The ``session_ended`` receiver: export the session if an endpoint is
    set; never raises (a failure is logged and the run goes on)."""
    try:
        export_session(session_id)
    except Exception:
        logger.exception("Could not export session %s to OpenTelemetry", session_id)


def export_session(session_id: Any) -> bool:
    """Queue the trace of the finished session ``session_id`` for export;
    ``False`` if nothing was (no endpoint, not finished, missing, or this
    process exported it already)."""
    provider = tracer_provider()
    if provider is None:
        return False
    key = str(session_id)
    with _exported_lock:
        if key in _exported:
            return False
    session = rows.finished_session(session_id)
    if session is None:
        return False
    with _exported_lock:
        if key in _exported:
            return False
        _exported[key] = None
        while len(_exported) > REMEMBERED:
            _exported.popitem(last=False)
    _Trace(session, provider.get_tracer(SCOPE)).export()
    return True


def forget_exported() -> None:
    """Forget which sessions this process exported (tests)."""
    with _exported_lock:
        _exported.clear()


def _ns(moment: datetime.datetime) -> int:
    return (moment - _EPOCH) // _NS * 1000


def _span_id(session_id: uuid.UUID, *parts: object) -> int:
    digest = hashlib.sha256("/".join(map(str, (session_id, *parts))).encode())
    return int.from_bytes(digest.digest()[:8], "big") or 1


def _usd(value: Decimal | None) -> float | None:
    return float(value) if value is not None else None


def _call_outcome(approval: ApprovalRequest) -> str | None:
    """What became of an approved call (``approvals.outcome``; ``None``
    for a request decided otherwise)."""
    found = outcome.of(approval)
    return None if found is None else found.value


def _attributes(pairs: Mapping[str, Any]) -> dict[str, Any]:
    """The pairs whose value OpenTelemetry takes (no ``None``, no empty
    text)."""
    return {k: v for k, v in pairs.items() if v is not None and v != ""}


class _Trace:
    """The spans of one finished session, from its rows."""

    def __init__(self, session: AgentSession, tracer: trace.Tracer) -> None:
        self.session = session
        self.tracer = tracer
        self.trace_id = session.id.int or 1
        self.capture = bool(settings.WINK_OTEL_CAPTURE_CONTENT)
        self.redactor = SecretRedactor([settings.OPENAI_API_KEY])
        self.rows = rows.read(session, capture=self.capture)
        self.approval_of = {a.call_id: a for a in self.rows.approvals if a.call_id}

    def export(self) -> None:
        session, read = self.session, self.rows
        calls = {call.turn: provider_span(call) for call in read.provider_calls}
        # (span, its timing) of each child of the run, ended with the run
        children: list[tuple[Span, Timing]] = []
        tools = [(tool, self._tool_timing(tool, calls)) for tool in read.tool_calls]
        approvals = [
            (
                approval,
                approval_span(approval, session.finished_at or approval.requested_at),
            )
            for approval in read.approvals
        ]
        start = session.started_at or session.created_at
        end = session.finished_at or start
        for timing in (
            *calls.values(),
            *(t for _, t in tools),
            *(t for _, t in approvals),
        ):
            start, end = min(start, timing.start), max(end, timing.end)

        root = self._start(
            f"invoke_agent {session.prompt_ref}",
            ("run",),
            start,
            kind=SpanKind.INTERNAL,
            attributes=self._run_attributes(),
        )
        in_run = trace.set_span_in_context(root)
        chats: dict[int, Span] = {}
        for call in read.provider_calls:
            chats[call.turn] = self._chat_span(call, calls[call.turn], in_run)

        denied: dict[str, list[PolicyDenial]] = collections.defaultdict(list)
        for denial in read.denials:
            denied[denial.call_id or ""].append(denial)
        for tool, timing in tools:
            chat = chats.get(tool.turn) if tool.native else None
            parent = trace.set_span_in_context(chat) if chat is not None else in_run
            span = self._tool_span(tool, timing, parent)
            for denial in denied.pop(tool.call_id, []) if tool.call_id else []:
                self._guardrail_event(span, denial)
            children.append((span, timing))
        for rest in denied.values():  # denials that no tool call row records
            for denial in rest:
                self._guardrail_event(root, denial)

        for approval, timing in approvals:
            span = self._start(
                f"approval {approval.tool_name}",
                ("approval", approval.pk),
                timing.start,
                kind=SpanKind.INTERNAL,
                context=in_run,
                attributes=self._approval_attributes(approval, timing),
            )
            children.append((span, timing))

        for span, timing in children:
            span.end(end_time=_ns(timing.end))
        for turn, chat in chats.items():
            chat.end(end_time=_ns(calls[turn].end))
        if read.dropped:
            root.set_attribute("wink.spans.dropped", read.dropped)
        if session.status == AgentSession.Status.FAILED:
            root.set_status(Status(StatusCode.ERROR, session.error_phase or "failed"))
        root.end(end_time=_ns(end))

    @staticmethod
    def _tool_timing(tool: ToolInvocation, calls: Mapping[int, Timing]) -> Timing:
        """A local call's own span; a native call's is its provider call's."""
        timing = tool_span(tool)
        if timing is None:
            timing = calls.get(tool.turn) or Timing(tool.created_at, 0.0)
        return timing

    def _chat_span(self, call: ProviderCall, timing: Timing, parent: Any) -> Span:
        model = call.request_model or self.session.model  # type: ignore[attr-defined]
        span = self._start(
            f"chat {model}",
            ("chat", call.pk),
            timing.start,
            kind=SpanKind.CLIENT,
            context=parent,
            attributes=self._chat_attributes(call),
        )
        if call.error:
            span.set_status(Status(StatusCode.ERROR, call.error_type or "error"))
        return span

    def _tool_span(self, tool: ToolInvocation, timing: Timing, parent: Any) -> Span:
        approval = self.approval_of.get(tool.call_id) if tool.call_id else None
        span = self._start(
            f"execute_tool {tool.name}",
            ("tool", tool.pk),
            timing.start,
            kind=SpanKind.INTERNAL,
            context=parent,
            attributes=self._tool_attributes(tool, approval),
        )
        if not tool.success:
            span.set_status(Status(StatusCode.ERROR, "tool_error"))
        return span

    def _start(
        self,
        name: str,
        key: Sequence[object],
        start: datetime.datetime,
        *,
        kind: SpanKind,
        attributes: Mapping[str, Any],
        context: Any = None,
    ) -> Span:
        with using(self.trace_id, _span_id(self.session.id, *key)):
            return self.tracer.start_span(
                name,
                context=context,
                kind=kind,
                attributes=_attributes(attributes),
                start_time=_ns(start),
            )

    def _content(self, text: str) -> str:
        text = self.redactor.text(text)
        return text if len(text) <= MAX_CONTENT else text[:MAX_CONTENT] + "…"

    def _run_attributes(self) -> dict[str, Any]:
        session = self.session
        usage = session.usage if isinstance(session.usage, dict) else {}
        return {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": "openai",
            "gen_ai.agent.name": session.prompt_ref,
            "gen_ai.conversation.id": str(session.id),
            "gen_ai.request.model": session.model,
            "gen_ai.usage.input_tokens": usage.get("input_tokens"),
            "gen_ai.usage.output_tokens": usage.get("output_tokens"),
            "error.type": session.error_phase or None,
            "wink.session.id": str(session.id),
            "wink.session.status": session.status,
            "wink.session.label": session.label,
            "wink.session.trust_level": session.trust_level,
            "wink.session.turns": session.turns,
            "wink.session.pauses": session.pauses,
            "wink.session.attempts": session.attempts,
            "wink.session.replay_of": (
                str(session.replay_of_id) if session.replay_of_id else None
            ),
            "wink.provider": session.provider,
            "wink.cost_usd": _usd(session.cost),
            "wink.unpriced_calls": session.unpriced_calls,
        }

    def _chat_attributes(self, call: ProviderCall) -> dict[str, Any]:
        return {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": call.request_model or self.session.model,  # type: ignore[attr-defined]
            "gen_ai.response.model": call.response_model,  # type: ignore[attr-defined]
            "gen_ai.response.id": call.response_id,
            "gen_ai.usage.input_tokens": call.input_tokens,
            "gen_ai.usage.output_tokens": call.output_tokens,
            "gen_ai.conversation.id": str(self.session.id),
            "error.type": (call.error_type or "error") if call.error else None,
            "http.response.status_code": call.status_code,
            "wink.turn": call.turn,
            "wink.response.status": call.status,
            "wink.request_id": call.request_id,
            "wink.usage.cached_tokens": call.cached_tokens,
            "wink.usage.reasoning_tokens": call.reasoning_tokens,
            "wink.attempts": call.attempt_count,
            "wink.latency_ms": call.latency_ms,
            "wink.cost_usd": _usd(call.cost),
        }

    def _tool_attributes(
        self, tool: ToolInvocation, approval: ApprovalRequest | None
    ) -> dict[str, Any]:
        if not tool.native:
            tool_type = "function"
        elif tool.kind in _DATASTORES:
            tool_type = "datastore"
        else:
            tool_type = "extension"
        pairs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool.name,
            "gen_ai.tool.call.id": tool.call_id,
            "gen_ai.tool.type": tool_type,
            "gen_ai.conversation.id": str(self.session.id),
            "error.type": None if tool.success else "tool_error",
            "wink.turn": tool.turn,
            "wink.tool.sequence": tool.sequence,
            "wink.tool.kind": tool.kind,
            "wink.tool.native": tool.native,
            "wink.tool.success": tool.success,
            "wink.policy_ms": tool.policy_ms,
            "wink.cost_usd": _usd(tool.cost),
        }
        if approval is not None:
            pairs.update(self._approval_fields(approval))
        if self.capture:
            arguments = tool.raw_arguments or (
                json.dumps(tool.params, ensure_ascii=False, default=str)
                if tool.params is not None
                else ""
            )
            result = tool.model_output or tool.rendered_output
            pairs["gen_ai.tool.call.arguments"] = self._content(arguments)
            pairs["gen_ai.tool.call.result"] = self._content(result)
        return pairs

    def _approval_fields(self, approval: ApprovalRequest) -> dict[str, Any]:
        decided_by = approval.decided_by
        pairs: dict[str, Any] = {
            "wink.approval.id": str(approval.pk),
            "wink.approval.status": approval.status,
            # ran, refused, not_run or unknown (an approved request only)
            "wink.approval.call_outcome": _call_outcome(approval),
            "wink.approval.policy": approval.policy_name,
            "wink.approval.four_eyes": approval.four_eyes,
            "wink.approval.decided_by": (
                decided_by.get_username() if decided_by is not None else None
            ),
        }
        if self.capture:
            pairs["wink.approval.reason"] = self._content(approval.decision_reason)
        return pairs

    def _approval_attributes(
        self, approval: ApprovalRequest, timing: Timing
    ) -> dict[str, Any]:
        return {
            "gen_ai.tool.name": approval.tool_name,
            "gen_ai.tool.call.id": approval.call_id,
            "gen_ai.conversation.id": str(self.session.id),
            "wink.turn": approval.turn,
            "wink.approval.kind": approval.kind,
            "wink.approval.wait_ms": timing.duration_ms,
            **self._approval_fields(approval),
        }

    def _guardrail_event(self, span: Span, denial: PolicyDenial) -> None:
        # a person's denial carries their words: content, exported when opted
        # in; a policy's own message always is
        approval = self.approval_of.get(denial.call_id) if denial.call_id else None
        by_person = approval is not None and approval.decided_by_id is not None
        span.add_event(
            "gen_ai.guardrail.result",
            attributes=_attributes(
                {
                    "wink.policy.name": denial.policy_name,
                    "wink.policy.decision": "deny",
                    "wink.policy.reason": (
                        self._content(denial.reason)
                        if self.capture or not by_person
                        else None
                    ),
                    "gen_ai.tool.name": denial.tool_name,
                    "gen_ai.tool.call.id": denial.call_id,
                    "wink.turn": denial.turn,
                }
            ),
            timestamp=_ns(denial.created_at),
        )
