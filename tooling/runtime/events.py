"""Runtime events and the sink protocol that records them.

The runtime never writes to a database: it emits events, and the caller's
sink decides what to do (the Django sink writes audit rows; tests collect
them in memory).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol

from .citations import Citation
from .deadlines import TokenUsage
from .results import ToolResult
from .trust import TrustLevel, WithheldTool


def _now() -> datetime:
    return datetime.now(UTC)


def _event_id() -> str:
    return str(uuid.uuid4())


_EVENT_NAMESPACE = uuid.UUID("5d0f3c3e-4f1a-4b8e-9c53-2f3a8e1b7c60")


def event_id_for(run_id: str, *parts: object) -> str:
    """A stable event id: the same run and step always give the same id.

    A resumed run re-derives the ids of the steps it replays, so a sink can
    tell an event it already recorded from a new one (``<run>/tool/3`` is the
    third tool call of the run, whichever process emits it).
    """
    name = "/".join([run_id, *(str(part) for part in parts)])
    return str(uuid.uuid5(_EVENT_NAMESPACE, name))


@dataclasses.dataclass(frozen=True, slots=True)
class ProviderAttempt:
    """One HTTP attempt of a provider request (retries are attempts too).

    ``status_code`` is ``None`` when no HTTP response came back (a timeout, a
    cut connection, the deadline); ``error`` says what went wrong, ``None``
    for the attempt that succeeded.
    """

    number: int
    status_code: int | None
    latency_ms: float
    error: str | None = None
    error_type: str | None = None
    request_id: str | None = None
    #: When the attempt started, in ms after the request's first attempt
    #: (the gaps between attempts are the retries' backoff).
    offset_ms: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "status_code": self.status_code,
            "latency_ms": round(self.latency_ms, 3),
            "offset_ms": None if self.offset_ms is None else round(self.offset_ms, 3),
            "error": self.error,
            "error_type": self.error_type,
            "request_id": self.request_id,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class RejectedToolParams:
    """Arguments that could not be parsed into the tool's params type."""

    raw_arguments: str
    error: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PromptRendered:
    prompt_name: str
    text: str
    tools_payload: tuple[Mapping[str, Any], ...]
    params: Mapping[str, Any]
    trust_level: TrustLevel = TrustLevel.STANDARD
    withheld_hosted_tools: tuple[WithheldTool, ...] = ()
    session_id: str | None = None
    created_at: datetime = dataclasses.field(default_factory=_now)
    event_id: str = dataclasses.field(default_factory=_event_id)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ProviderCallCompleted:
    """One request/response exchange with the provider.

    ``request`` is the body sent, except that ``input`` holds only the items
    added since the previous call (``input_offset`` says where they start).
    ``attempts`` lists every HTTP attempt, the successful one last.
    ``response`` is the body as received (it may hold text a database cannot
    store: the recording side converts it).
    """

    prompt_name: str
    turn: int
    request: Mapping[str, Any]
    input_offset: int
    response: Mapping[str, Any]
    response_id: str | None
    status: str
    usage: TokenUsage
    latency_ms: float
    citations: tuple[Citation, ...] = ()
    #: The text of each message the model marked ``phase: commentary``: kept
    #: on the record, never part of the answer.
    commentary: tuple[str, ...] = ()
    unknown_item_types: tuple[str, ...] = ()
    request_id: str | None = None
    attempts: tuple[ProviderAttempt, ...] = ()
    #: USD from ``usage`` and the run's prices (``None``: not priced).
    cost: Decimal | None = None
    #: When the request was first sent (``latency_ms`` runs from here to the
    #: reply, retries and their backoff included).
    started_at: datetime | None = None
    session_id: str | None = None
    created_at: datetime = dataclasses.field(default_factory=_now)
    event_id: str = dataclasses.field(default_factory=_event_id)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ProviderCallFailed:
    """A provider request that produced no usable response; ``phase`` is the
    evaluation phase it ends (``request``, ``response`` or ``deadline``)."""

    prompt_name: str
    turn: int
    request: Mapping[str, Any]
    input_offset: int
    error: str
    error_type: str
    status_code: int | None = None
    request_id: str | None = None
    latency_ms: float = 0.0
    attempts: tuple[ProviderAttempt, ...] = ()
    phase: str = "request"
    started_at: datetime | None = None
    session_id: str | None = None
    created_at: datetime = dataclasses.field(default_factory=_now)
    event_id: str = dataclasses.field(default_factory=_event_id)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToolInvoked:
    """A tool call, local or native, with the same shape for both.

    ``native`` calls were executed by the provider: ``provider`` and ``kind``
    say which capability; ``params`` come from the call's action.
    ``model_output`` is the exact text the model received for a local call
    (a resumed run replays it instead of running the call again).
    """

    prompt_name: str
    adapter: str
    name: str
    call_id: str | None
    params: Any
    result: ToolResult[Any]
    rendered_output: str
    native: bool = False
    provider: str | None = None
    kind: str = "function"
    turn: int = 0
    sequence: int = 0
    raw_arguments: str | None = None
    model_output: str = ""
    #: A native call's fee in USD (``None``: local, or not priced).
    cost: Decimal | None = None
    #: A local call's timing: when the executor took it up, how long it took
    #: until recorded (checks, handler, policies' bookkeeping), and the part
    #: of it spent in its policies (``check``, ``before_run``, ``on_result``;
    #: ``None`` when none applies). All ``None`` for native calls, which the
    #: provider ran inside its response.
    started_at: datetime | None = None
    duration_ms: float | None = None
    policy_ms: float | None = None
    session_id: str | None = None
    created_at: datetime = dataclasses.field(default_factory=_now)
    event_id: str = dataclasses.field(default_factory=_event_id)

    @property
    def success(self) -> bool:
        return self.result.success


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PolicyDenied:
    prompt_name: str
    policy_name: str
    tool_name: str
    call_id: str | None
    reason: str
    params: Any = None
    turn: int = 0
    sequence: int = 0
    session_id: str | None = None
    created_at: datetime = dataclasses.field(default_factory=_now)
    event_id: str = dataclasses.field(default_factory=_event_id)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequested:
    """A call waits for a human decision; the run stops after this event.

    ``kind`` is ``"function"`` (a local call a policy asked about: ``call_id``
    and ``sequence`` are the call's) or ``"mcp"`` (the provider's
    ``mcp_approval_request``: ``call_id`` is the request item's id,
    ``server_label`` its server, ``sequence`` is ``None``). ``approvers``,
    ``deadline_seconds`` and ``four_eyes`` come from the asking policy (empty
    / ``None``: the host's defaults).
    """

    prompt_name: str
    kind: str
    tool_name: str
    call_id: str | None
    turn: int
    reason: str
    params: Any = None
    raw_arguments: str = ""
    sequence: int | None = None
    policy_name: str = ""
    approvers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    deadline_seconds: int | None = None
    four_eyes: bool | None = None
    server_label: str = ""
    session_id: str | None = None
    created_at: datetime = dataclasses.field(default_factory=_now)
    event_id: str = dataclasses.field(default_factory=_event_id)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HostedToolWithdrawn:
    """A hosted tool used up its calls per run (``Prompt.hosted_tool_limits``):
    the request of ``turn`` and every later one no longer offer it.

    ``used`` is how many calls the provider ran; more than ``limit`` when one
    response ran more than it was allowed (``exceeded``). A limit of 0 gives
    ``turn`` 1: the tool was never offered.
    """

    prompt_name: str
    tool_name: str
    kind: str
    used: int
    limit: int
    turn: int
    session_id: str | None = None
    created_at: datetime = dataclasses.field(default_factory=_now)
    event_id: str = dataclasses.field(default_factory=_event_id)

    @property
    def exceeded(self) -> bool:
        return self.used > self.limit


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StateChanged:
    """A tool changed a session state slice (for example the plan).

    ``turn`` and ``sequence`` are those of the call that made the change."""

    key: str
    value: Any
    tool_name: str
    call_id: str | None
    turn: int = 0
    sequence: int = 0
    session_id: str | None = None
    created_at: datetime = dataclasses.field(default_factory=_now)
    event_id: str = dataclasses.field(default_factory=_event_id)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PromptExecuted:
    prompt_name: str
    text: str | None
    output: Any
    usage: TokenUsage
    turns: int
    session_id: str | None = None
    created_at: datetime = dataclasses.field(default_factory=_now)
    event_id: str = dataclasses.field(default_factory=_event_id)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PromptFailed:
    prompt_name: str
    phase: str
    message: str
    provider_payload: Mapping[str, Any]
    usage: TokenUsage
    session_id: str | None = None
    created_at: datetime = dataclasses.field(default_factory=_now)
    event_id: str = dataclasses.field(default_factory=_event_id)


class EventSink(Protocol):
    """Receives a run's events, in order, as they happen."""

    def emit(self, event: object) -> None: ...


class NullSink:
    def emit(self, event: object) -> None:
        return None


class InMemorySink:
    """Collects events in order; ``of_type`` filters them."""

    def __init__(self) -> None:
        self.events: list[object] = []

    def emit(self, event: object) -> None:
        self.events.append(event)

    def of_type(self, kind: type[Any]) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]
