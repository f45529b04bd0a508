"""A worker host's settings (``WINK_WORKER_*``, ``WINK_DATABASE_POOL_*``) and
``make worker``'s launcher (``wink_project/workers.py``): the host's runs in
flight and connections are shared among its processes; each process gets a
node name of its own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.limits import SUBPROCESS_SECONDS
from wink_project.workers import node_args

ROOT = Path(__file__).resolve().parents[1]
PG = "postgres://postgres@127.0.0.1:5432/wink_settings_probe"

PROBE = """
import json
from django.conf import settings
pool = settings.DATABASES["default"].get("OPTIONS", {}).get("pool")
control = settings.DATABASES.get("control", {}).get("OPTIONS", {}).get("pool")
print(json.dumps({
    "processes": settings.WINK_WORKER_PROCESSES,
    "concurrency": settings.CELERY_WORKER_CONCURRENCY,
    "pool": settings.CELERY_WORKER_POOL,
    "runs_pool": pool and pool["max_size"],
    "control_pool": control and control["max_size"],
    "control": settings.CONTROL_DATABASE,
    "batched": settings.WINK_RUN_BATCHED_LEASES,
    "keepalives_idle": settings.DATABASES["default"]["OPTIONS"].get("keepalives_idle"),
}))
"""


def settings_with(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("WINK_", "DATABASE_URL", "DJANGO_SETTINGS"))
    }
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()\n" + PROBE],
        cwd=ROOT,
        env={**clean, "DEBUG": "1", "DJANGO_SETTINGS_MODULE": "wink_project.settings",
             **env},
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
    )  # fmt: skip


def worker_settings(**env: str) -> dict[str, Any]:
    result = settings_with(**env)
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


def test_a_worker_host_shares_its_runs_and_connections_among_its_processes() -> None:
    host = worker_settings(
        DATABASE_URL=PG, WINK_PROCESS="worker", WINK_WORKER_PROCESSES="2"
    )
    assert host == {
        "processes": 2,
        "concurrency": 250,  # 500 runs in flight per host
        "pool": "threads",
        "runs_pool": 9,  # 20 connections per host: 10 each, one for leases
        "control_pool": 1,
        "control": "control",
        "batched": True,
        "keepalives_idle": 30,  # a path that died silently is found in a minute
    }


def test_a_web_process_has_no_pool_and_renews_its_own_leases() -> None:
    web = worker_settings(DATABASE_URL=PG, WINK_WORKER_PROCESSES="2")
    assert (web["runs_pool"], web["control"], web["batched"]) == (
        None,
        "default",
        False,
    )


def test_sqlite_and_prefork_workers_keep_a_few_runs_in_one_process() -> None:
    sqlite = worker_settings(WINK_PROCESS="worker")
    assert (sqlite["processes"], sqlite["concurrency"], sqlite["runs_pool"]) == (
        1,
        8,
        None,
    )
    prefork = worker_settings(
        DATABASE_URL=PG,
        WINK_PROCESS="worker",
        WINK_WORKER_POOL="prefork",
        WINK_WORKER_PROCESSES="4",  # not prefork's: Celery starts its children
        WINK_WORKER_CONCURRENCY="4",
    )
    # four children, each its share of the host's 20 connections
    assert (prefork["processes"], prefork["concurrency"]) == (1, 4)
    assert (prefork["runs_pool"], prefork["control_pool"]) == (4, 1)


def test_a_host_of_many_cpus_gets_three_connections_per_process() -> None:
    big = worker_settings(
        DATABASE_URL=PG, WINK_PROCESS="worker", WINK_WORKER_PROCESSES="8"
    )
    assert (big["processes"], big["concurrency"], big["runs_pool"]) == (8, 63, 2)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"WINK_WORKER_POOL": "gevent"}, "WINK_WORKER_POOL must be threads"),
        (
            {"WINK_DATABASE_POOL_SIZE": "5", "WINK_WORKER_PROCESSES": "2"},
            "must be 0 or at least 3 per worker process",
        ),
    ],
)
def test_worker_settings_refuse_what_cannot_work(env: dict[str, str], message: str):
    result = settings_with(DATABASE_URL=PG, WINK_PROCESS="worker", **env)
    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.parametrize(
    ("args", "number", "expected"),
    [
        (["--loglevel=INFO"], 1, ["--loglevel=INFO", "--hostname=w1@%h"]),
        (["--hostname=host2@%h", "-Q", "a"], 2, ["--hostname=host2-2@%h", "-Q", "a"]),
        (["-n", "bench1@box"], 3, ["--hostname=bench1-3@box"]),
        (["--hostname", "plain"], 1, ["--hostname=plain-1"]),
    ],
)
def test_each_process_of_a_host_gets_a_node_name_of_its_own(
    args: list[str], number: int, expected: list[str]
) -> None:
    assert node_args(args, number) == expected


# -- the launcher's supervision, with stand-ins for `celery worker` ---------------


@pytest.fixture
def launcher(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """``wink_project.workers`` with each worker a small Python process that
    notes each start in ``tmp_path``; the test process's signal handlers
    restored afterwards."""
    from wink_project import workers

    saved = {signum: signal.getsignal(signum) for signum in workers.FORWARDED}
    monkeypatch.setattr(workers, "RESTART_DELAYS", (0.05, 0.05))
    yield workers
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def stand_in(tmp_path: Path, body: str, setup: str = "") -> Any:
    """A worker's command: ``setup``, then a note that it started, then
    ``body``."""

    def command(args: Any) -> list[str]:
        name = next(a for a in args if a.startswith("--hostname=")).split("=")[1]
        note = f"open({str(tmp_path / 'starts')!r}, 'a').write({name!r} + '\\n')\n"
        return [sys.executable, "-c", setup + note + body]

    return command


def test_a_worker_that_keeps_dying_stops_the_host_with_its_status(
    launcher: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(
        launcher,
        "celery_command",
        stand_in(tmp_path, "import sys, time\ntime.sleep(0.1)\nsys.exit(3)"),
    )

    assert launcher.run([], 2) == 3

    starts = (tmp_path / "starts").read_text().split()
    # each started, then again after each pause, until one died once more
    assert starts.count("w1@%h") >= 2 and starts.count("w2@%h") >= 2
    assert max(starts.count("w1@%h"), starts.count("w2@%h")) == 3


def test_a_signal_stops_every_worker_once_and_the_host_exits_0(
    launcher: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # the handler before the note: on a slow machine the test's signal came
    # between the note and the handler, and the worker died of it (143)
    setup = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
    )
    monkeypatch.setattr(
        launcher, "celery_command", stand_in(tmp_path, "time.sleep(120)\n", setup)
    )

    def stop_when_both_started() -> None:
        deadline = time.monotonic() + SUBPROCESS_SECONDS
        while time.monotonic() < deadline:
            starts = tmp_path / "starts"
            if starts.exists() and len(starts.read_text().split()) == 2:
                os.kill(os.getpid(), signal.SIGTERM)
                return
            time.sleep(0.05)

    threading.Thread(target=stop_when_both_started, daemon=True).start()

    assert launcher.run([], 2) == 0
    assert sorted((tmp_path / "starts").read_text().split()) == ["w1@%h", "w2@%h"]
