"""Hosted image_generation: config validation, wire JSON, SDK parsing, adapter loop.

Framework-free: ``pytest tests/runtime/test_hosted_image_generation.py -p no:django``.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.adapters.openai.codecs import default_codecs
from tooling.runtime.adapters.openai.codecs.image_generation import (
    OpenAIImageGenerationCodec,
)
from tooling.runtime.errors import PromptValidationError
from tooling.runtime.events import InMemorySink, ToolInvoked
from tooling.runtime.hosted import image_generation as ig_module
from tooling.runtime.hosted.base import HostedTool
from tooling.runtime.hosted.image_generation import (
    GeneratedImage,
    ImageGenerationConfig,
    ImageGenerationResult,
    ImageGenerationSection,
    image_generation_tool,
)
from tooling.runtime.prompt import Prompt, ToolChoice
from tooling.runtime.sections import MarkdownSection

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hosted_tools"
CODEC = OpenAIImageGenerationCodec()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def make_client(body: dict[str, Any], captured: list[dict[str, Any]]) -> openai.OpenAI:
    def handler(request: httpx.Request) -> httpx.Response:
        captured.append(json.loads(request.content))
        return httpx.Response(200, json=body, headers={"x-request-id": "req_test"})

    return openai.OpenAI(
        api_key="sk-test",
        base_url="http://test.invalid/v1",
        # The SDK takes an httpx client too, though typed for httpx2's.
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),  # type: ignore[arg-type]
        max_retries=0,
    )


def sdk_output(name: str) -> list[Any]:
    """The fixture's ``output`` as parsed by the real SDK."""
    response = make_client(load(name), []).responses.create(model="gpt-5.4", input="x")
    return list(response.output)


# -- configuration -------------------------------------------------------------


def test_default_config_sets_nothing() -> None:
    config = ImageGenerationConfig()
    assert all(getattr(config, f.name) is None for f in dataclasses.fields(config))


@pytest.mark.parametrize(
    "size", ["auto", "1024x1024", "1536x864", " 1024X1536 ", "AUTO"]
)
def test_valid_sizes_are_normalised(size: str) -> None:
    assert ImageGenerationConfig(size=size).size == size.strip().lower()


@pytest.mark.parametrize(
    "size",
    ["", "1024", "0x1024", "1024x0", "-1x5", "1024x1024px", "1024 x 1024", "big", 5],
)
def test_invalid_sizes(size: Any) -> None:
    with pytest.raises(
        PromptValidationError, match="must be 'auto' or WIDTHxHEIGHT"
    ) as info:
        ImageGenerationConfig(size=size)
    assert info.value.placeholder == "size"


@pytest.mark.parametrize(
    ("kwargs", "match", "placeholder"),
    [
        (
            {"quality": "max"},
            "quality 'max' is not one of low, medium, high, auto",
            "quality",
        ),
        (
            {"output_format": "gif"},
            "output_format 'gif' is not one of png, webp, jpeg",
            "output_format",
        ),
        (
            {"background": "white"},
            "background 'white' is not one of transparent, opaque",
            "background",
        ),
        (
            {"moderation": "off"},
            "moderation 'off' is not one of auto, low",
            "moderation",
        ),
        (
            {"action": "remix"},
            "action 'remix' is not one of generate, edit, auto",
            "action",
        ),
        ({"model": " "}, "model must be a non-blank image model name", "model"),
        ({"model": 3}, "model must be a non-blank image model name", "model"),
        (
            {"output_compression": 101},
            "output_compression must be an integer from 0 to 100",
            "output_compression",
        ),
        (
            {"output_compression": -1},
            "output_compression must be an integer from 0 to 100",
            "output_compression",
        ),
        (
            {"output_compression": 50.0},
            "output_compression must be an integer",
            "output_compression",
        ),
        (
            {"output_compression": True},
            "output_compression must be an integer",
            "output_compression",
        ),
        (
            {"partial_images": 4},
            "partial_images must be an integer from 0 to 3",
            "partial_images",
        ),
        (
            {"partial_images": -1},
            "partial_images must be an integer from 0 to 3",
            "partial_images",
        ),
        (
            {"background": "transparent", "output_format": "jpeg"},
            "transparent background needs output_format 'png' or 'webp'",
            "background",
        ),
    ],
)
def test_config_rules(kwargs: dict[str, Any], match: str, placeholder: str) -> None:
    with pytest.raises(PromptValidationError, match=match) as info:
        ImageGenerationConfig(**kwargs)
    assert info.value.placeholder == placeholder


def test_boundaries_accepted() -> None:
    config = ImageGenerationConfig(
        output_compression=0,
        partial_images=3,
        background="transparent",
        output_format="webp",
        model=" gpt-image-2.6-sunburst ",
    )
    assert config.model == "gpt-image-2.6-sunburst"
    assert (
        ImageGenerationConfig(output_compression=100, partial_images=0).partial_images
        == 0
    )


# -- factory and section -------------------------------------------------------


def test_factory_and_section() -> None:
    tool = image_generation_tool()
    assert (tool.kind, tool.name, tool.config) == (
        "image_generation",
        "image_generation",
        ImageGenerationConfig(),
    )
    with pytest.raises(PromptValidationError, match="ImageGenerationConfig"):
        image_generation_tool({"size": "auto"})  # type: ignore[arg-type]
    section = ImageGenerationSection(
        ImageGenerationConfig(quality="low"), key="art", name="art"
    )
    assert isinstance(section, MarkdownSection) and section.key == "art"
    (hosted,) = section.hosted_tools()
    assert hosted.name == "art" and hosted.config.quality == "low"
    rendered = Prompt(ns="t", key="img", sections=[section]).render()
    assert rendered.hosted_tools == (hosted,)
    assert "image_generation tool" in rendered.text


# -- codec: wire format --------------------------------------------------------


def test_codec_protocol_attributes() -> None:
    tool = image_generation_tool()
    assert CODEC.kind == "image_generation"
    assert CODEC.item_types == ("image_generation_call",)
    assert CODEC.include == ()
    assert CODEC.tool_choice(tool) == {"type": "image_generation"}
    assert CODEC.matches({"type": "image_generation_call"}, tool) is True


def test_serialize_full_and_empty() -> None:
    config = ImageGenerationConfig(
        size="1024x1024",
        quality="low",
        output_format="png",
        background="opaque",
        model="gpt-image-2.6-sunburst",
        output_compression=100,
        moderation="auto",
        action="auto",
        partial_images=0,
    )
    assert CODEC.serialize(image_generation_tool(config)) == {
        "type": "image_generation",
        "action": "auto",
        "background": "opaque",
        "model": "gpt-image-2.6-sunburst",
        "moderation": "auto",
        "output_compression": 100,
        "output_format": "png",
        "partial_images": 0,
        "quality": "low",
        "size": "1024x1024",
    }
    assert CODEC.serialize(image_generation_tool()) == {"type": "image_generation"}
    small = ImageGenerationConfig(
        quality="low", size="1024x1024", output_format="png", partial_images=0
    )
    assert CODEC.serialize(image_generation_tool(small)) == {
        "type": "image_generation",
        "output_format": "png",
        "partial_images": 0,
        "quality": "low",
        "size": "1024x1024",
    }


def test_serialize_rejects_a_foreign_config() -> None:
    @dataclasses.dataclass(frozen=True)
    class Other:
        pass

    tool = HostedTool(
        kind="image_generation", name="ig", description="x", config=Other()
    )
    with pytest.raises(TypeError, match="needs an ImageGenerationConfig"):
        CODEC.serialize(tool)


# -- codec: parsing through the real SDK ---------------------------------------


def test_parse_call_through_the_sdk() -> None:
    items = sdk_output("image_generation_response.json")
    item = next(i for i in items if i.type == "image_generation_call")
    assert type(item).__name__ == "ImageGenerationCall"
    call = CODEC.parse_call(item)
    assert call is not None and call.success is True
    assert call.call_id == "ig_68a1e1e1a9e00001"
    assert call.params == {
        "revised_prompt": "A flat-style product photo of a red ceramic coffee mug on a "
        "white background",
        "size": "1024x1024",
        "quality": "low",
        "output_format": "png",
        "background": "opaque",
        "action": "generate",
    }
    image = call.value
    assert isinstance(image, GeneratedImage)
    assert image.data().startswith(PNG_MAGIC) and image.mime_type == "image/png"
    assert image.error_code is None
    # The base64 payload stays out of the rendered text, the message and repr.
    assert image.image_base64 is not None
    for text in (call.rendered, call.message, repr(image)):
        assert image.image_base64 not in text
    assert "1024x1024 png" in call.rendered and "revised prompt:" in call.rendered


def test_parse_failed_call_carries_the_provider_error() -> None:
    items = sdk_output("image_generation_failed_response.json")
    call = CODEC.parse_call(items[0])
    assert call is not None and call.success is False
    assert call.message == (
        "Image generation call ig_68a1e1e1a9e00002 failed: moderation_blocked: Your "
        "request was rejected by the safety system. (categories: violence; stage: "
        "input)."
    )
    image = call.value
    assert (image.error_code, image.image_base64, image.data()) == (
        "moderation_blocked",
        None,
        b"",
    )


def test_failed_call_without_error_details() -> None:
    call = CODEC.parse_call(
        {"type": "image_generation_call", "id": "ig_9", "status": "failed"}
    )
    assert call is not None and call.success is False
    assert call.message == "Image generation call ig_9 failed."


def test_parse_output_aggregates_the_run() -> None:
    items = sdk_output("image_generation_response.json")
    failed = sdk_output("image_generation_failed_response.json")
    result = CODEC.parse_output([*items, *failed], image_generation_tool())
    assert isinstance(result, ImageGenerationResult)
    assert [i.status for i in result.images] == ["completed", "failed"]
    assert [i.call_id for i in result.succeeded] == ["ig_68a1e1e1a9e00001"]
    assert "moderation_blocked" in result.render()
    assert CODEC.parse_output(
        load("image_generation_response.json")["output"], image_generation_tool()
    ) == CODEC.parse_output(items, image_generation_tool())
    assert CODEC.parse_output([{"type": "message"}], image_generation_tool()) is None


def test_invalid_base64_is_reported_clearly() -> None:
    image = GeneratedImage(
        call_id="ig_x", status="completed", image_base64="not base64!"
    )
    with pytest.raises(ValueError, match="Image of call ig_x is not valid base64"):
        image.data()


# -- adapter round trips -------------------------------------------------------


def make_adapter(fixture: str, captured: list[dict[str, Any]]) -> OpenAIAdapter:
    return OpenAIAdapter(
        client=make_client(load(fixture), captured),
        model="gpt-5.4",
        hosted_tool_codecs={
            **default_codecs(),
            "image_generation": OpenAIImageGenerationCodec(),
        },
    )


def make_prompt(**kwargs: Any) -> Prompt:
    return Prompt(
        ns="tests",
        key="image",
        sections=[
            MarkdownSection(title="Task", key="task", template="Draw a red mug."),
            ImageGenerationSection(
                ImageGenerationConfig(quality="low", size="1024x1024")
            ),
        ],
        **kwargs,
    )


def test_adapter_round_trip() -> None:
    captured: list[dict[str, Any]] = []
    sink = InMemorySink()
    response = make_adapter("image_generation_response.json", captured).evaluate(
        make_prompt(), sink=sink
    )
    assert len(captured) == 1
    body = captured[0]
    assert body["tools"] == [
        {"type": "image_generation", "quality": "low", "size": "1024x1024"}
    ]
    assert "include" not in body
    (event,) = sink.of_type(ToolInvoked)
    assert (event.native, event.kind, event.provider, event.success, event.name) == (
        True,
        "image_generation",
        "openai",
        True,
        "image_generation",
    )
    assert isinstance(event.result.value, GeneratedImage)
    output = response.hosted_outputs["image_generation"]
    assert isinstance(output, ImageGenerationResult)
    assert output.images[0].data().startswith(PNG_MAGIC)


def test_adapter_round_trip_failed_call() -> None:
    sink = InMemorySink()
    response = make_adapter("image_generation_failed_response.json", []).evaluate(
        make_prompt(), sink=sink
    )
    (event,) = sink.of_type(ToolInvoked)
    assert event.success is False and event.result.value is None
    assert "moderation_blocked" in event.result.message
    assert response.hosted_outputs["image_generation"].images[0].status == "failed"
    assert response.text == "I can't create that image."


def test_adapter_tool_choice() -> None:
    adapter = make_adapter("image_generation_response.json", [])
    prompt = make_prompt(
        tool_choice=ToolChoice(mode="tool", tools=("image_generation",))
    )
    assert adapter.request_preview(prompt.render())["tool_choice"] == {
        "type": "image_generation"
    }


def test_runtime_modules_stay_framework_free() -> None:
    import tooling.runtime.adapters.openai.codecs.image_generation as codec_module

    for module in (ig_module, codec_module):
        tree = ast.parse(Path(str(module.__file__)).read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in {"django", "rest_framework", "celery"}
