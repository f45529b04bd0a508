"""The ``Content-Security-Policy`` header, on every response.

The pages load no third-party script, style or font, and none of ours is
inline (the styles and scripts are static files; the cost charts are SVG drawn
with presentation attributes), so the policy allows only this origin:
``WINK_CSP`` (settings/security.py) is the whole policy, the default's directives with
the environment's replacing or adding their own.

Django's own DEBUG error pages (the technical 404 and 500 pages, the latter
also as the 400 of a suspicious request such as a Host not allowed, and the
403 of a CSRF failure) are made of inline styles and scripts: with ``DEBUG``
on, and only for HTML error pages of those statuses, script-src and
style-src also allow ``'unsafe-inline'``, so a developer's traceback stays
readable. A response that already carries a policy keeps it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:  # the settings import this module: nothing of django.http
    from django.http import HttpRequest, HttpResponseBase

HEADER = "Content-Security-Policy"
_DEBUG_PAGE_STATUSES = frozenset({400, 403, 404, 500})
DEFAULT_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
)
_DIRECTIVE = re.compile(r"[a-z][a-z0-9-]*")
# A source list: printable ASCII without ";" (ends a directive) or ","
# (separates policies in one header).
_SOURCES = re.compile(r"[\x21-\x2b\x2d-\x3a\x3c-\x7e ]*")


def configured_policy(overrides: str) -> str:
    """The default policy with ``overrides``' directives replacing those of the
    same name, or added; a malformed directive is a ``ValueError`` naming it."""
    directives = parse_policy(DEFAULT_POLICY)
    for name, value in parse_policy(overrides).items():
        if not _DIRECTIVE.fullmatch(name):
            raise ValueError(f"{name!r} is not a directive name")
        if not _SOURCES.fullmatch(value):
            raise ValueError(
                f"the value of {name} may hold only printable ASCII without "
                "commas; got " + repr(value)
            )
        directives[name] = value
    return format_policy(directives)


def parse_policy(text: str) -> dict[str, str]:
    """``"default-src 'self'; img-src 'self' data:"`` as ``{directive: value}``
    (directive names lower-cased; the last of a repeated directive wins)."""
    directives: dict[str, str] = {}
    for part in text.split(";"):
        name, _, value = part.strip().partition(" ")
        if name:
            directives[name.lower()] = " ".join(value.split())
    return directives


def format_policy(directives: dict[str, str]) -> str:
    return "; ".join(f"{name} {value}".strip() for name, value in directives.items())


def debug_page_policy(policy: str) -> str:
    """``policy`` with inline scripts and styles allowed (Django's DEBUG pages)."""
    directives = parse_policy(policy)
    fallback = directives.get("default-src", "")
    for name in ("script-src", "style-src"):
        value = directives.get(name, fallback)
        if "'unsafe-inline'" not in value.split():
            directives[name] = f"{value} 'unsafe-inline'".strip()
    return format_policy(directives)


class ContentSecurityPolicyMiddleware:
    """Sets ``WINK_CSP`` as the ``Content-Security-Policy`` of every response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        policy = settings.WINK_CSP
        if HEADER in response:
            return response
        if (
            settings.DEBUG
            and response.status_code in _DEBUG_PAGE_STATUSES
            and response.get("Content-Type", "").startswith("text/html")
        ):
            policy = debug_page_policy(policy)
        response[HEADER] = policy
        return response
