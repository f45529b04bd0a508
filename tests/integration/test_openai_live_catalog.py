"""The demo catalog's research prompt on the real OpenAI API, through the
service layer, the database sink and the REST API (marked ``openai``).

Skipped unless ``OPENAI_API_KEY`` is set; the model is ``WINK_LIVE_MODEL``
(see ``live_openai.py``). The run uses the production adapter settings.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from sessions_app import services
from sessions_app.models import AgentSession
from tests.integration.live_openai import LIVE_MODEL
from tooling.demo import seed_demo_catalog
from tooling.models import PromptTemplate

pytestmark = [pytest.mark.openai, pytest.mark.django_db]

DEMO_DOMAINS = ("docs.python.org", "docs.djangoproject.com")


def _in_demo_domains(domain: str) -> bool:
    return any(domain == d or domain.endswith(f".{d}") for d in DEMO_DOMAINS)


def test_research_session_records_native_web_search_and_citations_for_the_api(
    settings: Any, api_client: Any
) -> None:
    settings.WINK_PROVIDER = "openai"
    settings.OPENAI_API_KEY = os.environ["OPENAI_API_KEY"]
    settings.OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
    seed_demo_catalog()
    PromptTemplate.objects.filter(namespace="demo", key="research").update(
        model=LIVE_MODEL
    )

    session = services.start_session(
        prompt_ref="demo/research",
        params={"question": "In which Python version was zoneinfo added?"},
    )

    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    assert (session.provider, session.model) == ("openai", LIVE_MODEL)
    searches = list(session.tool_invocations.filter(native=True, kind="web_search"))
    assert searches
    for search in searches:
        assert (search.name, search.provider, search.success) == (
            "web_search",
            "openai",
            True,
        )
    citations = list(session.citations.filter(kind="url_citation"))
    assert citations
    assert all(_in_demo_domains(c.domain) for c in citations), [
        c.url for c in citations
    ]
    assert {c.search_call_id for c in citations} <= {s.call_id for s in searches}

    response = api_client.get(f"/api/sessions/{session.pk}/")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "succeeded"
    assert sorted(
        (c["call_id"], c["kind"]) for c in body["tool_invocations"] if c["native"]
    ) == sorted((s.call_id, "web_search") for s in searches)
    assert sorted(c["url"] for c in body["citations"]) == sorted(
        c.url for c in session.citations.all()
    )
