"""``ToolContext``: the immutable bundle every handler receives."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from .deadlines import BudgetTracker, Deadline
from .reducers import Reducer, prompt_reducers, reduce_event
from .session import Filesystem, Resources, SessionProtocol

if TYPE_CHECKING:
    from .approvals import ApprovalDecision
    from .prompt import Prompt, RenderedPrompt


class Publisher(Protocol):
    """Delivers a handler's event: ``ToolExecutor`` provides one per call."""

    def __call__(self, event: object, reducers: Iterable[Reducer]) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class ToolContext:
    """What a handler may use: the prompt, the session, limits and resources.

    ``approval`` is a human's decision on this very call, when the run paused
    for one and was resumed: the executor hands each policy's ``check`` the
    decision made under that policy (``ApprovalDecision.policy_name``), so
    one approval never answers another policy (``ApprovalPolicy`` reads it).
    A handler's context carries none.
    """

    prompt: Prompt
    rendered_prompt: RenderedPrompt | None
    adapter: Any
    session: SessionProtocol
    deadline: Deadline | None = None
    budget_tracker: BudgetTracker | None = None
    heartbeat: Callable[[], None] | None = None
    call_id: str | None = None
    publisher: Publisher | None = None
    approval: ApprovalDecision | None = None

    @property
    def idempotency_key(self) -> str | None:
        """``<session>:<call_id>``: the same for every attempt at this call,
        including after a crash and resume. Pass it to outside systems that
        accept one, so a side effect happens once however often it is tried."""
        if not self.call_id:
            return None
        return f"{self.session.session_id}:{self.call_id}"

    @property
    def resources(self) -> Resources:
        return self.session.resources

    @property
    def filesystem(self) -> Filesystem | None:
        return self.resources.get(Filesystem)  # type: ignore[type-abstract]

    def publish(self, event: object, *, reducers: Iterable[Reducer] = ()) -> None:
        """Publish ``event`` from a handler.

        The reducers the prompt's sections register for its type, and
        ``reducers``, update the session's state at once (inside the call's
        transaction: a failed call undoes them). Under ``ToolExecutor`` the
        event then reaches the run's sink, before the call's ``StateChanged``
        and ``ToolInvoked``, if the call succeeds; a failed call's events are
        dropped with its state changes. A reducer raising
        ``ToolValidationError`` fails the call.
        """
        if self.publisher is not None:
            self.publisher(event, tuple(reducers))
            return
        reduce_event(self.session, event, (*prompt_reducers(self.prompt), *reducers))

    def beat(self) -> None:
        """Tell the orchestrator the handler is still alive (no-op without one)."""
        if self.heartbeat is not None:
            self.heartbeat()
