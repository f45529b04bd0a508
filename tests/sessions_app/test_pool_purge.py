"""A pooled worker's connections after the server ended them all
(``runs.store.commits.release``, ``purge``; ADR 0022), on PostgreSQL.

A worker's pool hands its connections out unchecked. When the server ends
its backends (a restart, a failover, ``pg_terminate_backend``), every idle
connection in the pool is dead at once. The first one taken fails; giving it
back (``release``) must discard the pool's other dead ones too, or the next
attempt (a commit made again, a run resumed, the next sweep) takes the next
dead one and fails again, until its attempts run out (the runs of
``test_database_blips.py`` on a threads worker did, before).

The pool is a Django ``ConnectionHandler`` of its own, on the test database,
configured as a worker's (no check at checkout), with ``IDLE`` connections
kept open; its backends are told apart by their ``application_name``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.postgres.signals import register_type_handlers
from django.db import OperationalError, connection
from django.db.backends.signals import connection_created
from django.db.utils import ConnectionHandler

from sessions_app.runs.store import commits

pytestmark = pytest.mark.django_db(transaction=True)  # pg_stat_activity fresh

ALIAS = "pooled"
IDLE = 4


def _backends(application: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            [application],
        )
        return int(cursor.fetchone()[0])


@pytest.fixture
def pooled(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    """A pooled connection to the test database (``commits.connections``
    sees it as ``ALIAS``) and its application name."""
    if connection.vendor != "postgresql":
        pytest.skip("a connection pool needs PostgreSQL (set DATABASE_URL)")
    application = f"wink-purge-{uuid.uuid4().hex[:8]}"
    options = {
        **connection.settings_dict["OPTIONS"],
        "application_name": application,
        "pool": {"min_size": IDLE, "max_size": IDLE, "timeout": 30},
    }
    handler = ConnectionHandler(
        {
            "default": dict(connection.settings_dict),  # required; not used
            ALIAS: {
                **connection.settings_dict,
                "CONN_MAX_AGE": 0,
                # as a worker's (settings: WINK_DATABASE_POOL_CHECKS): no
                # check at each checkout
                "CONN_HEALTH_CHECKS": False,
                "OPTIONS": options,
            },
        }
    )
    monkeypatch.setattr(commits, "connections", handler)
    wrapper: Any = handler[ALIAS]  # PostgreSQL's: close_pool()
    # django.contrib.postgres looks each new connection's alias up in the
    # global handler (its type handlers), which does not know this one
    connection_created.disconnect(register_type_handlers)
    try:
        yield wrapper, application
    finally:
        connection_created.connect(register_type_handlers)
        wrapper.close()
        wrapper.close_pool()


def _pid(wrapper: Any) -> int:
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def test_a_dead_connection_given_back_discards_the_pools_other_dead_ones(pooled):
    wrapper, application = pooled
    _pid(wrapper)
    commits.release(ALIAS)
    wrapper.pool.wait(timeout=30)  # IDLE connections open, idle in the pool
    assert _backends(application) == IDLE

    with connection.cursor() as cursor:  # the server ends them all
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s",
            [application],
        )
    deadline = time.monotonic() + 30
    while _backends(application) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _backends(application) == 0

    with pytest.raises(OperationalError):
        _pid(wrapper)  # the first one taken is dead
    commits.release(ALIAS)

    # the next one taken works: the dead ones left in the pool are gone
    assert _pid(wrapper) > 0
    commits.release(ALIAS)
