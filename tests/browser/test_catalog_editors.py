"""Issue #28, in a real browser: an operator writes policy configs, approval
rules, parameter descriptions and examples without writing JSON. The policy
form shows only the chosen kind's fields; rules are rows (a tool, and its
conditions a line each) and "Add a row" adds one; the stored config is the
JSON the runtime reads. Every mistake is shown at once on its field; the
JSON stays one choice away. The tool form gives a box per parameter of the
picked handler (its own description as the placeholder) and a row per
example, whose JSON errors name the example, line and column.

With ``WINK_BROWSER_SCREENSHOTS=<dir>`` each step's page is saved there
(``issue28-editors-*.png``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.ui import UI
from tooling.models import PolicyDefinition, ToolDefinition

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def release_tools() -> None:
    for name in ("build", "deploy", "lint", "test"):
        ToolDefinition.objects.create(name=name, handler_key=f"demo.{name}")


def shown_fieldsets(ui: UI) -> list[str]:
    return [
        section.find_element("css selector", "h2").text
        for section in ui.find_all("fieldset.policy-kind, fieldset.policy-json")
        if section.is_displayed()
    ]


def add_row(ui: UI, field: str) -> int:
    """Click the field's "Add a row"; the new row's index."""
    rows = len(ui.find_all(f".field-{field} tbody tr"))
    ui.find(f".field-{field} .rows-editor-add").click()
    ui.wait(lambda d: len(ui.find_all(f".field-{field} tbody tr")) == rows + 1)
    return rows


def test_an_approval_policy_is_written_with_rows_not_json(ui: UI, shot: Any) -> None:
    release_tools()
    ui.go("/admin/tooling/policydefinition/add/")
    ui.fill("name", "production-deploy")
    ui.select("kind", PolicyDefinition.Kind.APPROVAL)
    ui.wait(lambda d: shown_fieldsets(ui) == ["Approval (a human decides)"])

    ui.select("rules-0-tool", "deploy")
    ui.fill("rules-0-when", "environment = production\nenvironment = dr")
    index = add_row(ui, "rules")
    ui.select(f"rules-{index}-tool", "lint")
    ui.fill("deadline_seconds", "0")
    ui.fill("approvers_permission", "nope")
    ui.select("rules-1-tool", "build")
    ui.fill("rules-1-when", "force true")
    shot("issue28-editors-01-approval-rules")
    ui.submit()

    # every mistake at once, each on its field, the rows as typed
    assert ui.field_errors("rules") == [
        "Rule 2, line 1: write a condition as argument = value (for example "
        "environment = production), not 'force true'."
    ]
    assert ui.field_errors("deadline_seconds") == [
        "deadline_seconds must be a whole number of seconds from 1 to 31622400 "
        "(a year), or left out for the default."
    ]
    assert ui.field_errors("approvers_permission") == [
        "approvers.permission 'nope' must be 'app_label.codename', for example "
        "'sessions_app.decide_any_approval'."
    ]
    assert ui.field("rules-1-when").get_attribute("value") == "force true"
    shot("issue28-editors-02-every-mistake-on-its-field")
    assert not PolicyDefinition.objects.exists()

    ui.fill("rules-1-when", "force = true")
    ui.fill("deadline_seconds", "3600")
    ui.fill("approvers_permission", "")
    ui.fill("approvers_group", "Release managers")
    ui.select("four_eyes", "true")
    ui.save_and_expect_success()
    policy = PolicyDefinition.objects.get(name="production-deploy")
    assert policy.config == {
        "rules": [
            {"tool": "deploy", "when": {"environment": ["production", "dr"]}},
            {"tool": "build", "when": {"force": True}},
            {"tool": "lint"},
        ],
        "approvers": {"group": "Release managers"},
        "deadline_seconds": 3600,
        "four_eyes": True,
    }

    # Reopened, the rows show it again; the JSON is one choice away.
    ui.go(f"/admin/tooling/policydefinition/{policy.pk}/change/")
    assert ui.field("rules-0-when").get_attribute("value") == (
        "environment = production\nenvironment = dr"
    )
    assert shown_fieldsets(ui) == ["Approval (a human decides)"]
    ui.pick_radio("config_source", "json")
    ui.wait(lambda d: shown_fieldsets(ui) == ["Configuration as JSON"])
    assert ui.json_of("#id_config") == policy.config
    shot("issue28-editors-03-the-json-one-choice-away")


def test_the_chosen_kind_shows_its_own_fields(ui: UI, shot: Any) -> None:
    release_tools()
    ui.go("/admin/tooling/policydefinition/add/")
    ui.fill("name", "release-order")
    ui.select("kind", PolicyDefinition.Kind.SEQUENTIAL_DEPENDENCY)
    ui.wait(lambda d: shown_fieldsets(ui) == ["Sequential dependency"])
    ui.select("dependencies-0-tool", "deploy")
    ui.select_many("dependencies-0-after", "build", "test")
    ui.select("dependencies-1-tool", "build")
    ui.select_many("dependencies-1-after", "lint")
    shot("issue28-editors-04-dependencies")
    ui.save_and_expect_success()
    policy = PolicyDefinition.objects.get(name="release-order")
    assert policy.config == {
        "dependencies": {"build": ["lint"], "deploy": ["build", "test"]}
    }


def test_the_tool_form_describes_parameters_and_examples_in_place(
    ui: UI, shot: Any
) -> None:
    ui.go("/admin/tooling/tooldefinition/add/")
    ui.fill("name", "count_words")
    ui.select("handler_key", "demo.count_words")
    box = "param_descriptions:demo.count_words:text"
    ui.wait(lambda d: ui.field(box).is_displayed())
    assert ui.field(box).get_attribute("placeholder") == (
        "The text whose words to count."
    )
    assert not ui.field("param_descriptions:demo.deploy:environment").is_displayed()
    ui.fill(box, "The draft to count.")
    ui.fill("examples-0-description", "Count a short sentence.")
    ui.fill("examples-0-input", '{"text": "one two"}')
    ui.fill("examples-0-output", '{\n  "words": 2\n  "characters": 7\n}')
    ui.submit()
    assert ui.field_errors("examples") == [
        "Example 1, output: Enter valid JSON: Expecting ',' delimiter at line 3, "
        "column 3."
    ]
    assert ui.field(box).get_attribute("value") == "The draft to count."
    shot("issue28-editors-05-example-error-names-example-line-column")

    ui.fill("examples-0-output", '{"words": 2, "characters": 7}')
    ui.save_and_expect_success()
    tool = ToolDefinition.objects.get(name="count_words")
    assert tool.param_descriptions == {"text": "The draft to count."}
    assert tool.examples == [
        {
            "description": "Count a short sentence.",
            "input": {"text": "one two"},
            "output": {"words": 2, "characters": 7},
        }
    ]
    ui.go(f"/admin/tooling/tooldefinition/{tool.pk}/change/")
    assert ui.field(box).get_attribute("value") == "The draft to count."
    shot("issue28-editors-06-tool-form-saved")


def test_a_config_the_fields_cannot_show_opens_as_json(ui: UI, shot: Any) -> None:
    config = {"dependencies": {"deploy": ["build"]}, "note": "kept"}
    policy = PolicyDefinition.objects.create(
        name="order", kind=PolicyDefinition.Kind.SEQUENTIAL_DEPENDENCY, config=config
    )
    ui.go(f"/admin/tooling/policydefinition/{policy.pk}/change/")
    assert shown_fieldsets(ui) == ["Configuration as JSON"]
    assert "cannot be shown as fields (unknown key(s): 'note')" in ui.text(
        ".field-config_source"
    )
    shot("issue28-editors-07-unknown-key-kept-as-json")
    ui.pick_radio("config_source", "fields")
    ui.submit()
    assert ui.field_errors("config_source") == [
        "The saved configuration cannot be shown as fields (unknown key(s): "
        "'note'): saving the fields would lose it. Edit it as JSON."
    ]
    policy.refresh_from_db()
    assert policy.config == config


def test_without_javascript_every_kind_is_shown_labelled(ui: UI, shot: Any) -> None:
    release_tools()
    ui.driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        ui.go("/admin/tooling/policydefinition/add/")
        assert shown_fieldsets(ui) == [
            *(str(label) for _, label in PolicyDefinition.Kind.choices),
            "Configuration as JSON",
        ]
        assert not ui.find(".rows-editor-add").is_displayed()
        shot("issue28-editors-08-without-javascript")
        ui.fill("name", "deploy-once")
        ui.select("kind", PolicyDefinition.Kind.CALL_LIMIT)
        ui.select("limits-0-tool", "deploy")
        ui.fill("limits-0-limit", "1")
        ui.select("rules-0-tool", "lint")  # another kind's: ignored
        ui.save_and_expect_success()
    finally:
        ui.driver.execute_cdp_cmd(
            "Emulation.setScriptExecutionDisabled", {"value": False}
        )
    assert PolicyDefinition.objects.get(name="deploy-once").config == {
        "limits": {"deploy": 1}
    }
