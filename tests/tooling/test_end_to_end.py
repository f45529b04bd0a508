"""API -> service -> openai SDK -> offline provider (HTTP) -> database -> API."""

from __future__ import annotations

import pytest
from django.urls import reverse

from sessions_app.models import AgentSession, Citation, ToolInvocation
from tooling.demo import seed_demo_catalog
from tooling.offline import OfflineServer

pytestmark = pytest.mark.django_db


def _start(api_client, ref: str, params: dict | None = None):
    return api_client.post(
        "/api/sessions/", {"prompt": ref, "params": params or {}}, format="json"
    )


def _assert_research_session(body: dict) -> None:
    assert body["status"] == "succeeded"
    calls = body["tool_invocations"]
    native = [c for c in calls if c["native"]]
    local = [c for c in calls if not c["native"]]
    assert native and native[0]["name"] == "web_search"
    assert native[0]["kind"] == "web_search" and native[0]["provider"] == "openai"
    assert native[0]["success"] is True
    assert local and local[0]["name"] == "count_words" and local[0]["success"]
    assert [c["sequence"] for c in calls] == sorted(c["sequence"] for c in calls)
    citations = body["citations"]
    assert citations
    for citation in citations:
        assert citation["domain"].endswith(
            ("docs.python.org", "docs.djangoproject.com")
        )
        assert citation["cited_text"]
        assert body["output_text"][: len(body["output_text"])]  # output recorded


def test_api_run_of_the_demo_prompt_records_tool_calls_and_citations(api_client):
    seed_demo_catalog()

    response = _start(api_client, "demo/research", {"question": "What is Django?"})

    assert response.status_code == 201, response.content
    session_id = response.json()["id"]
    detail = api_client.get(f"/api/sessions/{session_id}/")
    assert detail.status_code == 200
    body = detail.json()
    _assert_research_session(body)
    assert "What is Django?" in body["rendered_prompt"]
    session = AgentSession.objects.get(pk=session_id)
    assert ToolInvocation.objects.filter(session=session, native=True).count() >= 1
    assert Citation.objects.filter(session=session).count() == len(body["citations"])
    assert session.provider_calls.count() == body["turns"] == 2


def test_api_run_over_loopback_http_uses_the_configured_base_url(api_client, settings):
    seed_demo_catalog()
    with OfflineServer() as server:
        settings.WINK_PROVIDER = "openai"
        settings.OPENAI_API_KEY = "sk-offline"
        settings.OPENAI_BASE_URL = server.base_url
        settings.WINK_OPENAI_MAX_RETRIES = 0
        response = _start(api_client, "demo/research")

    assert response.status_code == 201, response.content
    _assert_research_session(api_client.get(response["Location"]).json())


def test_api_run_of_the_release_prompt_shows_denial_and_recovery(api_client):
    seed_demo_catalog()

    body = _start(api_client, "demo/release").json()

    assert body["status"] == "succeeded"
    denials = body["policy_denials"]
    assert any(
        d["tool_name"] == "deploy"
        and d["reason"] == "Tool 'deploy' requires: build, test"
        for d in denials
    )
    deploys = [c for c in body["tool_invocations"] if c["name"] == "deploy"]
    assert [c["success"] for c in deploys] == [False, True]


def test_api_run_of_the_notes_prompt_reads_before_overwriting(api_client):
    seed_demo_catalog()

    body = _start(api_client, "demo/notes").json()

    assert body["status"] == "succeeded"
    names = [(c["name"], c["success"]) for c in body["tool_invocations"]]
    denied = names.index(("write_file", False))
    assert ("read_file", True) in names[denied:]
    assert names[-1] == ("write_file", True) or ("write_file", True) in names[denied:]
    assert any(d["policy_name"] == "read-before-write" for d in body["policy_denials"])
    assert any(change["key"] == "plan" for change in body["state_changes"])


def test_api_unknown_prompt_is_a_400_and_records_nothing(api_client):
    response = _start(api_client, "demo/nope")

    assert response.status_code == 400
    assert "demo/nope" in str(response.json())
    assert AgentSession.objects.count() == 0


def test_api_unknown_param_is_a_400_and_records_nothing(api_client):
    seed_demo_catalog()

    response = _start(api_client, "demo/research", {"colour": "blue"})

    assert response.status_code == 400
    assert "colour" in str(response.json())
    assert AgentSession.objects.count() == 0


def test_audit_page_of_a_demo_session_shows_tool_calls_and_citation_links(client, user):
    seed_demo_catalog()
    from sessions_app import services

    session = services.start_session(prompt_ref="demo/research", params={})
    client.force_login(user)

    page = client.get(reverse("sessions_app:session-detail", args=[session.pk]))

    assert page.status_code == 200
    html = page.content.decode()
    assert "web_search" in html and "count_words" in html
    citation = session.citations.first()
    assert citation is not None
    assert f'href="{citation.url}"' in html
