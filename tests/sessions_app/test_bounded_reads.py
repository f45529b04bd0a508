"""Audit reads that do not grow with the table (issue #11).

Every list, filter and session read answers in a constant number of queries
and loads a bounded number of rows: the same with 30 sessions as with 90, for
a session of 30 events as for one of 600. Rows loaded are counted as model
instances built (``post_init``); queries with ``CaptureQueriesContext``. The
timings at 100,000 sessions are ``make bench-scale``'s (docs/benchmarks.md).
"""

from __future__ import annotations

import collections
import contextlib
import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.models.signals import post_init
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app.audit import timeline
from sessions_app.audit.pages import TIMELINE_PAGE
from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    StateChange,
    ToolInvocation,
    VirtualFile,
)
from tests.sessions_app.factories import (
    AgentSessionFactory,
    CitationFactory,
    PolicyDenialFactory,
    ProviderCallFactory,
    StateChangeFactory,
    ToolInvocationFactory,
    UserFactory,
    VirtualFileFactory,
)

pytestmark = pytest.mark.django_db

AUDIT_MODELS = (
    AgentSession,
    ProviderCall,
    ToolInvocation,
    Citation,
    PolicyDenial,
    StateChange,
    VirtualFile,
)


class Reads:
    """What one request cost: its SQL and the audit rows it loaded."""

    def __init__(self) -> None:
        self.sql: list[str] = []
        self.rows: collections.Counter[str] = collections.Counter()

    @property
    def queries(self) -> int:
        return len(self.sql)

    def __repr__(self) -> str:
        return f"Reads({self.queries} queries, rows {dict(self.rows)})"


@contextlib.contextmanager
def reads() -> Iterator[Reads]:
    found = Reads()

    def count(sender: Any, **kwargs: Any) -> None:
        if sender in AUDIT_MODELS:
            found.rows[sender.__name__] += 1

    post_init.connect(count)
    try:
        with CaptureQueriesContext(connection) as captured:
            yield found
    finally:
        post_init.disconnect(count)
    found.sql = [query["sql"] for query in captured.captured_queries]


def read(client: Any, url: str, **query: Any) -> Reads:
    client.get(url, query)  # warm: the user's permissions are cached per request
    with reads() as found:
        response = client.get(url, query)
    assert response.status_code == 200, response.content[:300]
    return found


_clock = iter(range(10**6))


def sessions_with_rows(count: int, **kwargs: Any) -> list[AgentSession]:
    """``count`` sessions, older than any made before, each with a provider
    call, two tool calls (one native), a citation, a denial and a change."""
    made = []
    for _ in range(count):
        created = timezone.now() - datetime.timedelta(days=1 + next(_clock))
        session = AgentSessionFactory.create(created_at=created, **kwargs)
        call = ProviderCallFactory.create(session=session, turn=1, created_at=created)
        ToolInvocationFactory.create(
            session=session, turn=1, sequence=1, created_at=created
        )
        ToolInvocationFactory.create(
            session=session, turn=1, sequence=2, web_search=True, created_at=created
        )
        CitationFactory.create(
            session=session,
            provider_call=call,
            url="https://docs.example.org/a",
            domain="docs.example.org",
            created_at=created,
        )
        PolicyDenialFactory.create(
            session=session, turn=1, sequence=1, created_at=created
        )
        StateChangeFactory.create(
            session=session, turn=1, sequence=1, created_at=created
        )
        made.append(session)
    return made


def long_session(tool_calls: int, **kwargs: Any) -> AgentSession:
    """A session of ``tool_calls`` tool calls over turns of ten, each turn's
    provider call first, a denial and a state change beside every fifth call
    and a citation for every tenth."""
    session = AgentSessionFactory.create(**kwargs)
    calls = {}
    for sequence in range(1, tool_calls + 1):
        turn = (sequence - 1) // 10 + 1
        if turn not in calls:
            calls[turn] = ProviderCallFactory.create(session=session, turn=turn)
        ToolInvocationFactory.create(
            session=session, turn=turn, sequence=sequence, call_id=f"c{sequence}"
        )
        if sequence % 5 == 0:
            PolicyDenialFactory.create(
                session=session, turn=turn, sequence=sequence, call_id=f"c{sequence}"
            )
            StateChangeFactory.create(
                session=session, turn=turn, sequence=sequence, call_id=f"c{sequence}"
            )
        if sequence % 10 == 0:
            CitationFactory.create(session=session, provider_call=calls[turn])
    VirtualFileFactory.create_batch(3, session=session)
    return session


def grow(session: AgentSession, tool_calls: int) -> None:
    """Append ``tool_calls`` more calls (and their rows) at the session's end."""
    last = session.tool_invocations.order_by("-sequence").first()
    start = last.sequence if last else 0
    for sequence in range(start + 1, start + tool_calls + 1):
        turn = (sequence - 1) // 10 + 1
        call = ProviderCall.objects.filter(session=session, turn=turn).first()
        if call is None:
            call = ProviderCallFactory.create(session=session, turn=turn)
        ToolInvocationFactory.create(
            session=session, turn=turn, sequence=sequence, call_id=f"c{sequence}"
        )
        if sequence % 5 == 0:
            PolicyDenialFactory.create(session=session, turn=turn, sequence=sequence)
            StateChangeFactory.create(session=session, turn=turn, sequence=sequence)
        if sequence % 10 == 0:
            CitationFactory.create(session=session, provider_call=call)


@pytest.fixture
def auditor_client(client, user):
    client.force_login(user)
    return client


PAGE = 5


@pytest.fixture
def small_pages(monkeypatch):
    """Pages of 5 rows, so a few sessions fill several."""
    from sessions_app.audit.pages import CitationListView, SessionListView
    from sessions_app.audit.pagination import CreatedAtCursorPagination

    monkeypatch.setattr(CreatedAtCursorPagination, "page_size", PAGE)
    monkeypatch.setattr(SessionListView, "page_size", PAGE)
    monkeypatch.setattr(CitationListView, "page_size", PAGE)


# -- lists: the same work at any table size ------------------------------------

LISTS = [
    "/audit/sessions/",
    "/audit/sessions/?status=succeeded",
    "/audit/sessions/?prompt_ref=demo/research",
    "/audit/sessions/?user=alice",
    "/audit/sessions/?created_at_after=2000-01-01T00:00:00Z",
    "/audit/citations/",
    "/audit/citations/?domain=example.org",
    "/api/sessions/",
    "/api/sessions/?status=succeeded",
    "/api/sessions/?prompt_ref=demo/research",
    "/api/sessions/?user=alice",
    "/api/sessions/?created_at_after=2000-01-01T00:00:00Z",
    "/api/tool-invocations/",
    "/api/tool-invocations/?name=web_search",
    "/api/tool-invocations/?native=false",
    "/api/citations/",
    "/api/citations/?domain=example.org",
]


@pytest.mark.parametrize("url", LISTS)
def test_a_list_page_costs_the_same_at_any_table_size(auditor_client, small_pages, url):
    alice = UserFactory.create(username="alice")
    sessions_with_rows(PAGE + 2, created_by=alice)
    path, _, query = url.partition("?")
    params = dict(part.split("=", 1) for part in query.split("&") if part)
    small = read(auditor_client, path, **params)

    sessions_with_rows(3 * PAGE, created_by=alice)  # older: on later pages
    large = read(auditor_client, path, **params)

    assert large.queries == small.queries, (small.sql, large.sql)
    assert large.rows == small.rows
    assert sum(large.rows.values()) <= 2 * (PAGE + 1)  # a page and its sessions


@pytest.mark.parametrize("path", ["/audit/sessions/", "/audit/citations/"])
def test_a_deep_html_page_costs_what_the_first_does(auditor_client, small_pages, path):
    sessions_with_rows(6 * PAGE)
    first = auditor_client.get(path)
    cursor = first.context["page"].older
    for _ in range(3):  # three pages further down
        cursor = auditor_client.get(path, {"after": cursor}).context["page"].older

    deep = read(auditor_client, path, after=cursor)
    top = read(auditor_client, path)

    assert deep.queries == top.queries
    assert deep.rows == top.rows


def test_session_lists_count_tool_calls_per_page_row_not_over_the_table(
    auditor_client,
):
    sessions_with_rows(30)

    for path in ("/audit/sessions/", "/api/sessions/"):
        found = read(auditor_client, path)
        (listing,) = [sql for sql in found.sql if "sessions_app_agentsession" in sql]
        # Correlated subqueries per row: no join of the audit tables, no
        # COUNT(DISTINCT ...), no COUNT(*) of the sessions for a page number.
        assert "JOIN" not in listing.split(" FROM ", 1)[0]
        assert "COUNT(DISTINCT" not in listing
        assert 'GROUP BY "sessions_app_agentsession"' not in listing
        assert not any(sql.startswith("SELECT COUNT(*)") for sql in found.sql), (
            found.sql
        )


def test_html_lists_never_count_the_table(auditor_client):
    sessions_with_rows(30)

    for path in ("/audit/sessions/", "/audit/citations/"):
        found = read(auditor_client, path)
        assert not any("COUNT(" in sql and "LIMIT" not in sql for sql in found.sql)


# -- a session: the same work for 30 events as for 600 -------------------------


def test_session_page_costs_the_same_for_a_long_session(auditor_client, monkeypatch):
    monkeypatch.setattr("sessions_app.audit.pages.TIMELINE_PAGE", 10)
    monkeypatch.setattr("sessions_app.audit.pages.SOURCES_SHOWN", 3)
    monkeypatch.setattr("sessions_app.audit.waterfall.MAX_BARS", 4)
    session = long_session(60)  # past every bound of the page
    short = read(auditor_client, session.get_absolute_url())
    # the page's (the waterfall reads values, at most MAX_BARS + 1 of each)
    assert short.rows["ToolInvocation"] <= 10
    assert short.rows["Citation"] == 3 + 1

    grow(session, 400)
    long = read(auditor_client, session.get_absolute_url())

    assert long.queries == short.queries
    assert long.rows == short.rows


def test_session_page_costs_the_same_with_unrelated_sessions(auditor_client):
    session = long_session(40)
    before = read(auditor_client, session.get_absolute_url())

    sessions_with_rows(40)
    after = read(auditor_client, session.get_absolute_url())

    assert after.queries == before.queries
    assert after.rows == before.rows


def test_session_page_later_pages_cost_what_the_first_does(auditor_client, monkeypatch):
    monkeypatch.setattr("sessions_app.audit.waterfall.MAX_BARS", 4)
    session = long_session(300)
    url = session.get_absolute_url()
    cursor = auditor_client.get(url).context["timeline_next"]
    for _ in range(3):
        cursor = auditor_client.get(url, {"after": cursor}).context["timeline_next"]

    later = read(auditor_client, url, after=cursor)
    first = read(auditor_client, url)

    assert later.queries == first.queries
    # A full page of events either way (of other kinds where it falls; the
    # waterfall reads values, no model instance).
    on_timeline = ("ProviderCall", "ToolInvocation", "PolicyDenial", "StateChange")
    for page in (first, later):
        assert sum(page.rows[kind] for kind in on_timeline) == TIMELINE_PAGE
    assert sum(later.rows.values()) == sum(first.rows.values())


@pytest.mark.parametrize(
    "suffix, query",
    [
        ("", {}),
        ("events/", {"page_size": 20}),
        ("tool-invocations/", {"page_size": 20}),
        ("provider-calls/", {"page_size": 5}),
    ],
)
def test_api_session_reads_cost_the_same_for_a_long_session(
    api_client, monkeypatch, suffix, query
):
    monkeypatch.setattr("sessions_app.audit.api.TRAIL_LIMIT", 5)
    session = long_session(60)  # past every bound: 6 turns, 6 citations
    url = f"/api/sessions/{session.pk}/{suffix}"
    short = read(api_client, url, **query)

    grow(session, 300)
    sessions_with_rows(20)  # and unrelated sessions
    long = read(api_client, url, **query)

    assert long.queries == short.queries
    assert long.rows == short.rows


def test_api_session_detail_holds_the_first_rows_and_names_the_longer_lists(
    api_client, monkeypatch, django_assert_num_queries
):
    monkeypatch.setattr("sessions_app.audit.api.TRAIL_LIMIT", 5)
    session = long_session(60)
    api_client.get(f"/api/sessions/{session.pk}/")

    # session, provider calls, tool calls, citations, denials, changes, files
    with django_assert_num_queries(7):
        data = api_client.get(f"/api/sessions/{session.pk}/").json()

    assert [t["sequence"] for t in data["tool_invocations"]] == [1, 2, 3, 4, 5]
    assert [c["turn"] for c in data["provider_calls"]] == [1, 2, 3, 4, 5]
    assert len(data["citations"]) == 5 and len(data["state_changes"]) == 5
    assert data["truncated"] == [
        "provider_calls",
        "tool_invocations",
        "citations",
        "policy_denials",
        "state_changes",
    ]


def test_api_session_detail_of_a_short_session_is_whole(api_client):
    session = long_session(12)

    data = api_client.get(f"/api/sessions/{session.pk}/").json()

    assert data["truncated"] == []
    assert len(data["tool_invocations"]) == 12
    assert len(data["files"]) == 3


def test_api_events_page_is_a_constant_number_of_queries(
    api_client, django_assert_num_queries
):
    session = long_session(200)
    url = f"/api/sessions/{session.pk}/events/"
    api_client.get(url)

    # the positions of each of the 7 kinds (quota decisions and approvals
    # too), then the rows of each on the page
    with django_assert_num_queries(13):  # and the session
        first = api_client.get(url, {"page_size": 30}).json()
    with django_assert_num_queries(13):
        api_client.get(first["next"])


# -- the timeline's keyset: every event once, in order --------------------------


def positions(session: AgentSession) -> list[tuple[str, int]]:
    page, _ = timeline.events_page(session, after=None, limit=10_000)
    return [(event.kind, event.row.pk) for event in page]


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_timeline_pages_hold_every_event_once_in_order(size):
    session = AgentSessionFactory.create()
    for turn in (1, 2, 3):
        call = ProviderCallFactory.create(session=session, turn=turn)
        CitationFactory.create_batch(2, session=session, provider_call=call)
    for sequence, turn in enumerate([1, 1, 2, 2, 2, 3], start=1):
        ToolInvocationFactory.create(session=session, turn=turn, sequence=sequence)
        # Two changes of one call (same position but for their id) and a
        # denial of another.
        StateChangeFactory.create_batch(
            2, session=session, turn=turn, sequence=sequence
        )
        if sequence % 2:
            PolicyDenialFactory.create(session=session, turn=turn, sequence=sequence)
    everything = positions(session)

    paged: list[tuple[str, int]] = []
    after = None
    while True:
        page, after = timeline.events_page(session, after=after, limit=size)
        assert len(page) <= size
        paged += [(event.kind, event.row.pk) for event in page]
        if after is None:
            break

    assert paged == everything
    assert len(everything) == 3 + 6 + 6 + 12 + 3
    kinds = [kind for kind, _ in everything]
    assert kinds[:4] == ["provider_call", "citation", "citation", "policy_denial"]


def test_timeline_cursor_survives_the_encoding():
    position = (3, 2, 4 * 17 + 1, 12345)

    assert timeline.decode_cursor(timeline.encode_cursor(position)) == position


# -- keyset pages of the HTML lists ------------------------------------------------


def test_html_pages_break_ties_of_created_at_by_id(auditor_client):
    moment = timezone.now()
    made = {s.pk for s in AgentSessionFactory.create_batch(60, created_at=moment)}

    seen = []
    page = auditor_client.get("/audit/sessions/").context
    seen += [s.pk for s in page["sessions"]]
    while page["page"].older:
        page = auditor_client.get(
            "/audit/sessions/", {"after": page["page"].older}
        ).context
        seen += [s.pk for s in page["sessions"]]

    assert len(seen) == len(made) and set(seen) == made
