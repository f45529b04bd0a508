"""The shell and apply_patch kinds in the catalog: typed admin fields, validated
by building the runtime config (hostile input refused on its field); the
preview shows the exact tool JSON; a hosted shell run records each command
with its stdout, stderr and outcome, shown escaped on the session page and
returned by the API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse
from django.utils.html import escape

from sessions_app import services as session_services
from sessions_app.models import ToolInvocation
from tests.sessions_app.factories import AgentSessionFactory, ToolInvocationFactory
from tests.tooling.factories import (
    HostedToolDefinitionFactory,
)
from tests.tooling.hosted_admin import add_hosted, prompt_with
from tooling import assembly, shell_executors
from tooling.models import HostedToolDefinition
from tooling.runtime import PromptValidationError
from tooling.runtime.hosted.shell import ShellConfig

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _offline(settings):
    settings.WINK_PROVIDER = "offline"


def _tools_json(admin_client, prompt) -> Any:
    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk]),
        {"params": "{}"},
    )
    assert response.status_code == 200
    assert not response.context["errors"], response.context["errors"]
    request_json = response.context["request_json"]
    assert escape(request_json) in response.content.decode()
    return json.loads(request_json)["tools"]


# kind -> (typed admin input, stored config, tool JSON shown by the preview)
CASES: dict[str, tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "auto_allowlist": (
        "shell",
        {
            "environment": "container_auto",
            "network_policy": "allowlist",
            "shell_allowed_domains": "PyPI.org\nfiles.pythonhosted.org",
            "shell_memory_limit": "4g",
            "shell_file_ids": "file-abc\nfile-def",
        },
        {
            "environment": "container_auto",
            "network_policy": "allowlist",
            "allowed_domains": ["PyPI.org", "files.pythonhosted.org"],
            "memory_limit": "4g",
            "file_ids": ["file-abc", "file-def"],
        },
        {
            "type": "shell",
            "environment": {
                "type": "container_auto",
                "network_policy": {
                    "type": "allowlist",
                    "allowed_domains": ["pypi.org", "files.pythonhosted.org"],
                },
                "memory_limit": "4g",
                "file_ids": ["file-abc", "file-def"],
            },
        },
    ),
    "auto_default": (
        "shell",
        {},
        {},
        {
            "type": "shell",
            "environment": {
                "type": "container_auto",
                "network_policy": {"type": "disabled"},
            },
        },
    ),
    "reference": (
        "shell",
        {"environment": "container_reference", "shell_container_id": " cntr_42 "},
        {"environment": "container_reference", "container_id": "cntr_42"},
        {
            "type": "shell",
            "environment": {"type": "container_reference", "container_id": "cntr_42"},
        },
    ),
    "local": (
        "shell",
        {"environment": "local", "executor": "scratch"},
        {"environment": "local", "executor": "scratch"},
        {"type": "shell", "environment": {"type": "local"}},
    ),
    "apply_patch": ("apply_patch", {}, {}, {"type": "apply_patch"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_typed_admin_input_saves_config_and_preview_shows_the_tool_json(
    admin_client, case
):
    kind, fields, config, wire = CASES[case]

    response = add_hosted(admin_client, kind, fields)

    assert response.status_code == 302, response.content.decode()[-3000:]
    definition = HostedToolDefinition.objects.get()
    assert (definition.kind, definition.config) == (kind, config)
    assert _tools_json(admin_client, prompt_with(definition)) == [wire]


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][1]])
def test_change_form_loads_the_typed_fields_back_and_saves_them_unchanged(
    admin_client, case
):
    kind, fields, config, _wire = CASES[case]
    definition = HostedToolDefinitionFactory.create(kind=kind, config=config)
    url = reverse("admin:tooling_hostedtooldefinition_change", args=[definition.pk])

    form = admin_client.get(url).context["adminform"].form
    for name, value in fields.items():
        assert str(form[name].value()).strip() == value.strip(), name

    response = admin_client.post(
        url,
        {
            "name": definition.name,
            "kind": kind,
            "description": definition.description,
            "enabled": "on",
            "catalog_version": form["catalog_version"].value(),
            **{name: form[name].value() for name in fields},
        },
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    definition.refresh_from_db()
    assert definition.config == config


def test_the_add_page_has_a_shell_section_offering_the_registered_executors(
    admin_client,
):
    response = admin_client.get(reverse("admin:tooling_hostedtooldefinition_add"))

    form = response.context["adminform"].form
    assert [value for value, _label in form.fields["executor"].choices] == [
        "",
        *shell_executors.names(),
    ]
    html = response.content.decode()
    assert 'class="module aligned hosted-kind kind-shell"' in html
    assert 'class="module aligned hosted-kind kind-apply_patch"' in html
    assert '<option value="shell">Shell</option>' in html
    assert '<option value="apply_patch">Apply patch</option>' in html


def test_the_other_kinds_fields_are_ignored(admin_client):
    response = add_hosted(
        admin_client,
        "shell",
        {
            "environment": "container_reference",
            "shell_container_id": "cntr_1",
            "container_id": "ignored (code interpreter)",
            "memory_limit": "not a limit",
            "allowed_domains": "https://ignored.example",
        },
    )

    assert response.status_code == 302, response.content.decode()[-3000:]
    assert HostedToolDefinition.objects.get().config == {
        "environment": "container_reference",
        "container_id": "cntr_1",
    }


def test_apply_patch_ignores_every_option_field(admin_client):
    response = add_hosted(
        admin_client,
        "apply_patch",
        {"environment": "local", "executor": "nobody", "shell_memory_limit": "9g"},
    )

    assert response.status_code == 302, response.content.decode()[-3000:]
    assert HostedToolDefinition.objects.get().config == {}


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"network_policy": "allowlist"},
            "shell_allowed_domains",
            "network_policy 'allowlist' needs at least one allowed domain",
        ),
        (
            {"shell_allowed_domains": "pypi.org"},
            "shell_allowed_domains",
            "allowed_domains only apply with network_policy 'allowlist'",
        ),
        (
            {
                "network_policy": "allowlist",
                "shell_allowed_domains": "https://pypi.org",
            },
            "shell_allowed_domains",
            "must be written without a scheme",
        ),
        (
            {"network_policy": "allowlist", "shell_allowed_domains": "<b>x</b>"},
            "shell_allowed_domains",
            "'<b>x</b>' is not a valid domain name",
        ),
        (
            {
                "network_policy": "allowlist",
                "shell_allowed_domains": "\n".join(
                    f"d{i}.example.com" for i in range(101)
                ),
            },
            "shell_allowed_domains",
            "A network allow-list takes at most 100 domains (got 101).",
        ),
        (
            {"environment": "container_reference"},
            "shell_container_id",
            "The container_reference environment needs a container_id.",
        ),
        (
            {"environment": "container_reference", "shell_container_id": "x" * 5000},
            "shell_container_id",
            "Ensure this value has at most 200 characters (it has 5000).",
        ),
        (
            {"environment": "container_reference", "shell_container_id": "cn\x00tr"},
            "shell_container_id",
            "Null characters are not allowed.",
        ),
        (
            {"environment": "container_reference", "shell_container_id": "cntr\x07"},
            "shell_container_id",
            "container_id must be a printable container id",
        ),
        (
            {"shell_container_id": "cntr_1"},
            "shell_container_id",
            "The container_auto environment does not take container_id",
        ),
        (
            {
                "environment": "container_reference",
                "shell_container_id": "cntr_1",
                "shell_memory_limit": "4g",
            },
            "shell_memory_limit",
            "does not take memory_limit",
        ),
        (
            {"environment": "local"},
            "executor",
            "The local environment needs an executor",
        ),
        (
            {"environment": "local", "executor": "rm -rf /"},
            "executor",
            "'rm -rf /' is not a registered shell executor.",
        ),
        (
            {"environment": "local", "executor": "scratch", "shell_file_ids": "f-1"},
            "shell_file_ids",
            "The local environment does not take file_ids",
        ),
        (
            {"executor": "scratch"},
            "executor",
            "The container_auto environment does not take executor",
        ),
        ({"environment": "docker"}, "environment", "Select a valid choice."),
        ({"shell_memory_limit": "3g"}, "shell_memory_limit", "Select a valid choice."),
    ],
)
def test_invalid_shell_input_is_refused_on_its_field(
    admin_client, fields, field, message
):
    response = add_hosted(admin_client, "shell", fields)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert field in errors, errors
    assert any(message in error for error in errors[field]), errors[field]
    assert escape(message) in response.content.decode()
    assert not HostedToolDefinition.objects.exists()


# -- assembly (configs that did not come through the form) -----------------------


@pytest.mark.parametrize(
    ("kind", "config", "message"),
    [
        ("shell", {"timeout": 5}, "Unknown shell option(s): timeout"),
        ("shell", {"environment": ["local"]}, "environment ['local'] is not one of"),
        ("shell", {"allowed_domains": 5}, "Invalid shell config"),
        (
            "shell",
            {"environment": "local", "executor": "not_registered"},
            "No shell executor is registered as 'not_registered'; registered: ",
        ),
        ("apply_patch", {"strict": True}, "Unknown apply_patch option(s): strict"),
    ],
)
def test_assembly_refuses_stored_configs_it_cannot_build(kind, config, message):
    definition = HostedToolDefinitionFactory.create(kind=kind, config=config)

    with pytest.raises(PromptValidationError) as caught:
        assembly.build_hosted_tool(definition)

    assert message in caught.value.message


def test_assembly_builds_the_runtime_configs():
    shell = assembly.build_hosted_tool(
        HostedToolDefinitionFactory.create(
            name="box",
            kind="shell",
            config={"environment": "local", "executor": "scratch"},
            description="",
        )
    )
    assert (shell.kind, shell.name) == ("shell", "box")
    assert shell.config == ShellConfig(environment="local", executor="scratch")
    assert "scratch" in shell_executors.names()
    patch = assembly.build_hosted_tool(
        HostedToolDefinitionFactory.create(
            name="patcher", kind="apply_patch", config={}
        )
    )
    assert (patch.kind, patch.name) == ("apply_patch", "patcher")


# -- a hosted shell run, on the session page and in the API ----------------------


def test_a_hosted_shell_run_shows_each_command_on_the_page_and_in_the_api(
    admin_client, api_client
):
    definition = HostedToolDefinitionFactory.create(
        name="sandbox", kind="shell", config={"file_ids": ["file-report"]}
    )
    prompt = prompt_with(definition, template="List the data files.")

    session = session_services.start_session(prompt_ref=prompt.ref, params={})

    assert session.status == "succeeded", session.error_message
    invocation = ToolInvocation.objects.get(session=session, native=True)
    assert (invocation.kind, invocation.name, invocation.success) == (
        "shell",
        "sandbox",
        True,
    )
    assert invocation.value is not None
    commands = invocation.value["commands"]
    assert [(c["command"], c["outcome"]) for c in commands] == [
        ("ls -1 /mnt/data", 0),
        ("cat notes.txt", 1),
        ("sleep 120", "timeout"),
    ]
    assert commands[0]["stdout"] == "file-report\n"

    html = admin_client.get(session.get_absolute_url()).content.decode()
    assert "<code>$ ls -1 /mnt/data</code>" in html
    assert '<pre class="stdout">file-report\n</pre>' in html
    assert (
        '<pre class="stderr">cat: notes.txt: No such file or directory\n</pre>' in html
    )
    assert '<span class="badge ok">exit 0</span>' in html
    assert '<span class="badge bad">exit 1</span>' in html
    assert '<span class="badge bad">timed out</span>' in html

    data = api_client.get(f"/api/sessions/{session.pk}/").json()
    (shell,) = [t for t in data["tool_invocations"] if t["kind"] == "shell"]
    assert shell["value"]["commands"] == commands
    assert shell["params"]["commands"] == [c["command"] for c in commands]


def test_the_page_escapes_hostile_shell_output(admin_client):
    session = AgentSessionFactory.create()
    hostile = "<script>alert(1)</script>"
    ToolInvocationFactory.create(
        session=session,
        native=True,
        kind="shell",
        success=True,
        value={
            "call_id": "call_1",
            "commands": [
                {
                    "command": f"echo '{hostile}'",
                    "stdout": hostile + "x" * 100_000,
                    "stderr": "<img src=x onerror=alert(2)>",
                    "outcome": 7,
                },
                {"command": None, "stdout": 5, "stderr": [], "outcome": "timeout"},
                "not a command",
            ],
        },
    )
    ToolInvocationFactory.create(
        session=session, native=True, kind="shell", success=True, value=["odd"]
    )
    ToolInvocationFactory.create(
        session=session,
        native=True,
        kind="shell",
        success=True,
        value={"commands": "ls"},
    )

    response = admin_client.get(session.get_absolute_url())

    assert response.status_code == 200
    html = response.content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "<img src=x" not in html
    assert escape(f"$ echo '{hostile}'") in html
    assert '<span class="badge bad">exit 7</span>' in html
    assert '<span class="badge bad">timed out</span>' in html
    # the page shows a bounded excerpt; the full text stays in the stored value
    assert "x" * 20_001 not in html.split("<summary>Value ")[0]
