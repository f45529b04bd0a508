"""Issue 3, tried as a new user would, in a real browser: build a prompt in the
admin (function tools, nested sections, both policy kinds), preview the exact
payload, run it, read the session page; invalid input is refused with a clear
message and nothing is saved; the demo prompts show their policies at work."""

from __future__ import annotations

import json
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.browser.ui import UI
from tooling import services
from tooling.models import (
    PromptTemplate,
    SectionDefinition,
    SectionTool,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DRAFT_DESCRIPTION = "Create a scratch draft of a file (not for overwriting)."


def add_tool(ui: UI, name: str, handler: str, description: str = "") -> None:
    ui.go("/admin/tooling/tooldefinition/add/")
    ui.fill("name", name)
    ui.select("handler_key", handler)
    ui.fill("description", description)
    ui.save_and_expect_success()


def add_policy(ui: UI, name: str, kind: str, config: dict[str, Any]) -> None:
    ui.go("/admin/tooling/policydefinition/add/")
    ui.fill("name", name)
    ui.select("kind", kind)
    ui.pick_radio("config_source", "json")
    ui.fill("config", json.dumps(config))
    ui.save_and_expect_success()


def add_section(
    ui: UI,
    *,
    key: str,
    title: str,
    template: str,
    params: dict[str, Any],
    tools: list[str],
    policies: list[str],
    parent: str = "",
) -> None:
    ui.go("/admin/tooling/sectiondefinition/add/")
    ui.fill("key", key)
    ui.fill("title", title)
    ui.fill("template", template)
    ui.fill("default_params", json.dumps(params))
    if parent:
        ui.find("#id_parent").find_element(
            By.XPATH, f"./option[normalize-space()='{parent}']"
        ).click()
    if policies:
        ui.choose("policies", *policies)
    for position, tool in enumerate(tools):
        row = ui.add_inline_row("sectiontool_set")
        ui.autocomplete(f"id_sectiontool_set-{row}-tool", tool, tool)
        ui.fill(f"sectiontool_set-{row}-position", str(position))
    ui.save_and_expect_success()


def timeline(ui: UI) -> list[tuple[set[str], str, str]]:
    """The session page's timeline in page order: (classes, head line, text)."""
    entries = []
    for item in ui.find_all("ol.timeline > li"):
        head = item.find_element(By.CSS_SELECTOR, ".head").text
        entries.append(
            (
                set(item.get_attribute("class").split()),
                " ".join(head.split()),
                item.text,
            )
        )
    return entries


def positions(
    entries: list[tuple[set[str], str, str]], css: str, head: str
) -> list[int]:
    """Indexes of the entries with class ``css`` whose head contains ``head``."""
    return [
        index
        for index, (classes, line, _) in enumerate(entries)
        if css in classes and f" {head} " in f" {line} "
    ]


def strict_function(name: str, description: str, properties: dict[str, Any]) -> dict:
    """A function tool as OpenAI strict mode wants it: every property required,
    no additional properties."""
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
        "strict": True,
    }


TARGET = {
    "description": "Path or package to act on; '.' is the whole project.",
    "type": ["string", "null"],
}
PATH = {
    "description": "Relative file path using '/' separators, e.g. 'docs/notes.md'.",
    "type": "string",
}
CONTENT = {"description": "The complete new text of the file.", "type": "string"}


def test_admin_builds_a_prompt_previews_the_exact_payload_and_runs_it(
    ui: UI, shot: Any
) -> None:
    # 1. Function tools bound to registered handlers, one with its own description.
    for name, handler, description in [
        ("deploy", "demo.deploy", ""),
        ("build", "demo.build", ""),
        ("test", "demo.test", ""),
        ("draft_file", "vfs.write_file", DRAFT_DESCRIPTION),
        ("write_file", "vfs.write_file", ""),
        ("read_file", "vfs.read_file", ""),
    ]:
        add_tool(ui, name, handler, description)
    ui.go("/admin/tooling/tooldefinition/")
    listed = [cell.text for cell in ui.find_all("#result_list th.field-name")]
    assert listed == sorted(
        ["deploy", "build", "test", "draft_file", "write_file", "read_file"]
    )
    shot("issue3-01-tools")

    # 2. Both policy kinds.
    add_policy(
        ui,
        "ship-order",
        "sequential_dependency",
        {"dependencies": {"deploy": ["build", "test"]}},
    )
    add_policy(
        ui,
        "notes-read-first",
        "read_before_write",
        {"read_tools": ["read_file"], "write_tools": ["draft_file", "write_file"]},
    )

    # 3. A parent section and a child nested under it, with tools and policies.
    add_section(
        ui,
        key="ship",
        title="Ship it",
        template="Ship $service to staging. Deploy only once it is built and tested.",
        params={"service": "catalog-api"},
        tools=["deploy", "build", "test"],
        policies=["ship-order"],
    )
    ui.go("/admin/tooling/sectiondefinition/add/")
    shot("issue3-02-section-form")
    add_section(
        ui,
        key="ship.notes",
        title="Release notes",
        template="Write the release notes of $service to $document. Read a file "
        "before you overwrite it.",
        params={"document": "notes.md", "service": "catalog-api"},
        tools=["draft_file", "write_file", "read_file"],
        policies=["notes-read-first"],
        parent="ship",
    )
    child = SectionDefinition.objects.get(key="ship.notes")
    assert child.parent is not None and child.parent.key == "ship"
    assert [link.tool.name for link in SectionTool.objects.filter(section=child)] == [
        "draft_file",
        "write_file",
        "read_file",
    ]

    # 4. The prompt template with its (root) section; tool_choice "required".
    ui.go("/admin/tooling/prompttemplate/add/")
    ui.fill("namespace", "ops")
    ui.fill("key", "ship")
    ui.fill("name", "Ship with release notes")
    ui.fill("tool_choice", "required")
    ui.autocomplete("id_prompt_sections-0-section", "ship", "ship")
    ui.save_and_expect_success()

    # 5. Its "Preview / run" page, from the list, as a new user finds it.
    row = ui.find("#result_list tbody tr")
    assert "ops/ship" in row.text
    ui.click_and_load(row.find_element(By.LINK_TEXT, "Preview / run"))
    assert ui.text("h1") == "Preview ops/ship"
    rendered = ui.find("#rendered-prompt").get_attribute("textContent")
    assert "## 1. Ship it (ship)" in rendered
    assert "Ship catalog-api to staging." in rendered
    assert "### 1.1. Release notes (ship.ship.notes)" in rendered
    assert "release notes of catalog-api to notes.md" in rendered

    tools = ui.json_of("#request-json")["tools"]
    expected = [
        strict_function(
            "deploy",
            "Dry run: report the deployment to staging or production.",
            {
                "environment": {
                    "description": "Where to deploy: staging or production.",
                    "type": ["string", "null"],
                    "enum": ["staging", "production", None],
                }
            },
        ),
        strict_function(
            "build",
            "Dry run: report the build that would package the target.",
            {"target": TARGET},
        ),
        strict_function(
            "test",
            "Dry run: report the test run that would exercise the target.",
            {"target": TARGET},
        ),
        strict_function(
            "draft_file",
            DRAFT_DESCRIPTION,
            {"path": PATH, "content": CONTENT},
        ),
        strict_function(
            "write_file",
            "Create a file or replace its whole content. Read an existing file "
            "before overwriting it.",
            {"path": PATH, "content": CONTENT},
        ),
        strict_function(
            "read_file",
            "Read the full text of a file in the session filesystem.",
            {"path": PATH},
        ),
    ]
    assert tools == expected, json.dumps(tools, indent=1)
    request = ui.json_of("#request-json")
    assert request["tool_choice"] == "required"
    assert request["model"] == "gpt-5.4"
    assert request["tools"] == tools
    assert request["tool_choice"] == "required"
    # The page shows what the service layer would send, byte for byte.
    template = PromptTemplate.objects.with_catalog().get(namespace="ops", key="ship")
    preview = services.preview_prompt(template=template, params={})
    assert request == json.loads(json.dumps(preview.safe_request))
    shot("issue3-03-preview")

    # 6. Run it from the preview page.
    ui.click_and_load(ui.find("input[name=run]"))
    assert ui.path.startswith("/audit/sessions/")
    assert "Succeeded" in ui.text("h1")
    shot("issue3-04-session")

    entries = timeline(ui)
    heads = [line for _, line, _ in entries]
    # deploy first: denied by the sequential policy, then build and test, then
    # deploy again, successfully.
    [deploy_denied] = positions(entries, "policy-denial", "deploy")
    assert "ship-order" in heads[deploy_denied], heads
    assert "Tool 'deploy' requires: build, test" in entries[deploy_denied][2]
    deploy_calls = positions(entries, "tool-invocation", "deploy")
    assert len(deploy_calls) == 2, heads
    first_deploy, second_deploy = deploy_calls
    assert "failed" in entries[first_deploy][0] and "failed" in heads[first_deploy]
    assert "Tool 'deploy' requires: build, test" in entries[first_deploy][2]
    assert "ok" in heads[second_deploy].split()
    assert "Would deploy catalog-api to staging" in entries[second_deploy][2] or (
        "Would deploy" in entries[second_deploy][2]
    )
    [build] = positions(entries, "tool-invocation", "build")
    [test] = positions(entries, "tool-invocation", "test")
    assert deploy_denied < first_deploy < build < test < second_deploy, heads

    # An overwrite without a read: denied by read-before-write; then a read,
    # then the write succeeds.
    [write_denied] = positions(entries, "policy-denial", "write_file")
    assert "notes-read-first" in heads[write_denied]
    assert (
        "File 'notes.md' must be read before overwriting." in (entries[write_denied][2])
    )
    [read] = positions(entries, "tool-invocation", "read_file")
    writes = positions(entries, "tool-invocation", "write_file")
    assert "failed" in entries[writes[0]][0]
    assert "failed" not in entries[writes[-1]][0]
    assert write_denied < writes[0] < read < writes[-1], heads
    assert "notes.md" in ui.text("main")  # the session's files are shown
