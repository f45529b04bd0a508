"""The offline provider's HTTP surface, in-process: an ``httpx.MockTransport``.

``route`` is the one place that maps an HTTP request to a reply; the
transport and the loopback server (``server.py``) both use it, so they answer
byte for byte the same.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
from typing import Any

import httpx

from .errors import OfflineRequestError, error_payload
from .model import ScriptedModel

__all__ = ["Reply", "offline_transport", "route"]

logger = logging.getLogger(__name__)

MODELS = ("gpt-5.4", "gpt-5.4-mini", "gpt-5.5")


@dataclasses.dataclass(frozen=True, slots=True)
class Reply:
    """An HTTP reply: status, JSON body bytes and extra headers."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


def _json(status: int, payload: Any, *headers: tuple[str, str]) -> Reply:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return Reply(status, body, headers)


def route(model: ScriptedModel, method: str, path: str, body: bytes) -> Reply:
    """Answer one request to the offline provider.

    ``POST .../responses`` runs ``model``; ``GET .../models`` lists models;
    ``GET /health`` reports liveness; anything else is an OpenAI-shaped 404.
    """
    path = path.split("?", 1)[0].rstrip("/")
    if method == "POST" and path.endswith("/responses"):
        return _responses(model, body)
    if method == "GET" and path.endswith("/models"):
        data = [
            {
                "id": name,
                "object": "model",
                "created": 1767225600,
                "owned_by": "offline",
            }
            for name in MODELS
        ]
        return _json(200, {"object": "list", "data": data})
    if method == "GET" and path in ("/health", "/v1/health"):
        return _json(200, {"status": "ok"})
    return _json(404, error_payload(f"Invalid URL ({method} {path or '/'})"))


def _responses(model: ScriptedModel, body: bytes) -> Reply:
    try:
        request = json.loads(body) if body else None
    except ValueError:
        request = None
    if not isinstance(request, dict):
        return _json(
            400,
            error_payload(
                "We could not parse the JSON body of your request. The OpenAI API "
                "expects a JSON object as the request body."
            ),
        )
    try:
        response = model.respond(request)
    except OfflineRequestError as error:
        return _json(error.status, error.payload())
    except Exception as error:  # a bug in a script: report it, do not retry it
        logger.exception("The offline model failed")
        return _json(
            500,
            error_payload(
                f"The offline model failed: {error!r}", error_type="server_error"
            ),
            ("x-should-retry", "false"),
        )
    return _json(200, response)


def offline_transport(model: ScriptedModel | None = None) -> httpx.MockTransport:
    """An ``httpx.MockTransport`` that serves the Responses API from ``model``.

    Use it as ``httpx.Client(transport=offline_transport())`` (or with
    ``httpx.AsyncClient``) and pass that client to ``openai.OpenAI``. Every
    reply carries ``x-request-id: req_offline_<n>``, counted per transport.
    """
    scripted = model if model is not None else ScriptedModel()
    counter = itertools.count(1)

    def handler(request: httpx.Request) -> httpx.Response:
        reply = route(scripted, request.method, request.url.path, request.content)
        headers = [
            ("content-type", "application/json"),
            ("x-request-id", f"req_offline_{next(counter)}"),
            *reply.headers,
        ]
        return httpx.Response(reply.status, content=reply.body, headers=headers)

    return httpx.MockTransport(handler)
