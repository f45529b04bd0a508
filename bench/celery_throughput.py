"""Celery throughput: runs per second with N workers against a slow provider.

The offline provider is served over loopback HTTP (``tooling.offline.OfflineServer``)
and holds every reply back ``--delay`` seconds (50 ms by default), like a model
that takes its time. ``--workers`` Celery worker processes (``celery -A
wink_project worker --concurrency 1`` each, the queues of ``make worker``
without beat) run ``--sessions`` sessions of ``--prompt``, started with
``sessions_app.services.start_session`` on PostgreSQL, through the broker.

The clock starts when the sessions are dispatched (one commit: their messages
leave together) and stops when the last one has ended (``finished_at``). The
ideal is what the workers would do if the provider's delay were the only
cost: ``workers / (mean provider calls per run x delay)``. The target is 85%
of it. Run with ``make bench-celery``; ``--help`` lists the options.

``--trace`` starts the workers on this module instead of ``wink_project`` (the
same Celery app, plus signal handlers that log when each task was received,
started and ended, with its SQL statements and CPU time): it shows where the
time between two runs goes. ``--profile`` adds a cProfile of each pool child.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wink_project.celery import app  # noqa: E402 (the workers' app, with --trace)

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/wink_bench_celery"
DEFAULT_BROKER_URL = "redis://127.0.0.1:6379/7"
TARGET = 0.85
QUEUES = "celery,wink-maintenance"  # as `make worker`; no beat
TRACE_ENV = "WINK_BENCH_TRACE_DIR"
PROFILE_ENV = "WINK_BENCH_PROFILE"
FINAL = ("succeeded", "failed", "cancelled")


# -- worker instrumentation (--trace): runs inside the worker processes -------


def _install_trace(directory: Path, profile: bool) -> None:
    """One JSON line per event, per process: task received (main process);
    task started and ended (pool child), with the SQL statements, the time in
    them and the CPU time of the task. With ``profile``, a cProfile of each
    pool child."""
    import cProfile

    from celery import signals
    from django.db import connections

    counters = {"statements": 0, "sql": 0.0}
    started: dict[str, tuple[float, float, float]] = {}

    def log(kind: str, **fields: Any) -> None:
        line = json.dumps(
            {"kind": kind, "pid": os.getpid(), "t": time.time(), **fields}
        )
        with open(directory / f"trace-{os.getpid()}.jsonl", "a") as out:
            out.write(line + "\n")

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        began = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            counters["statements"] += 1
            counters["sql"] += time.perf_counter() - began

    @signals.task_received.connect(weak=False)
    def received(request: Any = None, **_: Any) -> None:
        log("received", task_id=request.id)

    @signals.task_prerun.connect(weak=False)
    def prerun(task_id: str = "", args: Sequence[Any] = (), **_: Any) -> None:
        started[task_id] = (
            time.process_time(),
            counters["statements"],
            counters["sql"],
        )
        log("prerun", task_id=task_id, session=str(args[0]) if args else "")

    @signals.task_postrun.connect(weak=False)
    def postrun(task_id: str = "", **_: Any) -> None:
        cpu, statements, sql = started.pop(task_id, (0.0, 0, 0.0))
        log(
            "postrun",
            task_id=task_id,
            cpu=time.process_time() - cpu,
            statements=counters["statements"] - statements,
            sql=counters["sql"] - sql,
        )

    profiler = cProfile.Profile()

    @signals.worker_process_init.connect(weak=False)
    def child_started(**_: Any) -> None:
        connections["default"].execute_wrappers.append(count)
        if profile:
            profiler.enable()

    @signals.worker_process_shutdown.connect(weak=False)
    def child_stopped(**_: Any) -> None:
        if profile:
            profiler.disable()
            profiler.dump_stats(str(directory / f"child-{os.getpid()}.prof"))


if os.environ.get(TRACE_ENV):
    _install_trace(Path(os.environ[TRACE_ENV]), bool(os.environ.get(PROFILE_ENV)))


# -- setup ---------------------------------------------------------------------


def recreate_database(url: str) -> None:
    """Drop and create the bench database."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not parts.scheme.startswith("postgres") or name in ("", "postgres"):
        raise SystemExit("--database-url must name a PostgreSQL database of its own.")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def process_env(
    options: argparse.Namespace, base_url: str, trace_dir: Path | None
) -> dict[str, str]:
    """The environment of the workers (and of this process): the bench
    database and broker, the provider over HTTP, production's DEBUG=0."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "wink_project.settings",
        "DEBUG": "0",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
        "DATABASE_URL": options.database_url,
        "CELERY_BROKER_URL": options.broker_url,
        "WINK_PROVIDER": "openai",
        "OPENAI_API_KEY": "sk-offline",
        "OPENAI_BASE_URL": base_url,
        "LOG_LEVEL": os.environ.get("LOG_LEVEL", "WARNING"),
        "WINK_PROCESS": "worker",  # as make worker
    }
    for name in ("CELERY_RESULT_BACKEND", TRACE_ENV, PROFILE_ENV):
        env.pop(name, None)
    if trace_dir is not None:
        env[TRACE_ENV] = str(trace_dir)
        if options.profile:
            env[PROFILE_ENV] = "1"
    return env


def setup_django(env: dict[str, str]) -> None:
    os.environ.update(env)
    for name in (TRACE_ENV, PROFILE_ENV):  # this process is not traced
        os.environ.pop(name, None)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from tooling.demo import seed_demo_catalog

    seed_demo_catalog()
    # Messages an interrupted earlier run left on the runs' queue.
    with app.connection_for_write() as conn, contextlib.suppress(Exception):
        conn.default_channel.queue_purge("celery")


# -- workers -------------------------------------------------------------------


class Worker:
    """One ``celery worker`` process in its own process group."""

    def __init__(self, name: str, env: dict[str, str], log_path: Path, trace: bool):
        self.name = name
        self.log_path = log_path
        args = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "bench.celery_throughput" if trace else "wink_project",
            "worker",
            "--loglevel=INFO",
            f"--queues={QUEUES}",
            "--concurrency=1",
            f"--hostname={name}@%h",
        ]
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                args,
                cwd=ROOT,
                # a prefork child per run, as this bench has always measured
                # (make worker's threads: make bench-concurrency)
                env={**env, "WINK_WORKER_POOL": "prefork"},
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def check(self) -> None:
        if self.process.poll() is not None:
            output = self.log_path.read_text(errors="replace")
            raise SystemExit(f"worker {self.name} exited:\n{output}")

    def stop(self) -> None:
        """SIGTERM (a warm shutdown), then SIGKILL what is left of the group."""
        if self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=20)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)


def wait_ready(workers: list[Worker], seconds: float = 90) -> None:
    """Wait until every worker answers a ping (connected, consuming)."""
    names = {f"{worker.name}@{platform.node()}" for worker in workers}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for worker in workers:
            worker.check()
        replies = app.control.ping(destination=sorted(names), timeout=1.0) or []
        if names <= {name for reply in replies for name in reply}:
            return
    raise SystemExit("the workers did not start in time")


# -- one round -----------------------------------------------------------------


def machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as stat:
        fields = [float(value) for value in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system, every thread) a process has used so far."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (float(fields[11]) + float(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_snapshot(workers: list[Worker]) -> dict[str, float]:
    """CPU used so far: the machine (busy and total jiffies), the workers' main
    processes, their pool children, and this process (the provider)."""
    busy, total = machine_cpu()
    mains = [worker.process.pid for worker in workers]
    children: list[int] = []
    for pid in mains:
        with contextlib.suppress(OSError):
            children += [
                int(c)
                for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            ]
    return {
        "machine_busy": busy,
        "machine_total": total,
        "worker main processes": sum(process_cpu(pid) for pid in mains),
        "pool children": sum(process_cpu(pid) for pid in children),
        "this process (provider, polling)": process_cpu(os.getpid()),
    }


def run_round(
    prompt: str, count: int, workers: list[Worker], timeout: float
) -> tuple[list[Any], float, dict[str, float]]:
    """Start ``count`` sessions in one transaction (their messages are sent
    when it commits) and wait for all of them to end. Returns their ids, the
    time they were dispatched and the CPU used meanwhile."""
    from django.db import transaction

    from sessions_app import services
    from sessions_app.models import AgentSession

    with transaction.atomic():
        ids = [
            services.start_session(prompt_ref=prompt, params={}).pk
            for _ in range(count)
        ]
        before = cpu_snapshot(workers)
        dispatched = time.time()  # the commit, then every message, follow
    deadline = time.monotonic() + timeout
    while AgentSession.objects.filter(pk__in=ids, status__in=FINAL).count() < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"the sessions did not all end within {timeout:.0f} s")
        for worker in workers:
            worker.check()
        time.sleep(0.1)
    after = cpu_snapshot(workers)
    used = {name: after[name] - before[name] for name in after}
    return ids, dispatched, used


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, round(fraction * len(ordered)))) - 1]


def _ms(values: Sequence[float], scale: float = 1000) -> dict[str, float]:
    """Mean, p50 and p95 of seconds, in milliseconds (or times ``scale``)."""
    return {
        "mean": round(statistics.fmean(values) * scale, 1) if values else 0.0,
        "p50": round(percentile(values, 0.50) * scale, 1),
        "p95": round(percentile(values, 0.95) * scale, 1),
        "count": len(values),
    }


def measure(
    ids: list[Any],
    dispatched: float,
    cpu: dict[str, float],
    options: argparse.Namespace,
) -> dict[str, Any]:
    """Throughput, per-run times and the gaps between runs, from the record."""
    from sessions_app.models import AgentSession, ProviderCall

    sessions: list[dict[str, Any]] = [
        dict(row)
        for row in AgentSession.objects.filter(pk__in=ids).values(
            "pk", "status", "error_phase", "error_message", "attempts", "worker",
            "started_at", "finished_at",
        )
    ]  # fmt: skip
    calls: dict[Any, list[tuple[int, float, float]]] = defaultdict(list)
    for session_id, turn, latency_ms, created_at in ProviderCall.objects.filter(
        session_id__in=ids
    ).values_list("session_id", "turn", "latency_ms", "created_at"):
        calls[session_id].append((turn, latency_ms / 1000, created_at.timestamp()))
    for row in sessions:
        row["started"] = row["started_at"].timestamp()
        row["finished"] = row["finished_at"].timestamp()
        made = sorted(calls[row["pk"]])
        row["calls"] = len(made)
        row["provider"] = sum(latency for _, latency, _ in made)
        # The first request left at its response's created_at minus its
        # latency; the last response was recorded at its created_at.
        row["first_sent"] = made[0][2] - made[0][1] if made else None
        row["last_recorded"] = made[-1][2] if made else None
    mean_calls = statistics.fmean(row["calls"] for row in sessions)
    if not mean_calls:
        raise SystemExit("the runs made no provider calls: nothing to compare with")
    elapsed = max(row["finished"] for row in sessions) - dispatched
    rate = len(sessions) / elapsed
    ideal = options.workers / (mean_calls * options.delay)
    walls = [row["finished"] - row["started"] for row in sessions]
    by_worker: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in sessions:
        by_worker[row["worker"]].append(row)
    gaps: list[float] = []
    for runs in by_worker.values():
        runs.sort(key=lambda row: row["started"])
        gaps += [b["started"] - a["finished"] for a, b in itertools.pairwise(runs)]
    return {
        "sessions": len(sessions),
        "failed": [
            f"{row['pk']}: {row['status']} {row['error_phase']} {row['error_message']}"
            for row in sessions
            if row["status"] != "succeeded"
        ],
        "retried": sum(1 for row in sessions if row["attempts"] > 1),
        "provider_calls_per_run": round(mean_calls, 3),
        "elapsed_s": round(elapsed, 3),
        "runs_per_s": round(rate, 3),
        "ideal_runs_per_s": round(ideal, 3),
        "percent_of_ideal": round(100 * rate / ideal, 1),
        "meets_target": rate >= TARGET * ideal,
        "cpu_busy_percent": round(
            100 * cpu.pop("machine_busy") / max(cpu.pop("machine_total"), 1), 1
        ),
        "cpu_per_run_ms": {
            name: round(1000 * seconds / len(sessions), 1)
            for name, seconds in cpu.items()
        },
        "run_wall_ms": _ms(walls),
        "run_provider_ms": _ms([row["provider"] for row in sessions]),
        "run_overhead_ms": _ms(
            [wall - row["provider"] for wall, row in zip(walls, sessions, strict=True)]
        ),
        "claim_to_first_request_ms": _ms(
            [row["first_sent"] - row["started"] for row in sessions if row["calls"]]
        ),
        "last_response_to_end_ms": _ms(
            [row["finished"] - row["last_recorded"] for row in sessions if row["calls"]]
        ),
        "gap_between_runs_ms": _ms(gaps),
        "processes": len(by_worker),
    }


# -- the trace (--trace) ---------------------------------------------------------


def read_trace(directory: Path, rounds: list[list[Any]]) -> dict[str, Any]:
    """Split each gap between two runs of one pool child (in one round) into:
    run ended -> task returned (postrun), postrun -> next message received
    (ack, fetch), received -> started in the child, started -> claimed; and
    what one task costs in SQL statements, SQL time and CPU."""
    from sessions_app.models import AgentSession

    events: list[dict[str, Any]] = []
    for path in directory.glob("trace-*.jsonl"):
        events += [json.loads(line) for line in path.read_text().splitlines()]
    received = {e["task_id"]: e["t"] for e in events if e["kind"] == "received"}
    postrun = {e["task_id"]: e for e in events if e["kind"] == "postrun"}
    prerun = {e["session"]: e for e in events if e["kind"] == "prerun"}
    phases: dict[str, list[float]] = defaultdict(list)
    statements: list[float] = []
    for ids in rounds:
        rows = {
            str(pk): (started.timestamp(), finished.timestamp())
            for pk, started, finished in AgentSession.objects.filter(
                pk__in=ids
            ).values_list("pk", "started_at", "finished_at")
            if started is not None and finished is not None
        }
        by_pid: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for session in rows:
            if session in prerun:
                by_pid[prerun[session]["pid"]].append(prerun[session])
        for runs in by_pid.values():
            runs.sort(key=lambda e: e["t"])
            for before, after in itertools.pairwise(runs):
                returned = postrun.get(before["task_id"])
                got = received.get(after["task_id"])
                if returned is None or got is None:
                    continue
                phases["run ended -> task returned"].append(
                    returned["t"] - rows[before["session"]][1]
                )
                phases["task returned -> next received"].append(got - returned["t"])
                phases["received -> started in child"].append(after["t"] - got)
                phases["started in child -> claimed"].append(
                    rows[after["session"]][0] - after["t"]
                )
            for event in runs:
                if (done := postrun.get(event["task_id"])) is not None:
                    phases["per task: CPU time of the child"].append(done["cpu"])
                    phases["per task: time in SQL"].append(done["sql"])
                    statements.append(done["statements"])
    return {
        **{name: _ms(values) for name, values in phases.items()},
        "per task: SQL statements (count)": _ms(statements, scale=1),
    }


def profile_summary(directory: Path, limit: int = 30) -> str:
    import io
    import pstats

    files = sorted(str(path) for path in directory.glob("child-*.prof"))
    if not files:
        return "(no profile: the pool children did not shut down cleanly)"
    out = io.StringIO()
    pstats.Stats(*files, stream=out).sort_stats("cumulative").print_stats(limit)
    return out.getvalue()


# -- report ----------------------------------------------------------------------


def report(result: dict[str, Any]) -> str:
    def dist(value: dict[str, float]) -> str:
        return (
            f"mean {value['mean']:.1f}, p50 {value['p50']:.1f}, p95 {value['p95']:.1f}"
        )

    verdict = "MEETS" if result["meets_target"] else "MISSES"
    lines = [
        f"Celery throughput: {result['sessions']} sessions of {result['prompt']} x "
        f"{result['rounds']} rounds, {result['workers']} workers x concurrency 1 "
        f"(prefork), broker {result['broker']}, provider delay "
        f"{result['delay_ms']:.0f} ms, DEBUG off",
        f"  {result['provider_calls_per_run']:.2f} provider calls per run; "
        f"failed {len(result['failed'])}, retried {result['retried']}",
        "  % of ideal per round: "
        + ", ".join(f"{value:.1f}" for value in result["percent_of_ideal_per_round"])
        + "; the median round:",
        f"  runs/s: {result['runs_per_s']:.2f}   ideal: "
        f"{result['ideal_runs_per_s']:.2f}   {result['percent_of_ideal']:.1f}% of "
        f"ideal (target {round(100 * TARGET)}%): {verdict}",
        f"  elapsed {result['elapsed_s']:.2f} s (dispatch -> last end); machine CPU "
        f"busy {result['cpu_busy_percent']:.0f}% ({result['cpus']} cores); "
        f"load average {' '.join(str(v) for v in result['load_average'])}",
        f"  per run, claim -> end (ms):      {dist(result['run_wall_ms'])}",
        f"    provider latency (ms):         {dist(result['run_provider_ms'])}",
        f"    the rest (ms):                 {dist(result['run_overhead_ms'])}",
        f"      claim -> first request (ms): "
        f"{dist(result['claim_to_first_request_ms'])}",
        f"      last response -> end (ms):   {dist(result['last_response_to_end_ms'])}",
        f"  end -> next claim, same process (ms): "
        f"{dist(result['gap_between_runs_ms'])}",
        "  CPU per run (ms): "
        + ", ".join(
            f"{name} {ms:.1f}" for name, ms in result["cpu_per_run_ms"].items()
        ),
    ]
    lines += [f"  FAILED {failure}" for failure in result["failed"][:5]]
    if "trace" in result:
        lines.append("  from --trace (ms; statements as a count):")
        for name, value in result["trace"].items():
            lines.append(f"    {name:34} {dist(value)}")
    return "\n".join(lines)


# -- main ------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=60, help="runs per round")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds; the median is reported"
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument(
        "--delay", type=float, default=0.05, help="provider reply delay (seconds)"
    )
    parser.add_argument("--prompt", default="demo/release", help="prompt to run")
    parser.add_argument(
        "--database-url",
        default=DEFAULT_DATABASE_URL,
        help="a PostgreSQL database of its own: dropped and created",
    )
    parser.add_argument("--broker-url", default=DEFAULT_BROKER_URL)
    parser.add_argument(
        "--trace", action="store_true", help="time each task's phases in the workers"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="with --trace: cProfile the pool children",
    )
    parser.add_argument("--timeout", type=float, default=600, help="seconds per round")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    options = parser.parse_args(argv)
    if min(options.sessions, options.workers, options.rounds) < 1:
        parser.error("--sessions, --workers and --rounds must be at least 1")
    if options.delay <= 0:
        parser.error("--delay must be above 0")
    options.trace = options.trace or options.profile
    return options


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    from tooling.offline import OfflineServer

    recreate_database(options.database_url)
    server = OfflineServer(delay=options.delay).start()
    workers: list[Worker] = []
    rounds: list[tuple[dict[str, Any], list[Any]]] = []
    with tempfile.TemporaryDirectory(prefix="wink-bench-celery-") as scratch:
        trace_dir = Path(scratch) / "trace" if options.trace else None
        if trace_dir is not None:
            trace_dir.mkdir()
        try:
            env = process_env(options, server.base_url, trace_dir)
            setup_django(env)
            workers = [
                Worker(f"bench{n}", env, Path(scratch) / f"bench{n}.log", options.trace)
                for n in range(1, options.workers + 1)
            ]
            wait_ready(workers)
            # Warm-up: each pool child imports, connects and builds its client.
            run_round(options.prompt, 2 * options.workers, workers, options.timeout)
            for _ in range(options.rounds):
                ids, dispatched, cpu = run_round(
                    options.prompt, options.sessions, workers, options.timeout
                )
                rounds.append((measure(ids, dispatched, cpu, options), ids))
        finally:
            for worker in workers:
                worker.stop()
            server.stop()
        rounds.sort(key=lambda pair: pair[0]["runs_per_s"])
        result = rounds[len(rounds) // 2][0]
        result.update(
            prompt=options.prompt,
            workers=options.workers,
            rounds=len(rounds),
            broker=urlsplit(options.broker_url).scheme,
            delay_ms=round(options.delay * 1000, 1),
            percent_of_ideal_per_round=[pair[0]["percent_of_ideal"] for pair in rounds],
            failed=[failure for pair in rounds for failure in pair[0]["failed"]],
            python=platform.python_version(),
            cpus=os.cpu_count(),
            load_average=[round(value, 2) for value in os.getloadavg()],
        )
        if trace_dir is not None:
            result["trace"] = read_trace(trace_dir, [ids for _, ids in rounds])
        if options.json:
            print(json.dumps(result, indent=2))
        else:
            print(report(result))
            if options.profile and trace_dir is not None:
                print(profile_summary(trace_dir))
    return 0 if not result["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
