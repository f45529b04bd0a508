"""Where a run's time went (issue #28): each step's start and duration on the
record, in the API and on the session page (the waterfall, the outline by
turn, the filter by kind, collapsible JSON, the final plan)."""

from __future__ import annotations

import datetime
import math
import re
from types import SimpleNamespace

import pytest
from django.utils import timezone

from sessions_app import services
from sessions_app.audit import timeline, waterfall
from sessions_app.audit.timings import (
    finite_ms,
    humane_ms,
    provider_span,
    tool_span,
)
from sessions_app.models import (
    ApprovalRequest,
    ProviderCall,
    SessionStateEntry,
    ToolInvocation,
)
from sessions_app.templatetags.waterfall_chart import waterfall_chart
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ApprovalRequestFactory,
    PolicyDenialFactory,
    ProviderCallFactory,
    StateChangeFactory,
    ToolInvocationFactory,
)
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db

MS = datetime.timedelta(milliseconds=1)


@pytest.fixture(autouse=True)
def _offline(settings):
    settings.WINK_PROVIDER = "offline"


def timed_session(tool_name="lookup_order", **kwargs):
    """A session created at T, started at T+100 ms: turn 1's provider call
    from T+200 for 300 ms (a failed attempt, 50 ms backoff, then the reply), a
    local call from T+520 for 40 ms (10 in policies), a native web search in
    turn 1, turn 2's call from T+600 for 100 ms, an approval from T+710
    decided at T+2710; finished at T+3000."""
    origin = timezone.now() - datetime.timedelta(minutes=5)
    fields = {
        "created_at": origin,
        "started_at": origin + 100 * MS,
        "finished_at": origin + 3000 * MS,
        "pauses": 1,  # its approval paused it
        **kwargs,
    }
    session = AgentSessionFactory.create(**fields)
    ProviderCallFactory.create(
        session=session,
        turn=1,
        started_at=origin + 200 * MS,
        latency_ms=300,
        created_at=origin + 501 * MS,
        attempts=[
            {
                "number": 1,
                "status_code": 500,
                "latency_ms": 100,
                "offset_ms": 0,
                "error": "boom",
                "error_type": "InternalServerError",
            },
            {
                "number": 2,
                "status_code": 200,
                "latency_ms": 150,
                "offset_ms": 150,
                "error": None,
            },
        ],
        attempt_count=2,
    )
    ToolInvocationFactory.create(
        session=session,
        turn=1,
        sequence=1,
        name=tool_name,
        started_at=origin + 520 * MS,
        duration_ms=40,
        policy_ms=10,
    )
    ToolInvocationFactory.create(session=session, turn=1, sequence=2, web_search=True)
    ProviderCallFactory.create(
        session=session,
        turn=2,
        started_at=origin + 600 * MS,
        latency_ms=100,
        created_at=origin + 701 * MS,
    )
    ApprovalRequestFactory.create(
        session=session,
        turn=2,
        sequence=3,
        tool_name="deploy",
        status=ApprovalRequest.Status.APPROVED,
        requested_at=origin + 710 * MS,
        decided_at=origin + 2710 * MS,
    )
    return session, origin


# -- the record -----------------------------------------------------------------


def test_a_run_records_each_steps_start_and_duration():
    seed_demo_catalog()
    before = timezone.now()
    session = services.start_session(prompt_ref="demo/patch")
    calls = list(ProviderCall.objects.filter(session=session).order_by("turn"))
    tools = list(ToolInvocation.objects.filter(session=session).order_by("sequence"))
    assert calls and tools
    for call in calls:
        assert call.started_at is not None and call.started_at >= before
        assert call.started_at <= call.created_at
        assert [a["offset_ms"] is not None for a in call.attempts] == [True]
    for tool in tools:
        assert not tool.native
        assert tool.started_at is not None and tool.duration_ms is not None
        assert before <= tool.started_at <= tool.created_at
    # apply_patch runs under policies (read-before-write): their part is timed
    assert any(tool.policy_ms is not None for tool in tools)
    assert all(tool.policy_ms <= tool.duration_ms for tool in tools if tool.policy_ms)
    # the tool calls of a turn start after that turn's provider call started
    by_turn = {call.turn: call for call in calls}
    for tool in tools:
        assert tool.started_at >= by_turn[tool.turn].started_at


def test_native_calls_have_no_timing_of_their_own():
    seed_demo_catalog()
    session = services.start_session(prompt_ref="demo/research")
    natives = ToolInvocation.objects.filter(session=session, native=True)
    assert natives.exists()
    assert not natives.exclude(started_at=None).exists()
    assert not natives.exclude(duration_ms=None).exists()


# -- the waterfall ----------------------------------------------------------------


def drawn_of(session, now=None):
    drawn = waterfall.build(session, now=now or timezone.now())
    assert drawn is not None
    return drawn


def test_the_waterfall_places_each_step_on_the_sessions_clock():
    session, _origin = timed_session()
    drawn = drawn_of(session)
    assert not drawn.truncated
    bars = {(bar.kind, bar.label): bar for bar in drawn.bars}
    queue = bars["queue", "waiting for a worker"]
    assert (queue.start_ms, queue.duration_ms) == (0.0, 100.0)
    first = bars["provider", "turn 1 · model"]
    assert (first.start_ms, first.duration_ms) == (200.0, 300.0)
    assert first.segments == ((0.0, 100.0, True), (150.0, 150.0, False))
    local = bars["tool", "#1 lookup_order"]
    assert (local.start_ms, local.duration_ms) == (520.0, 40.0)
    assert "policies 10.0 ms" in local.detail
    native = bars["native", "#2 web_search"]
    assert (native.start_ms, native.duration_ms) == (200.0, 300.0)  # its call's
    wait = bars["approval", "approval · deploy"]
    assert (wait.start_ms, wait.duration_ms, wait.open) == (710.0, 2000.0, False)
    assert drawn.total_ms == 3000.0
    # in order of start
    starts = [bar.start_ms for bar in drawn.bars]
    assert starts == sorted(starts)


def test_a_pending_approval_waits_until_now():
    session, origin = timed_session(finished_at=None)
    ApprovalRequest.objects.filter(session=session).update(
        status="pending", decided_at=None
    )
    now = origin + 10_000 * MS
    drawn = drawn_of(session, now)
    (wait,) = [bar for bar in drawn.bars if bar.kind == "approval"]
    assert wait.open and wait.duration_ms == 10_000 - 710
    assert drawn.total_ms == 10_000


def test_calls_recorded_before_timings_are_placed_by_their_record():
    session = AgentSessionFactory.create(
        created_at=timezone.now() - datetime.timedelta(seconds=5)
    )
    call = ProviderCallFactory.create(session=session, turn=1, latency_ms=250)
    ToolInvocationFactory.create(session=session, turn=1, sequence=1)  # no timing
    drawn = drawn_of(session)
    (bar,) = [bar for bar in drawn.bars if bar.kind == "provider"]
    assert bar.start_ms == pytest.approx(
        (call.created_at - session.created_at) / MS - 250
    )
    assert not [bar for bar in drawn.bars if bar.kind == "tool"]


def test_the_waterfall_of_a_long_run_draws_its_first_turns(monkeypatch):
    monkeypatch.setattr("sessions_app.audit.waterfall.MAX_BARS", 6)
    session = AgentSessionFactory.create()
    start = timezone.now()
    for turn in range(1, 6):
        ProviderCallFactory.create(session=session, turn=turn, started_at=start)
        for sequence in range(turn * 10, turn * 10 + 3):
            ToolInvocationFactory.create(
                session=session,
                turn=turn,
                sequence=sequence,
                started_at=start,
                duration_ms=1,
            )
    drawn = drawn_of(session)
    assert drawn.truncated
    assert len(drawn.bars) <= 6
    # turn 2's tool calls were cut at the bound: only turn 1 is drawn whole
    assert {bar.turn for bar in drawn.bars} == {1}
    # the outline names every turn read; counts only where read whole
    assert [turn.turn for turn in drawn.turns] == [1, 2, 3, 4, 5]
    assert [turn.tool_calls for turn in drawn.turns] == [3, None, None, None, None]


def test_nothing_recorded_draws_no_waterfall(admin_client):
    session = AgentSessionFactory.create()
    assert waterfall.build(session, now=timezone.now()) is None
    html = admin_client.get(session.get_absolute_url()).content.decode()
    assert 'id="waterfall"' not in html


def test_humane_durations():
    assert [humane_ms(v) for v in (0, 0.5, 12.4, 999, 1500, 61_000, 3_720_000)] == [
        "0 ms",
        "0.50 ms",
        "12 ms",
        "999 ms",
        "1.5 s",
        "1 min 01 s",
        "1 h 02 min",
    ]


# -- the page ---------------------------------------------------------------------


def test_the_session_page_draws_where_the_time_went(admin_client):
    session, _ = timed_session()
    html = admin_client.get(session.get_absolute_url()).content.decode()
    assert '<svg class="waterfall"' in html
    assert html.count('<g class="wf-row wf-') == 6
    assert "lookup_order: ok, policies 10.0 ms" in html
    # retried: the attempts drawn apart, the failed one in red
    assert html.count('class="wf-attempt') == 2
    assert 'class="wf-attempt wf-failed"' in html
    assert 'id="session-duration">2.9 s' in html  # ran from T+100 to T+3000
    assert "after 100 ms waiting for a worker" in html
    # the entries carry their durations
    assert "40 ms (policies 10 ms)" in html
    assert "within turn 1's provider call" in html
    assert "waited 2.0 s" in html


def test_the_waterfall_escapes_names(admin_client):
    session, _ = timed_session(tool_name="<script>x</script>")
    html = admin_client.get(session.get_absolute_url()).content.decode()
    assert "<script>x</script>" not in html
    assert "#1 &lt;script&gt;x&lt;/script&gt;" in html


def test_the_outline_links_each_turn_to_its_page_of_the_timeline(admin_client):
    session = AgentSessionFactory.create()
    for turn in (1, 2, 3):
        ProviderCallFactory.create(session=session, turn=turn)
        for sequence in range(turn * 100, turn * 100 + 25):  # past a page
            ToolInvocationFactory.create(session=session, turn=turn, sequence=sequence)
    url = session.get_absolute_url()
    html = admin_client.get(url).content.decode()
    links = re.findall(r'<a href="([^"]*)#timeline">Turn (\d)</a>', html)
    assert [turn for _, turn in links] == ["1", "2", "3"]
    for href, turn in links:
        page = admin_client.get(url + href.replace("&amp;", "&"))
        first = page.context["timeline"][0]
        assert first.kind == "provider_call"
        assert first.item.turn == int(turn)


def test_the_timeline_filters_by_kind(admin_client):
    session, _ = timed_session()
    PolicyDenialFactory.create(session=session, turn=1, sequence=1)
    StateChangeFactory.create(session=session, turn=1, sequence=1)
    url = session.get_absolute_url()

    def kinds(*names):
        response = admin_client.get(url, {"kind": list(names)})
        assert response.status_code == 200
        return [
            (entry.kind, getattr(entry.item, "native", None))
            for entry in response.context["timeline"]
        ]

    assert kinds("tool") == [("tool_invocation", False)]
    assert kinds("native") == [("tool_invocation", True)]
    assert sorted(kinds("tool", "native")) == [
        ("tool_invocation", False),
        ("tool_invocation", True),
    ]
    assert kinds("provider") == [("provider_call", None), ("provider_call", None)]
    assert kinds("denial", "state") == [("policy_denial", None), ("state_change", None)]
    assert kinds("approval") == [("approval", None)]
    # the boxes keep what was chosen; the pages keep the filter
    html = admin_client.get(url, {"kind": ["tool"]}).content.decode()
    assert 'value="tool" checked' in html
    assert 'value="native" checked' not in html


def test_an_unknown_kind_is_said_not_ignored_silently(admin_client):
    session, _ = timed_session()
    response = admin_client.get(session.get_absolute_url(), {"kind": ["bogus"]})
    assert response.status_code == 200
    assert b'id="timeline-filter-error"' in response.content
    # what it can show, it shows: every kind
    assert len(response.context["timeline"]) == 5


def test_the_filter_pages_keep_the_filter(admin_client, monkeypatch):
    monkeypatch.setattr("sessions_app.audit.pages.TIMELINE_PAGE", 2)
    session = AgentSessionFactory.create()
    ProviderCallFactory.create(session=session, turn=1)
    for sequence in range(1, 6):
        ToolInvocationFactory.create(session=session, turn=1, sequence=sequence)
    url = session.get_absolute_url()
    response = admin_client.get(url, {"kind": "tool"})
    html = response.content.decode()
    (next_link,) = re.findall(r'href="(\?after=[^"]*)#timeline" rel="next"', html)
    assert "&amp;kind=tool" in next_link
    page = admin_client.get(url + next_link.replace("&amp;", "&"))
    assert [e.item.sequence for e in page.context["timeline"]] == [3, 4]


def test_long_json_is_folded_short_json_open(admin_client):
    session = AgentSessionFactory.create(params={"topic": "tides"})
    ProviderCallFactory.create(session=session, turn=1)
    ToolInvocationFactory.create(
        session=session,
        turn=1,
        sequence=1,
        params={f"key{i}": i for i in range(40)},
    )
    html = admin_client.get(session.get_absolute_url()).content.decode()
    assert '<details class="json" open><summary>Parameters' in html
    assert (
        '<details class="json"><summary>Arguments <span class="muted">(42 lines)'
        in html
    )


PLANNING_TOOLS = [{"type": "function", "name": "planning_setup_plan"}]


def test_the_final_plan_is_shown(admin_client):
    session = AgentSessionFactory.create(tools_payload=PLANNING_TOOLS)
    SessionStateEntry.objects.create(
        session=session,
        key="plan",
        value_type="Plan",
        value={
            "objective": "Ship <it>",
            "status": "active",
            "steps": [
                {"step_id": 1, "title": "Build", "status": "done"},
                {"step_id": 2, "title": "Test", "status": "in_progress"},
            ],
        },
    )
    html = admin_client.get(session.get_absolute_url()).content.decode()
    assert 'id="final-plan"' in html
    assert "Objective: Ship &lt;it&gt;" in html
    assert "Build" in html and "Test" in html


def test_no_plan_no_panel(admin_client):
    session = AgentSessionFactory.create(tools_payload=PLANNING_TOOLS)
    html = admin_client.get(session.get_absolute_url()).content.decode()
    assert 'id="final-plan"' not in html


def test_no_planning_tools_no_plan_read_and_no_pause_no_approvals_read(admin_client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    session = AgentSessionFactory.create()
    ProviderCallFactory.create(session=session, turn=1)
    admin_client.get(session.get_absolute_url())
    with CaptureQueriesContext(connection) as queries:
        admin_client.get(session.get_absolute_url())
    tables = " ".join(q["sql"] for q in queries.captured_queries)
    assert "sessionstateentry" not in tables
    # the timeline's keyset query reads approvals; the waterfall's does not
    assert tables.count('FROM "sessions_app_approvalrequest"') == 1


def test_a_demo_run_with_planning_shows_its_final_plan(admin_client):
    seed_demo_catalog()
    session = services.start_session(prompt_ref="demo/notes")
    entry = SessionStateEntry.objects.get(session=session, key="plan")
    html = admin_client.get(session.get_absolute_url()).content.decode()
    assert entry.value and entry.value.get("steps")
    assert 'id="final-plan"' in html
    assert entry.value["steps"][0]["title"] in html


# -- the API --------------------------------------------------------------------


def test_the_api_gives_each_events_start_and_duration(api_client):
    session, origin = timed_session()
    body = api_client.get(f"/api/sessions/{session.pk}/events/").json()
    by_kind: dict[str, list[dict]] = {}
    for event in body["results"]:
        by_kind.setdefault(event["kind"], []).append(event)
    first_call = by_kind["provider_call"][0]
    assert first_call["duration_ms"] == 300
    assert first_call["started_at"].startswith(
        (origin + 200 * MS).isoformat()[:23].replace("+00:00", "")
    )
    local, native = by_kind["tool_invocation"]
    assert local["duration_ms"] == 40 and local["data"]["policy_ms"] == 10
    assert local["data"]["duration_ms"] == 40
    assert native["started_at"] is None and native["duration_ms"] is None
    (approval,) = by_kind["approval"]
    assert approval["duration_ms"] == 2000


def test_the_api_filters_events_by_kind(api_client):
    session, _ = timed_session()
    url = f"/api/sessions/{session.pk}/events/"
    body = api_client.get(url, {"kind": ["native", "approval"]}).json()
    assert [(e["kind"], e["data"].get("native")) for e in body["results"]] == [
        ("tool_invocation", True),
        ("approval", None),
    ]
    response = api_client.get(url, {"kind": "bogus"})
    assert response.status_code == 400
    assert "kind" in response.json()["errors"]


def test_the_api_filters_events_by_their_own_kind_too(api_client):
    """The events say ``provider_call``, ``tool_invocation``, ...; ``kind``
    took only the page's words (``provider``, ``tool``) and had none for a
    quota decision alone (found by hostile QA)."""
    session, _ = timed_session()
    url = f"/api/sessions/{session.pk}/events/"
    every = api_client.get(url).json()["results"]
    for kind in {event["kind"] for event in every}:
        body = api_client.get(url, {"kind": kind}).json()
        assert body["results"] == [e for e in every if e["kind"] == kind], kind
    tools = api_client.get(url, {"kind": ["tool", "tool_invocation"]}).json()
    assert {e["data"].get("native") for e in tools["results"]} == {True, False}
    response = api_client.get(url, {"kind": "bogus"})
    (message,) = response.json()["errors"]["kind"]
    assert "provider_call" in message and "quota_decision" in message


def test_the_api_tool_calls_and_provider_calls_carry_timings(api_client):
    session, _origin = timed_session()
    detail = api_client.get(f"/api/sessions/{session.pk}/").json()
    tool = detail["tool_invocations"][0]
    assert (tool["duration_ms"], tool["policy_ms"]) == (40, 10)
    assert tool["started_at"] is not None
    call = detail["provider_calls"][0]
    assert call["started_at"] is not None
    assert call["attempts"][1]["offset_ms"] == 150


# -- hostile rows -------------------------------------------------------------------


@pytest.mark.parametrize("latency", [-5.0, 1e14, 1e20, 1e300])
def test_absurd_latencies_never_break_the_page_or_the_api(
    admin_client, api_client, latency
):
    session = AgentSessionFactory.create()
    ProviderCallFactory.create(session=session, turn=1, latency_ms=latency)
    ProviderCallFactory.create(
        session=session,
        turn=2,
        started_at=timezone.now(),
        latency_ms=latency,
        attempts=[{"latency_ms": latency, "offset_ms": latency}],
    )
    ToolInvocationFactory.create(
        session=session,
        turn=1,
        sequence=1,
        started_at=timezone.now(),
        duration_ms=latency,
        policy_ms=latency,
    )
    page = admin_client.get(session.get_absolute_url())
    assert page.status_code == 200
    html = page.content.decode()
    # every coordinate drawn is a finite number inside the chart
    xs = [float(x) for x in re.findall(r'<rect class="wf-[^"]*" x="([^"]+)"', html)]
    assert xs and all(0 <= x <= 960 for x in xs)
    widths = [float(w) for w in re.findall(r'width="([0-9.]+)" height="1[02]"', html)]
    assert widths and all(0 < w <= 960 for w in widths)
    events = api_client.get(f"/api/sessions/{session.pk}/events/")
    assert events.status_code == 200


@pytest.mark.parametrize("attempts", [5, "text", {"a": 1}, [None, 3, "x"], [{}] * 500])
def test_attempts_of_any_shape_never_break_the_page(admin_client, attempts):
    session = AgentSessionFactory.create()
    ProviderCallFactory.create(
        session=session, turn=1, started_at=timezone.now(), attempts=attempts
    )
    assert admin_client.get(session.get_absolute_url()).status_code == 200


def test_steps_before_their_session_was_created_are_drawn_at_its_start():
    session = AgentSessionFactory.create()
    ProviderCallFactory.create(
        session=session,
        turn=1,
        started_at=session.created_at - datetime.timedelta(days=3650),
        latency_ms=10,
    )
    drawn = drawn_of(session)
    (call,) = [bar for bar in drawn.bars if bar.kind == "provider"]
    assert call.start_ms == 0


def test_a_first_turn_past_the_bound_still_draws_what_was_read(monkeypatch):
    monkeypatch.setattr("sessions_app.audit.waterfall.MAX_BARS", 5)
    start = timezone.now()
    session = AgentSessionFactory.create(
        created_at=start - datetime.timedelta(seconds=1), started_at=start
    )
    ProviderCallFactory.create(session=session, turn=1, started_at=start)
    ProviderCallFactory.create(session=session, turn=2, started_at=start)
    for sequence in range(1, 9):
        ToolInvocationFactory.create(
            session=session,
            turn=1,
            sequence=sequence,
            started_at=start,
            duration_ms=1,
        )
    drawn = drawn_of(session)
    assert drawn.truncated
    tools = [bar for bar in drawn.bars if bar.kind == "tool"]
    assert tools and all(bar.turn == 1 for bar in tools)
    assert len(drawn.bars) <= 5


def test_the_native_filter_reads_its_own_index(admin_client):
    session, _ = timed_session()
    for sequence in range(10, 40):
        ToolInvocationFactory.create(session=session, turn=1, sequence=sequence)
    response = admin_client.get(session.get_absolute_url(), {"kind": "native"})
    assert [e.item.native for e in response.context["timeline"]] == [True]
    indexes = {index.name for index in ToolInvocation._meta.indexes}
    assert "tool_native_timeline" in indexes


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_non_finite_durations_read_as_nothing(value):
    # PostgreSQL's float columns hold them (SQLite's do not): read, not drawn
    now = timezone.now()
    assert finite_ms(value) == 0.0 and humane_ms(value) == "—"
    call = SimpleNamespace(
        latency_ms=value, started_at=None, created_at=now, error="", attempts=[]
    )
    assert provider_span(call).duration_ms == 0.0
    tool = SimpleNamespace(native=False, started_at=now, duration_ms=value)
    span = tool_span(tool)
    assert span is not None and span.duration_ms == 0.0
    drawn = waterfall.Waterfall(
        bars=[waterfall.Bar("tool", "#1 t", "t", finite_ms(value), 0.0, 1)],
        total_ms=1.0,
        truncated=False,
        turns=[],
    )
    assert 'x="230.0"' in waterfall_chart(drawn)


def test_the_waterfall_from_the_timelines_rows_is_the_one_read_apart():
    """An ordinary run's whole timeline is on its first page: the page draws
    the waterfall from those rows, with no query of its own."""
    session, _ = timed_session()
    now = timezone.now()
    events, more = timeline.events_page(session, after=None, limit=20)
    assert more is None
    from_rows = waterfall.build(session, now=now, everything=events)
    read = waterfall.build(session, now=now)
    assert from_rows is not None and read is not None
    assert [(b.kind, b.label, b.start_ms, b.duration_ms) for b in from_rows.bars] == [
        (b.kind, b.label, b.start_ms, b.duration_ms) for b in read.bars
    ]
    assert from_rows.turns == read.turns


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_the_api_gives_non_finite_durations_as_null(admin_client, value):
    """A float column holding what JSON cannot carry (PostgreSQL's hold NaN
    and the infinities, SQLite's the infinities) is null in the API, not a
    500 for the whole session."""
    from django.db import connection

    if math.isnan(value) and connection.vendor != "postgresql":
        pytest.skip("SQLite stores NaN as NULL (DATABASE_URL=postgres://...)")
    session = AgentSessionFactory.create()
    ProviderCallFactory.create(session=session, turn=1, latency_ms=value)
    ToolInvocationFactory.create(
        session=session,
        turn=1,
        sequence=1,
        started_at=timezone.now(),
        duration_ms=value,
        policy_ms=value,
    )
    detail = admin_client.get(f"/api/sessions/{session.pk}/")
    assert detail.status_code == 200
    assert [c["latency_ms"] for c in detail.json()["provider_calls"]] == [None]
    tools = admin_client.get(f"/api/sessions/{session.pk}/tool-invocations/")
    assert tools.status_code == 200
    (tool,) = tools.json()["results"]
    assert (tool["duration_ms"], tool["policy_ms"]) == (None, None)
    calls = admin_client.get(f"/api/sessions/{session.pk}/provider-calls/")
    assert [c["latency_ms"] for c in calls.json()["results"]] == [None]
    events = admin_client.get(f"/api/sessions/{session.pk}/events/")
    assert events.status_code == 200
