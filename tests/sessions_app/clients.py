"""Provider clients for session tests: the offline provider behind the real
``openai`` SDK, with a hook on every request (to count, to misbehave, or to
"kill the worker" by raising a ``BaseException`` that no handler catches)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import openai

from tooling.offline import ScriptedModel, offline_transport


class WorkerKilled(BaseException):
    """Stands for SIGKILL: escapes every ``except Exception`` on its way out."""


class CountingProvider:
    """The offline provider; ``requests`` holds every request body it got, and
    ``before(n, body)`` runs before request ``n`` (1-based) is answered."""

    def __init__(self, before: Callable[[int, dict[str, Any]], None] | None = None):
        self.requests: list[dict[str, Any]] = []
        self.responses: list[str] = []
        self.before = before
        inner = offline_transport(ScriptedModel())

        def handle(request: httpx.Request) -> httpx.Response:
            body = json.loads(request.content)
            self.requests.append(body)
            if self.before is not None:
                self.before(len(self.requests), body)
            response = inner.handle_request(request)
            response.read()
            self.responses.append(json.loads(response.content).get("id"))
            return response

        self.client = openai.OpenAI(
            api_key="sk-test",
            base_url="http://offline-provider.invalid/v1",
            # The SDK takes an httpx client too, though typed for httpx2's.
            http_client=httpx.Client(transport=httpx.MockTransport(handle)),  # type: ignore[arg-type]
            max_retries=0,
        )


def kill_at(request_number: int) -> Callable[[int, dict[str, Any]], None]:
    def before(number: int, body: dict[str, Any]) -> None:
        if number == request_number:
            raise WorkerKilled(f"killed before answering request {number}")

    return before
