"""The demo catalog in a real browser: each demo prompt's "Preview / run" page,
found from the prompt template list; then the release demo (a sequential
dependency policy denies ``deploy`` until the model has built and tested) and
the notes demo (read-before-write denies an overwrite until the file is read;
the planning tools keep a plan the session page shows), run from their
preview pages and read on the session page."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.browser.test_catalog_admin import positions, timeline
from tests.browser.ui import UI
from tooling.demo import DEMO_PROMPTS, seed_demo_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PLANNING_TOOLS = [
    "planning_setup_plan",
    "planning_add_step",
    "planning_update_step",
    "planning_read_plan",
]

# What each demo prompt offers the model, in order (function tools, then hosted
# tools by type).
DEMO_TOOLS = {
    "demo/research": ["count_words", "web_search"],
    "demo/release": ["deploy", "build", "test", "lint"],
    "demo/ship": ["deploy", "build", "test", "lint"],
    "demo/notes": [
        *PLANNING_TOOLS,
        "draft_file",
        "write_file",
        "read_file",
        "list_files",
    ],
    "demo/patch": ["read_file", "apply_patch"],
}

Entries = list[tuple[set[str], str, str]]


@pytest.fixture(autouse=True)
def _demo_catalog(transactional_db: Any) -> None:
    seed_demo_catalog()


def open_preview(ui: UI, ref: str) -> None:
    """From the prompt template list, follow the prompt's "Preview / run" link."""
    ui.go("/admin/tooling/prompttemplate/")
    [row] = [
        row
        for row in ui.find_all("#result_list tbody tr")
        if row.find_element(By.CSS_SELECTOR, "th").text == ref
    ]
    ui.click_and_load(row.find_element(By.LINK_TEXT, "Preview / run"))
    assert ui.text("h1") == f"Preview {ref}"


def run_from_preview(ui: UI, ref: str) -> Entries:
    open_preview(ui, ref)
    ui.click_and_load(ui.find("input[name=run]"))
    assert ui.path.startswith("/audit/sessions/")
    assert ui.text("h1") == f"{ref} Succeeded"
    return timeline(ui)


def call_id(entries: Entries, index: int) -> str:
    [found] = re.findall(r"\bcall_\w+", entries[index][1])
    return found


def timeline_items(ui: UI) -> list[Any]:
    """The timeline's ``<li>`` elements, in the order ``timeline`` reads them."""
    return ui.find_all("ol.timeline > li")


def params_of(item: Any) -> Any:
    """The parameters a timeline entry shows (its own ``Arguments`` block)."""
    [pre] = [
        block.find_element(By.CSS_SELECTOR, "pre")
        for block in item.find_elements(By.CSS_SELECTOR, ":scope > details.json")
        if block.find_element(By.CSS_SELECTOR, "summary")
        .get_attribute("textContent")
        .startswith("Arguments")
    ]
    return json.loads(pre.get_attribute("textContent"))


def shown_plan(item: Any) -> tuple[str, list[tuple[int, str, str]]]:
    """(objective, [(step id, title, status)]) of a plan state-change entry."""
    objective = item.find_element(By.CSS_SELECTOR, "div.plan > div").text
    steps = []
    for step in item.find_elements(By.CSS_SELECTOR, "ul.plan > li"):
        match = re.fullmatch(r"#(\d+) (.+) (pending|in_progress|done)", step.text)
        assert match, step.text
        steps.append((int(match[1]), match[2], match[3]))
    return objective.removeprefix("Objective: "), steps


def test_each_demo_prompt_previews_from_the_prompt_list(ui: UI, shot: Any) -> None:
    ui.go("/admin/tooling/prompttemplate/")
    listed = [cell.text for cell in ui.find_all("#result_list tbody th")]
    assert listed == sorted(DEMO_PROMPTS)
    shot("demo-01-prompt-list")
    for ref in DEMO_PROMPTS:
        open_preview(ui, ref)
        assert ui.find("#rendered-prompt").get_attribute("textContent").strip()
        tools = ui.json_of("#request-json")["tools"]
        assert [tool.get("name", tool["type"]) for tool in tools] == DEMO_TOOLS[ref]
        assert ui.find("input[name=run]").is_enabled()
        assert not ui.find_all("ul.errorlist li")
        shot(f"demo-02-preview-{ref.replace('/', '-')}")
    open_preview(ui, "demo/notes")
    rendered = ui.find("#rendered-prompt").get_attribute("textContent")
    assert "## 1. Planning (notes.plan)" in rendered
    assert "## 2. Files (notes.files)" in rendered
    assert "Draft notes.md, then revise it." in rendered


def test_release_demo_denies_deploy_until_built_and_tested(ui: UI, shot: Any) -> None:
    entries = run_from_preview(ui, "demo/release")
    shot("demo-03-release-session")
    heads = [line for _, line, _ in entries]

    # deploy first: denied by the sequential dependency policy, with its reason;
    # the call it denied fails with that reason (same call id).
    [deploy_denied] = positions(entries, "policy-denial", "deploy")
    assert "release-order" in heads[deploy_denied].split(), heads
    assert "Tool 'deploy' requires: build, test" in entries[deploy_denied][2]
    first_deploy, second_deploy = positions(entries, "tool-invocation", "deploy")
    assert "failed" in entries[first_deploy][0]
    assert "Tool 'deploy' requires: build, test" in entries[first_deploy][2]
    assert call_id(entries, first_deploy) == call_id(entries, deploy_denied)

    # The recovery: lint, build and test succeed, then deploy succeeds.
    def succeeded(name: str) -> list[int]:
        return [
            index
            for index in positions(entries, "tool-invocation", name)
            if "failed" not in entries[index][0] and "ok" in heads[index].split()
        ]

    assert succeeded("deploy") == [second_deploy]
    environment = params_of(timeline_items(ui)[second_deploy])["environment"]
    assert f"Would deploy to {environment}" in entries[second_deploy][2]
    [build] = succeeded("build")
    [test] = succeeded("test")
    [lint] = succeeded("lint")
    assert deploy_denied < first_deploy < build < second_deploy, heads
    assert first_deploy < test < second_deploy, heads
    # build itself waited for lint (the policy's other dependency).
    [build_denied] = positions(entries, "policy-denial", "build")
    assert "Tool 'build' requires: lint" in entries[build_denied][2]
    assert build_denied < lint < build, heads
    assert len(positions(entries, "policy-denial", "test")) == 0
    assert len(positions(entries, "policy-denial", "lint")) == 0


def test_notes_demo_reads_before_overwriting_and_shows_its_plan(
    ui: UI, shot: Any
) -> None:
    entries = run_from_preview(ui, "demo/notes")
    shot("demo-04-notes-session")
    heads = [line for _, line, _ in entries]

    # The draft creates notes.md; overwriting it unread is denied by the
    # read-before-write policy; the model reads it, then the write succeeds.
    [draft] = positions(entries, "tool-invocation", "draft_file")
    assert "Created 'notes.md'" in entries[draft][2]
    [write_denied] = positions(entries, "policy-denial", "write_file")
    assert "read-before-write" in heads[write_denied].split(), heads
    reason = "File 'notes.md' must be read before overwriting."
    assert reason in entries[write_denied][2]
    first_write, *_, last_write = positions(entries, "tool-invocation", "write_file")
    assert "failed" in entries[first_write][0]
    assert call_id(entries, first_write) == call_id(entries, write_denied)
    [read] = positions(entries, "tool-invocation", "read_file")
    assert "failed" not in entries[read][0]
    assert "Read 'notes.md'" in entries[read][2]
    assert "failed" not in entries[last_write][0]
    assert "Overwrote 'notes.md'" in entries[last_write][2]
    assert draft < write_denied < first_write < read < last_write, heads
    # The session's files are shown, with the content of the last write.
    [shown] = ui.driver.find_elements(
        By.XPATH, "//h3[code='notes.md']/following-sibling::pre[1]"
    )
    written = params_of(timeline_items(ui)[last_write])["content"]
    assert shown.get_attribute("textContent") == written

    # The plan: each planning call is followed by the plan it left, as the page
    # shows it (objective, numbered steps with their status).
    items = timeline_items(ui)
    expected_objective = ""
    expected: list[tuple[int, str, str]] = []
    updates = 0
    for index, (classes, _, text) in enumerate(entries):
        name = next((t for t in PLANNING_TOOLS if f" {t} " in heads[index]), None)
        if "tool-invocation" not in classes or name is None:
            continue
        assert "failed" not in classes, text
        params = params_of(items[index])
        if name == "planning_read_plan":
            assert f"with {len(expected)} step" in text
            continue
        if name == "planning_setup_plan":
            expected_objective = params["objective"]
            expected = [
                (number, title, "pending")
                for number, title in enumerate(params["initial_steps"] or [], 1)
            ]
        elif name == "planning_add_step":
            expected += [
                (len(expected) + number, title, "pending")
                for number, title in enumerate(params["steps"], start=1)
            ]
        else:  # planning_update_step: a new title and/or status for one step
            expected = [
                (number, title, status)
                if number != params["step_id"]
                else (number, params["title"] or title, params["status"] or status)
                for number, title, status in expected
            ]
        state, head, _ = entries[index + 1]
        assert "state-change" in state and head == f"plan updated by {name}", head
        assert shown_plan(items[index + 1]) == (expected_objective, expected)
        updates += 1
    assert updates >= 2, heads  # at least a setup and a change
    assert expected, "the plan shown has steps"
