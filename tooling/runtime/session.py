"""Session state seen by tools: typed state slices, resources, transactions.

The runtime only knows these protocols. ``InMemorySession`` backs runtime
tests and the benchmark; the Django app provides a database-backed session
whose transaction is a savepoint, so every failed tool call rolls back its
state changes while the audit trail (written outside) survives.
"""

from __future__ import annotations

import contextlib
import copy
import uuid
from collections.abc import Iterator
from typing import Any, Protocol, TypeVar, runtime_checkable

T = TypeVar("T")


class Transaction(Protocol):
    """Handed out by ``SessionProtocol.transaction()``."""

    def rollback(self) -> None:
        """Discard every state change made inside the block when it exits."""


@runtime_checkable
class Filesystem(Protocol):
    """A session-scoped file store (paths are relative, '/'-separated)."""

    def exists(self, path: str) -> bool: ...
    def read(self, path: str) -> str: ...
    def write(self, path: str, content: str) -> None: ...
    def delete(self, path: str) -> None: ...
    def list(self, prefix: str = "") -> list[str]: ...


class Resources:
    """A typed registry of the objects tools may use (filesystem, clients ...)."""

    def __init__(self, *items: object) -> None:
        self._items: list[object] = list(items)

    def get(self, kind: type[T]) -> T | None:
        for item in self._items:
            if isinstance(item, kind):
                return item
        return None

    def add(self, item: object) -> None:
        self._items.append(item)

    def __iter__(self) -> Iterator[object]:
        return iter(self._items)


class SessionProtocol(Protocol):
    """What the executor, policies and tools need from a session.

    A session kept in a database may also name the exceptions that mean its
    store was lost (``lost_errors``, a tuple of exception types): a handler
    raising one of them (its own query cut with the connection) stops the
    run, which resumes and runs the call again, instead of failing the call
    as a tool error."""

    @property
    def session_id(self) -> str: ...

    @property
    def resources(self) -> Resources: ...

    def get_state(self, key: str) -> Any | None: ...

    def put_state(self, key: str, value: Any) -> None: ...

    def transaction(self) -> contextlib.AbstractContextManager[Transaction]: ...

    def reset(self) -> None:
        """Clear every state slice: policy state, the plan and any other
        slice. Resources (the files included) are kept."""


class _MemoryTransaction:
    def __init__(self) -> None:
        self.rolled_back = False

    def rollback(self) -> None:
        self.rolled_back = True


class InMemoryFilesystem:
    """A dictionary of path -> text; snapshots are cheap copies."""

    def __init__(self, files: dict[str, str] | None = None) -> None:
        self.files: dict[str, str] = dict(files or {})

    def exists(self, path: str) -> bool:
        return path in self.files

    def read(self, path: str) -> str:
        try:
            return self.files[path]
        except KeyError:
            raise FileNotFoundError(path) from None

    def write(self, path: str, content: str) -> None:
        self.files[path] = content

    def delete(self, path: str) -> None:
        if path not in self.files:
            raise FileNotFoundError(path)
        del self.files[path]

    def list(self, prefix: str = "") -> list[str]:
        return sorted(path for path in self.files if path.startswith(prefix))

    def snapshot(self) -> dict[str, str]:
        return dict(self.files)

    def restore(self, snapshot: dict[str, str]) -> None:
        self.files = dict(snapshot)


class InMemorySession:
    """A process-local session: state slices and resources in memory."""

    def __init__(
        self,
        *,
        session_id: str | None = None,
        filesystem: InMemoryFilesystem | None = None,
    ) -> None:
        self._session_id = session_id or str(uuid.uuid4())
        self._state: dict[str, Any] = {}
        self.filesystem = filesystem if filesystem is not None else InMemoryFilesystem()
        self._resources = Resources(self.filesystem)

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def resources(self) -> Resources:
        return self._resources

    def get_state(self, key: str) -> Any | None:
        return self._state.get(key)

    def put_state(self, key: str, value: Any) -> None:
        self._state[key] = value

    def reset(self) -> None:
        self._state = {}

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Transaction]:
        state = copy.copy(self._state)
        files = self.filesystem.snapshot()
        handle = _MemoryTransaction()
        try:
            yield handle
        except BaseException:
            handle.rollback()
            raise
        finally:
            if handle.rolled_back:
                self._state = state
                self.filesystem.restore(files)
