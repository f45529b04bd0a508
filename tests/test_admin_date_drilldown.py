"""Every admin change list with a date drill-down (``date_hierarchy``)
refuses a year, month or day that is not a short ASCII number as the admin
refuses any bad lookup (``?e=1``), never with a 500
(``tooling.admin.date_drilldown``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import User
from django.urls import reverse

pytestmark = pytest.mark.django_db

HUGE = "99999999999999999999"  # past a C long: Django's OverflowError


def drilled() -> list[tuple[str, str]]:
    """(change list URL, date field) of every admin with a drill-down."""
    found = []
    for model in apps.get_models():
        if not admin.site.is_registered(model):
            continue
        model_admin = admin.site.get_model_admin(model)
        if model_admin.date_hierarchy:
            opts = model._meta
            url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
            found.append((url, model_admin.date_hierarchy))
    return found


def test_the_drilled_lists_are_found():
    assert len(drilled()) >= 10  # the audit rows, releases, prices, history


@pytest.mark.parametrize(
    "query",
    [
        {"__year": HUGE},
        {"__year": "2026", "__month": HUGE},
        {"__year": "2026", "__month": "11", "__day": HUGE},
        {"__year": "٢٠٢٦"},
        {"__year": "2_026"},
        {"__year": "-1"},
    ],
    ids=["year", "month", "day", "arabic-indic", "underscore", "negative"],
)
def test_a_bad_drill_down_value_is_the_admins_bad_lookup(client: Any, query):
    client.force_login(User.objects.create_superuser("root", "r@example.com", "pw"))
    for url, field in drilled():
        params = {f"{field}{part}": value for part, value in query.items()}
        response = client.get(url, params)
        assert response.status_code == 302, (url, response.status_code)
        assert response["Location"] == f"{url}?e=1"


def test_a_good_drill_down_still_filters(client: Any):
    client.force_login(User.objects.create_superuser("root", "r@example.com", "pw"))
    for url, field in drilled():
        response = client.get(url, {f"{field}__year": "2026", f"{field}__month": "11"})
        assert response.status_code == 200, url
