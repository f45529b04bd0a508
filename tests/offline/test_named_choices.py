"""The offline model takes the argument choice its prompt names: "Release to
production" deploys to production although the schema lists staging first.
Its "Tools:" example lists do not count, and a prompt naming several choices
(or none) keeps the schema's first one: deterministic either way."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from openai import OpenAI

from tooling.offline import offline_transport
from tooling.offline.calls import named_choices

ENVIRONMENT = {
    "type": "object",
    "properties": {
        "environment": {
            "type": ["string", "null"],
            "enum": ["staging", "production", None],
        },
        "note": {"type": "string"},
    },
    "required": ["environment", "note"],
    "additionalProperties": False,
}
EXAMPLES = (
    "Tools:\n"
    "- deploy: Dry run.\n"
    "  - Deploy to staging.\n"
    '    input: {"environment": "staging"}\n'
    "    output: [deploy] Would deploy to staging"
)


@pytest.mark.parametrize(
    ("text", "chosen"),
    [
        ("Release catalog-api to production.", "production"),
        ("Ship catalog-api to staging.", "staging"),
        (f"Release catalog-api to production.\n\n{EXAMPLES}", "production"),
        ("Deploy to staging, then to production.", "staging"),  # both: the first
        ("Deploy it.", "staging"),  # none: the first
        ("Release to preproduction.", "staging"),  # a word, not a part of one
        ("", "staging"),
    ],
)
def test_named_choices_takes_the_one_choice_the_prompt_names(text, chosen):
    arguments = {"environment": "staging", "note": "example"}
    assert named_choices(ENVIRONMENT, arguments, text)["environment"] == chosen


def test_named_choices_leaves_arguments_without_choices_alone():
    arguments = {"environment": "staging", "note": "example"}
    result = named_choices(ENVIRONMENT, arguments, "note: production")
    assert result["note"] == "example"


def test_the_model_deploys_where_the_prompt_says_over_http():
    http_client: Any = httpx.Client(transport=offline_transport())
    client: Any = OpenAI(
        api_key="sk-offline",
        base_url="http://offline.invalid/v1",
        http_client=http_client,
        max_retries=0,
    )
    tool = {
        "type": "function",
        "name": "deploy",
        "description": "Deploy.",
        "parameters": ENVIRONMENT,
        "strict": True,
    }
    response = client.responses.create(
        model="gpt-5.4",
        input=[{"role": "user", "content": "Release catalog-api to production."}],
        tools=[tool],
    )
    [call] = [item for item in response.output if item.type == "function_call"]
    assert json.loads(call.arguments)["environment"] == "production"
