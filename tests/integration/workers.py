"""Real Celery worker processes for the integration tests.

The worker tests need PostgreSQL (the worker and the test share the pytest test
database) and a broker in ``CELERY_TEST_BROKER_URL``; ``.ci/run`` runs them once
with Redis and once with RabbitMQ. This module holds what they share: the skip
conditions, pointing the test process's Celery app at the broker, and
``WorkerProcess``, a ``celery worker`` subprocess in its own process group (so
a test can SIGKILL the whole worker, or one of its pool children).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection

from tests.limits import LISTEN_SECONDS
from tests.sessions_app.brokers import broker_at

ROOT = Path(__file__).resolve().parents[2]
BROKER = os.environ.get("CELERY_TEST_BROKER_URL", "")
NO_BROKER_REASON = "CELERY_TEST_BROKER_URL is not set: worker tests skipped"

needs_broker = pytest.mark.skipif(not BROKER, reason=NO_BROKER_REASON)


def require_postgresql() -> None:
    """Skip unless the test database is PostgreSQL (a worker process cannot
    share an SQLite test database)."""
    if connection.vendor != "postgresql":
        pytest.skip("the worker needs a shared PostgreSQL database")


def direct_connection() -> psycopg.Connection[Any]:
    """A connection of the test's own to its database, outside Django (in
    autocommit), as an operator, a monitor or a failover would have."""
    db = connection.settings_dict
    return psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"],
        dbname=db["NAME"],
        autocommit=True,
    )


def database_url() -> str:
    """``DATABASE_URL`` of the database this test runs against."""
    db = connection.settings_dict
    user = db["USER"]
    if db.get("PASSWORD"):
        user = f"{user}:{db['PASSWORD']}"
    return (
        f"postgres://{user}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
        f"/{db['NAME']}"
    )


@contextlib.contextmanager
def broker_configured(settings: Any, url: str = BROKER) -> Iterator[str]:
    """Make the test process send its tasks to ``url`` (by default
    ``BROKER``; a ``Forwarder``'s to take the broker away) instead of running
    them inline; restore inline (eager) runs afterwards. The tasks go
    through a Celery app of their own (``brokers.broker_at``): the project's
    app keeps its producers' connections, to whichever broker they were
    opened, for the rest of the process."""
    settings.CELERY_BROKER_URL = url
    with broker_at(settings, url):
        yield url


def worker_env(**overrides: str) -> dict[str, str]:
    """The environment of a worker process on the test database and broker."""
    return {
        **os.environ,
        "DEBUG": "1",
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": BROKER,
        "WINK_PROCESS": "worker",  # as make worker: relaxed commits on PostgreSQL
        **overrides,
    }


def child_pids(pid: int) -> list[int]:
    """The pids of the live direct children of ``pid`` (read from /proc)."""
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 2 and fields[0] != "Z" and int(fields[1]) == pid:
            children.append(int(entry.name))
    return sorted(children)


# The pool the tests' workers run unless a test names another: the shipped
# default (settings.WINK_WORKER_POOL), with a concurrency a test can fill.
DEFAULT_POOL = "threads"
DEFAULT_CONCURRENCY = {"threads": 8, "prefork": 2, "solo": 1}
# Pools whose worker sweeps on a thread of its own (Celery's pool names for
# sessions_app.runs.worker.SWEEPING_POOLS).
SWEEPER_THREAD_POOLS = frozenset({"threads", "solo"})


class WorkerProcess:
    """One ``celery worker`` process (and its children) in its own process
    group; its output goes to a file (``output()``), never to a pipe that
    could fill up and block it.

    By default the shipped worker: the threads pool (``DEFAULT_CONCURRENCY``
    threads), and with ``worker_env``'s ``WINK_PROCESS=worker`` its database
    pool and its batched lease renewal; ``pool="prefork"`` for a test that
    kills a pool child."""

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        pool: str = DEFAULT_POOL,
        concurrency: int | None = None,
        beat: bool = False,
        loglevel: str = "WARNING",
        name: str = "worker",
    ) -> None:
        self.name = name
        self.pool = pool
        if concurrency is None:
            concurrency = DEFAULT_CONCURRENCY.get(pool, 1)
        self._dir = tempfile.TemporaryDirectory(prefix=f"wink-{name}-")
        self.log_path = Path(self._dir.name) / "worker.log"
        args: list[str] = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "wink_project",
            "worker",
            f"--pool={pool}",
            f"--concurrency={concurrency}",
            f"--loglevel={loglevel}",
            f"--hostname={name}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            # Runs, and the sweeper's own queue (as `make worker` does).
            "--queues=celery,wink-maintenance",
        ]
        # ``beat``: a sweeper in this worker, as the shipped default has one.
        # On the threads and solo pools it is the worker's own sweeper thread
        # (WINK_WORKER_SWEEPER, every WINK_SWEEP_INTERVAL); on prefork, whose
        # main process sweeps on no thread, embedded Celery beat sends the
        # sweep. Without it, no sweeper at all: the test sweeps when it means to.
        sweeper_thread = beat and pool in SWEEPER_THREAD_POOLS
        if beat and not sweeper_thread:
            # A fresh schedule file per worker (a SIGKILL may leave the old
            # one half written).
            args += ["--beat", f"--schedule={Path(self._dir.name) / 'beat'}"]
        self.args: Sequence[str] = args
        self._log = open(self.log_path, "w")  # noqa: SIM115 (closed in stop())
        self.process = subprocess.Popen(
            args,
            cwd=ROOT,
            env={
                # one `celery worker` process: the host's runs and connections
                # all its own (make worker's launcher starts one per CPU)
                "WINK_WORKER_PROCESSES": "1",
                **env,
                # Celery takes the configured worker_pool over `--pool=prefork`
                # (its CLI default): the settings must name the pool too.
                "WINK_WORKER_POOL": pool,
                "WINK_WORKER_CONCURRENCY": str(concurrency),
                "WINK_WORKER_SWEEPER": "1" if sweeper_thread else "0",
            },
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,  # its own process group: killpg reaches all
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def children(self) -> list[int]:
        """The live child processes: the pool's children (and embedded beat)."""
        return child_pids(self.pid)

    def output(self) -> str:
        """Everything the worker printed so far (also after ``stop()``)."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return "(no output)"

    def wait_ready(self, seconds: float = LISTEN_SECONDS) -> None:
        """Until Celery says this worker is ready (it consumes from then on;
        its log level must be INFO or lower)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            output = self.output()
            if re.search(rf"\] {re.escape(self.name)}@\S+ ready\.", output):
                return
            if not self.alive():
                pytest.fail(f"the worker {self.name} exited early:\n{output}")
            time.sleep(0.1)
        pytest.fail(f"the worker {self.name} was not ready:\n{self.output()}")

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def kill(self) -> None:
        """SIGKILL the whole worker: the main process and every child, at once."""
        self._signal_group(signal.SIGKILL)
        self.process.wait(timeout=20)
        self._wait_group_gone()

    def stop(self) -> None:
        """Stop the worker and everything it started (idempotent)."""
        if self.alive():
            self.process.terminate()  # a warm shutdown: the main process ends its pool
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=15)
        self._signal_group(signal.SIGKILL)  # stragglers, or a worker that hung
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=20)
        self._wait_group_gone()
        self._log.close()

    def _wait_group_gone(self, seconds: float = 10) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                os.killpg(self.pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.05)

    def cleanup(self) -> None:
        self.stop()
        self._dir.cleanup()


# Short leases so a dead worker's runs are picked up again within seconds: the
# lease must outlive two heartbeats; the sweeper (a worker's thread, or
# embedded beat on prefork) runs every second.
SHORT_LEASES = {
    "WINK_RUN_LEASE_SECONDS": "4",
    "WINK_RUN_HEARTBEAT_SECONDS": "1",
    "WINK_SWEEP_INTERVAL": "1",
    "WINK_RUN_MAX_ATTEMPTS": "5",
}


class OfflineWorkers:
    """The offline provider over HTTP and the workers a test starts against it,
    with short leases (``SHORT_LEASES``); ``offline_workers`` cleans up."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.workers: list[WorkerProcess] = []

    def start(
        self, name: str, env: Mapping[str, str] | None = None, **options: Any
    ) -> WorkerProcess:
        """A worker (``options``: ``WorkerProcess``'s); ``env`` adds to (or
        overrides) its environment."""
        env = worker_env(
            WINK_PROVIDER="openai",
            OPENAI_API_KEY="sk-offline",
            OPENAI_BASE_URL=self.server.base_url,
            WINK_OPENAI_MAX_RETRIES="0",
            **{**SHORT_LEASES, **(env or {})},
        )
        worker = WorkerProcess(env, loglevel="INFO", name=name, **options)
        self.workers.append(worker)
        return worker

    @property
    def worker(self) -> WorkerProcess:
        """The last worker started."""
        return self.workers[-1]

    def output(self) -> str:
        return "\n".join(
            f"----- {worker.name} (pid {worker.pid}) -----\n{worker.output()}"
            for worker in self.workers
        )


@contextlib.contextmanager
def offline_workers(
    settings: Any, *, delay: float, model: Any = None, broker: str = BROKER
) -> Iterator[OfflineWorkers]:
    """PostgreSQL required, the offline provider answering after ``delay``
    seconds (``model``: its ``ScriptedModel``, by default the cooperative
    one), this process's Celery app on ``broker`` (the test broker, or a
    ``Forwarder`` to it); every worker the test started is stopped
    afterwards, then the provider."""
    from tooling.offline import OfflineServer

    require_postgresql()
    server = OfflineServer(delay=delay, model=model).start()
    started = OfflineWorkers(server)
    try:
        with broker_configured(settings, broker):
            try:
                yield started
            finally:
                for worker in started.workers:
                    worker.cleanup()
    finally:
        server.stop()
