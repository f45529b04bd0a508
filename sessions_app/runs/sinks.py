"""The Django event sink: runtime events -> audit rows and the session's end.

The recorders (``recording.py``) build each event's rows and the run's store
(``runs.store.RunStore``) writes them: at once outside a step (a provider
call), at the step's end inside one (a tool call); the events that end a run
end it through the store under the worker's claim, and so does
``ApprovalRequested``: the request's row and the session's pause commit
together. Events whose id is already recorded (a
resumed run replaying its native calls) are skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from django.db import transaction

from sessions_app.approvals import notifications
from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    ProviderCall,
    ToolInvocation,
)
from sessions_app.runs import recording, totals
from sessions_app.runs.store import RunStore
from tooling.runtime import (
    ApprovalRequested,
    HostedToolWithdrawn,
    PolicyDenied,
    PromptExecuted,
    PromptFailed,
    PromptRendered,
    ProviderCallCompleted,
    ProviderCallFailed,
    StateChanged,
    ToolInvoked,
)
from tooling.runtime.planning import PLAN_REDUCERS
from tooling.runtime.serde import dump
from tooling.runtime.text import storable_text

logger = logging.getLogger(__name__)

USAGE_FIELDS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")

_RECORDERS: dict[type[Any], Callable[..., Any]] = {
    PromptRendered: recording.record_prompt_rendered,
    ProviderCallCompleted: recording.record_provider_call,
    ProviderCallFailed: recording.record_provider_call_failed,
    ToolInvoked: recording.record_tool_invoked,
    PolicyDenied: recording.record_policy_denied,
    HostedToolWithdrawn: recording.record_hosted_tool_withdrawn,
    StateChanged: recording.record_state_changed,
}

# Events published by handlers whose effect is recorded as ``StateChanged``.
_RECORDED_AS_STATE = tuple(reducer.event_type for reducer in PLAN_REDUCERS)


def _priced(row: Any) -> bool:
    """A row the session's cost counts: a provider call that got a response
    (a failed request has no usage) or a native call."""
    if isinstance(row, ProviderCall):
        return row.response is not None
    return isinstance(row, ToolInvocation) and row.native


class DatabaseSink:
    """Writes each event of one claimed run."""

    def __init__(
        self,
        store: RunStore,
        *,
        recorded_event_ids: Iterable[str] = (),
        resumed: bool = False,
    ) -> None:
        self.session = store.session
        self.store = store
        store.on_commit = self._count
        self.recorded = {str(event_id) for event_id in recorded_event_ids}
        # The session's totals, summed from the provider calls this sink
        # writes; a resumed run's earlier calls are summed by the database.
        self.usage: dict[str, int] | None = (
            None if resumed else dict.fromkeys(USAGE_FIELDS, 0)
        )
        self.turns = 0
        self.cost = Decimal(0)  # provider calls and native fees (USD)
        self.unpriced = 0

    def _summed(self) -> dict[str, Any] | None:
        if self.usage is None:
            return None
        return totals.as_totals(
            self.usage, self.turns, cost=self.cost, unpriced=self.unpriced
        )

    def _count(self, rows: Iterable[Any]) -> None:
        """The rows of a commit the store made, added to the totals."""
        if self.usage is None:
            return
        for row in rows:
            if isinstance(row, ProviderCall):
                for field in USAGE_FIELDS:
                    self.usage[field] += getattr(row, field)
                self.turns += row.response is not None
            if _priced(row):
                if row.cost is None:
                    self.unpriced += 1
                else:
                    self.cost += row.cost

    def emit(self, event: object) -> None:
        event_id = getattr(event, "event_id", None)
        if event_id is not None and event_id in self.recorded:
            return
        if isinstance(event, ApprovalRequested):
            self._pause(event)
            return
        if isinstance(event, PromptExecuted):
            self.store.finish(
                status=AgentSession.Status.SUCCEEDED,
                output_text=event.text or "",
                output=dump(event.output),
                summed=self._summed(),
            )
            return
        if isinstance(event, PromptFailed):
            self.store.finish(
                status=AgentSession.Status.FAILED,
                phase=event.phase,
                message=event.message,
                payload=dump(dict(event.provider_payload)),
                summed=self._summed(),
            )
            return
        recorder = _RECORDERS.get(type(event))
        if recorder is None:
            # Events a handler publishes (context.publish) take effect through
            # their reducers, recorded as state changes; only the runtime's own
            # events must each have a recorder.
            if not isinstance(event, _RECORDED_AS_STATE) and type(
                event
            ).__module__.startswith("tooling.runtime"):
                logger.warning("No recorder for event %s", type(event).__name__)
            return
        self.store.add(recorder(session=self.session, event=event))

    def _pause(self, event: ApprovalRequested) -> None:
        """Record the approval request and pause the session, together: a
        worker that lost its lease (or a cancelled run) writes neither. The
        approvers hear of it once it is committed.

        A call id (or a policy name) its column cannot hold as it is
        (missing, longer than the column, or with a NUL byte or a lone
        surrogate) could not be matched with its decision on resume: such a
        run ends failed instead of pausing (pausing again on every resume)."""
        limit = ApprovalRequest._meta.get_field("call_id").max_length or 100
        call_id = event.call_id
        if call_id is None or len(call_id) > limit or storable_text(call_id)[1]:
            self._refuse_pause(
                f"The provider's call id for '{event.tool_name[:64]}' is "
                f"missing, longer than {limit} characters or not text a database "
                "stores"
            )
            return
        limit = ApprovalRequest._meta.get_field("policy_name").max_length or 64
        policy = event.policy_name
        if len(policy) > limit or storable_text(policy)[1]:
            self._refuse_pause(
                f"The name of the policy asking about '{event.tool_name[:64]}' "
                f"is longer than {limit} characters or not text a database stores"
            )
            return
        approval = recording.record_approval_requested(
            session=self.session, event=event
        )
        # durable, as a finish is: the run's steps and the pause are on disk
        # before any approver hears of the request
        self.store.pause(approval, summed=self._summed())
        transaction.on_commit(lambda: notifications.approval_requested(approval))

    def _refuse_pause(self, problem: str) -> None:
        self.store.finish(
            status=AgentSession.Status.FAILED,
            phase="response",
            message=f"{problem}: the run cannot pause on it for approval, and the "
            "call did not run.",
            summed=self._summed(),
        )
