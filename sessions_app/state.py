"""The database-backed runtime session: state slices, files, savepoints.

Implements ``tooling.runtime.SessionProtocol`` for one ``AgentSession``. A
session transaction is a step of the run's ``StepWriter`` (``steps.py``): the
executor opens one per tool call (its state changes and its audit rows commit
together) and a nested one around the handler (rolled back on every failed
outcome, while the audit rows of the outer one stay). State slices wait for
their step's end and are written with its rows; a step opens a database
transaction only when a file is written (or the state reset) in it.

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

from sessions_app.lifecycle import StoreUnavailable
from sessions_app.models import AgentSession, SessionStateEntry, VirtualFile
from sessions_app.steps import StepHandle, StepWriter
from tooling.runtime import Resources
from tooling.runtime.serde import dump, parse
from tooling.runtime.text import storable, storable_text

F = TypeVar("F", bound=Callable[..., Any])

MAX_PATH = VirtualFile._meta.get_field("path").max_length or 255
MAX_KEY = SessionStateEntry._meta.get_field("key").max_length or 100
MAX_VALUE_TYPE = SessionStateEntry._meta.get_field("value_type").max_length or 200


def _guarded(method: F) -> F:
    """Database errors as errors a tool can report (no SQL in the message); a
    lost connection as ``StoreUnavailable``, which stops and resumes the run."""

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
    """The session's virtual files, one ``VirtualFile`` row each."""

    def __init__(self, session: AgentSession, writer: StepWriter) -> None:
        self.session = session
        self.writer = writer

    def _files(self) -> Any:
        return VirtualFile.objects.filter(session=self.session)

    @_guarded
    def exists(self, path: str) -> bool:
        if len(path) > MAX_PATH or storable_text(path)[1]:
            return False
        return bool(self._files().filter(path=path).exists())

    @_guarded
    def read(self, path: str) -> str:
        if len(path) > MAX_PATH or storable_text(path)[1]:
            raise FileNotFoundError(path)
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
        self.writer.before_write()
        VirtualFile.objects.bulk_create(
            [VirtualFile(session=self.session, path=path, content=content)],
            update_conflicts=True,
            unique_fields=["session", "path"],
            update_fields=["content", "updated_at"],
        )

    @_guarded
    def delete(self, path: str) -> None:
        self.writer.before_write()
        deleted, _ = self._files().filter(path=path).delete()
        if not deleted:
            raise FileNotFoundError(path)

    @_guarded
    def list(self, prefix: str = "") -> list[str]:
        return list(
            self._files()
            .filter(path__startswith=prefix)
            .order_by("path")
            .values_list("path", flat=True)
        )


class DatabaseSession:
    def __init__(
        self,
        session: AgentSession,
        writer: StepWriter | None = None,
        *,
        fresh: bool = False,
    ) -> None:
        """``fresh``: the session's first run attempt, which finds no state
        (nothing wrote any before it): its state is not read at all."""
        self.record = session
        self.writer = writer or StepWriter()
        self._read: dict[str, tuple[str, str]] | None = {} if fresh else None
        self._writes = 0
        self._resources = Resources(DatabaseFilesystem(session, self.writer))

    @property
    def session_id(self) -> str:
        return str(self.record.pk)

    @property
    def resources(self) -> Resources:
        return self._resources

    @_guarded
    def get_state(self, key: str) -> Any | None:
        # Every slice is read in one query and kept, with this run's writes,
        # until a step that wrote rolls back (the next read asks again, and
        # sees the writes still waiting for their step's end). Each read
        # builds a new value: a handler cannot change the kept one.
        if self._read is None:
            self._read = {
                row_key: (value_type, json.dumps(value))
                for row_key, value_type, value in SessionStateEntry.objects.filter(
                    session=self.record
                ).values_list("key", "value_type", "value")
            }
            for entry in self.writer.waiting(SessionStateEntry):
                assert isinstance(entry, SessionStateEntry)
                self._read[entry.key] = (entry.value_type, json.dumps(entry.value))
        found = self._read.get(key)
        if found is None:
            return None
        return load_value(found[0], json.loads(found[1]))

    @_guarded
    def put_state(self, key: str, value: Any) -> None:
        # Refused before any SQL: a database error inside the step's
        # transaction would abort the rest of the step.
        if len(key) > MAX_KEY:
            raise ValueError(f"State keys are at most {MAX_KEY} characters long.")
        _check_text("The state key", key)
        is_dataclass = dataclasses.is_dataclass(value) and not isinstance(value, type)
        value_type = type_path(value) if is_dataclass else ""
        if len(value_type) > MAX_VALUE_TYPE:
            raise ValueError(f"State '{key}' has a type name that is too long.")
        data = dump(value)
        if storable(data)[1]:
            raise ValueError(
                f"State '{key}' holds text with NUL bytes or lone surrogates (or a "
                "number JSON cannot hold), which cannot be stored."
            )
        # storable: nothing left that JSON cannot write (an integer too long
        # for text included), so the write cannot fail at the step's end
        text = json.dumps(data)
        kept, self._read = self._read, None  # until the write is done
        self._writes += 1
        # written with the step's rows at its end (now, outside a step)
        self.writer.upsert(
            SessionStateEntry(
                session=self.record, key=key, value_type=value_type, value=data
            ),
            unique_fields=("session", "key"),
            update_fields=("value_type", "value"),
        )
        if kept is not None:
            kept[key] = (value_type, text)
            self._read = kept

    @_guarded
    def reset(self) -> None:
        """Delete every state slice of the session (its files are kept)."""
        self.writer.before_write()
        self._read = None
        self._writes += 1
        SessionStateEntry.objects.filter(session=self.record).delete()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[StepHandle]:
        writes = self._writes
        kept = False
        try:
            with self.writer.step() as handle:
                yield handle
            kept = not handle.rolled_back
        finally:
            if self._writes != writes and not kept:  # its writes were undone
                self._read = None
