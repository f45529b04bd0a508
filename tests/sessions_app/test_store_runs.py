"""Whole runs through the run's store (``sessions_app/runs/store``): the
statements of a conversation, counted exactly per backend; every provider
call in the database before a tool acts on its response; a crash in a handler
loses nothing received; the edges of a run (a pause a cancel races, an end
that fails or finds the lease gone) keep what was committed.

The provider is the offline one of lookup_setup.py: ``lookup`` (read-only)
and ``act`` handlers that note how many provider calls and tool calls were
committed when they ran (two ``SELECT COUNT(*)`` each)."""

from __future__ import annotations

import dataclasses
import re
import time
import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app import services
from sessions_app.approvals import decisions
from sessions_app.models import AgentSession, ApprovalRequest, ProviderCall
from sessions_app.runs import lifecycle
from sessions_app.runs.store import RunStore
from sessions_app.runs.store import store as store_module
from tests.sessions_app.approval_setup import PROMPT, add_approval
from tests.sessions_app.clients import CountingProvider
from tests.sessions_app.factories import AgentSessionFactory, UserFactory
from tests.sessions_app.lookup_setup import Crash, calling, client, crash_in, runs
from tests.sessions_app.step_rows import invocation
from tooling.models import PolicyDefinition, PromptTemplate

pytestmark = pytest.mark.django_db

# Statements that only bracket a transaction or a savepoint. Inside the
# test's transaction every ``atomic()`` of the run is one SAVEPOINT (outside
# it, one transaction: BEGIN ... COMMIT).
BRACKETS = re.compile(r"^\s*(BEGIN|SAVEPOINT|RELEASE|ROLLBACK)", re.IGNORECASE)
# The test handlers' own reads (lookup_setup._handler), not the run's.
HANDLER_READS = re.compile(r'^SELECT COUNT\(\*\) AS "__count" FROM')


class Counted(httpx.BaseTransport):
    """A provider transport that counts the requests it answers."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.requests = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        return self.inner.handle_request(request)


@dataclasses.dataclass
class Counts:
    session: AgentSession
    statements: list[str]  # the run's, brackets and the handlers' reads left out
    transactions: int  # the run's atomic() blocks (commits)
    handler_reads: int


def run_counting(ref: str, turns: int, calls: int) -> Counts:
    """A run of ``turns`` turns that each call ``lookup`` ``calls`` times in
    parallel, then a last turn that answers; what it sent the database."""
    provider = client(calling(turns, ("lookup",) * calls))
    with CaptureQueriesContext(connection) as captured:
        session = services.start_session(prompt_ref=ref, client=provider)
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    sqls = [query["sql"] for query in captured.captured_queries]
    return Counts(
        session=session,
        statements=[
            sql
            for sql in sqls
            if not BRACKETS.match(sql) and not HANDLER_READS.match(sql)
        ],
        transactions=sum(sql.startswith("SAVEPOINT") for sql in sqls),
        handler_reads=sum(bool(HANDLER_READS.match(sql)) for sql in sqls),
    )


def kinds(sqls: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for sql in sqls:
        table = re.search(r'(?:INTO|UPDATE|FROM)\s+"?(\w+)"?', sql)
        verb = "SET" if sql.startswith("SET") else sql.split()[0]
        key = f"{verb} {table.group(1) if table else ''}".strip()
        found[key] = found.get(key, 0) + 1
    return found


# -- the statements of a conversation ------------------------------------------------


# A run of N tool-calling turns with K tool calls each, then an answering turn:
#
# - fixed: read the prompt template (its frozen revision is cached under the
#   catalog generation); one transaction with the revision's INSERT (ON
#   CONFLICT DO NOTHING / OR IGNORE: never read) and the session's INSERT; the
#   claim's conditional UPDATE (start_session hands it the new session: no
#   read back); the end's conditional UPDATE in its own transaction, preceded
#   on PostgreSQL by ``SET LOCAL synchronous_commit TO on`` (the only raw SQL
#   of a run: the end commits durably); the session read back by
#   start_session. 5 statements (6 on PostgreSQL) in 2 transactions, plus the
#   template read and the read back outside any: 6 statements (7).
# - per provider call (N + 1 of them): its INSERT, committed at once, before
#   any tool acts on its response; a row alone commits on its own (no
#   transaction of its own).
# - per tool call (N * K): one step, committed at its end: here the call's
#   INSERT alone (a handler that wrote state would add its upsert, in one
#   transaction with it).
# - the claim's fence (a conditional UPDATE renewing the lease under the
#   worker's token, first in the commit's transaction) only once half the
#   lease has passed since it was last set: never in these short runs
#   (``test_a_commit_after_half_the_lease_is_fenced``).
# - the session's search text (ADR 0028): its INSERT with the session's, and
#   in the end's transaction its tool calls' arguments read (one SELECT) and
#   the whole text written over it (an INSERT ... ON CONFLICT DO UPDATE).
FIXED_STATEMENTS = {"sqlite": 9, "postgresql": 10}
FIXED_TRANSACTIONS = 2


def expected(turns: int, calls: int) -> tuple[int, int]:
    per_conversation = (turns + 1) + turns * calls
    return (
        FIXED_STATEMENTS[connection.vendor] + per_conversation,
        FIXED_TRANSACTIONS,
    )


def test_the_statements_of_a_conversation_are_counted_exactly(lookup_and_act):
    run_counting(lookup_and_act, turns=0, calls=1)  # the catalog cached
    small = run_counting(lookup_and_act, turns=1, calls=1)
    large = run_counting(lookup_and_act, turns=4, calls=3)
    assert (small.session.turns, small.session.tool_invocations.count()) == (2, 1)
    assert (large.session.turns, large.session.tool_invocations.count()) == (5, 12)
    assert (small.handler_reads, large.handler_reads) == (2 * 1, 2 * 12)
    # exact, per backend: a regression shows here
    measured = {
        "small": (len(small.statements), small.transactions),
        "large": (len(large.statements), large.transactions),
    }
    postgresql = connection.vendor == "postgresql"
    assert measured == {
        "small": (13, 2) if postgresql else (12, 2),
        "large": (27, 2) if postgresql else (26, 2),
    }, kinds(large.statements)
    assert measured == {"small": expected(1, 1), "large": expected(4, 3)}
    # which statements: every extra provider call and tool call is one INSERT
    fixed = {
        # the template, read with the catalog generation (a subquery, named
        # first by ``kinds``)
        "SELECT tooling_cataloggeneration": 1,
        "INSERT tooling_catalogrevision": 1,
        "INSERT sessions_app_agentsession": 1,
        "UPDATE sessions_app_agentsession": 2,  # the claim, the end
        "SELECT sessions_app_agentsession": 1,
        "SELECT sessions_app_toolinvocation": 1,  # the search text's
        "INSERT sessions_app_sessionsearchtext": 2,  # created; ended
        **({"SET": 1} if postgresql else {}),
    }
    assert kinds(small.statements) == {
        **fixed,
        "INSERT sessions_app_providercall": 2,
        "INSERT sessions_app_toolinvocation": 1,
    }
    assert kinds(large.statements) == {
        **fixed,
        "INSERT sessions_app_providercall": 5,
        "INSERT sessions_app_toolinvocation": 12,
    }


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="synchronous_commit is PostgreSQL's (run the suite with "
    "DATABASE_URL=postgres://...)",
)
def test_the_end_commits_durably_in_its_own_transaction(lookup_and_act):
    provider = client(calling(1, ("lookup",)))
    with CaptureQueriesContext(connection) as captured:
        services.start_session(prompt_ref=lookup_and_act, client=provider)
    sqls = [query["sql"] for query in captured.captured_queries]
    durable = [i for i, sql in enumerate(sqls) if "synchronous_commit" in sql]
    assert len(durable) == 1  # no other setting of it in the run
    (at,) = durable
    assert sqls[at] == "SET LOCAL synchronous_commit TO on"
    assert sqls[at - 1].startswith("SAVEPOINT")  # first in the end's atomic
    assert sqls[at + 1].startswith('UPDATE "sessions_app_agentsession"')
    assert '"finished_at" = ' in sqls[at + 1]
    # then the session's search text: its tool calls read, the text written
    assert sqls[at + 2].startswith('SELECT "sessions_app_toolinvocation"')
    assert sqls[at + 3].startswith('INSERT INTO "sessions_app_sessionsearchtext"')
    assert sqls[at + 4].startswith("RELEASE")


def test_a_runs_statements_do_not_depend_on_other_sessions(lookup_and_act):
    run_counting(lookup_and_act, turns=0, calls=1)
    before = run_counting(lookup_and_act, turns=2, calls=2)
    AgentSessionFactory.create_batch(30)
    after = run_counting(lookup_and_act, turns=2, calls=2)
    assert kinds(before.statements) == kinds(after.statements)
    assert before.transactions == after.transactions


def test_a_run_writes_its_totals_without_summing_them_again(lookup_and_act):
    counts = run_counting(lookup_and_act, turns=2, calls=1)
    assert not [sql for sql in counts.statements if "SUM(" in sql.upper()]
    session = counts.session
    calls = list(session.provider_calls.all())
    assert session.turns == len(calls) == 3
    assert session.usage["input_tokens"] == sum(call.input_tokens for call in calls)
    assert (
        session.usage["total_tokens"]
        == session.usage["input_tokens"] + session.usage["output_tokens"]
    )


# -- nothing held back -----------------------------------------------------------------


def test_each_handler_finds_the_response_that_asked_for_it_committed(lookup_and_act):
    session = services.start_session(
        prompt_ref=lookup_and_act, client=client(calling(2, ("lookup",) * 3))
    )
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    # (text, provider calls and tool calls committed when its handler ran)
    assert [(text, calls, tools) for _, text, calls, tools in runs] == [
        ("turn 1 call 1", 1, 0),
        ("turn 1 call 2", 1, 1),
        ("turn 1 call 3", 1, 2),
        ("turn 2 call 1", 2, 3),
        ("turn 2 call 2", 2, 4),
        ("turn 2 call 3", 2, 5),
    ]
    assert session.provider_calls.count() == 3
    assert session.tool_invocations.count() == 6


def test_read_only_calls_and_calls_with_an_effect_commit_alike(lookup_and_act):
    session = services.start_session(
        prompt_ref=lookup_and_act,
        client=client(calling(1, ("lookup", "act", "lookup"))),
    )
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    assert runs == [
        ("lookup", "turn 1 call 1", 1, 0),
        ("act", "turn 1 call 2", 1, 1),
        ("lookup", "turn 1 call 3", 1, 2),
    ]


def test_a_crash_in_a_handler_loses_nothing_received_and_resumes_without_asking_again(
    lookup_and_act,
):
    crash_in.add("turn 1 call 2")
    first = Counted(calling(2, ("lookup",) * 2))
    with pytest.raises(Crash):  # the process dies: nothing else runs
        services.start_session(prompt_ref=lookup_and_act, client=client(first))
    session = AgentSession.objects.get()
    assert session.status == AgentSession.Status.RUNNING
    # the response (billed) and the call that ended before the crash are kept
    assert first.requests == 1
    assert session.provider_calls.count() == 1
    assert list(session.tool_invocations.values_list("call_id", flat=True)) == [
        "call_bench_1_1"
    ]

    AgentSession.objects.filter(pk=session.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    again = Counted(calling(2, ("lookup",) * 2))
    resumed = services.run_session(session_id=session.pk, client=client(again))
    assert resumed.status == AgentSession.Status.SUCCEEDED, resumed.error_message
    # turn 1 is not requested again; only the interrupted call runs again
    assert again.requests == 2
    assert [text for _, text, _, _ in runs] == [
        "turn 1 call 1",
        "turn 1 call 2",
        "turn 1 call 2",
        "turn 2 call 1",
        "turn 2 call 2",
    ]
    assert list(
        resumed.tool_invocations.order_by("call_id").values_list("call_id", flat=True)
    ) == ["call_bench_1_1", "call_bench_1_2", "call_bench_2_1", "call_bench_2_2"]
    calls = ProviderCall.objects.filter(session=resumed)
    assert calls.count() == 3
    # the first attempt's response is counted in the session's cost and usage
    assert resumed.turns == 3
    assert resumed.usage["input_tokens"] == sum(
        calls.values_list("input_tokens", flat=True)
    )
    assert resumed.attempts == 2


def test_the_pause_for_an_approval_keeps_the_read_only_call_before_it(
    lookup_and_act, monkeypatch, django_capture_on_commit_callbacks
):
    policy = PolicyDefinition.objects.create(
        name="act-approval",
        kind=PolicyDefinition.Kind.APPROVAL,
        config={"rules": [{"tool": "act"}]},
    )
    PromptTemplate.objects.get(namespace="tests", key="lookups").policies.add(policy)
    provider = client(calling(1, ("lookup", "act")))
    monkeypatch.setattr("tooling.services.build_client", lambda: provider)  # resume
    session = services.start_session(prompt_ref=lookup_and_act, client=provider)
    assert session.status == AgentSession.Status.AWAITING_APPROVAL
    assert session.provider_calls.count() == 1
    assert list(session.tool_invocations.values_list("name", flat=True)) == ["lookup"]

    approver = UserFactory.create(username="alice", is_superuser=True)
    request = ApprovalRequest.objects.get(session=session)
    with django_capture_on_commit_callbacks(execute=True):
        decisions.decide(approval_id=request.pk, user=approver, approve=True, reason="")
    session.refresh_from_db()
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    # the resumed run replays the recorded lookup: each handler ran once
    assert [(name, text) for name, text, _, _ in runs] == [
        ("lookup", "turn 1 call 1"),
        ("act", "turn 1 call 2"),
    ]


def test_a_lease_lost_at_a_heartbeat_keeps_what_was_committed_before(
    lookup_and_act, monkeypatch
):
    """What the worker committed while it held the lease stays; it writes
    nothing after (another worker's record then)."""
    original = lifecycle.Claim.beat

    def beat(self: lifecycle.Claim) -> None:
        if runs:  # the first beat after lookup ran: before act
            raise lifecycle.LeaseLost("taken over")
        original(self)

    monkeypatch.setattr(lifecycle.Claim, "beat", beat)
    services.start_session(
        prompt_ref=lookup_and_act, client=client(calling(1, ("lookup", "act")))
    )
    session = AgentSession.objects.get()
    assert session.status == AgentSession.Status.RUNNING
    assert [name for name, _, _, _ in runs] == ["lookup"]
    assert session.provider_calls.count() == 1
    assert list(session.tool_invocations.values_list("name", flat=True)) == ["lookup"]


# -- the edges of a run ----------------------------------------------------------------


def test_a_cancel_racing_the_pause_keeps_the_provider_calls_made(
    monkeypatch: Any, django_capture_on_commit_callbacks: Any
) -> None:
    add_approval()
    real_pause = store_module.pause

    def cancelled_meanwhile(claim: Any, *args: Any, **kwargs: Any) -> None:
        # a user's cancel commits between the response and the pause
        AgentSession.objects.filter(pk=claim.session_id).update(
            cancel_requested_at=timezone.now()
        )
        real_pause(claim, *args, **kwargs)

    monkeypatch.setattr(store_module, "pause", cancelled_meanwhile)
    provider = CountingProvider()
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref=PROMPT, client=provider.client)
    session.refresh_from_db()
    assert session.status == AgentSession.Status.CANCELLED
    assert not ApprovalRequest.objects.filter(session=session).exists()
    answered = len(provider.responses)
    billed = ProviderCall.objects.filter(session=session)
    # every response the provider gave (and billed) is recorded, and counted
    assert billed.count() == answered >= 1
    assert session.turns == answered
    assert session.usage["input_tokens"] == sum(
        billed.values_list("input_tokens", flat=True)
    )


def claimed_with_a_provider_call() -> tuple[AgentSession, lifecycle.Claim, RunStore]:
    session = AgentSessionFactory.create(status=AgentSession.Status.QUEUED)
    claim = lifecycle.claim(session.pk)
    assert claim is not None
    run_store = RunStore(claim.session, claim=claim)
    run_store.add([ProviderCall(session=session, turn=1, event_id=uuid.uuid4())])
    with run_store.step():
        run_store.add([invocation(session, 1)])
    return session, claim, run_store


def test_an_end_that_lost_the_lease_leaves_the_committed_rows():
    session, claim, _ = claimed_with_a_provider_call()
    stale = dataclasses.replace(claim, token=uuid.uuid4())  # another worker's now
    with pytest.raises(lifecycle.LeaseLost):
        RunStore(session, claim=stale).finish(status=AgentSession.Status.SUCCEEDED)
    assert ProviderCall.objects.filter(session=session).count() == 1
    assert session.tool_invocations.count() == 1
    assert AgentSession.objects.get(pk=session.pk).status == "running"


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="an end that fails in the database needs PostgreSQL's numeric "
    "limits (run the suite with DATABASE_URL=postgres://...)",
)
@pytest.mark.django_db(transaction=True)
def test_the_committed_rows_stand_when_the_end_fails():
    session, _, run_store = claimed_with_a_provider_call()
    too_costly = {"usage": {}, "turns": 0, "cost": 10**30, "unpriced_calls": 0}
    with pytest.raises(DatabaseError):  # the cost column cannot hold it
        run_store.finish(status=AgentSession.Status.SUCCEEDED, summed=too_costly)
    assert ProviderCall.objects.filter(session=session).count() == 1
    assert session.tool_invocations.count() == 1
    assert AgentSession.objects.get(pk=session.pk).status == "running"


def test_only_a_claimed_run_pauses_or_ends():
    session = AgentSessionFactory.create()
    with pytest.raises(ValueError, match="Only a claimed run"):
        RunStore(session).finish(status=AgentSession.Status.SUCCEEDED)


@pytest.mark.django_db(transaction=True)
def test_a_worker_that_lost_its_lease_does_not_break_the_new_holders_record():
    session = AgentSessionFactory.create(status=AgentSession.Status.QUEUED)
    a = lifecycle.claim(session.pk)
    assert a is not None
    event_id = uuid.uuid4()  # event_id_for(run_id, "provider", 1): the same for B
    # A waits for its response past its lease (its clocks say so too); B
    # claims the run
    AgentSession.objects.filter(pk=session.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    lease = lifecycle.lease_seconds()
    a.renewed((time.monotonic() - lease - 1, time.time() - lease - 1))
    b = lifecycle.claim(session.pk)
    assert b is not None
    late = ProviderCall(session=session, turn=1, event_id=event_id, input_tokens=5)
    with pytest.raises(lifecycle.LeaseLost):  # A's late response: refused
        RunStore(session, claim=a).add([late])
    # B asked for turn 1 too (it was not recorded when B resumed)
    mine = ProviderCall(session=session, turn=1, event_id=event_id, input_tokens=5)
    RunStore(session, claim=b).add([mine])
    assert ProviderCall.objects.filter(session=session).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_commit_after_half_the_lease_is_fenced():
    """Before half the lease has passed since it was set, no other worker can
    hold the run: a commit sends no fence. After, the commit's transaction
    begins with the fence, which renews the lease (and the clock restarts)."""
    session = AgentSessionFactory.create(status=AgentSession.Status.QUEUED)
    claim = lifecycle.claim(session.pk)
    assert claim is not None
    store = RunStore(session, claim=claim)
    first = ProviderCall(session=session, turn=1, event_id=uuid.uuid4())
    with CaptureQueriesContext(connection) as fresh:
        store.add([first])
    assert [q["sql"].split('"')[1] for q in fresh.captured_queries] == [
        "sessions_app_providercall"
    ]

    half = lifecycle.lease_seconds() / 2
    claim.renewed((time.monotonic() - half, time.time()))  # the monotonic clock
    AgentSession.objects.filter(pk=session.pk).update(lease_expires_at=timezone.now())
    second = ProviderCall(session=session, turn=2, event_id=uuid.uuid4())
    with CaptureQueriesContext(connection) as late:
        store.add([second])
    sqls = [q["sql"] for q in late.captured_queries]
    fence = next(i for i, sql in enumerate(sqls) if sql.startswith("UPDATE"))
    insert = next(i for i, sql in enumerate(sqls) if sql.startswith("INSERT"))
    assert fence < insert
    assert '"claim_token"' in sqls[fence]
    session.refresh_from_db()
    assert session.lease_expires_at is not None
    assert session.lease_expires_at > timezone.now()  # renewed by the fence
    assert not claim.fence_due()

    claim.renewed((time.monotonic(), time.time() - half))  # the wall clock too
    assert claim.fence_due()
