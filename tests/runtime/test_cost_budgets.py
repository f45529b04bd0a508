"""The money budget through ``OpenAIAdapter``: a run stops before the request
that would pass it (a scripted ``FakeProvider`` for exact usage, the offline
provider for a whole run), records nothing for that request, and says why;
every amount computed by hand in the test.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import openai
import pytest

from tooling.offline import ScriptedModel, offline_transport
from tooling.runtime.adapters.openai import OpenAIAdapter, RunRecord
from tooling.runtime.deadlines import Budget, BudgetTracker, CostBudgetExceededError
from tooling.runtime.errors import PromptEvaluationError
from tooling.runtime.events import (
    InMemorySink,
    PromptFailed,
    ProviderCallCompleted,
    ProviderCallFailed,
)
from tooling.runtime.hosted.web_search import web_search_tool
from tooling.runtime.pricing import ModelRate, PriceSheet

from .costing import (
    SHEET,
    D,
    calls,
    fail,
    prompt,
    run,
)
from .fakes import FakeProvider, function_call, message, response
from .fakes import web_search_call as search_item


@pytest.fixture(autouse=True)
def _reset() -> None:
    """Each test starts with no ``lookup`` calls."""
    calls.clear()


# -- the money budget --------------------------------------------------------------


def test_costs_budget_stops_before_the_request_that_would_pass_it() -> None:
    # turn 1: 1,000 input + 100 output = 0.01 + 0.002 = 0.012 spent; the next
    # request resends >= 1,000 input tokens, at least 1,000 x $1/M (cached)
    # = 0.001: 0.012 + 0.001 > 0.0125
    provider = FakeProvider(
        response(function_call(), usage=(1_000, 100)), response(message())
    )
    error, sink = fail(
        provider, prompt(), budget=Budget(max_cost=D("0.0125")), pricing=SHEET
    )
    assert error.phase == "budget"
    assert error.message == (
        "The run spent $0.0120 of its $0.0125 budget; stopped before the next "
        "request (which would cost at least $0.0010)."
    )
    assert len(provider.requests) == 1  # the second request was never sent
    assert len(sink.of_type(ProviderCallCompleted)) == 1
    assert sink.of_type(ProviderCallFailed) == []
    assert sink.of_type(PromptFailed)[0].phase == "budget"


def test_costs_budget_spent_stops_the_run() -> None:
    provider = FakeProvider(
        response(function_call(), usage=(1_000, 100)), response(message())
    )
    error, _ = fail(
        provider, prompt(), budget=Budget(max_cost=D("0.01")), pricing=SHEET
    )
    assert error.message == (
        "The run spent $0.0120 of its $0.0100 budget; stopped before the next request."
    )
    assert len(provider.requests) == 1


def test_costs_budget_counts_native_fees() -> None:
    # tokens 0; one web search $0.01 = the whole budget
    provider = FakeProvider(
        response(search_item(), function_call(), usage=(0, 0)), response(message())
    )
    error, _ = fail(
        provider,
        prompt((web_search_tool(),)),
        budget=Budget(max_cost=D("0.01")),
        pricing=SHEET,
    )
    assert error.phase == "budget"
    assert "spent $0.0100 of its $0.0100 budget" in error.message


def test_costs_budget_within_limit_completes() -> None:
    provider = FakeProvider(
        response(function_call(), usage=(1_000, 100)),
        response(message(), usage=(1_000, 100)),
    )
    # 0.012 + 0.001 <= 0.013: the second request is allowed; the run ends
    # with its answer even though it then spent 0.024
    result, sink = run(
        provider, prompt(), budget=Budget(max_cost=D("0.013")), pricing=SHEET
    )
    assert result.text == "Done."
    assert sum(e.cost for e in sink.of_type(ProviderCallCompleted)) == D("0.024")


def test_costs_budget_zero_allows_no_request() -> None:
    provider = FakeProvider(response(message()))
    error, _ = fail(provider, prompt(), budget=Budget(max_cost=D(0)), pricing=SHEET)
    assert error.phase == "budget"
    assert provider.requests == []


def test_costs_resumed_run_counts_replayed_responses() -> None:
    first = response(function_call(), usage=(1_000, 100))
    provider = FakeProvider(response(message()))
    record = RunRecord(responses=(first,), tool_outputs={1: "Looked up."})
    error, _ = fail(
        provider,
        prompt(),
        budget=Budget(max_cost=D("0.0125")),
        pricing=SHEET,
        run_id="run-1",
        resume=record,
    )
    assert error.phase == "budget"
    assert "spent $0.0120" in error.message
    assert provider.requests == []  # nothing new was requested
    assert calls == []  # the recorded call was not run again


def test_costs_budget_on_an_unpriced_model_refuses_the_first_request() -> None:
    provider = FakeProvider(response(message()))
    other = PriceSheet.of([ModelRate("other", D(1), D(1), D(1), D(1))])
    for sheet in (other, None):  # no rate for gpt-test, or no prices at all
        error, _ = fail(provider, prompt(), budget=Budget(max_cost=D(1)), pricing=sheet)
        assert error.phase == "budget"
        assert error.message == (
            "The run has a budget of $1.0000 but its model 'gpt-test' has no price "
            "in effect, so what it spends cannot be counted; add the model's price "
            "to the price list."
        )
    assert provider.requests == []


def test_costs_absurd_usage_stops_the_run_with_its_message() -> None:
    # a provider reporting 10**30 input tokens: 10**30 x $10/M = $1e25 spent,
    # more digits than the default decimal context holds at four places
    provider = FakeProvider(
        response(function_call(), usage=(10**30, 0)), response(message())
    )
    error, _ = fail(provider, prompt(), budget=Budget(max_cost=D(1)), pricing=SHEET)
    assert error.phase == "budget"
    assert error.message == (
        f"The run spent ${10**25}.0000 of its $1.0000 budget; stopped before the "
        "next request."
    )
    assert len(provider.requests) == 1


def test_costs_budget_message_reads_huge_amounts() -> None:
    error = CostBudgetExceededError(D("0.5"), D(1), D("1.25e30"))
    assert str(error).endswith(f"(which would cost at least ${125 * 10**28}.0000).")


@pytest.mark.parametrize(
    "kwargs", [{"max_cost": D(-1)}, {"max_cost": D("NaN")}, {"max_cost": 0.5}]
)
def test_costs_budget_refuses_bad_limits(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="max_cost"):
        Budget(**kwargs)


def test_costs_budget_with_only_a_cost_limit() -> None:
    tracker = BudgetTracker(Budget(max_cost=D("0.5")))
    tracker.record_cost(D("0.25"))
    tracker.check_cost(D("0.25"))  # exactly the budget: allowed
    with pytest.raises(CostBudgetExceededError) as info:
        tracker.check_cost(D("0.2500000001"))
    # tiny amounts get the decimals that tell them apart
    assert "(which would cost at least $0.2500000001)" in str(info.value)


# -- the offline provider, a whole run ---------------------------------------------


class Recording:
    def __init__(self) -> None:
        self.model = ScriptedModel()
        self.requests: list[dict[str, Any]] = []

    def respond(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(copy.deepcopy(request))
        return self.model.respond(request)


def offline_adapter(model: Recording) -> OpenAIAdapter:
    client = openai.OpenAI(
        api_key="sk-offline",
        base_url="http://offline.invalid/v1",
        http_client=httpx.Client(transport=offline_transport(model)),  # type: ignore[arg-type]
        max_retries=0,
    )
    return OpenAIAdapter(client=client, model="gpt-5.4")


def test_costs_offline_run_stops_before_overspending() -> None:
    # $1,000/M input (and cached), $0 output: a request costs its input
    # tokens in thousandths of a dollar; the budget covers the first
    # request and half of what the second would cost at least
    rate = ModelRate("gpt-5.4", D(1000), D(1000), D(1000), D(0))
    sheet = PriceSheet.of([rate])
    model = Recording()
    sink = InMemorySink()
    offline_adapter(model).evaluate(prompt(), sink=sink, pricing=sheet)
    assert len(model.requests) == 2  # unbudgeted: a call, then an answer
    first = sink.of_type(ProviderCallCompleted)[0]
    tokens = first.usage.input_tokens
    assert first.cost == D(tokens) / 1000  # 1,000/M = 1/1,000 per token
    floor = D(tokens) / 1000
    limit = first.cost + floor / 2

    model = Recording()
    sink = InMemorySink()
    calls.clear()
    with pytest.raises(PromptEvaluationError) as info:
        offline_adapter(model).evaluate(
            prompt(), sink=sink, pricing=sheet, budget=Budget(max_cost=limit)
        )
    assert info.value.phase == "budget"
    assert info.value.message.startswith(f"The run spent ${first.cost:.4f} of its ")
    assert f"(which would cost at least ${floor:.4f})" in info.value.message
    assert len(model.requests) == 1  # stopped before the second request
    assert len(sink.of_type(ProviderCallCompleted)) == 1
    assert sink.of_type(ProviderCallFailed) == []
