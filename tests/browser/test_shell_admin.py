"""Issue 12, tried as a new user would, in a real browser: an operator adds a
hosted shell (a container with an allow-listed network) and an apply_patch
tool through their admin forms, puts both in a section, previews the exact
tool JSON, runs the prompt and reads each shell command's output and outcome
on the session page and in the API. A local shell without an executor is
refused next to its field with nothing saved.

Nothing here depends on the offline provider's wording: the page is compared
with the database records and the API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from sessions_app.models import AgentSession, ToolInvocation
from tests.browser.test_hosted_tools_admin import api_get, open_preview
from tests.browser.ui import UI
from tooling import services
from tooling.models import HostedToolDefinition, PromptTemplate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOMAINS = ["pypi.org", "files.pythonhosted.org"]
SHELL_TOOL = {
    "type": "shell",
    "environment": {
        "type": "container_auto",
        "network_policy": {"type": "allowlist", "allowed_domains": DOMAINS},
        "memory_limit": "4g",
        "file_ids": ["file-report"],
    },
}


def visible_kind_sections(ui: UI) -> list[str]:
    return [
        section.find_element(By.CSS_SELECTOR, "h2").text
        for section in ui.find_all("fieldset.hosted-kind")
        if section.is_displayed()
    ]


def start_hosted_tool(ui: UI, name: str, kind: str) -> None:
    ui.go("/admin/tooling/hostedtooldefinition/add/")
    ui.fill("name", name)
    ui.select("kind", kind)
    ui.fill("description", f"The {kind} tool.")


def page_commands(ui: UI) -> list[dict[str, Any]]:
    """Each shell command on the session page, in page order."""
    commands = []
    for item in ui.find_all("ol.shell-commands > li"):

        def text_of(css: str, item: Any = item) -> str | None:
            found = item.find_elements(By.CSS_SELECTOR, css)
            return found[0].get_attribute("textContent") if found else None

        command = text_of("code")
        assert command is not None, "a shell command without its code"
        commands.append(
            {
                "command": command.removeprefix("$ "),
                "stdout": text_of("pre.stdout") or "",
                "stderr": text_of("pre.stderr") or "",
                "outcome": text_of(".badge"),
            }
        )
    return commands


def outcome_label(outcome: Any) -> str:
    return "timed out" if outcome == "timeout" else f"exit {outcome}"


def test_operator_adds_a_hosted_shell_and_apply_patch_previews_runs_and_reads(
    ui: UI, shot: Any
) -> None:
    # 1. The shell through its typed form: only its section is shown.
    start_hosted_tool(ui, "sandbox", "shell")
    assert visible_kind_sections(ui) == ["Shell"]
    ui.select("environment", "container_auto")
    ui.select("network_policy", "allowlist")
    ui.fill("shell_allowed_domains", "\n".join(DOMAINS))
    ui.select("shell_memory_limit", "4g")
    ui.fill("shell_file_ids", "file-report")
    shot("issue12-01-shell-form")
    ui.save_and_expect_success()
    shell = HostedToolDefinition.objects.get(name="sandbox")
    assert (shell.kind, shell.config) == (
        "shell",
        {
            "environment": "container_auto",
            "network_policy": "allowlist",
            "allowed_domains": DOMAINS,
            "memory_limit": "4g",
            "file_ids": ["file-report"],
        },
    )

    # A local shell needs an executor: refused next to the field, not saved.
    start_hosted_tool(ui, "host_shell", "shell")
    ui.select("environment", "local")
    ui.submit()
    assert ui.field_errors("executor") == [
        "The local environment needs an executor: name one registered in the "
        "shell executor registry (nothing runs host commands by default)."
    ]
    assert not HostedToolDefinition.objects.filter(name="host_shell").exists()

    # 2. apply_patch has no options: its section only explains what it does.
    start_hosted_tool(ui, "patcher", "apply_patch")
    assert visible_kind_sections(ui) == ["Apply patch"]
    ui.save_and_expect_success()
    assert HostedToolDefinition.objects.get(name="patcher").config == {}

    # 3. A section with both, a prompt with the section.
    ui.go("/admin/tooling/sectiondefinition/add/")
    ui.fill("key", "ops")
    ui.fill("title", "Operations")
    ui.fill("template", "List the data files, then fix the notes.")
    for search, label in (
        ("sand", "sandbox (shell)"),
        ("patch", "patcher (apply_patch)"),
    ):
        row = ui.add_inline_row("sectionhostedtool_set")
        ui.autocomplete(f"id_sectionhostedtool_set-{row}-hosted_tool", search, label)
    ui.save_and_expect_success()
    ui.go("/admin/tooling/prompttemplate/add/")
    ui.fill("namespace", "ops")
    ui.fill("key", "shell")
    ui.autocomplete("id_prompt_sections-0-section", "ops", "ops")
    ui.save_and_expect_success()

    # 4. The preview shows the exact tool JSON the service computes.
    open_preview(ui, "ops/shell")
    tools = ui.json_of("#request-json")["tools"]
    assert tools == [SHELL_TOOL, {"type": "apply_patch"}], json.dumps(tools)
    template = PromptTemplate.objects.with_catalog().get(namespace="ops", key="shell")
    preview = services.preview_prompt(template=template, params={})
    assert tools == json.loads(json.dumps(preview.safe_request))["tools"]
    shot("issue12-02-preview")

    # 5. Run it: each command with its output and outcome on the session page.
    ui.click_and_load(ui.find("input[name=run]"))
    assert ui.path.startswith("/audit/sessions/")
    session = AgentSession.objects.get()
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    shot("issue12-03-session")
    invocation = ToolInvocation.objects.get(session=session, native=True, kind="shell")
    assert invocation.value is not None
    stored = invocation.value["commands"]
    assert {c["outcome"] for c in stored} >= {0, "timeout"}
    assert page_commands(ui) == [
        {
            "command": c["command"],
            "stdout": c["stdout"],
            "stderr": c["stderr"],
            "outcome": outcome_label(c["outcome"]),
        }
        for c in stored
    ]
    item = ui.find(f"ol.timeline > li#call-{invocation.call_id}")
    assert "native · shell" in item.text

    # 6. The API returns the same commands.
    body = api_get(ui, f"/api/sessions/{session.pk}/")
    [shell_call] = [
        i for i in body["tool_invocations"] if i["native"] and i["kind"] == "shell"
    ]
    assert shell_call["call_id"] == invocation.call_id
    assert shell_call["value"]["commands"] == stored
