"""The API (body limits, the rate of run starts, DRF, the OpenAPI schema), the
cache every process shares, and the sign-in limits."""

from __future__ import annotations

import os
import re
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from wink_project.env import env_number, env_rate

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
    # OPTIONS points at the schema, which describes each route's body
    "DEFAULT_METADATA_CLASS": "tooling.api.metadata.SchemaMetadata",
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
    # ... so credentials are not read: a stale token (an inactive user's, a
    # deleted one's) was a 401 on a page anyone may read.
    "SERVE_AUTHENTICATION": [],
    # Swagger UI's assets are served from the installed sidecar, not a CDN.
    # One name for the trust levels, wherever they appear.
    "ENUM_NAME_OVERRIDES": {
        "TrustLevelEnum": "tooling.models.TrustLevel",
        "ApprovalStatusEnum": "sessions_app.models.ApprovalRequest.Status",
        "ApprovalKindEnum": "sessions_app.models.ApprovalRequest.Kind",
        "SessionStatusEnum": "sessions_app.models.AgentSession.Status",
        "NotComparedEnum": "tooling.history.snapshot.NOT_COMPARED",
    },
    "SWAGGER_UI_DIST": "SIDECAR",
    # No badge loaded from validator.swagger.io (the CSP allows this origin
    # only, and the schema's URL stays here).
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
