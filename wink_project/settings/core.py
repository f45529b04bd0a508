"""Django itself: debug, the secret key, hosts, apps, middleware, templates,
the database, passwords, static files, logging and error reports."""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from wink_project.env import env_bool, env_list

BASE_DIR = Path(__file__).resolve().parents[2]


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
    # Django's, except that a write to an /api/ URL missing its trailing slash
    # is a JSON 404 naming the URL, never a redirect that drops the body.
    "tooling.api.slashes.CommonMiddleware",
    # In development without WINK_BASE_URL: links follow the served address.
    "sessions_app.approvals.links.RequestBaseUrlMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A form whose values are not UTF-8 is a 400, not saved with U+FFFD (as a
    # view is called: after CSRF, with the user known).
    "wink_project.form_encoding.Utf8FormMiddleware",
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
# The most fields a form may post, and its most bytes (Django's defaults are
# 1,000 and 2.5 MB): a dataset's admin page posts each case as an inline form
# of 8 fields, a dataset holds up to 1,000 cases
# (sessions_app.experiments.cases.MOST_CASES) from up to 2 MiB of imports, and
# a form percent-encodes each byte of non-ASCII text as three. With Django's,
# a dataset of 125 cases, or of 1.85 MB imported, could no longer be saved (a
# 400). The API's bodies have limits of their own (settings/api.py).
DATA_UPLOAD_MAX_NUMBER_FIELDS = 10_000
DATA_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}
    },
    # every record's secrets masked, whichever library wrote it (an OTLP
    # endpoint's query, a connection string): wink_project/log_masking.py
    "filters": {
        "secrets": {"()": "wink_project.log_masking.SecretMaskingFilter"},
        "require_debug_false": {"()": "django.utils.log.RequireDebugFalse"},
        # a 4xx is a line, not a traceback: wink_project/request_logging.py
        "client_errors": {
            "()": "wink_project.request_logging.ClientErrorsWithoutTraceback"
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["secrets"],
        },
        "mail_admins": {
            "level": "ERROR",
            "filters": ["secrets", "require_debug_false"],
            "class": "django.utils.log.AdminEmailHandler",
        },
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # the SDK's HTTP client logs every request at INFO: a line per provider
        # call in a worker's log (the SDK's own client is httpx2)
        **{name: {"level": "WARNING"} for name in ("httpx", "httpx2", "openai")},
        # Django's own console handler (DEBUG on) is replaced: its records
        # reach the root's, once and masked (they were written twice)
        "django": {"handlers": ["mail_admins"], "level": "INFO"},
        "django.request": {"filters": ["client_errors"]},
    },
}

# DEBUG pages and error reports (HTML, text, the report mailed to ADMINS) show
# no credential, DEBUG on or off: every credential-bearing setting, request
# variable and local is hidden, and every configured secret value masked
# wherever it appears (wink_project/reporting.py).
DEFAULT_EXCEPTION_REPORTER = "wink_project.reporting.SecretHidingExceptionReporter"
DEFAULT_EXCEPTION_REPORTER_FILTER = "wink_project.reporting.SecretHidingReporterFilter"
