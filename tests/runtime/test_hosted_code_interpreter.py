"""Hosted code_interpreter: config validation, wire JSON, SDK parsing, adapter loop.

Framework-free: ``pytest tests/runtime/test_hosted_code_interpreter.py -p no:django``.
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
from tooling.runtime.adapters.openai.codecs.code_interpreter import (
    OpenAICodeInterpreterCodec,
)
from tooling.runtime.errors import PromptValidationError
from tooling.runtime.events import InMemorySink, ToolInvoked
from tooling.runtime.hosted import code_interpreter as ci_module
from tooling.runtime.hosted.code_interpreter import (
    CodeInterpreterConfig,
    CodeInterpreterResult,
    CodeInterpreterSection,
    CodeRun,
    ContainerFile,
    code_interpreter_tool,
)
from tooling.runtime.prompt import Prompt, ToolChoice
from tooling.runtime.sections import MarkdownSection

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hosted_tools"
CODEC = OpenAICodeInterpreterCodec()


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


def test_default_config_is_an_auto_container() -> None:
    config = CodeInterpreterConfig()
    assert config.auto is True
    assert (config.container_id, config.memory_limit, config.file_ids) == (
        None,
        None,
        (),
    )


def test_auto_container_options_are_normalised() -> None:
    config = CodeInterpreterConfig(
        memory_limit="16g",
        file_ids=[" file-a ", "file-b", "file-a"],  # type: ignore[arg-type]
    )
    assert config.file_ids == ("file-a", "file-b") and config.memory_limit == "16g"
    assert CodeInterpreterConfig(file_ids="file-x").file_ids == ("file-x",)  # type: ignore[arg-type]


def test_explicit_container() -> None:
    config = CodeInterpreterConfig(container_id=" cntr_abc ")
    assert config.container_id == "cntr_abc" and config.auto is False


@pytest.mark.parametrize(
    ("kwargs", "match", "placeholder"),
    [
        ({"container_id": "  "}, "container_id must be a non-blank", "container_id"),
        ({"container_id": 5}, "container_id must be a non-blank", "container_id"),
        (
            {"memory_limit": "2g"},
            "memory_limit '2g' is not one of 1g, 4g, 16g, 64g",
            "memory_limit",
        ),
        ({"file_ids": ("",)}, "file_ids must be non-blank strings", "file_ids"),
        ({"file_ids": (1,)}, "file_ids must be non-blank strings", "file_ids"),
        ({"file_ids": None}, "file_ids must be a list", "file_ids"),
        (
            {"container_id": "cntr_1", "memory_limit": "4g"},
            "names an existing container, so memory_limit cannot be set",
            "memory_limit",
        ),
        (
            {"container_id": "cntr_1", "file_ids": ("file-1",)},
            "so file_ids cannot be set",
            "file_ids",
        ),
        (
            {"container_id": "cntr_1", "memory_limit": "4g", "file_ids": ("f",)},
            "so memory_limit and file_ids cannot be set: they only apply to an auto",
            "memory_limit",
        ),
    ],
)
def test_config_rules(kwargs: dict[str, Any], match: str, placeholder: str) -> None:
    with pytest.raises(PromptValidationError, match=match) as info:
        CodeInterpreterConfig(**kwargs)
    assert info.value.placeholder == placeholder


# -- factory and section -------------------------------------------------------


def test_factory_and_section() -> None:
    tool = code_interpreter_tool()
    assert (tool.kind, tool.name) == ("code_interpreter", "code_interpreter")
    assert tool.config == CodeInterpreterConfig()
    assert code_interpreter_tool(name="calc").name == "calc"
    with pytest.raises(PromptValidationError, match="CodeInterpreterConfig"):
        code_interpreter_tool({"container_id": "x"})  # type: ignore[arg-type]

    section = CodeInterpreterSection(CodeInterpreterConfig(memory_limit="4g"))
    assert isinstance(section, MarkdownSection) and section.key == "code_interpreter"
    (hosted,) = section.hosted_tools()
    assert hosted.config.memory_limit == "4g"
    rendered = Prompt(ns="t", key="ci", sections=[section]).render()
    assert rendered.hosted_tools == (hosted,)
    assert "code_interpreter tool" in rendered.text


# -- codec: wire format --------------------------------------------------------


def test_codec_protocol_attributes() -> None:
    tool = code_interpreter_tool()
    assert CODEC.kind == "code_interpreter"
    assert CODEC.item_types == ("code_interpreter_call",)
    assert CODEC.include == ("code_interpreter_call.outputs",)
    assert CODEC.tool_choice(tool) == {"type": "code_interpreter"}
    assert CODEC.matches({"type": "code_interpreter_call"}, tool) is True


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            CodeInterpreterConfig(),
            {"type": "code_interpreter", "container": {"type": "auto"}},
        ),
        (
            CodeInterpreterConfig(memory_limit="4g", file_ids=("file-abc",)),
            {
                "type": "code_interpreter",
                "container": {
                    "type": "auto",
                    "memory_limit": "4g",
                    "file_ids": ["file-abc"],
                },
            },
        ),
        (
            CodeInterpreterConfig(memory_limit="64g"),
            {
                "type": "code_interpreter",
                "container": {"type": "auto", "memory_limit": "64g"},
            },
        ),
        (
            CodeInterpreterConfig(container_id="cntr_existing123"),
            {"type": "code_interpreter", "container": "cntr_existing123"},
        ),
    ],
)
def test_serialize(config: CodeInterpreterConfig, expected: dict[str, Any]) -> None:
    assert CODEC.serialize(code_interpreter_tool(config)) == expected


def test_serialize_rejects_a_foreign_config() -> None:
    from tooling.runtime.hosted.base import HostedTool

    @dataclasses.dataclass(frozen=True)
    class Other:
        pass

    tool = HostedTool(
        kind="code_interpreter", name="ci", description="x", config=Other()
    )
    with pytest.raises(TypeError, match="needs a CodeInterpreterConfig"):
        CODEC.serialize(tool)


# -- codec: parsing through the real SDK ---------------------------------------


def test_parse_call_through_the_sdk() -> None:
    items = sdk_output("code_interpreter_response.json")
    first = next(i for i in items if i.type == "code_interpreter_call")
    assert type(first).__name__ == "ResponseCodeInterpreterToolCall"
    call = CODEC.parse_call(first)
    assert call is not None and call.success is True
    assert call.call_id == "ci_68a1d00d5eed0001"
    assert call.params["container_id"] == "cntr_68a1d00d5eed"
    assert call.params["code"].startswith("import pandas as pd")
    run = call.value
    assert isinstance(run, CodeRun)
    assert run.logs == ("128400\n",)
    assert run.images == (
        "https://files.openai.test/containers/cntr_68a1d00d5eed/img_1.png",
    )
    assert "```python" in call.rendered and "128400" in call.rendered
    assert "image: https://files.openai.test" in call.rendered


def test_parse_failed_call_through_the_sdk() -> None:
    items = sdk_output("code_interpreter_failed_response.json")
    call = CODEC.parse_call(items[0])
    assert call is not None and call.success is False
    assert call.message.startswith(
        "Code interpreter call ci_68a1d00d5eed0003 failed in container "
        "cntr_68a1expired."
    )
    assert "FileNotFoundError" in call.message


def test_parse_output_aggregates_runs_and_cited_files() -> None:
    items = sdk_output("code_interpreter_response.json")
    result = CODEC.parse_output(items, code_interpreter_tool())
    assert isinstance(result, CodeInterpreterResult)
    assert [r.call_id for r in result.calls] == [
        "ci_68a1d00d5eed0001",
        "ci_68a1d00d5eed0002",
    ]
    assert result.files == (
        ContainerFile(
            container_id="cntr_68a1d00d5eed",
            file_id="cfile_68a1chart",
            filename="chart.png",
        ),
    )
    assert result.logs == "128400\n['sales.csv', 'chart.png']\n"
    assert "file: chart.png" in result.render()
    assert (
        CODEC.parse_output(
            load("code_interpreter_response.json")["output"], code_interpreter_tool()
        )
        == result
    )


def test_parse_output_without_outputs_and_without_calls() -> None:
    items = [
        {
            "type": "code_interpreter_call",
            "id": "ci_1",
            "status": "completed",
            "container_id": "cntr_1",
            "code": None,
            "outputs": None,
        },
        {
            "type": "message",
            "id": "m",
            "content": [
                {
                    "type": "output_text",
                    "text": "see a.csv and a.csv",
                    "annotations": [
                        {
                            "type": "container_file_citation",
                            "container_id": "cntr_1",
                            "file_id": "cf_1",
                            "filename": "a.csv",
                            "start_index": 4,
                            "end_index": 9,
                        },
                        {
                            "type": "container_file_citation",
                            "container_id": "cntr_1",
                            "file_id": "cf_1",
                            "filename": "a.csv",
                            "start_index": 14,
                            "end_index": 19,
                        },
                    ],
                }
            ],
        },
    ]
    result = CODEC.parse_output(items, code_interpreter_tool())
    assert result is not None
    assert result.calls[0] == CodeRun(call_id="ci_1", container_id="cntr_1")
    assert len(result.files) == 1
    assert CODEC.parse_output(items[1:], code_interpreter_tool()) is None


# -- adapter round trip --------------------------------------------------------


def test_adapter_round_trip() -> None:
    captured: list[dict[str, Any]] = []
    adapter = OpenAIAdapter(
        client=make_client(load("code_interpreter_response.json"), captured),
        model="gpt-5.4",
        hosted_tool_codecs={
            **default_codecs(),
            "code_interpreter": OpenAICodeInterpreterCodec(),
        },
    )
    prompt = Prompt(
        ns="tests",
        key="code",
        sections=[
            MarkdownSection(title="Task", key="task", template="Sum the revenue."),
            CodeInterpreterSection(
                CodeInterpreterConfig(memory_limit="4g", file_ids=("file-SalesCsv",))
            ),
        ],
    )
    sink = InMemorySink()
    response = adapter.evaluate(prompt, sink=sink)

    assert len(captured) == 1
    body = captured[0]
    assert body["tools"] == [
        {
            "type": "code_interpreter",
            "container": {
                "type": "auto",
                "memory_limit": "4g",
                "file_ids": ["file-SalesCsv"],
            },
        }
    ]
    assert body["include"] == ["code_interpreter_call.outputs"]

    events = sink.of_type(ToolInvoked)
    assert [e.call_id for e in events] == ["ci_68a1d00d5eed0001", "ci_68a1d00d5eed0002"]
    for event in events:
        assert (event.native, event.kind, event.provider, event.success) == (
            True,
            "code_interpreter",
            "openai",
            True,
        )
        assert isinstance(event.result.value, CodeRun)
    output = response.hosted_outputs["code_interpreter"]
    assert isinstance(output, CodeInterpreterResult)
    assert output.files[0].file_id == "cfile_68a1chart"


def test_adapter_round_trip_failed_call_and_tool_choice() -> None:
    adapter = OpenAIAdapter(
        client=make_client(load("code_interpreter_failed_response.json"), []),
        model="gpt-5.4",
        hosted_tool_codecs={
            **default_codecs(),
            "code_interpreter": OpenAICodeInterpreterCodec(),
        },
    )
    section = CodeInterpreterSection(
        CodeInterpreterConfig(container_id="cntr_68a1expired")
    )
    prompt = Prompt(
        ns="t",
        key="k",
        sections=[section],
        tool_choice=ToolChoice(mode="tool", tools=("code_interpreter",)),
    )
    preview = adapter.request_preview(prompt.render())
    assert preview["tool_choice"] == {"type": "code_interpreter"}
    assert preview["tools"] == [
        {"type": "code_interpreter", "container": "cntr_68a1expired"}
    ]
    sink = InMemorySink()
    response = adapter.evaluate(prompt, sink=sink)
    (event,) = sink.of_type(ToolInvoked)
    assert event.success is False and event.result.value is None
    assert "FileNotFoundError" in event.result.message
    assert response.hosted_outputs["code_interpreter"].calls[0].status == "failed"


def test_runtime_modules_stay_framework_free() -> None:
    import tooling.runtime.adapters.openai.codecs.code_interpreter as codec_module

    for module in (ci_module, codec_module):
        tree = ast.parse(Path(str(module.__file__)).read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in {"django", "rest_framework", "celery"}
