"""``DatabaseSession.reset()`` (``SessionProtocol.reset``, seed 003): every
state slice of the session goes, its files and other sessions' state stay,
and a rolled-back step undoes the reset."""

from __future__ import annotations

import pytest

from sessions_app.models import SessionStateEntry
from sessions_app.runs.state import DatabaseSession
from sessions_app.runs.store import RunStore
from tests.sessions_app.factories import AgentSessionFactory
from tooling.runtime import Filesystem, SetupPlan
from tooling.runtime.planning import PLAN_REDUCERS, current_plan
from tooling.runtime.reducers import reduce_event

pytestmark = pytest.mark.django_db


def database_session() -> DatabaseSession:
    session = AgentSessionFactory.create()
    return DatabaseSession(session, RunStore(session))


def test_reset_clears_plan_and_policy_state_but_keeps_files() -> None:
    session = database_session()
    other = database_session()
    files = session.resources.get(Filesystem)  # type: ignore[type-abstract]
    assert files is not None
    files.write("notes.txt", "kept")
    reduce_event(
        session, SetupPlan(objective="Ship", initial_steps=("a",)), PLAN_REDUCERS
    )
    session.put_state("policy:read_before_write", {"read": ["notes.txt"]})
    other.put_state("policy:read_before_write", {"read": []})
    assert current_plan(session) is not None

    session.reset()

    assert current_plan(session) is None
    assert session.get_state("policy:read_before_write") is None
    assert not SessionStateEntry.objects.filter(session=session.record).exists()
    assert files.read("notes.txt") == "kept"
    assert other.get_state("policy:read_before_write") == {"read": []}


def test_a_rolled_back_step_undoes_the_reset() -> None:
    session = database_session()
    session.put_state("counter", 1)
    with session.transaction() as step:
        session.reset()
        assert session.get_state("counter") is None
        step.rollback()
    assert session.get_state("counter") == 1
