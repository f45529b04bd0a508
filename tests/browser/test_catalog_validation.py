"""Invalid catalog input is refused in the admin with a clear message, next to
the field it concerns, and nothing is saved (an edited row stays as it was).

Each case is tried in a real browser, as an operator would: fill the admin
form, press Save, read the error the page shows. The rows a case needs besides
the form under test are created directly in the database, to keep it fast.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.browser.ui import UI
from tooling.models import (
    PolicyDefinition,
    PromptSection,
    PromptTemplate,
    SectionDefinition,
    SectionTool,
    ToolDefinition,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The note Django's admin puts above a form it refuses (one error).
ERROR_NOTE = "Please correct the error below."

BAD_NAME_RULE = (
    "must match ^[a-z0-9_-]{1,64}$: 1-64 lowercase ASCII letters, digits, "
    "underscores or hyphens (OpenAI function-name constraints)."
)


def assert_refused(ui: UI, errors: list[str]) -> None:
    """The admin re-showed the form with exactly these errors and saved nothing
    (no success message)."""
    assert ui.form_errors() == [ERROR_NOTE, *errors], ui.form_errors()
    assert not ui.find_all("ul.messagelist li.success")


def inline_errors(ui: UI, prefix: str) -> list[str]:
    """The errors shown at the top of the inline group ``prefix`` (errors of
    the formset as a whole, e.g. about the whole prompt)."""
    return [
        item.text
        for item in ui.find_all(f"#{prefix}-group ul.errorlist.nonform li")
        if item.text
    ]


def row_of(model: Any, pk: int) -> dict[str, Any]:
    return model.objects.values().get(pk=pk)


def tool(name: str, handler: str = "") -> ToolDefinition:
    return ToolDefinition.objects.create(
        name=name, handler_key=handler or f"demo.{name}"
    )


def section(
    key: str, template: str, params: dict[str, Any], *tools: str
) -> SectionDefinition:
    created = SectionDefinition.objects.create(
        key=key, title=key.title(), template=template, default_params=params
    )
    for position, name in enumerate(tools):
        SectionTool.objects.create(
            section=created,
            tool=ToolDefinition.objects.get(name=name),
            position=position,
        )
    return created


def prompt_links() -> list[tuple[str, str, int]]:
    return sorted(
        PromptSection.objects.values_list("prompt__key", "section__key", "position")
    )


# -- function tools ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("Deploy Now", id="upper-case-and-space"),
        pytest.param("déploy", id="non-ascii"),
    ],
)
@pytest.mark.parametrize("action", ["add", "edit"])
def test_function_tool_with_a_bad_name_is_refused(
    ui: UI, shot: Any, request: pytest.FixtureRequest, name: str, action: str
) -> None:
    existing = tool("deploy") if action == "edit" else None
    before = ToolDefinition.objects.count()
    if existing is None:
        ui.go("/admin/tooling/tooldefinition/add/")
        ui.select("handler_key", "demo.deploy")
    else:
        stored = row_of(ToolDefinition, existing.pk)
        ui.go(f"/admin/tooling/tooldefinition/{existing.pk}/change/")
    ui.fill("name", name)
    ui.submit()

    message = f"Tool name '{name}' {BAD_NAME_RULE}"
    assert ui.field_errors("name") == [message]
    assert_refused(ui, [message])
    # The refused value is shown back for correction.
    assert ui.field("name").get_attribute("value") == name
    shot(f"validation-tool-name-{request.node.callspec.id}")
    assert ToolDefinition.objects.count() == before
    if existing is not None:
        assert row_of(ToolDefinition, existing.pk) == stored


def test_function_tool_name_with_surrounding_whitespace_is_stripped(
    ui: UI, shot: Any
) -> None:
    """Not refused: the admin form (a Django ``CharField``) strips surrounding
    whitespace before the runtime's name rule sees it, so " deploy " is saved as
    "deploy". (The runtime's own "must not contain surrounding whitespace"
    message is only reachable outside the admin.)"""
    ui.go("/admin/tooling/tooldefinition/add/")
    ui.fill("name", " deploy ")
    ui.select("handler_key", "demo.deploy")
    ui.save_and_expect_success()
    shot("validation-tool-name-whitespace-stripped")
    assert list(ToolDefinition.objects.values_list("name", flat=True)) == ["deploy"]


@pytest.mark.parametrize("action", ["add", "edit"])
def test_function_tool_with_a_non_ascii_description_is_refused(
    ui: UI, shot: Any, action: str
) -> None:
    existing = tool("deploy") if action == "edit" else None
    before = ToolDefinition.objects.count()
    if existing is None:
        ui.go("/admin/tooling/tooldefinition/add/")
        ui.fill("name", "deploy")
        ui.select("handler_key", "demo.deploy")
    else:
        stored = row_of(ToolDefinition, existing.pk)
        ui.go(f"/admin/tooling/tooldefinition/{existing.pk}/change/")
    ui.fill("description", "Déployer le service en préproduction.")
    ui.submit()

    message = "Tool description must be ASCII."
    assert ui.field_errors("description") == [message]
    assert_refused(ui, [message])
    shot(f"validation-tool-description-non-ascii-{action}")
    assert ToolDefinition.objects.count() == before
    if existing is not None:
        assert row_of(ToolDefinition, existing.pk) == stored


def test_function_tool_with_an_overlong_description_is_refused(
    ui: UI, shot: Any
) -> None:
    """The browser itself stops at 200 characters (the input's ``maxlength``);
    a 201-character description that gets past it is refused by the server."""
    ui.go("/admin/tooling/tooldefinition/add/")
    ui.fill("name", "deploy")
    ui.select("handler_key", "demo.deploy")
    overlong = "Deploy the service. " * 10 + "!"
    assert len(overlong) == 201
    description = ui.field("description")
    assert description.get_attribute("maxlength") == "200"
    ui.fill("description", overlong)
    assert description.get_attribute("value") == overlong[:200]

    # As a client that ignores maxlength (or an edited page) would send it.
    ui.driver.execute_script("arguments[0].removeAttribute('maxlength')", description)
    ui.fill("description", overlong)
    assert ui.field("description").get_attribute("value") == overlong
    ui.submit()

    message = "Ensure this value has at most 200 characters (it has 201)."
    assert ui.field_errors("description") == [message]
    assert_refused(ui, [message])
    shot("validation-tool-description-overlong")
    assert ToolDefinition.objects.count() == 0


# -- sections ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unknown", "params", "message"),
    [
        pytest.param(
            "missing",
            {"service": "catalog-api"},
            "Template references unknown placeholder '$missing' (known: service).",
            id="undeclared",
        ),
        pytest.param(
            "missing",
            {},
            "Section does not accept parameters but declares placeholders "
            "($service, $missing).",
            id="no-params",
        ),
        pytest.param(
            "key",
            {"service": "catalog-api"},
            "Template references unknown placeholder '$key' (known: service).",
            id="named-like-a-field",
        ),
    ],
)
def test_section_template_with_an_unknown_placeholder_is_refused(
    ui: UI,
    shot: Any,
    request: pytest.FixtureRequest,
    unknown: str,
    params: dict[str, Any],
    message: str,
) -> None:
    tool("deploy")
    before = (SectionDefinition.objects.count(), SectionTool.objects.count())
    ui.go("/admin/tooling/sectiondefinition/add/")
    ui.fill("key", "ship")
    ui.fill("title", "Ship it")
    ui.fill("template", f"Ship $service to staging, then tell ${unknown}.")
    ui.fill("default_params", json.dumps(params))
    row = ui.add_inline_row("sectiontool_set")
    ui.autocomplete(f"id_sectiontool_set-{row}-tool", "deploy", "deploy")
    ui.submit()

    shot(f"validation-section-placeholder-{request.node.callspec.id}")
    assert ui.field_errors("template") == [message]
    assert_refused(ui, [message])
    assert (SectionDefinition.objects.count(), SectionTool.objects.count()) == before


def test_section_edit_with_an_unknown_placeholder_is_refused(ui: UI, shot: Any) -> None:
    tool("deploy")
    existing = section("ship", "Ship $service.", {"service": "catalog-api"}, "deploy")
    stored = row_of(SectionDefinition, existing.pk)
    links = list(SectionTool.objects.values_list("section__key", "tool__name"))
    ui.go(f"/admin/tooling/sectiondefinition/{existing.pk}/change/")
    ui.fill("template", "Ship $service, then tell $missing.")
    ui.submit()

    message = "Template references unknown placeholder '$missing' (known: service)."
    assert ui.field_errors("template") == [message]
    assert_refused(ui, [message])
    shot("validation-section-placeholder-edit")
    assert SectionDefinition.objects.count() == 1
    assert row_of(SectionDefinition, existing.pk) == stored
    assert list(SectionTool.objects.values_list("section__key", "tool__name")) == links


# -- prompt templates --------------------------------------------------------------

DUPLICATE_DEPLOY = (
    "Duplicate tool name 'deploy' in prompt 'ops/ship': sections 'ship' and "
    "'hotfix' both declare it."
)


@pytest.mark.parametrize("action", ["add", "edit"])
def test_prompt_with_a_tool_declared_by_two_sections_is_refused(
    ui: UI, shot: Any, action: str
) -> None:
    """Tool names are unique in the catalog, so a duplicate in a prompt is one
    tool attached to two of its sections; the prompt template admin refuses it
    (function and hosted tools share one namespace per prompt)."""
    for name in ("deploy", "build", "test"):
        tool(name)
    section("ship", "Ship it.", {}, "build", "deploy")
    section("hotfix", "Patch it.", {}, "test", "deploy")
    existing = None
    if action == "edit":
        existing = PromptTemplate.objects.create(namespace="ops", key="ship")
        PromptSection.objects.create(
            prompt=existing, section=SectionDefinition.objects.get(key="ship")
        )
        stored = row_of(PromptTemplate, existing.pk)
        ui.go(f"/admin/tooling/prompttemplate/{existing.pk}/change/")
    else:
        ui.go("/admin/tooling/prompttemplate/add/")
        ui.fill("namespace", "ops")
        ui.fill("key", "ship")
        ui.fill("name", "Ship")
        ui.autocomplete("id_prompt_sections-0-section", "ship", "ship")
    before = (PromptTemplate.objects.count(), prompt_links())
    row = ui.add_inline_row("prompt_sections")
    ui.autocomplete(f"id_prompt_sections-{row}-section", "hotfix", "hotfix")
    ui.fill(f"prompt_sections-{row}-position", "1")
    ui.submit()

    assert inline_errors(ui, "prompt_sections") == [DUPLICATE_DEPLOY]
    assert_refused(ui, [DUPLICATE_DEPLOY])
    shot(f"validation-prompt-duplicate-tool-{action}")
    assert (PromptTemplate.objects.count(), prompt_links()) == before
    if existing is not None:
        assert row_of(PromptTemplate, existing.pk) == stored


@pytest.mark.parametrize("attached_to", ["prompt", "section"])
def test_prompt_whose_sequential_policy_names_a_missing_tool_is_refused(
    ui: UI, shot: Any, attached_to: str
) -> None:
    """The rule: a policy's config is checked when the policy is saved (shape,
    self-dependencies, cycles), but the tools it names are checked against a
    prompt, when a prompt that uses the policy is saved. So the policy (and a
    section carrying it) are accepted, and the prompt is refused."""
    for name in ("deploy", "build"):
        tool(name)
    ui.go("/admin/tooling/policydefinition/add/")
    ui.fill("name", "ship-order")
    ui.select("kind", "sequential_dependency")
    # a tool not in the catalog (yet) is named in the JSON
    ui.pick_radio("config_source", "json")
    ui.fill("config", json.dumps({"dependencies": {"deploy": ["build", "compile"]}}))
    ui.save_and_expect_success()
    policy = PolicyDefinition.objects.get(name="ship-order")
    assert policy.config == {"dependencies": {"deploy": ["build", "compile"]}}

    ship = section("ship", "Ship it.", {}, "build", "deploy")
    if attached_to == "section":
        ui.go(f"/admin/tooling/sectiondefinition/{ship.pk}/change/")
        ui.choose("policies", "ship-order")
        ui.save_and_expect_success()
        assert list(ship.policies.values_list("name", flat=True)) == ["ship-order"]

    before = (PromptTemplate.objects.count(), prompt_links())
    ui.go("/admin/tooling/prompttemplate/add/")
    ui.fill("namespace", "ops")
    ui.fill("key", "ship")
    ui.autocomplete("id_prompt_sections-0-section", "ship", "ship")
    if attached_to == "prompt":
        ui.choose("policies", "ship-order")
    ui.submit()

    message = (
        "Policy 'ship-order' refers to tool 'compile', which prompt 'ops/ship' "
        "does not have."
    )
    # Shown above the prompt's sections (the prompt as a whole is refused),
    # also when the policy was chosen in the prompt's own "Policies" field.
    assert inline_errors(ui, "prompt_sections") == [message]
    assert ui.field_errors("policies") == []
    assert_refused(ui, [message])
    if attached_to == "prompt":
        chosen = ui.find("#id_policies_to").find_elements(By.TAG_NAME, "option")
        assert [option.text for option in chosen] == ["ship-order"]
    shot(f"validation-prompt-policy-missing-tool-{attached_to}")
    assert (PromptTemplate.objects.count(), prompt_links()) == before
