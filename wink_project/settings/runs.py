"""Runs (limits, leases, durable commits), the workers' runs in flight,
approvals, releases, budgets, the sweeper and Celery.

This module adds a worker's options to ``core.DATABASES`` (the same dict):
``synchronous_commit=off`` and server-side binding on PostgreSQL.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from wink_project import workers_config
from wink_project.env import env_bool, env_list, env_number, env_usd
from wink_project.settings.core import DATABASES

# Runs: limits, leases and recovery (docs/run-lifecycle.md).
# Every run has a deadline: its template's, capped by WINK_RUN_MAX_SECONDS.
WINK_RUN_MAX_SECONDS = int(env_number("WINK_RUN_MAX_SECONDS", 900, minimum=1))
# Celery's soft/hard time limits add this much to a run's deadline.
WINK_RUN_TIME_LIMIT_GRACE = int(env_number("WINK_RUN_TIME_LIMIT_GRACE", 30, minimum=2))
# A worker holds a running session for this long, renewing it while it works.
WINK_RUN_LEASE_SECONDS = env_number("WINK_RUN_LEASE_SECONDS", 60, minimum=1)
# How often (at most) a run renews its lease and checks for a cancel request.
WINK_RUN_HEARTBEAT_SECONDS = env_number("WINK_RUN_HEARTBEAT_SECONDS", 2)
# Claims after which a run that keeps losing its worker fails ("interrupted").
WINK_RUN_MAX_ATTEMPTS = int(env_number("WINK_RUN_MAX_ATTEMPTS", 3, minimum=1))
# On PostgreSQL a run's steps commit without waiting for their WAL flush
# (synchronous_commit=off): a worker crash loses nothing that committed; a
# database server crash may lose the last fraction of a second of steps, all or
# nothing per step, and the run resumes from what survived (ADR 0008). Set to
# true to make every step wait for its flush.
WINK_RUN_DURABLE_COMMITS = env_bool("WINK_RUN_DURABLE_COMMITS", False)
# What this process is: "worker" (make worker sets it) gives its PostgreSQL
# connections synchronous_commit=off, unless WINK_RUN_DURABLE_COMMITS; a run's
# pause and end still commit durably (SET LOCAL, docs/write-path.md). Web
# processes (and inline runs) keep the server's setting.
WINK_PROCESS = os.environ.get("WINK_PROCESS", "").strip().lower()
if (
    WINK_PROCESS == "worker"
    and not WINK_RUN_DURABLE_COMMITS
    and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
):
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options["options"] = " ".join(
        filter(None, [_options.get("options", ""), "-c synchronous_commit=off"])
    )
# PostgreSQL: psycopg's server-side binding, whose statements run five times
# are prepared on the server (parsed and planned once per connection): a
# worker's runs repeat the same few INSERTs and UPDATEs (docs/write-path.md).
# On by default in workers; not through PgBouncer in transaction pooling mode
# before its 1.21 (prepared statements), where it must be 0.
WINK_DATABASE_SERVER_SIDE_BINDING = env_bool(
    "WINK_DATABASE_SERVER_SIDE_BINDING", WINK_PROCESS == "worker"
)
if (
    WINK_DATABASE_SERVER_SIDE_BINDING
    and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
):
    DATABASES["default"].setdefault("OPTIONS", {})["server_side_binding"] = True
# Runs in flight per worker host: processes, threads, the database pool, the
# lease renewal and the sweeper (wink_project/workers_config.py, ADR 0022).
_workers = workers_config.configure(DATABASES, process=WINK_PROCESS)
WINK_WORKER_POOL = _workers.pool
WINK_WORKER_PROCESSES = _workers.processes
WINK_WORKER_CONCURRENCY = _workers.concurrency
WINK_RUN_BATCHED_LEASES = _workers.batched_leases
WINK_WORKER_SWEEPER = _workers.sweeper
WINK_DATABASE_POOL_SIZE = _workers.pool_size
WINK_DATABASE_POOL_TIMEOUT = _workers.pool_timeout
CONTROL_DATABASE = _workers.control_database
# How long an approval request waits for a human before it is denied
# automatically (an approval policy may set its own deadline_seconds).
WINK_APPROVAL_TIMEOUT_SECONDS = int(
    env_number("WINK_APPROVAL_TIMEOUT_SECONDS", 86400, minimum=1)
)
if WINK_APPROVAL_TIMEOUT_SECONDS > 366 * 24 * 3600:  # as a policy's deadline_seconds
    raise ImproperlyConfigured(
        "WINK_APPROVAL_TIMEOUT_SECONDS must be at most 31622400 (a year); got "
        f"{WINK_APPROVAL_TIMEOUT_SECONDS}."
    )
# Four eyes by default: the author of a run may not decide its approval
# requests (whatever their permissions), unless the asking policy says
# "four_eyes": false. Off: only policies with "four_eyes": true keep them out.
WINK_APPROVAL_FOUR_EYES = env_bool("WINK_APPROVAL_FOUR_EYES", False)
# Releases (docs/releases.md): a run without a label or revision starts from
# this label when its prompt has it (otherwise from the catalog as it is);
# moving a protected label needs a second person's approval.
WINK_DEFAULT_LABEL = os.environ.get("WINK_DEFAULT_LABEL", "production").strip()
WINK_PROTECTED_LABELS = env_list("WINK_PROTECTED_LABELS", "production")
# The most each user's runs may spend per day (USD, the project's time zone),
# for users without their own budget (admin: user budgets). Unset: no limit.
WINK_DAILY_BUDGET_USD = env_usd("WINK_DAILY_BUDGET_USD")
# The sweeper's period (Celery beat), and how long a queued session may wait
# unclaimed before it is dispatched again.
WINK_SWEEP_INTERVAL = env_number("WINK_SWEEP_INTERVAL", 30, minimum=1)
# How often Celery beat rolls up the closed days' spend (sessions_app.costs.rollup,
# ADR 0027): the cost page reads days not rolled up yet from the rows.
WINK_SPEND_ROLLUP_INTERVAL = env_number("WINK_SPEND_ROLLUP_INTERVAL", 3600, minimum=60)
WINK_QUEUED_REDISPATCH_SECONDS = env_number(
    "WINK_QUEUED_REDISPATCH_SECONDS", 600, minimum=1
)
if 2 * max(WINK_RUN_HEARTBEAT_SECONDS, 1) > WINK_RUN_LEASE_SECONDS:
    raise ImproperlyConfigured(
        "WINK_RUN_LEASE_SECONDS must be at least twice WINK_RUN_HEARTBEAT_SECONDS "
        "(and at least 2): a run renews its lease on its heartbeat."
    )

# Celery: without a broker, tasks run inline in the calling process.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
# A run's message is acknowledged when it ends, and requeued if its worker dies.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_POOL = WINK_WORKER_POOL
# each process's share of the host's runs in flight
CELERY_WORKER_CONCURRENCY = _workers.concurrency_per_process
# Celery's Django fixup closes a worker's database connections before and after
# every task unless told to reuse them: a new PostgreSQL connection (and a cold
# server backend) per run. wink_project/celery.py checks them around each task
# as Django does around a request instead (DATABASE_CONN_MAX_AGE and the health
# check apply); the fixup would otherwise close them once per this many tasks.
CELERY_DB_REUSE_MAX = 1_000_000
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Per-run limits are set when a run is sent (sessions_app.runs.dispatch); these
# apply to any task and bound the longest run.
CELERY_TASK_TIME_LIMIT = WINK_RUN_MAX_SECONDS + WINK_RUN_TIME_LIMIT_GRACE
CELERY_TASK_SOFT_TIME_LIMIT = WINK_RUN_MAX_SECONDS + WINK_RUN_TIME_LIMIT_GRACE // 2
# A broker that cannot be reached costs a start (or a sweep) a few seconds at
# most, not a hung request: a connection attempt gives up after 2 s (AMQP:
# connecting and its handshake; Redis: connecting), a Redis command after 3 s
# without a reply, and a send is tried three times in all, 0.2-0.5 s apart.
# Then the session stays queued with the failure recorded, and the sweeper
# sends it again (sessions_app.runs.dispatch; docs/run-lifecycle.md).
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
# Redis redelivers an unacknowledged message after visibility_timeout: above
# the hard limit.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": CELERY_TASK_TIME_LIMIT + 300,
    "socket_connect_timeout": CELERY_BROKER_CONNECTION_TIMEOUT,
    "socket_timeout": 3,
}
# The sweeper has a queue of its own, so it never waits behind queued runs; a
# sweep not started within one interval is dropped (the next one comes). Every
# worker that should sweep consumes it: `make worker` does (-Q celery,...).
WINK_MAINTENANCE_QUEUE = "wink-maintenance"
CELERY_TASK_ROUTES = {
    "sessions_app.sweep_stale_sessions": {"queue": WINK_MAINTENANCE_QUEUE},
    "sessions_app.roll_up_spend": {"queue": WINK_MAINTENANCE_QUEUE},
}
CELERY_BEAT_SCHEDULE = {
    "sweep-stale-sessions": {
        "task": "sessions_app.sweep_stale_sessions",
        "schedule": WINK_SWEEP_INTERVAL,
        "options": {"expires": WINK_SWEEP_INTERVAL},
    },
    "roll-up-spend": {
        "task": "sessions_app.roll_up_spend",
        "schedule": WINK_SPEND_ROLLUP_INTERVAL,
        "options": {"expires": WINK_SPEND_ROLLUP_INTERVAL},
    },
}
