"""Runs in flight per worker host (docs/adr/0022-runs-in-flight.md,
docs/scaling.md): the settings of the worker processes, read from the
environment.

A worker host runs ``WINK_WORKER_PROCESSES`` Celery workers (``make worker``
starts them: ``wink_project/workers.py``), each keeping its share of the
host's ``WINK_WORKER_CONCURRENCY`` runs in flight, one per thread of Celery's
threads pool, and sharing its share of the host's ``WINK_DATABASE_POOL_SIZE``
PostgreSQL connections: a run holds one only while it reads or writes, never
while it waits for the model. One thread per process renews the leases of all
its runs in one UPDATE, on a connection of its own (the ``control`` alias), so
that leases never wait behind the runs' writes.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from wink_project.env import env_bool, env_number

POOLS = ("threads", "prefork", "solo")
#: libpq's TCP keepalive parameters for a pooled worker's connections
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}


@dataclasses.dataclass(frozen=True)
class Workers:
    pool: str
    processes: int
    concurrency: int
    batched_leases: bool
    sweeper: bool
    pool_size: int
    pool_timeout: float
    control_database: str

    @property
    def concurrency_per_process(self) -> int:
        """Celery's ``worker_concurrency``: this process's share, rounded up."""
        return -(-self.concurrency // self.processes)


def configure(databases: dict[str, Any], *, process: str) -> Workers:
    """The worker settings; in a worker process on PostgreSQL with a pool,
    ``databases["default"]`` gets Django's connection pool and a ``control``
    alias is added for the lease renewal."""
    pool = os.environ.get("WINK_WORKER_POOL", "threads").strip() or "threads"
    if pool not in POOLS:
        raise ImproperlyConfigured(
            f"WINK_WORKER_POOL must be threads, prefork or solo (not {pool!r})."
        )
    on_postgresql = databases["default"]["ENGINE"] == "django.db.backends.postgresql"
    threads = pool == "threads"
    # Processes per host: one per CPU on PostgreSQL with threads (an
    # interpreter runs Python on one CPU at a time), else one (prefork and
    # solo: always one, Celery's own processes).
    processes = 1
    if threads:
        cpus = min(os.cpu_count() or 1, 8) if on_postgresql else 1
        processes = int(env_number("WINK_WORKER_PROCESSES", cpus, minimum=1))
    # Runs in flight per host, shared among its processes. On SQLite, whose
    # writers queue for one lock, a few: hundreds need PostgreSQL. Prefork:
    # one child process per run in flight (about 150 MiB each): one per CPU.
    default_concurrency = (
        (500 if on_postgresql else 8) if threads else (os.cpu_count() or 1)
    )
    concurrency = int(
        env_number("WINK_WORKER_CONCURRENCY", default_concurrency, minimum=1)
    )
    # One thread per worker process renews the leases of all its runs in one
    # UPDATE every WINK_RUN_HEARTBEAT_SECONDS (sessions_app/runs/store/
    # leases.py) and ends a run still busy past its deadline and grace; off,
    # each run renews its own lease (as a web process's inline run does).
    batched_leases = env_bool("WINK_RUN_BATCHED_LEASES", process == "worker")
    # A worker on the threads or solo pool sweeps on a thread of its own every
    # WINK_SWEEP_INTERVAL, so that a sweep never waits for a free pool thread
    # (several workers sweeping at once is safe: each re-dispatch is a
    # conditional update); off: leave sweeping to `make beat`.
    sweeper = env_bool("WINK_WORKER_SWEEPER", True)
    # PostgreSQL connections per host in all, shared among its processes
    # (prefork: its child processes), each with one for its leases and the
    # rest a pool for its runs: 20, or 3 per process where there are more than
    # six; 0: no pool (a persistent connection per thread).
    sharing = concurrency if pool == "prefork" else processes
    pool_size = int(
        env_number("WINK_DATABASE_POOL_SIZE", max(20, 3 * sharing), minimum=0)
    )
    # How long a run waits for a pooled connection before its step fails (and
    # the run resumes): long, since waiting is the normal answer to a busy pool.
    pool_timeout = env_number("WINK_DATABASE_POOL_TIMEOUT", 120, minimum=1)
    control = "default"
    if process == "worker" and pool_size and on_postgresql:
        _pool_databases(databases, pool_size, sharing, pool_timeout)
        control = "control"
    return Workers(
        pool=pool,
        processes=processes,
        concurrency=concurrency,
        batched_leases=batched_leases,
        sweeper=sweeper,
        pool_size=pool_size,
        pool_timeout=pool_timeout,
        control_database=control,
    )


def _pool_databases(
    databases: dict[str, Any], pool_size: int, sharing: int, timeout: float
) -> None:
    per_process = pool_size // sharing
    if per_process < 3:
        raise ImproperlyConfigured(
            f"WINK_DATABASE_POOL_SIZE ({pool_size}) must be 0 or at least 3 per "
            f"worker process ({sharing} on this host: WINK_WORKER_PROCESSES, or "
            "WINK_WORKER_CONCURRENCY with prefork): one for the leases, two for "
            "the runs."
        )
    default = databases["default"]
    default["CONN_MAX_AGE"] = 0  # Django's pool requires it
    # A check per checkout would cost a round trip per step: the pool discards
    # a connection returned broken, and a run's commit that finds its
    # connection dead makes it again on a new one (runs.store.commits).
    default["CONN_HEALTH_CHECKS"] = env_bool("WINK_DATABASE_POOL_CHECKS", False)
    # TCP keepalives: a connection whose path died silently (a firewall that
    # drops idle ones) is found dead in about a minute, not the system's two
    # hours; the lease renewal's one connection most of all
    options = default.setdefault("OPTIONS", {})
    for name, value in KEEPALIVES.items():
        options.setdefault(name, value)
    control: dict[str, Any] = {**default, "OPTIONS": dict(options)}
    options["pool"] = {
        "min_size": 2,
        "max_size": per_process - 1,
        "timeout": timeout,
        "max_idle": 60,
        "name": "wink-runs",
    }
    control["OPTIONS"]["pool"] = {
        "min_size": 1,
        "max_size": 1,
        "timeout": timeout,
        "name": "wink-control",
    }
    control["TEST"] = {"MIRROR": "default"}
    databases["control"] = control
