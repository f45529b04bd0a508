"""Reducers: session state slices as a reduction of published events.

A handler publishes an event through its context (``context.publish``); every
``Reducer`` registered for the event's type computes the new value of its
state slice from the current one and the event, and the session stores it.
Sections register reducers by returning them from ``reducers()`` (the
planning section registers the plan's); a handler may also name the reducers
its own events need, so they apply wherever its tool is placed.

A reducer may raise ``ToolValidationError`` to refuse an event (an update to
a plan that does not exist): nothing is stored and the executor rolls the
call back. Reducers must not have other side effects: a failed call's state
changes are undone and its events are never delivered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from .session import SessionProtocol

if TYPE_CHECKING:
    from .prompt import Prompt
    from .sections import Section


@dataclasses.dataclass(frozen=True, slots=True)
class Reducer:
    """``reduce(current, event)`` gives state slice ``key``'s new value for
    every published ``event_type`` instance (``current`` is ``None`` while the
    slice is empty)."""

    event_type: type[Any]
    key: str
    reduce: Callable[[Any | None, Any], Any]

    def __post_init__(self) -> None:
        if not isinstance(self.event_type, type):
            raise TypeError("Reducer event_type must be a class.")
        if not isinstance(self.key, str) or not self.key.strip():
            raise TypeError("Reducer key must be a non-empty string.")
        if not callable(self.reduce):
            raise TypeError("Reducer reduce must be callable.")

    def applies_to(self, event: object) -> bool:
        return isinstance(event, self.event_type)


def _sections(sections: Iterable[Section[Any]]) -> Iterator[Section[Any]]:
    for section in sections:
        yield section
        yield from _sections(section.children)


def prompt_reducers(prompt: Prompt | None) -> tuple[Reducer, ...]:
    """Every reducer the prompt's sections register, in section order."""
    if prompt is None:
        return ()
    found: list[Reducer] = []
    for section in _sections(prompt.sections):
        found.extend(r for r in section.reducers() if r not in found)
    return tuple(found)


def reduce_event(
    session: SessionProtocol, event: object, reducers: Iterable[Reducer]
) -> tuple[str, ...]:
    """Apply every reducer of ``event``'s type; return the keys written.

    A reducer listed twice is applied once.
    """
    seen: list[Reducer] = []
    written: list[str] = []
    for reducer in reducers:
        if reducer in seen or not reducer.applies_to(event):
            continue
        seen.append(reducer)
        session.put_state(
            reducer.key, reducer.reduce(session.get_state(reducer.key), event)
        )
        if reducer.key not in written:
            written.append(reducer.key)
    return tuple(written)


__all__ = ["Reducer", "prompt_reducers", "reduce_event"]
