"""Hosted tool codecs for the OpenAI Responses API, one per kind."""

from __future__ import annotations

import threading
from typing import Any

from .apply_patch import OpenAIApplyPatchCodec
from .base import HostedToolCodec, NativeCall
from .code_interpreter import OpenAICodeInterpreterCodec
from .file_search import OpenAIFileSearchCodec
from .image_generation import OpenAIImageGenerationCodec
from .mcp import OpenAIMcpCodec
from .shell import OpenAIShellCodec
from .web_search import OpenAIWebSearchCodec


def default_codecs() -> dict[str, HostedToolCodec[Any, Any]]:
    """A fresh registry with every codec this adapter ships."""
    codecs: list[HostedToolCodec[Any, Any]] = [
        OpenAIWebSearchCodec(),
        OpenAIFileSearchCodec(),
        OpenAICodeInterpreterCodec(),
        OpenAIImageGenerationCodec(),
        OpenAIMcpCodec(),
        OpenAIShellCodec(),
        OpenAIApplyPatchCodec(),
    ]
    with _lock:
        codecs += _registered.values()
    return {codec.kind: codec for codec in codecs}


# Codecs of kinds registered outside this package (a deployment's own kinds,
# ``docs/hosted-kinds.md``): ``default_codecs()`` adds them to the shipped ones.
_lock = threading.Lock()
_registered: dict[str, HostedToolCodec[Any, Any]] = {}


def register_codec(codec: HostedToolCodec[Any, Any]) -> None:
    """Ship ``codec`` with every adapter built after this (a kind once)."""
    with _lock:
        if codec.kind in _registered:
            raise ValueError(f"A codec for kind '{codec.kind}' is already registered.")
        _registered[codec.kind] = codec


def unregister_codec(kind: str) -> HostedToolCodec[Any, Any]:
    with _lock:
        return _registered.pop(kind)


__all__ = [
    "HostedToolCodec",
    "NativeCall",
    "OpenAIApplyPatchCodec",
    "OpenAICodeInterpreterCodec",
    "OpenAIFileSearchCodec",
    "OpenAIImageGenerationCodec",
    "OpenAIMcpCodec",
    "OpenAIShellCodec",
    "OpenAIWebSearchCodec",
    "default_codecs",
    "register_codec",
    "unregister_codec",
]
