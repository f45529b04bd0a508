"""What the product talks to: the model provider, MCP servers' headers,
OpenTelemetry, approval notifications (links, webhook, email) and the
modules of tool handlers."""

from __future__ import annotations

import os
import re

from django.core.exceptions import ImproperlyConfigured

from wink_project.env import (
    env_bool,
    env_http_url,
    env_list,
    env_number,
    env_otlp_traces_endpoint,
)
from wink_project.settings.core import DEBUG

# The model provider. The key stays in the environment: it is read when a client
# is built and never stored in the database or logged.
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
OPENAI_BASE_URL = env_http_url("OPENAI_BASE_URL", "https://api.openai.com/v1")
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
