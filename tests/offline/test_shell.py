"""Hosted shell items from the offline provider, read by the real SDK."""

from __future__ import annotations

from typing import Any

import httpx
from openai import OpenAI

from tooling.offline import offline_transport

AUTO = {
    "type": "shell",
    "environment": {
        "type": "container_auto",
        "network_policy": {"type": "disabled"},
        "file_ids": ["file-a", "file-b"],
    },
}
REFERENCE = {
    "type": "shell",
    "environment": {"type": "container_reference", "container_id": "cntr_existing"},
}


def make_client() -> Any:
    http_client: Any = httpx.Client(transport=offline_transport())
    return OpenAI(
        api_key="sk-offline",
        base_url="http://offline.invalid/v1",
        http_client=http_client,
        max_retries=0,
    )


def _create(
    tools: list[Any], input_items: list[Any] | None = None, **kwargs: Any
) -> Any:
    return make_client().responses.create(
        model="gpt-5.4",
        input=input_items or [{"role": "user", "content": "List the data files"}],
        tools=tools,
        **kwargs,
    )


def test_a_hosted_shell_call_and_its_output_parse_as_sdk_items() -> None:
    response = _create([AUTO])

    call, output, message = response.output
    assert type(call).__name__ == "ResponseFunctionShellToolCall"
    assert type(output).__name__ == "ResponseFunctionShellToolCallOutput"
    assert message.type == "message"
    assert call.call_id == output.call_id and call.status == "completed"
    assert call.action.commands == ["ls -1 /mnt/data", "cat notes.txt", "sleep 120"]
    assert (call.action.timeout_ms, call.action.max_output_length) == (10000, 4096)
    assert call.environment.type == "container_reference"
    assert call.environment.container_id.startswith("cntr_")
    completed, failed, timed_out = output.output
    assert (completed.stdout, completed.outcome.type, completed.outcome.exit_code) == (
        "file-a\nfile-b\n",
        "exit",
        0,
    )
    assert failed.outcome.exit_code == 1 and "No such file" in failed.stderr
    assert timed_out.outcome.type == "timeout"


def test_a_referenced_container_is_the_one_the_call_runs_in() -> None:
    call = _create([REFERENCE]).output[0]
    assert call.environment.container_id == "cntr_existing"


def test_a_local_shell_or_tool_choice_none_runs_nothing_in_a_container() -> None:
    local = {"type": "shell", "environment": {"type": "local"}}
    # a local shell's commands are the product's to run: no output comes back
    assert "shell_call_output" not in [item.type for item in _create([local]).output]
    assert [item.type for item in _create([AUTO], tool_choice="none").output] == [
        "message"
    ]


def test_the_shell_runs_once_per_conversation() -> None:
    first = _create([AUTO])
    history: list[Any] = [
        {"role": "user", "content": "List the data files"},
        *(item.model_dump(exclude_none=True) for item in first.output),
        {"role": "user", "content": "And now?"},
    ]
    second = _create([AUTO], history)
    assert [item.type for item in second.output] == ["message"]
