"""Hosted shell: config validation, wire JSON, parsing, adapter loop over HTTP.

Framework-free: ``pytest tests/runtime/test_hosted_shell.py -p no:django``.
The adapter tests run the real ``openai`` SDK against the offline provider.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tooling.offline import offline_transport
from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.adapters.openai.codecs import default_codecs
from tooling.runtime.adapters.openai.codecs.shell import OpenAIShellCodec
from tooling.runtime.errors import PromptEvaluationError, PromptValidationError
from tooling.runtime.events import InMemorySink, ToolInvoked
from tooling.runtime.hosted import shell as shell_module
from tooling.runtime.hosted.base import HostedTool
from tooling.runtime.hosted.shell import (
    ShellCall,
    ShellCommandRun,
    ShellConfig,
    ShellResult,
    ShellSection,
    shell_tool,
)
from tooling.runtime.prompt import Prompt, ToolChoice
from tooling.runtime.sections import MarkdownSection

CODEC = OpenAIShellCodec()


def offline_client() -> openai.OpenAI:
    http_client: Any = httpx.Client(transport=offline_transport())
    return openai.OpenAI(
        api_key="sk-offline",
        base_url="http://offline.invalid/v1",
        http_client=http_client,
        max_retries=0,
    )


# -- configuration -------------------------------------------------------------


def test_default_config_is_an_auto_container_without_network() -> None:
    config = ShellConfig()
    assert (config.environment, config.network_policy, config.allowed_domains) == (
        "container_auto",
        "disabled",
        (),
    )
    assert config.hosted is True
    assert ShellConfig(environment="local", executor="scratch").hosted is False


def test_auto_container_options_are_normalised() -> None:
    config = ShellConfig(
        network_policy="allowlist",
        allowed_domains=[" PyPI.org ", "pypi.org", "files.pythonhosted.org"],  # type: ignore[arg-type]
        memory_limit="4g",
        file_ids=[" file-a ", "file-a", "file-b"],  # type: ignore[arg-type]
    )
    assert config.allowed_domains == ("pypi.org", "files.pythonhosted.org")
    assert config.file_ids == ("file-a", "file-b")
    assert ShellConfig(file_ids="file-x").file_ids == ("file-x",)  # type: ignore[arg-type]
    assert ShellConfig(
        environment="container_reference", container_id=" cntr_1 "
    ).container_id == ("cntr_1")
    assert ShellConfig(environment="local", executor=" scratch ").executor == "scratch"


@pytest.mark.parametrize(
    ("kwargs", "match", "placeholder"),
    [
        (
            {"environment": "docker"},
            "environment 'docker' is not one of",
            "environment",
        ),
        (
            {"network_policy": "open"},
            "network_policy 'open' is not one of",
            "network_policy",
        ),
        (
            {"memory_limit": "2g"},
            "memory_limit '2g' is not one of 1g, 4g",
            "memory_limit",
        ),
        (
            {"network_policy": "allowlist"},
            "'allowlist' needs at least one allowed domain",
            "allowed_domains",
        ),
        (
            {"allowed_domains": ("pypi.org",)},
            "only apply with network_policy 'allowlist'",
            "allowed_domains",
        ),
        (
            {"network_policy": "allowlist", "allowed_domains": ("https://pypi.org",)},
            "without a scheme",
            "allowed_domains",
        ),
        (
            {"network_policy": "allowlist", "allowed_domains": ("pypi.org\x00",)},
            "not a valid domain name",
            "allowed_domains",
        ),
        (
            {"network_policy": "allowlist", "allowed_domains": (5,)},
            "must be domain names",
            "allowed_domains",
        ),
        (
            {
                "network_policy": "allowlist",
                "allowed_domains": tuple(f"d{i}.example.com" for i in range(101)),
            },
            "at most 100 domains",
            "allowed_domains",
        ),
        ({"allowed_domains": None}, "must be a list", "allowed_domains"),
        ({"file_ids": None}, "file_ids must be a list", "file_ids"),
        ({"file_ids": ("",)}, "file_ids must be a non-blank file id", "file_ids"),
        ({"file_ids": ("f\x00",)}, "file_ids must be a printable file id", "file_ids"),
        ({"file_ids": ("x" * 201,)}, "at most 200 characters", "file_ids"),
        (
            {"environment": "container_reference"},
            "container_reference environment needs a container_id",
            "container_id",
        ),
        (
            {"environment": "container_reference", "container_id": "\ud800"},
            "container_id must be a printable container id",
            "container_id",
        ),
        (
            {
                "environment": "container_reference",
                "container_id": "c",
                "memory_limit": "4g",
            },
            "container_reference environment does not take memory_limit",
            "memory_limit",
        ),
        (
            {"container_id": "cntr_1"},
            "container_auto environment does not take container_id",
            "container_id",
        ),
        ({"executor": "scratch"}, "does not take executor", "executor"),
        ({"environment": "local"}, "local environment needs an executor", "executor"),
        (
            {"environment": "local", "executor": "  "},
            "executor must be a non-blank",
            "executor",
        ),
        (
            {"environment": "local", "executor": "scratch", "file_ids": ("f",)},
            "local environment does not take file_ids",
            "file_ids",
        ),
        (
            {
                "environment": "local",
                "executor": "scratch",
                "network_policy": "allowlist",
                "allowed_domains": ("pypi.org",),
            },
            "does not take network_policy or allowed_domains",
            "network_policy",
        ),
    ],
)
def test_config_rules(kwargs: dict[str, Any], match: str, placeholder: str) -> None:
    with pytest.raises(PromptValidationError, match=match) as info:
        ShellConfig(**kwargs)
    assert info.value.placeholder == placeholder


# -- factory, section and result ----------------------------------------------


def test_factory_and_section() -> None:
    tool = shell_tool()
    assert (tool.kind, tool.name, tool.config) == ("shell", "shell", ShellConfig())
    assert shell_tool(name="sh").name == "sh"
    with pytest.raises(PromptValidationError, match="needs a ShellConfig"):
        shell_tool({"environment": "local"})  # type: ignore[arg-type]

    section = ShellSection(ShellConfig(memory_limit="1g"))
    assert isinstance(section, MarkdownSection) and section.key == "shell"
    (hosted,) = section.hosted_tools()
    assert hosted.config.memory_limit == "1g"
    rendered = Prompt(ns="t", key="sh", sections=[section]).render()
    assert rendered.hosted_tools == (hosted,)
    assert "shell tool" in rendered.text


def test_result_render_and_outcomes() -> None:
    ok = ShellCommandRun("ls", stdout="a\n", outcome=0)
    failed = ShellCommandRun("cat x", stderr="no such file\n", outcome=1)
    slow = ShellCommandRun("sleep 9", outcome="timeout")
    pending = ShellCommandRun("pwd")
    assert (ok.exit_code, ok.timed_out, ok.outcome_label) == (0, False, "exit 0")
    assert (slow.exit_code, slow.timed_out, slow.outcome_label) == (
        None,
        True,
        "timed out",
    )
    assert pending.outcome_label == "no output"
    result = ShellResult(
        calls=(ShellCall("call_1", (ok, failed, slow, pending), container_id="cntr_9"),)
    )
    assert result.commands == (ok, failed, slow, pending)
    assert result.render() == (
        "[completed] shell call_1 (cntr_9)\n"
        "$ ls\na\n-> exit 0\n"
        "$ cat x\nstderr: no such file\n-> exit 1\n"
        "$ sleep 9\n-> timed out\n"
        "$ pwd\n-> no output"
    )


# -- codec: wire format --------------------------------------------------------


def test_codec_protocol_attributes() -> None:
    tool = shell_tool()
    assert CODEC.kind == "shell" and default_codecs()["shell"].kind == "shell"
    assert CODEC.item_types == ("shell_call", "shell_call_output")
    assert CODEC.include == ()
    assert CODEC.tool_choice(tool) == {"type": "shell"}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            ShellConfig(),
            {"type": "container_auto", "network_policy": {"type": "disabled"}},
        ),
        (
            ShellConfig(
                network_policy="allowlist",
                allowed_domains=("pypi.org",),
                memory_limit="4g",
                file_ids=("file-abc",),
            ),
            {
                "type": "container_auto",
                "network_policy": {
                    "type": "allowlist",
                    "allowed_domains": ["pypi.org"],
                },
                "memory_limit": "4g",
                "file_ids": ["file-abc"],
            },
        ),
        (
            ShellConfig(environment="container_reference", container_id="cntr_1"),
            {"type": "container_reference", "container_id": "cntr_1"},
        ),
        (
            ShellConfig(environment="local", executor="scratch"),
            {"type": "local"},
        ),
    ],
)
def test_serialize(config: ShellConfig, expected: dict[str, Any]) -> None:
    assert CODEC.serialize(shell_tool(config)) == {
        "type": "shell",
        "environment": expected,
    }


def test_serialize_rejects_a_foreign_config() -> None:
    @dataclasses.dataclass(frozen=True)
    class Other:
        pass

    tool = HostedTool(kind="shell", name="sh", description="x", config=Other())
    with pytest.raises(TypeError, match="needs a ShellConfig"):
        CODEC.serialize(tool)
    assert CODEC.matches({"type": "shell_call"}, tool) is False


def test_matches_by_environment() -> None:
    auto, local = (
        shell_tool(),
        shell_tool(ShellConfig(environment="local", executor="x")),
    )
    named = shell_tool(
        ShellConfig(environment="container_reference", container_id="c1")
    )
    call_in = {"type": "container_reference", "container_id": "c1"}
    assert CODEC.matches({"environment": call_in}, auto) is True
    assert CODEC.matches({"environment": call_in}, named) is True
    other = {"environment": {"type": "container_reference", "container_id": "c2"}}
    assert CODEC.matches(other, named) is False
    assert CODEC.matches({"environment": {"type": "local"}}, local) is True
    assert CODEC.matches({"environment": {"type": "local"}}, auto) is False
    assert CODEC.matches({"environment": None}, local) is False


# -- codec: parsing ------------------------------------------------------------

CALL = {
    "id": "sh_1",
    "type": "shell_call",
    "call_id": "call_sh1",
    "status": "completed",
    "action": {
        "commands": ["ls -la", "sleep 99"],
        "timeout_ms": 10000,
        "max_output_length": 4096,
    },
    "environment": {"type": "container_reference", "container_id": "cntr_7"},
}
OUTPUT = {
    "id": "sho_1",
    "type": "shell_call_output",
    "call_id": "call_sh1",
    "status": "completed",
    "max_output_length": 4096,
    "output": [
        {"stdout": "a\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
        {"stdout": "", "stderr": "", "outcome": {"type": "timeout"}},
    ],
}


def test_a_call_is_recorded_once_with_its_paired_output() -> None:
    call = CODEC.parse_call_in(CALL, [CALL, OUTPUT])
    assert call is not None and call.success is True
    assert call.call_id == "call_sh1"
    assert call.params == {
        "commands": ["ls -la", "sleep 99"],
        "environment": "container_reference",
        "container_id": "cntr_7",
        "timeout_ms": 10000,
        "max_output_length": 4096,
    }
    assert call.value == ShellCall(
        call_id="call_sh1",
        commands=(
            ShellCommandRun("ls -la", stdout="a\n", outcome=0),
            ShellCommandRun("sleep 99", outcome="timeout"),
        ),
        environment="container_reference",
        container_id="cntr_7",
        timeout_ms=10000,
        max_output_length=4096,
    )
    assert call.message == (
        "shell (completed) in cntr_7: 2 command(s), 1 timed out (sleep 99: timed out)"
    )
    assert "$ sleep 99\n-> timed out" in call.rendered
    assert CODEC.parse_call_in(OUTPUT, [CALL, OUTPUT]) is None


def test_an_output_without_its_call_is_still_recorded() -> None:
    call = CODEC.parse_call_in(OUTPUT, [OUTPUT])
    assert call is not None
    assert [run.outcome for run in call.value.commands] == [0, "timeout"]
    assert call.value.commands[0].command == ""


def test_a_call_without_output_and_an_incomplete_call() -> None:
    call = CODEC.parse_call(CALL)
    assert call is not None and call.success is True
    assert [run.outcome_label for run in call.value.commands] == ["no output"] * 2
    incomplete = CODEC.parse_call({**CALL, "status": "incomplete"})
    assert incomplete is not None and incomplete.success is False
    assert incomplete.message.startswith("Shell call call_sh1 incomplete in cntr_7.")


@pytest.mark.parametrize(
    "broken",
    [
        {**CALL, "action": {"commands": "ls"}},
        {**OUTPUT, "output": "oops"},
        {**OUTPUT, "output": [{"outcome": {"type": "exit", "exit_code": "0"}}]},
    ],
)
def test_unreadable_items_raise_for_the_adapter_to_record(
    broken: dict[str, Any],
) -> None:
    items = [CALL, broken] if broken["type"] == "shell_call_output" else [broken]
    with pytest.raises(ValueError):
        CODEC.parse_call_in(items[0], items)


def test_hostile_text_is_kept_verbatim() -> None:
    hostile = "\x00<script>\ud800" + "x" * 1_000_000
    output = {
        **OUTPUT,
        "output": [
            {
                "stdout": hostile,
                "stderr": hostile,
                "outcome": {"type": "exit", "exit_code": 3},
            }
        ],
    }
    call = CODEC.parse_call_in(
        {**CALL, "action": {"commands": [hostile]}}, [CALL, output]
    )
    assert call is not None
    run = call.value.commands[0]
    assert run.command == run.stdout == run.stderr == hostile and run.exit_code == 3
    # the message names the failed command by a short excerpt, on one line
    assert len(call.message) < 300 and call.message.endswith("…: exit 3)")


def test_odd_field_types_are_read_as_text() -> None:
    odd = {
        "type": "shell_call",
        "call_id": 7,
        "status": None,
        "action": {"commands": [1, None], "timeout_ms": True},
        "environment": {"type": "container_reference", "container_id": 42},
    }
    output = {
        "type": "shell_call_output",
        "call_id": 7,
        "output": [{"stdout": 3, "stderr": None, "outcome": {"type": "?"}}, "x"],
    }
    call = CODEC.parse_call_in(odd, [odd, output])
    assert call is not None
    value = call.value
    assert (value.call_id, value.container_id, value.timeout_ms) == ("7", "42", None)
    assert value.commands == (
        ShellCommandRun("1", stdout="3"),
        ShellCommandRun("", stdout="", stderr=""),
    )


def _reply(output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1767225600,
        "status": "completed",
        "model": "gpt-5.4",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def test_an_unreadable_item_is_recorded_as_a_failed_call_and_the_run_goes_on() -> None:
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
    }
    body = _reply([{**CALL, "action": {"commands": "rm -rf /"}}, message])
    client = openai.OpenAI(
        api_key="sk-test",
        base_url="http://test.invalid/v1",
        # The SDK takes an httpx client too, though typed for httpx2's.
        http_client=httpx.Client(  # type: ignore[arg-type]
            transport=httpx.MockTransport(lambda _r: httpx.Response(200, json=body))
        ),
        max_retries=0,
    )
    sink = InMemorySink()
    response = OpenAIAdapter(client=client, model="gpt-5.4").evaluate(
        _prompt(ShellConfig()), sink=sink
    )
    (event,) = sink.of_type(ToolInvoked)
    assert event.success is False and event.kind == "shell"
    assert "shell_call item could not be read" in event.result.message
    assert response.text == "Done."


def test_parse_output_pairs_every_call_of_the_tool() -> None:
    second = {**CALL, "call_id": "call_2", "environment": {"type": "local"}}
    result = CODEC.parse_output([CALL, OUTPUT, second], shell_tool())
    assert isinstance(result, ShellResult)
    assert [c.call_id for c in result.calls] == [
        "call_sh1"
    ]  # the local one is not ours
    assert CODEC.parse_output([OUTPUT], shell_tool()) is None


# -- adapter round trip over HTTP (offline provider, real SDK) -----------------


def _prompt(config: ShellConfig, **kwargs: Any) -> Prompt:
    return Prompt(
        ns="tests",
        key="shell",
        sections=[
            MarkdownSection(title="Task", key="task", template="List the data files."),
            ShellSection(config),
        ],
        **kwargs,
    )


def test_adapter_round_trip_records_each_command() -> None:
    adapter = OpenAIAdapter(client=offline_client(), model="gpt-5.4")
    config = ShellConfig(memory_limit="4g", file_ids=("file-SalesCsv",))
    sink = InMemorySink()
    response = adapter.evaluate(_prompt(config), sink=sink)

    (event,) = sink.of_type(ToolInvoked)
    assert (event.native, event.kind, event.provider, event.success) == (
        True,
        "shell",
        "openai",
        True,
    )
    call = event.result.value
    assert isinstance(call, ShellCall)
    assert [(r.command, r.outcome) for r in call.commands] == [
        ("ls -1 /mnt/data", 0),
        ("cat notes.txt", 1),
        ("sleep 120", "timeout"),
    ]
    assert call.commands[0].stdout == "file-SalesCsv\n"
    assert "No such file" in call.commands[1].stderr
    assert call.environment == "container_reference"
    assert str(call.container_id).startswith("cntr_")
    assert event.params["commands"] == ["ls -1 /mnt/data", "cat notes.txt", "sleep 120"]
    output = response.hosted_outputs["shell"]
    assert isinstance(output, ShellResult) and output.calls == (call,)


def test_request_preview_and_tool_choice() -> None:
    adapter = OpenAIAdapter(client=offline_client(), model="gpt-5.4")
    config = ShellConfig(environment="container_reference", container_id="cntr_abc")
    prompt = _prompt(config, tool_choice=ToolChoice(mode="tool", tools=("shell",)))
    preview = adapter.request_preview(prompt.render())
    assert preview["tools"] == [
        {
            "type": "shell",
            "environment": {"type": "container_reference", "container_id": "cntr_abc"},
        }
    ]
    assert preview["tool_choice"] == {"type": "shell"}
    sink = InMemorySink()
    adapter.evaluate(prompt, sink=sink)
    (event,) = sink.of_type(ToolInvoked)
    assert event.result.value.container_id == "cntr_abc"


def test_a_model_without_shell_is_refused_before_any_request() -> None:
    adapter = OpenAIAdapter(
        client=offline_client(),
        model="gpt-5.4",
        model_capabilities={"gpt-5.4": frozenset({"web_search"})},
    )
    with pytest.raises(
        PromptEvaluationError, match="does not support hosted tool kind 'shell'"
    ):
        adapter.request_preview(_prompt(ShellConfig()).render())


def test_runtime_modules_stay_framework_free() -> None:
    import tooling.runtime.adapters.openai.codecs.shell as codec_module

    for module in (shell_module, codec_module):
        tree = ast.parse(Path(str(module.__file__)).read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in {"django", "rest_framework", "celery"}
