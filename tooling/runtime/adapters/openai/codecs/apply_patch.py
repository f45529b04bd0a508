"""OpenAI Responses codec for ``apply_patch``.

The tool JSON is ``{"type":"apply_patch"}``. The provider never applies a
patch itself: the run loop (``local_calls.py``) applies each
``apply_patch_call`` to the session's files and records it as a local call,
so ``parse_call`` is only used for an ``apply_patch_call_output`` the provider
echoes back, which is not a call and is ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....hosted.apply_patch import ApplyPatchConfig
from ....hosted.base import HostedTool
from .base import NativeCall


def _config(tool: HostedTool[Any]) -> ApplyPatchConfig:
    config = tool.config
    if not isinstance(config, ApplyPatchConfig):
        raise TypeError(
            f"Hosted tool '{tool.name}' of kind 'apply_patch' needs an "
            f"ApplyPatchConfig, not {type(config).__name__}."
        )
    return config


class OpenAIApplyPatchCodec:
    """``apply_patch``: operations the product applies to the session's files."""

    kind = "apply_patch"
    item_types = ("apply_patch_call", "apply_patch_call_output")
    include: tuple[str, ...] = ()

    def serialize(self, tool: HostedTool[Any]) -> dict[str, Any]:
        _config(tool)
        return {"type": "apply_patch"}

    def tool_choice(self, tool: HostedTool[Any]) -> dict[str, Any]:
        return {"type": "apply_patch"}

    def matches(self, item: Any, tool: HostedTool[Any]) -> bool:
        return isinstance(tool.config, ApplyPatchConfig)

    def parse_call(self, item: Any) -> NativeCall | None:
        return None

    def parse_output(
        self, response_items: Sequence[Any], tool: HostedTool[Any]
    ) -> None:
        return None


__all__ = ["OpenAIApplyPatchCodec"]
