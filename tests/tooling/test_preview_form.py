"""The preview page (issue #28): a field per parameter the prompt declares
(typed, required, pre-filled), what governs a run (policies, approval rules,
limits, quotas, budget, model and what it takes), every tool offered with
whether the prompt's "Tools:" list shows it, and the request once."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse

from sessions_app.models import AgentSession
from tests.tooling.factories import (
    PolicyDefinitionFactory,
    PromptTemplateFactory,
    SectionDefinitionFactory,
    ToolDefinitionFactory,
    add_sections,
    attach,
)
from tooling.assembly import ParameterSpec, freeze_template, prompt_parameters
from tooling.demo import seed_demo_catalog
from tooling.forms.preview import ParameterForm
from tooling.governance import governance_of, policy_rules
from tooling.models import ModelCapability, PolicyDefinition, PromptTemplate, UserBudget

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _offline(settings):
    settings.WINK_PROVIDER = "offline"


def typed_prompt() -> PromptTemplate:
    section = SectionDefinitionFactory.create(
        key="typed",
        template="Topic $topic, $count items, verbose $verbose, tags $tags.",
        default_params={
            "topic": None,  # required
            "count": 3,
            "verbose": False,
            "tags": ["a"],
            "ratio": 0.5,
            "note": "plain",
        },
    )
    prompt = PromptTemplateFactory.create(key="typed")
    add_sections(prompt, section)
    return prompt


def preview_url(prompt: PromptTemplate) -> str:
    return reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk])


def fields_of(response: Any) -> dict[str, Any]:
    form = response.context["parameters"]
    return {field.label: field for field in form}


def parameter_order() -> list[str]:
    """The typed prompt's parameters in the form's order: the section's
    declared order on SQLite, jsonb's key order on PostgreSQL."""
    prompt = PromptTemplate.objects.with_catalog().get(namespace="tests", key="typed")
    return [spec.name for spec in prompt_parameters(freeze_template(prompt))]


def typed_post(**values: Any) -> dict[str, Any]:
    """The page's post: each typed field by its position, the JSON box empty."""
    order = parameter_order()
    data = {"params": "", "trust_level": "standard"}
    for index, name in enumerate(order):
        if name in values:
            data[f"param-p{index}"] = values[name]
    return data


def test_the_form_has_a_typed_field_per_parameter(admin_client):
    prompt = typed_prompt()
    response = admin_client.get(preview_url(prompt))
    fields = fields_of(response)
    assert list(fields) == parameter_order()
    assert set(fields) == {"topic", "count", "verbose", "tags", "ratio", "note"}
    assert fields["topic"].field.required
    assert not fields["count"].field.required
    assert type(fields["count"].field).__name__ == "PlainIntegerField"
    assert type(fields["ratio"].field).__name__ == "PlainFloatField"
    assert type(fields["verbose"].field).__name__ == "TypedChoiceField"
    assert fields["count"].value() == 3
    assert fields["verbose"].value() == "false"
    assert "default 3" in fields["count"].help_text
    assert "used by typed" in fields["count"].help_text
    html = response.content.decode()
    assert 'name="param-p0"' in html and 'name="param-p5"' in html


def test_typed_values_render_with_their_types(admin_client):
    prompt = typed_prompt()
    response = admin_client.post(
        preview_url(prompt),
        typed_post(
            topic="tides",
            count="7",
            verbose="true",
            tags='["x", "y"]',
            ratio="0.25",
            note="n",
        ),
    )
    assert response.context["errors"] == []
    text = response.context["preview"].text
    assert "Topic tides, 7 items, verbose True" in text
    assert "'x', 'y'" in text or '"x", "y"' in text


def test_every_field_error_at_once_and_no_preview(admin_client):
    prompt = typed_prompt()
    response = admin_client.post(
        preview_url(prompt), typed_post(topic="", count="many", tags="[1,")
    )
    fields = fields_of(response)
    assert fields["topic"].errors and fields["count"].errors and fields["tags"].errors
    assert response.context["preview"] is None


def test_the_fields_win_over_the_json_box(admin_client):
    prompt = typed_prompt()
    data = typed_post(topic="typed")
    data["params"] = json.dumps({"topic": "pasted", "count": 9})
    response = admin_client.post(preview_url(prompt), data)
    text = response.context["preview"].text
    assert "Topic typed, 9 items" in text  # the box's count, the field's topic


def test_a_post_of_the_json_box_alone_still_works(admin_client):
    prompt = typed_prompt()
    response = admin_client.post(
        preview_url(prompt), {"params": json.dumps({"topic": "boxed"})}
    )
    assert response.context["errors"] == []
    assert "Topic boxed, 3 items" in response.context["preview"].text
    # and a missing required parameter is the renderer's error, as before
    response = admin_client.post(preview_url(prompt), {"params": "{}"})
    assert response.context["preview"] is None
    assert any("topic" in error for error in response.context["errors"])


def test_run_uses_the_typed_parameters(admin_client):
    prompt = typed_prompt()
    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_run", args=[prompt.pk]),
        {**typed_post(topic="ran", count="2"), "run": "Run"},
    )
    assert response.status_code == 302
    session = AgentSession.objects.get()
    assert session.params["topic"] == "ran" and session.params["count"] == 2


def test_run_counts_against_the_start_limit(admin_client):
    """The admin's Run button started runs the API's limit did not count
    (found by a hostile review)."""
    from django.core.cache import cache
    from django.test import override_settings
    from rest_framework.settings import api_settings

    cache.clear()
    prompt = typed_prompt()
    url = reverse("admin:tooling_prompttemplate_run", args=[prompt.pk])
    rates = {"session-start": "1/minute"}
    with override_settings(
        REST_FRAMEWORK={**api_settings.user_settings, "DEFAULT_THROTTLE_RATES": rates}
    ):
        first = admin_client.post(url, {**typed_post(topic="a"), "run": "Run"})
        second = admin_client.post(url, {**typed_post(topic="b"), "run": "Run"})
    assert first.status_code == 302
    assert second.status_code == 200
    assert any(
        "You have started as many runs as you may for now" in error
        for error in second.context["errors"]
    )
    assert AgentSession.objects.count() == 1
    cache.clear()


def test_a_run_the_budget_refuses_gives_its_start_back(admin_client, settings):
    """A start refused after it took its slot (the daily budget spent) does
    not count against the start limit: the limit counts runs started."""
    from decimal import Decimal

    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.test import override_settings
    from rest_framework.settings import api_settings

    from tests.sessions_app.factories import AgentSessionFactory

    cache.clear()
    prompt = typed_prompt()
    admin = get_user_model().objects.get(username="admin")
    AgentSessionFactory.create(created_by=admin, cost=Decimal(5))
    url = reverse("admin:tooling_prompttemplate_run", args=[prompt.pk])
    rates = {"session-start": "1/minute"}
    with override_settings(
        REST_FRAMEWORK={**api_settings.user_settings, "DEFAULT_THROTTLE_RATES": rates}
    ):
        settings.WINK_DAILY_BUDGET_USD = Decimal(1)
        refused = admin_client.post(url, {**typed_post(topic="a"), "run": "Run"})
        assert refused.status_code == 200
        assert any("daily budget" in error for error in refused.context["errors"])
        settings.WINK_DAILY_BUDGET_USD = None
        ran = admin_client.post(url, {**typed_post(topic="b"), "run": "Run"})
    assert ran.status_code == 302, ran.context and ran.context["errors"]
    assert AgentSession.objects.filter(prompt_ref=prompt.ref).count() == 1
    cache.clear()


def test_an_optional_text_field_emptied_runs_with_its_default(admin_client):
    """Emptied, the field gave "" (rendered as nothing, stored as the run's
    parameter) where the form says its default applies."""
    prompt = typed_prompt()
    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_run", args=[prompt.pk]),
        {**typed_post(topic="ran", note=""), "run": "Run"},
    )
    assert response.status_code == 302
    session = AgentSession.objects.get()
    assert "note" not in session.params, session.params
    assert session.params["topic"] == "ran"


def test_an_optional_text_field_emptied_says_its_default_applies(admin_client):
    """Emptied, the field came back empty and the preview rendered its
    default without a word (found by hostile QA): it shows what applies."""
    prompt = typed_prompt()
    response = admin_client.post(preview_url(prompt), typed_post(topic="t", note=""))
    form = response.context["parameters"]
    field = next(bound for bound in form if bound.label == "note")
    assert field.value() in ("", None)
    assert 'placeholder="empty: &#x27;plain&#x27; (default)"' in str(field)
    required = next(bound for bound in form if bound.label == "topic")
    assert "placeholder" not in str(required)


def test_a_prompt_without_parameters_says_so(admin_client):
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, SectionDefinitionFactory.create())
    response = admin_client.get(preview_url(prompt))
    assert response.context["parameters"] is None
    assert b'id="no-parameters"' in response.content


def test_hostile_parameter_names_and_defaults_are_escaped(admin_client):
    section = SectionDefinitionFactory.create(
        template="Hi $name.",
        default_params={"name": "<script>x</script>", "<b>odd</b>": 1},
    )
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)
    html = admin_client.get(preview_url(prompt)).content.decode()
    assert "<script>x</script>" not in html and "<b>odd</b>" not in html
    assert "&lt;b&gt;odd&lt;/b&gt;" in html


def test_parameter_form_unit():
    specs = [
        ParameterSpec("flag", "any", False, None, ("s",)),
        ParameterSpec("n", "integer", False, 1, ("s",)),
    ]
    form = ParameterForm(specs, {"param-p0": "", "param-p1": ""})
    assert form.is_valid(), form.errors
    assert form.values() == ({}, {})  # left empty: the defaults apply
    form = ParameterForm(specs, {"param-p0": "true", "param-p1": "1"})
    assert form.is_valid()
    # n shown as its default, flag changed
    assert form.values() == ({"n": 1}, {"flag": True})


# -- what governs a run ---------------------------------------------------------


def test_the_ship_demo_shows_its_approval_rule_policy_and_limits(admin_client):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="ship")
    response = admin_client.get(preview_url(prompt))
    governance = response.context["governance"]
    (approval,) = governance.approval_rules
    assert approval.name == "production-deploy"
    assert approval.tools == ["deploy"]  # the one its rules name
    assert [p.kind for p in governance.other_policies] == ["sequential_dependency"]
    html = response.content.decode()
    assert 'id="governance-approvals"' in html and "production-deploy" in html
    assert 'id="governance-deadline">900 s' in html or "s (the site" in html
    assert "no capability row" in html  # the demo model has none


def test_tools_without_examples_are_listed_and_flagged(admin_client):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="patch")
    response = admin_client.get(preview_url(prompt))
    governance = response.context["governance"]
    offered = {tool.name: tool for tool in governance.tools}
    assert offered["read_file"].examples >= 1
    # apply_patch has no examples: not in the "Tools:" list, still offered
    assert "apply_patch" in offered
    unlisted = [tool.name for tool in governance.unlisted_tools]
    assert "read_file" not in unlisted
    text = response.context["preview"].text
    for name in unlisted:
        assert f"- {name}:" not in text
    assert b"no: it has no examples" in response.content or not unlisted


def test_the_model_capabilities_and_the_budget_are_shown(admin_client, admin_user):
    seed_demo_catalog()
    ModelCapability.objects.create(model="gpt-5.4", hosted_kinds=["file_search"])
    UserBudget.objects.create(user=admin_user, daily_limit=Decimal("2.50"))
    prompt = PromptTemplate.objects.get(namespace="demo", key="research")
    PromptTemplate.objects.filter(pk=prompt.pk).update(
        max_cost_per_session=Decimal("0.40")
    )
    response = admin_client.get(preview_url(prompt))
    html = response.content.decode()
    # The capability row leaves web search out: the preview refuses it (the
    # run would be refused the same way).
    assert response.context["preview"] is None
    assert response.context["errors"]
    ModelCapability.objects.filter(model="gpt-5.4").update(
        hosted_kinds=["web_search", "file_search"]
    )
    response = admin_client.get(preview_url(prompt))
    html = response.content.decode()
    assert "takes <code>file_search</code>, <code>web_search</code>" in html
    assert "at most $0.40" in html
    assert "your daily budget $2.50" in html


def test_policy_rules_of_a_prompt_wide_policy_cover_every_tool():
    data = {
        "policies": [{"name": "limit", "kind": "call_limit", "config": {}}],
        "sections": [
            {
                "key": "a",
                "tools": [{"name": "one"}],
                "policies": [{"name": "ask", "kind": "approval", "config": {}}],
                "children": [{"key": "b", "tools": [{"name": "two"}]}],
            }
        ],
    }
    rules = {rule.name: rule for rule in policy_rules(data)}
    assert rules["limit"].tools == ["one", "two"]
    assert rules["limit"].applies_to == ["prompt"]
    assert rules["ask"].tools == ["one"] and rules["ask"].is_approval
    governance = governance_of(data)
    assert [r.name for r in governance.approval_rules] == ["ask"]


def test_the_request_json_is_printed_once(admin_client):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="research")
    html = admin_client.get(preview_url(prompt)).content.decode()
    assert html.count("&quot;allowed_domains&quot;") == 1
    assert 'id="request-json"' in html and 'id="tools-json"' not in html
    assert 'data-copy="request-json"' in html


def test_the_prompts_change_page_links_preview(admin_client):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="research")
    html = admin_client.get(
        reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
    ).content.decode()
    assert f'id="preview-run-link" href="{preview_url(prompt)}">Preview / run' in html


def test_sections_policy_kinds_are_named(admin_client):
    # an approval rule on a section shows among the approval rules
    section = SectionDefinitionFactory.create(template="Go.")
    tool = ToolDefinitionFactory.create()
    attach(section, tool)
    policy = PolicyDefinitionFactory.create(
        kind=PolicyDefinition.Kind.CALL_LIMIT, config={"limits": {tool.name: 2}}
    )
    section.policies.add(policy)
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)
    response = admin_client.get(preview_url(prompt))
    governance = response.context["governance"]
    assert governance is not None, response.context["errors"]
    (rule,) = governance.other_policies
    assert rule.tools == [tool.name] and rule.kind == "call_limit"


# -- the JSON box and the fields ----------------------------------------------------


def shown_post(**changed: Any) -> dict[str, Any]:
    """The page's post as a browser sends it: every field as shown (its
    default), ``changed`` typed over them."""
    shown = {"topic": "", "count": "3", "verbose": "false", "tags": '["a"]'}
    shown.update(ratio="0.5", note="plain")
    return typed_post(**{**shown, **changed})


def test_a_pasted_set_wins_over_fields_left_as_shown(admin_client):
    prompt = typed_prompt()
    data = shown_post()
    data["params"] = json.dumps(
        {"topic": "boxed", "count": 9, "verbose": True, "note": "pasted"}
    )
    response = admin_client.post(preview_url(prompt), data)
    assert response.context["errors"] == [], response.context["errors"]
    # topic is required, but the box names it: not required as a field
    assert "Topic boxed, 9 items, verbose True" in response.context["preview"].text


def test_a_changed_field_wins_over_the_box(admin_client):
    prompt = typed_prompt()
    data = shown_post(topic="typed", count="7")
    data["params"] = json.dumps({"topic": "boxed", "count": 9})
    response = admin_client.post(preview_url(prompt), data)
    assert "Topic typed, 7 items" in response.context["preview"].text


def test_a_required_field_left_empty_without_the_box_is_an_error(admin_client):
    prompt = typed_prompt()
    response = admin_client.post(preview_url(prompt), shown_post())
    assert fields_of(response)["topic"].errors
    assert response.context["preview"] is None


@pytest.mark.parametrize(
    "typed, sent",
    [
        ("42", 42),
        ("2.5", 2.5),
        ("true", True),
        ('"42"', "42"),
        ("tides", "tides"),
        ("1e400", "1e400"),
        ("NaN", "NaN"),
        ("[1]", "[1]"),
        # past a float's range: an integer all the same (the API takes it)
        ("1" + "0" * 309, 10**309),
        ("1" + "0" * 5000, "1" + "0" * 5000),  # past the decoder's digits
    ],
    ids=lambda value: str(value)[:12],
)
def test_a_required_parameter_takes_a_number_a_boolean_or_text(
    admin_client, typed, sent
):
    prompt = typed_prompt()
    admin_client.post(
        reverse("admin:tooling_prompttemplate_run", args=[prompt.pk]),
        {**typed_post(topic=typed), "run": "Run"},
    )
    session = AgentSession.objects.get()
    assert session.params["topic"] == sent


def test_policy_configs_show_only_to_those_who_may_view_policies(client):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="ship")
    runner = get_user_model().objects.create_user(
        "runner", password="pw", is_staff=True
    )
    runner.user_permissions.add(Permission.objects.get(codename="view_prompttemplate"))
    client.force_login(runner)
    html = client.get(preview_url(prompt)).content.decode()
    assert 'id="governance-approvals"' in html
    assert "&quot;four_eyes&quot;" not in html and 'id="configs-hidden"' in html
    runner.user_permissions.add(
        Permission.objects.get(codename="view_policydefinition")
    )
    runner = get_user_model().objects.get(pk=runner.pk)
    client.force_login(runner)
    html = client.get(preview_url(prompt)).content.decode()
    assert "&quot;four_eyes&quot;: true" in html


def test_the_budget_left_counts_the_runs_in_flight(admin_client, admin_user):
    seed_demo_catalog()
    UserBudget.objects.create(user=admin_user, daily_limit=Decimal("1.00"))
    AgentSession.objects.create(
        prompt_ref="demo/research",
        status=AgentSession.Status.RUNNING,
        created_by=admin_user,
        cost=Decimal("0.10"),
        cost_budget=Decimal("0.60"),
    )
    prompt = PromptTemplate.objects.get(namespace="demo", key="research")
    html = admin_client.get(preview_url(prompt)).content.decode()
    # 1.00 - 0.10 spent - 0.50 the run in flight may still spend
    assert "$0.4000 left today" in html


def test_run_refuses_a_parameter_over_the_apis_limit(admin_client, settings):
    """The API answers 413 past WINK_API_MAX_PARAM_BYTES; the Run button
    stored it."""
    settings.WINK_API_MAX_PARAM_BYTES = 1000
    prompt = typed_prompt()
    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_run", args=[prompt.pk]),
        {**typed_post(topic="x" * 2000), "run": "Run"},
    )
    assert response.status_code == 200
    assert response.context["errors"] == [
        "The parameter topic is 2002 bytes encoded; each is at most 1000."
    ]
    assert not AgentSession.objects.exists()
    # within it, it runs
    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_run", args=[prompt.pk]),
        {**typed_post(topic="x" * 900), "run": "Run"},
    )
    assert response.status_code == 302


@pytest.mark.parametrize("typed", ['"\\ud800"', '"a\\udc00"', '"\\u0000"'])
@pytest.mark.parametrize("action", ["preview", "run"])
def test_a_required_parameter_escaping_unstorable_text_is_refused(
    admin_client, typed, action
):
    prompt = typed_prompt()
    response = admin_client.post(
        reverse(f"admin:tooling_prompttemplate_{action}", args=[prompt.pk]),
        {**typed_post(topic=typed), "run": "Run"},
    )
    assert response.status_code == 200
    assert fields_of(response)["topic"].errors == [
        "Must not contain NUL bytes or lone surrogates."
    ]
    assert response.context["preview"] is None
    assert not AgentSession.objects.exists()


def test_preview_refuses_a_parameter_over_the_apis_limit(admin_client, settings):
    """What Run and the API refuse is not previewed either (nor echoed in a
    rendered prompt)."""
    settings.WINK_API_MAX_PARAM_BYTES = 1000
    prompt = typed_prompt()
    response = admin_client.post(preview_url(prompt), typed_post(topic="x" * 2000))
    assert response.context["errors"] == [
        "The parameter topic is 2002 bytes encoded; each is at most 1000."
    ]
    assert response.context["preview"] is None
    response = admin_client.post(preview_url(prompt), typed_post(topic="x" * 900))
    assert response.context["errors"] == [] and response.context["preview"]


def test_a_flag_its_own_section_declares_without_default_is_optional(admin_client):
    """``{"opt": null}`` in the section ``opt`` switches on: left out, the
    section is left out (what the renderer does), so neither the API's list
    nor the form requires it."""
    typed = SectionDefinitionFactory.create(
        key="base", template="Name $name.", default_params={"name": None}
    )
    optional = SectionDefinitionFactory.create(
        key="opt",
        template="Optional on $opt.",
        default_params={"opt": None},
        enabled_when_param="opt",
    )
    prompt = PromptTemplateFactory.create(key="flagged")
    add_sections(prompt, typed, optional)
    specs = {s.name: s for s in prompt_parameters(freeze_template(prompt))}
    assert specs["opt"] == ParameterSpec("opt", "any", False, None, ("opt",))
    assert specs["name"].required
    listed = admin_client.get(f"/api/prompts/{prompt.ref}/").json()["parameters"]
    assert {p["name"]: p["required"] for p in listed} == {"name": True, "opt": False}
    post = {"params": "", "trust_level": "standard", "param-p0": "Bob", "param-p1": ""}
    response = admin_client.post(preview_url(prompt), post)
    assert response.context["errors"] == []
    assert "Optional on" not in response.context["preview"].rendered.text
    response = admin_client.post(preview_url(prompt), {**post, "param-p1": '"yes"'})
    assert "Optional on yes." in response.context["preview"].rendered.text
