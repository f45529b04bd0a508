"""The database-backed runtime session: state slices, files, savepoints.

Implements ``tooling.runtime.SessionProtocol`` for one ``AgentSession``. A
session transaction is a step of the run's store (``runs.store``): the
executor opens one per tool call (its state changes and its audit rows commit
together) and a nested one around the handler (rolled back on every failed
outcome, while the audit rows of the outer one stay). The state slices and
files a step writes are kept by the store until the step ends and commit with
its rows; reads see them before then.

Values a handler cannot store (text with NUL bytes or lone surrogates, paths
longer than the column) are refused with a ``ValueError`` the model can read;
a lost database connection stops the run (``StoreUnavailable``) so it resumes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import json
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from django.db import DatabaseError, InterfaceError, OperationalError

from sessions_app.models import AgentSession, SessionStateEntry, VirtualFile
from sessions_app.runs.store import RunStore, StoreUnavailable, Unit, release
from tooling.runtime import Resources
from tooling.runtime.serde import dump, parse
from tooling.runtime.text import storable, storable_text

F = TypeVar("F", bound=Callable[..., Any])

MAX_PATH = VirtualFile._meta.get_field("path").max_length or 255
MAX_KEY = SessionStateEntry._meta.get_field("key").max_length or 100
MAX_VALUE_TYPE = SessionStateEntry._meta.get_field("value_type").max_length or 200


def _guarded(method: F) -> F:
    """Database errors as errors a tool can report (no SQL in the message); a
    lost connection as ``StoreUnavailable``, which stops and resumes the run.
    A pooled worker's connection goes back once the read is done
    (``store.release``): a handler that reads and then works for long (an
    HTTP call, a slow tool) holds no connection meanwhile (ADR 0022)."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except (OperationalError, InterfaceError) as error:
            raise StoreUnavailable("The database connection failed.") from error
        except DatabaseError as error:
            raise ValueError(
                f"The session store refused the change ({type(error).__name__})."
            ) from error
        finally:
            release()

    return wrapper  # type: ignore[return-value]


def _check_text(what: str, text: str) -> None:
    if storable_text(text)[1]:
        raise ValueError(
            f"{what} contains NUL bytes or lone surrogates, which cannot be stored."
        )


_ALLOWED_STATE_MODULES = ("tooling.",)


def type_path(value: Any) -> str:
    kind = type(value)
    return f"{kind.__module__}:{kind.__qualname__}"


def load_value(value_type: str, data: Any) -> Any:
    """Rebuild a stored state value; only dataclasses of this project load."""
    if not value_type:
        return data
    module_name, _, qualname = value_type.partition(":")
    if not module_name.startswith(_ALLOWED_STATE_MODULES):
        raise ValueError(f"State type {value_type!r} is not allowed.")
    kind: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        kind = getattr(kind, part)
    if not (isinstance(kind, type) and dataclasses.is_dataclass(kind)):
        raise ValueError(f"State type {value_type!r} is not a dataclass.")
    return parse(kind, data)


class DatabaseFilesystem:
    """The session's virtual files, one ``VirtualFile`` row each; a step's
    writes are seen before they commit (``RunStore.pending_files``)."""

    def __init__(self, session: AgentSession, store: RunStore) -> None:
        self.session = session
        self.store = store

    def _files(self) -> Any:
        return VirtualFile.objects.filter(session=self.session)

    def _pending(self, path: str) -> tuple[bool, str | None]:
        """Whether an open step wrote ``path``, and its content (``None``:
        deleted)."""
        pending = self.store.pending_files()
        return path in pending, pending.get(path)

    @_guarded
    def exists(self, path: str) -> bool:
        if len(path) > MAX_PATH or storable_text(path)[1]:
            return False
        written, content = self._pending(path)
        if written:
            return content is not None
        return bool(self._files().filter(path=path).exists())

    @_guarded
    def read(self, path: str) -> str:
        if len(path) > MAX_PATH or storable_text(path)[1]:
            raise FileNotFoundError(path)
        written, content = self._pending(path)
        if written:
            if content is None:
                raise FileNotFoundError(path)
            return content
        row = self._files().filter(path=path).only("content").first()
        if row is None:
            raise FileNotFoundError(path)
        return str(row.content)

    @_guarded
    def write(self, path: str, content: str) -> None:
        if len(path) > MAX_PATH:
            raise ValueError(f"File paths are at most {MAX_PATH} characters long.")
        _check_text("The file path", path)
        _check_text("The file content", content)
        self.store.put_file(path, content)

    @_guarded
    def delete(self, path: str) -> None:
        if not self.exists(path):
            raise FileNotFoundError(path)
        self.store.delete_file(path)

    @_guarded
    def list(self, prefix: str = "") -> list[str]:
        paths = set(
            self._files().filter(path__startswith=prefix).values_list("path", flat=True)
        )
        for path, content in self.store.pending_files().items():
            if not path.startswith(prefix):
                continue
            if content is None:
                paths.discard(path)
            else:
                paths.add(path)
        return sorted(paths)


class DatabaseSession:
    # A handler's own query cut with the connection stops the run, which
    # reconnects and resumes (``SessionProtocol``): it is not the tool's error.
    lost_errors = (OperationalError, InterfaceError)

    def __init__(
        self,
        session: AgentSession,
        store: RunStore | None = None,
        *,
        fresh: bool = False,
    ) -> None:
        """``fresh``: the session's first run attempt, which finds no state
        (nothing wrote any before it): its state is not read at all."""
        self.record = session
        self.store = store or RunStore(session)
        # the committed slices, read once: key -> (value_type, JSON text)
        self._read: dict[str, tuple[str, str]] | None = {} if fresh else None
        self._resources = Resources(DatabaseFilesystem(session, self.store))

    @property
    def session_id(self) -> str:
        return str(self.record.pk)

    @property
    def resources(self) -> Resources:
        return self._resources

    @_guarded
    def get_state(self, key: str) -> Any | None:
        # The committed slices are read in one query and kept (with the
        # writes of each commit since); the open steps' writes are seen over
        # them. Each read builds a new value: a handler cannot change a kept
        # one.
        reset, pending = self.store.pending_state()
        if key in pending:
            value_type, value = pending[key]
            return load_value(value_type, json.loads(json.dumps(value)))
        if reset:
            return None
        if self._read is None:
            self._read = {
                row_key: (value_type, json.dumps(value))
                for row_key, value_type, value in SessionStateEntry.objects.filter(
                    session=self.record
                ).values_list("key", "value_type", "value")
            }
        found = self._read.get(key)
        if found is None:
            return None
        return load_value(found[0], json.loads(found[1]))

    @_guarded
    def put_state(self, key: str, value: Any) -> None:
        # Refused here, before anything is kept: a value the step's commit
        # could not write would lose the whole step.
        if len(key) > MAX_KEY:
            raise ValueError(f"State keys are at most {MAX_KEY} characters long.")
        _check_text("The state key", key)
        is_dataclass = dataclasses.is_dataclass(value) and not isinstance(value, type)
        value_type = type_path(value) if is_dataclass else ""
        if len(value_type) > MAX_VALUE_TYPE:
            raise ValueError(f"State '{key}' has a type name that is too long.")
        try:
            data = dump(value)
        except RecursionError:
            raise ValueError(
                f"State '{key}' is nested too deeply to be stored."
            ) from None
        if storable(data)[1]:
            raise ValueError(
                f"State '{key}' holds text with NUL bytes or lone surrogates (or a "
                "number JSON cannot hold), which cannot be stored."
            )
        # storable: nothing left that JSON cannot write (an integer too long
        # for text included), so the step's commit cannot fail on it
        text = json.dumps(data)
        committed_now = not self.store.in_step
        self.store.put_state(key, value_type, data)
        if committed_now and self._read is not None:
            self._read[key] = (value_type, text)

    @_guarded
    def reset(self) -> None:
        """Delete every state slice of the session (its files are kept)."""
        self.store.reset_state()
        if not self.store.in_step:
            self._read = {}

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Unit]:
        """A step of the run's store; when the outermost one commits, its
        writes join the slices kept here."""
        outermost = not self.store.in_step
        with self.store.step() as unit:
            yield unit
        if outermost and not unit.rolled_back and self._read is not None:
            if unit.reset:
                self._read = {}
            for key, (value_type, value) in unit.states.items():
                self._read[key] = (value_type, json.dumps(value))
