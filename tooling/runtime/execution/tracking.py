"""``TrackingSession``: the session a handler sees, remembering what it wrote.

The executor records each state key a call wrote (``StateChanged``) only if
the call succeeds; writes a nested transaction rolls back are forgotten.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..session import Resources, SessionProtocol, Transaction


class TrackingSession:
    """Passes everything through to the session, remembering which state keys
    a handler (or a policy) wrote."""

    def __init__(self, inner: SessionProtocol) -> None:
        self.inner = inner
        self.written: dict[str, Any] = {}

    @property
    def session_id(self) -> str:
        return self.inner.session_id

    @property
    def resources(self) -> Resources:
        return self.inner.resources

    def get_state(self, key: str) -> Any | None:
        return self.inner.get_state(key)

    def put_state(self, key: str, value: Any) -> None:
        self.inner.put_state(key, value)  # a refused write is not a change
        self.written[key] = value

    def reset(self) -> None:
        """Passed through; a reset is not recorded as ``StateChanged``."""
        self.written = {}
        self.inner.reset()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """A nested transaction; writes it rolls back are forgotten too."""
        before = dict(self.written)
        handle = _WatchedTransaction()
        try:
            with self.inner.transaction() as inner:
                handle.inner = inner
                yield handle
        except BaseException:
            self.written = before
            raise
        if handle.rolled_back:
            self.written = before


class _WatchedTransaction:
    def __init__(self) -> None:
        self.inner: Transaction | None = None
        self.rolled_back = False

    def rollback(self) -> None:
        self.rolled_back = True
        if self.inner is not None:
            self.inner.rollback()
