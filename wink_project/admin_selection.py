"""The rows an admin action is asked to run on must be keys of the model,
and a list's filters must be values the database can compare.

The list pages post the chosen rows' keys as ``_selected_action``; Django
filters by them as given, so a key that is not one (``abc`` for an integer
key, a bad UUID), which no browser sends but a script may, failed in the
query: a 500. ``checked_selection`` wraps a list page: such a post is
answered as Django answers one with no rows chosen, a message and the list
again, and nothing is done.

A related row's filter in the address past the largest integer
(``?prompt=99999999999999999999999``) is handed to the database as it is,
and SQLite refuses to bind it (``OverflowError``: Django's range check covers
integer fields, not the keys of related rows): the list answers it as Django
answers a lookup it cannot make, by sending the list's address with ``?e=1``
(``comparable_filters``).

(A change form's many-to-many choice is checked the same way:
``wink_project.admin_fields``.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.admin import helpers
from django.contrib.admin.views.main import ERROR_FLAG
from django.core.exceptions import ValidationError
from django.db import models
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import SimpleTemplateResponse

logger = logging.getLogger(__name__)


def checked_selection(
    view: Callable[..., HttpResponse], model: type[models.Model]
) -> Callable[..., HttpResponse]:
    """``view`` (a list page of ``model``), refusing a posted selection that
    holds something other than a key of ``model``."""

    @wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "POST" and "action" in request.POST:
            field = model._meta.pk
            assert field is not None
            bad = not_keys(request.POST.getlist(helpers.ACTION_CHECKBOX_NAME), field)
            if bad:
                messages.warning(
                    request,
                    "Nothing was done: the selection holds a value that is not "
                    "a row of this list. Choose the rows again.",
                )
                return HttpResponseRedirect(request.get_full_path())
        return view(request, *args, **kwargs)

    return checked


def not_keys(values: list[str], field: models.Field[Any, Any]) -> list[str]:
    """The values that are not values of ``field`` (a key) the database can
    compare."""
    bad = []
    for value in values:
        try:
            if "\x00" in value:  # no database stores it
                raise ValidationError(value)
            field.run_validators(field.to_python(value))
        except (ValidationError, ValueError, TypeError, OverflowError):
            bad.append(value)
    return bad


def comparable_filters(
    view: Callable[..., HttpResponse],
) -> Callable[..., HttpResponse]:
    """``view`` (a list page), answering a filter the database cannot bind
    (an integer past its range) as Django answers a bad lookup: the list's
    address with ``?e=1``, then Django's "Database error" page if that fails
    too."""

    @wraps(view)
    def comparable(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except OverflowError:
            if not _holds_a_huge_integer(request):
                raise  # not the filter's: a real error
            logger.warning("A list's filter past the largest integer: %s", request.path)
            if ERROR_FLAG in request.GET:
                return SimpleTemplateResponse(
                    "admin/invalid_setup.html", {"title": "Database error"}
                )
            return HttpResponseRedirect(f"{request.path}?{ERROR_FLAG}=1")

    return comparable


# The largest integer a database column holds (a 64-bit signed integer).
_LARGEST = 2**63 - 1


def _holds_a_huge_integer(request: HttpRequest) -> bool:
    """Whether a value of the address's query is an integer past
    ``_LARGEST``, which SQLite refuses to bind."""
    for _name, values in request.GET.lists():
        for value in values:
            digits = value.strip().removeprefix("-")
            if (
                digits.isascii()
                and digits.isdigit()
                # (past 19 digits it is past the largest; Python refuses to
                # read more than 4,300)
                and (len(digits) > 19 or int(digits) > _LARGEST)
            ):
                return True
    return False
