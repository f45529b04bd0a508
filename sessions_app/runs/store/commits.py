"""How a run's writes reach the database: each in one ``transaction.atomic()``,
written again on a new connection when the connection is lost, and the run's
last commit durable.

This is the only module of the run that sends statement text of its own
(``durable()``); everything else is the ORM. ``tests/test_store_door.py``
checks that.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import (
    DEFAULT_DB_ALIAS,
    InterfaceError,
    OperationalError,
    connection,
    connections,
    transaction,
)
from django.db.backends.base.base import BaseDatabaseWrapper

logger = logging.getLogger(__name__)

T = TypeVar("T")

# A commit that lost the database connection is made again on a new
# connection after each of these pauses (seconds) before the run gives up to
# its resume (which would run a finished handler again).
RECOMMIT_DELAYS = (0.1, 0.5, 2.0)

LOST = (OperationalError, InterfaceError)


def commit(
    write: Callable[[], T],
    *,
    done: Callable[[], bool] | None = None,
    atomic: bool = True,
) -> T | None:
    """``write()`` in one transaction; its result. ``atomic=False``: a write
    of one statement, which commits on its own (autocommit).

    If the connection is lost, and ``done`` says whether a lost commit did
    go through (only its reply was lost), the write is made again on a new
    connection after each of ``RECOMMIT_DELAYS`` unless ``done()`` (then
    ``None``); the last error if every attempt loses it too. Without
    ``done``, or inside a caller's transaction (which the lost connection
    broke), the error goes up as it came."""
    try:
        result = _once(write, atomic)
        release()
        return result
    except LOST as error:
        if done is None or connection.in_atomic_block:
            raise
        lost: Exception = error
    for attempt, delay in enumerate(RECOMMIT_DELAYS, start=1):
        logger.warning(
            "A run's commit lost the database connection (%s); making it again "
            "on a new connection (%d/%d)",
            type(lost).__name__,
            attempt,
            len(RECOMMIT_DELAYS),
        )
        time.sleep(delay)
        reconnect()
        try:
            if done():
                release()
                return None
            result = _once(write, atomic)
            release()
            return result
        except LOST as again:
            lost = again
    raise lost


def _once(write: Callable[[], T], atomic: bool) -> T:
    if not atomic:
        return write()
    with transaction.atomic():
        return write()


def release(alias: str = DEFAULT_DB_ALIAS) -> None:
    """Give this thread's connection to ``alias`` back to its pool, when it
    has one (a pooled worker, ADR 0022): a run holds a connection only while
    it reads or writes, never while it waits for the model. Nothing inside a
    transaction, nor without a pool (a persistent connection stays). A
    connection found dead is discarded, and the pool's idle ones checked
    (``purge``)."""
    wrapper = connections[alias]
    if wrapper.in_atomic_block or not _pooled(wrapper):
        return
    raw = wrapper.connection
    dead = raw is not None and bool(raw.closed or raw.broken)
    try:
        wrapper.close()  # Django's pooled close() puts it back
    except Exception:  # a broken connection: the pool discards it
        logger.debug("Returning the connection to the pool failed", exc_info=True)
    if dead:
        purge(alias)


def reconnect() -> None:
    """Drop the broken connection; the next query opens a new one, with the
    settings' ``OPTIONS`` (a worker's ``synchronous_commit``), or takes one
    from the pool that works (``purge``)."""
    try:
        connection.close()
    except Exception:  # a dead connection may fail to close: it is gone anyway
        logger.debug("Closing the broken connection failed", exc_info=True)
    if _pooled(connection) and not connection.in_atomic_block:
        purge()


def purge(alias: str = DEFAULT_DB_ALIAS) -> None:
    """Test each idle connection of ``alias``'s pool and discard the dead
    ones (the pool makes new ones); called once a connection was found dead.

    The pool hands its connections out unchecked (a check per checkout would
    cost a round trip per step, ADR 0022). When the server ends its backends
    (a restart, a failover, ``pg_terminate_backend``, an idle timeout), every
    idle connection in the pool is dead at once: without this, each attempt
    to go on (a commit made again, a run resumed, the next sweep or lease
    renewal) would take the next dead one and fail again, until the attempts
    run out. One thread checks a pool at a time; another that finds a
    connection dead meanwhile goes on (the idle ones are out of the pool
    while they are checked: it gets a checked one, or a new one)."""
    # psycopg_pool's ConnectionPool (Django's PostgreSQL wrapper's ``pool``)
    pool = getattr(connections[alias], "pool", None)
    lock = _purging.setdefault(alias, threading.Lock())
    if pool is None or not lock.acquire(blocking=False):
        return
    try:
        pool.check()
    except Exception:  # the server is unreachable: the next attempt says so
        logger.debug("Checking the pool's idle connections failed", exc_info=True)
    finally:
        lock.release()


#: one pool check at a time per alias (``purge``)
_purging: dict[str, threading.Lock] = {}


def _pooled(wrapper: BaseDatabaseWrapper) -> bool:
    return bool(wrapper.settings_dict["OPTIONS"].get("pool"))


def durable() -> None:
    """Inside a transaction: it commits durably (PostgreSQL flushes its log up
    to it before the commit returns) even on a worker connection whose
    commits do not wait (``synchronous_commit=off``, settings). A run's pause
    and end commit this way, so every earlier commit of the run is on disk
    before anyone hears of the run's end. Nothing on other databases."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO on")
