"""The browser's side of security: Content-Security-Policy, CSRF's trusted
origins, TLS behind a proxy, the referrer policy, and production's HTTPS,
cookies and HSTS (DEBUG off)."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from wink_project.csp import configured_policy
from wink_project.env import env_bool, env_list, env_number
from wink_project.settings.core import DEBUG

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

# A refused form's page, which says why with DEBUG on (wink_project/csrf.py).
CSRF_FAILURE_VIEW = "wink_project.csrf.csrf_failure"

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
