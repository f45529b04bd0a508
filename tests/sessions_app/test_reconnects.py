"""A run that loses its database connection (``runs.store.commits``,
``services.MAX_RECONNECTS``), on the test database in autocommit (as a
worker), SQLite or PostgreSQL.

- A step whose commit loses the connection, after the commit went through
  (only its reply was lost) or before, is committed again on a new
  connection, with the same event ids and no second row, and its handler is
  not run again.
- A run that keeps losing its connection without committing anything in
  between stops (phase ``internal``) at the ``MAX_RECONNECTS + 1``-th loss in
  a row; one that loses it more often than that over its life, committing in
  between, finishes.

The losses are injected: ``connection.commit`` raising ``OperationalError``
(after or instead of committing), and an execute wrapper refusing the
provider call's ``INSERT``. Real terminated backends are
tests/integration/test_connection_loss.py and test_database_blips.py.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext

from sessions_app import services
from sessions_app.models import AgentSession, ProviderCall, ToolInvocation
from sessions_app.runs import running, store
from tests.sessions_app import lookup_setup
from tests.sessions_app.lookup_setup import calling, client, runs

pytestmark = pytest.mark.django_db(transaction=True)  # autocommit, as a worker

Status = AgentSession.Status
TOOL_INSERT = 'INSERT INTO "sessions_app_toolinvocation"'
CALL_INSERT = 'INSERT INTO "sessions_app_providercall"'


@pytest.fixture
def prompt(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The lookup-and-act prompt (lookup_setup.py); commits made again at
    once."""
    monkeypatch.setattr(store.commits, "RECOMMIT_DELAYS", (0, 0, 0))
    ref = lookup_setup.add_prompt()
    yield ref
    lookup_setup.remove_handlers()


@dataclasses.dataclass
class Transaction:
    statements: list[str] = dataclasses.field(default_factory=list)
    outcome: str = ""  # "committed", "rolled back" or "lost"

    @property
    def writes_a_call(self) -> bool:
        return any(sql.startswith(TOOL_INSERT) for sql in self.statements)


@dataclasses.dataclass
class LostCommit:
    """The first transaction that writes a tool call loses its connection at
    its commit: ``after`` the commit went through, or before (``after``
    False: it is rolled back). Every transaction is noted."""

    after: bool
    transactions: list[Transaction] = dataclasses.field(default_factory=list)
    #: the event ids of the tool calls the lost commit held
    lost_event_ids: set[str] = dataclasses.field(default_factory=set)
    reconnects: int = 0

    @property
    def current(self) -> Transaction:
        if not self.transactions or self.transactions[-1].outcome:
            self.transactions.append(Transaction())
        return self.transactions[-1]

    def execute(self, execute: Any, sql: str, params: Any, many: bool, ctx: Any) -> Any:
        if not connection.get_autocommit():
            self.current.statements.append(sql)
        return execute(sql, params, many, ctx)

    def commit(self, real: Any) -> None:
        transaction = self.current
        if self.lost_event_ids or not transaction.writes_a_call:
            real()
            transaction.outcome = "committed"
            return
        self.lost_event_ids = {
            str(event_id)
            for event_id in ToolInvocation.objects.values_list("event_id", flat=True)
        }
        transaction.outcome = "lost"
        if self.after:
            real()  # it went through; its reply is lost
        raise OperationalError("server closed the connection unexpectedly")

    def rollback(self, real: Any) -> None:
        real()
        if self.transactions and not self.transactions[-1].outcome:
            self.transactions[-1].outcome = "rolled back"


@pytest.fixture
def lose_a_commit(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``lose_a_commit(after=...)``: the ``LostCommit`` made active."""
    made: list[LostCommit] = []
    real_commit, real_rollback = connection.commit, connection.rollback
    real_reconnect = store.commits.reconnect

    def make(*, after: bool) -> LostCommit:
        lost = LostCommit(after=after)
        made.append(lost)
        monkeypatch.setattr(connection, "commit", lambda: lost.commit(real_commit))
        monkeypatch.setattr(
            connection, "rollback", lambda: lost.rollback(real_rollback)
        )

        def reconnect() -> None:
            lost.reconnects += 1
            real_reconnect()

        monkeypatch.setattr(store.commits, "reconnect", reconnect)
        return lost

    with connection.execute_wrapper(
        lambda *args: made[-1].execute(*args) if made else args[0](*args[1:])
    ):
        yield make


def handler_runs() -> collections.Counter[tuple[str, str]]:
    return collections.Counter((name, text) for name, text, _, _ in runs)


@pytest.fixture
def fenced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every commit checks the claim (as after a long wait): a step is a
    transaction of its fence and its rows, never one INSERT alone."""
    monkeypatch.setattr(store.claims.Claim, "fence_due", lambda self: True)


@pytest.mark.parametrize("after", [True, False], ids=["after-commit", "before-commit"])
def test_a_step_whose_commit_lost_the_connection_is_committed_again_not_run_again(
    prompt, fenced, lose_a_commit, after: bool, caplog
) -> None:
    lost = lose_a_commit(after=after)
    calls = ("lookup", "act")

    with caplog.at_level(logging.WARNING, logger="sessions_app.runs.store.commits"):
        session = services.start_session(
            prompt_ref=prompt, client=client(calling(2, calls))
        )

    assert session.status == Status.SUCCEEDED, session.error_message
    assert session.attempts == 1  # never resumed: the store made the commit again
    assert lost.lost_event_ids, "no step lost its commit"
    assert lost.reconnects == 1
    assert "making it again on a new connection (1/3)" in caplog.text
    # every call ran once, is recorded once, and the lost step's rows are the
    # ones it held (its event ids)
    assert handler_runs() == {
        (name, f"turn {turn} call {call}"): 1
        for turn in (1, 2)
        for call, name in enumerate(calls, start=1)
    }
    event_ids = [
        str(event_id)
        for event_id in ToolInvocation.objects.filter(session=session).values_list(
            "event_id", flat=True
        )
    ]
    assert len(event_ids) == len(set(event_ids)) == 4
    assert lost.lost_event_ids <= set(event_ids)
    calls_ids = list(
        ProviderCall.objects.filter(session=session).values_list("event_id", flat=True)
    )
    assert len(calls_ids) == len(set(calls_ids)) == 3
    # the lost commit's rows were written once more only if it had not gone
    # through: the store asked (its first row's event id) before writing
    outcomes = [t.outcome for t in lost.transactions if t.writes_a_call]
    assert outcomes.count("lost") == 1
    assert outcomes.count("rolled back") == 0
    # a step per call, and the lost one again if it had not gone through
    assert outcomes.count("committed") == (3 if after else 4)


class LostInsert:
    """The first tool call's ``INSERT`` sent on its own (autocommit) loses the
    connection: ``after`` it went through, or before."""

    def __init__(self, *, after: bool) -> None:
        self.after = after
        self.lost = 0

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, ctx: Any):
        if self.lost or not sql.startswith(TOOL_INSERT):
            return execute(sql, params, many, ctx)
        assert connection.get_autocommit(), "a row alone commits on its own"
        self.lost += 1
        if self.after:
            execute(sql, params, many, ctx)  # it went through; its reply is lost
        raise OperationalError("server closed the connection unexpectedly")


@pytest.mark.parametrize("after", [True, False], ids=["after-commit", "before-commit"])
def test_a_call_committed_alone_that_lost_the_connection_is_made_again_not_run_again(
    prompt, after: bool, caplog
) -> None:
    lost = LostInsert(after=after)
    calls = ("lookup", "act")

    with (
        caplog.at_level(logging.WARNING, logger="sessions_app.runs.store.commits"),
        connection.execute_wrapper(lost),
    ):
        session = services.start_session(
            prompt_ref=prompt, client=client(calling(2, calls))
        )

    assert session.status == Status.SUCCEEDED, session.error_message
    assert session.attempts == 1
    assert lost.lost == 1
    assert "making it again on a new connection (1/3)" in caplog.text
    assert handler_runs() == {
        (name, f"turn {turn} call {call}"): 1
        for turn in (1, 2)
        for call, name in enumerate(calls, start=1)
    }
    event_ids = list(
        ToolInvocation.objects.filter(session=session).values_list(
            "event_id", flat=True
        )
    )
    assert len(event_ids) == len(set(event_ids)) == 4


class RefusedInserts:
    """Refuses the provider calls' ``INSERT`` (the connection is lost):
    ``refuse`` times in a row, then again after each one it lets through
    while ``more`` losses are left."""

    def __init__(self, refuse: int, *, more: int) -> None:
        self.refuse = refuse
        self.left = refuse
        self.more = more
        self.refused = 0
        self.let_through = 0

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, ctx: Any):
        if not sql.startswith(CALL_INSERT):
            return execute(sql, params, many, ctx)
        if self.left:
            if self.refused == 100:  # a run that never stops: fail, not hang
                raise RuntimeError("the run went on losing its connection")
            self.left -= 1
            self.refused += 1
            raise OperationalError("server closed the connection unexpectedly")
        result = execute(sql, params, many, ctx)
        self.let_through += 1
        if self.more:
            self.more -= 1
            self.left = self.refuse
        return result


def in_a_row(caplog: pytest.LogCaptureFixture) -> list[int]:
    """The losses ``_run_claimed`` counted, as it logged them."""
    return [
        int(record.args[1])  # type: ignore[call-overload]
        for record in caplog.records
        if record.name == running.logger.name
        and "lost its database connection" in record.getMessage()
        and isinstance(record.args, tuple)
    ]


def test_a_run_that_keeps_losing_its_connection_stops_as_internal(
    prompt, caplog
) -> None:
    # every commit of a provider call fails, however often it is made again
    attempts = len(store.commits.RECOMMIT_DELAYS) + 1
    refused = RefusedInserts(refuse=10**6, more=0)

    with (
        caplog.at_level(logging.WARNING),
        connection.execute_wrapper(refused),
    ):
        session = services.start_session(
            prompt_ref=prompt, client=client(calling(2, ("lookup",)))
        )

    assert session.status == Status.FAILED
    assert session.error_phase == "internal"
    assert "lost its database connection repeatedly" in session.error_message
    losses = services.MAX_RECONNECTS + 1
    assert in_a_row(caplog) == list(range(1, losses + 1))
    assert refused.refused == losses * attempts
    assert not ProviderCall.objects.exists()
    assert runs == []  # nothing came back to act on


def test_a_run_that_commits_between_its_losses_finishes(prompt, caplog) -> None:
    """More losses than ``MAX_RECONNECTS`` over the run's life, each after a
    commit: each is the first in a row, and the run finishes."""
    attempts = len(store.commits.RECOMMIT_DELAYS) + 1
    losses = services.MAX_RECONNECTS + 2
    # every other provider call loses its commit every time it is made: the
    # run resumes, asks for it again and commits it, and loses the next one
    refused = RefusedInserts(refuse=attempts, more=losses - 1)
    turns = losses  # turns + 1 provider calls: enough to lose `losses` of them

    with (
        caplog.at_level(logging.WARNING),
        connection.execute_wrapper(refused),
    ):
        session = services.start_session(
            prompt_ref=prompt, client=client(calling(turns, ("lookup", "act")))
        )

    assert session.status == Status.SUCCEEDED, session.error_message
    assert in_a_row(caplog) == [1] * losses
    assert refused.refused == losses * attempts
    assert session.provider_calls.count() == turns + 1
    # each loss came before a call's response was recorded: the resumed run
    # asked for it again, and never ran a recorded tool call again
    assert set(handler_runs().values()) == {1}
    assert len(runs) == 2 * turns
    assert session.tool_invocations.count() == 2 * turns


def test_nothing_to_record_is_no_commit() -> None:
    """An event with no rows (``PromptRendered``) commits nothing: an empty
    commit would count as the run's progress and reset its losses in a row."""
    session = AgentSession.objects.create(status=Status.RUNNING, output_text="")
    run_store = store.RunStore(session)

    with CaptureQueriesContext(connection) as queries:
        run_store.add([])

    assert queries.captured_queries == []  # not even SQLite's BEGIN
    assert run_store.commits == 0
