"""``CallTiming``: when the executor took a call up, and its policies' time."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime

from ..policies import ToolPolicy


class CallTiming:
    """A call's clock: when the executor took it up, and the time its
    policies took (checks, ``before_run``, ``on_result``)."""

    __slots__ = ("_began", "policy_ms", "started_at")

    def __init__(self) -> None:
        self.started_at = datetime.now(UTC)
        self._began = time.perf_counter()
        #: ``None`` while no policy applies to the call
        self.policy_ms: float | None = None

    @contextlib.contextmanager
    def policies(self, policies: tuple[ToolPolicy, ...]) -> Iterator[None]:
        """Add the time spent inside to ``policy_ms`` (when ``policies`` is
        not empty)."""
        if not policies:
            yield
            return
        began = time.perf_counter()
        try:
            yield
        finally:
            spent = (time.perf_counter() - began) * 1000
            self.policy_ms = (self.policy_ms or 0.0) + spent

    def elapsed_ms(self) -> float:
        """Milliseconds since the executor took the call up."""
        return (time.perf_counter() - self._began) * 1000
