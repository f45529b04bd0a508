"""Signing in, with a limit on failed attempts (the login page and the admin's).

Each attempt takes a slot of its username (``WINK_LOGIN_RATE``, 5 per 15
minutes by default) and one of its client's address (``WINK_LOGIN_IP_RATE``,
50) before the password is checked (``tooling.api.throttling.Slots``: in the
cache every worker shares, exact when attempts arrive together). A failed
attempt keeps its slots; a successful one frees its username's (its
address's other failures stay counted). With no slot free, the attempt is
refused without checking the password, with 429 and the same message whether
the account exists or not, until the oldest failure has aged out: then one
more attempt may be made, and so on. The username counts case-insensitively,
and only as a digest (the cache never holds it).

An attempt the form refuses for another reason (an inactive account, a
non-staff account at the admin's login) counts as failed too: otherwise the
limit would tell a right password from a wrong one.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.exceptions import ValidationError
from django.db.models.base import ModelBase
from django.http import HttpRequest, HttpResponse

from tooling.api.throttling import Slots
from wink_project.admin_fields import check_fields
from wink_project.admin_selection import checked_selection, comparable_filters

REFUSED = "Too many failed sign-in attempts; try again in {wait}."


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _minutes(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return "1 minute" if minutes == 1 else f"{minutes} minutes"


class Attempt:
    """One sign-in attempt's slots: ``start()`` before the password is
    checked, then ``succeeded()`` (or nothing: a failure keeps them)."""

    def __init__(self, request: HttpRequest | None, username: str) -> None:
        self.slots: list[Slots] = []
        self.user: Slots | None = None
        if settings.WINK_LOGIN_RATE is not None:
            self.user = Slots(
                f"wink:signin:user:{_digest(username.casefold())}",
                *settings.WINK_LOGIN_RATE,
            )
            self.slots.append(self.user)
        if settings.WINK_LOGIN_IP_RATE is not None:
            address = request.META.get("REMOTE_ADDR") if request is not None else None
            self.slots.append(
                Slots(
                    f"wink:signin:ip:{_digest(str(address or 'unknown'))}",
                    *settings.WINK_LOGIN_IP_RATE,
                )
            )
        #: seconds to wait when ``start()`` refused the attempt
        self.wait: float | None = None

    def start(self) -> bool:
        """Take a slot of each limit; ``False`` (and ``wait``) when one has
        none free (the slots taken here are given back: nothing was tried)."""
        for index, slots in enumerate(self.slots):
            if not slots.take():
                for taken in self.slots[:index]:
                    taken.give_back()
                self.wait = slots.wait
                return False
        return True

    def succeeded(self) -> None:
        """The password was right: the username's failures are forgotten, and
        this attempt does not count against its address."""
        for slots in self.slots:
            if slots is self.user:
                slots.clear()
            else:
                slots.give_back()


class ThrottledLoginMixin:
    """For an ``AuthenticationForm``: its ``clean()`` within an ``Attempt``.
    ``refused_for``: the seconds to wait, when the attempt was refused."""

    request: HttpRequest | None
    cleaned_data: dict[str, Any]
    refused_for: float | None = None

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if username is None or not password:  # the fields' own errors
            return super().clean()  # type: ignore[misc]
        attempt = Attempt(self.request, username)
        if not attempt.start():
            self.refused_for = attempt.wait or 0.0
            raise ValidationError(
                REFUSED.format(wait=_minutes(self.refused_for)), code="throttled"
            )
        cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        attempt.succeeded()  # not reached when the form refused: it counts
        return cleaned


class SignInForm(ThrottledLoginMixin, AuthenticationForm):
    pass


class AdminSignInForm(ThrottledLoginMixin, AdminAuthenticationForm):
    pass


def refused(response: HttpResponse, form: Any) -> HttpResponse:
    """``response`` (the form page again) as a 429 with ``Retry-After`` when
    the form refused the attempt for its limit."""
    wait = getattr(form, "refused_for", None)
    if wait is not None:
        response.status_code = 429
        response["Retry-After"] = str(max(1, math.ceil(wait)))
    return response


class SignInView(LoginView):
    """``/accounts/login/``: Django's login view with ``SignInForm``."""

    authentication_form = SignInForm
    redirect_authenticated_user = True

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        return refused(super().form_invalid(form), form)


class AdminSite(admin.AdminSite):
    """The default admin site (``wink_project.apps.AdminConfig``), whose login
    uses ``AdminSignInForm``."""

    login_form = AdminSignInForm

    def register(
        self, model_or_iterable: Any, admin_class: Any = None, **options: Any
    ) -> None:
        """Django's; each model admin's fields take what every admin form
        takes (``admin_fields``)."""
        super().register(model_or_iterable, admin_class, **options)
        models = (
            [model_or_iterable]
            if isinstance(model_or_iterable, ModelBase)
            else model_or_iterable
        )
        for model in models:
            check_fields(self.get_model_admin(model))

    def admin_view(self, view: Any, cacheable: bool = False) -> Any:
        """Every admin view; a model's list page also refuses a selection
        that is not the model's keys, and a filter the database cannot bind
        (``admin_selection``)."""
        model_admin = getattr(view, "__self__", None)
        if (
            isinstance(model_admin, admin.ModelAdmin)
            and getattr(view, "__name__", "") == "changelist_view"
        ):
            view = comparable_filters(checked_selection(view, model_admin.model))
        return super().admin_view(view, cacheable)

    @login_not_required
    def login(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        response = super().login(request, extra_context)
        context = getattr(response, "context_data", None) or {}
        return refused(response, context.get("form"))
