"""A session's sources: each citation names the web search call it came from,
and sources consulted but not cited are listed apart."""

from __future__ import annotations

import pytest

from sessions_app import services
from sessions_app.audit.pages import consulted_sources
from sessions_app.models import Citation, ToolInvocation
from tests.sessions_app.factories import (
    AgentSessionFactory,
    CitationFactory,
    ToolInvocationFactory,
)
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _offline(settings):
    settings.WINK_PROVIDER = "offline"


def test_research_citations_are_linked_to_their_web_search_call(api_client):
    seed_demo_catalog()

    session = services.start_session(prompt_ref="demo/research")

    # The answer is JSON (structured output) and its citations are still there.
    assert session.output is not None
    assert set(session.output) == {"answer", "sources"}
    searches = set(
        ToolInvocation.objects.filter(
            session=session, native=True, kind="web_search"
        ).values_list("call_id", flat=True)
    )
    citations = list(Citation.objects.filter(session=session, kind="url_citation"))
    assert citations and searches
    assert {citation.search_call_id for citation in citations} <= searches
    body = api_client.get(f"/api/sessions/{session.pk}/").json()
    assert {c["search_call_id"] for c in body["citations"]} <= searches


def test_session_page_links_each_citation_to_its_search_call(admin_client):
    seed_demo_catalog()
    session = services.start_session(prompt_ref="demo/research")
    citation = Citation.objects.filter(session=session).first()

    page = admin_client.get(session.get_absolute_url()).content.decode()

    assert citation is not None
    call_id = citation.search_call_id
    assert f'id="call-{call_id}"' in page  # the timeline entry
    assert f'href="#call-{call_id}"' in page  # the source that points at it


def test_a_citation_whose_call_was_not_recorded_still_names_it(admin_client):
    session = AgentSessionFactory.create(output_text="Tides rise.")
    CitationFactory.create(session=session, search_call_id="ws_gone")

    page = admin_client.get(session.get_absolute_url()).content.decode()

    assert "from web search <code>ws_gone</code>" in page


def test_consulted_sources_treat_a_tracked_url_as_cited():
    session = AgentSessionFactory.create()
    search = ToolInvocationFactory.create(
        session=session,
        native=True,
        kind="web_search",
        value={
            "sources": ["https://a.example/doc", "https://b.example/"],
        },
    )
    cited = CitationFactory.create(
        session=session, url="https://a.example/doc?utm_source=openai"
    )

    assert consulted_sources([search], [cited]) == ["https://b.example/"]


def test_session_page_flags_a_citation_outside_the_allowed_domains(admin_client):
    session = AgentSessionFactory.create(
        output_text="Tides rise.",
        tools_payload=[
            {"type": "web_search", "filters": {"allowed_domains": ["docs.python.org"]}}
        ],
    )
    CitationFactory.create(
        session=session, url="https://docs.python.org/3/", title="In"
    )
    CitationFactory.create(
        session=session, url="https://blog.example.com/x", title="Out"
    )

    page = admin_client.get(session.get_absolute_url()).content.decode()

    assert page.count("outside allowed domains</span>") == 1
    flagged = page[page.index(">Out<") : page.index("</li>", page.index(">Out<"))]
    assert "outside allowed domains" in flagged
