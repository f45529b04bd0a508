"""Replays (sessions_app/replays, sessions_app/runs/answers.py): a recorded
session run again against a revision, its local calls answered from its
record (the handler does not run), calls it never made failing or running
live when read-only and allowed; the comparison of two sessions; the pages and
the API; who may do it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import AgentSession, ToolInvocation
from sessions_app.replays.comparison import compare_sessions, match_calls
from sessions_app.replays.starting import start_replay
from tests.sessions_app.factories import AgentSessionFactory, UserFactory
from tooling import services as catalog
from tooling.demo import seed_demo_catalog
from tooling.handlers import registry
from tooling.models import CatalogRevision, HostedToolDefinition, PromptTemplate

pytestmark = pytest.mark.django_db

REF = "demo/research"


def runner(name: str) -> User:
    user = UserFactory.create(username=name)
    user.groups.add(Group.objects.get(name="Runners"))
    return user


@pytest.fixture
def source() -> AgentSession:
    seed_demo_catalog()
    session = services.start_session(prompt_ref=REF, user=runner("alice"))
    assert session.status == AgentSession.Status.SUCCEEDED
    assert session.tool_invocations.filter(native=False, name="count_words").exists()
    return session


@pytest.fixture
def handler_calls() -> Iterator[list[Any]]:
    """demo.count_words counts its calls (and answers differently)."""
    calls: list[Any] = []
    original = registry.unregister("demo.count_words")
    handler = original.handler
    assert handler is not None

    def counting(params: Any, *, context: Any) -> Any:
        calls.append(params)
        result = handler(params, context=context)
        return dataclasses.replace(result, message="LIVE " + result.message)

    registry.register(
        "demo.count_words", dataclasses.replace(original, handler=counting)
    )
    yield calls
    registry.unregister("demo.count_words")
    registry.register("demo.count_words", original)


def local_calls(session: AgentSession) -> list[tuple[str, str, bool]]:
    return list(
        ToolInvocation.objects.filter(session=session, native=False)
        .order_by("sequence")
        .values_list("name", "model_output", "success")
    )


def test_a_replay_answers_local_calls_from_the_record(source, handler_calls):
    replay = start_replay(source, user=source.created_by)

    assert replay.status == AgentSession.Status.SUCCEEDED
    assert replay.replay_of_id == source.pk and replay.pk != source.pk
    assert replay.revision_id == source.revision_id
    assert (replay.params, replay.trust_level) == (source.params, source.trust_level)
    assert handler_calls == []  # answered from the record
    assert local_calls(replay) == local_calls(source)
    comparison = compare_sessions(source, replay)
    assert {pair.status for pair in comparison.calls} == {"same"}
    assert comparison.output == []


def test_calls_the_source_never_made_fail_unless_live_read_only(handler_calls):
    seed_demo_catalog()
    revision = CatalogRevision.objects.get_or_create_for(
        catalog.preview_prompt(
            template=PromptTemplate.objects.get(namespace="demo", key="research")
        ).revision
    )
    user = runner("alice")
    # a recorded session of the same revision that made no call at all
    empty = AgentSessionFactory.create(
        prompt_ref=REF, revision=revision, params={}, created_by=user
    )

    refused = start_replay(empty, user=user)
    (name, output, success) = local_calls(refused)[0]
    assert name == "count_words" and not success
    assert "has no answer of count_words" in output
    assert handler_calls == []

    live = start_replay(empty, user=user, live_tools=True)
    assert live.replay_live_tools is True
    assert local_calls(live)[0][2] is True
    assert local_calls(live)[0][1].startswith("LIVE ")
    assert len(handler_calls) == 1


def test_live_replays_run_read_only_tools_even_when_recorded(source, handler_calls):
    replay = start_replay(source, user=source.created_by, live_tools=True)

    recorded = local_calls(source)
    assert len(handler_calls) == len(recorded)  # read-only: run again, live
    assert [output.startswith("LIVE ") for _, output, _ in local_calls(replay)] == [
        True for _ in recorded
    ]


def test_a_same_revision_replay_of_denied_calls_decides_them_anew():
    """demo/release: the model deploys before building and testing, the
    sequence policy denies it, then it runs them in order. A replay against the
    same revision is denied the same way (a denial is no answer) and answers
    the calls that ran from the record."""
    seed_demo_catalog()
    source = services.start_session(prompt_ref="demo/release", user=runner("alice"))
    assert source.policy_denials.exists()

    replay = start_replay(source, user=source.created_by)

    assert local_calls(replay) == local_calls(source)
    assert replay.policy_denials.count() == source.policy_denials.count()
    assert replay.output_text == source.output_text
    comparison = compare_sessions(source, replay)
    assert {pair.status for pair in comparison.calls} == {"same"}


def test_a_replay_against_another_revision_shows_what_changed(source):
    web = HostedToolDefinition.objects.get(name="web_search")
    web.config = {**web.config, "allowed_domains": []}
    web.save()

    replay = start_replay(source, user=source.created_by, revision="draft")

    assert replay.revision_id != source.revision_id
    comparison = compare_sessions(source, replay)
    revision = next(fact for fact in comparison.facts if fact.name == "Revision")
    assert revision.differs


def test_match_calls_pairs_by_tool_and_arguments_in_order():
    def call(name: str, arguments: str, output: str) -> dict[str, Any]:
        return {
            "name": name,
            "raw_arguments": arguments,
            "native": False,
            "params": None,
            "success": True,
            "model_output": output,
            "value": None,
        }

    left = [
        call("a", '{"x": 1, "y": 2}', "one"),
        call("a", '{"x": 1, "y": 2}', "two"),
        call("b", "{}", "gone"),
    ]
    right = [
        call("a", '{"y": 2, "x": 1}', "one"),  # same arguments, other key order
        call("a", '{"y":2,"x":1}', "changed"),
        call("c", "{}", "new"),
    ]

    pairs = match_calls(left, right)

    assert [(p.name, p.status) for p in pairs] == [
        ("a", "same"),
        ("a", "changed"),
        ("b", "removed"),
        ("c", "added"),
    ]


def test_the_pages_replay_and_compare(client, source):
    client.force_login(source.created_by)
    page = client.get(source.get_absolute_url()).content.decode()
    assert 'id="replay-form"' in page

    response = client.post(
        reverse("sessions_app:session-replay", args=[source.pk]),
        {"against": "same"},
    )
    replay = AgentSession.objects.get(replay_of=source)
    assert (
        response.status_code == 302
        and response["Location"] == replay.get_absolute_url()
    )
    detail = client.get(replay.get_absolute_url()).content.decode()
    compare_url = reverse("sessions_app:session-compare", args=[source.pk, replay.pk])
    assert compare_url in detail

    compared = client.get(compare_url)
    assert compared.status_code == 200
    html = compared.content.decode()
    assert "(replay)" in html and "Tool calls that differ" in html
    assert 'id="compare-output-same"' in html

    bad = client.post(
        reverse("sessions_app:session-replay", args=[source.pk]),
        {"against": "label:canary"},
        follow=True,
    )
    assert "Not replayed" in bad.content.decode()
    # an empty label was read as none: the same revision, "Replay started."
    empty = client.post(
        reverse("sessions_app:session-replay", args=[source.pk]),
        {"against": "label:"},
        follow=True,
    )
    assert "Not replayed. Replay against: Name the label: label:&lt;name&gt;." in (
        empty.content.decode()
    )
    assert AgentSession.objects.filter(replay_of=source).count() == 1


def test_who_may_replay_and_compare(client, source):
    other = runner("bob")
    client.force_login(other)
    replay_url = reverse("sessions_app:session-replay", args=[source.pk])
    assert client.post(replay_url, {"against": "same"}).status_code == 404
    theirs = AgentSessionFactory.create(created_by=other)
    compare_url = reverse("sessions_app:session-compare", args=[source.pk, theirs.pk])
    assert client.get(compare_url).status_code == 404

    auditor = UserFactory.create(username="auditor", is_staff=True)
    auditor.groups.add(Group.objects.get(name="Auditors"))
    client.force_login(auditor)
    assert client.post(replay_url, {"against": "same"}).status_code == 403
    assert client.get(compare_url).status_code == 200
    assert (
        'id="replay-form"' not in client.get(source.get_absolute_url()).content.decode()
    )


def test_the_api_replays_and_compares(source):
    api = APIClient()
    api.force_login(source.created_by)

    response = api.post(f"/api/sessions/{source.pk}/replay/", {}, format="json")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["revision"] == source.revision_id
    # a client tells a replay from a run (docs/replay.md: linked to its source)
    assert (body["replay_of"], body["live_tools"]) == (str(source.pk), False)
    source_body = api.get(f"/api/sessions/{source.pk}/").json()
    assert (source_body["replay_of"], source_body["live_tools"]) == (None, None)
    compared = api.get(f"/api/sessions/{source.pk}/compare/{body['id']}/").json()
    assert {call["status"] for call in compared["calls"]} == {"same"}
    assert compared["output"] == []
    assert [fact["name"] for fact in compared["facts"]][:3] == [
        "Status",
        "Started from",
        "Revision",
    ]

    bad = api.post(
        f"/api/sessions/{source.pk}/replay/", {"revision": "nope"}, format="json"
    )
    assert bad.status_code == 400
    assert bad.json()["errors"]["revision"] == [
        "Enter 'same', 'draft' or a revision's hash: 64 characters, digits and a-f."
    ]
    both = api.post(
        f"/api/sessions/{source.pk}/replay/",
        {"revision": "draft", "label": "production"},
        format="json",
    )
    assert both.status_code == 400


def test_a_recorded_calls_deep_arguments_match_no_call():
    """Arguments nested deeper than Python's JSON decoder goes are not a
    JSON value (it raised RecursionError): compared as none."""
    from sessions_app.runs.answers import arguments_key

    assert arguments_key("deploy", '{"a": ' + "[" * 100_000) is None
    assert arguments_key("deploy", '{"b": 1, "a": 2}') == ("deploy", '{"a":2,"b":1}')


@pytest.mark.parametrize("value", ["yes", 1, "true", "0", None, [True]])
def test_the_api_takes_live_tools_as_a_json_boolean_only(source, value):
    """DRF's BooleanField read "yes", 1 and "0": the input is strict."""
    api = APIClient()
    api.force_login(source.created_by)
    response = api.post(
        f"/api/sessions/{source.pk}/replay/", {"live_tools": value}, format="json"
    )
    assert response.status_code == 400, response.json()
    assert "live_tools" in response.json()["errors"]
    assert not AgentSession.objects.filter(replay_of=source).exists()


def test_the_api_refuses_a_label_with_a_revision_even_same(source):
    api = APIClient()
    api.force_login(source.created_by)
    response = api.post(
        f"/api/sessions/{source.pk}/replay/",
        {"label": "production", "revision": "same"},
        format="json",
    )
    assert response.status_code == 400
    assert "label" in response.json()["errors"]


def test_only_a_finished_session_is_replayed(source):
    """Its record is not whole yet: the page offers no replay, nor does the API."""
    waiting = AgentSessionFactory.create(
        status=AgentSession.Status.AWAITING_APPROVAL,
        created_by=source.created_by,
        prompt_ref=source.prompt_ref,
        revision=source.revision,
    )
    api = APIClient()
    api.force_login(source.created_by)
    response = api.post(f"/api/sessions/{waiting.pk}/replay/", {}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"]["non_field_errors"] == [
        "Only a finished session can be replayed; this one is awaiting approval."
    ]
    assert not AgentSession.objects.filter(replay_of=waiting).exists()


def test_a_session_of_a_prompt_no_longer_in_the_catalog_says_so(source):
    # it was a 400 under "prompt", a key the replay's body does not have
    PromptTemplate.objects.filter(namespace="demo", key="research").update(
        enabled=False
    )
    api = APIClient()
    api.force_login(source.created_by)

    response = api.post(f"/api/sessions/{source.pk}/replay/", {}, format="json")

    assert response.status_code == 400
    body = response.json()
    assert "prompt" not in body.get("errors", {})
    assert (
        "This session's prompt 'demo/research' is no longer an enabled prompt of the "
        "catalog: it cannot be replayed." in str(body)
    )


def test_long_outputs_are_compared_by_size_not_line_by_line(client):
    # a model's output may be long: difflib is quadratic in its lines
    owner = runner("carol")
    lines = [f"line {n}" for n in range(3_000)]
    left = AgentSessionFactory.create(
        created_by=owner,
        status=AgentSession.Status.SUCCEEDED,
        output_text="\n".join(lines),
    )
    right = AgentSessionFactory.create(
        created_by=owner,
        status=AgentSession.Status.SUCCEEDED,
        output_text="\n".join(lines[1::2] + lines[::2]),
    )
    api = APIClient()
    api.force_login(owner)

    body = api.get(f"/api/sessions/{left.pk}/compare/{right.pk}/").json()

    assert body["output"] == [] and body["output_not_compared"] == "too_long"
    client.force_login(owner)
    page = client.get(
        reverse("sessions_app:session-compare", args=[left.pk, right.pk])
    ).content.decode()
    assert "Too long to compare line by line: before 3,000 lines" in page


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_a_latency_that_is_not_a_finite_number_counts_as_nothing(value):
    """PostgreSQL's float columns hold NaN and the infinities (SQLite's the
    infinities): the comparison adds the others, and the API answers."""
    import math

    from django.db import connection

    from tests.sessions_app.factories import ProviderCallFactory

    if math.isnan(value) and connection.vendor != "postgresql":
        pytest.skip("SQLite stores NaN as NULL (DATABASE_URL=postgres://...)")
    owner = runner("dora")
    left = AgentSessionFactory.create(created_by=owner)
    right = AgentSessionFactory.create(created_by=owner)
    ProviderCallFactory.create(session=left, turn=1, latency_ms=value)
    ProviderCallFactory.create(session=left, turn=2, latency_ms=250)
    ProviderCallFactory.create(session=right, turn=1, latency_ms=100)
    api = APIClient()
    api.force_login(owner)
    response = api.get(f"/api/sessions/{left.pk}/compare/{right.pk}/")
    assert response.status_code == 200
    (latency,) = [
        f for f in response.json()["facts"] if f["name"] == "Provider latency (ms)"
    ]
    assert (latency["left"], latency["right"]) == (250.0, 100.0)
    api.logout()
    client = Client()
    client.force_login(owner)
    page = client.get(reverse("sessions_app:session-compare", args=[left.pk, right.pk]))
    assert page.status_code == 200


def test_starts_from_the_pages_count_against_the_api_start_limit(client, source):
    """The replay page started runs without counting them, past the API's
    limit, which then did not know of them (found by a hostile review)."""
    from django.core.cache import cache
    from django.test import override_settings
    from rest_framework.settings import api_settings

    cache.clear()
    alice = source.created_by
    client.force_login(alice)
    url = reverse("sessions_app:session-replay", args=[source.pk])
    api = APIClient()
    api.force_login(alice)
    rates = {"session-start": "2/minute"}
    with override_settings(
        REST_FRAMEWORK={**api_settings.user_settings, "DEFAULT_THROTTLE_RATES": rates}
    ):
        for _ in range(2):
            assert client.post(url, {"against": "same"}).status_code == 302
        refused = client.post(url, {"against": "same"}, follow=True)
        api_start = api.post(f"/api/sessions/{source.pk}/replay/", {}, format="json")
    assert "You have started as many runs as you may for now" in (
        refused.content.decode()
    )
    assert api_start.status_code == 429
    # two page starts: the third did nothing
    assert AgentSession.objects.filter(replay_of=source).count() == 2
    cache.clear()


def test_a_refused_replay_gives_its_start_back(client, source, settings):
    """A replay the daily budget refuses (page) or an OPTIONS (API) takes no
    run start: the limit counts runs started (found by a hostile review)."""
    from decimal import Decimal

    from django.core.cache import cache
    from django.test import override_settings
    from rest_framework.settings import api_settings

    cache.clear()
    alice = source.created_by
    client.force_login(alice)
    url = reverse("sessions_app:session-replay", args=[source.pk])
    api = APIClient()
    api.force_login(alice)
    rates = {"session-start": "1/minute"}
    with override_settings(
        REST_FRAMEWORK={**api_settings.user_settings, "DEFAULT_THROTTLE_RATES": rates}
    ):
        settings.WINK_DAILY_BUDGET_USD = Decimal(0)
        spent = client.post(url, {"against": "same"}, follow=True)
        assert "daily budget" in spent.content.decode()
        settings.WINK_DAILY_BUDGET_USD = None
        for _ in range(3):
            options = api.options(f"/api/sessions/{source.pk}/replay/")
            assert options.status_code == 200
        assert client.post(url, {"against": "same"}).status_code == 302
    assert AgentSession.objects.filter(replay_of=source).count() == 1
    cache.clear()
