"""Issue #28: the catalog's admin forms keep what an operator typed. The
country is picked by name (a typed name is its code, never two letters of
it); every field's error shows at once; bad JSON names its line and column
and stays as typed; the tool form shows what the handler takes; the model is
suggested from the capability and price tables, and an unknown one saved with
a warning."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from tests.tooling.admin_forms import change_form_data
from tests.tooling.factories import (
    HostedToolDefinitionFactory,
    PromptTemplateFactory,
    SectionDefinitionFactory,
    ToolDefinitionFactory,
    add_sections,
)
from tests.tooling.hosted_admin import add_hosted
from tooling import assembly
from tooling.forms import (
    PolicyDefinitionForm,
    PromptTemplateForm,
    SectionDefinitionForm,
    ToolDefinitionForm,
    country_choices,
    handler_parameters,
    model_warnings,
)
from tooling.forms.hosted import HostedToolDefinitionForm
from tooling.handlers import registry
from tooling.models import (
    HostedToolDefinition,
    ModelCapability,
    ModelPrice,
    PolicyDefinition,
    PromptTemplate,
    SectionHostedTool,
)
from tooling.runtime import GeoHint, PromptValidationError
from tooling.runtime.hosted import hosted_kind_names
from tooling.runtime.hosted.countries import (
    COUNTRY_NAMES,
    ISO_3166_ALPHA2,
    country_code,
)

pytestmark = pytest.mark.django_db


def hosted_form(fields: dict[str, Any]) -> Any:
    data = {"name": "search", "kind": "web_search", "description": "D.", **fields}
    return HostedToolDefinitionForm(data=data)


# -- the country ----------------------------------------------------------------


def test_countries_table_names_every_assigned_code() -> None:
    assert len(COUNTRY_NAMES) == 249 == len(ISO_3166_ALPHA2)
    assert COUNTRY_NAMES["DE"] == "Germany"
    assert COUNTRY_NAMES["GE"] == "Georgia"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Germany", "DE"),
        (" germany ", "DE"),
        ("DEU", "DE"),
        ("Federal Republic of Germany", "DE"),
        ("de", "DE"),
        ("South Korea", "KR"),
        ("Korea, Republic of", "KR"),
        ("United States of America", "US"),
        ("Georgia", "GE"),
        # the names people type (a hostile review found them refused) ...
        ("Russia", "RU"),
        ("Turkey", "TR"),
        ("UK", "GB"),
        ("Ivory Coast", "CI"),
        ("Cape Verde", "CV"),
        ("Brunei", "BN"),
        # ... and accents or the apostrophe's kind aside, either way
        ("Cote d'Ivoire", "CI"),
        ("C\u00f4te d\u2019Ivoire", "CI"),
        ("Curacao", "CW"),
        ("Reunion", "RE"),
        ("S\u00e3o Tom\u00e9 and Pr\u00edncipe", "ST"),
        ("Turkiye", "TR"),
        ("Korea", None),  # two countries: neither
        ("Congo", "CG"),  # ISO's short name
        ("Germania", None),
        ("Ger", None),
        ("", None),
    ],
)
def test_country_code_takes_a_code_or_an_exact_name(
    text: str, code: str | None
) -> None:
    assert country_code(text) == code


def test_hosted_form_takes_germany_as_de_not_georgia() -> None:
    bound = hosted_form({"country": "Germany"})
    assert bound.is_valid(), bound.errors
    assert bound.cleaned_data["config"]["country"] == "DE"


def test_hosted_form_refuses_a_country_it_cannot_name() -> None:
    bound = hosted_form({"country": "Germania"})
    assert not bound.is_valid()
    assert bound.errors["country"] == [
        "'Germania' is not a country: pick one from the list (a country's "
        "ISO 3166-1 name or alpha-2 code, e.g. 'Germany' or 'DE')."
    ]


def test_country_widget_is_a_select_of_names_without_a_length_limit() -> None:
    html = str(hosted_form({})["country"])
    assert html.startswith("<select")
    assert "maxlength" not in html
    assert '<option value="DE">Germany (DE)</option>' in html
    assert '<option value="GE">Georgia (GE)</option>' in html
    assert '<option value="" selected>none</option>' in html
    # by name, accents aside: the Åland Islands among the A's
    labels = [label for _, label in country_choices(blank=None)]
    assert labels.index("Åland Islands (AX)") < labels.index("Albania (AL)")


def test_admin_saves_a_country_typed_by_name_as_its_code(admin_client: Any) -> None:
    response = add_hosted(admin_client, "web_search", {"country": "germany"})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert HostedToolDefinition.objects.get().config["country"] == "DE"


def test_a_stored_lower_case_country_is_shown_selected(admin_client: Any) -> None:
    tool = HostedToolDefinitionFactory.create(
        kind="web_search", config={"country": "gb"}
    )
    url = reverse("admin:tooling_hostedtooldefinition_change", args=[tool.pk])
    html = admin_client.get(url).content.decode()
    assert '<option value="GB" selected>United Kingdom (GB)</option>' in html


def test_runtime_refuses_a_country_name_naming_its_code() -> None:
    with pytest.raises(PromptValidationError) as refused:
        GeoHint(country_code="Germany")
    assert refused.value.message == (
        "'Germany' is not an ISO 3166-1 alpha-2 country code; Germany is 'DE'."
    )
    assert refused.value.placeholder == "country_code"


def test_a_stored_config_with_a_country_name_is_refused_when_built() -> None:
    tool = HostedToolDefinition(
        name="search", kind="web_search", config={"country": "Germany"}
    )
    with pytest.raises(PromptValidationError, match="Germany is 'DE'"):
        assembly.build_hosted_tool(tool)


# -- every error at once ----------------------------------------------------------


def test_hosted_form_reports_every_mistake_at_once() -> None:
    bound = hosted_form(
        {
            "name": "Bad Name",
            "country": "Germania",
            "timezone": "Mars/Olympus",
            "allowed_domains": "https://docs.python.org",
            "search_context_size": "huge",
        }
    )
    assert not bound.is_valid()
    assert set(bound.errors) == {
        "name",
        "country",
        "timezone",
        "allowed_domains",
        "search_context_size",
    }
    assert "must match ^[a-z0-9_-]{1,64}$" in bound.errors["name"][0]
    assert "is not an IANA timezone" in bound.errors["timezone"][0]
    assert "without a scheme" in bound.errors["allowed_domains"][0]


def test_hosted_admin_page_shows_every_mistake_at_once(admin_client: Any) -> None:
    response = add_hosted(
        admin_client,
        "web_search",
        {"country": "Germania", "timezone": "Mars/Olympus", "region": "x" * 101},
        name="Bad Name",
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert set(errors) == {"name", "country", "timezone", "region"}
    assert HostedToolDefinition.objects.count() == 0


def test_tool_form_reports_the_runtime_and_the_description_errors_together() -> None:
    bound = ToolDefinitionForm(
        data={
            "name": "Bad Name",
            "handler_key": "demo.count_words",
            "param_descriptions": json.dumps({"txt": "The text.", "text": ""}),
            "examples": "[]",
        }
    )
    assert not bound.is_valid()
    assert "must match" in bound.errors["name"][0]
    assert bound.errors["param_descriptions"] == [
        "Unknown parameter(s): txt; the handler takes: text.",
        "Description of 'text' must be 1-200 ASCII characters.",
    ]


def test_tool_form_reports_a_refused_name_and_description_together() -> None:
    """The runtime stops at the name; the description is built with a stand-in
    name and its own error shown in the same submit."""
    bound = ToolDefinitionForm(
        data={
            "name": "Bad Name!",
            "handler_key": "demo.count_words",
            "description": "d\u00e9j\u00e0",
            "examples": "[]",
        }
    )
    assert not bound.is_valid()
    assert {"name", "description"} <= set(bound.errors), bound.errors


# -- JSON --------------------------------------------------------------------------


def test_bad_json_names_its_line_and_column() -> None:
    bound = PolicyDefinitionForm(
        data={
            "name": "order",
            "kind": PolicyDefinition.Kind.SEQUENTIAL_DEPENDENCY,
            "config": '{\n  "dependencies": {\n    "deploy": ["build"]\n    "x": []\n}',
        }
    )
    assert not bound.is_valid()
    assert bound.errors["config"] == [
        "Enter valid JSON: Expecting ',' delimiter at line 4, column 5."
    ]


def test_bad_json_is_shown_again_as_typed(admin_client: Any) -> None:
    typed = '{"dependencies": {"deploy": ["build",]}}'
    response = admin_client.post(
        reverse("admin:tooling_policydefinition_add"),
        {
            "name": "order",
            "kind": PolicyDefinition.Kind.SEQUENTIAL_DEPENDENCY,
            "config": typed,
        },
    )
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert form["config"].value() == typed
    html = response.content.decode()
    assert "Enter valid JSON: Expecting value at line 1, column 38." in html
    assert "{&quot;dependencies&quot;: {&quot;deploy&quot;: [&quot;build&quot;,]}}" in (
        html
    )
    assert not PolicyDefinition.objects.exists()


def test_json_is_shown_indented(admin_client: Any) -> None:
    policy = PolicyDefinition.objects.create(
        name="order",
        kind=PolicyDefinition.Kind.SEQUENTIAL_DEPENDENCY,
        config={"dependencies": {"deploy": ["build"]}},
    )
    url = reverse("admin:tooling_policydefinition_change", args=[policy.pk])
    form = admin_client.get(url).context["adminform"].form
    shown = form["config"].value()
    assert shown == json.dumps(policy.config, indent=2)
    assert 'rows="8"' in str(form["config"])


def test_an_indented_json_edit_saves_unchanged_values(admin_client: Any) -> None:
    policy = PolicyDefinition.objects.create(
        name="order",
        kind=PolicyDefinition.Kind.SEQUENTIAL_DEPENDENCY,
        config={"dependencies": {"deploy": ["build"]}},
    )
    url = reverse("admin:tooling_policydefinition_change", args=[policy.pk])
    response = admin_client.post(url, change_form_data(admin_client, url))
    assert response.status_code == 302
    policy.refresh_from_db()
    assert policy.config == {"dependencies": {"deploy": ["build"]}}


# -- the handler's parameters ------------------------------------------------------


def test_handler_parameters_name_type_description_and_whether_required() -> None:
    [text] = handler_parameters(registry.get("demo.count_words"))
    assert (text.name, text.type, text.required) == ("text", "string", True)
    assert text.description == "The text whose words to count."
    [environment] = handler_parameters(registry.get("demo.deploy"))
    assert environment.type == "one of: staging, production"
    assert environment.required is False


def test_tool_form_shows_the_chosen_handlers_parameters(admin_client: Any) -> None:
    tool = ToolDefinitionFactory.create(
        name="count_words", handler_key="demo.count_words"
    )
    url = reverse("admin:tooling_tooldefinition_change", args=[tool.pk])
    html = admin_client.get(url).content.decode()
    shown = html.split('data-handler="demo.count_words">', 1)[1].split("</div>")[0]
    assert "<td><code>text</code></td><td>string</td><td>required</td>" in shown
    assert "The text whose words to count." in shown
    # the others' are there for the script, hidden
    assert 'data-handler="demo.deploy" hidden>' in html
    assert "tooling/handler_params.js" in html


def test_tool_add_form_asks_for_a_handler_first(admin_client: Any) -> None:
    html = admin_client.get(reverse("admin:tooling_tooldefinition_add")).content
    assert b"Pick a handler to see the parameters it takes." in html


# -- the model ------------------------------------------------------------------------


def price(model: str) -> ModelPrice:
    return ModelPrice.objects.create(
        model=model,
        effective_from=date(2026, 1, 1),
        input_per_mtok=Decimal(1),
        cached_input_per_mtok=Decimal("0.1"),
        output_per_mtok=Decimal(8),
    )


def test_model_field_suggests_the_capability_and_price_tables(
    admin_client: Any,
) -> None:
    price("acme-priced")
    ModelCapability.objects.create(model="acme-capable", hosted_kinds=[])
    page = admin_client.get(reverse("admin:tooling_prompttemplate_add")).content
    html = page.decode()
    assert 'list="id_model_suggestions"' in html
    suggestions = html.split('<datalist id="id_model_suggestions">', 1)[1]
    suggestions = suggestions.split("</datalist>", 1)[0]
    assert '<option value="acme-capable"></option>' in suggestions
    assert '<option value="acme-priced"></option>' in suggestions


def test_model_warnings_for_an_unknown_model_suggest_the_closest() -> None:
    price("gpt-5.4")
    [warning] = model_warnings("gtp-5.4")
    assert warning == (
        "Model 'gtp-5.4' is in neither the model capability table nor the price "
        "list: check its spelling (the provider refuses an unknown model when the "
        "prompt runs; its runs are not priced). Did you mean 'gpt-5.4'?"
    )


def test_model_warnings_none_for_a_priced_snapshot_without_hosted_tools() -> None:
    price("gpt-5")
    assert model_warnings("gpt-5-2025-08-07") == []


def test_model_warnings_when_hosted_tools_meet_a_model_of_unknown_capability() -> None:
    price("gpt-5")
    assert model_warnings("gpt-5", ["web_search"]) == [
        "Model 'gpt-5' has no row in the model capability table, so the hosted "
        "tools this prompt offers (web_search) are not checked against what it "
        "supports: add its row to have them checked."
    ]
    ModelCapability.objects.create(model="gpt-5", hosted_kinds=["web_search"])
    assert model_warnings("gpt-5", ["web_search"]) == []


def test_prompt_with_an_unknown_model_is_saved_with_a_warning(
    admin_client: Any,
) -> None:
    price("gpt-5.4")
    hosted = HostedToolDefinitionFactory.create(kind="web_search", config={})
    section = SectionDefinitionFactory.create()
    SectionHostedTool.objects.create(section=section, hosted_tool=hosted, position=0)
    prompt = PromptTemplateFactory.create(model="gpt-5.4")
    add_sections(prompt, section)
    url = reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
    data = change_form_data(admin_client, url)
    data["model"] = "gtp-5.4"
    response = admin_client.post(url, data)
    assert response.status_code == 302
    prompt.refresh_from_db()
    assert prompt.model == "gtp-5.4"
    shown = [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]
    warnings = [text for level, text in shown if level == "warning"]
    assert warnings == [
        "Model 'gtp-5.4' is in neither the model capability table nor the price "
        "list: check its spelling (the provider refuses an unknown model when the "
        "prompt runs; its runs are not priced). Did you mean 'gpt-5.4'?",
        "Model 'gtp-5.4' has no row in the model capability table, so the hosted "
        "tools this prompt offers (web_search) are not checked against what it "
        "supports: add its row to have them checked.",
    ]
    assert any(level == "success" for level, _ in shown)


def test_prompt_with_a_known_model_is_saved_without_a_warning(
    admin_client: Any,
) -> None:
    price("gpt-5.4")
    prompt = PromptTemplateFactory.create(model="gpt-5.4")
    add_sections(prompt, SectionDefinitionFactory.create())
    url = reverse("admin:tooling_prompttemplate_change", args=[prompt.pk])
    response = admin_client.post(url, change_form_data(admin_client, url))
    assert response.status_code == 302
    levels = [m.level_tag for m in get_messages(response.wsgi_request)]
    assert levels == ["success"]


def test_section_form_reports_the_template_and_other_fields_together() -> None:
    bound = SectionDefinitionForm(
        data={
            "key": "answer",
            "title": "Answer",
            "template": "Answer $question.",
            "default_params": "{}",
            "position": "first",
            "enabled": "on",
        }
    )
    assert not bound.is_valid()
    assert set(bound.errors) == {"template", "position"}
    assert "question" in bound.errors["template"][0]


@pytest.mark.parametrize(
    ("data", "fields"),
    [
        # a field refused by its own validation does not hide the runtime's
        ({"key": "Bad Key!", "title": "t" * 300}, {"key", "title"}),
        ({"key": "Bad Key!", "default_params": "{bad"}, {"key", "default_params"}),
        # the runtime's errors, one after the other, in one submit
        ({"key": "Bad Key!", "template": "Hello ${name}"}, {"key", "template"}),
        (
            {"key": "Bad Key!", "enabled_when_param": "1x", "template": "Hi $x."},
            {"key", "enabled_when_param", "template"},
        ),
    ],
    ids=["title-length", "bad-json", "placeholder", "three"],
)
def test_section_form_reports_every_error_at_once(
    data: dict[str, str], fields: set[str]
) -> None:
    bound = SectionDefinitionForm(
        data={
            "title": "Answer",
            "template": "Answer.",
            "default_params": "{}",
            "position": "0",
            "enabled": "on",
            **data,
        }
    )
    assert not bound.is_valid()
    assert set(bound.errors) == fields, bound.errors


def test_policy_form_checks_the_config_when_the_name_is_refused() -> None:
    bound = PolicyDefinitionForm(
        data={
            "name": "",
            "kind": PolicyDefinition.Kind.CALL_LIMIT,
            "config": '{"limit": {"deploy": 1}}',
        }
    )
    assert not bound.is_valid()
    assert bound.errors["name"] == ["This field is required."]
    assert bound.errors["config"] == ["Unknown call limit option(s): limit."]


def test_capability_form_suggests_the_priced_models(admin_client: Any) -> None:
    price("acme-priced")
    page = admin_client.get(reverse("admin:tooling_modelcapability_add")).content
    assert b'<option value="acme-priced"></option>' in page
    assert b'list="id_model_suggestions"' in page


def test_mcp_form_reports_unreadable_headers_and_a_bad_url_together() -> None:
    bound = HostedToolDefinitionForm(
        data={
            "name": "docs",
            "kind": "mcp",
            "description": "D.",
            "server_label": "docs",
            "server_url": "ftp://mcp.example.com",
            "header_env": "Authorization",
        }
    )
    assert not bound.is_valid()
    assert set(bound.errors) == {"server_url", "header_env"}, bound.errors
    assert bound.errors["header_env"] == [
        "Write 'Authorization' as Header-Name=ENV_VAR, for example "
        "Authorization=DEEPWIKI_MCP_AUTH."
    ]


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("https://mcp.example.com/sse?access_token=S3CRET&x=1", "access_token"),
        ("https://mcp.example.com/sse?api_key=K&Signature=s", "Signature, api_key"),
        ("https://mcp.example.com/sse?password=", "password"),
        (
            "https://mcp.example.com/sse?sig=abc&X-Amz-Signature=d",
            "X-Amz-Signature, sig",
        ),
        ("https://mcp.example.com/sse?client_secret=s&key=k", "client_secret, key"),
        # found by a hostile review: a path parameter, a fragment, an access
        # key, full-width letters
        ("https://mcp.example.com/mcp;token=S3CRET", "token"),
        ("https://mcp.example.com/a;v=1/mcp;x=1;Password=p", "Password"),
        ("https://mcp.example.com/mcp#access_token=S3CRET", "access_token"),
        ("https://mcp.example.com/mcp?access_key=AKIA", "access_key"),
        ("https://mcp.example.com/mcp?AWSAccessKeyId=AKIA", "AWSAccessKeyId"),
        (
            "https://mcp.example.com/mcp?\uff54\uff4f\uff4b\uff45\uff4e=S3CRET",
            "\uff54\uff4f\uff4b\uff45\uff4e",
        ),
    ],
)
def test_mcp_form_refuses_a_credential_in_the_url_query(url: str, named: str) -> None:
    """A URL is shown wherever the tool is (the preview, the session, the
    revision, the history); headers are masked, a URL is not."""
    bound = HostedToolDefinitionForm(
        data={
            "name": "docs",
            "kind": "mcp",
            "description": "D.",
            "server_label": "docs",
            "server_url": url,
            "require_approval": "never",
        }
    )
    assert not bound.is_valid()
    (error,) = bound.errors["server_url"]
    assert str(error).startswith(
        "server_url must not carry credentials in its query, path or fragment "
        f"({named})"
    )
    assert "S3CRET" not in error


@pytest.mark.parametrize(
    "query",
    [
        "region=eu&v=2",
        "keyspace=a",
        "author=me",
        "sort_key=x",
        "tokenizer=bpe",
        "passage=1",
        "oauth_provider=github",
        "apikey-free=1",
        "sort_key=x#section",
        "v=1#tokens",  # a fragment that names no parameter
        "v=1#code",  # an anchor, not a parameter
    ],
)
def test_mcp_form_takes_a_url_whose_query_names_no_credential(query: str) -> None:
    bound = HostedToolDefinitionForm(
        data={
            "name": "docs",
            "kind": "mcp",
            "description": "D.",
            "server_label": "docs",
            "server_url": f"https://mcp.example.com/sse?{query}",
            "require_approval": "never",
        }
    )
    assert bound.is_valid(), bound.errors


def test_no_name_a_country_is_found_by_names_another() -> None:
    """Every name of every code (ISO's, the official, the common ones), as
    compared (case and accents aside), names that code alone."""
    from tooling.runtime.hosted.countries import (
        ALPHA3,
        COMMON_NAMES,
        OTHER_NAMES,
        _key,
    )

    for code, name in COUNTRY_NAMES.items():
        names = (name, ALPHA3[code], *OTHER_NAMES.get(code, ()))
        for text in (*names, *COMMON_NAMES.get(code, ())):
            assert country_code(text) == code, (text, code, _key(text))


@pytest.mark.parametrize(
    "template", ["It costs $5 a month.", "Pay in $", "B says ${y"], ids=repr
)
def test_section_form_reports_a_dollar_that_is_no_placeholder(template: str) -> None:
    # it was a 500: placing the error re-read the template's placeholders
    bound = SectionDefinitionForm(
        data={
            "key": "price",
            "title": "Price",
            "template": template,
            "default_params": "{}",
            "position": "1",
            "enabled": "on",
        }
    )
    assert not bound.is_valid()
    assert "$$ for a literal dollar sign" in bound.errors["template"][0]


@pytest.mark.parametrize("typed", ["", "null"], ids=repr)
def test_section_form_reads_empty_default_params_as_none_declared(typed: str) -> None:
    bound = SectionDefinitionForm(
        data={
            "key": "plain",
            "title": "Plain",
            "template": "plain",
            "default_params": typed,
            "position": "1",
            "enabled": "on",
        }
    )
    assert bound.is_valid(), bound.errors
    section = bound.save()  # it was a 500: NOT NULL constraint failed
    section.refresh_from_db()
    assert section.default_params == {}


@pytest.mark.parametrize("typed", ["[]", "[1]", '"x"', "5"])
def test_section_form_refuses_default_params_that_are_no_object(typed: str) -> None:
    bound = SectionDefinitionForm(
        data={
            "key": "plain",
            "title": "Plain",
            "template": "plain",
            "default_params": typed,
            "position": "1",
            "enabled": "on",
        }
    )
    assert not bound.is_valid()
    assert bound.errors["default_params"] == [
        'Default params must be a JSON object, e.g. {"name": "default"} '
        "(empty: no parameters)."
    ]


def test_prompt_form_refuses_zero_limits_saying_what_they_mean() -> None:
    # a deadline of 0 was saved and the run got the 900 s default; a turn
    # limit of 0 said 'Constraint "max_turns_gte_1" is violated.'
    bound = PromptTemplateForm(
        data={
            "namespace": "tests",
            "key": "limits",
            "model": "gpt-5.4",
            "tool_choice": "auto",
            "deadline_seconds": "0",
            "max_total_tokens": "0",
            "max_turns": "0",
            "hosted_tool_limits": "{}",
        }
    )

    assert not bound.is_valid()
    assert bound.errors["deadline_seconds"] == [
        "A run's deadline is at least 1 second (empty: the default)."
    ]
    assert bound.errors["max_total_tokens"] == [
        "A token limit is at least 1 (empty: no limit)."
    ]
    assert bound.errors["max_turns"] == ["A run needs at least one turn."]


@pytest.mark.parametrize(
    ("kind", "fields", "field"),
    [
        ("web_search", {"city": "B\u202eerlin"}, "city"),
        ("file_search", {"vector_store_ids": "vs_1\u202e"}, "vector_store_ids"),
        (
            "mcp",
            {
                "server_label": "docs",
                "server_url": "https://ex.com/\u202e",
                "server_description": "x\u2066",
            },
            "server_description",
        ),
    ],
)
def test_hosted_text_options_refuse_bidi_controls(
    kind: str, fields: dict[str, str], field: str
) -> None:
    # saved as typed, as the function tool and policy forms refuse it
    bound = HostedToolDefinitionForm(
        data={"name": "tool", "kind": kind, "description": "D.", **fields}
    )
    assert not bound.is_valid()
    assert str(bound.errors[field][0]).startswith(
        "Must not contain bidirectional control characters (U+"
    )


def test_a_policy_name_refuses_bidi_controls() -> None:
    bound = PolicyDefinitionForm(
        data={
            "name": "production-deploy\u202e",
            "kind": PolicyDefinition.Kind.CALL_LIMIT,
            "config": '{"limits": {"deploy": 1}}',
        }
    )
    assert not bound.is_valid()
    assert bound.errors["name"] == [
        "Must not contain bidirectional control characters (U+202E)."
    ]


def test_a_capability_row_that_would_break_prompts_is_refused_naming_them(
    admin_client: Any,
) -> None:
    """demo/research uses web_search on its model: a row allowing that model
    no hosted tool would leave its draft unable to run; refused, naming it. A
    row that allows what the prompts use is saved."""
    from tooling.demo import seed_demo_catalog

    seed_demo_catalog()
    research = PromptTemplate.objects.get(namespace="demo", key="research")
    url = reverse("admin:tooling_modelcapability_add")

    refused = admin_client.post(url, {"model": research.model, "hosted_kinds": "[]"})

    assert refused.status_code == 200
    errors = refused.context["adminform"].form.non_field_errors()
    assert any(
        error.startswith("This row would break prompt 'demo/research'")
        for error in errors
    ), errors
    assert not ModelCapability.objects.filter(model=research.model).exists()

    kinds = sorted(hosted_kind_names())
    saved = admin_client.post(
        url, {"model": research.model, "hosted_kinds": json.dumps(kinds)}
    )
    assert saved.status_code == 302
    assert ModelCapability.objects.get(model=research.model).hosted_kinds == kinds


@pytest.mark.parametrize(
    ("key", "shown"),
    [
        ("sk-proj-AbCdEfGhIjKlMnOpQrStUvWx123456", "sk-proj"),
        ("sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg", "sk-ant-"),
        ("ghp_" + "aB1" * 12, "ghp_aB1"),
        ("hf_" + "Xy7" * 11, "hf_Xy7X"),
        ("glpat-Ab12Cd34Ef56Gh78Ij90", "glpat-A"),
        ("xoxb-1234567890-abcdefghij", "xoxb-12"),
        ("AKIA" + "ABCDEFGHIJKLMNOP", "AKIAABC"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.c2lnbmF0dXJlLXZhbHVl", "eyJhbGc"),
    ],
)
def test_mcp_form_refuses_a_key_in_the_url_by_its_shape(key: str, shown: str) -> None:
    """A key in a path segment (``/sk-proj-.../mcp``) was saved and shown
    on every page that shows the tool, though the message said the path is
    checked (found by hostile QA): a key is known by its issuer's prefix
    wherever it sits, and the refusal shows its first characters only."""
    encoded = "%" + format(ord(key[0]), "02x") + key[1:]
    for url in (
        f"https://mcp.example.com/{key}/mcp",
        f"https://mcp.example.com/mcp?v={key}",
        f"https://mcp.example.com/mcp#{key}",
        f"https://mcp.example.com/mcp?x=Bearer%20{key}",
        f"https://mcp.example.com/{encoded}/mcp",  # percent-encoded
    ):
        bound = HostedToolDefinitionForm(
            data={
                "name": "docs",
                "kind": "mcp",
                "description": "D.",
                "server_label": "docs",
                "server_url": url,
                "require_approval": "never",
            }
        )
        assert not bound.is_valid()
        (error,) = bound.errors["server_url"]
        assert f"({shown}\u2026)" in error, error
        assert key[8:] not in error


def test_a_url_with_words_like_a_keys_prefix_is_not_refused() -> None:
    from tooling.runtime.hosted.mcp_url import credential_shapes

    for url in (
        "https://mcp.example.com/desk-assistant-server-for-the-team/mcp",
        "https://mcp.example.com/sk-short/mcp",
        "https://mcp.example.com/tasks/AKIA/mcp",
        # words after a key's prefix (found by a hostile review)
        "https://mcp.example.com/sk-learn-documentation-server/mcp",
        "https://mcp.example.com/docs/sk-hynix-memory-product-catalog",
        "https://mcp.example.com/sk-telecom-customer-support-v2/mcp",
        "https://mcp.example.com/xoxb-integration-bridge/mcp",
        "https://mcp.example.com/hf_datasets_mirror_for_the_research_team/mcp",
    ):
        assert credential_shapes(url) == [], url


def test_a_bare_anchor_or_path_flag_names_no_credential() -> None:
    from tooling.runtime.hosted.mcp_url import credential_query_names

    assert credential_query_names("https://mcp.example.com/sse;key/x#code") == []
    assert credential_query_names("https://mcp.example.com/sse;key=k#code=c") == [
        "code",
        "key",
    ]
