"""Errors raised by the runtime. Every library error derives from ``WinkError``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .events import ApprovalRequested

EvaluationPhase = Literal[
    "render", "request", "response", "tool", "budget", "limit", "deadline"
]


class WinkError(Exception):
    """Base class of every error the runtime raises on purpose."""


class PromptError(WinkError):
    """A prompt, section or tool is malformed.

    ``section_path`` names the section (dotted keys), ``placeholder`` the element
    at fault (a placeholder, a field, ``"description"``, ``"examples"`` ...).
    """

    def __init__(
        self,
        message: str,
        *,
        section_path: tuple[str, ...] = (),
        dataclass_type: type[Any] | None = None,
        placeholder: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.section_path = section_path
        self.dataclass_type = dataclass_type
        self.placeholder = placeholder


class PromptValidationError(PromptError):
    """Raised when a tool, section or prompt is built from invalid parts."""


class PromptRenderError(PromptError):
    """Raised when a prompt cannot be rendered with the given parameters."""


class ToolValidationError(WinkError):
    """Tool arguments (or a handler's own checks) were invalid.

    The executor turns it into a failed ``ToolResult`` the model can read.
    """


class DeadlineExceededError(WinkError):
    """A deadline passed while work was in progress."""


class BudgetExceededError(WinkError):
    """A token budget was exceeded."""

    def __init__(self, dimension: str) -> None:
        super().__init__(f"Budget exceeded: {dimension}")
        self.dimension = dimension


class PromptEvaluationError(WinkError):
    """The evaluation of a prompt stopped.

    ``phase`` tells where: ``render`` (before any request: validation of the
    rendered prompt, tools and options), ``request`` (talking to the provider),
    ``response`` (the provider's answer could not be used), ``tool``,
    ``budget``, ``limit`` (maximum turns) or ``deadline`` (the deadline
    passed; the message says at which step).
    """

    def __init__(
        self,
        message: str,
        *,
        prompt_name: str = "",
        phase: EvaluationPhase,
        provider_payload: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.prompt_name = prompt_name
        self.phase = phase
        self.provider_payload = dict(provider_payload or {})


class RunAborted(WinkError):
    """Stop the evaluation at once, recording nothing more.

    Raised by a heartbeat (``evaluate(heartbeat=...)``, ``ToolContext.beat()``)
    or by a session store whose host can no longer go on: the run was
    cancelled, another worker took it over, or the store went away. The
    executor never turns it into a tool failure and the adapter emits no
    ``PromptFailed`` for it: the caller decides how the run ends or resumes.
    A tool call it interrupts is rolled back as a whole (state and audit
    events), so a resumed run executes that call again.
    """


class ApprovalPending(RunAborted):
    """A policy asked for a human decision on a call: the run stops here.

    Nothing of the call is recorded (it did not run); ``request`` is the
    ``ApprovalRequested`` event the executor emits once the call's
    transaction is rolled back. A run resumed with the decision
    (``RunRecord.approvals``) reaches the same call again, with the same
    sequence number, and the policy then allows or denies it.
    """

    def __init__(self, message: str, *, request: ApprovalRequested) -> None:
        super().__init__(message)
        self.request = request
