"""``make worker`` on a host with several CPUs (``wink_project/workers.py``):
one Celery worker per ``WINK_WORKER_PROCESSES``, each with a node name of its
own, stopped together. Needs a broker (``CELERY_TEST_BROKER_URL``) and the
PostgreSQL test database, as every worker test."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.workers import (
    ROOT,
    child_pids,
    needs_broker,
    require_postgresql,
    worker_env,
)

pytestmark = [needs_broker, pytest.mark.django_db(transaction=True)]

START_SECONDS = 120


class Launcher:
    def __init__(self, processes: int) -> None:
        require_postgresql()
        self.log = Path(tempfile.mkstemp(prefix="wink-launcher-", suffix=".log")[1])
        self.name = f"launch{uuid.uuid4().hex[:6]}"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "wink_project.workers",
                    "--loglevel=INFO",
                    f"--hostname={self.name}@%h",
                    # a queue of its own: it takes no other test's runs
                    f"--queues={self.name}",
                    "--without-gossip",
                    "--without-mingle",
                ],
                cwd=ROOT,
                env=worker_env(
                    WINK_WORKER_PROCESSES=str(processes),
                    WINK_WORKER_CONCURRENCY="8",
                    WINK_DATABASE_POOL_SIZE=str(4 * processes),
                ),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, nodes: list[str]) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            text = self.output()
            if all(f"{node}@" in text and " ready." in text for node in nodes) and (
                text.count(" ready.") >= len(nodes)
            ):
                return
            assert self.process.poll() is None, text[-3000:]
            time.sleep(0.2)
        raise AssertionError(f"not ready in time:\n{self.output()[-3000:]}")

    def workers(self) -> list[int]:
        return child_pids(self.process.pid)

    def wait_exit(self) -> int:
        return self.process.wait(timeout=START_SECONDS)

    def cleanup(self) -> None:
        for pid in [self.process.pid, *self.workers()]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        self.process.wait(timeout=START_SECONDS)
        self.log.unlink(missing_ok=True)


@pytest.fixture
def launched() -> Iterator[Launcher]:
    launcher = Launcher(processes=2)
    try:
        yield launcher
    finally:
        launcher.cleanup()


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie is gone too (its parent has not reaped it yet)
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_a_host_starts_one_named_worker_per_process_and_stops_them_together(
    launched: Launcher,
) -> None:
    launched.wait_ready([f"{launched.name}-1", f"{launched.name}-2"])
    workers = launched.workers()
    assert len(workers) == 2

    os.kill(launched.process.pid, signal.SIGTERM)  # as a supervisor stops it

    assert launched.wait_exit() == 0
    assert all(gone(pid) for pid in workers)
    assert launched.output().count("Warm shutdown") == 2


def test_a_worker_that_dies_is_started_again_and_the_other_goes_on(
    launched: Launcher,
) -> None:
    launched.wait_ready([f"{launched.name}-1", f"{launched.name}-2"])
    first, second = launched.workers()

    os.kill(second, signal.SIGKILL)  # out of memory, say

    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        workers = launched.workers()
        if len(workers) == 2 and second not in workers:
            break
        time.sleep(0.2)
    assert first in workers and second not in workers and len(workers) == 2
    assert "worker 2 exited (-9); starting it again in 1 s" in launched.output()
    deadline = time.monotonic() + START_SECONDS
    while launched.output().count(" ready.") < 3:  # the new one too
        assert time.monotonic() < deadline, launched.output()[-3000:]
        time.sleep(0.2)
    assert launched.process.poll() is None

    os.kill(launched.process.pid, signal.SIGTERM)

    assert launched.wait_exit() == 0
    assert all(gone(pid) for pid in workers)
