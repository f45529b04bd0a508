"""``make bench-concurrency``'s sustained rate (``bench/concurrency.py``):
Little's law over the window in which the host was full, which the lockstep of
runs answered at the same moment must not bias."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # its sibling module, celery_throughput
    try:
        spec = importlib.util.spec_from_file_location(
            "bench_concurrency", BENCH / "concurrency.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def generations(slots: int, count: int, run: float, gap: float = 0.0) -> list:
    """``count`` generations of ``slots`` runs in lockstep: each generation
    starts together, ``gap`` s after the one before ended, and takes ``run``
    s."""
    intervals = []
    start = 0.0
    for _ in range(count):
        intervals += [(start, start + run)] * slots
        start += run + gap
    return intervals


def test_a_full_host_in_lockstep_runs_at_slots_over_run_time(bench):
    full = bench.sustained(generations(500, 3, 40.0), 500)

    assert full["mean_in_flight"] == 500
    assert full["mean_run_s"] == 40.0
    assert full["runs_per_s"] == 12.5  # 500 / 40 s, whatever the lockstep


def test_slots_left_empty_between_runs_lower_the_rate(bench):
    # each slot waits 10 s for its next run: in flight 4/5 of the time
    full = bench.sustained(generations(500, 3, 40.0, gap=10.0), 500)

    assert full["mean_in_flight"] == 400
    assert full["runs_per_s"] == 10.0


def test_slower_runs_lower_the_rate(bench):
    full = bench.sustained(generations(100, 4, 50.0), 100)

    assert full["runs_per_s"] == 2.0  # 100 / 50 s


def test_no_run_waited_for_a_slot_gives_no_sustained_rate(bench):
    assert bench.sustained(generations(500, 1, 40.0), 500) is None
    assert bench.sustained(generations(500, 1, 40.0), 600) is None
