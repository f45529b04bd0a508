"""The citations of a rare domain (``plans.DOMAIN_SORT_ROWS``): sorted, not
read newest first through every other domain's citations. Both ways a
domain filter reads page newest first, each citation once, subdomains
included; on PostgreSQL the few matches' plan sorts them instead of walking
the time index (``make bench-scale``: ``?domain=site123.example.org``)."""

import datetime

import pytest
from django.db import connection, transaction
from django.http import QueryDict
from django.utils import timezone

from sessions_app.audit import plans
from sessions_app.audit.filters import CitationFilterSet
from sessions_app.audit.pages import CitationListView
from sessions_app.audit.pagination import CreatedAtCursorPagination
from sessions_app.models import Citation
from tests.sessions_app.cursor_pages import listed_ids
from tests.sessions_app.factories import CitationFactory, ProviderCallFactory

pytestmark = pytest.mark.django_db

API_URL = "/api/citations/"
PAGE_URL = "/audit/citations/"


@pytest.fixture(params=["sorted", "newest first"])
def domain_plan(request, monkeypatch):
    """Both ways the domain filter reads: its few matches sorted
    (PostgreSQL) and newest first (many matches; SQLite)."""
    if request.param == "sorted" and connection.vendor != "postgresql":
        pytest.skip("the estimate is PostgreSQL's (DATABASE_URL=postgres://...)")
    monkeypatch.setattr(
        plans, "DOMAIN_SORT_ROWS", 10**9 if request.param == "sorted" else -1
    )
    return request.param


def cited(n, domain):
    return CitationFactory.create(
        url=f"https://{domain}/page-{n}",
        domain=domain,
        created_at=timezone.now() - datetime.timedelta(minutes=n),
    )


@pytest.mark.usefixtures("domain_plan")
def test_a_domains_citations_page_newest_first(admin_client, monkeypatch):
    matches = [
        cited(n, "docs.example.com" if n % 3 else "example.com") for n in range(12)
    ]
    for n in range(5):
        cited(n, "notexample.com")

    monkeypatch.setattr(CitationListView, "page_size", 5)
    shown, query = [], {"domain": "Example.com"}
    while True:
        page = admin_client.get(PAGE_URL, query)
        assert page.status_code == 200
        shown += [citation.pk for citation in page.context["citations"]]
        if not page.context["page"].older:
            break
        query = {"domain": "Example.com", "after": page.context["page"].older}
    assert shown == [citation.pk for citation in matches]
    back = admin_client.get(
        PAGE_URL, {"domain": "example.com", "before": page.context["page"].newer}
    )
    assert [c.pk for c in back.context["citations"]] == shown[5:10]

    monkeypatch.setattr(CreatedAtCursorPagination, "page_size", 4)
    listed = listed_ids(admin_client, API_URL, {"domain": "example.com"})
    assert listed == [citation.pk for citation in matches]


def test_postgresql_sorts_a_rare_domains_citations_instead_of_walking_time():
    if connection.vendor != "postgresql":
        pytest.skip("the estimate is PostgreSQL's (DATABASE_URL=postgres://...)")
    for n in range(3):
        cited(n, "rare.example.org")

    def plan(query):
        rows = CitationFilterSet(QueryDict(query), queryset=Citation.objects.all()).qs
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_sort = off")  # tempt the index
            return rows.order_by(f"-{plans.search_order(rows)}")[:51].explain()

    rare = plan("domain=rare.example.org")
    assert "Sort Key: ((created_at + " in rare, rare  # its matches sorted
    assert "Index Scan Backward" not in rare, rare  # not the time index walked
    assert "Index Scan Backward using sessions_app_citation_created_at" in plan(
        "kind=url_citation"  # another filter: newest first, as before
    )


def test_the_api_pages_a_rare_domains_tied_citations_each_once(
    admin_client, monkeypatch
):
    """A provider response's citations share their created_at. Sorted (not
    read from the time index), ties are put in order by their key, which the
    cursor names with the time (ADR 0030): no page repeats or skips one."""
    at = timezone.now() - datetime.timedelta(hours=1)
    call = ProviderCallFactory.create()
    made = [
        CitationFactory.create(
            session=call.session,
            provider_call=call,
            url=f"https://rare.example.org/p{n}",
            domain="rare.example.org",
            created_at=at,
        )
        for n in range(30)
    ]
    monkeypatch.setattr(plans, "DOMAIN_SORT_ROWS", 10**9)  # sorted (PostgreSQL)
    monkeypatch.setattr(CreatedAtCursorPagination, "page_size", 4)

    listed = listed_ids(admin_client, API_URL, {"domain": "rare.example.org"})
    assert sorted(listed) == sorted(citation.pk for citation in made)
