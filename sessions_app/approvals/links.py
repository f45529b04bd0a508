"""The address absolute links start with (approval emails and webhooks).

``WINK_BASE_URL`` when it is set. In development (``DEBUG``) with it unset,
the address the current request came in on, so links follow the host and
port actually served (``manage.py runserver 0.0.0.0:8720``); a worker,
which has no request, uses ``WINK_BASE_URL`` (``make run``, ``make demo``
and ``make worker`` set it from ``HOST`` and ``PORT``). In production the
request is never used: a Host header is the client's to choose.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponseBase
from django.urls import get_script_prefix

_REQUEST_BASE: ContextVar[str | None] = ContextVar("wink_request_base", default=None)


def base_url() -> str:
    """The scheme, host and path prefix links start with, no trailing "/"."""
    if settings.DEBUG and not settings.WINK_BASE_URL_SET:
        served = _REQUEST_BASE.get()
        if served:
            return served
    return str(settings.WINK_BASE_URL)


class RequestBaseUrlMiddleware:
    """In development with ``WINK_BASE_URL`` unset: remembers, for the
    request's duration, the address it came in on (``base_url``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> Any:
        if not settings.DEBUG or settings.WINK_BASE_URL_SET:
            return self.get_response(request)
        try:
            served = request.build_absolute_uri(get_script_prefix()).rstrip("/")
        except DisallowedHost:
            return self.get_response(request)
        token = _REQUEST_BASE.set(served)
        try:
            return self.get_response(request)
        finally:
            _REQUEST_BASE.reset(token)
