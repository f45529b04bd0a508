"""The offline provider: a deterministic, scripted OpenAI Responses API.

It speaks the real HTTP and JSON, so the official ``openai`` SDK parses its
answers. Framework-free: the standard library and ``httpx`` only.

In-process::

    client = OpenAI(
        api_key="sk-offline",
        base_url="http://offline.invalid/v1",
        http_client=httpx.Client(transport=offline_transport()),
        max_retries=0,
    )

Over loopback::

    with OfflineServer() as server:
        client = OpenAI(api_key="sk-offline", base_url=server.base_url)
"""

from .errors import OfflineRequestError, error_payload
from .hosted import (
    MARKER_MCP_ERROR,
    MARKER_SEARCH_EACH_TURN,
    MARKER_SEARCH_FAILS,
    TINY_PNG_BASE64,
    search_sources,
)
from .markers import MARKER_COMMENTARY, MARKER_COMMENTARY_ONLY, MARKER_STATUS
from .model import ScriptedModel, parallel_calls_script
from .reasoning import MARKER_REASONING
from .response import FIXED_EPOCH, build_response
from .schema_values import check_value, sample_value
from .server import OfflineServer, Served
from .transport import Reply, offline_transport, route

__all__ = [
    "FIXED_EPOCH",
    "MARKER_COMMENTARY",
    "MARKER_COMMENTARY_ONLY",
    "MARKER_MCP_ERROR",
    "MARKER_REASONING",
    "MARKER_SEARCH_EACH_TURN",
    "MARKER_SEARCH_FAILS",
    "MARKER_STATUS",
    "TINY_PNG_BASE64",
    "OfflineRequestError",
    "OfflineServer",
    "Reply",
    "ScriptedModel",
    "Served",
    "build_response",
    "check_value",
    "error_payload",
    "offline_transport",
    "parallel_calls_script",
    "route",
    "sample_value",
    "search_sources",
]
