"""A form's values must be UTF-8 (``Utf8FormMiddleware``).

Django decodes a posted form's values with ``errors="replace"``: bytes that are
not UTF-8 (a lone surrogate's ``%ED%A0%80``, Latin-1 sent without saying so)
become U+FFFD without a word. A decision's reason posted so was stored as
``a\ufffd\ufffd\ufffdb`` and read by the model; the API refuses the same bytes
in JSON. Such a form is refused with a 400 that says why, before the view
reads it:

- urlencoded (what browsers send): its names and values are decoded from the
  body, strictly;
- multipart: Django has already decoded its text fields (and kept no body), so
  a text value holding U+FFFD is refused (a browser sends none that was not
  typed; a form needing the character itself can be sent urlencoded).

It runs as a view is about to be called (``process_view``): after the URL is
resolved, CSRF is checked and the user is known, so an anonymous or refused
request costs nothing, and the page shows who is signed in. A body of more
fields than ``DATA_UPLOAD_MAX_NUMBER_FIELDS`` is left to Django, which refuses
it. The API (``/api/``) takes JSON only, and refuses a form with a 415.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template import loader

NOT_UTF8 = (
    "The form held text that is not UTF-8 (a browser always sends UTF-8: a "
    "script may have sent another encoding without saying so). Nothing was "
    "saved: send it again as UTF-8."
)
REPLACEMENT = "\ufffd"


def utf8_form(body: bytes) -> bool:
    """Whether every name and value of an urlencoded ``body`` is UTF-8."""
    for pair in body.split(b"&"):
        try:
            unquote_to_bytes(pair.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


def _refused(request: HttpRequest) -> bool:
    if request.content_type == "application/x-www-form-urlencoded":
        body = request.body
        most = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        if most is not None and body.count(b"&") >= most:
            return False  # Django refuses it (TooManyFieldsSent)
        return not utf8_form(body)
    if request.content_type == "multipart/form-data":
        return any(
            REPLACEMENT in name or any(REPLACEMENT in value for value in values)
            for name, values in request.POST.lists()
        )
    return False


class Utf8FormMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Any, args: Any, kwargs: Any
    ) -> HttpResponse | None:
        if (
            request.method in ("POST", "PUT", "PATCH")
            and not request.path.startswith("/api/")
            and _refused(request)
        ):
            return HttpResponseBadRequest(
                loader.render_to_string("400.html", {"reason": NOT_UTF8}, request)
            )
        return None
