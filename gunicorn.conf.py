"""Gunicorn's configuration for WINK Catalog (a sample: every value can be set
from the environment). `make serve` runs:

    gunicorn wink_project.wsgi -c gunicorn.conf.py

The settings are imported here (they read the same environment), so a
misconfigured environment stops gunicorn before it binds, with the settings'
own message.
"""

from __future__ import annotations

import os

from wink_project import settings


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a whole number; got {raw!r}.") from None


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the CPUs this process may use
    except AttributeError:
        return os.cpu_count() or 1


# GUNICORN_BIND (e.g. "0.0.0.0:8000" or "unix:/run/wink.sock") wins; otherwise
# HOST:PORT, 127.0.0.1:8000 by default (behind a proxy on the same host; set
# HOST=0.0.0.0 in a container).
bind = [
    os.environ.get("GUNICORN_BIND")
    or f"{os.environ.get('HOST') or '127.0.0.1'}:{os.environ.get('PORT') or '8000'}"
]

# Processes: 2 x CPUs + 1 (5 on two cores); WEB_CONCURRENCY or GUNICORN_WORKERS
# to change it. GUNICORN_THREADS > 1 switches to threaded workers (gthread).
workers = _int("GUNICORN_WORKERS", _int("WEB_CONCURRENCY", 2 * _cpus() + 1))
threads = _int("GUNICORN_THREADS", 1)

# The timeout and WINK_RUN_MAX_SECONDS. With a broker (CELERY_BROKER_URL), runs
# happen in Celery workers and a web request is short: 30 s. Without one, a run
# happens inline in the web request that starts it (POST /api/sessions/, the
# admin's Run button) and lasts up to WINK_RUN_MAX_SECONDS (settings: 900), so
# the timeout is WINK_RUN_MAX_SECONDS + WINK_RUN_TIME_LIMIT_GRACE: the run's own
# deadline ends it first, and gunicorn only kills a worker that is truly stuck.
# A worker killed mid-run (timeout, restart) leaves its run to the sweeper
# (`manage.py sweep_sessions`). Each inline run holds a worker (or a thread)
# for its whole length: production wants a broker.
timeout = _int(
    "GUNICORN_TIMEOUT",
    settings.WINK_RUN_MAX_SECONDS + settings.WINK_RUN_TIME_LIMIT_GRACE
    if settings.CELERY_TASK_ALWAYS_EAGER  # no broker: runs happen inline
    else 30,
)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 30)

# The proxies whose X-Forwarded-Proto (and -For) gunicorn believes: a request
# they mark as HTTPS is HTTPS to Django too. Comma-separated addresses or
# networks; "*" trusts any (only when nothing else can reach gunicorn).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")

# Logs: access log and errors on stdout/stderr, for the process manager, each
# line's secrets masked (a token in a query string, a configured key) as the
# project's own log lines are (wink_project/gunicorn_logging.py).
accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
logger_class = "wink_project.gunicorn_logging.MaskingLogger"
# (the masking reads the settings' secrets: the master's lines too)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wink_project.settings")
