"""The page a form refused by CSRF protection shows (``CSRF_FAILURE_VIEW``).

Django's own view renders a project's ``403_csrf.html`` with the request
alone, so the page could not say why the form was refused. This one passes
Django's reason too, shown with ``DEBUG`` on only (it may quote the request's
``Origin`` or ``Referer``); with ``DEBUG`` off the reason is in the
``django.security.csrf`` log line, as before.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.template import loader


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    context = {"reason": reason if settings.DEBUG else ""}
    return HttpResponseForbidden(
        loader.render_to_string("403_csrf.html", context, request=request)
    )
