"""Settings for WINK Catalog, read from the environment only.

Every variable is documented in README.md and .env.example. Nothing here reads a
file other than the environment; secrets are never written anywhere.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from wink_project import workers_config
from wink_project.csp import configured_policy
from wink_project.env import (
    env_bool,
    env_list,
    env_number,
    env_otlp_traces_endpoint,
    env_rate,
    env_usd,
)

BASE_DIR = Path(__file__).resolve().parent.parent


DEBUG = env_bool("DEBUG", False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DEBUG is off. Set SECRET_KEY in the "
            "environment (for example: export SECRET_KEY=$(python -c 'import "
            "secrets; print(secrets.token_urlsafe(50))')), or set DEBUG=1 for "
            "local development."
        )
    SECRET_KEY = "django-insecure-local-development-only"

ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver" if DEBUG else ""
)

INSTALLED_APPS = [
    # django.contrib.admin, with a login that refuses repeated failures
    "wink_project.apps.AdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # runserver leaves static files to WhiteNoise too, as in production.
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    # Operator classes in expression indexes (the sessions' trigram search
    # indexes, migration sessions_app 0020); nothing of it runs on SQLite.
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "tooling",
    "sessions_app",
]

MIDDLEWARE = [
    # Content-Security-Policy on every response, error pages included.
    "wink_project.csp.ContentSecurityPolicyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Under /api/: body size limit, and every error as JSON in one shape.
    "tooling.api.errors.ApiErrorMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # In development without WINK_BASE_URL: links follow the served address.
    "sessions_app.approvals.links.RequestBaseUrlMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "wink_project.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "wink_project.wsgi.application"

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
        conn_health_checks=True,
    )
}

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Django's backend, whose flush passes the append-only triggers (as
    # PostgreSQL's TRUNCATE does): wink_project/sqlite3/base.py.
    DATABASES["default"]["ENGINE"] = "wink_project.sqlite3"
    # Writers take the lock when their transaction starts: no deadlocked
    # upgrades, and catalog tree edits are serialised.
    # Write-ahead logging: readers (the live session page) never wait for a
    # run's writes, and a commit needs no fsync of its own (synchronous=NORMAL:
    # an application crash loses nothing committed; a power cut may lose the
    # last commits, never half of one).
    options = DATABASES["default"].setdefault("OPTIONS", {})
    # The tests' database: in memory, as Django's SQLite backend makes it by
    # default; named so that pytest-xdist's workers (make test) keep it so.
    DATABASES["default"].setdefault("TEST", {}).setdefault("NAME", ":memory:")
    options["transaction_mode"] = "IMMEDIATE"
    options.setdefault(
        "init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    )

_VALIDATION = "django.contrib.auth.password_validation"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"{_VALIDATION}.UserAttributeSimilarityValidator"},
    {"NAME": f"{_VALIDATION}.MinimumLengthValidator"},
    {"NAME": f"{_VALIDATION}.CommonPasswordValidator"},
    {"NAME": f"{_VALIDATION}.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Static files: `manage.py collectstatic` copies them into STATIC_ROOT and
# WhiteNoise serves them from the web process. With DEBUG off they get hashed,
# compressed names (a manifest, so collectstatic must have run); with DEBUG on
# (`make run`, the tests) they are served from the apps as they are.
STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or BASE_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# The API: request body limits (413 beyond them) and the rate of run starts
# per user (DRF's rate syntax: 30/minute, 500/day ...; 429 beyond it).
WINK_API_MAX_BODY_BYTES = int(
    env_number("WINK_API_MAX_BODY_BYTES", 1_048_576, minimum=1024)
)
WINK_API_MAX_PARAM_BYTES = int(
    env_number("WINK_API_MAX_PARAM_BYTES", 65_536, minimum=1)
)
WINK_API_START_RATE = os.environ.get("WINK_API_START_RATE", "30/minute")
if not re.fullmatch(
    r"\d+/(s|sec|second|m|min|minute|h|hour|d|day)", WINK_API_START_RATE
):
    raise ImproperlyConfigured(
        "WINK_API_START_RATE must look like 30/minute (a number, then second, "
        f"minute, hour or day); got {WINK_API_START_RATE!r}."
    )

# The cache every process shares (gunicorn's workers, Celery's): the API's
# throttles and the sign-in limits count in it. By default a table of the
# database (created by `migrate`); WINK_CACHE_URL: Redis (a database of its own:
# the test suite clears it).
WINK_CACHE_URL = os.environ.get("WINK_CACHE_URL", "").strip()
if WINK_CACHE_URL:
    if not re.fullmatch(r"(rediss?|unix)://\S+", WINK_CACHE_URL, flags=re.IGNORECASE):
        # the URL may carry a password: never echoed
        raise ImproperlyConfigured(
            "WINK_CACHE_URL must be a redis://, rediss:// or unix:// URL such as "
            "redis://127.0.0.1:6379/1; got another value (not shown)."
        )
    CACHES: dict[str, dict[str, Any]] = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": WINK_CACHE_URL,
            "KEY_PREFIX": "wink",
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            # sessions_app/migrations/0016_cache_table.py creates it
            "LOCATION": "wink_cache",
            # past this many entries, expired ones are deleted, then a third of
            # the rest: far above what the limits hold (each user's starts of
            # the last minute, failed sign-ins)
            "OPTIONS": {"MAX_ENTRIES": 100_000},
        }
    }

# Sign-in (the login page and the admin's): failed attempts per username, and
# per client address (REMOTE_ADDR), before more are refused without checking
# the password (429) until the oldest of them is this old (README, "Throttles
# and signing in"). "off" turns one off (behind a proxy all clients share one
# address).
WINK_LOGIN_RATE = env_rate("WINK_LOGIN_RATE", "5/15m")
WINK_LOGIN_IP_RATE = env_rate("WINK_LOGIN_IP_RATE", "50/15m")

REST_FRAMEWORK = {
    # Token first: a request without credentials is a 401 with
    # "WWW-Authenticate: Token" (the browser keeps its session login).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # The API speaks JSON (anything else is a 415).
    "DEFAULT_PARSER_CLASSES": ["tooling.api.parsers.JSONParser"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": (
        "sessions_app.audit.pagination.CreatedAtCursorPagination"
    ),
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "tooling.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "tooling.api.errors.exception_handler",
    "DEFAULT_THROTTLE_RATES": {"session-start": WINK_API_START_RATE},
}

SPECTACULAR_SETTINGS = {
    "TITLE": "WINK Catalog API",
    "DESCRIPTION": "Discover prompts, start agent runs and read their audit trail. "
    "Authenticate with `Authorization: Token <key>` (or a logged-in session). "
    "Every error is a JSON object {detail, code, errors}.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema of a product is not a secret: it and the docs are public.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    # Swagger UI's assets are served from the installed sidecar, not a CDN.
    # One name for the trust levels, wherever they appear.
    "ENUM_NAME_OVERRIDES": {
        "TrustLevelEnum": "tooling.models.TrustLevel",
        "ApprovalStatusEnum": "sessions_app.models.ApprovalRequest.Status",
        "ApprovalKindEnum": "sessions_app.models.ApprovalRequest.Kind",
        "SessionStatusEnum": "sessions_app.models.AgentSession.Status",
    },
    "SWAGGER_UI_DIST": "SIDECAR",
    # No badge loaded from validator.swagger.io (the CSP allows this origin
    # only, and the schema's URL stays here).
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

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

# The model provider. The key stays in the environment: it is read when a client
# is built and never stored in the database or logged.
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
WINK_PROVIDER = os.environ.get(
    "WINK_PROVIDER", "openai" if OPENAI_API_KEY else "offline"
)
if WINK_PROVIDER not in {"openai", "offline"}:
    raise ImproperlyConfigured(
        f"WINK_PROVIDER must be 'openai' or 'offline'; got {WINK_PROVIDER!r}."
    )
if WINK_PROVIDER == "openai" and not OPENAI_API_KEY:
    raise ImproperlyConfigured(
        "WINK_PROVIDER=openai needs OPENAI_API_KEY in the environment."
    )
# MCP header values are read from environment variables; only these may be
# named in the catalog (a prefix, and/or a comma-separated list of names).
WINK_MCP_HEADER_ENV_PREFIX = os.environ.get("WINK_MCP_HEADER_ENV_PREFIX", "WINK_MCP_")
WINK_MCP_HEADER_ENV_ALLOW = env_list("WINK_MCP_HEADER_ENV_ALLOW", "")
# Retries of a failed provider request (each attempt is recorded; none starts
# past the run's deadline) and the timeout of one attempt, in seconds.
WINK_OPENAI_MAX_RETRIES = int(env_number("WINK_OPENAI_MAX_RETRIES", 2))
WINK_OPENAI_TIMEOUT = env_number("WINK_OPENAI_TIMEOUT", 600, minimum=0.1)

# OpenTelemetry (docs/opentelemetry.md): off unless an OTLP/HTTP endpoint is
# set. Each session that ends is exported as a trace: the standard variables
# name the collector (the base OTEL_EXPORTER_OTLP_ENDPOINT gets /v1/traces;
# OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as it is); headers, timeout and
# compression are the exporter's own OTEL_EXPORTER_OTLP_* variables.
WINK_OTEL_TRACES_ENDPOINT = env_otlp_traces_endpoint()
WINK_OTEL_SERVICE_NAME = (
    os.environ.get("OTEL_SERVICE_NAME", "").strip() or "wink-catalog"
)
# Tool arguments and results (and approvers' reasons) are exported only when on.
WINK_OTEL_CAPTURE_CONTENT = env_bool("WINK_OTEL_CAPTURE_CONTENT", False)

# Approval notifications (docs/approvals.md). Links in them are absolute: the
# address people open the product at.
WINK_BASE_URL = os.environ.get("WINK_BASE_URL", "http://127.0.0.1:8000").strip()
# Unset in development (DEBUG): links built during a request follow the
# address it came in on (sessions_app/approvals/links.py).
WINK_BASE_URL_SET = bool(os.environ.get("WINK_BASE_URL", "").strip())
# An optional webhook POSTed when a run waits for approval, signed with the
# secret (HMAC-SHA256; the secret is required with the URL).
WINK_APPROVAL_WEBHOOK_URL = os.environ.get("WINK_APPROVAL_WEBHOOK_URL", "").strip()
WINK_APPROVAL_WEBHOOK_SECRET = os.environ.get("WINK_APPROVAL_WEBHOOK_SECRET", "")
for _name, _url, _required in (
    ("WINK_BASE_URL", WINK_BASE_URL, True),
    ("WINK_APPROVAL_WEBHOOK_URL", WINK_APPROVAL_WEBHOOK_URL, False),
):
    if (_url or _required) and not re.fullmatch(
        r"https?://[^\s/?#@]+(/[^\s]*)?", _url, flags=re.IGNORECASE
    ):
        # The webhook's URL may carry a token: never echoed.
        _got = repr(_url) if _required else "another value (not shown)"
        raise ImproperlyConfigured(
            f"{_name} must be an http:// or https:// URL such as "
            f"https://catalog.example.com; got {_got}."
        )
WINK_BASE_URL = WINK_BASE_URL.rstrip("/")
if WINK_APPROVAL_WEBHOOK_URL and not WINK_APPROVAL_WEBHOOK_SECRET:
    raise ImproperlyConfigured(
        "WINK_APPROVAL_WEBHOOK_URL needs WINK_APPROVAL_WEBHOOK_SECRET: the "
        "webhook is signed with it."
    )
# Email (approval notifications): Django's backend; the console backend prints
# them when DEBUG is on, SMTP otherwise (EMAIL_HOST ...).
EMAIL_BACKEND = os.environ.get(
    "EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend"
    if DEBUG
    else "django.core.mail.backends.smtp.EmailBackend",
)
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(env_number("EMAIL_PORT", 25, minimum=1))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
# A notification never waits long for a mail server.
EMAIL_TIMEOUT = 5
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "wink@localhost")

# The modules whose handlers catalog tools can be bound to (docs/handlers.md):
# comma-separated dotted paths, each defining register_handlers(registry). The
# list replaces the product's own; `manage.py check` reports a bad module.
WINK_HANDLER_MODULES = env_list(
    "WINK_HANDLER_MODULES",
    "tooling.runtime_tools,tooling.builtin_tools,tooling.text_tools",
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # the SDK's HTTP client logs every request at INFO: a line per provider
    # call in a worker's log (the SDK's own client is httpx2)
    "loggers": {name: {"level": "WARNING"} for name in ("httpx", "httpx2", "openai")},
}

# DEBUG pages and error reports (HTML, text, the report mailed to ADMINS) show
# no credential, DEBUG on or off: every credential-bearing setting, request
# variable and local is hidden, and every configured secret value masked
# wherever it appears (wink_project/reporting.py).
DEFAULT_EXCEPTION_REPORTER = "wink_project.reporting.SecretHidingExceptionReporter"
DEFAULT_EXCEPTION_REPORTER_FILTER = "wink_project.reporting.SecretHidingReporterFilter"

# Content-Security-Policy of every response (wink_project/csp.py): this origin
# only, no inline script or style. WINK_CSP's directives replace the default's
# of the same name or are added, e.g. "img-src 'self' data: https://cdn.example.com".
try:
    WINK_CSP = configured_policy(os.environ.get("WINK_CSP", ""))
except ValueError as _error:
    raise ImproperlyConfigured(
        f"WINK_CSP must be Content-Security-Policy directives separated by "
        f'";", such as "img-src \'self\' data:"; {_error}.'
    ) from None

# Origins (scheme://host[:port]) allowed to POST forms besides ALLOWED_HOSTS's,
# e.g. https://catalog.example.com when a proxy changes the Host header.
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
for _origin in CSRF_TRUSTED_ORIGINS:
    if not _origin.startswith(("http://", "https://")):
        raise ImproperlyConfigured(
            "CSRF_TRUSTED_ORIGINS must list origins with their scheme, such as "
            f"https://catalog.example.com; got {_origin!r}."
        )

# TLS terminated by a proxy: the request header (as in request.META) by which it
# says the original request was HTTPS, e.g. HTTP_X_FORWARDED_PROTO; its value
# must then be "https". Only set it when the proxy always sets or strips it.
_PROXY_SSL_HEADER = os.environ.get("SECURE_PROXY_SSL_HEADER", "").strip()
if _PROXY_SSL_HEADER:
    if not _PROXY_SSL_HEADER.startswith("HTTP_") or not all(
        c.isupper() or c.isdigit() or c == "_" for c in _PROXY_SSL_HEADER
    ):
        raise ImproperlyConfigured(
            "SECURE_PROXY_SSL_HEADER must name a request header as Django sees it, "
            f"such as HTTP_X_FORWARDED_PROTO; got {_PROXY_SSL_HEADER!r}."
        )
    SECURE_PROXY_SSL_HEADER = (_PROXY_SSL_HEADER, "https")

_REFERRER_POLICIES = {
    "no-referrer",
    "no-referrer-when-downgrade",
    "origin",
    "origin-when-cross-origin",
    "same-origin",
    "strict-origin",
    "strict-origin-when-cross-origin",
    "unsafe-url",
}
SECURE_REFERRER_POLICY = env_list("SECURE_REFERRER_POLICY", "same-origin")
if not SECURE_REFERRER_POLICY or set(SECURE_REFERRER_POLICY) - _REFERRER_POLICIES:
    raise ImproperlyConfigured(
        "SECURE_REFERRER_POLICY must be one or more (comma-separated) of "
        f"{', '.join(sorted(_REFERRER_POLICIES))}; got "
        f"{os.environ.get('SECURE_REFERRER_POLICY')!r}."
    )

# Production (DEBUG off): HTTPS only, secure cookies, HSTS. Each can be turned
# off from the environment (e.g. plain HTTP on a private network), and
# `manage.py check --deploy` then says what that costs.
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = int(env_number("SECURE_HSTS_SECONDS", 31536000))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    # `preload` asks browsers to hard-code HTTPS for the domain; it is a
    # commitment, so it is off unless asked for. check --deploy warns about it
    # (security.W021) until SECURE_HSTS_PRELOAD is set either way.
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    if os.environ.get("SECURE_HSTS_PRELOAD", "").strip() and not SECURE_HSTS_PRELOAD:
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"
