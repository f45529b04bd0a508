"""What the read-only tool and start tests share: a prompt offering
``lookup`` (read-only) and ``act`` (with an effect), the handler runs seen,
and an offline provider whose turns call them in a given order. The fixture
built on them (``lookup_and_act``) is in conftest.py."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import httpx
import openai

from sessions_app.models import ProviderCall, ToolInvocation
from tooling.handlers import registry
from tooling.models import (
    PromptSection,
    PromptTemplate,
    SectionDefinition,
    SectionTool,
    ToolDefinition,
)
from tooling.offline import ScriptedModel, offline_transport, parallel_calls_script
from tooling.runtime import Tool, ToolContext, ToolResult

KEYS = {"lookup": "tests.lookups.lookup", "act": "tests.lookups.act"}


@dataclasses.dataclass(frozen=True)
class Params:
    text: str


@dataclasses.dataclass(frozen=True)
class Out:
    text: str


class Crash(BaseException):
    """The worker process dies here (as SIGKILL would: nothing else runs)."""


# Each handler run: (tool, its text, provider calls and tool calls committed then).
runs: list[tuple[str, str, int, int]] = []
# The process dies once in the call of each of these texts, after its handler.
crash_in: set[str] = set()


def _handler(name: str) -> Any:
    def handler(params: Params, *, context: ToolContext) -> ToolResult[Out]:
        runs.append(
            (
                name,
                params.text,
                ProviderCall.objects.count(),
                ToolInvocation.objects.count(),
            )
        )
        if params.text in crash_in:
            crash_in.discard(params.text)
            raise Crash
        return ToolResult.ok(Out(params.text))

    return handler


def add_prompt() -> str:
    """Register both handlers and a prompt offering both; its ref."""
    runs.clear()
    crash_in.clear()
    for name, key in KEYS.items():
        registry.register(
            key,
            Tool(
                name=name,
                description=f"{name}.",
                handler=_handler(name),
                read_only=name == "lookup",
            ),
        )
    section = SectionDefinition.objects.create(
        key="lookups", title="Lookups", template="Look up, then act."
    )
    for position, (name, key) in enumerate(KEYS.items()):
        tool = ToolDefinition.objects.create(name=name, handler_key=key)
        SectionTool.objects.create(section=section, tool=tool, position=position)
    template = PromptTemplate.objects.create(
        namespace="tests", key="lookups", model="gpt-5.4", max_turns=20
    )
    PromptSection.objects.create(prompt=template, section=section, position=0)
    return template.ref


def remove_handlers() -> None:
    for key in KEYS.values():
        registry.unregister(key)


def client(transport: httpx.BaseTransport) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-test",
        base_url="http://offline-provider.invalid/v1",
        # The SDK takes an httpx client too, though typed for httpx2's.
        http_client=httpx.Client(transport=transport),  # type: ignore[arg-type]
        max_retries=0,
    )


def calling(turns: int, names: tuple[str, ...]) -> httpx.MockTransport:
    """A provider whose ``turns`` turns each call ``names`` in parallel (call
    j of a turn is ``names[j]``), then answers."""
    inner = parallel_calls_script(turns, len(names), "lookup")

    def script(request: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(inner(request))
        for item in body.get("output", []):
            if item.get("type") == "function_call":
                index = int(item["call_id"].rsplit("_", 1)[1]) - 1
                item["name"] = names[index]
        return body

    return offline_transport(ScriptedModel(script=script))
