"""Shared set-up of the live OpenAI tests (``pytest -m openai``).

Everything comes from the environment: ``OPENAI_API_KEY`` and, when set,
``OPENAI_BASE_URL`` (read by ``openai.OpenAI()`` itself), the model from
``WINK_LIVE_MODEL``, the reasoning effort from ``WINK_LIVE_REASONING_EFFORT``
(empty for models without reasoning) and the output cap per response from
``WINK_LIVE_MAX_OUTPUT_TOKENS``. ``tests/conftest.py`` skips the tests that
are marked ``openai`` when no key is set.

Every HTTP request a client sends is logged by an ``httpx`` event hook, so a
test can assert exactly what went on the wire, or that nothing did.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any
from urllib.parse import urlsplit

import openai

DEFAULT_MODEL = "gpt-5.4"
OPENAI_API_HOST = "api.openai.com"

LIVE_MODEL = os.environ.get("WINK_LIVE_MODEL", "").strip() or DEFAULT_MODEL
REASONING_EFFORT = os.environ.get("WINK_LIVE_REASONING_EFFORT", "low").strip()
MAX_OUTPUT_TOKENS = int(os.environ.get("WINK_LIVE_MAX_OUTPUT_TOKENS", "6000"))
MAX_RETRIES = int(os.environ.get("WINK_OPENAI_MAX_RETRIES", "2"))
TIMEOUT_SECONDS = float(os.environ.get("WINK_OPENAI_TIMEOUT", "300"))


def base_url() -> str:
    """Where the SDK sends requests (``OPENAI_BASE_URL`` or its default)."""
    return os.environ.get("OPENAI_BASE_URL", "").strip() or "https://api.openai.com/v1"


def talks_to_openai() -> bool:
    """Whether the endpoint is OpenAI's API (and not a proxy or a stand-in)."""
    return urlsplit(base_url()).hostname == OPENAI_API_HOST


def not_openai_reason(what: str) -> str:
    return f"OPENAI_BASE_URL points at {base_url()}, not the OpenAI API: {what}"


@dataclasses.dataclass(frozen=True)
class WireRequest:
    """One HTTP request as the SDK sent it (``body`` is ``None`` unless JSON)."""

    method: str
    path: str
    body: Any


class RequestLog:
    """An ``httpx`` request event hook that remembers every request."""

    def __init__(self) -> None:
        self.requests: list[WireRequest] = []

    def __call__(self, request: Any) -> None:
        body: Any = None
        if request.headers.get("content-type", "").startswith("application/json"):
            try:
                body = json.loads(request.content)
            except Exception:  # a streamed body: not needed by any test
                body = None
        self.requests.append(WireRequest(request.method, request.url.path, body))

    def responses_bodies(self) -> list[dict[str, Any]]:
        """The JSON body of every ``POST .../responses``, in order."""
        return [
            r.body
            for r in self.requests
            if r.method == "POST" and r.path.endswith("/responses")
        ]


def live_client(log: RequestLog) -> openai.OpenAI:
    """``openai.OpenAI()`` from the environment, logging every request."""
    return openai.OpenAI(
        http_client=openai.DefaultHttpxClient(event_hooks={"request": [log]}),
        max_retries=MAX_RETRIES,
        timeout=TIMEOUT_SECONDS,
    )


def request_options(*, max_hosted_tool_calls: int | None = None) -> dict[str, Any]:
    """Top-level request fields that keep a live test cheap."""
    options: dict[str, Any] = {"max_output_tokens": MAX_OUTPUT_TOKENS}
    if REASONING_EFFORT:
        options["reasoning"] = {"effort": REASONING_EFFORT}
    if max_hosted_tool_calls is not None:
        options["max_tool_calls"] = max_hosted_tool_calls
    return options
