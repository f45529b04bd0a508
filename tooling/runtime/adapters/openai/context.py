"""What every part of one evaluation shares (``RunContext``): built once by
``OpenAIAdapter.evaluate`` and handed to the run and its provider calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...deadlines import BudgetTracker, Deadline
from ...events import EventSink
from ...session import SessionProtocol

if TYPE_CHECKING:
    from .adapter import OpenAIAdapter


@dataclass(frozen=True, slots=True)
class RunContext:
    """One evaluation's adapter, prompt name, session and sink, its time and
    token bounds, its heartbeat and the id its events' ids derive from."""

    adapter: OpenAIAdapter
    prompt_name: str
    session: SessionProtocol
    sink: EventSink
    deadline: Deadline | None
    tracker: BudgetTracker | None
    heartbeat: Callable[[], None] | None
    run_id: str
