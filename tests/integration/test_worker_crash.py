"""A Celery worker SIGKILLed mid-run loses nothing and duplicates nothing.

A real worker process runs ten sessions of ``demo/release`` against the
offline provider, served over HTTP with a delay on every reply. While they
run, the test SIGKILLs the whole worker, the shipped default (threads pool,
``THREADS`` runs in flight, its database pool, batched leases and its own
sweeper thread), then starts a new one; or, in the second case, only the pool
child running a session of a prefork worker (two children, embedded beat
running the sweeper; the pool replaces the child). Then every session must end
``succeeded``, each with exactly the tool invocations its recorded responses
asked for (none missing, none twice) and the same conversation as an
uninterrupted run, and no provider response may have been requested again once
it was recorded.

Each target is killed at two moments: right after a run recorded a tool call
(often between the calls of one turn) and while a run waits for a provider
reply. Needs PostgreSQL and a broker in ``CELERY_TEST_BROKER_URL``, like
``test_celery_worker.py``: ``.ci/run`` runs both modules once with
``redis://127.0.0.1:6379/15`` and once with ``amqp://guest:guest@127.0.0.1:5672//``.
"""

from __future__ import annotations

import collections
import os
import signal
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypedDict, cast

import pytest
from django.db.models import Count

from sessions_app import services
from sessions_app.models import (
    AgentSession,
    PolicyDenial,
    ProviderCall,
    ToolInvocation,
)
from tests.integration.workers import (
    BROKER,
    OfflineWorkers,
    WorkerProcess,
    needs_broker,
    offline_workers,
)
from tooling.demo import seed_demo_catalog
from tooling.offline import Served

pytestmark = [pytest.mark.django_db(transaction=True), needs_broker]

Status = AgentSession.Status
FINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

PROMPT = "demo/release"
SESSIONS = 10
CONCURRENCY = 2  # the prefork worker's children
THREADS = 5  # the threads worker's runs in flight
# The worker each target is killed in: (pool, runs in flight).
POOLS = {"worker": ("threads", THREADS), "pool_child": ("prefork", CONCURRENCY)}
REPLY_DELAY = 0.3  # seconds the offline provider holds back every reply
FINISH_SECONDS = 120
# Output items that are neither a call the runtime runs nor a native call.
NOT_CALLS = frozenset({"message", "reasoning"})


@pytest.fixture
def crash(settings):
    with offline_workers(settings, delay=REPLY_DELAY) as workers:
        yield workers


def _reference_runs(settings, params: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Run each conversation once inline, uninterrupted (in-process offline
    provider, same scripted model): what the crashed runs must reproduce."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    try:
        return {
            value["service"]: services.start_session(prompt_ref=PROMPT, params=value)
            for value in params
        }
    finally:
        settings.CELERY_TASK_ALWAYS_EAGER = False


def _conversation(session: AgentSession) -> dict[str, Any]:
    """What a run did, in the terms an uninterrupted run can be compared in."""
    session.refresh_from_db()
    return {
        "responses": list(
            ProviderCall.objects.filter(session=session)
            .order_by("turn")
            .values_list("turn", "response_id", "status")
        ),
        "calls": list(
            ToolInvocation.objects.filter(session=session)
            .order_by("sequence")
            .values_list(
                "sequence", "turn", "name", "call_id", "native", "success", "message"
            )
        ),
        "denials": sorted(
            PolicyDenial.objects.filter(session=session).values_list(
                "turn", "tool_name", "call_id", "reason"
            )
        ),
        "status": session.status,
        "turns": session.turns,
        "output_text": session.output_text,
    }


class Counts(TypedDict):
    calls: int


class ReportCounts(Counts):
    turns_recorded: int


if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    #: A session annotated with the number of its tool calls (``calls``).
    CountedSession = WithAnnotations[AgentSession, Counts]
# (django-stubs drops a custom queryset's annotations when it is iterated: the
# casts below put them back.)


def _status_report(ids: Iterable[Any]) -> str:
    queryset = AgentSession.objects.filter(pk__in=list(ids)).annotate(
        calls=Count("tool_invocations", distinct=True),
        turns_recorded=Count("provider_calls", distinct=True),
    )
    rows = cast(
        "Iterable[WithAnnotations[AgentSession, ReportCounts]]",
        queryset.order_by("created_at"),
    )
    return "\n".join(
        f"  {row.params.get('service')}: {row.status} attempts={row.attempts} "
        f"turns={row.turns_recorded} tools={row.calls} worker={row.worker} "
        f"{row.error_phase} {row.error_message}".rstrip()
        for row in rows
    )


def _awaiting_provider(session: CountedSession) -> bool:
    """Whether every call its recorded responses asked for has run: its next
    step is a provider request (the last response asked for calls)."""
    responses = list(
        ProviderCall.objects.filter(session=session)
        .order_by("turn")
        .values_list("response", flat=True)
    )
    asked = _expected_calls([response or {} for response in responses])
    return bool(asked) and sum(asked.values()) == session.calls


def _wait_mid_run(
    ids: list[Any], crash: OfflineWorkers, moment: str, seconds: float = 60
) -> CountedSession:
    """A session that is running, has run a tool and has not finished; for
    ``awaiting_provider``, one whose next provider request is under way."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        running = (
            AgentSession.objects.filter(
                pk__in=ids, status=Status.RUNNING, finished_at__isnull=True
            )
            .annotate(calls=Count("tool_invocations"))
            .filter(calls__gte=1)
            .order_by("started_at")
        )
        for victim in cast("Iterable[CountedSession]", running):
            if moment == "after_a_tool_call":
                return victim
            if _awaiting_provider(victim):
                # The request leaves right after the last call's commit and
                # the provider holds its reply back REPLY_DELAY seconds.
                time.sleep(REPLY_DELAY / 2)
                return victim
        if not crash.worker.alive():
            pytest.fail(f"the worker exited early:\n{crash.output()}")
        time.sleep(0.02)
    pytest.fail(
        f"no session got mid-run within {seconds}s:\n{_status_report(ids)}\n"
        f"{crash.output()}"
    )


def _wait_all_final(ids: list[Any], crash: OfflineWorkers, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if AgentSession.objects.filter(pk__in=ids, status__in=FINAL).count() == len(
            ids
        ):
            return
        if not crash.worker.alive():
            pytest.fail(
                f"the worker exited early:\n{_status_report(ids)}\n{crash.output()}"
            )
        time.sleep(0.1)
    pytest.fail(
        f"the sessions did not all finish within {seconds}s:\n"
        f"{_status_report(ids)}\n{crash.output()}"
    )


def _kill_pool_child(worker: WorkerProcess, victim: AgentSession) -> int:
    """SIGKILL the pool child that claimed ``victim`` (its ``worker`` column
    is ``host:pid`` of the claiming process)."""
    pid = int(victim.worker.rsplit(":", 1)[1])
    children = worker.children()
    assert pid in children, (
        f"session {victim.pk} is held by pid {pid}, not a child of the worker "
        f"({worker.pid}: {children})"
    )
    assert pid != worker.pid
    os.kill(pid, signal.SIGKILL)
    return pid


def _expected_calls(responses: list[dict[str, Any]]) -> collections.Counter:
    """Every call the recorded responses asked for, by call id: each
    ``function_call`` item's ``call_id`` and each native call item's id."""
    asked: collections.Counter = collections.Counter()
    for response in responses:
        for item in response.get("output") or []:
            kind = item.get("type")
            if kind == "function_call":
                asked[item.get("call_id") or item.get("id")] += 1
            elif kind not in NOT_CALLS:
                asked[item.get("id")] += 1
    return asked


def _check_session(session: AgentSession, reference: AgentSession) -> None:
    label = f"session {session.params['service']} ({session.pk})"
    calls = list(ProviderCall.objects.filter(session=session).order_by("turn"))
    assert [call.turn for call in calls] == list(range(1, len(calls) + 1)), label
    assert all(call.response is not None for call in calls), label
    invocations = list(
        ToolInvocation.objects.filter(session=session).order_by("sequence")
    )
    # Sequences 1..n without gaps or repeats (a repeat would also break the
    # unique constraint; a gap would mean a call was lost).
    assert [row.sequence for row in invocations] == list(
        range(1, len(invocations) + 1)
    ), label
    ran = collections.Counter(row.call_id for row in invocations)
    twice = sorted(call_id for call_id, n in ran.items() if n > 1)
    assert not twice, f"{label}: tool calls ran twice: {twice}"
    asked = _expected_calls([call.response for call in calls])
    assert ran == asked, (
        f"{label}: missing {sorted((asked - ran).elements())}, "
        f"not asked for {sorted((ran - asked).elements())}"
    )
    # Each call ran in the turn whose response asked for it, under its name.
    asked_in = {
        (item.get("call_id") or item.get("id")): (call.turn, item.get("name"))
        for call in calls
        for item in call.response.get("output") or []
        if item.get("type") not in NOT_CALLS
    }
    for row in invocations:
        turn, name = asked_in[row.call_id]
        assert row.turn == turn, f"{label}: {row.call_id} ran in turn {row.turn}"
        if not row.native:
            assert row.name == name, f"{label}: {row.call_id} ran as {row.name}"
    # The interrupted conversation is the uninterrupted one, step for step.
    assert _conversation(session) == _conversation(reference), label


def _check_provider_requests(
    served: list[Served], sessions: dict[Any, AgentSession], bound: int
) -> int:
    """No recorded response was requested again; returns the duplicate serves.

    A reply the provider sent while (or just before) its worker was killed was
    never recorded, so the resumed run asks for it again, with the same body,
    and gets the same response id: that one duplicate per interrupted run is
    the price of a crash and is allowed. A response requested again after it
    was recorded is a resume that did not use its record: never allowed.
    """
    posts = [entry for entry in served if entry.method == "POST"]
    assert all(entry.status == 200 for entry in posts), [
        entry for entry in posts if entry.status != 200
    ]
    counts = collections.Counter(entry.response_id for entry in posts)
    calls = list(ProviderCall.objects.filter(session__in=list(sessions)))
    recorded = {call.response_id: call for call in calls}
    assert len(recorded) == len(calls), "a response was recorded twice"
    assert None not in counts
    assert set(recorded) == set(counts), (
        f"recorded but never served: {sorted(set(recorded) - set(counts), key=str)}; "
        f"served but never recorded: {sorted(set(counts) - set(recorded), key=str)}"
    )
    late = [
        (
            entry.response_id,
            entry.at - recorded[entry.response_id].created_at.timestamp(),
        )
        for entry in posts
        if entry.at > recorded[entry.response_id].created_at.timestamp()
    ]
    assert not late, f"responses requested again after they were recorded: {late}"
    duplicates = {rid: n - 1 for rid, n in counts.items() if n > 1}
    assert sum(duplicates.values()) <= bound, duplicates
    per_session: collections.Counter[Any] = collections.Counter()
    for response_id, extra in duplicates.items():
        per_session[recorded[response_id].session_id] += extra
    for session_id, extra in per_session.items():
        owner = sessions[session_id]
        # At most one reply was in flight per interruption.
        assert extra <= owner.attempts - 1, (
            f"session {owner.pk} ({owner.attempts} attempt(s)) had {extra} "
            f"response(s) served twice: {duplicates}"
        )
    return sum(duplicates.values())


@pytest.mark.parametrize("moment", ["after_a_tool_call", "awaiting_provider"])
@pytest.mark.parametrize("target", ["worker", "pool_child"])
def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(
    crash, settings, target, moment
):
    seed_demo_catalog()
    params = [{"service": f"svc-{n}"} for n in range(SESSIONS)]
    references = _reference_runs(settings, params)
    assert all(ref.status == Status.SUCCEEDED for ref in references.values())

    pool, concurrency = POOLS[target]
    worker = crash.start("first", pool=pool, concurrency=concurrency, beat=True)
    began = time.monotonic()
    ids = [
        services.start_session(prompt_ref=PROMPT, params=value).pk for value in params
    ]

    victim = _wait_mid_run(ids, crash, moment)
    in_flight = AgentSession.objects.filter(pk__in=ids, status=Status.RUNNING).count()
    killed_at = time.monotonic()
    if target == "worker":
        worker.kill()
        assert not worker.alive()
        bound = concurrency  # every run the worker had was cut
        crash.start("second", pool=pool, concurrency=concurrency, beat=True)
    else:
        _kill_pool_child(worker, victim)
        bound = 1  # only the killed child's run was cut
    assert 1 <= in_flight <= concurrency, in_flight

    _wait_all_final(ids, crash, FINISH_SECONDS)
    finished_at = time.monotonic()

    sessions = {row.pk: row for row in AgentSession.objects.filter(pk__in=ids)}
    failed = {
        row.params["service"]: (row.status, row.error_phase, row.error_message)
        for row in sessions.values()
        if row.status != Status.SUCCEEDED
    }
    assert not failed, f"{failed}\n{crash.output()}"
    interrupted = sorted(
        row.params["service"] for row in sessions.values() if row.attempts >= 2
    )
    assert interrupted, f"the kill interrupted no run:\n{_status_report(ids)}"
    # Only runs the kill cut were claimed again (a live run's lease held).
    assert len(interrupted) <= bound, _status_report(ids)
    for row in sessions.values():
        _check_session(row, references[row.params["service"]])
    duplicates = _check_provider_requests(crash.server.served, sessions, bound)

    print(
        f"\n[{BROKER} / {target} ({pool}) / {moment}] "
        f"kill after {killed_at - began:.1f}s "
        f"({in_flight} running; {victim.params['service']} had run {victim.calls} "
        f"call(s)), all finished {finished_at - killed_at:.1f}s later "
        f"(total {finished_at - began:.1f}s); interrupted {interrupted}; "
        f"{duplicates} duplicate serve(s) of unrecorded in-flight responses"
    )
