"""Costs end to end: a demo run's provider calls, native calls and session
priced from the seeded price list (each amount computed here by hand from the
recorded token counts), a template budget stopping a run, the price sheet's
queries, and the totals a resumed or ended run sums from its rows."""

from __future__ import annotations

import importlib
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from unittest import mock

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app import services
from sessions_app.models import AgentSession, ProviderCall, ToolInvocation
from sessions_app.runs.recording import MAX_COST
from sessions_app.runs.totals import totals as session_totals
from tests.sessions_app.clients import CountingProvider
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ProviderCallFactory,
    ToolInvocationFactory,
    UserFactory,
)
from tests.tooling.factories import (
    HostedToolDefinitionFactory,
    PromptTemplateFactory,
    SectionDefinitionFactory,
    ToolDefinitionFactory,
    add_sections,
    attach,
)
from tooling import assembly
from tooling.assembly import pricing as sheets
from tooling.demo import seed_demo_catalog
from tooling.models import (
    CatalogGeneration,
    HostedToolDefinition,
    HostedToolPrice,
    ModelPrice,
    PolicyDefinition,
    PromptTemplate,
    SectionHostedTool,
)
from tooling.runtime.deadlines import TokenUsage

pytestmark = pytest.mark.django_db

D = Decimal
MILLION = D(1_000_000)
# The seeded rates of gpt-5.4 (priced like gpt-5): $1.25 input, $0.125
# cached input, $10 output per million tokens.
INPUT, CACHED, OUTPUT = D("1.25"), D("0.125"), D("10")


@pytest.fixture(autouse=True)
def _seeded_prices():
    """The seeded price list (a flushed database has lost it), no cache."""
    seed = importlib.import_module("tooling.migrations.0011_seed_prices").seed
    seed(apps, None)
    sheets.clear_cache()
    yield
    sheets.clear_cache()


def by_hand(call: ProviderCall) -> Decimal:
    plain = call.input_tokens - call.cached_tokens
    return (
        plain * INPUT + call.cached_tokens * CACHED + call.output_tokens * OUTPUT
    ) / MILLION


def _hosted(section, name: str, kind: str, config: dict) -> None:
    hosted = HostedToolDefinitionFactory.create(name=name, kind=kind, config=config)
    SectionHostedTool.objects.create(section=section, hosted_tool=hosted)


def demo_prompt(**template):
    """A function tool and three hosted tools, each run once by the offline
    model on its first turn: a web search ($0.01), a 4g container ($0.12)
    and a high quality 1536x1024 image ($0.25)."""
    section = SectionDefinitionFactory.create(template="Research the tides.")
    attach(section, ToolDefinitionFactory.create(name="count_words"))
    _hosted(section, "search", HostedToolDefinition.Kind.WEB_SEARCH, {})
    _hosted(
        section,
        "python",
        HostedToolDefinition.Kind.CODE_INTERPRETER,
        {"memory_limit": "4g"},
    )
    _hosted(
        section,
        "draw",
        HostedToolDefinition.Kind.IMAGE_GENERATION,
        {"quality": "high", "size": "1536x1024"},
    )
    prompt = PromptTemplateFactory.create(key="costs", max_turns=8, **template)
    add_sections(prompt, section)
    return prompt


def run(prompt, **kwargs) -> AgentSession:
    provider = CountingProvider()
    return services.start_session(
        prompt_ref=prompt.ref, params={}, client=provider.client, **kwargs
    )


# -- a demo run ----------------------------------------------------------------


def test_costs_of_a_demo_run_from_the_seeded_prices():
    session = run(demo_prompt())
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    calls = list(session.provider_calls.order_by("turn"))
    assert len(calls) >= 2
    for call in calls:
        assert call.cost == by_hand(call), call.turn
    fees = {row.kind: row.cost for row in session.tool_invocations.filter(native=True)}
    assert fees == {
        "web_search": D("0.01"),
        "code_interpreter": D("0.12"),
        "image_generation": D("0.25"),
    }
    local = session.tool_invocations.get(native=False)
    assert local.cost is None
    assert session.cost == sum(by_hand(call) for call in calls) + D("0.38")
    assert session.unpriced_calls == 0


def test_costs_of_an_unpriced_model_are_counted_not_guessed():
    session = run(demo_prompt(model="gpt-5.5"))  # no price for it
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    turns = session.provider_calls.count()
    assert not session.provider_calls.filter(cost__isnull=False).exists()
    assert session.unpriced_calls == turns
    assert session.cost == D("0.38")  # the fees only


def test_costs_follow_the_price_in_effect_when_the_run_starts():
    today = timezone.localdate()
    ModelPrice.objects.create(
        model="gpt-5.4",
        effective_from=today,
        input_per_mtok=D(100),
        cached_input_per_mtok=D(100),
        cache_write_per_mtok=D(100),
        output_per_mtok=D(0),
    )
    ModelPrice.objects.create(  # not yet
        model="gpt-5.4",
        effective_from=today + timedelta(days=1),
        input_per_mtok=D(999),
        cached_input_per_mtok=D(999),
        cache_write_per_mtok=D(999),
        output_per_mtok=D(999),
    )
    session = run(demo_prompt())
    call = session.provider_calls.order_by("turn")[0]
    assert call.cost == call.input_tokens * D(100) / MILLION


# -- budgets ---------------------------------------------------------------------


def test_costs_template_budget_stops_the_run_with_phase_budget():
    # the first request alone costs more than $0.0001 (hundreds of tokens)
    prompt = demo_prompt(max_cost_per_session=D("0.0001"))
    session = run(prompt)
    assert session.status == AgentSession.Status.FAILED
    assert session.error_phase == "budget"
    assert session.error_message.startswith("The run spent $")
    assert "of its $0.0001 budget; stopped before the next request" in (
        session.error_message
    )
    assert session.cost_budget == D("0.0001")
    assert session.provider_calls.count() == 1  # nothing for the next request
    call = session.provider_calls.get()
    assert session.cost == call.cost + D("0.38")  # what it spent is shown


def test_costs_budget_on_an_unpriced_model_refuses_to_spend():
    session = run(demo_prompt(model="gpt-5.5", max_cost_per_session=D(1)))
    assert session.status == AgentSession.Status.FAILED
    assert session.error_phase == "budget"
    assert "its model 'gpt-5.5' has no price in effect" in session.error_message
    assert session.provider_calls.count() == 0


def test_costs_budget_large_enough_lets_the_run_finish():
    session = run(demo_prompt(max_cost_per_session=D("5")))
    assert session.status == AgentSession.Status.SUCCEEDED
    assert session.cost_budget == D("5")


# -- the price sheet ---------------------------------------------------------------


def test_costs_price_sheet_reads_two_queries_and_none_when_cached(
    django_assert_num_queries,
):
    token = CatalogGeneration.objects.get(pk=1).token
    with django_assert_num_queries(2):
        sheet = assembly.price_sheet(token=token)
    with django_assert_num_queries(0):
        assert assembly.price_sheet(token=token) is sheet
    with django_assert_num_queries(2):  # without a token: never cached
        assembly.price_sheet()
    assert sheet.rate_for("gpt-5.4-2026-03-05") == sheet.models["gpt-5.4"]
    assert sheet.fee("web_search") == D("0.01")


def test_costs_price_edit_changes_the_generation_and_the_sheet():
    token = CatalogGeneration.objects.get(pk=1).token
    before = assembly.price_sheet(token=token)
    HostedToolPrice.objects.filter(kind="web_search").update(price=D("0.02"))
    token = CatalogGeneration.objects.get(pk=1).token
    after = assembly.price_sheet(token=token)
    assert (before.fee("web_search"), after.fee("web_search")) == (
        D("0.01"),
        D("0.02"),
    )


def test_costs_prices_in_effect_pick_each_latest_row():
    day = date(2030, 6, 1)
    for effective, rate in ((date(2030, 1, 1), 1), (day, 2), (date(2030, 7, 1), 3)):
        ModelPrice.objects.create(
            model="future-model",
            effective_from=effective,
            input_per_mtok=D(rate),
            cached_input_per_mtok=D(0),
            cache_write_per_mtok=D(0),
            output_per_mtok=D(0),
        )
    rows = ModelPrice.objects.in_effect(day).filter(model="future-model")
    assert [row.input_per_mtok for row in rows] == [D(2)]
    assert not ModelPrice.objects.in_effect(date(2029, 1, 1)).filter(
        model="future-model"
    )
    seeded = HostedToolPrice.objects.in_effect(day)
    assert seeded.filter(kind="image_generation").count() == 9


def test_costs_a_price_takes_effect_at_local_midnight(settings):
    # New York: 03:30 UTC on June 2nd is 23:30 on June 1st (EDT, UTC-4), so
    # a price from June 2nd is not in effect yet; at 04:30 UTC it is
    settings.TIME_ZONE = "America/New_York"
    ModelPrice.objects.create(
        model="gpt-5",
        effective_from=date(2030, 6, 2),
        input_per_mtok=D(7),
        cached_input_per_mtok=D(7),
        cache_write_per_mtok=D(7),
        output_per_mtok=D(7),
    )
    for hour, rate in ((3, D("1.25")), (4, D(7))):
        moment = datetime(2030, 6, 2, hour, 30, tzinfo=UTC)
        with mock.patch("django.utils.timezone.now", return_value=moment):
            assert assembly.price_sheet().models["gpt-5"].input == rate, hour


def test_costs_seeded_family_members_priced_apart_from_their_base_model():
    # the longest-prefix rule: without their own rows o3-pro (and its
    # snapshots) would be priced as o3, gpt-5-pro as gpt-5: 10x too cheap
    sheet = assembly.price_sheet()
    million_in = TokenUsage(input_tokens=1_000_000)
    assert sheet.cost_of_usage("o3-pro-2025-06-10", million_in) == D(20)
    assert sheet.cost_of_usage("o3-2025-04-16", million_in) == D(2)
    assert sheet.cost_of_usage("gpt-5-pro", million_in) == D(15)
    assert sheet.cost_of_usage("gpt-5-2025-08-07", million_in) == D("1.25")
    assert sheet.cost_of_usage("o3-mini", million_in) == D("1.10")
    assert sheet.cost_of_usage("gpt-4o-2024-05-13", million_in) == D(5)
    assert sheet.cost_of_usage("gpt-4o-2024-08-06", million_in) == D("2.50")
    assert sheet.rate_for("gpt-50") is None  # a dash, or no match


def test_costs_a_hosted_shell_container_is_charged():
    # a hosted shell (container_auto, 1g by default) reports its container as
    # a "container_reference" on the call: still one $0.03 container
    section = SectionDefinitionFactory.create(template="List the files.")
    _hosted(section, "sh", HostedToolDefinition.Kind.SHELL, {})
    prompt = PromptTemplateFactory.create(key="shell-costs", max_turns=4)
    add_sections(prompt, section)
    session = run(prompt)
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    fees = list(
        session.tool_invocations.filter(native=True).values_list("kind", "cost")
    )
    assert fees and fees[0] == ("shell", D("0.03"))
    assert all(cost == 0 for _, cost in fees[1:])  # the same container after
    calls = list(session.provider_calls.all())
    assert session.cost == sum(by_hand(call) for call in calls) + D("0.03")


def _price_reads(captured: CaptureQueriesContext) -> list[str]:
    return [
        query["sql"]
        for query in captured.captured_queries
        if "tooling_modelprice" in query["sql"]
        or "tooling_hostedtoolprice" in query["sql"]
    ]


def test_costs_an_inline_run_on_an_unchanged_catalog_reads_no_price():
    prompt = demo_prompt()
    with CaptureQueriesContext(connection) as first:
        run(prompt)
    with CaptureQueriesContext(connection) as second:
        run(prompt)
    assert len(_price_reads(first)) == 2
    assert _price_reads(second) == []


def test_costs_a_worker_run_on_an_unchanged_catalog_reads_no_price(settings):
    # the claim reads the catalog generation with the session: the sheet is
    # cached per generation and day on workers too
    settings.CELERY_TASK_ALWAYS_EAGER = False  # queued for a worker
    ref = demo_prompt().ref
    queued = [services.start_session(prompt_ref=ref, params={}) for _ in range(2)]
    captured = []
    for session in queued:
        with CaptureQueriesContext(connection) as reads:
            done = services.run_session(
                session_id=session.pk, client=CountingProvider().client
            )
        assert done.status == AgentSession.Status.SUCCEEDED, done.error_message
        captured.append(_price_reads(reads))
    assert len(captured[0]) <= 2
    assert captured[1] == []


def test_costs_a_worker_run_is_priced_as_of_the_day_it_was_queued(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # queued for a worker
    queued = services.start_session(prompt_ref=demo_prompt().ref, params={})
    assert queued.status == AgentSession.Status.QUEUED
    yesterday = timezone.now() - timedelta(days=1)
    AgentSession.objects.filter(pk=queued.pk).update(created_at=yesterday)
    ModelPrice.objects.create(  # from today on: not for this run
        model="gpt-5.4",
        effective_from=timezone.localdate(),
        input_per_mtok=D(999),
        cached_input_per_mtok=D(999),
        cache_write_per_mtok=D(999),
        output_per_mtok=D(999),
    )
    with CaptureQueriesContext(connection) as captured:
        session = services.run_session(
            session_id=queued.pk, client=CountingProvider().client
        )
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    assert len(_price_reads(captured)) == 2  # the price sheet: two queries
    for call in session.provider_calls.all():
        assert call.cost == by_hand(call)


# -- totals from the rows ----------------------------------------------------------


def test_costs_totals_sum_calls_and_fees_from_the_rows():
    session = AgentSessionFactory.create()
    ProviderCallFactory.create(session=session, cost=D("0.0015"))
    ProviderCallFactory.create(session=session, cost=None)  # unpriced
    ProviderCallFactory.create(session=session, response=None, cost=None)  # failed
    ToolInvocationFactory.create(session=session, web_search=True)  # $0.01
    ToolInvocationFactory.create(session=session, web_search=True, cost=None)
    ToolInvocationFactory.create(session=session)  # local: no fee, not unpriced
    totals = session_totals(session.pk)
    assert totals["cost"] == D("0.0115")
    assert totals["unpriced_calls"] == 2


def test_costs_absurd_usage_cannot_overflow_the_cost_column():
    from sessions_app.runs.recording import _cost
    from sessions_app.runs.storable import Scrubber

    scrub = Scrubber()
    assert _cost(D("1e30"), scrub) == MAX_COST
    assert scrub.altered
    assert _cost(D("NaN"), Scrubber()) is None
    assert _cost(D("0.5"), Scrubber()) == D("0.5")


def test_costs_rows_record_event_costs():
    session = run(demo_prompt())
    assert ProviderCall.objects.filter(session=session, cost__isnull=True).count() == 0
    assert (
        ToolInvocation.objects.filter(
            session=session, native=True, cost__isnull=True
        ).count()
        == 0
    )


def test_costs_a_paused_run_shows_what_it_spent_so_far(
    django_capture_on_commit_callbacks,
):
    seed_demo_catalog()
    policy = PolicyDefinition.objects.create(
        name="release-approval",
        kind=PolicyDefinition.Kind.APPROVAL,
        config={"rules": [{"tool": "deploy"}]},
    )
    PromptTemplate.objects.get(namespace="demo", key="release").policies.add(policy)
    author = UserFactory.create(username="author")
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref="demo/release", user=author)
    assert session.status == AgentSession.Status.AWAITING_APPROVAL
    calls = list(session.provider_calls.all())
    assert calls
    assert session.cost == sum(by_hand(call) for call in calls) > 0
    assert session.turns == len(calls)
    assert session.usage["input_tokens"] == sum(c.input_tokens for c in calls)
