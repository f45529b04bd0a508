"""Database connections killed while runs execute on a real worker (issue #24,
item 7).

A worker runs sessions whose every turn calls ``blips.count`` twice
(``blip_handlers.py``: each handler run notes its start and its end in a
file, keyed by the call's idempotency key, and reads the session's files
halfway). Meanwhile a thread
of this test terminates every other backend of the test database
(``pg_terminate_backend``, as a failover or an operator would) every 0.5 to 2
seconds: the workers' connections wherever they are, in a claim, a step's
commit, a handler's query, the sweeper, idle in the worker's pool (every idle
connection of a pool dies at once). Twice: on the shipped default (threads
pool, runs sharing a connection pool, batched leases on a pool of their own,
the worker's sweeper thread) and on prefork (two children, each with pools
of its own; embedded beat sends the sweeps).

Then every session must have ended, each tool call must be recorded once, and
no handler may have run to its end twice for one call: a step whose commit
was cut after its handler ran is written again, not run again. Only a call
interrupted while its handler ran (a start without an end in the file) may
run again. A worker start whose connection was cut is tried again on a new
connection: nothing is left queued for the sweeper's lost-message timeout
(600 s by default, far beyond this test).

Needs PostgreSQL and a broker in ``CELERY_TEST_BROKER_URL``; ``.ci/run`` runs
it with Redis and with RabbitMQ.
"""

from __future__ import annotations

import collections
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from sessions_app import services
from sessions_app.models import AgentSession, ToolInvocation
from tests.integration import blip_handlers
from tests.integration.workers import (
    BROKER,
    OfflineWorkers,
    direct_connection,
    needs_broker,
    offline_workers,
)
from tooling.handlers import registry
from tooling.models import (
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
TURNS = 3
CALLS_PER_TURN = 2
REPLY_DELAY = 0.05
KILL_EVERY = (0.5, 2.0)  # seconds between two kills, drawn at random
FINISH_SECONDS = 120
HANDLER_MODULES = (
    "tooling.runtime_tools,tooling.builtin_tools,tooling.text_tools,"
    "tests.integration.blip_handlers"
)


class Killer:
    """Terminates every backend of the test database but this process's own,
    every ``KILL_EVERY`` seconds, from a connection of its own."""

    def __init__(self, spare: int) -> None:
        self.spare = spare
        self.kills: list[int] = []  # backends terminated by each kill
        self._stop = threading.Event()
        self._random = random.Random(24)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Killer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        with direct_connection() as own:
            # the pause between kills is the fault schedule, not a wait
            while not self._stop.wait(self._random.uniform(*KILL_EVERY)):
                killed = own.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() "
                    "AND pid NOT IN (pg_backend_pid(), %s)",
                    (self.spare,),
                ).fetchone()
                self.kills.append(int(killed[0]) if killed else 0)


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _prompt() -> str:
    """A prompt offering ``count`` (``blips.count``)."""
    section = SectionDefinition.objects.create(
        key="blips", title="Blips", template="Count every call."
    )
    tool = ToolDefinition.objects.create(name="count", handler_key="blips.count")
    SectionTool.objects.create(section=section, tool=tool, position=0)
    template = PromptTemplate.objects.create(
        namespace="tests", key="blips", model="gpt-5.4", max_turns=20
    )
    PromptSection.objects.create(prompt=template, section=section, position=0)
    return template.ref


@pytest.fixture
def blips(settings: Any, tmp_path: Path) -> Iterator[tuple[OfflineWorkers, Path]]:
    blip_handlers.register_handlers(registry)  # this process builds the prompt
    model = ScriptedModel(script=parallel_calls_script(TURNS, CALLS_PER_TURN, "count"))
    try:
        with offline_workers(settings, delay=REPLY_DELAY, model=model) as workers:
            yield workers, tmp_path / "handler-runs.log"
    finally:
        registry.unregister("blips.count")


def _wait_all_final(ids: list[Any], workers: OfflineWorkers) -> None:
    deadline = time.monotonic() + FINISH_SECONDS
    while time.monotonic() < deadline:
        if AgentSession.objects.filter(pk__in=ids, status__in=FINAL).count() == len(
            ids
        ):
            return
        time.sleep(0.2)
    left = AgentSession.objects.filter(pk__in=ids).exclude(status__in=FINAL)
    pytest.fail(
        f"{left.count()} session(s) did not end within {FINISH_SECONDS}s: "
        f"{list(left.values_list('pk', 'status', 'attempts'))}\n{workers.output()}"
    )


def _handler_runs(log: Path) -> tuple[collections.Counter, collections.Counter]:
    """How many times each call's handler started, and finished."""
    starts: collections.Counter = collections.Counter()
    ends: collections.Counter = collections.Counter()
    for line in log.read_text().splitlines():
        what, key, _run = line.split(" ")
        (starts if what == "start" else ends)[key] += 1
    return starts, ends


# (the threads worker, 8 runs in flight, gets more sessions: as many kills)
@pytest.mark.parametrize(
    ("pool", "concurrency", "count"), [("threads", 8, 48), ("prefork", 2, 16)]
)
def test_database_blips_never_run_a_finished_handler_twice(
    blips, pool, concurrency, count
):
    workers, log = blips
    ref = _prompt()
    workers.start(
        "blips",
        pool=pool,
        concurrency=concurrency,
        beat=True,
        env={"WINK_HANDLER_MODULES": HANDLER_MODULES, "WINK_BLIP_LOG": str(log)},
    )
    ids = [services.start_session(prompt_ref=ref, params={}).pk for _ in range(count)]
    killer = Killer(spare=_backend_pid()).start()
    began = time.monotonic()
    try:
        _wait_all_final(ids, workers)
    finally:
        killer.stop()
    took = time.monotonic() - began

    sessions = list(AgentSession.objects.filter(pk__in=ids))
    failed = [
        (row.pk, row.error_phase, row.error_message)
        for row in sessions
        if row.status != Status.SUCCEEDED
    ]
    assert not failed, f"{failed}\n{workers.output()}"
    recorded = collections.Counter(
        f"{session_id}:{call_id}"
        for session_id, call_id in ToolInvocation.objects.filter(
            session__in=ids
        ).values_list("session_id", "call_id")
    )
    assert len(recorded) == count * TURNS * CALLS_PER_TURN
    assert max(recorded.values()) == 1, "a tool call was recorded twice"
    starts, ends = _handler_runs(log)
    twice = {key: n for key, n in ends.items() if n > 1}
    assert not twice, f"handlers that ran to their end twice: {twice}"
    assert set(ends) == set(recorded)  # every recorded call's handler finished
    interrupted = sum(starts.values()) - sum(ends.values())
    output = workers.output()
    recommits = output.count("writing it again on a new connection")
    start_retries = output.count("failed around its run")
    assert sum(killer.kills) >= 3, killer.kills  # the blips did hit the workers
    print(
        f"\n[{BROKER} / {pool}] {len(killer.kills)} kill(s) of {sum(killer.kills)} "
        f"backend(s); {sum(ends.values())} handler runs for {len(recorded)} calls; "
        f"{interrupted} interrupted mid-handler (ran again); {recommits} step "
        f"commit(s) written again; {start_retries} worker start(s) tried again; "
        f"{sum(row.attempts > 1 for row in sessions)} session(s) claimed again; "
        f"all ended in {took:.1f}s"
    )
