"""What a Celery worker process adds to its runs (``runs/worker.py``, ADR
0022): provider helper threads for every run it keeps in flight, and a
sweeper on a thread of its own (a sweep sent by beat would wait for a free
pool thread)."""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any

import pytest

from sessions_app.runs import worker
from sessions_app.runs.sweeping import SweepReport
from tooling import providers
from tooling.runtime.adapters.openai import helpers, sending


@pytest.fixture
def default_helpers() -> Any:
    yield
    helpers.set_helper_threads(32)
    helpers.reset()
    providers.set_connections(100)


def test_a_worker_has_a_provider_call_in_flight_for_each_of_its_runs(
    default_helpers,
) -> None:
    """40 runs, each waiting for the provider at once: all 40 calls are out
    together (with the runtime's default of 32 helpers the last 8 would wait
    for the first to return: here, never)."""
    worker.prepare(40)
    helpers.reset()
    arrived = threading.Barrier(40, timeout=30)
    sender = sending.Sender(
        None,  # type: ignore[arg-type]  # the calls below never use it
        max_retries=0,
        timeout=60,
        deadline=None,
        heartbeat=lambda: None,
        poll_seconds=0.05,
    )
    with concurrent.futures.ThreadPoolExecutor(40) as runs:
        waits = [runs.submit(sender._wait_for, arrived.wait) for _ in range(40)]
        assert sorted(f.result(timeout=60) for f in waits) == list(range(40))


@pytest.mark.parametrize(
    ("pool", "enabled", "sweeps"),
    [
        ("thread", True, True),
        ("solo", True, True),
        ("prefork", True, False),
        ("thread", False, False),
    ],
)
def test_a_worker_sweeps_on_its_own_thread(
    settings, monkeypatch, pool: str, enabled: bool, sweeps: bool
) -> None:
    settings.WINK_WORKER_SWEEPER = enabled
    settings.WINK_SWEEP_INTERVAL = 3600
    swept = threading.Event()

    def sweep() -> SweepReport:
        swept.set()
        return SweepReport()

    monkeypatch.setattr(worker, "sweep_stale_sessions", sweep)

    thread = worker.start_sweeper(pool)

    if not sweeps:
        assert thread is None
        return
    assert thread is not None and thread.daemon and thread.name == "wink-sweeper"
    assert swept.wait(30)  # the first sweep at once: runs a killed worker left


def test_a_failed_sweep_is_logged_and_the_thread_goes_on(monkeypatch, caplog) -> None:
    def broken() -> SweepReport:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(worker, "sweep_stale_sessions", broken)
    worker.sweep_once()  # no exception
    assert "The sweep failed; trying again at the next one" in caplog.text
