"""The rows an admin action is asked to run on must be keys of the model.

The list pages post the chosen rows' keys as ``_selected_action``; Django
filters by them as given, so a key that is not one (``abc`` for an integer
key, a bad UUID), which no browser sends but a script may, failed in the
query: a 500. ``checked_selection`` wraps a list page: such a post is
answered as Django answers one with no rows chosen, a message and the list
again, and nothing is done.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.admin import helpers
from django.core.exceptions import ValidationError
from django.db import models
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect


def checked_selection(
    view: Callable[..., HttpResponse], model: type[models.Model]
) -> Callable[..., HttpResponse]:
    """``view`` (a list page of ``model``), refusing a posted selection that
    holds something other than a key of ``model``."""

    @wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "POST" and "action" in request.POST:
            bad = _not_keys(request.POST.getlist(helpers.ACTION_CHECKBOX_NAME), model)
            if bad:
                messages.warning(
                    request,
                    "Nothing was done: the selection holds a value that is not "
                    "a row of this list. Choose the rows again.",
                )
                return HttpResponseRedirect(request.get_full_path())
        return view(request, *args, **kwargs)

    return checked


def _not_keys(values: list[str], model: type[models.Model]) -> list[str]:
    field = model._meta.pk
    assert field is not None
    bad = []
    for value in values:
        try:
            if "\x00" in value:  # no database stores it
                raise ValidationError(value)
            field.run_validators(field.to_python(value))
        except (ValidationError, ValueError, TypeError, OverflowError):
            bad.append(value)
    return bad
