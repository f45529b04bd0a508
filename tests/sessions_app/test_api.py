import base64
import datetime
import uuid
from urllib.parse import urlencode

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.audit.pagination import CreatedAtCursorPagination
from sessions_app.models import AgentSession, Citation
from tests.sessions_app.cursor_pages import listed_back, listed_ids
from tests.sessions_app.factories import (
    AgentSessionFactory,
    CitationFactory,
    PolicyDenialFactory,
    ProviderCallFactory,
    StateChangeFactory,
    ToolInvocationFactory,
    UserFactory,
    VirtualFileFactory,
)

pytestmark = pytest.mark.django_db

SESSIONS_URL = "/api/sessions/"
CITATIONS_URL = "/api/citations/"


def detail_url(session):
    return f"/api/sessions/{session.pk}/"


def make_full_session(**kwargs):
    session = AgentSessionFactory.create(**kwargs)
    call = ProviderCallFactory.create(session=session, turn=1)
    ProviderCallFactory.create(session=session, turn=2)
    ToolInvocationFactory.create(session=session, sequence=2, call_id="call_b")
    ToolInvocationFactory.create(session=session, sequence=1, call_id="call_a")
    CitationFactory.create(session=session, provider_call=call)
    PolicyDenialFactory.create(session=session)
    StateChangeFactory.create(session=session)
    VirtualFileFactory.create(session=session)
    return session


# Authentication


@pytest.mark.parametrize(
    "url",
    [
        SESSIONS_URL,
        CITATIONS_URL,
        "/api/sessions/00000000-0000-0000-0000-000000000001/",
    ],
)
def test_api_rejects_anonymous_reads_with_401(url):
    response = APIClient().get(url)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json() == {
        "detail": "Authentication credentials were not provided.",
        "code": "not_authenticated",
        "errors": {},
    }


@pytest.mark.parametrize("url", ["/api/schema/", "/api/docs/"])
def test_api_schema_and_docs_are_public(url):
    assert APIClient().get(url).status_code == 200


@pytest.mark.parametrize("url", ["/api/schema/", "/api/docs/"])
def test_api_schema_and_docs_ignore_stale_credentials(url):
    """A public page read with an inactive user's token, or one that names
    nothing, answered 401 (found by hostile QA): it reads no credentials."""
    from rest_framework.authtoken.models import Token

    inactive = UserFactory.create(is_active=False)
    token = Token.objects.create(user=inactive)
    for key in (token.key, "0" * 40):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        assert client.get(url).status_code == 200, key


def test_api_rejects_anonymous_session_start(monkeypatch):
    called = []
    monkeypatch.setattr(services, "start_session", lambda **kw: called.append(kw))

    response = APIClient().post(
        SESSIONS_URL, {"prompt": "demo/research"}, format="json"
    )

    assert response.status_code == 401
    assert called == []


def test_api_accepts_token_authentication(user):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")

    assert client.get(SESSIONS_URL).status_code == 200


# Session list


def test_session_list_is_newest_first_with_counts(api_client):
    older = AgentSessionFactory.create()
    newer = AgentSessionFactory.create(created_at=older.created_at.replace(year=2100))
    ToolInvocationFactory.create_batch(3, session=older)
    CitationFactory.create_batch(2, session=older)

    response = api_client.get(SESSIONS_URL)

    assert response.status_code == 200
    results = response.json()["results"]
    assert [item["id"] for item in results] == [str(newer.pk), str(older.pk)]
    assert results[1]["tool_call_count"] == 3
    assert results[1]["citation_count"] == 2
    assert "rendered_prompt" not in results[0]


def test_session_list_filters_by_status(api_client):
    failed = AgentSessionFactory.create(status=AgentSession.Status.FAILED)
    AgentSessionFactory.create(status=AgentSession.Status.SUCCEEDED)

    response = api_client.get(SESSIONS_URL, {"status": "failed"})

    assert [item["id"] for item in response.json()["results"]] == [str(failed.pk)]


def test_session_list_filters_by_prompt_ref(api_client):
    wanted = AgentSessionFactory.create(prompt_ref="support/triage")
    AgentSessionFactory.create(prompt_ref="demo/research")

    response = api_client.get(SESSIONS_URL, {"prompt_ref": "support/triage"})

    assert [item["id"] for item in response.json()["results"]] == [str(wanted.pk)]


def test_session_list_filters_by_created_at_range(api_client):
    AgentSessionFactory.create(created_at=timezone.now().replace(year=2001))
    recent = AgentSessionFactory.create()

    response = api_client.get(
        SESSIONS_URL, {"created_at_after": "2020-01-01T00:00:00Z"}
    )

    assert [item["id"] for item in response.json()["results"]] == [str(recent.pk)]


def test_session_list_paginates_with_a_cursor(api_client, monkeypatch):
    AgentSessionFactory.create_batch(3)
    monkeypatch.setattr(CreatedAtCursorPagination, "page_size", 2)

    first = api_client.get(SESSIONS_URL).json()
    second = api_client.get(first["next"]).json()

    assert len(first["results"]) == 2
    assert len(second["results"]) == 1
    assert second["next"] is None


@pytest.mark.parametrize("count", [1, 5])
def test_session_list_query_count_is_constant(
    api_client, django_assert_num_queries, count
):
    for _ in range(count):
        make_full_session()

    with django_assert_num_queries(3):  # two of them: the permission lookup
        response = api_client.get(SESSIONS_URL)

    assert len(response.json()["results"]) == count


# Session detail


def test_session_detail_includes_the_audit_trail(api_client):
    session = make_full_session(
        tools_payload=[{"type": "web_search"}], output_text="Tides follow the moon."
    )

    data = api_client.get(detail_url(session)).json()

    for field in [
        "id",
        "prompt_ref",
        "status",
        "params",
        "model",
        "provider",
        "rendered_prompt",
        "tools_payload",
        "request_options",
        "output_text",
        "output",
        "usage",
        "turns",
        "error_phase",
        "error_message",
        "error_payload",
        "created_at",
        "started_at",
        "finished_at",
    ]:
        assert field in data
    assert [call["turn"] for call in data["provider_calls"]] == [1, 2]
    assert len(data["citations"]) == 1
    assert data["citations"][0]["turn"] == 1
    assert data["policy_denials"][0]["policy_name"] == "read_before_write"
    assert data["state_changes"][0]["key"] == "plan"
    assert data["files"][0]["content"] == "# Notes"


def test_session_detail_lists_tool_invocations_in_sequence_order(api_client):
    session = make_full_session()

    data = api_client.get(detail_url(session)).json()

    assert [t["sequence"] for t in data["tool_invocations"]] == [1, 2]
    assert [t["call_id"] for t in data["tool_invocations"]] == ["call_a", "call_b"]
    assert set(data["tool_invocations"][0]) >= {
        "sequence",
        "turn",
        "name",
        "call_id",
        "native",
        "provider",
        "kind",
        "params",
        "success",
        "message",
        "value",
        "rendered_output",
        "created_at",
    }


def test_session_detail_leaves_out_provider_call_bodies(api_client):
    session = make_full_session()

    call = api_client.get(detail_url(session)).json()["provider_calls"][0]

    assert "request" not in call
    assert "response" not in call
    assert call["latency_ms"] == 321.5
    assert call["input_tokens"] == 100


def test_session_detail_unknown_id_is_404(api_client):
    assert api_client.get(f"/api/sessions/{uuid.uuid4()}/").status_code == 404


def test_session_detail_query_count_is_constant(api_client, django_assert_num_queries):
    small = AgentSessionFactory.create()
    ToolInvocationFactory.create(session=small)
    CitationFactory.create(session=small)
    large = make_full_session()
    ToolInvocationFactory.create_batch(10, session=large)
    CitationFactory.create_batch(5, session=large)

    api_client.get(SESSIONS_URL)  # the user's permissions are cached from here
    # session + provider calls, tool calls, citations, denials, changes, files
    with django_assert_num_queries(7):
        api_client.get(detail_url(small))
    with django_assert_num_queries(7):
        api_client.get(detail_url(large))


def test_session_provider_calls_include_request_and_response(api_client):
    session = make_full_session()

    response = api_client.get(f"/api/sessions/{session.pk}/provider-calls/")

    assert response.status_code == 200
    calls = response.json()["results"]
    assert [call["turn"] for call in calls] == [1, 2]
    assert calls[0]["request"] == {"model": "gpt-5.4", "input": []}
    assert calls[0]["response"] == {"id": "resp_1", "output": []}


# Starting a session


@pytest.fixture
def fake_start_session(monkeypatch):
    calls = []

    def start_session(*, prompt_ref, params, user, trust_level, label, revision):
        calls.append(
            {
                "prompt_ref": prompt_ref,
                "params": params,
                "user": user,
                "trust_level": trust_level,
                "label": label,
                "revision": revision,
            }
        )
        session = AgentSessionFactory.create(prompt_ref=prompt_ref, params=params)
        ToolInvocationFactory.create(session=session)
        return session

    monkeypatch.setattr(services, "start_session", start_session)
    return calls


def test_session_create_starts_a_run(api_client, user, fake_start_session):
    response = api_client.post(
        SESSIONS_URL,
        {"prompt": "demo/research", "params": {"topic": "tides"}},
        format="json",
    )

    assert response.status_code == 201
    assert fake_start_session == [
        {
            "prompt_ref": "demo/research",
            "params": {"topic": "tides"},
            "user": user,
            "trust_level": "standard",
            "label": None,
            "revision": None,
        }
    ]
    data = response.json()
    assert data["prompt_ref"] == "demo/research"
    assert len(data["tool_invocations"]) == 1
    assert response["Location"].endswith(f"/api/sessions/{data['id']}/")


def test_session_create_params_default_to_an_empty_object(
    api_client, fake_start_session
):
    response = api_client.post(SESSIONS_URL, {"prompt": "demo/research"}, format="json")

    assert response.status_code == 201
    assert fake_start_session[0]["params"] == {}


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "prompt"),
        ({"prompt": "research"}, "prompt"),
        ({"prompt": "demo/research/extra"}, "prompt"),
        ({"prompt": "demo/research", "params": ["not", "an", "object"]}, "params"),
        ({"prompt": "demo/research", "params": "topic=tides"}, "params"),
        ({"prompt": "demo/research", "label": "Production!"}, "label"),
        ({"prompt": "demo/research", "revision": "abc"}, "revision"),
        ({"prompt": "demo/research", "revision": "draft\u0000"}, "revision"),
        (
            {"prompt": "demo/research", "label": "production", "revision": "draft"},
            "non_field_errors",
        ),
    ],
)
def test_session_create_rejects_invalid_input(
    api_client, fake_start_session, payload, field
):
    response = api_client.post(SESSIONS_URL, payload, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert field in response.json()["errors"]
    assert fake_start_session == []


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            ValidationError({"prompt": "No enabled prompt template is named 'x/y'."}),
            {"prompt": ["No enabled prompt template is named 'x/y'."]},
        ),
        (
            ValidationError({"params": "Missing value for $topic."}),
            {"params": ["Missing value for $topic."]},
        ),
        (
            ValidationError("The catalog entry is invalid: duplicate tool name."),
            {
                "non_field_errors": [
                    "The catalog entry is invalid: duplicate tool name."
                ]
            },
        ),
        (
            ValidationError({"__all__": ["Broken catalog."]}),
            {"non_field_errors": ["Broken catalog."]},
        ),
    ],
)
def test_session_create_turns_service_validation_errors_into_400(
    api_client, monkeypatch, error, expected
):
    def start_session(**kwargs):
        raise error

    monkeypatch.setattr(services, "start_session", start_session)

    response = api_client.post(SESSIONS_URL, {"prompt": "x/y"}, format="json")

    assert response.status_code == 400
    assert response.json() == {
        "detail": "Invalid input.",
        "code": "invalid",
        "errors": expected,
    }
    assert not AgentSession.objects.exists()


# Citations


def test_citation_list_spans_sessions(api_client):
    first, second = CitationFactory.create(), CitationFactory.create()

    data = api_client.get(CITATIONS_URL).json()

    assert {item["session"] for item in data["results"]} == {
        str(first.session_id),
        str(second.session_id),
    }


def test_citation_list_filters_by_domain_including_subdomains(api_client):
    exact = CitationFactory.create(url="https://example.com/a", domain="example.com")
    sub = CitationFactory.create(
        url="https://docs.example.com/b", domain="docs.example.com"
    )
    CitationFactory.create(url="https://notexample.com/c", domain="notexample.com")
    CitationFactory.create(url="https://example.org/d", domain="example.org")

    data = api_client.get(CITATIONS_URL, {"domain": "Example.com"}).json()

    assert {item["id"] for item in data["results"]} == {exact.pk, sub.pk}


def test_citation_list_filters_by_session(api_client):
    wanted = CitationFactory.create()
    CitationFactory.create()

    data = api_client.get(CITATIONS_URL, {"session": str(wanted.session_id)}).json()

    assert [item["id"] for item in data["results"]] == [wanted.pk]


def test_citation_list_filters_by_kind(api_client):
    CitationFactory.create()
    file_citation = CitationFactory.create(
        kind="file_citation", url="", domain="", file_id="file_1", filename="a.pdf"
    )

    data = api_client.get(CITATIONS_URL, {"kind": "file_citation"}).json()

    assert [item["id"] for item in data["results"]] == [file_citation.pk]


@pytest.fixture
def restricted_session():
    return AgentSessionFactory.create(
        tools_payload=[
            {"type": "function", "name": "read_file"},
            {"type": "web_search", "filters": {"allowed_domains": ["example.com"]}},
        ]
    )


@pytest.mark.parametrize(
    ("url", "outside"),
    [
        ("https://example.com/a", False),
        ("https://docs.example.com/a", False),
        ("https://evil.com/a", True),
        ("https://notexample.com/a", True),
    ],
)
def test_citation_list_flags_domains_outside_the_web_search_filter(
    api_client, restricted_session, url, outside
):
    CitationFactory.create(
        session=restricted_session, url=url, domain=Citation.domain_of(url)
    )

    item = api_client.get(CITATIONS_URL).json()["results"][0]

    assert item["outside_allowed_domains"] is outside


def test_citation_list_never_flags_unrestricted_sessions(api_client):
    CitationFactory.create(
        session=AgentSessionFactory.create(tools_payload=[{"type": "web_search"}]),
        url="https://anything.net/x",
        domain="anything.net",
    )

    item = api_client.get(CITATIONS_URL).json()["results"][0]

    assert item["outside_allowed_domains"] is False


def test_citation_list_never_flags_file_citations(api_client, restricted_session):
    CitationFactory.create(
        session=restricted_session, kind="file_citation", url="", domain=""
    )

    item = api_client.get(CITATIONS_URL).json()["results"][0]

    assert item["outside_allowed_domains"] is False


def test_citation_list_query_count_is_constant(api_client, django_assert_num_queries):
    CitationFactory.create()
    api_client.get(SESSIONS_URL)  # the user's permissions are cached from here
    # the page (cut from the citation table alone), then its sessions
    with django_assert_num_queries(2):
        api_client.get(CITATIONS_URL)
    CitationFactory.create_batch(6)
    with django_assert_num_queries(2):
        assert len(api_client.get(CITATIONS_URL).json()["results"]) == 7


# Schema


def test_schema_is_served_to_authenticated_users(api_client):
    response = api_client.get("/api/schema/")

    assert response.status_code == 200


def test_schema_validates_without_warnings(tmp_path):
    call_command(
        "spectacular",
        "--validate",
        "--fail-on-warn",
        "--file",
        str(tmp_path / "schema.yml"),
    )

    assert "/api/sessions/{id}/provider-calls/" in (tmp_path / "schema.yml").read_text()


@pytest.mark.parametrize(
    "component", ["AgentSessionCreate", "ApprovalDecision", "PreviewRequest"]
)
def test_a_body_that_refuses_unknown_fields_says_so_in_the_schema(component):
    """An unknown field is a 400 (``StrictSerializer``): the schema's
    ``additionalProperties: false`` tells a client generator as much. A
    response's shape, which may grow, does not say it."""
    response = APIClient().get("/api/schema/", {"format": "json"})
    schemas = response.json()["components"]["schemas"]
    assert schemas[component]["additionalProperties"] is False
    assert "additionalProperties" not in schemas["AgentSessionList"]
    # a body that is a response's shape too (its fields may grow; from a
    # hostile review)
    for shared in ("Dataset", "Case", "Grader"):
        assert "additionalProperties" not in schemas[shared], shared


def test_api_reverse_names():
    assert reverse("sessions_api:session-list") == SESSIONS_URL
    assert reverse("sessions_api:citation-list") == CITATIONS_URL


@pytest.mark.parametrize("size", [3, 4, 7])
def test_cursor_pages_list_rows_that_share_a_created_at_each_once(
    api_client, monkeypatch, size
):
    """A provider response's citations share its created_at. The cursor
    names a row by (created_at, key) (ADR 0030), so the pages list each once
    forward and back (PostgreSQL sorts a session's citations); the same for
    sessions created at one instant."""
    at = timezone.now() - datetime.timedelta(hours=1)
    call = ProviderCallFactory.create()
    cited = [
        CitationFactory.create(
            session=call.session,
            provider_call=call,
            url=f"https://example.org/p{n}",
            created_at=at,
        )
        for n in range(30)
    ]
    CitationFactory.create_batch(5)
    started = [AgentSessionFactory.create(created_at=at) for _ in range(30)]
    monkeypatch.setattr(CreatedAtCursorPagination, "page_size", size)

    query = {"session": str(call.session_id)}
    citations = listed_ids(api_client, CITATIONS_URL, query)
    assert sorted(citations) == sorted(citation.pk for citation in cited)
    # and back from the last page by the previous links, which DRF's own
    # cursor (a created_at and an offset among its ties) walked skipping rows
    assert listed_back(api_client, CITATIONS_URL, query) == citations
    query = {"created_at_before": at.isoformat()}
    sessions = listed_ids(api_client, SESSIONS_URL, query)
    assert sorted(sessions) == sorted(str(session.pk) for session in started)
    assert listed_back(api_client, SESSIONS_URL, query) == sessions


def test_a_cursor_names_a_row_and_reads_from_the_time_index(api_client):
    """A cursor's position is a row's (created_at, key): a page is read from
    ``created_at <=`` that time (the index seeks it), the key tested among
    the rows that share it. A cursor of DRF's own kind (a time alone, as
    this API gave out before) is refused as DRF refuses a bad one."""
    AgentSessionFactory.create_batch(3)
    first = api_client.get(SESSIONS_URL, {"page_size": 1}).json()
    with CaptureQueriesContext(connection) as queries:
        second = api_client.get(first["next"])
    assert second.status_code == 200
    listed = [query["sql"] for query in queries.captured_queries]
    page = next(sql for sql in listed if "LIMIT 2" in sql)
    assert '"created_at" <= ' in page, page
    back = api_client.get(second.json()["previous"]).json()
    assert back["results"] == first["results"] and back["previous"] is None

    stale = base64.b64encode(
        urlencode({"p": timezone.now().isoformat()}).encode()
    ).decode()
    response = api_client.get(SESSIONS_URL, {"cursor": stale})
    assert response.status_code == 404
    assert response.json()["detail"] == "Invalid cursor"
