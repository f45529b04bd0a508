"""What a step of a run has written so far, in memory until the step ends.

A *unit* is one ``RunStore.step()``: the executor opens one around each tool
call and a nested one around its handler. Its audit rows, state slices and
files are kept here and committed together when the outermost unit ends
(``RunStore``); a nested unit that ends well passes what it holds to the one
around it (``absorb``), one that rolls back is dropped. Nothing is written to
the database while a handler runs, so no transaction (and, on SQLite, no
write lock) is held open across a handler.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.db import models

#: a file the step deleted
DELETED = None


@dataclasses.dataclass
class Unit:
    """The writes of one open step."""

    rows: list[models.Model] = dataclasses.field(default_factory=list)
    #: state slices by key: (value_type, value); the last write of each key
    states: dict[str, tuple[str, Any]] = dataclasses.field(default_factory=dict)
    #: the session's state was emptied before ``states`` were written
    reset: bool = False
    #: files by path: the new content, or ``DELETED``
    files: dict[str, str | None] = dataclasses.field(default_factory=dict)
    rolled_back: bool = False

    def rollback(self) -> None:
        """The step's writes are undone (``Transaction.rollback()``)."""
        self.rolled_back = True

    def put_state(self, key: str, value_type: str, value: Any) -> None:
        self.states.pop(key, None)  # keep the order of the last writes
        self.states[key] = (value_type, value)

    def reset_state(self) -> None:
        self.states.clear()
        self.reset = True

    def absorb(self, inner: Unit) -> None:
        """The writes of a nested unit that ended well, after this one's."""
        self.rows += inner.rows
        if inner.reset:
            self.reset_state()
        for key, (value_type, value) in inner.states.items():
            self.put_state(key, value_type, value)
        self.files.update(inner.files)

    @property
    def writes_state(self) -> bool:
        """It writes the session's state or files."""
        return bool(self.states or self.reset or self.files)

    def __bool__(self) -> bool:
        return bool(self.rows or self.states or self.reset or self.files)
