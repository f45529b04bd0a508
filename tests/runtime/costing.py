"""What the cost tests share: a price sheet for ``gpt-test``, a prompt with
one local tool (``lookup``, which logs its calls) and hosted tools, and runs
through ``OpenAIAdapter`` over the real SDK."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

import pytest

from tooling.runtime.adapters.openai import OpenAIAdapter
from tooling.runtime.context import ToolContext
from tooling.runtime.errors import PromptEvaluationError
from tooling.runtime.events import (
    InMemorySink,
)
from tooling.runtime.hosted.base import HostedTool
from tooling.runtime.pricing import HostedFee, ModelRate, PriceSheet
from tooling.runtime.prompt import Prompt
from tooling.runtime.results import ToolResult
from tooling.runtime.sections import MarkdownSection
from tooling.runtime.tools import Tool

from .fakes import MODEL, FakeProvider

D = Decimal

# gpt-test: $10/M input, $1/M cached, $10/M cache write, $20/M output
RATE = ModelRate(MODEL, D(10), D(1), D(10), D(20))
SHEET = PriceSheet.of(
    [RATE],
    [
        HostedFee("web_search", "call", D("0.01")),
        HostedFee("code_interpreter", "container", D("0.03"), "1g"),
        HostedFee("shell", "container", D("0.12"), "4g"),
        HostedFee("image_generation", "image", D("0.063"), "medium:1024x1536"),
    ],
)

calls: list[str] = []


@dataclasses.dataclass(frozen=True)
class Query:
    query: str


@dataclasses.dataclass(frozen=True)
class Found:
    answer: str


def lookup(params: Query, *, context: ToolContext) -> ToolResult[Found]:
    calls.append(params.query)
    return ToolResult.ok(Found("42"), "Looked up.")


def prompt(hosted: tuple[HostedTool[Any], ...] = (), tools: bool = True) -> Prompt:
    tool: Tool[Query, Found] = Tool(
        name="lookup", description="Look something up.", handler=lookup
    )
    return Prompt(
        ns="tests",
        key="costs",
        name="costs-prompt",
        sections=[
            MarkdownSection(
                key="task",
                title="Task",
                template="Answer the question.",
                tools=(tool,) if tools else (),
                hosted_tools=hosted,
            )
        ],
    )


def run(
    provider: FakeProvider, the_prompt: Prompt, **kwargs: Any
) -> tuple[Any, InMemorySink]:
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)
    result = adapter.evaluate(the_prompt, sink=sink, **kwargs)
    return result, sink


def fail(
    provider: FakeProvider, the_prompt: Prompt, **kwargs: Any
) -> tuple[PromptEvaluationError, InMemorySink]:
    sink = InMemorySink()
    adapter = OpenAIAdapter(client=provider.client, model=MODEL)
    with pytest.raises(PromptEvaluationError) as info:
        adapter.evaluate(the_prompt, sink=sink, **kwargs)
    return info.value, sink
