"""The API's contract: discover a prompt, start a run, follow its events page by
page, read every tool call; strict input; one error shape; throttling."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import AgentSession
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ToolInvocationFactory,
    UserFactory,
)
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db

SESSIONS = "/api/sessions/"


@pytest.fixture
def demo():
    seed_demo_catalog()


def error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"detail", "code", "errors"}, body
    assert body["code"] == code, body
    return body


# -- discovering prompts ----------------------------------------------------------


def test_prompts_list_their_parameters_and_tools(api_client, demo):
    body = api_client.get("/api/prompts/").json()

    by_ref = {prompt["ref"]: prompt for prompt in body["results"]}
    assert set(by_ref) == {
        "demo/research",
        "demo/release",
        "demo/ship",
        "demo/notes",
        "demo/patch",
    }
    release = by_ref["demo/release"]
    assert release["parameters"] == [
        {
            "name": "service",
            "type": "string",
            "required": False,
            "default": "catalog-api",
            "sections": ["release.pipeline"],
        }
    ]
    assert [tool["name"] for tool in release["tools"]] == [
        "deploy",
        "build",
        "test",
        "lint",
    ]
    assert all(tool["description"] for tool in release["tools"])
    research = by_ref["demo/research"]
    assert [h["kind"] for h in research["hosted_tools"]] == ["web_search"]
    patch = by_ref["demo/patch"]
    assert [h["kind"] for h in patch["hosted_tools"]] == ["apply_patch"]
    assert len(release["revision"]) == 64


def test_a_prompt_by_namespace_and_key(api_client, demo):
    body = api_client.get("/api/prompts/demo/release/").json()
    assert body["ref"] == "demo/release"
    assert body["model"]

    missing = api_client.get("/api/prompts/demo/nope/")
    assert (
        error(missing, 404, "not_found")["detail"]
        == "No PromptTemplate matches the given query."
    )


def test_the_revision_a_prompt_shows_is_the_one_a_run_executes(api_client, demo):
    shown = api_client.get("/api/prompts/demo/release/").json()["revision"]
    session = services.start_session(prompt_ref="demo/release")
    assert session.revision_id == shown


def test_preview_renders_without_calling_the_provider(api_client, demo):
    response = api_client.post(
        "/api/prompts/demo/release/preview/",
        {"params": {"service": "billing"}},
        format="json",
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert "Ship billing to staging" in body["rendered_prompt"]
    assert body["request"]["input"][0]["content"] == body["rendered_prompt"]
    assert [tool["name"] for tool in body["request"]["tools"]][:1] == ["deploy"]
    assert not AgentSession.objects.exists()


def test_a_parameter_of_the_wrong_type_is_refused(api_client, demo):
    for url in ("/api/prompts/demo/release/preview/", SESSIONS):
        payload: dict[str, Any] = {"params": {"service": 42}}
        if url == SESSIONS:
            payload["prompt"] = "demo/release"
        body = error(api_client.post(url, payload, format="json"), 400, "invalid")
        assert body["errors"] == {
            "params": ["Parameter 'service' must be a string; got a number."]
        }
    assert not AgentSession.objects.exists()


def test_an_unknown_parameter_is_refused_by_name(api_client, demo):
    response = api_client.post(
        SESSIONS,
        {"prompt": "demo/release", "params": {"colour": "blue"}},
        format="json",
    )
    assert "colour" in error(response, 400, "invalid")["errors"]["params"][0]


# -- strict input ------------------------------------------------------------------


def test_unknown_fields_are_refused_by_name(api_client, demo):
    response = api_client.post(
        SESSIONS,
        {"prompt": "demo/release", "parms": {}, "extra": 1},
        format="json",
    )
    body = error(response, 400, "invalid")
    assert set(body["errors"]) == {"parms", "extra"}
    assert body["errors"]["parms"][0].startswith("Unknown field; expected: ")


@pytest.mark.parametrize("name", ["\ud800", "a\u0000b", "\udc00\ud800"])
def test_an_unknown_field_named_with_unstorable_text_is_a_400(api_client, demo, name):
    """Its name is in the 400 as it can be rendered (U+FFFD), not a 500 from
    rendering a lone surrogate."""
    response = api_client.post(
        SESSIONS,
        json.dumps({"prompt": "demo/release", "params": {}, name: 1}).encode(),
        content_type="application/json",
    )
    body = error(response, 400, "invalid")
    (shown,) = body["errors"]
    assert shown == name.replace("\u0000", "\ufffd").replace(
        "\ud800", "\ufffd"
    ).replace("\udc00", "\ufffd")
    assert body["errors"][shown][0].startswith("Unknown field; expected: ")
    assert not AgentSession.objects.exists()


def test_unknown_fields_shown_alike_are_each_named(api_client, demo):
    payload: dict[str, Any] = {"prompt": "demo/release", "params": {}}
    for name in ("\ud800", "\udc00", "\ud801", "non_field_errors"):
        payload[name] = 1
    response = api_client.post(
        SESSIONS, json.dumps(payload).encode(), content_type="application/json"
    )
    body = error(response, 400, "invalid")
    assert sorted(body["errors"]) == sorted(
        ["\ufffd", "\ufffd (2)", "\ufffd (3)", "non_field_errors (2)"]
    )


def test_many_unknown_fields_are_named_up_to_a_limit(api_client, demo):
    payload: dict[str, Any] = {"prompt": "demo/release", "params": {}}
    payload.update({f"extra{number:05d}": 1 for number in range(20_000)})
    payload["a" * 5000] = 1  # named first (sorted), shortened
    response = api_client.post(SESSIONS, payload, format="json")
    body = error(response, 400, "invalid")
    named = [name for name in body["errors"] if name != "non_field_errors"]
    assert len(named) == 20 and named[0] == "a" * 100 + "\u2026"
    assert body["errors"]["non_field_errors"] == ["And 19981 more unknown field(s)."]
    assert len(response.content) < 10_000


@pytest.mark.parametrize(
    "payload",
    [
        {"prompt": "demo/rel\u0000ease"},
        {"prompt": "demo/release", "params": {"service": "a\ud800"}},
        {"prompt": "demo/release", "params": {"ser\u0000vice": "x"}},
        {"prompt": "demo/release", "params": {"ser\ud800vice": "x"}},
        {"prompt": "demo/release", "params": {"ser\ud800vice": {"x": "\u0000"}}},
    ],
)
def test_text_no_database_stores_is_refused(api_client, demo, payload):
    response = api_client.post(
        SESSIONS,
        json.dumps(payload).encode(),
        content_type="application/json",
    )
    body = error(response, 400, "invalid")
    assert "Must not contain NUL bytes or lone surrogates." in str(body["errors"])
    assert not AgentSession.objects.exists()


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (
            '{"prompt": "demo/release", "params": {"x": ' + "[" * 70 + "]" * 70 + "}}",
            "invalid",
        ),
        ("[" * 200_000 + "]" * 200_000, "parse_error"),
    ],
    ids=["deeper than the limit", "too deep to decode"],
)
def test_deeply_nested_bodies_are_a_400(api_client, demo, body, code):
    response = api_client.post(SESSIONS, body.encode(), content_type="application/json")
    assert "nested more than 64 levels" in error(response, 400, code)["detail"] + str(
        response.json().get("errors")
    )
    assert not AgentSession.objects.exists()


def test_a_body_that_is_not_an_object_is_refused(api_client):
    response = api_client.post(SESSIONS, [1, 2], format="json")
    assert error(response, 400, "invalid")["errors"] == {
        "non_field_errors": ["Expected a JSON object."]
    }


def test_a_null_body_is_refused_alike_everywhere(api_client, superuser_api, demo):
    """A JSON ``null`` was "No data provided" on a decision, "Expected a JSON
    object." on a start (found by hostile QA): one message."""
    from tests.sessions_app.factories import ApprovalRequestFactory

    request = ApprovalRequestFactory.create()
    for client, url in (
        (api_client, SESSIONS),
        (superuser_api, f"/api/approvals/{request.pk}/approve/"),
        (superuser_api, f"/api/approvals/{request.pk}/deny/"),
        (superuser_api, "/api/prompts/demo/release/preview/"),
        (superuser_api, "/api/experiments/"),
    ):
        response = client.post(url, b"null", content_type="application/json")
        assert error(response, 400, "invalid")["errors"] == {
            "non_field_errors": ["Expected a JSON object, not null."]
        }, url


@pytest.mark.parametrize("declared", ["abc", "-5", "1.5", "\u0661\u0662"])
def test_a_content_length_that_is_not_digits_is_named(api_client, demo, declared):
    """Django read such a length as 0: the body was ignored and the 400 said
    "prompt: This field is required." (found by hostile QA)."""
    response = api_client.post(
        SESSIONS,
        b'{"prompt": "demo/release"}',
        content_type="application/json",
        CONTENT_LENGTH=declared,
    )
    body = error(response, 400, "invalid")
    assert body["detail"] == (
        "The Content-Length header must be the body's size in bytes, digits only."
    )
    huge = api_client.post(
        SESSIONS, b"{}", content_type="application/json", CONTENT_LENGTH="1" + "0" * 40
    )
    assert error(huge, 413, "request_too_large")["detail"] == (
        f"The request body is 1{'0' * 40} bytes; the API accepts at most 1048576."
    )
    endless = api_client.post(
        SESSIONS, b"{}", content_type="application/json", CONTENT_LENGTH="9" * 5000
    )
    assert error(endless, 413, "request_too_large")["detail"].startswith(
        "The request body is past any size;"
    )
    # leading zeros are the same length (from a hostile review: a 413)
    padded = api_client.post(
        SESSIONS,
        b'{"prompt": "demo/release"}',
        content_type="application/json",
        CONTENT_LENGTH="0" * 30 + "26",
    )
    assert padded.status_code in (201, 202), padded.content


def test_a_nested_strict_body_that_may_be_null_takes_null():
    """Only a whole body of ``null`` is refused: a nested strict serializer
    that allows null takes it (from a hostile review)."""
    from rest_framework import serializers

    from tooling.api.input import StrictSerializer

    class Inner(StrictSerializer):
        name = serializers.CharField()

    class Outer(StrictSerializer):
        inner = Inner(allow_null=True, required=False)

    body = Outer(data={"inner": None})
    assert body.is_valid(), body.errors
    assert body.validated_data == {"inner": None}
    assert not Outer(data=None).is_valid()


def test_malformed_json_is_a_400(api_client):
    response = api_client.post(SESSIONS, b"{nope", content_type="application/json")
    error(response, 400, "parse_error")


def test_a_number_past_a_floats_range_is_a_400_that_says_so(api_client, demo):
    """``1e400`` was read as infinity, then refused as "Value must be valid
    JSON." (found by hostile QA): the JSON was valid, the number too large."""
    body = b'{"prompt": "demo/release", "params": {"question": 1e400}}'
    response = api_client.post(SESSIONS, body, content_type="application/json")
    detail = error(response, 400, "parse_error")["detail"]
    assert detail == (
        "JSON parse error - A number is too large (a float is at most about 1.8e308)."
    )
    assert not AgentSession.objects.exists()


def test_an_integer_past_pythons_digits_is_a_400_that_says_so(api_client, demo):
    body = b'{"prompt": "demo/release", "params": {"n": 1' + b"0" * 5000 + b"}}"
    response = api_client.post(SESSIONS, body, content_type="application/json")
    detail = error(response, 400, "parse_error")["detail"]
    assert detail == "JSON parse error - A number has too many digits."
    # the rest of the decoder's refusals are as they were
    response = api_client.post(
        SESSIONS, b'{"prompt": NaN}', content_type="application/json"
    )
    assert "not JSON compliant" in error(response, 400, "parse_error")["detail"]
    twice = b'{"integer string conversion": 1, "integer string conversion": 2}'
    response = api_client.post(SESSIONS, twice, content_type="application/json")
    assert "appears twice" in error(response, 400, "parse_error")["detail"]
    assert not AgentSession.objects.exists()


def test_a_too_large_body_is_a_json_413(api_client, settings):
    settings.WINK_API_MAX_BODY_BYTES = 2048
    payload = {"prompt": "demo/release", "params": {"service": "x" * 4000}}
    response = api_client.post(SESSIONS, payload, format="json")
    assert "accepts at most 2048" in error(response, 413, "request_too_large")["detail"]


def test_a_too_large_parameter_is_a_json_413(api_client, settings, demo):
    settings.WINK_API_MAX_PARAM_BYTES = 100
    payload = {"prompt": "demo/release", "params": {"service": "x" * 200}}
    response = api_client.post(SESSIONS, payload, format="json")
    assert error(response, 413, "request_too_large")["detail"].startswith(
        "params.service is 202 bytes encoded"
    )
    assert not AgentSession.objects.exists()


@pytest.mark.parametrize(
    "query",
    [
        {"created_at_after": "2026-01-01T00:00:00+20:00"},
        {"created_at_after": "9999-12-31T23:00:00-10:00"},
        {"created_at_after": "yesterday"},
        {"status": "nope"},
        {"prompt_ref": "a\u0000b"},
        {"user": "x" * 500},
    ],
)
def test_filter_values_that_cannot_be_used_are_a_400(api_client, query):
    AgentSessionFactory.create()
    error(api_client.get(SESSIONS, query), 400, "invalid")


@pytest.mark.parametrize("name", ["created_at_after", "created_at_before"])
def test_an_invalid_date_bound_is_an_error_keyed_by_its_parameter(api_client, name):
    """It was keyed ``created_at``, a parameter the API does not take."""
    body = error(api_client.get(SESSIONS, {name: "nope"}), 400, "invalid")
    assert list(body["errors"]) == [name], body
    both = {"created_at_after": "nope", "created_at_before": "2026-01-01T00:00:00"}
    body = error(api_client.get(SESSIONS, both), 400, "invalid")
    assert list(body["errors"]) == ["created_at_after"], body


def test_a_far_offset_within_limits_is_compared_in_utc(api_client):
    session = AgentSessionFactory.create()
    after = session.created_at.astimezone().isoformat()
    response = api_client.get(
        SESSIONS, {"created_at_after": "2000-01-01T00:00:00+15:59"}
    )
    assert [item["id"] for item in response.json()["results"]] == [str(session.pk)]
    assert after  # the session's own timestamp parses too


def test_sessions_filter_by_user(api_client):
    mine = AgentSessionFactory.create(created_by=UserFactory.create(username="ada"))
    AgentSessionFactory.create(created_by=UserFactory.create(username="bob"))
    body = api_client.get(SESSIONS, {"user": "ada"}).json()
    assert [item["id"] for item in body["results"]] == [str(mine.pk)]


# -- one error shape ------------------------------------------------------------


def test_an_unknown_api_path_is_a_json_404(api_client):
    error(api_client.get("/api/nowhere/"), 404, "not_found")


def test_a_wrong_method_is_a_json_405(api_client):
    response = api_client.delete(SESSIONS)
    error(response, 405, "method_not_allowed")


def test_an_unexpected_error_is_a_logged_json_500(api_client, monkeypatch, caplog):
    from sessions_app.audit import api

    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(api.AgentSessionViewSet, "list", explode)

    response = api_client.get(SESSIONS)

    body = error(response, 500, "server_error")
    assert "boom" not in json.dumps(body)
    assert "Unexpected error on GET /api/sessions/" in caplog.text


def test_a_non_json_500_says_a_server_error_occurred_once():
    """A 500 a view or a middleware below answers as a page becomes the error
    shape ("A server error occurred.." had a period too many)."""
    from django.http import HttpResponseServerError
    from django.test import RequestFactory

    from tooling.api.errors import ApiErrorMiddleware

    middleware = ApiErrorMiddleware(lambda request: HttpResponseServerError("<h1>"))
    response = middleware(RequestFactory().get("/api/sessions/"))

    assert response.status_code == 500
    assert json.loads(response.content) == {
        "detail": "A server error occurred.",
        "code": "server_error",
        "errors": {},
    }


def _token_client() -> APIClient:
    from rest_framework.authtoken.models import Token

    client = APIClient()
    user = UserFactory.create(is_superuser=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user)}")
    return client


@pytest.mark.parametrize("debug", [True, False], ids=["debug", "no-debug"])
@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_a_write_to_an_api_url_without_its_slash_is_a_json_404(
    demo, settings, caplog, debug, method
):
    """Django's APPEND_SLASH raised a RuntimeError with DEBUG on (a logged 500,
    anonymous too) and answered a 301 that drops the body with it off."""
    import logging
    import uuid

    settings.DEBUG = debug
    session = AgentSessionFactory.create()
    paths = [
        "/api/sessions",
        f"/api/sessions/{session.pk}",
        f"/api/sessions/{session.pk}/cancel",
        f"/api/approvals/{uuid.uuid4()}/approve",
        "/api/datasets",
    ]
    caplog.set_level(logging.INFO)
    for client in (APIClient(), _token_client()):
        for path in paths:
            body = {"prompt": "demo/notes"}
            response = getattr(client, method)(path, body, format="json")
            detail = error(response, 404, "not_found")["detail"]
            assert f"({path}/)" in detail, detail
            assert method.upper() in detail
            assert "Location" not in response
    assert not AgentSession.objects.exclude(pk=session.pk).exists()
    assert AgentSession.objects.get().cancelled_by is None
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    # An unknown URL is the usual 404; a read (no body to lose) is redirected.
    response = getattr(APIClient(), method)("/api/nowhere", {}, format="json")
    assert error(response, 404, "not_found")["detail"] == "Not Found."
    for read in ("get", "head", "options"):
        response = getattr(APIClient(), read)("/api/sessions?status=failed")
        assert response.status_code == 301, (read, response.content)
        assert response["Location"] == "/api/sessions/?status=failed"


def test_a_bad_token_is_a_401(demo):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    response = client.get(SESSIONS)
    error(response, 401, "authentication_failed")
    assert response["WWW-Authenticate"] == "Token"


def test_a_body_holding_a_key_twice_is_a_400(api_client, demo):
    """Python's decoder keeps the last: this started demo/ship."""
    body = '{"prompt": "demo/research", "prompt": "demo/ship"}'
    response = api_client.post(SESSIONS, body, content_type="application/json")
    detail = error(response, 400, "parse_error")["detail"]
    assert 'the key "prompt" appears twice in one object' in detail, detail
    nested = '{"prompt": "demo/release", "params": {"service": "a", "service": "b"}}'
    response = api_client.post(SESSIONS, nested, content_type="application/json")
    assert (
        'the key "service" appears twice'
        in error(response, 400, "parse_error")["detail"]
    )
    assert not AgentSession.objects.exists()


def test_starting_without_the_permission_is_a_403(demo):
    client = APIClient()
    client.force_authenticate(UserFactory.create())
    response = client.post(SESSIONS, {"prompt": "demo/release"}, format="json")
    assert "Can start sessions" in error(response, 403, "permission_denied")["detail"]


def test_run_starts_are_throttled_per_user(api_client, settings, demo):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"session-start": "2/minute"},
    }
    statuses = [
        api_client.post(SESSIONS, {"prompt": "demo/release"}, format="json")
        for _ in range(3)
    ]
    assert [r.status_code for r in statuses] == [201, 201, 429]
    error(statuses[2], 429, "throttled")
    assert int(statuses[2]["Retry-After"]) > 0
    # Reading is not throttled.
    assert api_client.get(SESSIONS).status_code == 200


@pytest.mark.parametrize("url", [SESSIONS, "/api/approvals/"])
def test_options_points_at_the_schema_instead_of_describing_the_wrong_body(
    api_client, url
):
    """DRF's OPTIONS described ``POST /api/sessions/`` by the session's
    read-only detail (no ``prompt``), found by hostile QA; the schema is the
    one description of each route's body."""
    response = api_client.options(url)
    assert response.status_code == 200
    body = response.json()
    assert "actions" not in body
    assert body["schema"] == "http://testserver/api/schema/"
    assert "application/json" in body["parses"]


def test_a_refused_start_does_not_count_against_the_start_limit(
    api_client, settings, demo
):
    """Every POST took a slot, refused or not (found by hostile QA): a user
    without the permission was soon told "throttled" instead of why, and
    malformed bodies locked a client's valid starts out for a minute."""
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"session-start": "2/minute"},
    }

    def start(client: APIClient, body: Any) -> int:
        return client.post(SESSIONS, body, format="json").status_code

    refused = [
        start(api_client, {"prompt": "none/such"}),  # unknown prompt
        start(api_client, {"prompt": "demo/release", "params": []}),  # wrong type
        start(api_client, {"prompt": "demo/release", "trust_level": "root"}),
    ]
    assert refused == [400, 400, 400]
    assert [start(api_client, {"prompt": "demo/release"}) for _ in range(3)] == [
        201,
        201,
        429,
    ]
    stranger = APIClient()
    stranger.force_authenticate(UserFactory.create())
    # always why it is refused, never "throttled"
    assert {start(stranger, {"prompt": "demo/release"}) for _ in range(4)} == {403}


# -- following a run -------------------------------------------------------------


def test_events_page_through_the_whole_timeline(api_client, demo):
    session = services.start_session(prompt_ref="demo/notes")
    url = reverse("sessions_api:session-events", args=[session.pk])

    pages = []
    next_url = f"{url}?page_size=4"
    while next_url:
        page = api_client.get(next_url).json()
        pages.append(page["results"])
        next_url = page["next"]

    events = [event for page in pages for event in page]
    assert len(pages) > 2 and all(len(page) <= 4 for page in pages)
    everything = api_client.get(f"{url}?page_size=500").json()
    assert everything["next"] is None
    assert events == everything["results"]
    kinds = [event["kind"] for event in events]
    assert kinds.count("provider_call") == session.provider_calls.count()
    assert kinds.count("tool_invocation") == session.tool_invocations.count()
    assert kinds.count("policy_denial") == session.policy_denials.count() > 0
    assert kinds.count("state_change") == session.state_changes.count() > 0
    # A denial comes right before the call it denied; a turn's calls after
    # the provider call that asked for them.
    for index, event in enumerate(events):
        if event["kind"] == "policy_denial":
            following = events[index + 1]
            assert following["kind"] == "tool_invocation"
            assert following["data"]["call_id"] == event["data"]["call_id"]
    turns = [event["turn"] for event in events]
    assert turns == sorted(turns)


# Nested deeper than Python's JSON decoder goes (a RecursionError was a 500),
# and a megabyte.
NESTED = base64.urlsafe_b64encode(b"[" * 100_000).decode().rstrip("=")


@pytest.mark.parametrize("query", ["page_size=0", "page_size=x", "kind=nope"])
def test_bad_event_page_parameters_are_a_400(api_client, query):
    session = AgentSessionFactory.create()
    url = reverse("sessions_api:session-events", args=[session.pk])
    error(api_client.get(f"{url}?{query}"), 400, "invalid")


@pytest.mark.parametrize(
    "cursor", ["zz", "nope", "WzEsMiwzXQ", NESTED, "A" * 1_000_000]
)
def test_an_event_cursor_not_given_out_is_an_invalid_one(api_client, cursor):
    """As every other list answers it (it was a 400 keyed ``cursor``)."""
    session = AgentSessionFactory.create()
    url = reverse("sessions_api:session-events", args=[session.pk])
    body = error(api_client.get(url, {"cursor": cursor}), 404, "not_found")
    assert body["detail"] == "Invalid cursor"
    if cursor == "zz":
        other = error(api_client.get(SESSIONS, {"cursor": cursor}), 404, "not_found")
        assert other == body


def test_an_empty_event_kind_filters_nothing(api_client, demo):
    """README: an empty filter value filters nothing (it was a 400 "Unknown
    kind ''")."""
    session = services.start_session(prompt_ref="demo/notes")
    url = reverse("sessions_api:session-events", args=[session.pk])
    every = api_client.get(url, {"page_size": 500}).json()["results"]
    for query in ("kind=", "kind=&kind="):
        response = api_client.get(f"{url}?page_size=500&{query}")
        assert response.status_code == 200, response.content
        assert response.json()["results"] == every
    tools = api_client.get(f"{url}?page_size=500&kind=tool&kind=").json()["results"]
    assert tools and {event["kind"] for event in tools} == {"tool_invocation"}


@pytest.mark.parametrize("decoded", [b"\x00\x00\x00", b"x=1", b"p=1&evil=2", b"&"])
def test_a_list_refuses_a_cursor_naming_nothing_it_gives_out(api_client, decoded):
    """DRF reads a cursor without an offset, direction or position (or with
    keys of its own) as the first page; none of its cursors is one."""
    cursor = base64.b64encode(decoded).decode()
    for url in ("/api/sessions/", "/api/citations/", "/api/approvals/", "/api/tools/"):
        response = api_client.get(url, {"cursor": cursor})
        assert response.status_code == 404, (url, response.content[:200])
        assert response.json()["detail"] == "Invalid cursor"
    assert api_client.get("/api/sessions/", {"cursor": ""}).status_code == 200


@pytest.mark.parametrize("position", [NESTED, NESTED[:500], "A" * 100_000, "Wz\x00"])
def test_a_list_refuses_a_hostile_cursor_as_an_invalid_one(api_client, position):
    cursor = base64.b64encode(urlencode({"p": position}).encode()).decode()
    for url in ("/api/sessions/", "/api/citations/", "/api/approvals/"):
        response = api_client.get(url, {"cursor": cursor})
        assert response.status_code == 404, (url, response.content[:200])
        assert response.json()["detail"] == "Invalid cursor"


def _cursor(position: str) -> str:
    """A DRF cursor holding ``position`` (what a client can forge)."""
    return base64.b64encode(urlencode({"p": position}).encode()).decode()


def _row_position(moment: str, key: str) -> str:
    raw = json.dumps([moment, key]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.fixture
def superuser_api():
    client = APIClient()
    client.force_authenticate(UserFactory.create(is_superuser=True, is_staff=True))
    return client


@pytest.mark.parametrize(
    "moment", ["9999-12-31T23:59:59-15:00", "0001-01-01T00:00:00+15:00"]
)
def test_a_cursor_past_the_last_datetime_is_an_invalid_one(superuser_api, moment):
    """In UTC, as the database compares it, such a time does not exist
    (OverflowError: a 500 on every list)."""
    uuid, number = "4d3c0f9e-b376-4e4d-a758-f3c6bffc1cec", "1"
    keyset = {
        "/api/sessions/": uuid,
        "/api/approvals/": uuid,
        "/api/citations/": number,
        "/api/tool-invocations/": number,
        "/api/revisions/": "a" * 64,
    }
    for url, key in keyset.items():
        response = superuser_api.get(
            url, {"cursor": _cursor(_row_position(moment, key))}
        )
        assert response.status_code == 404, (url, response.content[:200])
        assert response.json()["detail"] == "Invalid cursor"
    for url in ("/api/releases/", "/api/catalog-changes/"):  # DRF's, by a time
        response = superuser_api.get(url, {"cursor": _cursor(moment)})
        assert response.status_code == 404, (url, response.content[:200])


@pytest.mark.parametrize(
    "position", ["abc", "1.5", "1e5", "", "\x00", "9" * 30, "-" + "9" * 30]
)
def test_a_cursor_not_of_the_ordering_fields_type_is_an_invalid_one(
    superuser_api, position
):
    """A session's tool calls by sequence, provider calls by turn, datasets by
    id: DRF compared a position of another type in the database (a 500)."""
    session = AgentSessionFactory.create()
    ToolInvocationFactory.create(session=session)
    urls = [
        reverse("sessions_api:session-tool-invocations", args=[session.pk]),
        reverse("sessions_api:session-provider-calls", args=[session.pk]),
        "/api/datasets/",
        "/api/experiments/",
    ]
    for url in urls:
        response = superuser_api.get(url, {"cursor": _cursor(position)})
        assert response.status_code == 404, (url, position, response.content[:200])
        assert response.json()["detail"] == "Invalid cursor"


def test_a_cursor_that_is_not_base64_is_an_invalid_one(superuser_api):
    """DRF skips the characters base64 does not know: ``!!!!`` read as no
    cursor at all, the first page."""
    for url in ("/api/sessions/", "/api/prompts/", "/api/tools/", "/api/datasets/"):
        response = superuser_api.get(url, {"cursor": "!!!!"})
        assert response.status_code == 404, (url, response.content[:200])


def test_the_cursors_a_list_gives_out_still_read(superuser_api):
    """Walked by its ``next`` links, then back by ``previous``: a time-ordered
    list of DRF's (catalog changes, ties of one instant included) and a
    keyset list (sessions)."""
    from django.contrib.contenttypes.models import ContentType

    from tooling.models import CatalogChange, ToolDefinition

    kind = ContentType.objects.get_for_model(ToolDefinition)
    CatalogChange.objects.bulk_create(
        CatalogChange(
            content_type=kind,
            object_id=str(n),
            object_repr=f"t{n}",
            action=CatalogChange.Action.CHANGED,
        )
        for n in range(55)
    )
    AgentSessionFactory.create_batch(5)
    for url, count in (
        ("/api/catalog-changes/", 55),
        ("/api/sessions/?page_size=2", 5),
    ):
        seen, link, last = [], url, None
        while link:
            page = superuser_api.get(link)
            assert page.status_code == 200, (link, page.content[:200])
            body = page.json()
            seen += [row["id"] for row in body["results"]]
            link, last = body["next"], body
        assert len(seen) == len(set(seen)) == count, url
        assert last is not None and last["previous"]
        assert superuser_api.get(last["previous"]).status_code == 200


@pytest.mark.parametrize("url", ["/api/prompts/", "/api/tools/", "/api/hosted-tools/"])
def test_the_catalog_lists_take_a_page_size(superuser_api, demo, url):
    """``page_size`` was ignored on the catalog lists (every row, ``next``
    null), though the README says a list takes 1-500 (found by hostile QA)."""
    every = superuser_api.get(url, {"page_size": 500}).json()["results"]
    assert len(every) >= 2
    listed, link = [], None
    first = superuser_api.get(url, {"page_size": 1}).json()
    listed += first["results"]
    link = first["next"]
    while link:
        body = superuser_api.get(link).json()
        assert len(body["results"]) == 1
        listed += body["results"]
        link = body["next"]
    assert listed == every
    for size in ("0", "501", "abc"):
        response = superuser_api.get(url, {"page_size": size})
        assert response.status_code == 400, (size, response.content[:200])
        assert "page_size" in response.json()["errors"]


@pytest.mark.parametrize("size", ["1", "2", "3"])
def test_prompts_sharing_a_namespace_are_each_listed_once_either_way(
    superuser_api, demo, size
):
    """Ordered by namespace then key, DRF's cursor (a position and an offset
    among the rows sharing it) skipped prompts paging back (every demo
    prompt shares "demo"; found by hostile QA)."""

    def refs(url: str, query: dict[str, str]) -> list[str]:
        listed, link = [], url
        while link:
            body = superuser_api.get(link, query).json()
            listed += [row["ref"] for row in body["results"]]
            link, query = body["next"], {}
        return listed

    forward = refs("/api/prompts/", {"page_size": size})
    assert len(forward) == len(set(forward)) == 5
    assert forward == sorted(forward)
    back = superuser_api.get("/api/prompts/", {"page_size": size}).json()
    while back["next"]:
        back = superuser_api.get(back["next"]).json()
    pages = [[row["ref"] for row in back["results"]]]
    while back["previous"]:
        back = superuser_api.get(back["previous"]).json()
        pages.insert(0, [row["ref"] for row in back["results"]])
    assert [ref for page in pages for ref in page] == forward


def test_a_name_cursor_holding_nul_is_an_invalid_one(superuser_api, demo):
    for url in ("/api/prompts/", "/api/tools/", "/api/hosted-tools/"):
        response = superuser_api.get(url, {"cursor": _cursor("demo\x00")})
        assert response.status_code == 404, (url, response.content[:200])
        assert superuser_api.get(url, {"cursor": _cursor("demo")}).status_code == 200


@pytest.mark.parametrize(
    ("headers", "query"),
    [
        ({"HTTP_ACCEPT": "text/html"}, {}),
        ({"HTTP_ACCEPT": "text/html,application/xhtml+xml,*/*;q=0.8"}, {}),
        ({}, {"format": "api"}),
    ],
)
def test_an_error_asked_for_as_a_page_is_still_the_json_error(
    api_client, headers, query
):
    """With the browsable API chosen (a browser's ``Accept``, ``?format=api``)
    every error was rendered as a page the middleware replaced with the bare
    status, "Bad Request." and no field (found by hostile QA)."""
    response = api_client.get("/api/sessions/", {"status": "bad", **query}, **headers)
    body = error(response, 400, "invalid")
    assert "status" in body["errors"]
    response = api_client.get("/api/sessions/nope/", query, **headers)
    assert error(response, 404, "not_found")["detail"] != "Not Found."


def test_a_sessions_tool_calls_page_in_order_and_filter(api_client, demo):
    session = services.start_session(prompt_ref="demo/release")
    url = reverse("sessions_api:session-tool-invocations", args=[session.pk])

    first = api_client.get(url, {"page_size": 2}).json()
    second = api_client.get(first["next"]).json()
    failed = api_client.get(url, {"success": "false"}).json()
    deploys = api_client.get(url, {"name": "deploy"}).json()

    sequences = [item["sequence"] for item in first["results"] + second["results"]]
    assert sequences == sorted(sequences) == list(range(1, len(sequences) + 1))
    assert {item["success"] for item in failed["results"]} == {False}
    assert {item["name"] for item in deploys["results"]} == {"deploy"}


def test_tool_invocations_across_sessions_are_scoped_to_what_one_may_see():
    ada, bob = UserFactory.create(username="ada"), UserFactory.create(username="bob")
    mine = ToolInvocationFactory.create(
        session=AgentSessionFactory.create(created_by=ada)
    )
    ToolInvocationFactory.create(session=AgentSessionFactory.create(created_by=bob))
    client = APIClient()
    client.force_authenticate(ada)

    body = client.get("/api/tool-invocations/").json()

    assert [item["id"] for item in body["results"]] == [mine.pk]
    assert body["results"][0]["session"] == str(mine.session_id)


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("text/plain", b'{"prompt": "demo/release"}'),
        ("application/x-www-form-urlencoded", b"prompt=demo%2Frelease"),
    ],
)
def test_the_api_takes_json_only(api_client, demo, content_type, body):
    response = api_client.post(SESSIONS, body, content_type=content_type)
    error(response, 415, "unsupported_media_type")
    assert not AgentSession.objects.exists()


def _body_less_actions(user) -> list[tuple[str, Any]]:
    """``cancel/`` of a queued session of ``user``'s, ``grade/`` of a running
    experiment of theirs, and how to tell whether the action happened."""
    from sessions_app.models import Dataset, Experiment

    session = AgentSessionFactory.create(
        created_by=user, status=AgentSession.Status.QUEUED
    )
    experiment = Experiment.objects.create(
        name="e",
        dataset=Dataset.objects.create(name=f"d{session.pk}"),
        prompt_ref="demo/research",
        targets=["draft"],
        created_by=user,
        status=Experiment.Status.RUNNING,
    )

    def cancelled() -> bool:
        session.refresh_from_db()
        return session.status == AgentSession.Status.CANCELLED

    def graded() -> bool:  # no run to grade: it only answers the results
        return False

    return [
        (f"{SESSIONS}{session.pk}/cancel/", cancelled),
        (f"/api/experiments/{experiment.pk}/grade/", graded),
    ]


@pytest.mark.parametrize(
    ("content_type", "body", "status", "code", "field"),
    [
        ("application/json", "garbage", 400, "parse_error", None),
        ("application/json", '{"reason": "x"}', 400, "invalid", "reason"),
        ("application/json", "[]", 400, "invalid", "non_field_errors"),
        # (DRF's "No data provided." before)
        ("application/json", "null", 400, "invalid", "non_field_errors"),
        ("text/plain", "hello", 415, "unsupported_media_type", None),
        (
            "application/x-www-form-urlencoded",
            "a=1",
            415,
            "unsupported_media_type",
            None,
        ),
    ],
)
def test_an_action_taking_no_body_refuses_one(
    api_client, user, content_type, body, status, code, field
):
    """``cancel/`` and ``grade/`` never read their body: a client's mistaken
    body went unnoticed (README: "Input is strict"). None, or ``{}``, is
    taken."""
    accepted: dict[str, Any] | None
    for accepted in (None, {}):
        for url, happened in _body_less_actions(user):
            response = api_client.post(url, body, content_type=content_type)
            errors = error(response, status, code)["errors"]
            if field is not None:
                assert list(errors) == [field], errors
            if body == "null":
                assert errors[field] == [
                    "This action takes no input: send no body, or {}."
                ]
            assert not happened(), url
            response = api_client.post(url, accepted, format="json")
            assert response.status_code == 200, (url, accepted, response.content)
    assert set(AgentSession.objects.values_list("status", flat=True)) == {
        AgentSession.Status.CANCELLED
    }


@pytest.mark.parametrize(
    "url",
    [
        "/api/sessions/100/tool-invocations/",
        "/api/sessions/not-a-uuid/events/",
        "/api/sessions/100/",
    ],
)
def test_a_session_id_that_is_not_a_uuid_is_a_404(api_client, url):
    error(api_client.get(url), 404, "not_found")


@pytest.mark.parametrize(
    "query",
    [
        "page_size=0",
        "page_size=501",
        "page_size=x",
        "page_size=",
        "native=maybe",
        "success=null",
        "native=2",
    ],
)
def test_filter_and_page_values_that_cannot_be_used_are_a_400(api_client, query):
    session = AgentSessionFactory.create()
    for url in (
        "/api/tool-invocations/",
        reverse("sessions_api:session-tool-invocations", args=[session.pk]),
    ):
        error(api_client.get(f"{url}?{query}"), 400, "invalid")
    if query.startswith("page_size"):
        error(api_client.get(f"{SESSIONS}?{query}"), 400, "invalid")


# What int() and Decimal() read as numbers.
LOOSE_NUMBERS = ["1_0", " 5", "5 ", "+5", "\u0665", "\u0661\u0662"]


@pytest.mark.parametrize("value", LOOSE_NUMBERS)
def test_a_page_size_is_ascii_digits_only(api_client, value):
    """int() read "1_0" as 10, " 5" and "+5" as 5 and any script's digits."""
    session = AgentSessionFactory.create()
    for url in (
        SESSIONS,
        "/api/tool-invocations/",
        reverse("sessions_api:session-events", args=[session.pk]),
    ):
        errors = error(api_client.get(url, {"page_size": value}), 400, "invalid")
        assert list(errors["errors"]) == ["page_size"], (url, errors)
    assert api_client.get(SESSIONS, {"page_size": "005"}).status_code == 200


@pytest.mark.parametrize("value", [*LOOSE_NUMBERS, "1e2", "1E-2", "-0", "5.", "0.5e1"])
@pytest.mark.parametrize(
    "name", ["duration_min", "duration_max", "cost_min", "cost_max"]
)
def test_a_number_filter_takes_a_plain_decimal_only(
    api_client, client, user, name, value
):
    """Django's DecimalField read "1_000", " 5", "+5", "1e2" and any script's
    digits; the API and the sessions page now refuse them, naming the filter."""
    AgentSessionFactory.create()
    body = error(api_client.get(SESSIONS, {name: value}), 400, "invalid")
    assert body["errors"] == {
        name: [
            "Enter a number: digits, with a point before a fraction (0.05): "
            "no sign or exponent."
        ]
    }
    client.force_login(user)
    page = client.get(reverse("sessions_app:session-list"), {name: value})
    assert page.status_code == 400
    assert f"<code>{name}</code>" in page.content.decode()
    for plain in ("0.5", ".5", "12", "0"):
        assert api_client.get(SESSIONS, {name: plain}).status_code == 200


def test_an_empty_filter_value_filters_nothing(api_client):
    AgentSessionFactory.create_batch(2)
    response = api_client.get(f"{SESSIONS}?status=&created_at_after=&user=")
    assert response.status_code == 200
    assert len(response.json()["results"]) == 2


def test_who_started_and_cancelled_are_null_when_nobody(api_client):
    # The caller holds "Can view all sessions" (conftest's user).
    session = AgentSessionFactory.create(created_by=None)
    body = api_client.get(f"{SESSIONS}{session.pk}/").json()
    assert body["created_by"] is None and body["cancelled_by"] is None


def test_a_checked_cursor_reads_pk_and_leaves_lookups_as_drf_does():
    """``-pk`` is the key's field; a related lookup or an annotation is no
    field of the model: not checked (it was a FieldDoesNotExist, a 500)."""
    import uuid

    from rest_framework.exceptions import NotFound

    from tooling.api.pagination import CheckedCursorPagination

    by_key = CheckedCursorPagination()
    by_key.model, by_key.ordering = AgentSession, ("-pk",)
    by_key.check_position(str(uuid.uuid4()))
    with pytest.raises(NotFound):
        by_key.check_position("abc")
    by_lookup = CheckedCursorPagination()
    by_lookup.model, by_lookup.ordering = AgentSession, ("-created_by__username",)
    by_lookup.check_position("anyone")
