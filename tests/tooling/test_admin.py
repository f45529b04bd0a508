"""The catalog admin refuses invalid input with the runtime's message and saves
nothing; the preview shows the exact payload."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from tests.tooling.admin_forms import opened_version
from tests.tooling.factories import (
    PromptTemplateFactory,
    SectionDefinitionFactory,
    ToolDefinitionFactory,
    add_sections,
    attach,
)
from tooling.demo import seed_demo_catalog
from tooling.models import (
    HostedToolDefinition,
    PolicyDefinition,
    PromptTemplate,
    SectionDefinition,
    ToolDefinition,
)

pytestmark = pytest.mark.django_db


def _errors(response) -> str:
    assert response.status_code == 200, "the form should be shown again with errors"
    return response.content.decode()


def test_admin_tool_with_bad_name_is_refused(admin_client):
    response = admin_client.post(
        reverse("admin:tooling_tooldefinition_add"),
        {
            "name": "Bad Name",
            "handler_key": "demo.count_words",
            "enabled": "on",
            "param_descriptions": "{}",
            "examples": "[]",
        },
    )
    assert "must match ^[a-z0-9_-]{1,64}$" in _errors(response)
    assert not ToolDefinition.objects.exists()


@pytest.mark.parametrize(
    ("description", "message"),
    [("Café search", "must be ASCII"), ("x" * 201, "at most 200 characters")],
)
def test_admin_tool_with_bad_description_is_refused(admin_client, description, message):
    response = admin_client.post(
        reverse("admin:tooling_tooldefinition_add"),
        {
            "name": "wc",
            "handler_key": "demo.count_words",
            "description": description,
            "param_descriptions": "{}",
            "examples": "[]",
        },
    )
    assert message in _errors(response)
    assert not ToolDefinition.objects.exists()


def test_admin_tool_override_refused_for_a_handler_without_overrides(admin_client):
    response = admin_client.post(
        reverse("admin:tooling_tooldefinition_add"),
        {
            "name": "plan",
            "handler_key": "planning.planning_setup_plan",
            "description": "Something else",
            "param_descriptions": "{}",
            "examples": "[]",
        },
    )
    assert "does not accept overrides" in _errors(response)
    assert not ToolDefinition.objects.exists()


def test_admin_tool_example_must_match_handler_types(admin_client):
    response = admin_client.post(
        reverse("admin:tooling_tooldefinition_add"),
        {
            "name": "wc",
            "handler_key": "demo.count_words",
            "param_descriptions": "{}",
            "examples": json.dumps(
                [
                    {
                        "description": "d",
                        "input": {"txt": "x"},
                        "output": {"words": 1, "characters": 1},
                    }
                ]
            ),
        },
    )
    assert "Example 1 does not match" in _errors(response)
    assert not ToolDefinition.objects.exists()


def test_admin_section_with_unknown_placeholder_is_refused(admin_client):
    response = admin_client.post(
        reverse("admin:tooling_sectiondefinition_add"),
        {
            "key": "task",
            "title": "Task",
            "template": "Do $thing with ${other}",
            "default_params": json.dumps({"thing": "x"}),
            "enabled": "on",
            "position": 0,
            "sectiontool_set-TOTAL_FORMS": 0,
            "sectiontool_set-INITIAL_FORMS": 0,
            "sectionhostedtool_set-TOTAL_FORMS": 0,
            "sectionhostedtool_set-INITIAL_FORMS": 0,
        },
    )
    assert "Template references unknown placeholder &#x27;$other&#x27;" in _errors(
        response
    )
    assert not SectionDefinition.objects.exists()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("key", "taken", "Section definition with this Key already exists."),
        ("template", "bad ${nope}", "declares placeholders"),
        ("default_params", "[]", "object"),
    ],
)
def test_admin_a_new_section_under_one_in_use_shows_its_errors(
    admin_client, field, value, message
):
    """A section added under a parent a prompt uses, with a mistake of its
    own: the form's error (the check of the whole section read the unsaved
    section's policies: a 500, found by a hostile review)."""
    parent = SectionDefinition.objects.create(key="parent", title="P", template="p")
    SectionDefinition.objects.create(key="taken", title="T", template="t")
    add_sections(PromptTemplateFactory.create(), parent)
    data = {
        "key": "child",
        "title": "Child",
        "template": "child",
        "default_params": "{}",
        "parent": parent.pk,
        "enabled": "on",
        "position": 0,
        "sectiontool_set-TOTAL_FORMS": 0,
        "sectiontool_set-INITIAL_FORMS": 0,
        "sectionhostedtool_set-TOTAL_FORMS": 0,
        "sectionhostedtool_set-INITIAL_FORMS": 0,
    }
    data[field] = value
    response = admin_client.post(reverse("admin:tooling_sectiondefinition_add"), data)
    assert response.status_code == 200
    assert message in str(response.context["adminform"].form.errors[field])
    assert not SectionDefinition.objects.filter(key="child").exists()


def _section_data(**fields: Any) -> dict[str, Any]:
    return {
        "title": "Task",
        "template": "task",
        "default_params": "{}",
        "enabled": "on",
        "position": 0,
        "sectiontool_set-TOTAL_FORMS": 0,
        "sectiontool_set-INITIAL_FORMS": 0,
        "sectionhostedtool_set-TOTAL_FORMS": 0,
        "sectionhostedtool_set-INITIAL_FORMS": 0,
        **fields,
    }


def test_admin_section_keys_are_lowercase_as_the_runtime_reads_them(admin_client):
    """``Research.Task`` was stored as typed and built as ``research.task``,
    beside a row that may hold ``research.task`` (found by a hostile
    review)."""
    add = reverse("admin:tooling_sectiondefinition_add")
    response = admin_client.post(add, _section_data(key="Research.Task"))
    assert response.context["adminform"].form.errors["key"] == [
        "Write the key in lowercase: 'research.task' (the runtime reads it so)."
    ]
    legacy = SectionDefinition.objects.create(key="QA.MCP", title="Q", template="q")
    response = admin_client.post(add, _section_data(key="qa.mcp"))
    assert response.context["adminform"].form.errors["key"] == [
        "Another section, 'QA.MCP', differs from this key only in capitals; the "
        "runtime reads both as one."
    ]
    assert not SectionDefinition.objects.filter(key="qa.mcp").exists()
    # a row stored before keeps its key while other fields change
    change = reverse("admin:tooling_sectiondefinition_change", args=[legacy.pk])
    response = admin_client.post(
        change,
        {
            **_section_data(key="QA.MCP", title="New"),
            **opened_version(admin_client, change),
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    legacy.refresh_from_db()
    assert (legacy.key, legacy.title) == ("QA.MCP", "New")


@pytest.mark.parametrize(
    "defaults",
    [
        '{"question": "a", "question": "b"}',
        "[]",
        # refused by the runtime, not the field (found by hostile QA)
        '{"question": "a", "class": 1}',
        '{"question": "a", "2x": 1}',
        '{"\u00e9t\u00e9 x": 1}',
    ],
)
def test_admin_refused_defaults_are_the_only_error(admin_client, defaults):
    """The refused defaults stood in as none, and the template was blamed
    for declaring ``$question`` (found by a hostile review)."""
    response = admin_client.post(
        reverse("admin:tooling_sectiondefinition_add"),
        _section_data(key="ask", template="Q: $question", default_params=defaults),
    )
    form = response.context["adminform"].form
    assert list(form.errors) == ["default_params"], form.errors


@pytest.mark.parametrize("placeholder", ["key", "name", "description"])
def test_admin_unknown_placeholder_named_like_a_field_is_blamed_on_the_template(
    admin_client, placeholder
):
    response = admin_client.post(
        reverse("admin:tooling_sectiondefinition_add"),
        {
            "key": "task",
            "title": "Task",
            "template": f"Do $thing for ${placeholder}",
            "default_params": json.dumps({"thing": "x"}),
            "enabled": "on",
            "position": 0,
            "sectiontool_set-TOTAL_FORMS": 0,
            "sectiontool_set-INITIAL_FORMS": 0,
            "sectionhostedtool_set-TOTAL_FORMS": 0,
            "sectionhostedtool_set-INITIAL_FORMS": 0,
        },
    )
    _errors(response)
    form = response.context["adminform"].form
    assert form.errors == {
        "template": [
            f"Template references unknown placeholder '${placeholder}' (known: thing)."
        ]
    }
    assert not SectionDefinition.objects.exists()


def test_admin_policy_dependency_on_missing_tool_is_refused_at_prompt_level(
    admin_client,
):
    section = SectionDefinitionFactory.create()
    attach(section, ToolDefinitionFactory.create(name="deploy"))
    policy = PolicyDefinition.objects.create(
        name="order",
        kind="sequential_dependency",
        config={"dependencies": {"deploy": ["build"]}},
    )
    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_add"),
        {
            "namespace": "ops",
            "key": "ship",
            "model": "gpt-5.4",
            "tool_choice": "auto",
            "max_turns": 8,
            "enabled": "on",
            "policies": [policy.pk],
            "prompt_sections-TOTAL_FORMS": 1,
            "prompt_sections-INITIAL_FORMS": 0,
            "prompt_sections-MIN_NUM_FORMS": 1,
            "prompt_sections-0-section": section.pk,
            "prompt_sections-0-position": 0,
        },
    )
    assert "refers to tool &#x27;build&#x27;" in _errors(response)
    assert not PromptTemplate.objects.exists()


def test_admin_prompt_with_duplicate_tool_names_is_refused(admin_client):
    tool = ToolDefinitionFactory.create(name="dup")
    first, second = SectionDefinitionFactory.create(), SectionDefinitionFactory.create()
    attach(first, tool)
    attach(second, tool)
    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_add"),
        {
            "namespace": "ops",
            "key": "dups",
            "model": "gpt-5.4",
            "tool_choice": "auto",
            "max_turns": 8,
            "enabled": "on",
            "prompt_sections-TOTAL_FORMS": 2,
            "prompt_sections-INITIAL_FORMS": 0,
            "prompt_sections-0-section": first.pk,
            "prompt_sections-0-position": 0,
            "prompt_sections-1-section": second.pk,
            "prompt_sections-1-position": 1,
        },
    )
    assert "Duplicate tool name &#x27;dup&#x27;" in _errors(response)
    assert not PromptTemplate.objects.exists()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"allowed_domains": "https://docs.python.org"}, "without a scheme"),
        (
            {"allowed_domains": "\n".join(f"d{i}.example.com" for i in range(101))},
            "at most 100 domains",
        ),
        ({"country": "XX"}, "ISO 3166-1 alpha-2"),
        ({"timezone": "Mars/Olympus"}, "IANA timezone"),
        (  # found by a hostile review: it was stored twice
            {"allowed_domains": "docs.python.org\nexample.com, docs.python.org"},
            "Listed more than once: &#x27;docs.python.org&#x27;.",
        ),
        (  # found by hostile QA: a domain is one whatever its case
            {"allowed_domains": "docs.python.org\nDOCS.Python.org"},
            "Listed more than once: &#x27;docs.python.org&#x27;.",
        ),
        (  # ... or a final point (from a hostile review)
            {"allowed_domains": "docs.python.org\ndocs.python.org."},
            "Listed more than once: &#x27;docs.python.org&#x27;.",
        ),
    ],
)
def test_admin_web_search_config_is_validated(admin_client, fields, message):
    data = {
        "name": "search",
        "kind": "web_search",
        "description": "Search.",
        "enabled": "on",
        "allow_live_access": "on",
        "config": "{}",
        **fields,
    }
    response = admin_client.post(
        reverse("admin:tooling_hostedtooldefinition_add"), data
    )
    assert message in _errors(response)
    assert not HostedToolDefinition.objects.exists()


def test_admin_web_search_typed_fields_are_saved_as_config(admin_client):
    response = admin_client.post(
        reverse("admin:tooling_hostedtooldefinition_add"),
        {
            "name": "search",
            "kind": "web_search",
            "description": "Search.",
            "enabled": "on",
            "allowed_domains": "docs.python.org\nwww.djangoproject.com",
            "country": "de",
            "timezone": "Europe/Berlin",
            "config": "{}",
        },
    )
    assert response.status_code == 302
    config = HostedToolDefinition.objects.get().config
    assert config["allowed_domains"] == ["docs.python.org", "www.djangoproject.com"]
    assert config["country"] == "DE" and config["allow_live_access"] is False


def test_admin_preview_shows_rendered_prompt_and_exact_tools_json(admin_client):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="research")

    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk]),
        {"params": json.dumps({"question": "Who maintains Django?"})},
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert "Who maintains Django?" in html
    assert "&quot;allowed_domains&quot;" in html and "&quot;strict&quot;: true" in html
    assert "web_search_call.action.sources" in html


RLO = "\u202e"


def test_catalog_lists_and_the_preview_show_bidi_controls_as_marks(admin_client):
    """A section's title and text and a prompt's name may hold bidi controls
    (right-to-left text is allowed): the catalog lists and the preview's
    rendered prompt and request show them as marks, so what a reviewer reads
    is the order the characters are in; the editable form keeps them as
    typed (a mark there would be saved back)."""
    section = SectionDefinitionFactory.create(
        key="qa.bidi", title=f"Ti{RLO}tle", template=f"Hello {RLO}world."
    )
    prompt = PromptTemplateFactory.create(name=f"QA {RLO}bidi")
    add_sections(prompt, section)

    for url in (
        reverse("admin:tooling_sectiondefinition_changelist"),
        reverse("admin:tooling_prompttemplate_changelist"),
    ):
        html = admin_client.get(url).content.decode()
        assert RLO not in html and "[U+202E]" in html, url
    preview = admin_client.post(
        reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk]),
        {"params": "{}"},
    ).content.decode()
    assert RLO not in preview
    assert "Hello [U+202E]world." in preview  # the rendered prompt, as marks
    # the request body stays exact JSON (a copy parses to what is sent)
    assert "Hello \\u202eworld." in preview
    form = admin_client.get(
        reverse("admin:tooling_sectiondefinition_change", args=[section.pk])
    ).content.decode()
    assert f"Hello {RLO}world." in form  # as typed, to be saved as it is


def test_admin_preview_reports_bad_params(admin_client):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="research")

    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk]),
        {"params": json.dumps({"nope": 1})},
    )

    assert "Unknown parameter" in response.content.decode()


def test_admin_preview_run_button_records_a_session(admin_client):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="release")

    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_run", args=[prompt.pk]),
        {"params": "{}", "run": "Run"},
    )

    assert response.status_code == 302
    session = prompt.sessions.get()
    assert response["Location"] == session.get_absolute_url()
    assert session.status == "succeeded"


def test_admin_preview_page_offers_the_run_button(admin_client):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="release")

    page = admin_client.get(
        reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk])
    ).content.decode()

    run_url = reverse("admin:tooling_prompttemplate_run", args=[prompt.pk])
    assert f'formaction="{run_url}"' in page
    assert 'id="revision-hash"' in page


def test_admin_preview_never_runs_even_when_asked(admin_client):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="release")

    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk]),
        {"params": "{}", "run": "Run"},
    )

    assert response.status_code == 200
    assert not prompt.sessions.exists()


def test_admin_run_with_invalid_params_starts_nothing(admin_client):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="release")

    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_run", args=[prompt.pk]),
        {"params": "{not json", "run": "Run"},
    )

    assert response.status_code == 200
    assert (
        "Enter valid JSON: Expecting property name enclosed in double quotes at "
        "line 1, column 2."
    ) in response.content.decode()
    assert not prompt.sessions.exists()


def test_admin_run_view_only_takes_a_post(admin_client):
    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="release")

    response = admin_client.get(
        reverse("admin:tooling_prompttemplate_run", args=[prompt.pk])
    )

    assert response.status_code == 302
    assert not prompt.sessions.exists()


def test_admin_changelists_render(admin_client):
    seed_demo_catalog()
    for model in (
        "tooldefinition",
        "hostedtooldefinition",
        "policydefinition",
        "sectiondefinition",
        "prompttemplate",
        "modelcapability",
    ):
        assert (
            admin_client.get(reverse(f"admin:tooling_{model}_changelist")).status_code
            == 200
        )
    prompt = PromptTemplate.objects.first()
    assert prompt is not None
    assert (
        admin_client.get(
            reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
        ).status_code
        == 200
    )
    _ = PromptTemplateFactory, add_sections


def test_audit_admin_is_read_only(admin_client):
    seed_demo_catalog()
    from sessions_app import services

    session = services.start_session(prompt_ref="demo/research", params={})
    changelist = admin_client.get(reverse("admin:sessions_app_agentsession_changelist"))
    add = admin_client.get(reverse("admin:sessions_app_agentsession_add"))
    delete = admin_client.post(
        reverse("admin:sessions_app_agentsession_delete", args=[session.pk]),
        {"post": "yes"},
    )

    assert changelist.status_code == 200
    assert add.status_code == 403
    assert delete.status_code == 403
    assert type(session).objects.filter(pk=session.pk).exists()


def _edit_policy(admin_client, policy, dependencies):
    url = reverse("admin:tooling_policydefinition_change", args=[policy.pk])
    return admin_client.post(
        url,
        {
            "name": policy.name,
            "kind": policy.kind,
            "config": json.dumps({"dependencies": dependencies}),
            "description": "",
            **opened_version(admin_client, url),
        },
    )


@pytest.mark.parametrize("attached_to", ["child section", "prompt"])
def test_admin_policy_edit_that_breaks_a_prompt_using_it_is_refused(
    admin_client, attached_to
):
    policy = PolicyDefinition.objects.create(
        name="ship-order",
        kind="sequential_dependency",
        config={"dependencies": {"deploy": ["build"]}},
    )
    root = SectionDefinitionFactory.create(key="ship")
    child = SectionDefinitionFactory.create(key="steps", parent=root)
    attach(
        child,
        ToolDefinitionFactory.create(name="deploy"),
        ToolDefinitionFactory.create(name="build"),
    )
    prompt = PromptTemplateFactory.create(namespace="ops", key="ship")
    add_sections(prompt, root)
    if attached_to == "prompt":
        prompt.policies.add(policy)
    else:
        child.policies.add(policy)

    response = _edit_policy(admin_client, policy, {"deploy": ["build", "compile"]})

    _errors(response)
    form = response.context["adminform"].form
    assert form.errors == {
        "config": [
            "This change would break prompt 'ops/ship': Policy 'ship-order' refers "
            "to tool 'compile', which prompt 'ops/ship' does not have."
        ]
    }
    policy.refresh_from_db()
    assert policy.config == {"dependencies": {"deploy": ["build"]}}
    # A change the prompt can live with is saved.
    assert _edit_policy(admin_client, policy, {"build": ["deploy"]}).status_code == 302
    policy.refresh_from_db()
    assert policy.config == {"dependencies": {"build": ["deploy"]}}


def test_admin_policy_edit_checks_only_the_prompts_that_use_it(admin_client):
    policy = PolicyDefinition.objects.create(
        name="unused",
        kind="sequential_dependency",
        config={"dependencies": {"deploy": ["build"]}},
    )
    # Another prompt is already broken (its own policy names a missing tool):
    # editing an unrelated policy does not blame it.
    broken = PolicyDefinition.objects.create(
        name="broken",
        kind="sequential_dependency",
        config={"dependencies": {"deploy": ["nothing"]}},
    )
    section = SectionDefinitionFactory.create()
    attach(section, ToolDefinitionFactory.create(name="deploy"))
    section.policies.add(broken)
    add_sections(PromptTemplateFactory.create(), section)

    response = _edit_policy(admin_client, policy, {"deploy": ["compile"]})

    assert response.status_code == 302
    policy.refresh_from_db()
    assert policy.config == {"dependencies": {"deploy": ["compile"]}}


def test_admin_tool_list_shows_which_handlers_are_read_only(admin_client):
    ToolDefinitionFactory(name="reader", handler_key="vfs.read_file")
    ToolDefinitionFactory(name="writer", handler_key="vfs.write_file")
    response = admin_client.get(reverse("admin:tooling_tooldefinition_changelist"))
    assert response.status_code == 200
    rows = {
        name: row
        for row in response.content.decode().split("<tr")
        for name in ("reader", "writer")
        if f">{name}</a>" in row
    }
    assert (
        'class="field-read_only"><img src="/static/admin/img/icon-yes.svg"'
        in (rows["reader"])
    )
    assert (
        'class="field-read_only"><img src="/static/admin/img/icon-no.svg"'
        in (rows["writer"])
    )


def test_an_approval_rule_on_an_argument_the_tool_does_not_take_is_refused(
    admin_client,
):
    """A misspelt condition never matches: saved, production deploys ran
    without a decision (found by a hostile review). The form names it."""
    from tests.tooling.admin_forms import change_form_data
    from tooling.demo import seed_demo_catalog

    seed_demo_catalog()
    policy = PolicyDefinition.objects.get(name="production-deploy")
    before = policy.config
    url = reverse("admin:tooling_policydefinition_change", args=[policy.pk])
    data = change_form_data(admin_client, url)
    typo = {"tool": "deploy", "when": {"environmnet": "production"}}
    data.update(
        config_source="json",
        config=json.dumps({"rules": [typo], "four_eyes": True}),
    )

    response = admin_client.post(url, data)

    assert response.status_code == 200
    errors = " ".join(response.context["adminform"].form.errors.get("config", []))
    assert "has a condition on 'environmnet', which tool 'deploy' does not take" in (
        errors
    ), errors
    policy.refresh_from_db()
    assert policy.config == before


def test_policy_json_holding_a_key_twice_is_refused_not_cut_to_the_last(admin_client):
    """Python's decoder keeps the last of two equal keys: "deploy" would have
    lost its build and test prerequisites without a word."""
    policy = PolicyDefinition.objects.create(
        name="release-order",
        kind="sequential_dependency",
        config={"dependencies": {"deploy": ["build", "test"]}},
    )
    url = reverse("admin:tooling_policydefinition_change", args=[policy.pk])
    twice = '{"dependencies": {"deploy": ["build", "test"], "deploy": ["lint"]}}'

    response = admin_client.post(
        url,
        {"name": policy.name, "kind": policy.kind, "config": twice, "description": ""},
    )

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["config"]
    assert errors == [
        'Enter valid JSON: the key "deploy" appears twice in one object (only '
        "the last would be kept)."
    ]
    assert twice in response.content.decode().replace("&quot;", '"')  # kept as typed
    policy.refresh_from_db()
    assert policy.config == {"dependencies": {"deploy": ["build", "test"]}}


def test_a_sequential_dependency_option_it_does_not_know_is_refused(admin_client):
    policy = PolicyDefinition.objects.create(
        name="release-order",
        kind="sequential_dependency",
        config={"dependencies": {"deploy": ["build"]}},
    )
    url = reverse("admin:tooling_policydefinition_change", args=[policy.pk])
    config = {"dependencies": {"deploy": ["build"]}, "dependencis": {"x": ["y"]}}

    response = admin_client.post(
        url,
        {
            "name": policy.name,
            "kind": policy.kind,
            "config": json.dumps(config),
            "description": "",
        },
    )

    assert response.status_code == 200
    errors = " ".join(response.context["adminform"].form.errors["config"])
    assert "Unknown sequential dependency option(s): dependencis" in errors, errors
    policy.refresh_from_db()
    assert policy.config == {"dependencies": {"deploy": ["build"]}}


@pytest.mark.parametrize("posted", ["bogus", "99999999999999999999", "1.5"])
@pytest.mark.parametrize(
    ("admin_name", "field"),
    [
        ("prompttemplate", "prompt_sections-0-section"),
        ("sectiondefinition", "sectiontool_set-0-tool"),
        ("sectiondefinition", "sectionhostedtool_set-0-hosted_tool"),
    ],
)
def test_an_autocomplete_value_that_is_no_key_is_a_form_error(
    admin_client, admin_name, field, posted
):
    """A script's or a tampered form's value in an inline's autocomplete
    field: the form again with its error, not a 500 (Django looked the value
    up to show it again)."""
    from tests.tooling.admin_forms import change_form_data

    seed_demo_catalog()
    if admin_name == "prompttemplate":
        row: Any = PromptTemplate.objects.get(namespace="demo", key="research")
    else:  # a section with a function tool and a hosted tool
        row = SectionDefinition.objects.filter(
            sectiontool__isnull=False, sectionhostedtool__isnull=False
        ).first()
        assert row is not None
    url = reverse(f"admin:tooling_{admin_name}_change", args=[row.pk])
    data = change_form_data(admin_client, url)
    assert field in data
    data[field] = posted

    response = admin_client.post(url, data)

    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()


def test_the_prompt_form_refuses_an_output_schema_no_answer_could_meet(admin_client):
    from tests.tooling.admin_forms import change_form_data

    seed_demo_catalog()
    prompt = PromptTemplate.objects.get(namespace="demo", key="research")
    before = prompt.output_schema
    url = reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
    data = change_form_data(admin_client, url)
    data["output_schema"] = json.dumps(
        {"type": "object", "properties": {"a": {"type": "strin"}}}
    )

    response = admin_client.post(url, data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["output_schema"]
    assert errors[0].startswith("The output schema is not valid JSON Schema at")
    prompt.refresh_from_db()
    assert prompt.output_schema == before


@pytest.mark.parametrize(
    "links",
    [
        (),
        ("sectiontool",),
        ("sectionhostedtool",),
        ("sectiontool", "sectionhostedtool"),
    ],
)
def test_a_section_edit_is_checked_whatever_links_the_user_may_see(client, links):
    """The whole-section check ran in the hosted tools' formset alone, which
    Django leaves out for a user without permission on it: such a user could
    break a prompt (found by a hostile review)."""
    from django.contrib.auth.models import Permission

    from tests.sessions_app.factories import UserFactory
    from tests.tooling.admin_forms import change_form_data

    section = SectionDefinitionFactory.create(key="only")
    add_sections(PromptTemplateFactory.create(), section)
    editor = UserFactory.create(username="editor", is_staff=True)
    codenames = ["view_sectiondefinition", "change_sectiondefinition"]
    for model in links:
        codenames += [f"view_{model}", f"change_{model}"]
    editor.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client.force_login(editor)
    url = reverse("admin:tooling_sectiondefinition_change", args=[section.pk])
    data = change_form_data(client, url)
    data.pop("enabled", None)  # unticked: the prompt's only section off

    response = client.post(url, data)

    assert response.status_code == 200, "the edit must be refused"
    assert response.context["adminform"].form.non_field_errors() or any(
        formset.non_form_errors()
        for formset in response.context["inline_admin_formsets"]
    )
    section.refresh_from_db()
    assert section.enabled
