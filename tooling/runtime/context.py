"""``ToolContext``: the immutable bundle every handler receives."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .deadlines import BudgetTracker, Deadline
from .session import Filesystem, Resources, SessionProtocol

if TYPE_CHECKING:
    from .prompt import Prompt, RenderedPrompt


@dataclasses.dataclass(frozen=True, slots=True)
class ToolContext:
    """What a handler may use: the prompt, the session, limits and resources."""

    prompt: Prompt
    rendered_prompt: RenderedPrompt | None
    adapter: Any
    session: SessionProtocol
    deadline: Deadline | None = None
    budget_tracker: BudgetTracker | None = None
    heartbeat: Callable[[], None] | None = None
    call_id: str | None = None

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

    def beat(self) -> None:
        """Tell the orchestrator the handler is still alive (no-op without one)."""
        if self.heartbeat is not None:
            self.heartbeat()
