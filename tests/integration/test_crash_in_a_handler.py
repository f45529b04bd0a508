"""A worker SIGKILLed inside a long read-only handler loses no provider
response (issue #25: nothing held back).

A real worker (short leases, a sweeper) runs one session against the offline
provider over HTTP, playing a fixed conversation (``parallel_calls_script``):
``TURNS`` responses each asking for ``CALLS_PER_TURN`` parallel calls to
``lookup`` (``slow_handlers.py``, declared read-only), then a final answer. Every
handler run notes its start and its end in a file; the second call of turn 2
(``HELD``) waits inside its handler until the test releases it. As soon as
that call has started, the test SIGKILLs the pool child running the task (a
prefork worker of one child, embedded beat running the sweeper), or the whole
worker (the shipped default: threads pool, its own sweeper thread), then
starts a new one. Then:

- at once, before anything resumes the run: turn 2's provider call, whose
  response asked for the held call, is in the database with its response,
  its usage and its cost, and so is the first call of that turn, which ran to
  its end before the kill;
- after the lease expires and the sweeper hands the run to a pool child (a
  new one, or the new worker's), the run succeeds; the provider was asked
  for each response exactly once (``TURNS + 1`` POSTs, the ones before the
  crash not again); every call is recorded once and only the interrupted
  call's handler ran again; the session's usage, turns and cost count each
  response once.

On the old design (ADRs 0018/0019: a provider response held in memory until
the next effect, a window that spanned read-only handlers), this fails: the
kill loses turn 2's provider call (and its first call's row), so the row is
missing right after the kill, and the resumed run requests turn 2's response
again (``resp_bench_2`` served twice) and runs turn 2's first call again.

Needs PostgreSQL and a broker in ``CELERY_TEST_BROKER_URL``, like the other
worker suites: ``.ci/run`` runs it with Redis and with RabbitMQ.
"""

from __future__ import annotations

import collections
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from sessions_app import services
from sessions_app.models import AgentSession, ProviderCall, ToolInvocation
from tests.integration import slow_handlers
from tests.integration.workers import (
    BROKER,
    OfflineWorkers,
    needs_broker,
    offline_workers,
)
from tests.limits import LISTEN_SECONDS
from tooling.handlers import registry
from tooling.models import (
    ModelPrice,
    PromptSection,
    PromptTemplate,
    SectionDefinition,
    SectionTool,
    ToolDefinition,
)
from tooling.offline import ScriptedModel, parallel_calls_script

pytestmark = [pytest.mark.django_db(transaction=True), needs_broker]

Status = AgentSession.Status
FINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)
MODEL = "gpt-5.4"
TURNS = 3
CALLS_PER_TURN = 2
CRASH_TURN = 2
HELD = f"turn {CRASH_TURN} call {CALLS_PER_TURN}"  # the call the kill interrupts
REPLY_DELAY = 0.05
# The time a run takes to be claimed again after its worker died: its lease
# (SHORT_LEASES: 4 s) plus a sweep, then the run's remaining turns. Far above
# that on a quiet machine (about 10 s), as tests/limits.py asks.
RESUME_SECONDS = 180
HANDLER_MODULES = (
    "tooling.runtime_tools,tooling.builtin_tools,tooling.text_tools,"
    "tests.integration.slow_handlers"
)
# USD per million tokens: turn k's response uses 100 * k input and 20 output
# tokens (parallel_calls_script), so each cost is exact.
INPUT_RATE = Decimal(2)
OUTPUT_RATE = Decimal(10)


def _cost(input_tokens: int, output_tokens: int) -> Decimal:
    return (INPUT_RATE * input_tokens + OUTPUT_RATE * output_tokens) / 1_000_000


@dataclass(frozen=True)
class Files:
    log: Path  # handler starts and ends
    release: Path  # created by the test: the held call may end


@pytest.fixture
def slow(settings: Any, tmp_path: Path) -> Iterator[tuple[OfflineWorkers, Files]]:
    slow_handlers.register_handlers(registry)  # this process builds the prompt
    model = ScriptedModel(script=parallel_calls_script(TURNS, CALLS_PER_TURN, "lookup"))
    files = Files(log=tmp_path / "handler-runs.log", release=tmp_path / "release")
    try:
        with offline_workers(settings, delay=REPLY_DELAY, model=model) as workers:
            yield workers, files
    finally:
        files.release.touch()  # a held handler still running ends
        registry.unregister("slow.lookup")


def _prompt() -> str:
    """A prompt offering ``lookup`` (``slow.lookup``), priced."""
    ModelPrice.objects.update_or_create(
        model=MODEL,
        effective_from=timezone.localdate(),
        defaults={
            "input_per_mtok": INPUT_RATE,
            "cached_input_per_mtok": INPUT_RATE,
            "cache_write_per_mtok": INPUT_RATE,
            "output_per_mtok": OUTPUT_RATE,
        },
    )
    section = SectionDefinition.objects.create(
        key="slow", title="Slow", template="Look every text up."
    )
    tool = ToolDefinition.objects.create(name="lookup", handler_key="slow.lookup")
    SectionTool.objects.create(section=section, tool=tool, position=0)
    template = PromptTemplate.objects.create(
        namespace="tests", key="slow", model=MODEL, max_turns=20
    )
    PromptSection.objects.create(prompt=template, section=section, position=0)
    return template.ref


def _handler_runs(log: Path) -> tuple[collections.Counter, collections.Counter]:
    """How many times each call's handler (by its text) started, and ended."""
    starts: collections.Counter = collections.Counter()
    ends: collections.Counter = collections.Counter()
    if not log.exists():
        return starts, ends
    for line in log.read_text().splitlines():
        what, _key, _run, text = line.split(" ", 3)
        (starts if what == "start" else ends)[text] += 1
    return starts, ends


def _state(session: AgentSession, workers: OfflineWorkers) -> str:
    session.refresh_from_db()
    return (
        f"{session.status} attempts={session.attempts} worker={session.worker} "
        f"{session.error_phase} {session.error_message}\n"
        f"provider calls: {list(_recorded(session))}\n{workers.output()}"
    )


def _recorded(session: AgentSession) -> Any:
    return (
        ProviderCall.objects.filter(session=session)
        .order_by("turn")
        .values_list("turn", "response_id")
    )


def _wait_held_call_started(
    session: AgentSession, workers: OfflineWorkers, log: Path
) -> None:
    """Until the held call's handler is running (its start is in the log)."""
    deadline = time.monotonic() + LISTEN_SECONDS + RESUME_SECONDS
    while time.monotonic() < deadline:
        if _handler_runs(log)[0][HELD]:
            return
        if not workers.worker.alive():
            pytest.fail(f"the worker exited early:\n{_state(session, workers)}")
        if AgentSession.objects.filter(pk=session.pk, status__in=FINAL).exists():
            pytest.fail(f"the run ended before the kill:\n{_state(session, workers)}")
        time.sleep(0.02)
    pytest.fail(f"the held call never started:\n{_state(session, workers)}")


def _wait_final(session: AgentSession, workers: OfflineWorkers) -> None:
    deadline = time.monotonic() + RESUME_SECONDS
    while time.monotonic() < deadline:
        if AgentSession.objects.filter(pk=session.pk, status__in=FINAL).exists():
            return
        if not workers.worker.alive():
            pytest.fail(f"the worker exited early:\n{_state(session, workers)}")
        time.sleep(0.1)
    pytest.fail(
        f"the run did not end within {RESUME_SECONDS}s:\n{_state(session, workers)}"
    )


def _kill_pool_child(workers: OfflineWorkers, session: AgentSession) -> None:
    """SIGKILL the pool child that claimed ``session`` (its ``worker`` column
    is ``host:pid`` of the claiming process); the worker's main process lives
    on and starts a new child."""
    session.refresh_from_db()
    pid = int(session.worker.rsplit(":", 1)[1])
    worker = workers.worker
    children = worker.children()
    assert pid in children, (
        f"the run is held by pid {pid}, not a child of the worker "
        f"({worker.pid}: {children})"
    )
    os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("target", ["pool_child", "worker"])
def test_a_kill_inside_a_read_only_handler_loses_no_response(slow, target):
    workers, files = slow
    ref = _prompt()
    env = {
        "WINK_HANDLER_MODULES": HANDLER_MODULES,
        "WINK_SLOW_LOG": str(files.log),
        "WINK_SLOW_HOLD": HELD,
        "WINK_SLOW_RELEASE": str(files.release),
    }
    # a pool child to kill on prefork; the whole worker is the shipped one
    options: dict[str, Any] = (
        {"pool": "prefork", "concurrency": 1, "beat": True}
        if target == "pool_child"
        else {"beat": True}
    )
    first = workers.start("first", env=env, **options)
    began = time.monotonic()
    session = services.start_session(prompt_ref=ref, params={})

    _wait_held_call_started(session, workers, files.log)
    killed_at = time.monotonic()
    if target == "worker":
        first.kill()
        assert not first.alive()
    else:
        _kill_pool_child(workers, session)
    # Before anything resumes the run (its lease outlives this check): the
    # response that asked for the held call is on record, usage and cost too.
    crash_call = ProviderCall.objects.filter(session=session, turn=CRASH_TURN).first()
    assert crash_call is not None, (
        f"turn {CRASH_TURN}'s provider call was lost with the worker:\n"
        f"{_state(session, workers)}"
    )
    assert crash_call.response_id == f"resp_bench_{CRASH_TURN}"
    asked = [
        (item["name"], item["call_id"])
        for item in (crash_call.response or {}).get("output", [])
        if item.get("type") == "function_call"
    ]
    assert ("lookup", f"call_bench_{CRASH_TURN}_{CALLS_PER_TURN}") in asked, asked
    assert (crash_call.input_tokens, crash_call.output_tokens) == (
        100 * CRASH_TURN,
        20,
    )
    assert crash_call.cost == _cost(100 * CRASH_TURN, 20)
    # The turn's first call ran to its end before the kill: its step committed.
    assert ToolInvocation.objects.filter(
        session=session, call_id=f"call_bench_{CRASH_TURN}_1"
    ).exists()
    assert not ProviderCall.objects.filter(
        session=session, turn__gt=CRASH_TURN
    ).exists()
    served_before = [entry for entry in workers.server.served if entry.method == "POST"]
    assert [entry.response_id for entry in served_before] == [
        f"resp_bench_{turn}" for turn in range(1, CRASH_TURN + 1)
    ]

    files.release.touch()  # the resumed try of the held call ends at once
    if target == "worker":
        workers.start("second", env=env, **options)
    _wait_final(session, workers)
    took = time.monotonic() - killed_at

    session.refresh_from_db()
    assert session.status == Status.SUCCEEDED, _state(session, workers)
    assert session.attempts == 2, _state(session, workers)  # claimed once more

    # Every response requested exactly once: none before the kill again.
    posts = [entry for entry in workers.server.served if entry.method == "POST"]
    assert all(entry.status == 200 for entry in posts), posts
    assert [entry.response_id for entry in posts] == [
        f"resp_bench_{turn}" for turn in range(1, TURNS + 2)
    ], posts
    calls = list(ProviderCall.objects.filter(session=session).order_by("turn"))
    assert [(call.turn, call.response_id) for call in calls] == [
        (turn, f"resp_bench_{turn}") for turn in range(1, TURNS + 2)
    ]
    assert calls[CRASH_TURN - 1].pk == crash_call.pk  # the same row, kept

    # Every call recorded once; only the interrupted one's handler ran again.
    recorded = collections.Counter(
        ToolInvocation.objects.filter(session=session).values_list("call_id", flat=True)
    )
    expected_calls = {
        f"call_bench_{turn}_{call}"
        for turn in range(1, TURNS + 1)
        for call in range(1, CALLS_PER_TURN + 1)
    }
    assert set(recorded) == expected_calls
    assert max(recorded.values()) == 1, recorded
    assert ToolInvocation.objects.filter(session=session, success=False).count() == 0
    starts, ends = _handler_runs(files.log)
    texts = {
        f"turn {turn} call {call}"
        for turn in range(1, TURNS + 1)
        for call in range(1, CALLS_PER_TURN + 1)
    }
    assert ends == collections.Counter(dict.fromkeys(texts, 1)), ends
    assert starts == collections.Counter({**dict.fromkeys(texts, 1), HELD: 2}), starts

    # Usage, turns and cost count each response once.
    responses = range(1, TURNS + 2)
    assert session.turns == TURNS + 1
    assert session.usage["input_tokens"] == sum(100 * turn for turn in responses)
    assert session.usage["output_tokens"] == 20 * (TURNS + 1)
    assert session.cost == sum(_cost(100 * turn, 20) for turn in responses)
    assert session.unpriced_calls == 0

    print(
        f"\n[{BROKER} / {target} ({first.pool})] killed inside {HELD!r} "
        f"{killed_at - began:.1f}s after the start; the run resumed and "
        f"succeeded {took:.1f}s later; {len(posts)} POSTs for {TURNS + 1} "
        f"responses; the held handler started {starts[HELD]} times"
    )
