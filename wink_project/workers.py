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
  warm and cold shutdowns); when one ends, the others are stopped (SIGTERM)
  and this exits with the first one's status, so the supervisor restarts the
  host's workers together. A supervisor that kills with SIGKILL must kill
  the whole group (systemd's and containers' default): the workers run in
  sessions of their own.

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


def run(args: Sequence[str], processes: int) -> int:
    """Start ``processes`` workers with ``args``; the first exit status."""
    if processes <= 1:
        command = celery_command(args)
        os.execv(command[0], command)
    # each in a session of its own: a terminal's Ctrl-C reaches them once,
    # from here (twice would be Celery's cold shutdown)
    children = [
        subprocess.Popen(celery_command(node_args(args, n)), start_new_session=True)
        for n in range(1, processes + 1)
    ]

    def forward(signum: int, _frame: FrameType | None) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    while (first := next((c for c in children if c.poll() is not None), None)) is None:
        time.sleep(0.2)
    for child in children:
        if child.poll() is None:
            child.terminate()
    for child in children:
        child.wait()
    code = first.returncode
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
