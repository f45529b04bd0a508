"""``PriceSheet``: every price kind against figures computed by hand here.

Rates are USD per million tokens; each expected amount is written out as the
arithmetic a person would do, so a wrong rule shows as a wrong number.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from tooling.runtime.deadlines import TokenUsage
from tooling.runtime.hosted.code_interpreter import CodeInterpreterConfig
from tooling.runtime.hosted.image_generation import ImageGenerationConfig
from tooling.runtime.hosted.shell import ShellConfig
from tooling.runtime.pricing import HostedFee, ModelRate, PriceSheet, image_variant

D = Decimal

GPT5 = ModelRate(
    model="gpt-5",
    input=D("1.25"),
    cached_input=D("0.125"),
    cache_write=D("1.25"),
    output=D("10"),
)
GPT5_MINI = ModelRate(
    model="gpt-5-mini",
    input=D("0.25"),
    cached_input=D("0.025"),
    cache_write=D("0.25"),
    output=D("2"),
)
THINKER = ModelRate(
    model="thinker",
    input=D("2"),
    cached_input=D("0.5"),
    cache_write=D("3"),
    output=D("8"),
    reasoning=D("4"),
)

FEES = (
    HostedFee("web_search", "call", D("0.01")),
    HostedFee("file_search", "call", D("0.0025")),
    HostedFee("code_interpreter", "container", D("0.03"), "1g"),
    HostedFee("code_interpreter", "container", D("0.12"), "4g"),
    HostedFee("shell", "container", D("0.03"), "1g"),
    HostedFee("shell", "container", D("0.48"), "16g"),
    HostedFee("image_generation", "image", D("0.011"), "low:1024x1024"),
    HostedFee("image_generation", "image", D("0.042"), "medium:1024x1024"),
    HostedFee("image_generation", "image", D("0.063"), "medium:1024x1536"),
    HostedFee("image_generation", "image", D("0.25"), "high:1536x1024"),
)

SHEET = PriceSheet.of([GPT5, GPT5_MINI, THINKER], FEES)


# -- tokens ----------------------------------------------------------------------


def test_pricing_input_and_output_at_their_rates() -> None:
    # 1,000,000 input at $1.25/M + 200,000 output at $10/M = 1.25 + 2.00
    usage = TokenUsage(input_tokens=1_000_000, output_tokens=200_000)
    assert SHEET.cost_of_usage("gpt-5", usage) == D("3.25")


def test_pricing_cached_input_at_the_cached_rate() -> None:
    # 10,000 input of which 8,000 cached: 2,000 x 1.25/M + 8,000 x 0.125/M
    # = 0.0025 + 0.001 = 0.0035; 500 output x 10/M = 0.005 -> 0.0085
    usage = TokenUsage(input_tokens=10_000, output_tokens=500, cached_tokens=8_000)
    assert SHEET.cost_of_usage("gpt-5", usage) == D("0.0085")


def test_pricing_cache_writes_at_the_cache_write_rate() -> None:
    # thinker: 1,000 input = 600 plain x 2/M + 100 cached x 0.5/M
    #   + 300 written x 3/M = 0.0012 + 0.00005 + 0.0009 = 0.00215
    usage = TokenUsage(
        input_tokens=1_000, cached_tokens=100, cache_write_tokens=300, output_tokens=0
    )
    assert SHEET.cost_of_usage("thinker", usage) == D("0.00215")


def test_pricing_reasoning_tokens_billed_as_output_without_a_reasoning_rate() -> None:
    # gpt-5 has no reasoning rate: all 1,000 output x 10/M = 0.01
    usage = TokenUsage(output_tokens=1_000, reasoning_tokens=700)
    assert SHEET.cost_of_usage("gpt-5", usage) == D("0.01")


def test_pricing_reasoning_tokens_at_their_own_rate() -> None:
    # thinker: 300 visible output x 8/M + 700 reasoning x 4/M
    # = 0.0024 + 0.0028 = 0.0052
    usage = TokenUsage(output_tokens=1_000, reasoning_tokens=700)
    assert SHEET.cost_of_usage("thinker", usage) == D("0.0052")


def test_pricing_counts_are_clamped_never_billed_twice() -> None:
    # a provider reporting more cached than input tokens: all 100 cached
    # (100 x 0.125/M), none plain; more reasoning than output: all reasoning
    usage = TokenUsage(input_tokens=100, cached_tokens=500)
    assert SHEET.cost_of_usage("gpt-5", usage) == D("0.0000125")
    weird = TokenUsage(output_tokens=10, reasoning_tokens=50)
    assert SHEET.cost_of_usage("thinker", weird) == D("0.00004")  # 10 x 4/M


def test_pricing_snapshot_priced_by_the_longest_prefix() -> None:
    usage = TokenUsage(input_tokens=1_000_000)
    assert SHEET.cost_of_usage("gpt-5-2025-08-07", usage) == D("1.25")
    assert SHEET.cost_of_usage("gpt-5-mini-2025-08-07", usage) == D("0.25")
    assert SHEET.cost_of_usage("gpt-5-mini", usage) == D("0.25")


def test_pricing_prefix_needs_a_dash() -> None:
    # "gpt-50" is not a snapshot of "gpt-5"
    assert SHEET.rate_for("gpt-50") is None
    assert SHEET.rate_for("gpt-5.4") is None


def test_pricing_unpriced_model_is_none() -> None:
    assert SHEET.cost_of_usage("mystery", TokenUsage(input_tokens=5)) is None


def test_pricing_amounts_round_to_ten_places() -> None:
    # 1 token x $1.25/M = 0.00000125 exactly; 1 token x 0.123456789/M
    # = 0.000000123456789 -> 0.0000001235 (ten places, half-even)
    rate = ModelRate("r", D("0.123456789"), D(0), D(0), D(0))
    sheet = PriceSheet.of([GPT5, rate])
    assert sheet.cost_of_usage("gpt-5", TokenUsage(input_tokens=1)) == D("0.00000125")
    assert sheet.cost_of_usage("r", TokenUsage(input_tokens=1)) == D("0.0000001235")


def test_pricing_usage_reads_cache_writes_from_the_payload() -> None:
    usage = TokenUsage.from_payload(
        {
            "input_tokens": 1200,
            "input_tokens_details": {"cached_tokens": 200, "cache_write_tokens": 300},
            "output_tokens": 150,
            "output_tokens_details": {"reasoning_tokens": 64},
        }
    )
    assert usage.cache_write_tokens == 300
    assert (usage + usage).cache_write_tokens == 600


@pytest.mark.parametrize(
    "kwargs",
    [
        {"input": D(-1)},
        {"output": D("NaN")},
        {"cached_input": D("Infinity")},
        {"reasoning": D("-0.5")},
        {"input": 1.25},
    ],
)
def test_pricing_rate_refuses_bad_amounts(kwargs: dict[str, object]) -> None:
    values: dict[str, object] = {
        "model": "m",
        "input": D(1),
        "cached_input": D(1),
        "cache_write": D(1),
        "output": D(1),
        **kwargs,
    }
    with pytest.raises((ValueError, TypeError)):
        ModelRate(**values)  # type: ignore[arg-type]


def test_pricing_fee_refuses_an_unknown_unit() -> None:
    with pytest.raises(ValueError, match="unit"):
        HostedFee("web_search", "hour", D(1))  # type: ignore[arg-type]


# -- hosted fees -----------------------------------------------------------------


def test_pricing_web_search_per_call() -> None:
    fee = SHEET.fee_of_native("web_search", {"action": "search", "query": "tides"})
    assert fee.amount == D("0.01")
    assert fee.container is None


def test_pricing_web_search_page_actions_are_not_searches() -> None:
    for action in ("open_page", "find_in_page"):
        assert SHEET.fee_of_native("web_search", {"action": action}).amount == 0


def test_pricing_file_search_per_call() -> None:
    fee = SHEET.fee_of_native("file_search", {"queries": ["a", "b"]})
    assert fee.amount == D("0.0025")


def test_pricing_container_charged_once_by_memory_limit() -> None:
    config = CodeInterpreterConfig(memory_limit="4g")
    first = SHEET.fee_of_native(
        "code_interpreter", {"container_id": "cntr_1"}, config, set()
    )
    assert (first.amount, first.container) == (D("0.12"), "code_interpreter:cntr_1")
    seen = {"code_interpreter:cntr_1"}
    again = SHEET.fee_of_native(
        "code_interpreter", {"container_id": "cntr_1"}, config, seen
    )
    assert (again.amount, again.container) == (D(0), None)
    other = SHEET.fee_of_native(
        "code_interpreter", {"container_id": "cntr_2"}, config, seen
    )
    assert other.amount == D("0.12")


def test_pricing_container_default_memory_is_1g() -> None:
    fee = SHEET.fee_of_native(
        "code_interpreter", {"container_id": "c"}, CodeInterpreterConfig()
    )
    assert fee.amount == D("0.03")


def test_pricing_referenced_container_costs_nothing() -> None:
    config = CodeInterpreterConfig(container_id="cntr_existing")
    fee = SHEET.fee_of_native("code_interpreter", {"container_id": "cntr_x"}, config)
    assert (fee.amount, fee.container) == (D(0), None)


def test_pricing_hosted_shell_per_container() -> None:
    # The API reports a hosted shell's auto-created container as a
    # "container_reference" on the call (its only container type there): the
    # tool's config (container_auto) says the run made it and pays for it.
    config = ShellConfig(memory_limit="16g")
    params = {"environment": "container_reference", "container_id": "cntr_s"}
    fee = SHEET.fee_of_native("shell", params, config)
    assert (fee.amount, fee.container) == (D("0.48"), "shell:cntr_s")
    again = SHEET.fee_of_native("shell", params, config, {"shell:cntr_s"})
    assert (again.amount, again.container) == (D(0), None)
    # a default shell: container_auto, 1g
    assert SHEET.fee_of_native("shell", params, ShellConfig()).amount == D("0.03")


def test_pricing_shell_in_an_existing_container_or_local_costs_nothing() -> None:
    existing = ShellConfig(environment="container_reference", container_id="cntr_s")
    params = {"environment": "container_reference", "container_id": "cntr_s"}
    assert SHEET.fee_of_native("shell", params, existing).amount == 0
    local = ShellConfig(environment="local", executor="sandbox")
    assert SHEET.fee_of_native("shell", {"environment": "local"}, local).amount == 0
    # without a config only the call says where it ran: local is free
    assert SHEET.fee_of_native("shell", {"environment": "local"}).amount == 0
    assert SHEET.fee_of_native("shell", params).amount == D("0.03")


def test_pricing_container_without_price_for_its_memory_is_unpriced() -> None:
    config = CodeInterpreterConfig(memory_limit="64g")
    fee = SHEET.fee_of_native("code_interpreter", {"container_id": "c"}, config)
    assert fee.amount is None
    assert fee.container == "code_interpreter:c"  # seen: not counted twice


def test_pricing_image_by_quality_and_size() -> None:
    fee = SHEET.fee_of_native(
        "image_generation", {"quality": "high", "size": "1536x1024"}
    )
    assert fee.amount == D("0.25")
    low = SHEET.fee_of_native("image_generation", {"quality": "low"})
    assert low.amount == D("0.011")  # size from nowhere: 1024x1024


def test_pricing_image_falls_back_to_the_config() -> None:
    config = ImageGenerationConfig(quality="medium", size="1024x1536")
    assert SHEET.fee_of_native("image_generation", {}, config).amount == D("0.063")
    # the call's own size wins over the config's
    assert SHEET.fee_of_native(
        "image_generation", {"size": "1024x1024"}, config
    ).amount == D("0.042")


def test_pricing_image_auto_is_medium_square() -> None:
    assert image_variant({"quality": "auto", "size": "auto"}) == "medium:1024x1024"
    fee = SHEET.fee_of_native("image_generation", {"quality": "auto"})
    assert fee.amount == D("0.042")


def test_pricing_image_size_without_a_price_is_unpriced() -> None:
    fee = SHEET.fee_of_native(
        "image_generation", {"quality": "high", "size": "2048x2048"}
    )
    assert fee.amount is None


def test_pricing_mcp_costs_only_tokens() -> None:
    assert SHEET.fee_of_native("mcp", {"name": "deploy"}).amount == 0


def test_pricing_kind_without_a_price_is_unpriced() -> None:
    assert PriceSheet().fee_of_native("web_search", {}).amount is None
    assert SHEET.fee_of_native("brand_new_kind", {}).amount is None


def test_pricing_negative_counts_never_make_a_negative_cost() -> None:
    # TokenUsage built by hand (from_payload already drops negatives): a
    # negative count is billed as 0, never subtracted
    usage = TokenUsage(
        input_tokens=1_000,
        output_tokens=-500,
        cached_tokens=-200,
        reasoning_tokens=-9,
        cache_write_tokens=-7,
    )
    assert SHEET.cost_of_usage("gpt-5", usage) == D("0.00125")  # 1,000 x 1.25/M
    assert SHEET.cost_of_usage("thinker", usage) == D("0.002")  # 1,000 x 2/M
    assert SHEET.cost_of_usage("gpt-5", TokenUsage(input_tokens=-5)) == 0


@pytest.mark.parametrize(
    "raw",
    [
        {"input_tokens": -1000, "output_tokens": -1},
        {"input_tokens": "1000", "output_tokens": 1.5e9},
        {"input_tokens": True, "output_tokens": None},
        {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 10**30}},
        {"input_tokens": 10, "input_tokens_details": "cached"},
        {"output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 99}},
        "not a mapping",
        [1, 2],
    ],
)
def test_pricing_hostile_usage_is_never_an_error_nor_negative(raw: object) -> None:
    usage = TokenUsage.from_payload(raw)
    for name in ("gpt-5", "thinker"):
        cost = SHEET.cost_of_usage(name, usage)
        assert isinstance(cost, Decimal) and cost >= 0


def test_pricing_hostile_usage_figures() -> None:
    # cached beyond input: all 10 input cached (10 x 0.125/M); reasoning
    # beyond output on thinker: all 10 output reasoning (10 x 4/M)
    cached = TokenUsage.from_payload(
        {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 10**30}}
    )
    assert SHEET.cost_of_usage("gpt-5", cached) == D("0.00000125")
    thinking = TokenUsage.from_payload(
        {"output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 99}}
    )
    assert SHEET.cost_of_usage("thinker", thinking) == D("0.00004")


def test_pricing_least_input_cost_uses_the_cheapest_input_rate() -> None:
    # thinker: input 2, cached 0.5, cache write 3 -> 1,000 x 0.5/M
    assert SHEET.least_input_cost("thinker", 1_000) == D("0.0005")
    assert SHEET.least_input_cost("mystery", 1_000) == 0
    assert SHEET.least_input_cost("gpt-5", 0) == 0


def test_pricing_absurd_usage_is_priced_not_an_error() -> None:
    # 10**40 tokens x $1.25/M = 1.25e34: more digits than the default decimal
    # context holds at ten places; the audit caps what it stores
    usage = TokenUsage(input_tokens=10**40)
    assert SHEET.cost_of_usage("gpt-5", usage) == D("1.25e34")
