"""Provider-side approvals: answering ``mcp_approval_request`` items.

An MCP server whose ``require_approval`` is ``"always"`` makes the provider
stop before each call and return an ``mcp_approval_request`` instead. The run
answers it on the next request with an ``mcp_approval_response`` when the
record holds a human decision for the item (``RunRecord.approvals``, keyed by
the item's id); without one it emits ``ApprovalRequested`` and stops
(``ApprovalPending``), exactly as a local call a policy asks about does. The
response that held the request is recorded, so the resumed run replays it and
answers from the decision.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from ...approvals import ApprovalDecision, mismatch_reason
from ...errors import ApprovalPending, PromptEvaluationError
from ...events import ApprovalRequested, EventSink, event_id_for
from ...hosted.mcp import McpConfig
from ...prompt import RenderedPrompt
from ...text import sendable_text
from .codecs.base import field
from .codecs.mcp import decode_arguments

logger = logging.getLogger(__name__)

APPROVAL_REQUEST = "mcp_approval_request"


class McpApprovals:
    """Answers a run's MCP approval requests from its record, or pauses."""

    def __init__(
        self,
        *,
        decisions: Mapping[str, ApprovalDecision],
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
        without asking anyone. A request without an id cannot be answered: the
        run fails (phase ``response``) rather than end as if the model had
        finished."""
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
            return False, (
                f"MCP server '{label[:64]}' is not a tool of this prompt; its "
                "call was not approved."
            )
        decision = self.decisions.get(request_id)
        if decision is None:
            self._pause(items[0], request_id, turn)
        for item in items:
            if _text(field(item, "server_label")) != label or not decision.applies_to(
                kind="mcp",
                tool_name=_text(field(item, "name")),
                arguments=_raw_arguments(item),
                turn=turn,
            ):
                return False, mismatch_reason(request_id)
        if decision.approved:
            return True, decision.reason
        return False, decision.denial()

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
