"""The OpenAI Responses adapter and its hosted tool codecs."""

from .adapter import OpenAIAdapter, RunRecord, redact_request, redact_tools
from .codecs import HostedToolCodec, NativeCall, OpenAIWebSearchCodec, default_codecs

__all__ = [
    "HostedToolCodec",
    "NativeCall",
    "OpenAIAdapter",
    "OpenAIWebSearchCodec",
    "RunRecord",
    "default_codecs",
    "redact_request",
    "redact_tools",
]
