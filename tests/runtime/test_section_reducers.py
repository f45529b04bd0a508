"""``Section.reducers()``: the hook sections register reducers through.

The base registers none; a subclass's reducers count wherever it stands in
the tree (children included, disabled sections too: a reducer only ever runs
for an event a handler published), each once and in section order.
"""

from __future__ import annotations

import dataclasses

from tooling.runtime import InMemorySession, MarkdownSection, Prompt, Section
from tooling.runtime.reducers import Reducer, prompt_reducers, reduce_event


@dataclasses.dataclass(frozen=True)
class Added:
    amount: int


def _add(current: int | None, event: Added) -> int:
    return (current or 0) + event.amount


TOTAL = Reducer(Added, "total", _add)
COUNT = Reducer(Added, "count", lambda current, _event: (current or 0) + 1)


class TotalSection(MarkdownSection):
    def reducers(self) -> tuple[Reducer, ...]:
        return (TOTAL,)


class CountSection(MarkdownSection):
    def reducers(self) -> tuple[Reducer, ...]:
        return (COUNT, TOTAL)


def test_a_plain_section_registers_no_reducer() -> None:
    assert Section(title="Plain").reducers() == ()
    assert prompt_reducers(Prompt(ns="t", key="k", sections=[Section(title="A")])) == ()
    assert prompt_reducers(None) == ()


def test_nested_and_disabled_sections_register_theirs_once_in_order() -> None:
    child = CountSection(title="Child", enabled=False)
    prompt = Prompt(
        ns="t",
        key="k",
        sections=[TotalSection(title="Parent", children=[child])],
    )
    assert prompt_reducers(prompt) == (TOTAL, COUNT)

    session = InMemorySession()
    assert reduce_event(session, Added(4), prompt_reducers(prompt)) == (
        "total",
        "count",
    )
    reduce_event(session, Added(1), prompt_reducers(prompt))
    assert (session.get_state("total"), session.get_state("count")) == (5, 2)
