"""One turn's provider call: sent or replayed, accounted and recorded.

``ProviderCalls`` sends a turn's request (``Sender``: deadline-bounded,
retried) and records it as ``ProviderCallCompleted`` or ``ProviderCallFailed``,
the body holding only the input items added since the previous request
(``input_offset``); a response a resumed run replays (``RunRecord.responses``)
is not requested, nor recorded, again. Either way the response is accounted
(its usage, cost, citations and output items add to the run's) and only a
``completed`` one is acted on (``statuses.status_problem``).

Recorded bodies, errors and attempts hold no secret (``redaction.py``): the
tools' credentials are masked by place, and every secret of the run (the API
key; the tools' credentials once ``know_tools`` has seen them) wherever else
it appears (a provider may echo them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from ...deadlines import TokenUsage
from ...errors import PromptEvaluationError
from ...events import (
    ProviderCallCompleted,
    ProviderCallFailed,
    event_id_for,
)
from ...text import sendable
from .codecs.base import JsonObject, field
from .context import RunContext
from .costs import RunCosts
from .parsing import (
    BASE_ITEM_TYPES,
    citations_from_items,
    commentary_texts,
    output_items,
    response_id,
)
from .redaction import SecretRedactor, redact_request, redact_response, tool_secrets
from .send_failures import SendFailure
from .sending import Sender
from .statuses import status_problem


class ProviderCalls:
    """The provider calls of one run and what their responses add up to:
    ``usage``, ``citations`` and every output item so far (``items``)."""

    def __init__(self, context: RunContext, costs: RunCosts) -> None:
        self.context = context
        adapter = context.adapter
        self.costs = costs
        self.usage = TokenUsage()
        self.last_cost: Decimal | None = None  # the latest response's
        self.items: list[Any] = []
        self.citations: list[Any] = []
        # Set once a reply held surrogate escapes: the history is then made
        # sendable before each request (it is never changed in place).
        self.scrub_history = False
        # The run's secrets (the API key; the tools' credentials once the
        # request is built) never reach an event: see ``send``.
        self.redact = SecretRedactor([_api_key(adapter.request_client)])
        self.sender = Sender(
            adapter.request_client,
            max_retries=adapter.max_retries,
            timeout=adapter.timeout,
            deadline=context.deadline,
            heartbeat=context.heartbeat,
            poll_seconds=adapter.poll_seconds,
            # the secrets are known once the request is built (``know_tools``)
            redact=lambda text: self.redact.text(text),
        )

    def know_tools(self, tools: Iterable[Any]) -> None:
        """Mask the credentials of the request's ``tools`` too, from now on."""
        self.redact = SecretRedactor(
            [*tool_secrets(tools), _api_key(self.context.adapter.request_client)]
        )

    def _fail(
        self, message: str, phase: Any, payload: Mapping[str, Any] | None = None
    ) -> PromptEvaluationError:
        return PromptEvaluationError(
            message,
            prompt_name=self.context.prompt_name,
            phase=phase,
            provider_payload=payload,
        )

    def replay(self, recorded: Mapping[str, Any]) -> JsonObject:
        """A recorded response, read as when it was received: redacted,
        accounted and its status checked (no request, no event)."""
        data: JsonObject = self.redact(JsonObject.wrap(recorded))
        self.scrub_history = self.scrub_history or sendable(data)[1]
        self.account(data)
        self._check_status(data)
        return data

    def account(self, data: Mapping[str, Any]) -> TokenUsage:
        """Add a response's usage and cost to the run's (``last_cost``) and
        collect its citations and output items."""
        usage = TokenUsage.from_payload(data.get("usage"))
        self.usage = self.usage + usage
        self.last_cost = self.costs.provider_call(usage)
        if self.context.tracker is not None:
            self.context.tracker.record(usage)
        items = output_items(data)
        self.citations.extend(citations_from_items(items, earlier=self.items))
        self.items.extend(items)
        return usage

    def send(
        self, body: dict[str, Any], history: list[Any], sent: int, turn: int
    ) -> dict[str, Any]:
        """Send ``turn``'s request (``body`` with the whole ``history``; the
        first ``sent`` items of it went with earlier requests) and return the
        response, recorded and accounted."""
        request = {**body, "input": history}
        if self.scrub_history:
            request = sendable(request)[0]
        redact = self.redact
        record = redact(redact_request({**body, "input": history[sent:]}))
        started_at = datetime.now(UTC)
        try:
            reply = self.sender.send(request)
        except SendFailure as failure:
            message = redact.text(failure.message)
            self.context.sink.emit(
                ProviderCallFailed(
                    prompt_name=self.context.prompt_name,
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
                    session_id=self.context.session.session_id,
                    event_id=event_id_for(self.context.run_id, "provider", turn),
                )
            )
            raise self._fail(message, failure.phase, redact(failure.payload)) from None
        # Redacted as received: what is recorded is what the run acts on and
        # replays, so a resumed run (which reads the record) does the same.
        data = redact(redact_response(reply.data))
        self.scrub_history = self.scrub_history or reply.has_surrogates
        earlier = len(self.citations)
        usage = self.account(data)
        self.context.sink.emit(
            ProviderCallCompleted(
                prompt_name=self.context.prompt_name,
                turn=turn,
                request=record,
                input_offset=sent,
                response=data,
                response_id=response_id(data),
                status=str(data.get("status")),
                usage=usage,
                latency_ms=reply.latency_ms,
                citations=tuple(self.citations[earlier:]),
                commentary=commentary_texts(output_items(data)),
                unknown_item_types=self._unknown_item_types(data),
                request_id=reply.request_id,
                attempts=redact.attempts(reply.attempts),
                cost=self.last_cost,
                started_at=started_at,
                session_id=self.context.session.session_id,
                event_id=event_id_for(self.context.run_id, "provider", turn),
            )
        )
        self._check_status(data)
        return data

    def _unknown_item_types(self, data: Mapping[str, Any]) -> tuple[str, ...]:
        """The types of the response's items neither the run nor any codec of
        the adapter reads."""
        known = set(BASE_ITEM_TYPES)
        for codec in self.context.adapter.hosted_tool_codecs.values():
            known.update(codec.item_types)
        return tuple(
            str(field(item, "type"))
            for item in output_items(data)
            if field(item, "type") not in known
        )

    def _check_status(self, data: Mapping[str, Any]) -> None:
        """A 200 is not success: only a ``completed`` response is acted on
        (``statuses.status_problem``)."""
        problem = status_problem(data)
        if problem is not None:
            raise self._fail(problem[0], "response", problem[1])


def _api_key(client: Any) -> str | None:
    key = getattr(client, "api_key", None)
    return key if isinstance(key, str) else None
