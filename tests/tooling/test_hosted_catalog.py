"""Every hosted kind is configurable in the admin with typed fields, validated by
building the runtime config; the preview shows its exact wire JSON; a run
records its native call. MCP header values live only in the environment."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils.html import escape

from sessions_app import services as session_services
from sessions_app.models import AgentSession, ProviderCall, ToolInvocation
from tests.tooling.factories import (
    HostedToolDefinitionFactory,
    SectionDefinitionFactory,
)
from tests.tooling.hosted_admin import add_hosted, prompt_with
from tooling import assembly, services
from tooling.models import (
    HostedToolDefinition,
    ModelCapability,
    PromptTemplate,
    SectionHostedTool,
)
from tooling.offline import MARKER_MCP_ERROR, MARKER_SEARCH_FAILS
from tooling.runtime import PromptValidationError

pytestmark = pytest.mark.django_db

SECRET = "Bearer s3cr3t-mcp-token-0042"
AUTH_VAR = "WINK_MCP_TEST_AUTH"
UNSET_VAR = "WINK_MCP_TEST_UNSET"


@pytest.fixture(autouse=True)
def _offline(settings, monkeypatch):
    settings.WINK_PROVIDER = "offline"
    monkeypatch.setenv(AUTH_VAR, SECRET)
    monkeypatch.delenv(UNSET_VAR, raising=False)


def _preview(admin_client, prompt: PromptTemplate):
    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk]),
        {"params": "{}"},
    )
    assert response.status_code == 200
    return response


FILTERS = {
    "type": "and",
    "filters": [
        {"type": "eq", "key": "tenant", "value": "acme"},
        {"type": "in", "key": "doc_type", "value": ["policy", "faq"]},
    ],
}

# kind -> (typed admin input, stored config, wire JSON shown by the preview)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "web_search": (
        {
            "allowed_domains": "docs.python.org\nwww.djangoproject.com",
            "country": "DE",
            "city": "Berlin",
            "timezone": "Europe/Berlin",
            "search_context_size": "low",
            "allow_live_access": "on",
        },
        {
            "allowed_domains": ["docs.python.org", "www.djangoproject.com"],
            "allow_live_access": True,
            "country": "DE",
            "city": "Berlin",
            "timezone": "Europe/Berlin",
            "search_context_size": "low",
        },
        {
            "type": "web_search",
            "filters": {
                "allowed_domains": ["docs.python.org", "www.djangoproject.com"]
            },
            "user_location": {
                "type": "approximate",
                "country": "DE",
                "city": "Berlin",
                "timezone": "Europe/Berlin",
            },
            "search_context_size": "low",
        },
    ),
    "file_search": (
        {
            "vector_store_ids": "vs_123\nvs_456",
            "max_results": "8",
            "filters": json.dumps(FILTERS),
            "ranker": "auto",
            "score_threshold": "0.3",
            "embedding_weight": "0.7",
            "text_weight": "0.3",
        },
        {
            "vector_store_ids": ["vs_123", "vs_456"],
            "max_results": 8,
            "filters": FILTERS,
            "ranker": "auto",
            "score_threshold": 0.3,
            "embedding_weight": 0.7,
            "text_weight": 0.3,
        },
        {
            "type": "file_search",
            "vector_store_ids": ["vs_123", "vs_456"],
            "max_num_results": 8,
            "filters": FILTERS,
            "ranking_options": {
                "ranker": "auto",
                "score_threshold": 0.3,
                "hybrid_search": {"embedding_weight": 0.7, "text_weight": 0.3},
            },
        },
    ),
    "code_interpreter": (
        {"memory_limit": "4g", "file_ids": "file-abc\nfile-def"},
        {"memory_limit": "4g", "file_ids": ["file-abc", "file-def"]},
        {
            "type": "code_interpreter",
            "container": {
                "type": "auto",
                "memory_limit": "4g",
                "file_ids": ["file-abc", "file-def"],
            },
        },
    ),
    "image_generation": (
        {
            "size": "1024x1536",
            "quality": "low",
            "output_format": "webp",
            "background": "transparent",
            "image_model": "gpt-image-1",
            "output_compression": "80",
            "moderation": "low",
            "action": "generate",
            "partial_images": "0",
        },
        {
            "size": "1024x1536",
            "quality": "low",
            "output_format": "webp",
            "background": "transparent",
            "model": "gpt-image-1",
            "output_compression": 80,
            "moderation": "low",
            "action": "generate",
            "partial_images": 0,
        },
        {
            "type": "image_generation",
            "size": "1024x1536",
            "quality": "low",
            "output_format": "webp",
            "background": "transparent",
            "model": "gpt-image-1",
            "output_compression": 80,
            "moderation": "low",
            "action": "generate",
            "partial_images": 0,
        },
    ),
    "mcp": (
        {
            "server_label": "deepwiki",
            "server_url": "https://mcp.deepwiki.com/mcp",
            "allowed_tools": "ask_question\nread_wiki",
            "require_approval": "never",
            "server_description": "Docs of public repositories",
            "header_env": f"Authorization={AUTH_VAR}",
        },
        {
            "server_label": "deepwiki",
            "server_url": "https://mcp.deepwiki.com/mcp",
            "allowed_tools": ["ask_question", "read_wiki"],
            "require_approval": "never",
            "server_description": "Docs of public repositories",
            "header_env": {"Authorization": AUTH_VAR},
        },
        {
            "type": "mcp",
            "server_label": "deepwiki",
            "server_url": "https://mcp.deepwiki.com/mcp",
            "allowed_tools": ["ask_question", "read_wiki"],
            "require_approval": "never",
            "headers": {"Authorization": "[redacted]"},
            "server_description": "Docs of public repositories",
        },
    ),
}


# -- typed add forms ------------------------------------------------------------


@pytest.mark.parametrize("kind", list(CASES))
def test_typed_admin_input_saves_config_and_preview_shows_wire_json(admin_client, kind):
    fields, config, wire = CASES[kind]

    response = add_hosted(admin_client, kind, fields)

    assert response.status_code == 302, response.content.decode()[-3000:]
    definition = HostedToolDefinition.objects.get()
    assert definition.kind == kind
    assert definition.config == config
    preview = _preview(admin_client, prompt_with(definition))
    assert not preview.context["errors"]
    request_json = preview.context["request_json"]
    assert json.loads(request_json)["tools"] == [wire]
    assert escape(request_json) in preview.content.decode()


def test_code_interpreter_with_an_existing_container(admin_client):
    response = add_hosted(
        admin_client, "code_interpreter", {"container_id": " cntr_42 "}
    )

    assert response.status_code == 302
    definition = HostedToolDefinition.objects.get()
    assert definition.config == {"container_id": "cntr_42"}
    preview = _preview(admin_client, prompt_with(definition))
    assert json.loads(preview.context["request_json"])["tools"] == [
        {"type": "code_interpreter", "container": "cntr_42"}
    ]


def test_only_the_chosen_kinds_fields_are_used(admin_client):
    response = add_hosted(
        admin_client,
        "code_interpreter",
        {
            "memory_limit": "1g",
            "vector_store_ids": "vs_1",
            "max_results": "not a number",
            "server_url": "ftp://x",
            "allowed_domains": "https://bad.example",
        },
    )

    assert response.status_code == 302, response.content.decode()[-3000:]
    assert HostedToolDefinition.objects.get().config == {"memory_limit": "1g"}


@pytest.mark.parametrize("kind", list(CASES))
def test_change_form_loads_the_typed_fields_back(admin_client, kind):
    fields, config, _wire = CASES[kind]
    definition = HostedToolDefinitionFactory.create(kind=kind, config=config)
    url = reverse("admin:tooling_hostedtooldefinition_change", args=[definition.pk])

    form = admin_client.get(url).context["adminform"].form
    for name, value in fields.items():
        shown = form[name].value()
        if name == "filters":
            assert json.loads(shown) == json.loads(value)
        elif name == "allow_live_access":
            assert shown is True
        else:
            assert str(shown) == value, name

    # Saving the unchanged form keeps the same config.
    response = admin_client.post(
        url,
        {
            "name": definition.name,
            "kind": kind,
            "description": definition.description,
            "enabled": "on",
            "catalog_version": form["catalog_version"].value(),
            **fields,
        },
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    definition.refresh_from_db()
    assert definition.config == config


# -- refused input ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "fields", "field", "message"),
    [
        (
            "file_search",
            {"vector_store_ids": "vs_1", "max_results": "0"},
            "max_results",
            "max_results must be an integer from 1 to 50 (got 0).",
        ),
        (
            "file_search",
            {"vector_store_ids": "vs_1", "max_results": "51"},
            "max_results",
            "max_results must be an integer from 1 to 50 (got 51).",
        ),
        (
            "file_search",
            {"vector_store_ids": "vs_1", "score_threshold": "2"},
            "score_threshold",
            "score_threshold must be a number from 0 to 1 (got 2.0).",
        ),
        (
            "file_search",
            {"vector_store_ids": ""},
            "vector_store_ids",
            "file_search needs at least one vector store id.",
        ),
        (
            "file_search",
            {"vector_store_ids": "vs_1", "embedding_weight": "0.5"},
            "embedding_weight",
            "Hybrid search needs both embedding_weight and text_weight",
        ),
        (
            "file_search",
            {"vector_store_ids": "vs_1", "filters": '{"type": "like", "key": "a"}'},
            "filters",
            "filters.type: 'like' is neither a comparison operator",
        ),
        (
            "code_interpreter",
            {"container_id": "cntr_1", "memory_limit": "4g", "file_ids": "file-1"},
            "memory_limit",
            "container_id 'cntr_1' names an existing container, so memory_limit "
            "and file_ids cannot be set",
        ),
        (
            "image_generation",
            {"size": "big"},
            "size",
            "size 'big' must be 'auto' or WIDTHxHEIGHT",
        ),
        (
            "image_generation",
            {"output_compression": "101"},
            "output_compression",
            "output_compression must be an integer from 0 to 100 (got 101).",
        ),
        (
            "image_generation",
            {"background": "transparent", "output_format": "jpeg"},
            "background",
            "A transparent background needs output_format 'png' or 'webp'",
        ),
        (
            "mcp",
            {"server_label": "docs", "server_url": "ftp://x"},
            "server_url",
            "server_url 'ftp://x' must be an https:// (or http://) URL with a host",
        ),
        (
            "mcp",
            {"server_label": "bad label", "server_url": "https://mcp.example.com"},
            "server_label",
            "server_label 'bad label' must match",
        ),
        (
            "mcp",
            {
                "server_label": "docs",
                "server_url": "https://mcp.example.com",
                "header_env": f"Authorization={UNSET_VAR}",
            },
            "header_env",
            f"MCP header 'Authorization' reads environment variable '{UNSET_VAR}', "
            "which is not set.",
        ),
        (
            "mcp",
            {
                "server_label": "docs",
                "server_url": "https://mcp.example.com",
                "header_env": "Authorization=my_token",
            },
            "header_env",
            "needs an environment variable name matching ^[A-Z_][A-Z0-9_]*$",
        ),
        (
            "mcp",
            {
                "server_label": "docs",
                "server_url": "https://mcp.example.com",
                "header_env": "Authorization=SECRET_KEY",
            },
            "header_env",
            "cannot read 'SECRET_KEY': MCP headers read only the environment "
            "variables the operator allowed (names starting with WINK_MCP_;",
        ),
        (
            "mcp",
            {
                "server_label": "docs",
                "server_url": "https://mcp.example.com",
                "header_env": f"Bad Header={AUTH_VAR}",
            },
            "header_env",
            "Header name 'Bad Header' is not a valid HTTP header name.",
        ),
        (
            "mcp",
            {
                "server_label": "docs",
                "server_url": "https://mcp.example.com",
                "header_env": SECRET,
            },
            "header_env",
            "as Header-Name=ENV_VAR",
        ),
    ],
)
def test_invalid_typed_input_is_refused_with_the_runtime_message(
    admin_client, kind, fields, field, message
):
    response = add_hosted(admin_client, kind, fields)

    assert response.status_code == 200, "the form should be shown again"
    form = response.context["adminform"].form
    assert any(message in error for error in form.errors.get(field, [])), form.errors
    assert escape(message) in response.content.decode()
    assert not HostedToolDefinition.objects.exists()


def test_stored_headers_are_refused_by_assembly():
    definition = HostedToolDefinition(
        name="docs",
        kind="mcp",
        description="Docs.",
        config={
            "server_label": "docs",
            "server_url": "https://mcp.example.com",
            "headers": {"Authorization": SECRET},
        },
    )

    with pytest.raises(PromptValidationError) as caught:
        assembly.build_hosted_tool(definition)

    assert "never stored in the catalog" in caught.value.message
    assert SECRET not in caught.value.message


def test_unknown_config_option_is_refused_by_assembly():
    definition = HostedToolDefinition(
        name="files",
        kind="file_search",
        description="Files.",
        config={"vector_store_ids": ["vs_1"], "max_num_results": 3},
    )

    with pytest.raises(PromptValidationError, match="Unknown file_search option"):
        assembly.build_hosted_tool(definition)


# -- MCP secrets ----------------------------------------------------------------


def _mcp_definition(**config: Any) -> HostedToolDefinition:
    return HostedToolDefinitionFactory.create(
        name="deepwiki",
        kind="mcp",
        description="Ask about public repositories.",
        config={
            "server_label": "deepwiki",
            "server_url": "https://mcp.deepwiki.com/mcp",
            "allowed_tools": ["ask_question"],
            "header_env": {"Authorization": AUTH_VAR},
            **config,
        },
    )


def test_mcp_header_value_is_sent_but_never_stored_or_shown(admin_client):
    add_hosted(admin_client, "mcp", CASES["mcp"][0], name="deepwiki")
    definition = HostedToolDefinition.objects.get()
    prompt = prompt_with(definition)

    change = admin_client.get(
        reverse("admin:tooling_hostedtooldefinition_change", args=[definition.pk])
    )
    preview = _preview(admin_client, prompt)
    sent = services.preview_prompt(template=prompt).request["tools"]
    session = session_services.start_session(prompt_ref=prompt.ref, params={})

    assert sent[0]["headers"] == {"Authorization": SECRET}  # what the provider gets
    assert SECRET not in json.dumps(definition.config)
    assert SECRET not in change.content.decode()
    assert AUTH_VAR in change.content.decode()
    assert SECRET not in preview.content.decode()
    assert session.status == "succeeded"
    assert session.tools_payload[0]["headers"] == {"Authorization": "[redacted]"}
    assert SECRET not in json.dumps(session.tools_payload)
    assert SECRET not in json.dumps(list(session.provider_calls.values("request")))


def test_mcp_variable_unset_at_run_time_refuses_the_run():
    prompt = prompt_with(_mcp_definition(header_env={"Authorization": UNSET_VAR}))

    with pytest.raises(ValidationError) as caught:
        session_services.start_session(prompt_ref=prompt.ref, params={})

    assert (
        f"MCP header 'Authorization' reads environment variable '{UNSET_VAR}', "
        "which is not set." in " ".join(caught.value.messages)
    )
    assert not AgentSession.objects.exists()
    assert not ProviderCall.objects.exists()


# -- model capabilities -----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            '["web_search", "telepathy"]',
            "Unknown hosted tool kind(s): 'telepathy'; known kinds: web_search, "
            "file_search, code_interpreter, image_generation, mcp, shell, "
            "apply_patch.",
        ),
        ('"web_search"', "Give a JSON list of kind names"),
        ('[1, "mcp"]', "Give a JSON list of kind names"),
    ],
)
def test_model_capability_admin_refuses_unknown_kinds(admin_client, value, message):
    response = admin_client.post(
        reverse("admin:tooling_modelcapability_add"),
        {"model": "gpt-5.4-mini", "hosted_kinds": value},
    )

    assert response.status_code == 200
    assert escape(message) in response.content.decode()
    assert not ModelCapability.objects.exists()


def test_model_capability_admin_saves_known_kinds(admin_client):
    response = admin_client.post(
        reverse("admin:tooling_modelcapability_add"),
        {"model": "gpt-5.4-mini", "hosted_kinds": '["web_search", "mcp", "mcp"]'},
    )

    assert response.status_code == 302
    assert ModelCapability.objects.get().hosted_kinds == ["web_search", "mcp"]


@pytest.mark.parametrize("kind", [k for k in CASES if k != "web_search"])
def test_model_without_the_capability_is_refused_before_any_request(kind):
    ModelCapability.objects.create(model="gpt-5.4", hosted_kinds=["web_search"])
    definition = HostedToolDefinitionFactory.create(kind=kind, config=CASES[kind][1])
    prompt = prompt_with(definition)
    prompt.model = "gpt-5.4"
    prompt.save()

    with pytest.raises(ValidationError) as caught:
        session_services.start_session(prompt_ref=prompt.ref, params={})

    message = " ".join(caught.value.messages)
    assert "Model 'gpt-5.4' does not support hosted tool kind" in message
    assert f"'{kind}'" in message
    assert not ProviderCall.objects.exists()
    assert not AgentSession.objects.exists()


def test_model_with_the_capability_runs():
    ModelCapability.objects.create(model="gpt-5.4", hosted_kinds=["file_search"])
    definition = HostedToolDefinitionFactory.create(
        kind="file_search", config={"vector_store_ids": ["vs_1"]}
    )
    prompt = prompt_with(definition)

    session = session_services.start_session(prompt_ref=prompt.ref, params={})

    assert session.status == "succeeded"


# -- runs against the offline provider -------------------------------------------

RUN_CONFIGS: dict[str, dict[str, Any]] = {
    "web_search": {"allowed_domains": ["docs.python.org"]},
    "file_search": {"vector_store_ids": ["vs_123"], "max_results": 2},
    "code_interpreter": {"memory_limit": "4g"},
    "image_generation": {"size": "1024x1024", "quality": "low"},
    "mcp": {
        "server_label": "deepwiki",
        "server_url": "https://mcp.deepwiki.com/mcp",
        "allowed_tools": ["ask_question"],
        "header_env": {"Authorization": AUTH_VAR},
    },
}


@pytest.mark.parametrize("kind", list(RUN_CONFIGS))
def test_a_run_records_a_native_invocation_per_kind(kind):
    definition = HostedToolDefinitionFactory.create(
        name=f"my_{kind}", kind=kind, config=RUN_CONFIGS[kind]
    )
    prompt = prompt_with(definition, template="Find the refund policy.")

    session = session_services.start_session(prompt_ref=prompt.ref, params={})

    assert session.status == "succeeded", session.error_message
    invocation = ToolInvocation.objects.get(session=session, native=True)
    assert invocation.kind == kind
    assert invocation.name == f"my_{kind}"
    assert invocation.provider == "openai"
    assert invocation.success is True
    assert invocation.value is not None


@pytest.mark.parametrize(
    ("kind", "marker", "error"),
    [
        ("web_search", MARKER_SEARCH_FAILS, "failed"),
        ("mcp", MARKER_MCP_ERROR, "http_error 502: Bad gateway from MCP server"),
    ],
)
def test_a_failed_native_call_is_recorded_as_failed(kind, marker, error):
    definition = HostedToolDefinitionFactory.create(kind=kind, config=RUN_CONFIGS[kind])
    prompt = prompt_with(definition, template=f"Find the refund policy. {marker}")

    session = session_services.start_session(prompt_ref=prompt.ref, params={})

    invocation = ToolInvocation.objects.get(session=session, native=True)
    assert invocation.kind == kind
    assert invocation.success is False
    assert error in invocation.message


def _post_prompt(admin_client, section, model: str):
    return admin_client.post(
        reverse("admin:tooling_prompttemplate_add"),
        {
            "namespace": "ops",
            "key": "search",
            "model": model,
            "tool_choice": "auto",
            "max_turns": 8,
            "enabled": "on",
            "prompt_sections-TOTAL_FORMS": 1,
            "prompt_sections-INITIAL_FORMS": 0,
            "prompt_sections-0-section": section.pk,
            "prompt_sections-0-position": 0,
        },
    )


def test_prompt_admin_refuses_a_hosted_kind_its_model_does_not_support(admin_client):
    ModelCapability.objects.create(model="gpt-5.4-mini", hosted_kinds=["file_search"])
    parent = SectionDefinitionFactory.create(template="Answer.")
    # The web search sits in a child section: the whole tree is checked.
    child = SectionDefinitionFactory.create(parent=parent, template="Search first.")
    search = HostedToolDefinitionFactory.create(name="docs_search", kind="web_search")
    SectionHostedTool.objects.create(section=child, hosted_tool=search, position=0)

    response = _post_prompt(admin_client, parent, "gpt-5.4-mini")

    assert response.status_code == 200
    assert (
        escape(
            "Model 'gpt-5.4-mini' does not support hosted tool kind 'web_search' "
            "(tool 'docs_search'); it supports: file_search."
        )
        in response.content.decode()
    )
    assert not PromptTemplate.objects.exists()
    # A model the catalog has no allow-list for is not restricted.
    assert _post_prompt(admin_client, parent, "gpt-5.4").status_code == 302


def test_web_search_country_is_stored_upper_case(admin_client):
    response = add_hosted(admin_client, "web_search", {"country": "gb"})

    assert response.status_code == 302
    assert HostedToolDefinition.objects.get().config["country"] == "GB"


def test_mcp_headers_read_only_allowed_variables(settings, monkeypatch):
    from tooling.assembly.hosted import _mcp_config

    monkeypatch.setenv("CRM_TOKEN", "t0ken")
    config = {
        "server_label": "crm",
        "server_url": "https://mcp.example.com",
        "header_env": {"Authorization": "CRM_TOKEN"},
    }
    with pytest.raises(PromptValidationError) as refused:
        _mcp_config(config)
    assert "names starting with WINK_MCP_" in refused.value.message

    settings.WINK_MCP_HEADER_ENV_ALLOW = ["CRM_TOKEN"]
    assert _mcp_config(config).headers == {"Authorization": "t0ken"}

    settings.WINK_MCP_HEADER_ENV_PREFIX = ""
    settings.WINK_MCP_HEADER_ENV_ALLOW = []
    monkeypatch.setenv("WINK_MCP_X", "y")
    with pytest.raises(PromptValidationError) as none_allowed:
        _mcp_config({**config, "header_env": {"Authorization": "WINK_MCP_X"}})
    assert "none (no variable is allowed)" in none_allowed.value.message
