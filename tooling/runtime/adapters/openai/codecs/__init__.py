"""Hosted tool codecs for the OpenAI Responses API, one per kind."""

from __future__ import annotations

from typing import Any

from .base import HostedToolCodec, NativeCall
from .code_interpreter import OpenAICodeInterpreterCodec
from .file_search import OpenAIFileSearchCodec
from .image_generation import OpenAIImageGenerationCodec
from .mcp import OpenAIMcpCodec
from .web_search import OpenAIWebSearchCodec


def default_codecs() -> dict[str, HostedToolCodec[Any]]:
    """A fresh registry with every codec this adapter ships."""
    codecs: list[HostedToolCodec[Any]] = [
        OpenAIWebSearchCodec(),
        OpenAIFileSearchCodec(),
        OpenAICodeInterpreterCodec(),
        OpenAIImageGenerationCodec(),
        OpenAIMcpCodec(),
    ]
    return {codec.kind: codec for codec in codecs}


__all__ = [
    "HostedToolCodec",
    "NativeCall",
    "OpenAICodeInterpreterCodec",
    "OpenAIFileSearchCodec",
    "OpenAIImageGenerationCodec",
    "OpenAIMcpCodec",
    "OpenAIWebSearchCodec",
    "default_codecs",
]
