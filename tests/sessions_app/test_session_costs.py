"""Costs on the session page, the session list and the session API: the
session's total and budget, each provider call's cost, each native call's
fee, "unpriced" where no price was in effect (linked to the price list for
staff who may view it)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import reverse

from tests.sessions_app.factories import (
    AgentSessionFactory,
    ProviderCallFactory,
    ToolInvocationFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

D = Decimal


@pytest.fixture
def people():
    alice = UserFactory.create(username="alice")
    auditor = UserFactory.create(username="auditor", is_staff=True)
    auditor.groups.add(Group.objects.get(name="Auditors"))
    return {"alice": alice, "auditor": auditor}


def seen_by(user, url):
    """The response ``user`` gets at ``url``."""
    client = Client()
    client.force_login(user)
    return client.get(url)


def page_of(user, url):
    return seen_by(user, url).content.decode()


def test_session_page_shows_the_cost_the_budget_and_each_calls_cost(people):
    session = AgentSessionFactory.create(
        created_by=people["alice"],
        cost=D("0.0123"),
        cost_budget=D("0.5"),
        unpriced_calls=1,
    )
    ProviderCallFactory.create(session=session, turn=1, cost=D("0.0023"))
    ProviderCallFactory.create(session=session, turn=2, cost=None)
    # a failed request: no usage, so not "unpriced" (found by a hostile review)
    ProviderCallFactory.create(
        session=session, turn=3, cost=None, response=None, error="boom"
    )
    ToolInvocationFactory.create(
        session=session, web_search=True, turn=1, cost=D("0.01")
    )
    ToolInvocationFactory.create(session=session, turn=1, name="read_file")

    page = page_of(people["alice"], session.get_absolute_url())

    assert re.search(
        r'id="session-cost">\s*\$0\.0123 <span class="muted">of a '
        r"\$0\.5000 budget",
        page,
    )
    assert "1 unpriced call, not in the total" in page
    assert (
        '<span class="cost" title="USD, from the usage and the prices in effect">'
        "$0.0023</span>" in page
    )
    assert page.count(">unpriced</span>") == 1  # the second call
    assert ">no cost</span>" in page  # the failed third
    assert "fee $0.0100" in page
    assert page.count("fee $") == 1 and "fee unpriced" not in page  # local: none
    assert "price list" not in page  # not staff


def test_session_page_links_unpriced_calls_to_the_price_list_for_staff(people):
    prices = reverse("admin:tooling_modelprice_changelist")
    fees = reverse("admin:tooling_hostedtoolprice_changelist")
    staff = people["auditor"]
    staff.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["view_modelprice", "view_hostedtoolprice"]
        )
    )
    session = AgentSessionFactory.create(created_by=staff, unpriced_calls=2)
    ProviderCallFactory.create(session=session, cost=None)
    ToolInvocationFactory.create(session=session, web_search=True, cost=None)

    page = page_of(staff, session.get_absolute_url())

    assert f'<a href="{prices}">unpriced</a>' in page
    assert f'<a href="{prices}">price list</a>' in page
    assert f'<a href="{fees}">fee unpriced</a>' in page


def test_session_page_shows_no_price_list_link_to_staff_who_may_not_view_it():
    staff = UserFactory.create(username="staff", is_staff=True)
    session = AgentSessionFactory.create(created_by=staff, unpriced_calls=1)
    ProviderCallFactory.create(session=session, cost=None)

    page = page_of(staff, session.get_absolute_url())

    assert ">unpriced</span>" in page
    assert "/admin/tooling/" not in page


def test_session_page_without_a_budget_says_none(people):
    session = AgentSessionFactory.create(created_by=people["alice"], cost=D("0"))

    page = page_of(people["alice"], session.get_absolute_url())

    assert re.search(r'id="session-cost">\s*\$0\.00\s', page)
    assert "budget" not in page


def test_session_list_has_a_cost_column(people):
    AgentSessionFactory.create(created_by=people["alice"], cost=D("1.5"))

    page = page_of(people["alice"], "/audit/sessions/")

    assert '<th class="num">Cost</th>' in page
    assert '<td class="num">$1.50</td>' in page


def test_nav_links_to_the_cost_page(people):
    page = page_of(people["alice"], "/audit/sessions/")

    assert '<a href="/audit/costs/">Costs</a>' in page


def test_session_api_has_costs_as_decimal_strings(people):
    session = AgentSessionFactory.create(
        created_by=people["alice"],
        cost=D("0.0123"),
        cost_budget=D("0.5"),
        unpriced_calls=2,
    )
    ProviderCallFactory.create(session=session, cost=D("0.0023"))
    ToolInvocationFactory.create(session=session, web_search=True, cost=D("0.01"))
    ToolInvocationFactory.create(session=session, name="read_file")
    alice = people["alice"]

    detail = seen_by(alice, f"/api/sessions/{session.pk}/").json()
    listed = seen_by(alice, "/api/sessions/").json()["results"][0]
    calls = seen_by(alice, f"/api/sessions/{session.pk}/provider-calls/").json()

    for data in (detail, listed):
        assert data["cost"] == "0.0123000000"
        assert data["cost_budget"] == "0.5000"
        assert data["unpriced_calls"] == 2
    assert detail["provider_calls"][0]["cost"] == "0.0023000000"
    assert calls["results"][0]["cost"] == "0.0023000000"
    assert [tool["cost"] for tool in detail["tool_invocations"]] == [
        "0.0100000000",
        None,
    ]


def test_session_api_budget_is_null_without_one(people):
    session = AgentSessionFactory.create(created_by=people["alice"])

    data = seen_by(people["alice"], f"/api/sessions/{session.pk}/").json()

    assert (data["cost"], data["cost_budget"]) == ("0.0000000000", None)
