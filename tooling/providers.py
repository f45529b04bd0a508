"""Builds the ``openai.OpenAI`` client the settings ask for.

``offline`` routes the SDK through the in-process offline provider (an httpx
transport speaking the Responses API); ``openai`` talks to the real API with
the key from the environment. The key is never logged or stored.
"""

from __future__ import annotations

import httpx
import openai
from django.conf import settings

from tooling.offline import ScriptedModel, offline_transport

OFFLINE_BASE_URL = "http://offline-provider.invalid/v1"


def build_client() -> openai.OpenAI:
    if settings.WINK_PROVIDER == "offline":
        return openai.OpenAI(
            api_key="sk-offline",
            base_url=OFFLINE_BASE_URL,
            http_client=httpx.Client(transport=offline_transport(ScriptedModel())),
            max_retries=0,
        )
    return openai.OpenAI(
        api_key=settings.OPENAI_API_KEY,
        base_url=settings.OPENAI_BASE_URL or None,
        max_retries=settings.WINK_OPENAI_MAX_RETRIES,
        timeout=settings.WINK_OPENAI_TIMEOUT,
    )
