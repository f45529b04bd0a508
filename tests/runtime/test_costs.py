"""Costs through ``OpenAIAdapter``: each provider call priced from its usage
and each native call's fee (per call, per container, per image), the real
SDK over HTTP against a scripted ``FakeProvider``, every amount computed by
hand in the test (the money budget: test_cost_budgets.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from tooling.runtime.adapters.openai import RunRecord
from tooling.runtime.events import (
    ProviderCallCompleted,
    ToolInvoked,
)
from tooling.runtime.hosted.code_interpreter import (
    CodeInterpreterConfig,
    code_interpreter_tool,
)
from tooling.runtime.hosted.image_generation import (
    ImageGenerationConfig,
    image_generation_tool,
)
from tooling.runtime.hosted.shell import ShellConfig, shell_tool
from tooling.runtime.hosted.web_search import web_search_tool
from tooling.runtime.pricing import ModelRate, PriceSheet

from .costing import (
    SHEET,
    D,
    calls,
    prompt,
    run,
)
from .fakes import FakeProvider, function_call, message, response
from .fakes import web_search_call as search_item


@pytest.fixture(autouse=True)
def _reset() -> None:
    """Each test starts with no ``lookup`` calls."""
    calls.clear()


# -- provider calls ----------------------------------------------------------------


def test_costs_provider_calls_priced_from_usage() -> None:
    provider = FakeProvider(
        # 1,000 input (400 cached) + 100 output:
        # 600 x 10/M + 400 x 1/M + 100 x 20/M = 0.006 + 0.0004 + 0.002 = 0.0084
        response(function_call(), usage=(1_000, 100), cached=400),
        # 2,000 input + 50 output: 0.02 + 0.001 = 0.021
        response(message(), usage=(2_000, 50)),
    )
    _, sink = run(provider, prompt(), pricing=SHEET)
    costs = [event.cost for event in sink.of_type(ProviderCallCompleted)]
    assert costs == [D("0.0084"), D("0.021")]
    local = sink.of_type(ToolInvoked)[0]
    assert local.cost is None  # a local call has no fee


def test_costs_without_a_price_sheet_nothing_is_priced() -> None:
    provider = FakeProvider(response(search_item(), message()))
    _, sink = run(provider, prompt((web_search_tool(),), tools=False))
    assert sink.of_type(ProviderCallCompleted)[0].cost is None
    assert sink.of_type(ToolInvoked)[0].cost is None


def test_costs_unpriced_model_has_no_cost() -> None:
    provider = FakeProvider(response(message()))
    sheet = PriceSheet.of([ModelRate("other", D(1), D(1), D(1), D(1))])
    _, sink = run(provider, prompt(), pricing=sheet)
    assert sink.of_type(ProviderCallCompleted)[0].cost is None


# -- native calls ------------------------------------------------------------------


def code_item(id: str, container: str) -> dict[str, Any]:
    return {
        "type": "code_interpreter_call",
        "id": id,
        "status": "completed",
        "container_id": container,
        "code": "print(1)",
        "outputs": [],
    }


def test_costs_native_fees_per_call_container_and_image() -> None:
    hosted = (
        web_search_tool(),
        code_interpreter_tool(CodeInterpreterConfig()),
        image_generation_tool(ImageGenerationConfig(quality="medium")),
    )
    image = {
        "type": "image_generation_call",
        "id": "ig_1",
        "status": "completed",
        "result": "iVBORw0KGgo=",
        "size": "1024x1536",
    }
    provider = FakeProvider(
        response(
            search_item("ws_1"),
            code_item("ci_1", "cntr_a"),
            code_item("ci_2", "cntr_a"),  # same container: charged once
            function_call(),
            usage=(0, 0),
        ),
        response(
            search_item("ws_2"),
            code_item("ci_3", "cntr_b"),  # a new container
            image,  # medium (config) at 1024x1536 (call)
            message(),
            usage=(0, 0),
            id="resp_2",
        ),
    )
    _, sink = run(provider, prompt(hosted), pricing=SHEET)
    fees = {
        event.call_id: event.cost for event in sink.of_type(ToolInvoked) if event.native
    }
    assert fees == {
        "ws_1": D("0.01"),
        "ci_1": D("0.03"),
        "ci_2": D(0),
        "ws_2": D("0.01"),
        "ci_3": D("0.03"),
        "ig_1": D("0.063"),
    }


def shell_items(id: str, container: str) -> list[dict[str, Any]]:
    """A hosted shell call as the API reports it: its auto-created container
    is named a ``container_reference`` on the call."""
    call_id = f"call_{id}"
    return [
        {
            "id": id,
            "type": "shell_call",
            "call_id": call_id,
            "status": "completed",
            "action": {"commands": ["ls"], "timeout_ms": 1000},
            "environment": {"type": "container_reference", "container_id": container},
        },
        {
            "id": f"o_{id}",
            "type": "shell_call_output",
            "call_id": call_id,
            "status": "completed",
            "output": [
                {
                    "stdout": "",
                    "stderr": "",
                    "outcome": {"type": "exit", "exit_code": 0},
                }
            ],
        },
    ]


def test_costs_hosted_shell_containers_are_charged_once_each() -> None:
    # container_auto with 4g: $0.12 per container the run makes
    hosted = (shell_tool(ShellConfig(memory_limit="4g")),)
    provider = FakeProvider(
        response(
            *shell_items("sh_1", "cntr_a"),
            *shell_items("sh_2", "cntr_a"),  # the same container: charged once
            function_call(),
            usage=(0, 0),
        ),
        response(*shell_items("sh_3", "cntr_b"), message(), usage=(0, 0), id="r2"),
    )
    _, sink = run(provider, prompt(hosted), pricing=SHEET)
    fees = [event.cost for event in sink.of_type(ToolInvoked) if event.native]
    assert fees == [D("0.12"), D(0), D("0.12")]


def test_costs_resumed_run_charges_a_replayed_container_once() -> None:
    # the interrupted run's first response opened cntr_a (charged then); the
    # resumed run replays it, and the next response's call in cntr_a is free
    hosted = (code_interpreter_tool(CodeInterpreterConfig()),)
    first = response(code_item("ci_1", "cntr_a"), function_call(), usage=(0, 0))
    provider = FakeProvider(
        response(code_item("ci_2", "cntr_a"), message(), usage=(0, 0), id="r2")
    )
    record = RunRecord(responses=(first,), tool_outputs={2: "Looked up."})
    _, sink = run(
        provider, prompt(hosted), pricing=SHEET, run_id="run-1", resume=record
    )
    fees = {
        event.call_id: event.cost for event in sink.of_type(ToolInvoked) if event.native
    }
    assert fees == {"ci_1": D("0.03"), "ci_2": D(0)}
    assert calls == []  # the recorded function call was not run again
    assert len(provider.requests) == 1
