"""A Celery app on a broker of the test's choosing, for the dispatch and sweep
tests: kombu's in-process ``memory://`` transport (a real transport whose
messages a test can count) or a port where nothing listens (connection
refused, as a stopped broker answers). The app is configured as the project's
(the same ``CELERY_*`` settings: publish retries, timeouts) and made current,
so ``sessions_app.runs.dispatch`` sends through it; the project's app is current
again afterwards."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

from celery import Celery

from wink_project.celery import app as project_app


def refused(scheme: str) -> str:
    """A broker URL of ``scheme`` (``redis`` or ``amqp``) on a local port
    where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    if scheme == "redis":
        return f"redis://127.0.0.1:{port}/14"
    return f"amqp://guest:guest@127.0.0.1:{port}//"


@contextlib.contextmanager
def broker_at(settings: Any, url: str) -> Iterator[Celery]:
    """Runs go to a worker over ``url`` (not inline) while this lasts."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    app = Celery("wink-test-broker", set_as_current=False)
    app.config_from_object("django.conf:settings", namespace="CELERY")
    app.conf.update(broker_url=url, task_always_eager=False)
    app.set_current()
    if url.startswith("memory://"):
        sent_runs(app)  # the transport is one per process: start empty
    try:
        yield app
    finally:
        project_app.set_current()
        app.close()


def sent_runs(app: Celery) -> list[str]:
    """The session ids of the run tasks waiting on ``app``'s ``memory://``
    broker, in the order they were sent (taken off the queue)."""
    ids: list[str] = []
    with (
        app.connection_for_read() as connection,
        connection.SimpleQueue("celery") as queue,
    ):
        while queue.qsize():
            message = queue.get(timeout=1)
            assert message.headers["task"] == "sessions_app.run_session"
            args, _kwargs, _embed = message.payload
            ids.append(args[0])
            message.ack()
    return ids
