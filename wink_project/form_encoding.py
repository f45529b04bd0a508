"""A form's values must be UTF-8 (``Utf8FormMiddleware``).

Django decodes a posted form's values with ``errors="replace"``: bytes that are
not UTF-8 (a lone surrogate's ``%ED%A0%80``, Latin-1 sent without saying so)
become U+FFFD without a word. A decision's reason posted so was stored as
``a\ufffd\ufffd\ufffdb`` and read by the model; the API refuses the same bytes
in JSON. A form body (``application/x-www-form-urlencoded``) whose values
are not UTF-8 is refused with a 400 before any view reads it (one that says
another charset Django itself refuses: such a form must be UTF-8). The API
(``/api/``) takes JSON only, and refuses a form body with a 415 of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template import loader

FORM = "application/x-www-form-urlencoded"
NOT_UTF8 = (
    "The form held text that is not UTF-8 (a browser always sends UTF-8: a "
    "script may have sent another encoding without saying so). Nothing was "
    "saved: send it again as UTF-8."
)


def utf8_form(body: bytes) -> bool:
    """Whether every name and value of an urlencoded ``body`` is UTF-8."""
    for pair in body.split(b"&"):
        try:
            unquote_to_bytes(pair.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


class Utf8FormMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if (
            request.method in ("POST", "PUT", "PATCH")
            and request.content_type == FORM
            and not request.path.startswith("/api/")
            and not utf8_form(request.body)
        ):
            return HttpResponseBadRequest(
                loader.render_to_string("400.html", {"reason": NOT_UTF8}, request)
            )
        return self.get_response(request)
