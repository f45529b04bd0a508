"""Issue #28: a function tool's parameter descriptions are a box per parameter
of its handler (the handler's own description as the placeholder), and its
examples a row each (a description, the input and the output as JSON), whose
errors name the example, and for JSON its line and column; a saved tool comes
back unchanged; what the editors cannot show stays JSON; hostile input is an
error, never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse

from tests.tooling.admin_forms import change_form_data
from tests.tooling.factories import ToolDefinitionFactory
from tooling.forms import ToolDefinitionForm
from tooling.models import ToolDefinition

pytestmark = pytest.mark.django_db

BOX = "param_descriptions:demo.count_words:text"
OUT = '{"words": 1, "characters": 1}'
COUNTED = {"words": 1, "characters": 1}


def examples(*given: dict[str, str]) -> dict[str, Any]:
    """The examples editor's post: ``given`` rows, then a blank one."""
    data: dict[str, Any] = {"examples-rows": str(len(given) + 1)}
    for index, row in enumerate([*given, {}]):
        for column, value in row.items():
            data[f"examples-{index}-{column}"] = value
    return data


def tool_form(handler: str = "demo.count_words", **data: Any) -> ToolDefinitionForm:
    return ToolDefinitionForm(
        data={
            "name": "count_words",
            "handler_key": handler,
            "param_descriptions-editor": "boxes",
            "enabled": "on",
            **data,
        }
    )


def change_url(tool: ToolDefinition) -> str:
    return reverse("admin:tooling_tooldefinition_change", args=[tool.pk])


# -- a box per parameter -----------------------------------------------------------


def test_a_box_per_parameter_of_the_chosen_handler(admin_client: Any) -> None:
    tool = ToolDefinitionFactory.create(handler_key="demo.count_words")
    page = admin_client.get(change_url(tool)).content.decode()
    shown = page.split('class="param-overrides" data-handler="demo.count_words">')[1]
    shown = shown.split("</div>")[0]
    assert f'name="{BOX}"' in shown
    assert 'placeholder="The text whose words to count."' in shown
    assert "<td>string</td>" in shown
    # the other handlers' boxes are there for the script, hidden
    assert 'class="param-overrides" data-handler="demo.deploy" hidden>' in page
    assert 'data-handler="" hidden>Pick a handler to describe its parameters.' in page


def test_picking_another_handler_keeps_the_shared_parameters_descriptions(
    admin_client: Any,
) -> None:
    tool = ToolDefinitionFactory.create(
        handler_key="demo.build", param_descriptions={"target": "What to build."}
    )
    url = change_url(tool)
    page = admin_client.get(url).content.decode()
    assert 'name="param_descriptions:demo.lint:target" id=' in page
    lint = page.split('name="param_descriptions:demo.lint:target"')[1].split(">")[0]
    assert 'value="What to build."' in lint
    data = change_form_data(admin_client, url)
    data["handler_key"] = "demo.lint"
    assert admin_client.post(url, data).status_code == 302
    tool.refresh_from_db()
    assert tool.handler_key == "demo.lint"
    assert tool.param_descriptions == {"target": "What to build."}


def test_the_boxes_write_the_descriptions_given() -> None:
    form = tool_form(
        **{BOX: "  The draft to count.  ", "param_descriptions:demo.deploy:x": "no"}
    )
    assert form.is_valid(), form.errors
    assert form.save().param_descriptions == {"text": "The draft to count."}


def test_an_empty_box_keeps_the_handlers_description() -> None:
    form = tool_form(**{BOX: "   "})
    assert form.is_valid(), form.errors
    assert form.save().param_descriptions == {}


def test_a_handler_that_takes_no_overrides_says_so(admin_client: Any) -> None:
    tool = ToolDefinitionFactory.create(
        name="plan", handler_key="planning.planning_read_plan"
    )
    page = admin_client.get(change_url(tool)).content.decode()
    assert (
        "Handler &#x27;planning.planning_read_plan&#x27; does not accept overrides."
        in page
    )


def test_a_stale_description_is_shown_and_refused(admin_client: Any) -> None:
    tool = ToolDefinitionFactory.create(
        handler_key="demo.count_words", param_descriptions={"words": "Old name."}
    )
    url = change_url(tool)
    page = admin_client.get(url).content.decode()
    assert 'name="param_descriptions:demo.count_words:words" ' in page
    assert "not a parameter of this handler: clear it" in page
    response = admin_client.post(url, change_form_data(admin_client, url))
    assert response.context["adminform"].form.errors["param_descriptions"] == [
        "Unknown parameter(s): words; the handler takes: text."
    ]
    data = change_form_data(admin_client, url)
    data["param_descriptions:demo.count_words:words"] = ""
    assert admin_client.post(url, data).status_code == 302
    tool.refresh_from_db()
    assert tool.param_descriptions == {}


# -- a row per example -------------------------------------------------------------


def test_example_rows_write_examples() -> None:
    form = tool_form(
        **examples(
            {
                "description": " Count two words. ",
                "input": '{"text": "one two"}',
                "output": '{"words": 2, "characters": 7}',
            },
            {"description": "Dropped.", "input": "{", "remove": "on"},
            {"description": "", "input": "", "output": ""},
        )
    )
    assert form.is_valid(), form.errors
    assert json.dumps(form.save().examples) == json.dumps(
        [
            {
                "description": "Count two words.",
                "input": {"text": "one two"},
                "output": {"words": 2, "characters": 7},
            }
        ]
    )


def test_each_examples_errors_name_it_and_every_error_shows_at_once() -> None:
    form = tool_form(
        name="Bad Name",
        **{BOX: "caf\u00e9"},
        **examples(
            {"description": "Removed.", "remove": "on"},
            {
                "description": "Bad input JSON.",
                "input": '{\n  "text": "a"\n  "x": 1\n}',
                "output": "{]",
            },
            {"description": "Wrong type.", "input": '{"text": 5}', "output": "{}"},
            {"description": "Not ASCII: \u00e9.", "input": '{"text": "a"}'},
        ),
    )
    assert not form.is_valid()
    assert "must match" in form.errors["name"][0]
    assert form.errors["param_descriptions"] == [
        "Description of 'text' must be 1-200 ASCII characters."
    ]
    assert form.errors["examples"] == [
        "Example 2, input: Enter valid JSON: Expecting ',' delimiter at line 3, "
        "column 3.",
        "Example 2, output: Enter valid JSON: Expecting property name enclosed in "
        "double quotes at line 1, column 2.",
        # the rows whose JSON reads are still checked against the handler
        "Example 3 does not match the handler's types: text: expected string, "
        "got integer",
        "Example 4 does not match the handler's types: Missing required field: 'words'",
        # and its description, checked after its types (found by a hostile review)
        "Example 4: Tool example description must be ASCII.",
    ]


def test_each_example_is_checked_against_the_handler_by_its_number() -> None:
    form = tool_form(
        **examples(
            {"description": "Removed.", "remove": "on"},
            {"description": "Wrong type.", "input": '{"text": 5}', "output": OUT},
            {
                "description": "Not ASCII: \u00e9.",
                "input": '{"text": "a"}',
                "output": OUT,
            },
            {"description": "Fine.", "input": '{"text": "a"}', "output": OUT},
            {"description": "No output.", "input": '{"text": "a"}'},
        ),
    )
    assert not form.is_valid()
    assert form.errors == {
        "examples": [
            "Example 2 does not match the handler's types: text: expected string, "
            "got integer",
            "Example 3: Tool example description must be ASCII.",
            "Example 5 does not match the handler's types: Missing required field: "
            "'words'",
        ]
    }


def test_an_example_without_description_is_refused_by_its_number() -> None:
    form = tool_form(
        **examples({"description": " ", "input": '{"text": "a"}', "output": OUT})
    )
    assert not form.is_valid()
    assert form.errors == {
        "examples": [
            "Example 1: Tool example description must be 1-200 ASCII characters "
            "(got 0)."
        ]
    }


# -- a saved tool comes back unchanged ---------------------------------------------


@pytest.mark.parametrize(
    "saved",
    [
        [{"output": COUNTED, "input": {"text": "a"}, "description": "One."}],
        [{"description": " Spaced. ", "input": {"text": "a\nb"}, "output": COUNTED}],
        # what rows cannot show (the runtime takes any description): JSON
        [{"description": 5, "input": {"text": "a"}, "output": COUNTED}],
    ],
)
def test_saving_a_tool_untouched_keeps_its_json_exactly(
    admin_client: Any, saved: list[Any]
) -> None:
    tool = ToolDefinitionFactory.create(
        handler_key="demo.count_words",
        param_descriptions={"text": " The draft. "},
        examples=saved,
    )
    before = json.dumps(ToolDefinition.objects.get().examples)
    url = change_url(tool)
    response = admin_client.post(url, change_form_data(admin_client, url))
    assert response.status_code == 302, response.context["adminform"].form.errors
    tool = ToolDefinition.objects.get()
    assert json.dumps(tool.examples) == before
    assert tool.param_descriptions == {"text": " The draft. "}
    entry = LogEntry.objects.get(object_id=str(tool.pk))
    assert entry.get_change_message() == "No fields changed."


def test_examples_rows_cannot_show_are_edited_as_json(admin_client: Any) -> None:
    tool = ToolDefinitionFactory.create(
        handler_key="demo.count_words",
        examples=[{"description": 5, "input": {"text": "a"}, "output": {}}],
    )
    page = admin_client.get(change_url(tool)).content.decode()
    assert "These examples cannot be shown as rows" in page
    assert '<textarea name="examples"' in page


# -- hostile input -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"description": "a\x00b", "input": "{}"},
            "Example 1, description: Must not contain NUL bytes or lone surrogates.",
        ),
        (
            {"description": "Ok.", "input": '{"text": "\\ud800"}'},
            "Example 1, input: Must not contain NUL bytes or lone surrogates (at "
            "text).",
        ),
        (
            {"description": "Ok.", "output": '{"x": "\u202e"}'},
            "Example 1, output: Must not contain bidirectional control characters "
            "(at x).",
        ),
        (
            {"description": "Ok.", "output": '{"words": NaN}'},
            "Example 1, output: Must not contain NaN or Infinity",
        ),
        (
            {"description": "Ok.", "input": "[" * 100_000},
            "Example 1, input: Must not be nested more than 64 levels deep.",
        ),
        (
            {"description": "Ok.", "input": '{"text": ' + "9" * 5000 + "}"},
            "Example 1, input: Enter valid JSON: a number has too many digits.",
        ),
        (
            {"description": "prod\u202e.", "input": '{"text": "a"}'},
            "Example 1, description: Must not contain bidirectional control",
        ),
    ],
)
def test_hostile_examples_are_refused_naming_the_example(
    row: dict[str, str], message: str
) -> None:
    form = tool_form(**examples(row))
    assert not form.is_valid()
    [error] = form.errors.get_json_data()["examples"]
    assert error["message"].startswith(message), error


def test_too_many_examples_are_refused() -> None:
    many = [{"description": "Ok.", "input": "{}"} for _ in range(250)]
    form = tool_form(name="Bad Name", **examples(*many))
    assert not form.is_valid()
    # said once, on its field, and the other fields' errors still shown
    assert form.errors["examples"] == ["At most 200 rows."]
    assert "__all__" not in form.errors and "must match" in form.errors["name"][0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a\x00b", "Must not contain NUL bytes or lone surrogates (at text)."),
        ("a\ud800b", "Must not contain NUL bytes or lone surrogates (at text)."),
        ("x\u202ey", "Must not contain bidirectional control characters (at text)."),
        ("x" * 100_000, "Description of 'text' must be 1-200 ASCII characters."),
    ],
)
def test_hostile_descriptions_are_refused(text: str, message: str) -> None:
    form = tool_form(**{BOX: text})
    assert not form.is_valid()
    assert form.errors["param_descriptions"] == [message]


def test_a_hostile_description_posted_to_the_admin_is_an_error(
    admin_client: Any,
) -> None:
    tool = ToolDefinitionFactory.create(handler_key="demo.count_words")
    url = change_url(tool)
    data = change_form_data(admin_client, url)
    data[BOX] = "x\u202ey\x00"
    response = admin_client.post(url, data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["param_descriptions"]
    tool.refresh_from_db()
    assert tool.param_descriptions == {}


def test_posted_json_still_works() -> None:
    form = tool_form(
        param_descriptions='{"text": "The words."}',
        examples='[{"input": {"text": "a"}, "description": "One.", "output": '
        + OUT
        + "}]",
    )
    assert form.is_valid(), form.errors
    tool = form.save()
    assert tool.param_descriptions == {"text": "The words."}
    assert json.dumps(tool.examples) == json.dumps(
        [{"description": "One.", "input": {"text": "a"}, "output": COUNTED}]
    )


def test_an_example_cell_with_a_key_twice_is_refused() -> None:
    form = tool_form(
        **examples(
            {
                "description": "Twice.",
                "input": '{"text": "a", "text": "b"}',
                "output": OUT,
            }
        )
    )
    assert not form.is_valid()
    assert form.errors["examples"] == [
        'Example 1, input: Enter valid JSON: the key "text" appears twice in one '
        "object (only the last would be kept)."
    ]
