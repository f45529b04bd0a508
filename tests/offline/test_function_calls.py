"""Function calling through the real SDK: arguments, loops, recovery, limits."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
from openai import OpenAI
from openai.types.responses import ResponseFunctionToolCall

from tooling.offline import offline_transport

SYSTEM = {"role": "system", "content": "# Deploy helper\nShip the release."}


def make_client() -> Any:
    http_client: Any = httpx.Client(transport=offline_transport())
    return OpenAI(
        api_key="sk-offline",
        base_url="http://offline.invalid/v1",
        http_client=http_client,
        max_retries=0,
    )


def function(name: str, **properties: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "description": f"The {name} tool.",
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
        "strict": True,
    }


def conforms(value: Any, schema: dict[str, Any]) -> bool:
    """A deliberately independent, minimal JSON-schema check for the tests."""
    if "anyOf" in schema:
        return any(conforms(value, branch) for branch in schema["anyOf"])
    if "enum" in schema and value not in schema["enum"]:
        return False
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds or []
    checks: dict[str, Callable[[Any], bool]] = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }
    if kinds and not any(checks[kind](value) for kind in kinds):
        return False
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        if set(value) != set(schema.get("required", [])) or set(value) - set(
            properties
        ):
            return False
        return all(conforms(value[key], properties[key]) for key in value)
    if isinstance(value, list):
        return bool(value) and all(conforms(item, schema["items"]) for item in value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return bool(
            schema.get("minimum", value) <= value <= schema.get("maximum", value)
        )
    return True


def calls_of(response: Any) -> list[Any]:
    return [
        item for item in response.output if isinstance(item, ResponseFunctionToolCall)
    ]


Outcome = Callable[[ResponseFunctionToolCall, int], str]


def run_loop(
    tools: list[dict[str, Any]], outcome: Outcome, *, max_turns: int = 12, **extra: Any
) -> tuple[list[Any], list[Any]]:
    """Drive the manual-history loop the runtime uses until a message arrives.

    Like the runtime's adapter, a forcing ``tool_choice`` applies to the first
    turn only; later turns send ``"auto"``.
    """
    client = make_client()
    history: list[Any] = [SYSTEM]
    responses: list[Any] = []
    for turn in range(1, max_turns + 1):
        response = client.responses.create(
            model="gpt-5.4", input=history, tools=tools, **extra
        )
        responses.append(response)
        history += [item.model_dump(exclude_none=True) for item in response.output]
        calls = calls_of(response)
        if not calls:
            return responses, history
        if extra.get("tool_choice") not in (None, "auto", "none"):
            extra["tool_choice"] = "auto"
        for call in calls:
            history.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": outcome(call, turn),
                }
            )
    raise AssertionError("the offline model never answered")


def always_ok(call: ResponseFunctionToolCall, turn: int) -> str:
    return "OK"


def test_function_call_arguments_are_valid_for_their_schema() -> None:
    step = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "status": {"type": "string", "enum": ["pending", "in_progress", "done"]},
        },
        "required": ["title", "status"],
        "additionalProperties": False,
    }
    tools = [
        function(
            "planning_setup_plan",
            objective={"type": "string", "description": "What to achieve."},
            initial_steps={"type": "array", "items": {"type": "string"}},
        ),
        function(
            "write_file",
            path={"type": "string"},
            content={"type": "string"},
            mode={"type": ["string", "null"], "enum": ["overwrite", "append", None]},
        ),
        function(
            "tune",
            retries={"type": "integer", "minimum": 2, "maximum": 5},
            ratio={"type": "number", "minimum": 0, "maximum": 0.25},
            dry_run={"type": "boolean"},
            note={"anyOf": [{"type": "string"}, {"type": "null"}]},
            steps={"type": "array", "items": step},
        ),
    ]

    response = make_client().responses.create(
        model="gpt-5.4", input=[SYSTEM], tools=tools
    )

    calls = calls_of(response)
    assert [call.name for call in calls] == [
        "planning_setup_plan",
        "write_file",
        "tune",
    ]
    assert all(call.status == "completed" for call in calls)
    assert len({call.call_id for call in calls}) == 3
    assert all(
        call.call_id.startswith("call_") and call.id.startswith("fc_") for call in calls
    )
    for call, tool in zip(calls, tools, strict=True):
        arguments = json.loads(call.arguments)
        assert conforms(arguments, tool["parameters"]), (call.name, arguments)
    assert json.loads(calls[0].arguments) == {
        "objective": "Complete the task",
        "initial_steps": ["Draft the document"],
    }
    assert json.loads(calls[1].arguments) == {
        "path": "notes.md",
        "content": "Drafted by the offline model.",
        "mode": "overwrite",
    }
    assert json.loads(calls[2].arguments)["retries"] == 2
    assert response.output_text == ""


def test_web_search_call_comes_before_function_calls() -> None:
    tools = [{"type": "web_search"}, function("lint"), function("build")]

    response = make_client().responses.create(
        model="gpt-5.4", input=[SYSTEM], tools=tools
    )

    assert [item.type for item in response.output] == [
        "web_search_call",
        "function_call",
        "function_call",
    ]


def test_full_loop_feeds_outputs_back_until_a_message() -> None:
    tools = [
        {"type": "web_search"},
        function("lint"),
        function("build", target={"type": "string"}),
    ]

    responses, history = run_loop(
        tools, always_ok, include=["web_search_call.action.sources"]
    )

    assert len(responses) == 2
    final = responses[-1]
    assert [item.type for item in final.output] == ["message"]
    assert final.status == "completed"
    assert "Tool calls: lint ok, build ok." in final.output_text
    assert "Hosted tools: web_search completed." in final.output_text
    assert final.created_at == 1767225600 + 2
    assert final.usage is not None and final.usage.total_tokens == (
        final.usage.input_tokens + final.usage.output_tokens
    )
    assert [item.get("type") for item in history].count("function_call_output") == 2


def test_dependency_denial_leads_to_prerequisite_then_retry() -> None:
    tools = [function("deploy", env={"type": "string"}), function("build")]
    seen: list[tuple[int, str, str]] = []
    built = False

    def outcome(call: ResponseFunctionToolCall, turn: int) -> str:
        nonlocal built
        seen.append((turn, call.name, call.arguments))
        if call.name == "build":
            built = True
            return "Built."
        return "Deployed." if built else "Tool 'deploy' requires: build"

    responses, _ = run_loop(
        tools, outcome, tool_choice={"type": "function", "name": "deploy"}
    )

    deploy_args = '{"env":"example"}'
    assert seen == [
        (1, "deploy", deploy_args),
        (2, "build", "{}"),
        (3, "deploy", deploy_args),
    ]
    assert len(responses) == 4
    assert "deploy failed, build ok, deploy ok" in responses[-1].output_text


def test_dependency_met_in_the_same_batch_retries_at_once() -> None:
    tools = [function("deploy"), function("lint"), function("build")]
    passed: set[str] = set()

    def outcome(call: ResponseFunctionToolCall, turn: int) -> str:
        missing = {"deploy": ["build", "lint"]}.get(call.name, [])
        missing = [name for name in missing if name not in passed]
        if missing:
            return f"Tool '{call.name}' requires: {', '.join(missing)}"
        passed.add(call.name)
        return "OK"

    responses, _ = run_loop(tools, outcome)

    assert [[c.name for c in calls_of(r)] for r in responses] == [
        ["deploy", "lint", "build"],
        ["deploy"],
        [],
    ]


def test_read_before_write_denial_reads_then_rewrites() -> None:
    tools = [
        function("write_file", path={"type": "string"}, content={"type": "string"}),
        function("read_file", path={"type": "string"}),
    ]
    read: set[str] = set()

    def outcome(call: ResponseFunctionToolCall, turn: int) -> str:
        path = json.loads(call.arguments)["path"]
        if call.name == "read_file":
            read.add(path)
            return "old contents"
        if path in read:
            return "Wrote 29 bytes."
        return f"File '{path}' must be read before overwriting."

    responses, _ = run_loop(tools, outcome, tool_choice="required")

    batches = [[(c.name, c.arguments) for c in calls_of(r)] for r in responses]
    write = (
        "write_file",
        '{"path":"notes.md","content":"Drafted by the offline model."}',
    )
    assert batches == [[write, ("read_file", '{"path":"notes.md"}')], [write], []]


def test_read_before_write_uses_a_read_tool_when_not_called_in_the_batch() -> None:
    tools = [
        function("write_file", path={"type": "string"}, content={"type": "string"}),
        function("read_text", path={"type": "string"}, encoding={"type": "string"}),
    ]
    history: list[Any] = [
        SYSTEM,
        {
            "type": "function_call",
            "call_id": "call_w",
            "name": "write_file",
            "arguments": '{"path":"docs/a.md","content":"x"}',
        },
        {
            "type": "function_call",
            "call_id": "call_r",
            "name": "read_text",
            "arguments": '{"path":"other.md","encoding":"utf-8"}',
        },
        {
            "type": "function_call_output",
            "call_id": "call_w",
            "output": "File 'docs/a.md' must be read before overwriting.",
        },
        {"type": "function_call_output", "call_id": "call_r", "output": "text"},
    ]

    response = make_client().responses.create(
        model="gpt-5.4", input=history, tools=tools
    )

    calls = calls_of(response)
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("read_text", {"path": "docs/a.md", "encoding": "example"})
    ]


def test_other_failures_are_not_retried() -> None:
    tools = [function("flaky"), function("strict")]

    def outcome(call: ResponseFunctionToolCall, turn: int) -> str:
        if call.name == "flaky":
            return "Tool 'flaky' execution failed: boom"
        return "Tool validation failed: missing field"

    responses, _ = run_loop(tools, outcome)

    assert len(responses) == 2
    assert "flaky failed, strict failed" in responses[-1].output_text


def test_same_call_is_never_made_more_than_three_times() -> None:
    tools = [function("deploy"), function("build")]

    def outcome(call: ResponseFunctionToolCall, turn: int) -> str:
        return "OK" if call.name == "build" else "Tool 'deploy' requires: build"

    responses, _ = run_loop(tools, outcome)

    names = [c.name for r in responses for c in calls_of(r)]
    assert names.count("deploy") == 3
    assert responses[-1].output[0].type == "message"


def test_function_calling_stops_after_eight_turns() -> None:
    tools = [function(f"step_{n}") for n in range(12)]

    responses, _ = run_loop(tools, always_ok, parallel_tool_calls=False)

    assert [len(calls_of(r)) for r in responses] == [1] * 8 + [0]
    assert responses[-1].output[0].type == "message"


def test_tool_choice_none_answers_without_tools() -> None:
    tools = [{"type": "web_search"}, function("lint")]

    response = make_client().responses.create(
        model="gpt-5.4", input=[SYSTEM], tools=tools, tool_choice="none"
    )

    assert [item.type for item in response.output] == ["message"]
    assert response.tool_choice == "none"
    assert "No function tools were called." in response.output_text


def test_response_echoes_request_settings() -> None:
    tools = [function("lint")]

    response = make_client().responses.create(
        model="gpt-5.4-mini", input="hi", tools=tools, parallel_tool_calls=True
    )

    assert response.model == "gpt-5.4-mini"
    assert response.object == "response"
    assert response.error is None and response.incomplete_details is None
    assert response.tools[0].type == "function"
    assert response.text is not None and response.text.format.type == "text"
    assert response.id.startswith("resp_") and len(response.id) == len("resp_") + 12
    assert response.usage is not None
    assert response.usage.input_tokens_details.cached_tokens == 0
    assert response.usage.output_tokens_details.reasoning_tokens == 0


def test_allowed_tools_choice_restricts_the_first_turn() -> None:
    tools = [{"type": "web_search"}, function("lint"), function("build")]
    choice = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "build"}],
    }

    responses, _ = run_loop(tools, always_ok, tool_choice=choice)

    assert [
        [i.type + ":" + getattr(i, "name", "") for i in r.output] for r in responses
    ] == [
        ["function_call:build"],
        ["web_search_call:", "function_call:lint"],
        ["message:"],
    ]
