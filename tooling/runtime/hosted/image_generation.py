"""Image generation: configuration, typed output, factory and section.

The provider generates (or edits) images and returns them base64-encoded.
``partial_images`` only matters when streaming, which this runtime does not do.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
from typing import Literal

from ..errors import PromptValidationError
from .base import HostedTool
from .section import HostedToolSection
from .spec import HostedKindSpec, HostedOption

ImageQuality = Literal["low", "medium", "high", "auto"]
ImageFormat = Literal["png", "webp", "jpeg"]
ImageBackground = Literal["transparent", "opaque", "auto"]
ImageModeration = Literal["auto", "low"]
ImageAction = Literal["generate", "edit", "auto"]

QUALITIES: tuple[str, ...] = ("low", "medium", "high", "auto")
FORMATS: tuple[str, ...] = ("png", "webp", "jpeg")
BACKGROUNDS: tuple[str, ...] = ("transparent", "opaque", "auto")
MODERATIONS: tuple[str, ...] = ("auto", "low")
ACTIONS: tuple[str, ...] = ("generate", "edit", "auto")
MAX_PARTIAL_IMAGES = 3
_SIZE = re.compile(r"^([1-9][0-9]{0,5})x([1-9][0-9]{0,5})$")
_MIME = {"png": "image/png", "webp": "image/webp", "jpeg": "image/jpeg"}


def _one_of(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        raise PromptValidationError(
            f"{name} '{value}' is not one of {', '.join(allowed)}.", placeholder=name
        )


def _int_in(name: str, value: object, low: int, high: int) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not low <= value <= high
    ):
        raise PromptValidationError(
            f"{name} must be an integer from {low} to {high} (got {value!r}).",
            placeholder=name,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ImageGenerationConfig:
    """Options of the image_generation tool; ``None`` leaves the provider default.

    ``size`` is ``"auto"`` or ``"WxH"`` (for example ``"1024x1536"``); which
    sizes a model accepts is the provider's call.
    """

    size: str | None = None
    quality: ImageQuality | None = None
    output_format: ImageFormat | None = None
    background: ImageBackground | None = None
    model: str | None = None
    output_compression: int | None = None
    moderation: ImageModeration | None = None
    action: ImageAction | None = None
    partial_images: int | None = None

    def __post_init__(self) -> None:
        if self.size is not None:
            size = self.size.strip().lower() if isinstance(self.size, str) else ""
            if size != "auto" and not _SIZE.fullmatch(size):
                raise PromptValidationError(
                    f"size '{self.size}' must be 'auto' or WIDTHxHEIGHT with positive "
                    "integers (for example '1024x1024').",
                    placeholder="size",
                )
            object.__setattr__(self, "size", size)
        _one_of("quality", self.quality, QUALITIES)
        _one_of("output_format", self.output_format, FORMATS)
        _one_of("background", self.background, BACKGROUNDS)
        _one_of("moderation", self.moderation, MODERATIONS)
        _one_of("action", self.action, ACTIONS)
        if self.model is not None:
            if not isinstance(self.model, str) or not self.model.strip():
                raise PromptValidationError(
                    "model must be a non-blank image model name (or None for the "
                    "provider default).",
                    placeholder="model",
                )
            object.__setattr__(self, "model", self.model.strip())
        _int_in("output_compression", self.output_compression, 0, 100)
        _int_in("partial_images", self.partial_images, 0, MAX_PARTIAL_IMAGES)
        if self.background == "transparent" and self.output_format == "jpeg":
            raise PromptValidationError(
                "A transparent background needs output_format 'png' or 'webp'; "
                "jpeg has no transparency.",
                placeholder="background",
            )


@dataclasses.dataclass(frozen=True, slots=True)
class GeneratedImage:
    """One ``image_generation_call``: the image (base64) and how it was made.

    A failed call has no image; ``error_code``/``error_message`` say why.
    """

    call_id: str
    status: str
    image_base64: str | None = dataclasses.field(default=None, repr=False)
    revised_prompt: str | None = None
    size: str | None = None
    quality: str | None = None
    output_format: str | None = None
    background: str | None = None
    action: str | None = None
    error_code: str | None = None
    error_message: str | None = None

    @property
    def mime_type(self) -> str:
        return _MIME.get(self.output_format or "png", f"image/{self.output_format}")

    def data(self) -> bytes:
        """The decoded image bytes (empty when there is no image)."""
        if not self.image_base64:
            return b""
        try:
            return base64.b64decode(self.image_base64, validate=True)
        except (binascii.Error, ValueError) as error:
            raise ValueError(
                f"Image of call {self.call_id} is not valid base64: {error}"
            ) from error


@dataclasses.dataclass(frozen=True, slots=True)
class ImageGenerationResult:
    """Every image generation call of a run, in order."""

    images: tuple[GeneratedImage, ...] = ()

    @property
    def succeeded(self) -> tuple[GeneratedImage, ...]:
        return tuple(
            i for i in self.images if i.status == "completed" and i.image_base64
        )

    def render(self) -> str:
        lines = []
        for image in self.images:
            line = f"[{image.status}] {image.call_id} {image.size or ''}".rstrip()
            if image.revised_prompt:
                line += f": {image.revised_prompt}"
            if image.error_message:
                line += f" ({image.error_code or 'error'}: {image.error_message})"
            lines.append(line)
        return "\n".join(lines)


IMAGE_GENERATION_DESCRIPTION = "Generate or edit images from a text description."


def image_generation_tool(
    config: ImageGenerationConfig | None = None,
    *,
    name: str = "image_generation",
    description: str = IMAGE_GENERATION_DESCRIPTION,
) -> HostedTool[ImageGenerationConfig]:
    """An image generation hosted tool with the given configuration."""
    if config is not None and not isinstance(config, ImageGenerationConfig):
        raise PromptValidationError(
            "image_generation_tool needs an ImageGenerationConfig.",
            placeholder="config",
        )
    return HostedTool(
        kind="image_generation",
        name=name,
        description=description,
        config=config or ImageGenerationConfig(),
    )


IMAGE_GENERATION_TEMPLATE = """\
Use the image_generation tool when the user asks for a picture, illustration
or an edit of an image. Describe the image precisely; do not paste image data
into the answer."""


class ImageGenerationSection(HostedToolSection[ImageGenerationConfig]):
    """A section that documents and exposes the image_generation hosted tool."""

    default_key = "image_generation"
    default_title = "Image Generation"
    default_template = IMAGE_GENERATION_TEMPLATE
    tool_factory = image_generation_tool


__all__ = [
    "ACTIONS",
    "BACKGROUNDS",
    "FORMATS",
    "IMAGE_GENERATION_DESCRIPTION",
    "MODERATIONS",
    "QUALITIES",
    "GeneratedImage",
    "ImageGenerationConfig",
    "ImageGenerationResult",
    "ImageGenerationSection",
    "image_generation_tool",
]


# -- The catalog's view of this kind (``spec.HostedKindSpec``).

IMAGE_GENERATION_SPEC: HostedKindSpec[ImageGenerationConfig] = HostedKindSpec(
    kind="image_generation",
    label="Image generation",
    config_type=ImageGenerationConfig,
    tool_factory=image_generation_tool,
    description="Used when the kind is image_generation; empty fields leave the "
    "provider's default.",
    options=(
        HostedOption(
            "size",
            max_length=20,
            help="auto or WIDTHxHEIGHT, e.g. 1024x1024, 1024x1536, 1536x1024.",
        ),
        HostedOption("quality", "choice", choices=QUALITIES),
        HostedOption("output_format", "choice", choices=FORMATS),
        HostedOption("background", "choice", choices=BACKGROUNDS),
        HostedOption(
            "model",
            label="Image model",
            form_name="image_model",
            max_length=100,
            help="e.g. gpt-image-1; empty: provider default.",
        ),
        HostedOption("output_compression", "integer", help="0 to 100."),
        HostedOption("moderation", "choice", choices=MODERATIONS),
        HostedOption("action", "choice", choices=ACTIONS),
        HostedOption(
            "partial_images",
            "integer",
            help=f"0 to {MAX_PARTIAL_IMAGES} (only used when streaming).",
        ),
    ),
)
