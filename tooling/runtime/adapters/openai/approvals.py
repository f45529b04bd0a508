"""Provider-side approvals: answering ``mcp_approval_request`` items.

An MCP server whose ``require_approval`` is ``"always"`` makes the provider
stop before each call and return an ``mcp_approval_request`` instead. The run
answers it on the next request with an ``mcp_approval_response`` when the
record holds a human decision for the item (``RunRecord.approvals``, keyed by
the item's id); without one it emits ``ApprovalRequested`` and stops
(``ApprovalPending``), exactly as a local call a policy asks about does. The
response that held the request is recorded, so the resumed run replays it and
answers from the decision.

A request the run answers "no" without asking anyone (its server is not
offered by the prompt, or its id carries a decision made for another call)
is recorded as a ``PolicyDenied`` with the reason, so the timeline shows it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NoReturn

from ...approvals import Decisions, decision_under, decisions_on, mismatch_reason
from ...errors import ApprovalPending, PromptEvaluationError
from ...events import ApprovalRequested, EventSink, PolicyDenied, event_id_for
from ...hosted.mcp import McpConfig
from ...prompt import RenderedPrompt
from ...text import sendable_text
from .codecs.base import field
from .codecs.mcp import decode_arguments

logger = logging.getLogger(__name__)

APPROVAL_REQUEST = "mcp_approval_request"
# The "policy" a request from a server the prompt does not offer is denied by.
OFFERED_SERVERS = "offered-mcp-servers"


class McpApprovals:
    """Answers a run's MCP approval requests from its record, or pauses."""

    def __init__(
        self,
        *,
        decisions: Decisions,
        rendered: RenderedPrompt,
        sink: EventSink,
        session_id: str | None,
        run_id: str,
    ) -> None:
        self.decisions = decisions
        self.rendered = rendered
        self.sink = sink
        self.session_id = session_id
        self.run_id = run_id
        # the catalog entry behind each server: it is the "policy" that asked
        self.tool_by_label = {
            hosted.config.server_label: hosted.name
            for hosted in rendered.hosted_tools
            if isinstance(hosted.config, McpConfig)
        }

    def answer(self, output: Sequence[Any], turn: int) -> list[dict[str, Any]]:
        """The ``mcp_approval_response`` items answering the requests in
        ``output`` (one per request id); raises ``ApprovalPending`` at the
        first one nobody decided. A decision made for another request (the
        id reused with another tool, server, turn or arguments; or the same id
        twice in one response for different calls) answers "no" (fail
        closed); so does a request from a server the prompt does not offer,
        without asking anyone. Both are recorded as denials. A request without
        an id cannot be answered: the run fails (phase ``response``) rather
        than end as if the model had finished."""
        by_id: dict[str, list[Any]] = {}
        for item in output:
            if field(item, "type") != APPROVAL_REQUEST:
                continue
            request_id = field(item, "id")
            if not isinstance(request_id, str) or not request_id:
                raise PromptEvaluationError(
                    "The provider asked for approval of an MCP call without an "
                    "approval request id; it cannot be answered and the call did "
                    "not run.",
                    prompt_name=self.rendered.prompt_name,
                    phase="response",
                )
            by_id.setdefault(request_id, []).append(item)
        answers: list[dict[str, Any]] = []
        for request_id, items in by_id.items():
            approve, reason = self._verdict(request_id, items, turn)
            answer: dict[str, Any] = {
                "type": "mcp_approval_response",
                "approval_request_id": request_id,
                "approve": approve,
            }
            if reason:
                answer["reason"] = sendable_text(reason)[0]
            answers.append(answer)
        return answers

    def _verdict(
        self, request_id: str, items: Sequence[Any], turn: int
    ) -> tuple[bool, str]:
        """Approve or not, and the reason, for the request ``items`` (one
        item, unless the provider repeated the id)."""
        label = _text(field(items[0], "server_label"))
        if label not in self.tool_by_label:
            reason = (
                f"MCP server '{label[:64]}' is not offered by this prompt; its "
                "approval request was answered no."
            )
            return self._deny(items[0], request_id, turn, OFFERED_SERVERS, reason)
        policy_name = self.tool_by_label[label]
        decision = decision_under(decisions_on(self.decisions, request_id), policy_name)
        if decision is None:
            self._pause(items[0], request_id, turn)
        for item in items:
            if _text(field(item, "server_label")) != label or not decision.applies_to(
                kind="mcp",
                tool_name=_text(field(item, "name")),
                arguments=_raw_arguments(item),
                turn=turn,
            ):
                reason = mismatch_reason(request_id)
                return self._deny(item, request_id, turn, policy_name, reason)
        if decision.approved:
            return True, decision.reason
        return False, decision.denial()

    def _deny(
        self, item: Any, request_id: str, turn: int, policy_name: str, reason: str
    ) -> tuple[bool, str]:
        """Answer "no" without a human, and record why (the timeline shows it
        as a policy denial; a replayed turn records it once: same event id)."""
        raw = field(item, "arguments", "")
        self.sink.emit(
            PolicyDenied(
                prompt_name=self.rendered.prompt_name,
                policy_name=policy_name,
                tool_name=_text(field(item, "name")),
                call_id=request_id,
                reason=reason,
                params=decode_arguments(raw) if isinstance(raw, str) else raw,
                turn=turn,
                session_id=self.session_id,
                event_id=event_id_for(self.run_id, "denial", "mcp", request_id),
            )
        )
        return False, reason

    def _pause(self, item: Any, request_id: str, turn: int) -> NoReturn:
        label = _text(field(item, "server_label"))
        name = _text(field(item, "name"))
        raw = field(item, "arguments", "")
        raw_text = _raw_arguments(item)
        reason = f"MCP server '{label}' asks for approval to call '{name}'."
        request = ApprovalRequested(
            prompt_name=self.rendered.prompt_name,
            kind="mcp",
            tool_name=name,
            call_id=request_id,
            turn=turn,
            reason=reason,
            params=decode_arguments(raw) if isinstance(raw, str) else raw,
            raw_arguments=raw_text,
            sequence=None,
            policy_name=self.tool_by_label.get(label, ""),
            server_label=label,
            session_id=self.session_id,
            # its own kind of key: an item id never collides with a sequence
            event_id=event_id_for(self.run_id, "approval", "mcp", request_id),
        )
        self.sink.emit(request)
        raise ApprovalPending(reason, request=request)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _raw_arguments(item: Any) -> str:
    """The request's arguments as the approver sees them (``""`` when the
    provider sent no JSON text)."""
    return _text(field(item, "arguments", ""))


__all__ = ["APPROVAL_REQUEST", "McpApprovals"]
