"""Runs in flight: how many runs one worker host keeps going at a slow model.

The offline provider is served over loopback HTTP (``tooling.offline``) and
answers every request ``--delay`` seconds (10 by default) after it arrived,
like a real model. One ``celery worker`` process, started as ``make worker``
starts it (the same settings: pool, concurrency and the database pool come
from the environment; ``--pool``/``--concurrency``/``--env`` override them for
experiments), runs ``--runs`` sessions of ``--prompt`` queued at once (by
default three times the runs the host keeps in flight).

Printed: runs in flight (the most ``running`` at once, from the record);
the host's sustained rate while it was full (``sustained``: from the moment
every slot was taken to the last run's start, runs in flight / run time)
against the ideal (``min(runs, concurrency)`` / the ideal run time, i.e.
provider calls per run x delay); the rate of all the runs from the dispatch
to the last end (start-up and drain included), the worker's PSS in all and
per run in flight (``/proc/<pid>/smaps_rollup`` of the worker and its
children, sampled every second), the
peak number of PostgreSQL connections to the bench database
(``pg_stat_activity``, sampled), CPU ms per run (worker processes and the
provider, ``/proc/<pid>/stat``), and the runs that failed, were stuck (not
ended by ``--timeout``) or repeated (a provider request answered but not
recorded, or recorded twice; a run claimed more than once).

``--kill-after S``: SIGKILL the worker (its whole process group) S seconds
after dispatch and start a new one: every run must still end, each provider
call recorded once (the new worker's sweeper recovers the runs whose lease
expires). ``--connection-limit N``: ``ALTER DATABASE ... CONNECTION LIMIT N``
on the bench database (as a lowered ``max_connections``, without touching the
shared server). Run with ``make bench-concurrency``; ``--help`` lists options.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from celery_throughput import (  # noqa: E402 (bench/ is on sys.path)
    percentile,
    process_cpu,
    process_env,
    setup_django,
)

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/wink_bench_concurrency"
DEFAULT_BROKER_URL = "redis://127.0.0.1:6379/8"
TARGET = 0.90
QUEUES = "celery,wink-maintenance"  # as `make worker`
FINAL = ("succeeded", "failed", "cancelled")
COMMITS = "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"


def recreate_database(url: str, connection_limit: int) -> None:
    """Drop and create the bench database, owned by the URL's user (a role
    other than a superuser is held to ``CONNECTION LIMIT``: on a shared
    server, give the bench such a role so that it cannot take every
    connection of the server)."""
    from urllib.parse import urlunsplit

    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not parts.scheme.startswith("postgres") or name in ("", "postgres"):
        raise SystemExit("--database-url must name a PostgreSQL database of its own.")
    owner = parts.username or "postgres"
    admin = urlunsplit(parts._replace(path="/postgres"))
    admin = admin.replace(f"{owner}@", "postgres@", 1)
    limit = connection_limit or -1
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(
            f'CREATE DATABASE "{name}" OWNER "{owner}" CONNECTION LIMIT {limit}'
        )


# -- the worker ------------------------------------------------------------------


class Worker:
    """``make worker``'s command (``python -m wink_project.workers``: the
    host's ``WINK_WORKER_PROCESSES`` Celery workers, each sweeping on a
    thread of its own), in its own process group; ``nodes``: their names."""

    def __init__(
        self,
        name: str,
        env: dict[str, str],
        log_path: Path,
        options: Any,
        processes: int,
    ) -> None:
        self.name = name
        self.log_path = log_path
        args = [
            sys.executable, "-m", "wink_project.workers",
            "--loglevel=INFO", f"--queues={QUEUES}", f"--hostname={name}@%h",
        ]  # fmt: skip
        if options.pool:
            # the settings' pool wins over Celery's own default: name it there
            env = {**env, "WINK_WORKER_POOL": options.pool}
            args.append(f"--pool={options.pool}")
        host = platform.node()
        self.nodes = (
            [f"{name}-{n}@{host}" for n in range(1, processes + 1)]
            if processes > 1
            else [f"{name}@{host}"]
        )
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                args,
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def pids(self) -> list[int]:
        """The worker and every process below it (from each process's parent
        in ``/proc/<pid>/stat``: reading ``/proc/<pid>/task/*/children`` would
        read a file per thread, hundreds of them per worker, every sample)."""
        children: dict[int, list[int]] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry.name))
        found = [self.process.pid]
        for pid in found:
            found += children.get(pid, [])
        return found

    def check(self) -> None:
        if self.process.poll() is not None:
            tail = self.log_path.read_text(errors="replace")[-4000:]
            raise SystemExit(f"worker {self.name} exited:\n{tail}")

    def kill(self) -> None:
        # the launcher's workers run in process groups of their own
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=30)
        self.kill()


def wait_ready(worker: Worker, seconds: float = 120) -> None:
    from wink_project.celery import app

    deadline = time.monotonic() + seconds
    waiting = set(worker.nodes)
    while time.monotonic() < deadline:
        worker.check()
        replies = app.control.ping(destination=sorted(waiting), timeout=1.0) or []
        for reply in replies:
            waiting -= set(reply)
        if not waiting:
            return
    raise SystemExit(f"the worker did not start in time ({sorted(waiting)})")


def pss_kib(pids: Sequence[int]) -> int:
    """Proportional set size of these processes in all (KiB)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
    return total


# -- sampling ----------------------------------------------------------------------


class Sampler(threading.Thread):
    """Every ``interval`` s: sessions running, connections to the bench
    database (not counting its own), the worker's PSS."""

    def __init__(self, url: str, workers: list[Worker], interval: float = 0.5):
        super().__init__(daemon=True)
        import psycopg

        self.conn = psycopg.connect(url, autocommit=True)
        self.workers = workers
        self.interval = interval
        self.stopping = threading.Event()
        self.running: list[int] = []
        self.connections: list[int] = []
        self.pss: list[int] = []
        self.states: Counter[str] = Counter()

    def run(self) -> None:
        while not self.stopping.wait(self.interval):
            with contextlib.suppress(Exception):
                running = scalar(
                    self.conn,
                    "SELECT count(*) FROM sessions_app_agentsession "
                    "WHERE status = 'running'",
                )
                self.running.append(running)
                rows = self.conn.execute(
                    "SELECT coalesce(state, ''), count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() GROUP BY 1"
                ).fetchall()
                self.connections.append(sum(count for _, count in rows))
                for state, count in rows:
                    self.states[state] = max(self.states[state], count)
            self.pss.append(sum(pss_kib(w.pids()) for w in self.workers))

    def stop(self) -> None:
        self.stopping.set()
        self.join()


# -- one round -----------------------------------------------------------------------


def scalar(conn: Any, sql: str) -> Any:
    """The one value ``sql`` selects."""
    row = conn.execute(sql).fetchone()
    assert row is not None
    return row[0]


def most_at_once(intervals: Sequence[tuple[float, float]]) -> int:
    """The most intervals open at one time."""
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    now = best = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best


def sustained(
    intervals: Sequence[tuple[float, float]], slots: int
) -> dict[str, float] | None:
    """The host's rate while it was full: from the moment ``slots`` runs had
    started (every slot taken) to the last run's start (until then each run
    that ended left its slot to a queued one). Little's law over that window:
    runs/s = the time-average of runs in flight / the mean run time of the
    runs that started in it, which a lockstep of runs (all answered at the
    same moment) does not bias as counting ends in a window would. ``None``
    when no run waited for a slot (``--runs`` no more than the slots)."""
    starts = sorted(a for a, _ in intervals)
    if len(starts) <= slots:
        return None
    begin, end = starts[slots - 1], starts[-1]
    if end <= begin:
        return None
    busy = sum(max(0.0, min(b, end) - max(a, begin)) for a, b in intervals)
    walls = [b - a for a, b in intervals if begin <= a <= end]
    mean_wall = sum(walls) / len(walls)
    in_flight = busy / (end - begin)
    return {
        "window_s": round(end - begin, 1),
        "mean_in_flight": round(in_flight, 1),
        "mean_run_s": round(mean_wall, 2),
        "runs_per_s": round(in_flight / mean_wall, 2),
        "runs": len(walls),
    }


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    from tooling.offline import OfflineServer
    from tooling.offline import server as offline_server

    # many runs connect at once: a listen backlog for them all
    offline_server._HTTPServer.request_queue_size = 2048
    recreate_database(options.database_url, options.connection_limit)
    server = OfflineServer(delay=options.delay).start()
    scratch = Path(tempfile.mkdtemp(prefix="wink-bench-concurrency-"))
    env = process_env(options, server.base_url, None)
    for item in options.env:
        name, _, value = item.partition("=")
        env[name] = value
    if options.concurrency:  # the host's runs in flight
        env["WINK_WORKER_CONCURRENCY"] = str(options.concurrency)
    if options.pool:
        env["WINK_WORKER_POOL"] = options.pool
    env["LOG_LEVEL"] = os.environ.get("LOG_LEVEL", "WARNING")
    setup_django(env)
    from django.conf import settings
    from django.db import connection, transaction

    from sessions_app import services
    from sessions_app.models import AgentSession, ProviderCall

    concurrency = int(settings.WINK_WORKER_CONCURRENCY)  # per host
    pool = settings.WINK_WORKER_POOL
    per_host = int(settings.WINK_WORKER_PROCESSES) if pool == "threads" else 1
    options.runs = options.runs or 3 * concurrency * options.hosts
    workers: list[Worker] = []
    sampler: Sampler | None = None
    killed_at = None
    try:
        for n in range(1, options.hosts + 1):
            log = scratch / f"bench{n}.log"
            workers.append(Worker(f"bench{n}", env, log, options, per_host))
        for worker in workers:
            wait_ready(worker)
        sampler = Sampler(options.database_url, list(workers))
        cpu_before = sum(process_cpu(pid) for w in workers for pid in w.pids())
        own_before = process_cpu(os.getpid())
        with transaction.atomic():
            ids = [
                services.start_session(prompt_ref=options.prompt, params={}).pk
                for _ in range(options.runs)
            ]
            dispatched = time.time()
        sent = time.time() - dispatched  # the messages leave on the commit
        connection.close()  # the sampler alone watches from here
        if connection.settings_dict["OPTIONS"].get("pool"):
            # this process's pool keeps min_size open
            connection.close_pool()  # type: ignore[attr-defined]
        commits_before = scalar(sampler.conn, COMMITS)
        sampler.start()
        deadline = time.monotonic() + options.timeout
        worker_cpu = 0.0
        while True:
            time.sleep(1)
            if (
                options.kill_after
                and killed_at is None
                and time.time() - dispatched > options.kill_after
            ):
                worker_cpu += sum(process_cpu(pid) for pid in workers[-1].pids())
                worker_cpu -= cpu_before
                cpu_before = 0.0
                workers[-1].kill()
                killed_at = time.time() - dispatched
                print(f"  SIGKILL the worker at {killed_at:.1f} s", file=sys.stderr)
                again = Worker("again", env, scratch / "again.log", options, per_host)
                workers.append(again)
                sampler.workers = [workers[-1]]
            else:
                for worker in workers[-1:] if killed_at is not None else workers:
                    worker.check()
            ended = scalar(
                sampler.conn,
                "SELECT count(*) FROM sessions_app_agentsession "
                "WHERE status IN ('succeeded', 'failed', 'cancelled')",
            )
            if ended >= options.runs or time.monotonic() > deadline:
                break
        live = workers[-1:] if killed_at is not None else workers
        worker_cpu += sum(process_cpu(pid) for w in live for pid in w.pids())
        worker_cpu -= cpu_before
        time.sleep(0.6)  # the statistics collector's delay
        commits_after = scalar(sampler.conn, COMMITS)
        own_cpu = process_cpu(os.getpid()) - own_before
    finally:
        if sampler is not None and sampler.is_alive():
            sampler.stop()
        for worker in workers:
            worker.stop()
        server.stop()

    rows = list(
        AgentSession.objects.filter(pk__in=ids).values(
            "pk", "status", "error_phase", "error_message", "attempts",
            "started_at", "finished_at", "created_at",
        )
    )  # fmt: skip
    calls = Counter(
        ProviderCall.objects.filter(session_id__in=ids).values_list(
            "session_id", "turn"
        )
    )
    served = [s for s in server.served if s.response_id]
    recorded = set(
        ProviderCall.objects.filter(session_id__in=ids).values_list(
            "response_id", flat=True
        )
    )
    ended = [r for r in rows if r["finished_at"] is not None]
    intervals = [
        (r["started_at"].timestamp(), r["finished_at"].timestamp()) for r in ended
    ]
    in_flight = most_at_once(intervals)
    last = max((b for _, b in intervals), default=dispatched)
    elapsed = last - dispatched
    per_run = sum(calls.values()) / max(len(ended), 1)
    ideal_run = per_run * options.delay
    target_flight = min(options.runs, concurrency * options.hosts)
    rate = len(ended) / elapsed if elapsed > 0 else 0.0
    ideal = target_flight / ideal_run if ideal_run else 0.0
    ideal_seen = in_flight / ideal_run if ideal_run else 0.0
    walls = [b - a for a, b in intervals]
    # a killed worker's runs stay `running` until their leases expire
    full = None if killed_at is not None else sustained(intervals, target_flight)
    if full is not None:
        full["percent_of_ideal"] = round(100 * full["runs_per_s"] / ideal, 1)
    waits = [r["started_at"].timestamp() - dispatched for r in ended]
    peak_pss = max(sampler.pss, default=0) if sampler else 0
    result: dict[str, Any] = {
        "runs": options.runs,
        "prompt": options.prompt,
        "delay_s": options.delay,
        "pool": pool,
        "hosts": options.hosts,
        "processes_per_host": per_host,
        "concurrency": concurrency,
        "database_pool": settings_pool(env),
        "env": options.env,
        "runs_in_flight": in_flight,
        "running_sampled_max": max(sampler.running, default=0) if sampler else 0,
        "provider_calls_per_run": round(per_run, 2),
        "elapsed_s": round(elapsed, 1),
        "messages_sent_s": round(sent, 2),
        "runs_per_s": round(rate, 2),
        "ideal_runs_per_s": round(ideal, 2),
        "percent_of_ideal": round(100 * rate / ideal, 1) if ideal else 0.0,
        "ideal_runs_per_s_at_seen_flight": round(ideal_seen, 2),
        "percent_of_ideal_at_seen_flight": round(100 * rate / ideal_seen, 1)
        if ideal_seen
        else 0.0,
        "sustained": full,
        "run_wall_s": {
            "p50": round(percentile(walls, 0.5), 1),
            "p95": round(percentile(walls, 0.95), 1),
            "max": round(max(walls, default=0), 1),
        },
        "queue_wait_s": {
            "p50": round(percentile(waits, 0.5), 1),
            "p95": round(percentile(waits, 0.95), 1),
        },
        "peak_pss_mib": round(peak_pss / 1024, 1),
        "pss_per_run_in_flight_mib": round(peak_pss / 1024 / max(in_flight, 1), 2),
        "peak_pg_connections": max(sampler.connections, default=0) if sampler else 0,
        "peak_pg_connections_by_state": dict(sampler.states) if sampler else {},
        "transactions_per_run": round(
            (commits_after - commits_before) / max(len(ended), 1), 1
        ),
        "cpu_ms_per_run": {
            "worker": round(1000 * worker_cpu / max(len(ended), 1), 1),
            "provider_and_bench": round(1000 * own_cpu / max(len(ended), 1), 1),
        },
        "failed": [
            f"{r['pk']}: {r['status']} {r['error_phase']} {r['error_message']}"
            for r in rows
            if r["status"] in FINAL and r["status"] != "succeeded"
        ],
        "stuck": [
            f"{r['pk']}: {r['status']}" for r in rows if r["status"] not in FINAL
        ],
        "claimed_more_than_once": sum(1 for r in rows if r["attempts"] > 1),
        "calls_recorded_twice": sum(1 for n in calls.values() if n > 1),
        "requests_answered_not_recorded": len(
            {s.response_id for s in served} - recorded
        ),
        "requests_answered": len(served),
        "killed_at_s": killed_at,
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "cpus": os.cpu_count(),
        "logs": str(scratch),
    }
    print(json.dumps(result, indent=2) if options.json else report(result))
    bad = result["failed"] or result["stuck"] or result["calls_recorded_twice"]
    return 1 if bad else 0


def settings_pool(env: dict[str, str]) -> str:
    return env.get("WINK_DATABASE_POOL_MAX", "(settings default)")


def report(r: dict[str, Any]) -> str:
    full = r["sustained"]
    if full is None:
        rate = (
            "  sustained: not measured ("
            + (
                "a worker was killed"
                if r["killed_at_s"] is not None
                else "every run had a slot at once: queue more runs than the "
                "host runs at once, --runs"
            )
            + ")"
        )
    else:
        verdict = "MEETS" if full["percent_of_ideal"] >= 100 * TARGET else "MISSES"
        rate = (
            f"  sustained, while the host was full ({full['window_s']} s, "
            f"{full['runs']} runs started): {full['mean_in_flight']} in flight / "
            f"{full['mean_run_s']} s per run = {full['runs_per_s']:.2f} runs/s, "
            f"{full['percent_of_ideal']:.1f}% of the ideal "
            f"{r['ideal_runs_per_s']:.2f} (target {round(100 * TARGET)}%): {verdict}"
        )
    lines = [
        f"Runs in flight: {r['runs']} runs of {r['prompt']} queued at once, provider "
        f"delay {r['delay_s']:g} s, {r['hosts']} x make worker ("
        f"{r['processes_per_host']} process(es), pool {r['pool']}, concurrency "
        f"{r['concurrency']} per host) {' '.join(r['env'])}",
        f"  runs in flight: {r['runs_in_flight']} (sampled max running "
        f"{r['running_sampled_max']}); {r['provider_calls_per_run']} provider calls "
        "per run",
        rate,
        f"  all {r['runs']} runs, start-up and drain included: {r['runs_per_s']:.2f} "
        f"runs/s in {r['elapsed_s']} s from the dispatch to the last end, "
        f"{r['percent_of_ideal']:.1f}% of the ideal (at the runs seen in flight: "
        f"{r['percent_of_ideal_at_seen_flight']:.1f}%); the {r['runs']} messages "
        f"took {r['messages_sent_s']} s to send",
        f"  run wall p50 {r['run_wall_s']['p50']} s, p95 {r['run_wall_s']['p95']} "
        f"s, max {r['run_wall_s']['max']} s; queue wait p50 "
        f"{r['queue_wait_s']['p50']} s, p95 {r['queue_wait_s']['p95']} s",
        f"  worker PSS peak {r['peak_pss_mib']} MiB = "
        f"{r['pss_per_run_in_flight_mib']} MiB per run in flight",
        f"  peak PostgreSQL connections: {r['peak_pg_connections']} "
        f"(by state, each its peak: {r['peak_pg_connections_by_state']})",
        f"  transactions per run (every statement of the database, the "
        f"sampler's included): {r['transactions_per_run']}",
        f"  CPU per run (ms): worker {r['cpu_ms_per_run']['worker']}, provider "
        f"and bench {r['cpu_ms_per_run']['provider_and_bench']}",
        f"  failed {len(r['failed'])}, stuck {len(r['stuck'])}, claimed more than "
        f"once {r['claimed_more_than_once']}, calls recorded twice "
        f"{r['calls_recorded_twice']}, answered but not recorded "
        f"{r['requests_answered_not_recorded']} (of {r['requests_answered']})",
        f"  load average {r['load_average']}; logs {r['logs']}",
    ]
    lines += [f"  FAILED {f}" for f in r["failed"][:5]]
    lines += [f"  STUCK {f}" for f in r["stuck"][:5]]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs",
        type=int,
        default=0,
        help="runs queued at once (default: three times the runs the hosts "
        "keep in flight, so that the host runs full between start-up and drain)",
    )
    parser.add_argument("--delay", type=float, default=10.0, help="seconds")
    parser.add_argument("--prompt", default="demo/release")
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--broker-url", default=DEFAULT_BROKER_URL)
    parser.add_argument("--pool", default="", help="override the worker's pool")
    parser.add_argument(
        "--concurrency", type=int, default=0, help="runs in flight per host"
    )
    parser.add_argument(
        "--env", action="append", default=[], help="NAME=VALUE for the worker"
    )
    parser.add_argument("--connection-limit", type=int, default=0)
    parser.add_argument(
        "--hosts", type=int, default=1, help="make worker commands, as on N hosts"
    )
    parser.add_argument("--kill-after", type=float, default=0.0)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
