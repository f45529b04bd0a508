"""The in-process transport: errors, determinism, scripts and the benchmark."""

from __future__ import annotations

import ast
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from tooling.offline import (
    OfflineRequestError,
    ScriptedModel,
    offline_transport,
    parallel_calls_script,
)

BASE_URL = "http://offline.invalid/v1"
LINT: Any = {
    "type": "function",
    "name": "lint",
    "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    "strict": True,
}


def make_client(model: ScriptedModel | None = None) -> Any:
    http_client: Any = httpx.Client(transport=offline_transport(model))
    return OpenAI(
        api_key="sk-offline",
        base_url=BASE_URL,
        http_client=http_client,
        max_retries=0,
    )


def test_orphan_function_call_output_is_a_bad_request() -> None:
    history: Any = [
        {"role": "user", "content": "hi"},
        {"type": "function_call_output", "call_id": "call_nope", "output": "ok"},
    ]

    with pytest.raises(openai.BadRequestError) as caught:
        make_client().responses.create(model="gpt-5.4", input=history)

    message = "No tool call found for function call output with call_id call_nope."
    assert caught.value.status_code == 400
    assert caught.value.body == {
        "message": message,
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }
    assert message in str(caught.value)
    assert caught.value.request_id == "req_offline_1"


def test_unanswered_function_call_is_a_bad_request() -> None:
    history: Any = [
        {"role": "user", "content": "hi"},
        {
            "type": "function_call",
            "call_id": "call_A",
            "name": "lint",
            "arguments": "{}",
        },
    ]

    with pytest.raises(openai.BadRequestError) as caught:
        make_client().responses.create(model="gpt-5.4", input=history, tools=[LINT])

    assert caught.value.message.endswith(
        "No tool output found for function call call_A."
    )
    assert caught.value.param == "input"


@pytest.mark.parametrize(
    ("body", "message", "param"),
    [
        ({"input": "hi"}, "Missing required parameter: 'model'.", "model"),
        ({"model": "gpt-5.4"}, "Missing required parameter: 'input'.", "input"),
    ],
)
def test_missing_parameters_are_bad_requests(
    body: dict[str, Any], message: str, param: str
) -> None:
    with pytest.raises(OfflineRequestError) as caught:
        ScriptedModel().respond(body)
    assert (caught.value.status, caught.value.message, caught.value.param) == (
        400,
        message,
        param,
    )

    http = httpx.Client(transport=offline_transport())
    reply = http.post(f"{BASE_URL}/responses", json=body)
    assert reply.status_code == 400
    assert reply.json() == {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": param,
            "code": None,
        }
    }


def test_invalid_json_and_unknown_paths() -> None:
    http = httpx.Client(transport=offline_transport())

    bad = http.post(f"{BASE_URL}/responses", content=b"{not json")
    missing = http.post(f"{BASE_URL}/chat/completions", json={})
    health = http.get("http://offline.invalid/health")
    models = http.get(f"{BASE_URL}/models")

    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "invalid_request_error"
    assert missing.status_code == 404
    assert (
        missing.json()["error"]["message"] == "Invalid URL (POST /v1/chat/completions)"
    )
    assert health.json() == {"status": "ok"}
    assert "gpt-5.4" in [m["id"] for m in models.json()["data"]]
    assert [r.headers["x-request-id"] for r in (bad, missing, health, models)] == [
        f"req_offline_{n}" for n in range(1, 5)
    ]


def test_sdk_not_found_error_for_unknown_endpoint() -> None:
    with pytest.raises(openai.NotFoundError):
        make_client().responses.retrieve("resp_123")


def test_script_errors_become_500_without_retry() -> None:
    def broken(request: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("boom")

    client = make_client(ScriptedModel(broken)).with_options(max_retries=2)

    with pytest.raises(openai.InternalServerError) as caught:
        client.responses.create(model="gpt-5.4", input="hi")
    assert caught.value.request_id == "req_offline_1"  # one attempt only


def test_same_request_gives_identical_json() -> None:
    body: dict[str, Any] = {
        "model": "gpt-5.4",
        "input": [{"role": "user", "content": "Find the LTS"}],
        "tools": [{"type": "web_search"}, LINT],
        "include": ["web_search_call.action.sources"],
    }
    http = httpx.Client(transport=offline_transport())

    first = http.post(f"{BASE_URL}/responses", json=body).content
    second = http.post(f"{BASE_URL}/responses", json=body).content
    other = http.post(f"{BASE_URL}/responses", json={**body, "input": "other"}).content

    assert first == second
    assert json.loads(first)["id"] != json.loads(other)["id"]
    assert ScriptedModel().respond(body) == ScriptedModel().respond(body)


def test_script_response_is_returned_unchanged() -> None:
    canned = {
        "id": "resp_canned",
        "object": "response",
        "status": "completed",
        "output": [],
    }
    seen: list[dict[str, Any]] = []

    def script(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return canned

    response = make_client(ScriptedModel(script)).responses.create(
        model="m", input="hi"
    )

    assert response.id == "resp_canned"
    assert seen == [{"model": "m", "input": "hi"}]


def test_benchmark_script_is_six_posts_of_two_parallel_calls() -> None:
    posts = 0
    script = parallel_calls_script()

    def counting(request: dict[str, Any]) -> dict[str, Any]:
        nonlocal posts
        posts += 1
        return script(request)

    client = make_client(ScriptedModel(counting))
    history: list[Any] = [{"role": "user", "content": "go"}]
    tools: Any = [{**LINT, "name": "echo"}]
    texts: list[str] = []
    while True:
        response = client.responses.create(model="gpt-5.4", input=history, tools=tools)
        history += [item.model_dump(exclude_none=True) for item in response.output]
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            break
        for call in calls:
            texts.append(json.loads(call.arguments)["text"])
            history.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": "ok",
                }
            )

    assert posts == 6
    assert response.output_text == "done"
    assert response.model == "gpt-5.4"
    assert texts[:3] == ["turn 1 call 1", "turn 1 call 2", "turn 2 call 1"]
    assert len(texts) == len(set(texts)) == 10


def test_async_client_works_with_the_same_transport() -> None:
    async def run() -> str:
        http_client: Any = httpx.AsyncClient(transport=offline_transport())
        client = AsyncOpenAI(
            api_key="sk-offline",
            base_url=BASE_URL,
            http_client=http_client,
            max_retries=0,
        )
        response = await client.responses.create(model="gpt-5.4", input="hi")
        return response.output_text

    assert asyncio.run(run()).startswith("No function tools were called.")


def test_offline_package_imports_only_stdlib_and_httpx() -> None:
    package = Path(__file__).resolve().parents[2] / "tooling" / "offline"
    allowed = set(sys.stdlib_module_names) | {"httpx"}
    for path in package.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"stream": True}, "stream"),
    ],
)
def test_stateful_and_streaming_requests_are_rejected(
    extra: dict[str, Any], param: str
) -> None:
    with pytest.raises(OfflineRequestError) as caught:
        ScriptedModel().respond({"model": "gpt-5.4", "input": "hi", **extra})

    assert caught.value.status == 400
    assert caught.value.param == param
