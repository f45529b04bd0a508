"""Quotas end to end: the admin validates hosted tool limits and call limit
policies; a run of a prompt limited to 2 web searches never gets a third
offered, and the decision is on the timeline (page and API); a call limit
denial is recorded."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from sessions_app.models import AgentSession, PolicyDenial, ProviderCall, QuotaDecision
from sessions_app.runs import replay
from tests.tooling.factories import (
    HostedToolDefinitionFactory,
    PromptTemplateFactory,
    SectionDefinitionFactory,
    ToolDefinitionFactory,
    add_sections,
    attach,
)
from tooling import assembly
from tooling.models import PolicyDefinition, PromptTemplate, SectionHostedTool
from tooling.offline import MARKER_SEARCH_EACH_TURN

pytestmark = pytest.mark.django_db

SESSIONS_URL = "/api/sessions/"


@pytest.fixture(autouse=True)
def _offline(settings):
    settings.WINK_PROVIDER = "offline"


def _section(*, search: bool = True):
    """A section with a function tool and (optionally) a web search tool named
    ``search``; the offline model searches on every turn it is offered."""
    section = SectionDefinitionFactory.create(
        template=f"Research the tides. {MARKER_SEARCH_EACH_TURN}"
    )
    attach(section, ToolDefinitionFactory.create(name="count_words"))
    if search:
        hosted = HostedToolDefinitionFactory.create(name="search")
        SectionHostedTool.objects.create(section=section, hosted_tool=hosted)
    return section


def _prompt(limits=None, *, policies=()):
    prompt = PromptTemplateFactory.create(
        key="quota", hosted_tool_limits=limits or {}, max_turns=12
    )
    add_sections(prompt, _section())
    prompt.policies.set(policies)
    return prompt


def _run(api_client, prompt) -> AgentSession:
    response = api_client.post(
        SESSIONS_URL, {"prompt": prompt.ref, "params": {}}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "succeeded", response.content
    return AgentSession.objects.get(pk=response.json()["id"])


def _offered(call: ProviderCall) -> list[str]:
    return [tool["type"] for tool in call.request.get("tools", [])]


# -- the admin -------------------------------------------------------------------------


def _post_prompt(admin_client, section, limits: str, **extra):
    return admin_client.post(
        reverse("admin:tooling_prompttemplate_add"),
        {
            **extra,
            "namespace": "ops",
            "key": "research",
            "model": "gpt-5.4",
            "tool_choice": "auto",
            "max_turns": 8,
            "deadline_seconds": 120,
            "hosted_tool_limits": limits,
            "enabled": "on",
            "prompt_sections-TOTAL_FORMS": 1,
            "prompt_sections-INITIAL_FORMS": 0,
            "prompt_sections-0-section": section.pk,
            "prompt_sections-0-position": 0,
        },
    )


def _errors(response) -> str:
    assert response.status_code == 200, "the form should be shown again with errors"
    return response.content.decode()


def test_admin_saves_valid_limits_and_the_revision_carries_them(admin_client):
    response = _post_prompt(admin_client, _section(), '{"search": 2}')
    assert response.status_code == 302, response.content.decode()[:2000]
    template = PromptTemplate.objects.get(key="research")
    assert template.hosted_tool_limits == {"search": 2}
    revision = assembly.freeze_template(template)
    assert revision["prompt"]["hosted_tool_limits"] == {"search": 2}
    assert dict(assembly.thaw_prompt(revision).hosted_tool_limits) == {"search": 2}


def test_admin_refuses_a_limit_naming_no_hosted_tool_of_the_prompt(admin_client):
    response = _post_prompt(admin_client, _section(), '{"web_search": 2}')
    assert (
        "hosted_tool_limits names &#x27;web_search&#x27;, which is not a hosted "
        "tool of prompt &#x27;ops/research&#x27; (its hosted tools: search)."
    ) in _errors(response)
    assert not PromptTemplate.objects.exists()


def test_admin_refuses_a_limit_naming_a_function_tool(admin_client):
    response = _post_prompt(admin_client, _section(), '{"count_words": 1}')
    assert "which is a function tool; limit its calls with a call_limit policy" in (
        _errors(response)
    )
    assert not PromptTemplate.objects.exists()


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ('{"search": -1}', "the most calls per run must be a whole number from 0"),
        ('{"search": true}', "the most calls per run must be a whole number from 0"),
        ('{"search": 2.5}', "the most calls per run must be a whole number from 0"),
        ('{"search": "2"}', "the most calls per run must be a whole number from 0"),
        ('{"search": 10001}', "the most calls per run must be a whole number from 0"),
        # an infinity: no JSON column stores it (catalog JSON refuses it first)
        ('{"search": 1e999}', "A number is too large"),
        ('["search"]', "Hosted tool limits must be a JSON object"),
        ('"search"', "Hosted tool limits must be a JSON object"),
        ('{"search": ', "Enter valid JSON: Expecting value at line 1, column 12."),
    ],
)
def test_admin_refuses_malformed_limits(admin_client, limits, message):
    response = _post_prompt(admin_client, _section(), limits)
    assert message in _errors(response)
    assert not PromptTemplate.objects.exists()


def test_admin_refuses_a_huge_number_without_a_server_error(admin_client):
    response = _post_prompt(admin_client, _section(), '{"search": 1' + "0" * 5000 + "}")
    assert response.status_code == 200
    assert not PromptTemplate.objects.exists()


def test_admin_prompt_form_groups_the_limits(admin_client):
    prompt = _prompt({"search": 2})
    response = admin_client.get(
        reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "<h2" in page and "Limits" in page
    for field in ("max_cost_per_session", "hosted_tool_limits", "max_turns"):
        assert f'name="{field}"' in page


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "A call limit policy needs &quot;limits&quot;"),
        ({"limits": {"deploy": -1}}, "must be a whole number from 0 to 10000"),
        ({"limits": {"deploy": True}}, "must be a whole number from 0 to 10000"),
        ({"limits": {"deploy": 1}, "max": 2}, "Unknown call limit option(s): max."),
        ({"limits": ["deploy"]}, "A call limit policy needs &quot;limits&quot;"),
    ],
)
def test_admin_call_limit_policy_config_is_validated(admin_client, config, message):
    response = admin_client.post(
        reverse("admin:tooling_policydefinition_add"),
        {"name": "deploy-once", "kind": "call_limit", "config": json.dumps(config)},
    )
    assert message in _errors(response)
    assert not PolicyDefinition.objects.exists()


def test_admin_saves_a_valid_call_limit_policy(admin_client):
    response = admin_client.post(
        reverse("admin:tooling_policydefinition_add"),
        {
            "name": "deploy-once",
            "kind": "call_limit",
            "config": json.dumps({"limits": {"deploy": 1}}),
        },
    )
    assert response.status_code == 302
    assert PolicyDefinition.objects.get().config == {"limits": {"deploy": 1}}


def test_admin_refuses_a_call_limit_on_a_tool_the_provider_runs(admin_client):
    policy = PolicyDefinition.objects.create(
        name="searches", kind="call_limit", config={"limits": {"search": 1}}
    )
    response = _post_prompt(admin_client, _section(), "{}", policies=[policy.pk])
    assert (
        "Policy &#x27;searches&#x27; limits &#x27;search&#x27;, a hosted tool the "
        "provider runs"
    ) in _errors(response)
    assert not PromptTemplate.objects.exists()


# -- revisions -------------------------------------------------------------------------


def test_a_prompt_without_limits_freezes_no_limits_key():
    prompt = PromptTemplateFactory.create(key="plain")
    add_sections(prompt, _section())
    revision = assembly.freeze_template(prompt)
    assert "hosted_tool_limits" not in revision["prompt"]  # old hashes stay
    assert dict(assembly.thaw_prompt(revision).hosted_tool_limits) == {}


# -- a run -----------------------------------------------------------------------------


def test_a_run_limited_to_two_searches_never_gets_a_third_offered(api_client):
    session = _run(api_client, _prompt({"search": 2}))

    calls = list(ProviderCall.objects.filter(session=session).order_by("turn"))
    assert len(calls) >= 3
    assert _offered(calls[0]) == ["function", "web_search"]
    assert _offered(calls[1]) == ["function", "web_search"]
    assert all("web_search" not in _offered(call) for call in calls[2:])
    assert [c.request.get("max_tool_calls") for c in calls] == [2, 1] + [None] * (
        len(calls) - 2
    )
    searches = session.tool_invocations.filter(native=True, name="search")
    assert searches.count() == 2
    decision = QuotaDecision.objects.get(session=session)
    assert (decision.tool_name, decision.kind, decision.used, decision.limit) == (
        "search",
        "web_search",
        2,
        2,
    )
    assert decision.turn == 3


def test_without_a_limit_the_same_prompt_searches_more(api_client):
    session = _run(api_client, _prompt())
    assert session.tool_invocations.filter(native=True).count() > 2
    assert not QuotaDecision.objects.filter(session=session).exists()


def test_the_decision_is_on_the_session_page(client, user, api_client):
    session = _run(api_client, _prompt({"search": 2}))
    client.force_login(user)
    page = client.get(reverse("sessions_app:session-detail", args=[session.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "search withdrawn after 2 of 2 calls" in html
    assert "not offered from turn 3 on" in html
    # at the provider call of turn 3: after it, before turn 3's tool calls
    assert html.index("Turn 3 · provider call") < html.index("search withdrawn")


def test_the_decision_is_in_the_api_events(api_client):
    session = _run(api_client, _prompt({"search": 2}))
    response = api_client.get(f"{SESSIONS_URL}{session.pk}/events/")
    assert response.status_code == 200
    events = response.json()["results"]
    kinds = [(e["kind"], e["turn"]) for e in events]
    position = kinds.index(("quota_decision", 3))
    assert kinds[position - 1] == ("provider_call", 3)
    assert events[position]["data"] == {
        "tool_name": "search",
        "kind": "web_search",
        "used": 2,
        "limit": 2,
        "turn": 3,
        "created_at": events[position]["created_at"],
    }


def test_the_events_api_pages_across_the_decision(api_client):
    session = _run(api_client, _prompt({"search": 2}))
    url = f"{SESSIONS_URL}{session.pk}/events/"
    everything = [
        (e["kind"], e["turn"], e["sequence"])
        for e in api_client.get(url).json()["results"]
    ]
    paged = []
    next_url = f"{url}?page_size=1"
    while next_url:
        body = api_client.get(next_url).json()
        paged += [(e["kind"], e["turn"], e["sequence"]) for e in body["results"]]
        next_url = body["next"]
    assert paged == everything
    assert ("quota_decision", 3, None) in paged


def test_a_limit_of_zero_is_recorded_before_the_first_request(api_client):
    session = _run(api_client, _prompt({"search": 0}))
    assert all(
        "web_search" not in _offered(call)
        for call in ProviderCall.objects.filter(session=session)
    )
    decision = QuotaDecision.objects.get(session=session)
    assert (decision.used, decision.limit, decision.turn) == (0, 0, 1)
    assert "web_search" not in [tool["type"] for tool in session.tools_payload]


def test_a_resumed_run_skips_the_recorded_decision(api_client):
    session = _run(api_client, _prompt({"search": 2}))
    decision = QuotaDecision.objects.get(session=session)
    assert str(decision.event_id) in replay.load(session).recorded_event_ids


def test_a_call_limit_denial_is_recorded(api_client):
    policy = PolicyDefinition.objects.create(
        name="no-counting", kind="call_limit", config={"limits": {"count_words": 0}}
    )
    session = _run(api_client, _prompt(policies=[policy]))
    # the offline model calls count_words on every turn it searches: each call
    # is denied, and a denied call does not count
    denials = list(PolicyDenial.objects.filter(session=session))
    assert denials
    assert {(d.policy_name, d.tool_name, d.reason) for d in denials} == {
        (
            "no-counting",
            "count_words",
            "Tool 'count_words' may be called at most 0 time(s) per run; "
            "this was call 1.",
        )
    }
    calls = session.tool_invocations.filter(native=False)
    assert calls.count() == len(denials)
    assert not calls.filter(success=True).exists()


def test_disabling_a_hosted_tool_a_prompt_limits_is_refused():
    from django.core.exceptions import ValidationError

    from tooling.assembly import CatalogEdit
    from tooling.forms import refuse_breaking
    from tooling.models import HostedToolDefinition

    _prompt({"search": 2})
    candidate = HostedToolDefinition.objects.get(name="search")
    candidate.enabled = False
    with pytest.raises(ValidationError) as info:
        refuse_breaking(CatalogEdit.saving(candidate))
    assert "hosted_tool_limits names 'search'" in " ".join(info.value.messages)


def test_the_page_says_never_offered_and_flags_an_overrun_escaped(client, user):
    from tests.sessions_app.factories import AgentSessionFactory, ProviderCallFactory

    session = AgentSessionFactory.create(created_by=user)
    ProviderCallFactory.create(session=session, turn=1)
    QuotaDecision.objects.create(
        session=session,
        turn=1,
        tool_name="<b>x</b>",
        kind="web_search",
        used=0,
        limit=0,
    )
    QuotaDecision.objects.create(
        session=session, turn=2, tool_name="search", kind="web_search", used=3, limit=2
    )
    client.force_login(user)
    html = client.get(
        reverse("sessions_app:session-detail", args=[session.pk])
    ).content.decode()
    assert "&lt;b&gt;x&lt;/b&gt; never offered (limit 0)" in html
    assert "<b>x</b>" not in html
    assert "search withdrawn after 3 calls (limit 2)" in html
    assert "The provider ran 3 calls against a limit of 2" in html
