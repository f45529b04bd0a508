"""The offline provider's apply_patch and local shell items, read by the SDK."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import openai
import pytest

from tooling.offline import offline_transport
from tooling.offline.patches import (
    CREATED_DIFF,
    STALE_DIFF,
    awaits_answer,
)

APPLY_PATCH = {"type": "apply_patch"}
READ_FILE = {
    "type": "function",
    "name": "read_file",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    },
    "strict": True,
}
LOCAL_SHELL = {"type": "shell", "environment": {"type": "local"}}


def _client() -> openai.OpenAI:
    http_client: Any = httpx.Client(transport=offline_transport())
    return openai.OpenAI(
        api_key="sk-offline",
        base_url="http://offline.invalid/v1",
        http_client=http_client,
        max_retries=0,
    )


def _create(tools: list[Any], extra: Sequence[Any] = ()) -> Any:
    return _client().responses.create(
        model="gpt-5.4",
        input=[
            {"role": "system", "content": "Add a line to `docs/CHANGES.md`."},
            {"role": "user", "content": "Go."},
            *extra,
        ],
        tools=tools,
    )


def _dumped(response: Any) -> list[dict[str, Any]]:
    return [item.model_dump(exclude_none=True) for item in response.output]


def _answer(call: dict[str, Any], status: str, output: str) -> dict[str, Any]:
    return {
        "type": "apply_patch_call_output",
        "call_id": call["call_id"],
        "status": status,
        "output": output,
    }


def test_the_first_patch_creates_the_file_named_in_the_prompt() -> None:
    response = _create([APPLY_PATCH])

    [call] = response.output
    assert type(call).__name__ == "ResponseApplyPatchToolCall"
    assert call.operation.type == "create_file"
    assert call.operation.path == "docs/CHANGES.md"
    assert call.operation.diff == CREATED_DIFF
    assert call.call_id.startswith("call_")


def test_a_denied_update_leads_to_a_read_then_the_update_again() -> None:
    first = _dumped(_create([APPLY_PATCH, READ_FILE]))
    create = first[0]
    history = [*first, _answer(create, "completed", "Created docs/CHANGES.md")]
    # the model also tried read_file on its first turn: answer it
    for item in first[1:]:
        history.append(
            {"type": "function_call_output", "call_id": item["call_id"], "output": "no"}
        )
    second = _dumped(_create([APPLY_PATCH, READ_FILE], history))
    update = second[0]
    assert update["operation"]["type"] == "update_file"
    assert update["operation"]["diff"] == "@@\n-# Notes\n+# Notes (edited offline)\n"

    history += [
        *second,
        _answer(
            update, "failed", "File 'docs/CHANGES.md' must be read before overwriting."
        ),
    ]
    third = _dumped(_create([APPLY_PATCH, READ_FILE], history))
    assert [(i["type"], i.get("name"), i.get("arguments")) for i in third] == [
        ("function_call", "read_file", '{"path": "docs/CHANGES.md"}')
    ]

    history += [
        *third,
        {
            "type": "function_call_output",
            "call_id": third[0]["call_id"],
            "output": "Read 'docs/CHANGES.md' (9 bytes).\n\n# Changes\nx\n",
        },
    ]
    fourth = _dumped(_create([APPLY_PATCH, READ_FILE], history))
    assert fourth[0]["operation"]["diff"] == (
        "@@\n-# Changes\n+# Changes (edited offline)\n"
    )

    history += [*fourth, _answer(fourth[0], "completed", "Updated docs/CHANGES.md")]
    fifth = _dumped(_create([APPLY_PATCH, READ_FILE], history))
    assert fifth[0]["operation"]["diff"] == STALE_DIFF

    history += [*fifth, _answer(fifth[0], "failed", "Context not found in ...")]
    sixth = _create([APPLY_PATCH, READ_FILE], history)
    assert [item.type for item in sixth.output] == ["message"]


def test_an_unanswered_patch_call_is_refused_like_the_real_api() -> None:
    first = _dumped(_create([APPLY_PATCH]))
    with pytest.raises(openai.BadRequestError, match="No tool output found for apply"):
        _create([APPLY_PATCH], first)


def test_local_shell_calls_a_timeout_and_a_refused_command() -> None:
    first = _create([LOCAL_SHELL])
    [call] = first.output
    assert type(call).__name__ == "ResponseFunctionShellToolCall"
    assert call.environment.type == "local"
    assert call.action.commands == [
        "ls",
        "wc -l docs/CHANGES.md",
        "tail -F docs/CHANGES.md",
    ]
    assert call.action.timeout_ms == 500
    dumped = call.model_dump(exclude_none=True)
    answer = {
        "type": "shell_call_output",
        "call_id": call.call_id,
        "output": [
            {"stdout": "", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}
        ]
        * 3,
    }
    second = _create([LOCAL_SHELL], [dumped, answer])
    [refused] = second.output
    assert refused.action.commands == ["rm -rf docs/CHANGES.md"]
    third = _create(
        [LOCAL_SHELL],
        [
            dumped,
            answer,
            refused.model_dump(exclude_none=True),
            {**answer, "call_id": refused.call_id},
        ],
    )
    assert [item.type for item in third.output] == ["message"]


def test_which_items_wait_for_the_product() -> None:
    assert awaits_answer({"type": "function_call"})
    assert awaits_answer({"type": "apply_patch_call"})
    assert awaits_answer({"type": "shell_call", "environment": {"type": "local"}})
    assert not awaits_answer(
        {"type": "shell_call", "environment": {"type": "container_reference"}}
    )
    assert not awaits_answer({"type": "web_search_call"})
