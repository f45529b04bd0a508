"""``make worker``: the host's Celery workers, one per ``WINK_WORKER_PROCESSES``.

A worker on Celery's threads pool runs Python on one CPU at a time, however
many runs it keeps in flight; a host with more CPUs runs more processes, each
with its share of the host's runs in flight and database connections
(settings: ``WINK_WORKER_CONCURRENCY``, ``WINK_DATABASE_POOL_SIZE``). Celery
has no pool that is both (its prefork children run one task each), and
``celery multi`` only starts detached daemons; so this starts the processes
in the foreground, as one unit for a supervisor (systemd, a container):

- one process: ``celery worker`` itself (``exec``), nothing in between;
- several: each ``celery -A wink_project worker`` with its own node name
  (``w1@%h``, ``w2@%h``, ... or ``<name>-1@<host>`` from ``--hostname``);
  SIGTERM, SIGINT, SIGQUIT and SIGHUP are passed on to every one (Celery's
  warm and cold shutdowns) and this exits once all have, with the first
  failure's status (or 0). A worker that dies unasked (killed, out of
  memory) is started again in its place after a pause (``RESTART_DELAYS``),
  as Celery's prefork pool replaces a child; the others' runs go on, and the
  dead one's resume from their record. One that keeps dying stops the host
  (a status for the supervisor). A supervisor that kills with SIGKILL must
  kill the whole cgroup (systemd's and containers' default): the workers run
  in sessions of their own, and a launcher killed alone leaves them running.

Usage: ``python -m wink_project.workers [celery worker options]``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)


def celery_command(args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "wink_project", "worker", *args]


def node_args(args: Sequence[str], number: int) -> list[str]:
    """``args`` for the ``number``-th process: its own node name."""
    out: list[str] = []
    named = False
    items = list(args)
    index = 0
    while index < len(items):
        arg = items[index]
        value = None
        if arg.startswith("--hostname=") or arg.startswith("-n="):
            value = arg.split("=", 1)[1]
        elif arg in ("--hostname", "-n") and index + 1 < len(items):
            index += 1
            value = items[index]
        if value is None:
            out.append(arg)
        else:
            name, at, host = value.partition("@")
            out.append(f"--hostname={name}-{number}{at}{host}")
            named = True
        index += 1
    if not named:
        out.append(f"--hostname=w{number}@%h")
    return out


#: pauses before a worker that died unasked is started again, after each of
#: its deaths in a row (a death within ``QUICK`` seconds of its start counts
#: on; a later one starts the count again); one more and the host stops
RESTART_DELAYS = (1.0, 2.0, 5.0, 10.0, 30.0)
QUICK = 60.0


def run(args: Sequence[str], processes: int) -> int:
    """Start ``processes`` workers with ``args`` and keep them running until
    a signal stops them all; the exit status (the first failure's, or 0)."""
    if processes <= 1:
        command = celery_command(args)
        os.execv(command[0], command)
    children: dict[int, subprocess.Popen[bytes]] = {}
    stopping: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)
        for child in children.values():
            if child.poll() is None:
                child.send_signal(signum)

    for signum in FORWARDED:  # before any child exists: none is left behind
        signal.signal(signum, forward)
    started: dict[int, float] = {}
    deaths = dict.fromkeys(range(1, processes + 1), 0)
    due: dict[int, float] = {}  # restarts waiting for their pause

    def start(number: int) -> None:
        # each in a session of its own: a terminal's Ctrl-C reaches them
        # once, from here (twice would be Celery's cold shutdown)
        children[number] = subprocess.Popen(
            celery_command(node_args(args, number)), start_new_session=True
        )
        started[number] = time.monotonic()

    for number in deaths:
        start(number)
    failed = 0
    while not (stopping and all(c.poll() is not None for c in children.values())):
        now = time.monotonic()
        for number, child in children.items():
            code = child.poll()
            if code is None or stopping or number in due:
                continue
            # died unasked (killed, out of memory): start it again in place,
            # the others' runs go on; its own resume from their record
            deaths[number] = deaths[number] + 1 if now - started[number] < QUICK else 1
            if deaths[number] > len(RESTART_DELAYS):
                print(
                    f"worker {number} keeps exiting ({code}): stopping", file=sys.stderr
                )
                failed = failed or _status(code)
                forward(signal.SIGTERM, None)
                break
            due[number] = now + RESTART_DELAYS[deaths[number] - 1]
            print(
                f"worker {number} exited ({code}); starting it again in "
                f"{RESTART_DELAYS[deaths[number] - 1]:g} s",
                file=sys.stderr,
            )
        for number, when in list(due.items()):
            if stopping:
                due.clear()
            elif when <= now:
                del due[number]
                start(number)
        time.sleep(0.2)
    return failed or next(
        (_status(c.returncode) for c in children.values() if c.returncode), 0
    )


def _status(code: int) -> int:
    """A child's exit code as a shell reports it (128 + a signal)."""
    return code if code >= 0 else 128 - code


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wink_project.settings")
    from django.conf import settings

    processes = int(settings.WINK_WORKER_PROCESSES)
    if settings.WINK_WORKER_POOL != "threads":
        processes = 1  # prefork and solo: Celery's own processes
    sys.exit(run(sys.argv[1:], processes))


if __name__ == "__main__":
    main()
