"""OpenAI Responses codec for ``image_generation``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....hosted.base import HostedTool
from ....hosted.image_generation import (
    GeneratedImage,
    ImageGenerationConfig,
    ImageGenerationResult,
)
from .base import NativeCall, field, status_ok

_OPTIONS = (
    "action",
    "background",
    "model",
    "moderation",
    "output_compression",
    "output_format",
    "partial_images",
    "quality",
    "size",
)


def _config(tool: HostedTool[Any]) -> ImageGenerationConfig:
    config = tool.config
    if not isinstance(config, ImageGenerationConfig):
        raise TypeError(
            f"Hosted tool '{tool.name}' of kind 'image_generation' needs an "
            f"ImageGenerationConfig, not {type(config).__name__}."
        )
    return config


def _optional_str(item: Any, name: str) -> str | None:
    value = field(item, name)
    return str(value) if value is not None else None


def _error_text(image: GeneratedImage, error: Any) -> str:
    text = f"{image.error_code or 'error'}: {image.error_message or 'no message'}"
    details = field(error, "moderation_details") if error is not None else None
    if details is not None:
        categories = [str(c) for c in field(details, "categories", []) or []]
        stage = field(details, "moderation_stage")
        extra = []
        if categories:
            extra.append(f"categories: {', '.join(categories)}")
        if stage:
            extra.append(f"stage: {stage}")
        if extra:
            text += f" ({'; '.join(extra)})"
    return text


def generated_image(item: Any) -> GeneratedImage:
    """One ``image_generation_call`` item."""
    error = field(item, "error")
    return GeneratedImage(
        call_id=str(field(item, "id", "")),
        status=str(field(item, "status", "completed")),
        image_base64=_optional_str(item, "result"),
        revised_prompt=_optional_str(item, "revised_prompt"),
        size=_optional_str(item, "size"),
        quality=_optional_str(item, "quality"),
        output_format=_optional_str(item, "output_format"),
        background=_optional_str(item, "background"),
        action=_optional_str(item, "action"),
        error_code=_optional_str(error, "code") if error is not None else None,
        error_message=_optional_str(error, "message") if error is not None else None,
    )


class OpenAIImageGenerationCodec:
    """``image_generation``: every option is optional and sent only when set."""

    kind = "image_generation"
    item_types = ("image_generation_call",)
    include: tuple[str, ...] = ()
    # NativeTool support (see ..native): the default config, the fields a
    # call's params carry and the type of a parsed call.
    config_type = ImageGenerationConfig
    call_fields = (
        "revised_prompt",
        "size",
        "quality",
        "output_format",
        "background",
        "action",
    )
    value_type = GeneratedImage

    def serialize(self, tool: HostedTool[Any]) -> dict[str, Any]:
        config = _config(tool)
        spec: dict[str, Any] = {"type": "image_generation"}
        for name in _OPTIONS:
            value = getattr(config, name)
            if value is not None:
                spec[name] = value
        return spec

    def tool_choice(self, tool: HostedTool[Any]) -> dict[str, Any]:
        return {"type": "image_generation"}

    def matches(self, item: Any, tool: HostedTool[Any]) -> bool:
        return True

    def parse_call(self, item: Any) -> NativeCall | None:
        image = generated_image(item)
        params: dict[str, Any] = {}
        for name in self.call_fields:
            value = getattr(image, name)
            if value is not None:
                params[name] = value
        shape = " ".join(v for v in (image.size, image.output_format) if v)
        summary = f"image generation ({image.status})"
        if shape:
            summary += f": {shape}"
        if image.image_base64:
            summary += f", {len(image.image_base64)} base64 chars"
        lines = [summary]
        if image.revised_prompt:
            lines.append(f"revised prompt: {image.revised_prompt}")
        success = status_ok(image.status)
        if success:
            message = summary
        else:
            message = f"Image generation call {image.call_id} {image.status}"
            if image.error_code or image.error_message:
                message += f": {_error_text(image, field(item, 'error'))}"
            message += "."
            lines.append(message)
        return NativeCall(
            image.call_id, params, image, success, message, "\n".join(lines)
        )

    def parse_output(
        self, response_items: Sequence[Any], tool: HostedTool[Any]
    ) -> ImageGenerationResult | None:
        images = [
            generated_image(item)
            for item in response_items
            if field(item, "type") == "image_generation_call"
        ]
        if not images:
            return None
        return ImageGenerationResult(images=tuple(images))
