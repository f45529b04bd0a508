"""The loopback HTTP server with the real SDK over real sockets."""

from __future__ import annotations

import http.client
import json
import socket
import statistics
import time
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from tests.limits import REQUEST_SECONDS
from tooling.offline import OfflineServer, ScriptedModel, parallel_calls_script


def test_server_round_trip_with_the_sdk() -> None:
    with OfflineServer() as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        client: Any = OpenAI(
            api_key="sk-offline", base_url=server.base_url, max_retries=0
        )
        tools: Any = [
            {"type": "web_search", "filters": {"allowed_domains": ["docs.python.org"]}},
            {
                "type": "function",
                "name": "lint",
                "parameters": {"type": "object", "properties": {}},
                "strict": True,
            },
        ]
        history: list[Any] = [{"role": "user", "content": "Check the docs"}]
        raw = client.responses.with_raw_response.create(
            model="gpt-5.4",
            input=history,
            tools=tools,
            include=["web_search_call.action.sources"],
        )
        first = raw.parse()
        history += raw.http_response.json()["output"]
        call = first.output[1]
        history.append(
            {"type": "function_call_output", "call_id": call.call_id, "output": "ok"}
        )
        second = client.responses.create(model="gpt-5.4", input=history, tools=tools)

    assert raw.headers["x-request-id"] == "req_offline_1"
    assert raw.headers["content-type"] == "application/json"
    assert [item.type for item in first.output] == ["web_search_call", "function_call"]
    assert [item.type for item in second.output] == ["message"]
    annotations = second.output[0].content[0].annotations
    assert all("docs.python.org" in a.url for a in annotations)


def test_server_errors_reach_the_sdk() -> None:
    with OfflineServer() as server:
        client: Any = OpenAI(
            api_key="sk-offline", base_url=server.base_url, max_retries=0
        )
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.create(
                model="gpt-5.4",
                input=[
                    {"type": "function_call_output", "call_id": "call_x", "output": ""}
                ],
            )

    assert caught.value.param == "input"
    assert "call_id call_x" in caught.value.message


def test_server_keeps_connections_alive_and_answers_health_and_models() -> None:
    with OfflineServer(ScriptedModel(parallel_calls_script())) as server:
        connection = http.client.HTTPConnection(
            "127.0.0.1", server.port, timeout=REQUEST_SECONDS
        )
        replies = []
        for method, path, body in [
            ("GET", "/health", None),
            ("GET", "/v1/models", None),
            ("POST", "/v1/responses", json.dumps({"model": "m", "input": []})),
            ("POST", "/v1/responses", "{broken"),
            ("GET", "/v1/nothing", None),
        ]:
            connection.request(method, path, body=body)
            reply = connection.getresponse()
            replies.append(
                (
                    reply.status,
                    json.loads(reply.read()),
                    reply.getheader("Content-Length"),
                )
            )
            local_port = connection.sock.getsockname()[1]
            if method == "GET" and path == "/health":
                first_port = local_port
            assert local_port == first_port  # the same keep-alive connection
        connection.close()

    assert [status for status, _, _ in replies] == [200, 200, 200, 400, 404]
    assert replies[0][1] == {"status": "ok"}
    assert replies[1][1]["object"] == "list"
    assert replies[2][1]["output"][0]["name"] == "echo"
    assert all(length is not None and int(length) > 0 for _, _, length in replies)


def test_server_benchmark_conversation_over_httpx() -> None:
    with (
        OfflineServer(ScriptedModel(parallel_calls_script())) as server,
        httpx.Client() as http,
    ):
        history: list[Any] = []
        posts = 0
        while True:
            posts += 1
            body = http.post(
                f"{server.base_url}/responses", json={"model": "m", "input": history}
            ).json()
            calls = [item for item in body["output"] if item["type"] == "function_call"]
            if not calls:
                break
            history += body["output"]
            history += [
                {
                    "type": "function_call_output",
                    "call_id": c["call_id"],
                    "output": "ok",
                }
                for c in calls
            ]

    assert posts == 6
    assert body["output"][0]["content"][0]["text"] == "done"


def test_server_answers_keep_alive_requests_without_stalls() -> None:
    body = json.dumps({"model": "m", "input": []})
    with OfflineServer(ScriptedModel(parallel_calls_script())) as server:
        connection = http.client.HTTPConnection(
            "127.0.0.1", server.port, timeout=REQUEST_SECONDS
        )
        timings = []
        for _ in range(40):
            started = time.perf_counter()
            connection.request("POST", "/v1/responses", body=body)
            connection.getresponse().read()
            timings.append(time.perf_counter() - started)
        connection.close()

    # A Nagle / delayed-ACK stall costs ~40 ms per request; we take well under 1.
    assert statistics.median(timings) < 0.02


def test_server_stop_releases_the_port() -> None:
    server = OfflineServer().start()
    port = server.port
    server.stop()

    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_server_delay_holds_replies_back_and_the_log_lists_them() -> None:
    with OfflineServer(delay=0.3) as server:
        client = openai.OpenAI(
            api_key="sk-offline", base_url=server.base_url, max_retries=0
        )
        started = time.monotonic()
        response = client.responses.create(
            model="gpt-5.4", input=[{"role": "system", "content": "Say hi."}]
        )
        elapsed = time.monotonic() - started
        client.models.list()
    assert elapsed >= 0.3
    posts = [entry for entry in server.served if entry.method == "POST"]
    assert [(e.status, e.response_id) for e in posts] == [(200, response.id)]
    assert [e.method for e in server.served] == ["POST", "GET"]


def test_server_refuses_a_negative_delay() -> None:
    with pytest.raises(ValueError, match="delay must not be negative"):
        OfflineServer(delay=-1)
