"""The structured editors at their edges (a review of issue #28): as many rows
as allowed, blank rows beyond them, more entries than the rows take, JSON
escapes in a condition, descriptions a box cannot post back. Each opens and
saves unchanged, or is refused naming why: never a 500, never a silent
change."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from tests.tooling.admin_forms import change_form_data
from tooling.forms import PolicyDefinitionForm, ToolDefinitionForm
from tooling.forms.editors import MAX_ROWS
from tooling.models import PolicyDefinition, ToolDefinition

pytestmark = pytest.mark.django_db

COUNTED = {"words": 1, "characters": 1}


def policy_url(policy: PolicyDefinition) -> str:
    return reverse("admin:tooling_policydefinition_change", args=[policy.pk])


def tool_url(tool: ToolDefinition) -> str:
    return reverse("admin:tooling_tooldefinition_change", args=[tool.pk])


def tools(count: int) -> list[str]:
    names = [f"t{number:03d}" for number in range(count)]
    ToolDefinition.objects.bulk_create(
        ToolDefinition(name=name, handler_key="demo.count_words") for name in names
    )
    return names


def save_untouched(client: Any, url: str) -> Any:
    return client.post(url, change_form_data(client, url))


def stored(model: Any, field: str) -> str:
    """The field of the one saved ``model`` as the database gives it back
    (PostgreSQL's jsonb orders keys its own way)."""
    return json.dumps(getattr(model.objects.get(), field))


# -- as many rows as allowed ---------------------------------------------------------


def test_a_policy_with_as_many_limits_as_rows_saves_unchanged(
    admin_client: Any,
) -> None:
    # the page brings two blank rows after the 200 saved ones: they do not count
    config = {"limits": {name: 1 for name in tools(MAX_ROWS)}}
    policy = PolicyDefinition.objects.create(name="p", kind="call_limit", config=config)
    before = stored(PolicyDefinition, "config")
    response = save_untouched(admin_client, policy_url(policy))
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert stored(PolicyDefinition, "config") == before


def test_blank_rows_beyond_the_limit_are_not_counted() -> None:
    names = tools(MAX_ROWS)
    data: dict[str, Any] = {
        "name": "p",
        "kind": "call_limit",
        "config_source": "fields",
    }
    for index in range(MAX_ROWS + 30):  # "Add a row" clicked 30 times
        filled = index < MAX_ROWS
        data[f"limits-{index}-tool"] = names[index] if filled else ""
        data[f"limits-{index}-limit"] = "1" if filled else ""
    form = PolicyDefinitionForm(data=data)
    assert form.is_valid(), form.errors
    assert len(form.cleaned_data["config"]["limits"]) == MAX_ROWS


def test_a_policy_with_more_entries_than_rows_opens_as_json_and_saves_unchanged(
    admin_client: Any,
) -> None:
    config = {"limits": {name: 1 for name in tools(MAX_ROWS + 1)}}
    policy = PolicyDefinition.objects.create(name="p", kind="call_limit", config=config)
    before = stored(PolicyDefinition, "config")
    url = policy_url(policy)
    form = admin_client.get(url).context["adminform"].form
    assert form["config_source"].value() == "json"
    assert f"more than {MAX_ROWS} limits" in form.fields["config_source"].help_text
    response = save_untouched(admin_client, url)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert stored(PolicyDefinition, "config") == before


def test_a_tool_with_as_many_examples_as_rows_saves_unchanged(
    admin_client: Any,
) -> None:
    saved = [
        {"description": f"Example {n}.", "input": {"text": "a"}, "output": COUNTED}
        for n in range(MAX_ROWS)
    ]
    tool = ToolDefinition.objects.create(
        name="count", handler_key="demo.count_words", examples=saved
    )
    before = stored(ToolDefinition, "examples")
    response = save_untouched(admin_client, tool_url(tool))
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert stored(ToolDefinition, "examples") == before


def test_more_examples_than_rows_are_edited_as_json(admin_client: Any) -> None:
    saved = [{"description": "Ok.", "input": {"text": "a"}, "output": COUNTED}] * (
        MAX_ROWS + 1
    )
    tool = ToolDefinition.objects.create(
        name="count", handler_key="demo.count_words", examples=saved
    )
    before = stored(ToolDefinition, "examples")
    url = tool_url(tool)
    assert '<textarea name="examples"' in admin_client.get(url).content.decode()
    response = save_untouched(admin_client, url)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert stored(ToolDefinition, "examples") == before


# -- JSON escapes in a condition -----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"prod\\u202e"', "Must not contain bidirectional control characters (U+202E)"),
        ('"a\\u0000b"', "Must not contain NUL bytes or lone surrogates"),
        ('"a\\ud800b"', "Must not contain NUL bytes or lone surrogates"),
    ],
)
def test_a_condition_value_escaping_what_text_may_not_hold_is_refused_on_the_rule(
    value: str, message: str
) -> None:
    ToolDefinition.objects.create(name="deploy", handler_key="demo.deploy")
    form = PolicyDefinitionForm(
        data={
            "name": "p",
            "kind": "approval",
            "config_source": "fields",
            "rules-0-tool": "deploy",
            "rules-0-when": f"environment = {value}",
        }
    )
    assert not form.is_valid()
    assert "config" not in form.errors  # the JSON is not what was edited
    [error] = form.errors.get_json_data()["rules"]
    assert error["message"].startswith(f"Rule 1, line 1: {message}"), error


# -- descriptions a box cannot post back -------------------------------------------


@pytest.mark.parametrize("key", ["a:b", ""])
def test_a_description_a_box_cannot_post_back_is_not_dropped(
    admin_client: Any, key: str
) -> None:
    saved = {key: "Stale.", "text": "The draft."}
    tool = ToolDefinition.objects.create(
        name="count", handler_key="demo.count_words", param_descriptions=saved
    )
    url = tool_url(tool)
    response = save_untouched(admin_client, url)
    tool.refresh_from_db()
    assert tool.param_descriptions == saved
    assert response.status_code == 200  # refused: not a parameter, shown as JSON
    errors = response.context["adminform"].form.errors["param_descriptions"]
    assert errors[0].startswith("Unknown parameter(s): "), errors
    form = ToolDefinitionForm(instance=tool)
    assert "cannot be shown as a box per parameter" in str(form["param_descriptions"])


# -- line breaks a text box cannot hold ----------------------------------------------
# A browser drops the line breaks of a text input's value (admin_forms does
# too): a saved text holding one is shown where it survives, or as JSON.


def test_a_parameter_description_with_a_line_break_saves_unchanged(
    admin_client: Any,
) -> None:
    saved = {"text": "The draft,\nall of it."}
    tool = ToolDefinition.objects.create(
        name="count", handler_key="demo.count_words", param_descriptions=saved
    )
    response = save_untouched(admin_client, tool_url(tool))
    assert response.status_code == 302, response.context["adminform"].form.errors
    tool.refresh_from_db()
    assert tool.param_descriptions == saved


def test_an_example_description_with_a_line_break_saves_unchanged(
    admin_client: Any,
) -> None:
    saved = [{"description": "One\nword.", "input": {"text": "a"}, "output": COUNTED}]
    tool = ToolDefinition.objects.create(
        name="count", handler_key="demo.count_words", examples=saved
    )
    before = stored(ToolDefinition, "examples")
    response = save_untouched(admin_client, tool_url(tool))
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert stored(ToolDefinition, "examples") == before


@pytest.mark.parametrize(
    ("kind", "config"),
    [
        ("read_before_write", {"mount_point": "work\nspace"}),
        ("approval", {"rules": [{"tool": "t000"}], "approvers": {"group": "A\nB"}}),
    ],
)
def test_a_policy_text_with_a_line_break_saves_unchanged(
    admin_client: Any, kind: str, config: Any
) -> None:
    tools(1)
    policy = PolicyDefinition.objects.create(name="p", kind=kind, config=config)
    before = stored(PolicyDefinition, "config")
    response = save_untouched(admin_client, policy_url(policy))
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert stored(PolicyDefinition, "config") == before
