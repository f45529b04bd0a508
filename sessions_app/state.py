"""The database-backed runtime session: state slices, files, savepoints.

Implements ``tooling.runtime.SessionProtocol`` for one ``AgentSession``. A
tool's transaction is an ``atomic()`` block: a failed call rolls back every
state and file change it made, while audit rows (written by the sink after
the block) are never part of it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
from collections.abc import Iterator
from typing import Any

from django.db import transaction

from sessions_app.models import AgentSession, SessionStateEntry, VirtualFile
from tooling.runtime import Resources
from tooling.runtime.serde import dump, parse

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

    def __init__(self, session: AgentSession) -> None:
        self.session = session

    def _files(self) -> Any:
        return VirtualFile.objects.filter(session=self.session)

    def exists(self, path: str) -> bool:
        return self._files().filter(path=path).exists()

    def read(self, path: str) -> str:
        row = self._files().filter(path=path).only("content").first()
        if row is None:
            raise FileNotFoundError(path)
        return row.content

    def write(self, path: str, content: str) -> None:
        VirtualFile.objects.update_or_create(
            session=self.session, path=path, defaults={"content": content}
        )

    def delete(self, path: str) -> None:
        deleted, _ = self._files().filter(path=path).delete()
        if not deleted:
            raise FileNotFoundError(path)

    def list(self, prefix: str = "") -> list[str]:
        return list(
            self._files()
            .filter(path__startswith=prefix)
            .order_by("path")
            .values_list("path", flat=True)
        )


class _Handle:
    def __init__(self) -> None:
        self.rolled_back = False

    def rollback(self) -> None:
        self.rolled_back = True


class DatabaseSession:
    def __init__(self, session: AgentSession) -> None:
        self.record = session
        self._resources = Resources(DatabaseFilesystem(session))

    @property
    def session_id(self) -> str:
        return str(self.record.pk)

    @property
    def resources(self) -> Resources:
        return self._resources

    def get_state(self, key: str) -> Any | None:
        row = SessionStateEntry.objects.filter(session=self.record, key=key).first()
        if row is None:
            return None
        return load_value(row.value_type, row.value)

    def put_state(self, key: str, value: Any) -> None:
        is_dataclass = dataclasses.is_dataclass(value) and not isinstance(value, type)
        SessionStateEntry.objects.update_or_create(
            session=self.record,
            key=key,
            defaults={
                "value_type": type_path(value) if is_dataclass else "",
                "value": dump(value),
            },
        )

    @contextlib.contextmanager
    def transaction(self) -> Iterator[_Handle]:
        handle = _Handle()
        with transaction.atomic():
            yield handle
            if handle.rolled_back:
                transaction.set_rollback(True)
