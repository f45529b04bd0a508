"""Django's ``CommonMiddleware``, which never redirects a write under ``/api/``.

With ``APPEND_SLASH`` (Django's default), a URL that resolves only with a
trailing slash is redirected there (301). That loses nothing for a ``GET``, but
a client following it re-sends a ``POST``/``PUT``/``PATCH``/``DELETE`` without
its body, or as a ``GET`` (which then answers 200, as if the write had
succeeded); with ``DEBUG`` on, Django raises a ``RuntimeError`` instead (a
logged 500). Under ``/api/`` such a request is a 404 in the API's error shape
naming the URL with its slash, whatever ``DEBUG`` says. A 308 would keep the
method and body, but the API documents its URLs with their slashes: a client
that writes to another one has a bug to fix, not a redirect to follow (and
would send its body, and token, twice). ``GET``, ``HEAD`` and ``OPTIONS``
(which carry no body) are still redirected.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.middleware import common

from tooling.api.errors import API_PREFIX, error_body

REDIRECTED_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class CommonMiddleware(common.CommonMiddleware):
    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if (
            response.status_code == 404
            and request.path.startswith(API_PREFIX)
            and request.method not in REDIRECTED_METHODS
            and self.should_redirect_with_slash(request)
        ):
            with_slash = f"{request.path}/"
            return JsonResponse(
                error_body(
                    f"No API URL is {request.path}: API URLs end with a slash "
                    f"({with_slash}). A {request.method} is not redirected: "
                    "send it there.",
                    "not_found",
                ),
                status=404,
            )
        return super().process_response(request, response)
