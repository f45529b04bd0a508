"""The ``openai.OpenAI`` client the settings ask for, one per process.

``offline`` routes the SDK through the in-process offline provider (an httpx
transport speaking the Responses API); ``openai`` talks to the real API with
the key from the environment. The key is never logged or stored.

Building a client is expensive (an SSL context and the CA bundle: about 30 ms)
and a fresh one opens a new connection, so every run of a process shares one:
it is rebuilt only when the settings it was built from change, and a forked
process (a Celery pool child) builds its own rather than sharing its parent's
connections. The SDK's client is safe to share between threads.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import httpx
import openai
from django.conf import settings

from tooling.offline import ScriptedModel, offline_transport

OFFLINE_BASE_URL = "http://offline-provider.invalid/v1"
# The SDK's own default, when OPENAI_BASE_URL is unset or blank.
OPENAI_API_BASE_URL = "https://api.openai.com/v1"

_lock = threading.Lock()
_cached: tuple[tuple[Any, ...], openai.OpenAI] | None = None
# HTTP connections the client keeps open between calls (the SDK's default is
# 100): a worker keeps one per run it may have in flight (``set_connections``),
# or every turn past the hundredth connects again.
_keepalive = 100


def set_connections(runs_in_flight: int) -> None:
    """Keep an HTTP connection for each of ``runs_in_flight`` runs (a
    worker's concurrency); a client built earlier is built again."""
    global _keepalive
    _keepalive = max(100, runs_in_flight)


def _settings_key() -> tuple[Any, ...]:
    return (
        os.getpid(),
        settings.WINK_PROVIDER,
        settings.OPENAI_API_KEY,
        settings.OPENAI_BASE_URL,
        settings.WINK_OPENAI_MAX_RETRIES,
        settings.WINK_OPENAI_TIMEOUT,
        _keepalive,
    )


def _new_client() -> openai.OpenAI:
    if settings.WINK_PROVIDER == "offline":
        return openai.OpenAI(
            api_key="sk-offline",
            base_url=OFFLINE_BASE_URL,
            # The SDK takes an httpx client too, though typed for httpx2's.
            http_client=httpx.Client(  # type: ignore[arg-type]
                transport=offline_transport(ScriptedModel())
            ),
            max_retries=0,
        )
    return openai.OpenAI(
        api_key=settings.OPENAI_API_KEY,
        # given, not None: the SDK would read OPENAI_BASE_URL itself, where a
        # blank value (which the settings take as unset) breaks every request
        base_url=settings.OPENAI_BASE_URL or OPENAI_API_BASE_URL,
        max_retries=settings.WINK_OPENAI_MAX_RETRIES,
        timeout=settings.WINK_OPENAI_TIMEOUT,
        http_client=openai.DefaultHttpxClient(
            # the SDK's own httpx client, typed for httpx2's limits
            limits=httpx.Limits(  # type: ignore[arg-type]
                max_connections=max(1000, _keepalive),
                max_keepalive_connections=_keepalive,
            )
        ),
    )


def build_client() -> openai.OpenAI:
    """The process's client for the current settings (built on first use)."""
    global _cached
    key = _settings_key()
    cached = _cached
    if cached is not None and cached[0] == key:
        return cached[1]
    with _lock:
        if _cached is None or _cached[0] != key:
            _cached = (key, _new_client())
        return _cached[1]
