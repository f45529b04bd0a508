"""The process's provider helper threads: with a deadline or a heartbeat, a
request to the model runs on one of them while the run's thread waits in
short slices (``sending.Sender``). One pool per process (a forked child makes
its own), at least one thread per run the process keeps in flight
(``set_helper_threads``: a worker's concurrency), or the calls queue for them.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading

_pool: concurrent.futures.ThreadPoolExecutor | None = None
_lock = threading.Lock()
_threads = 32


def set_helper_threads(count: int) -> None:
    """How many provider calls this process may have in flight at once (a
    worker: its concurrency). Takes effect for a pool not yet made
    (``reset``)."""
    global _threads
    _threads = max(1, count)


def reset() -> None:
    """Forget the pool: the next call makes one (after a fork, or with
    another number of threads)."""
    global _pool
    _pool = None


os.register_at_fork(after_in_child=reset)


def executor() -> concurrent.futures.ThreadPoolExecutor:
    """The process's pool of helper threads (made on first use)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=_threads, thread_name_prefix="wink-provider"
            )
        return _pool
