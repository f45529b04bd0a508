"""Finding sessions (issue #28): text search over parameters, output and tool
arguments; prompt prefix, duration and cost filters; invalid filters shown on
the page as the API refuses them. Runs on SQLite and on PostgreSQL (with
``DATABASE_URL=postgres://...``: the trigram and duration indexes too)."""

import datetime
import io
import json
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app import services
from sessions_app.audit import plans
from sessions_app.audit.filters import AgentSessionFilterSet
from sessions_app.audit.plans import search_order
from sessions_app.models import AgentSession, SessionSearchText
from sessions_app.models.search import SEPARATOR, index_missing, tool_text
from sessions_app.runs import lifecycle
from sessions_app.templatetags.audit_tags import seconds
from tests.sessions_app.cursor_pages import listed_back, listed_ids
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ToolInvocationFactory,
    UserFactory,
)
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db

LIST_URL = "/audit/sessions/"
API_URL = "/api/sessions/"


def ended():
    """Write the search text of the sessions the factories made (a session
    writes its own when it is created and when it ends)."""
    index_missing()


def api_ids(client, **query):
    ended()
    response = client.get(API_URL, query)
    assert response.status_code == 200, response.content
    return {row["id"] for row in response.json()["results"]}


def page_ids(client, **query):
    ended()
    response = client.get(LIST_URL, query)
    assert response.status_code == 200, response.content
    return {str(session.pk) for session in response.context["sessions"]}


def ran(session_seconds, **fields):
    started = timezone.now() - datetime.timedelta(hours=1)
    return AgentSessionFactory.create(
        started_at=started,
        finished_at=started + datetime.timedelta(seconds=session_seconds),
        **fields,
    )


# Text search


@pytest.fixture(params=["index", "newest first"])
def search_plan(request, monkeypatch):
    """Both ways a search reads (``filter_search``): from the trigram indexes
    (PostgreSQL, few matches) and newest first (many matches; SQLite)."""
    if request.param == "index" and connection.vendor != "postgresql":
        pytest.skip("trigram indexes are PostgreSQL's (DATABASE_URL=postgres://...)")
    rows = 10**9 if request.param == "index" else -1
    monkeypatch.setattr(plans, "SEARCH_INDEX_ROWS", rows)
    return request.param


@pytest.mark.usefixtures("search_plan")
def test_a_word_in_a_tool_argument_finds_its_session(admin_client):
    wanted = AgentSessionFactory.create(output_text="Done.")
    ToolInvocationFactory.create(session=wanted, params={"path": "notes/a.md"})
    ToolInvocationFactory.create(
        session=wanted,
        params={"path": "reports/Quarterly-Kraken.md"},
        raw_arguments='{"path": "reports/Quarterly-Kraken.md"}',
    )
    other = AgentSessionFactory.create(output_text="Done.")
    ToolInvocationFactory.create(session=other, params={"path": "notes/b.md"})

    for word in ("kraken", "KRAKEN", "Quarterly-Kraken"):
        assert api_ids(admin_client, q=word) == {str(wanted.pk)}
        assert page_ids(admin_client, q=word) == {str(wanted.pk)}
    assert api_ids(admin_client, q="leviathan") == set()


@pytest.mark.usefixtures("search_plan")
def test_search_reads_unparsed_raw_arguments_and_native_calls(admin_client):
    unparsed = AgentSessionFactory.create()
    ToolInvocationFactory.create(
        session=unparsed, params=None, raw_arguments='{"path": "walrus.txt"'
    )
    searched = AgentSessionFactory.create()
    ToolInvocationFactory.create(
        session=searched,
        web_search=True,
        params={"action": "search", "query": "narwhal tusks"},
    )
    AgentSessionFactory.create()

    assert api_ids(admin_client, q="walrus") == {str(unparsed.pk)}
    assert api_ids(admin_client, q="narwhal tusks") == {str(searched.pk)}


@pytest.mark.usefixtures("search_plan")
def test_search_reads_parameters_and_output_once_per_session(admin_client):
    by_params = AgentSessionFactory.create(params={"topic": "Zeppelins"})
    by_output = AgentSessionFactory.create(output_text="All about zeppelins.")
    both = AgentSessionFactory.create(
        params={"topic": "zeppelins"}, output_text="zeppelins"
    )
    ToolInvocationFactory.create(session=both, params={"q": "zeppelins"})
    ToolInvocationFactory.create(session=both, params={"q": "more zeppelins"})
    AgentSessionFactory.create(params={"topic": "tides"}, output_text="Tides.")
    ended()

    response = admin_client.get(API_URL, {"q": "zeppelin"})

    ids = [row["id"] for row in response.json()["results"]]
    assert sorted(ids) == sorted(str(s.pk) for s in (by_params, by_output, both))


@pytest.mark.usefixtures("search_plan")
def test_search_matches_text_literally_not_as_a_pattern(admin_client):
    AgentSessionFactory.create(output_text="discount of 50 percent")
    literal = AgentSessionFactory.create(output_text="discount of 50% off")

    assert api_ids(admin_client, q="50%") == {str(literal.pk)}
    assert api_ids(admin_client, q="f_5") == set()


@pytest.mark.usefixtures("search_plan")
def test_search_keeps_to_the_sessions_a_user_may_see(client):
    alice = UserFactory.create(username="alice")
    mine = AgentSessionFactory.create(created_by=alice)
    ToolInvocationFactory.create(session=mine, params={"path": "secret-plan.md"})
    theirs = AgentSessionFactory.create(created_by=UserFactory.create())
    ToolInvocationFactory.create(session=theirs, params={"path": "secret-plan.md"})
    client.force_login(alice)

    assert api_ids(client, q="secret-plan") == {str(mine.pk)}
    assert page_ids(client, q="secret-plan") == {str(mine.pk)}


@pytest.mark.usefixtures("search_plan")
def test_search_pages_newest_first(admin_client):
    sessions = [
        AgentSessionFactory.create(
            created_at=timezone.now() - datetime.timedelta(minutes=n),
            output_text="gannet",
        )
        for n in range(30)
    ]
    AgentSessionFactory.create(output_text="puffin")
    ended()

    first = admin_client.get(LIST_URL, {"q": "gannet"})
    second = admin_client.get(
        LIST_URL, {"q": "gannet", "after": first.context["page"].older}
    )

    shown = [s.pk for s in first.context["sessions"]] + [
        s.pk for s in second.context["sessions"]
    ]
    assert shown == [s.pk for s in sessions]
    back = admin_client.get(
        LIST_URL, {"q": "gannet", "before": second.context["page"].newer}
    )
    assert [s.pk for s in back.context["sessions"]] == shown[:25]

    # the API's cursor pages too, newest first, each session once
    listed = listed_ids(admin_client, API_URL, {"q": "gannet", "page_size": 7})
    assert listed == [str(s.pk) for s in sessions]


@pytest.mark.usefixtures("search_plan")
def test_search_pages_sessions_sharing_a_time_in_one_order(admin_client):
    """Sessions created in the same microsecond keep one order, by key, on
    every page, forwards and back, also when more share a time than a page
    holds (both paginations order by ``(created_at, pk)`` and seek past a
    page's last pair)."""
    now = timezone.now()
    sessions = [
        AgentSessionFactory.create(
            created_at=now - datetime.timedelta(minutes=n // 6), output_text="gannet"
        )
        for n in range(40)
    ]
    AgentSessionFactory.create(created_at=now, output_text="puffin")
    ended()
    expected = [
        s.pk for s in sorted(sessions, key=lambda s: (s.created_at, s.pk), reverse=True)
    ]

    pages = [admin_client.get(LIST_URL, {"q": "gannet"}).context]
    while pages[-1]["page"].older:
        older = {"q": "gannet", "after": pages[-1]["page"].older}
        pages.append(admin_client.get(LIST_URL, older).context)
    assert [s.pk for page in pages for s in page["sessions"]] == expected
    assert len(pages) == 2  # 25 and 15: the 25th shares its time with 5 more
    back = {"q": "gannet", "before": pages[-1]["page"].newer}
    assert [s.pk for s in admin_client.get(LIST_URL, back).context["sessions"]] == (
        expected[:25]
    )

    for size in (4, 5):  # pages that end inside a time's six rows or span it
        query = {"q": "gannet", "page_size": size}
        assert listed_ids(admin_client, API_URL, query) == [str(pk) for pk in expected]
        assert listed_back(admin_client, API_URL, query) == [str(pk) for pk in expected]


@pytest.mark.usefixtures("search_plan")
def test_a_session_in_flight_is_found_by_its_rows(admin_client):
    running = AgentSessionFactory.create(status=AgentSession.Status.RUNNING)
    ToolInvocationFactory.create(session=running, params={"path": "Albatross.md"})
    waiting = AgentSessionFactory.create(
        status=AgentSession.Status.AWAITING_APPROVAL, params={"bird": "albatross"}
    )
    queued = AgentSessionFactory.create(
        status=AgentSession.Status.QUEUED, params={"bird": "petrel"}
    )

    assert api_ids(admin_client, q="ALBATROSS") == {
        str(running.pk),
        str(waiting.pk),
    }
    assert page_ids(admin_client, q="petrel") == {str(queued.pk)}
    texts = SessionSearchText.objects.filter(session__in=[running, waiting, queued])
    assert [text.ended for text in texts] == [False] * 3  # their parameters only
    assert "albatross" not in SessionSearchText.objects.get(session=running).text


def test_a_session_writes_its_search_text_when_it_ends(
    admin_client, django_capture_on_commit_callbacks
):
    session = AgentSessionFactory.create(
        status=AgentSession.Status.QUEUED, params={"city": "Straße 7"}
    )
    ToolInvocationFactory.create(session=session, params={"path": "Kittiwake.md"})
    assert api_ids(admin_client, q="kittiwake") == {str(session.pk)}  # in flight

    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.cancel_queued(session.pk, user=None, now=timezone.now())

    text = SessionSearchText.objects.get(session=session).text
    assert "kittiwake.md" in text and "strasse 7" in text  # case-folded
    assert api_ids(admin_client, q="KITTIWAKE") == {str(session.pk)}
    assert api_ids(admin_client, q="STRASSE") == {str(session.pk)}
    assert api_ids(admin_client, q="straße") == {str(session.pk)}


@pytest.mark.usefixtures("search_plan")
def test_a_search_does_not_match_across_two_calls(admin_client):
    session = AgentSessionFactory.create(params={}, output_text="")
    ToolInvocationFactory.create(session=session, params=None, raw_arguments="puf")
    ToolInvocationFactory.create(session=session, params=None, raw_arguments="fin")

    assert api_ids(admin_client, q="puf") == {str(session.pk)}
    assert api_ids(admin_client, q="puffin") == set()
    # nor when the search holds the separator itself (U+001E inside it: the
    # form strips it only from the ends)
    assert api_ids(admin_client, q=f"puf{SEPARATOR}fin") == set()
    assert api_ids(admin_client, q="puf\x1efin") == set()


@pytest.mark.usefixtures("search_plan")
def test_a_record_separator_inside_a_text_is_still_found(admin_client):
    session = AgentSessionFactory.create(params={}, output_text="skua\x1egull")

    assert api_ids(admin_client, q="skua\x1egull") == {str(session.pk)}


@pytest.mark.usefixtures("search_plan")
def test_text_holding_quotes_backslashes_or_tabs_is_found_as_typed(admin_client):
    """JSON escapes them (``said \\"hello\\"``): the search text holds the
    parameters and arguments as they read (found by a hostile review)."""
    quoted = AgentSessionFactory.create(params={"question": 'He said "hello world"'})
    path = AgentSessionFactory.create()
    ToolInvocationFactory.create(session=path, params={"file": "C:\\temp\\zebra.txt"})
    tabbed = AgentSessionFactory.create(params={"note": "line one\tTABBED"})
    AgentSessionFactory.create(params={"question": "hello world"})

    assert api_ids(admin_client, q='said "hello world"') == {str(quoted.pk)}
    assert page_ids(admin_client, q='said "hello world"') == {str(quoted.pk)}
    assert api_ids(admin_client, q="C:\\temp\\zebra") == {str(path.pk)}
    assert api_ids(admin_client, q="one\ttabbed") == {str(tabbed.pk)}
    # JSON's own shape still matches: a key and its value
    assert api_ids(admin_client, q='"file": "c:') == {str(path.pk)}


def test_readable_json_is_json_but_for_its_strings_escapes():
    from sessions_app.models.search import readable_json

    value = {"a": [1, 2.5, True, None, {"b": 'x"y\\z\n'}], "é": "ü\x00"}
    assert readable_json(value) == (
        '{"a": [1, 2.5, true, null, {"b": "x"y\\z\n"}], "é": "ü\ufffd"}'
    )
    assert readable_json({"k": "plain"}) == json.dumps({"k": "plain"})


def test_index_sessions_all_rewrites_every_text_as_this_version_writes_it(
    admin_client,
):
    old = AgentSessionFactory.create(params={"question": 'He said "hi"'})
    waiting = AgentSessionFactory.create(
        status=AgentSession.Status.AWAITING_APPROVAL,
        params={"question": 'She said "hi"'},
    )
    ended()
    # as a version before readable_json wrote them
    SessionSearchText.objects.filter(session=old).update(
        text='{"question": "he said \\"hi\\""}'
    )
    SessionSearchText.objects.filter(session=waiting).update(
        text='{"question": "she said \\"hi\\""}'
    )
    assert api_ids(admin_client, q='said "hi"') == set()
    out = io.StringIO()

    call_command("index_sessions", "--all", stdout=out)

    assert out.getvalue().strip() == "Wrote the search text of 2 session(s)."
    assert api_ids(admin_client, q='said "hi"') == {str(old.pk), str(waiting.pk)}
    assert not SessionSearchText.objects.get(session=waiting).ended


def test_index_sessions_writes_the_missing_texts_once(admin_client):
    old = AgentSessionFactory.create(output_text="Cormorant")
    ToolInvocationFactory.create(session=old, params={"bird": "shag"})
    running = AgentSessionFactory.create(
        status=AgentSession.Status.RUNNING, params={"bird": "gull"}
    )
    ToolInvocationFactory.create(session=running, params={"bird": "tern"})
    out = io.StringIO()

    call_command("index_sessions", stdout=out)
    call_command("index_sessions", stdout=out)

    assert out.getvalue().splitlines() == [
        "Wrote the search text of 2 session(s).",
        "Wrote the search text of 0 session(s).",
    ]
    texts = {text.session: text for text in SessionSearchText.objects.all()}
    assert texts[old].ended and "shag" in texts[old].text
    assert "cormorant" in texts[old].text
    assert not texts[running].ended and texts[running].text == '{"bird": "gull"}'
    assert texts[old].created_at == old.created_at


# Filters


def test_prompt_prefix_filter(admin_client):
    triage = AgentSessionFactory.create(prompt_ref="support/triage")
    refund = AgentSessionFactory.create(prompt_ref="support/refund")
    AgentSessionFactory.create(prompt_ref="ops/support")

    assert api_ids(admin_client, prompt="support/") == {str(triage.pk), str(refund.pk)}
    assert page_ids(admin_client, prompt="support/t") == {str(triage.pk)}
    # the exact filter stays exact
    assert api_ids(admin_client, prompt_ref="support/") == set()


def test_duration_filters(admin_client):
    quick = ran(2)
    slow = ran(90)
    AgentSessionFactory.create(started_at=timezone.now(), finished_at=None)

    assert api_ids(admin_client, duration_min="60") == {str(slow.pk)}
    assert api_ids(admin_client, duration_max="2.5") == {str(quick.pk)}
    assert page_ids(admin_client, duration_min="1", duration_max="100") == {
        str(quick.pk),
        str(slow.pk),
    }


def test_cost_filters(admin_client):
    cheap = AgentSessionFactory.create(cost=Decimal("0.001"))
    dear = AgentSessionFactory.create(cost=Decimal("2.5"))

    assert api_ids(admin_client, cost_min="1") == {str(dear.pk)}
    assert page_ids(admin_client, cost_max="0.01") == {str(cheap.pk)}


def test_the_largest_cost_the_box_offers_is_accepted(admin_client):
    """The box says ``max="100000000"``; that value is taken (it was refused
    for its nine digits before the point), one more is not."""
    cheap = AgentSessionFactory.create(cost=Decimal("0.001"))
    html = admin_client.get(LIST_URL).content.decode()
    assert 'name="cost_max"' in html and 'max="100000000"' in html

    assert api_ids(admin_client, cost_max="100000000") == {str(cheap.pk)}
    response = admin_client.get(API_URL, {"cost_max": "100000001"})
    assert response.status_code == 400
    assert response.json()["errors"]["cost_max"] == [
        "Ensure this value is less than or equal to 100000000."
    ]


# Invalid filters


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"created_at_after": "yesterday"}, "created_at_after"),
        ({"created_at_before": "2026-13-45"}, "created_at_before"),
        ({"q": "ab"}, "q"),
        ({"duration_min": "soon"}, "duration_min"),
        ({"duration_max": "-1"}, "duration_max"),
        ({"cost_min": "NaN"}, "cost_min"),
        ({"status": "sleeping"}, "status"),
        ({"revision": "abc"}, "revision"),
    ],
    ids=str,
)
def test_invalid_filters_are_errors_on_the_page_as_in_the_api(
    admin_client, query, field
):
    AgentSessionFactory.create()

    api = admin_client.get(API_URL, query)
    page = admin_client.get(LIST_URL, query)

    assert api.status_code == 400
    assert page.status_code == 400
    assert page.context["filter"].form.errors.keys() == api.json()["errors"].keys()
    html = page.content.decode()
    assert "These filters are not valid" in html
    assert f"<code>{field}</code>" in html
    assert "No sessions yet" not in html


def test_no_match_says_so(admin_client):
    AgentSessionFactory.create()

    html = admin_client.get(LIST_URL, {"q": "nothing-like-this"}).content.decode()

    assert "No sessions match these filters." in html


# Columns and form


def test_list_shows_user_and_duration_without_a_query_per_row(
    admin_client, django_assert_max_num_queries
):
    alice = UserFactory.create(username="alice")
    for n in range(5):
        ran(n * 30 + 1.5, created_by=alice)
    AgentSessionFactory.create(created_by=None)
    admin_client.get(LIST_URL)  # warm caches (session, permissions)

    with django_assert_max_num_queries(6):
        response = admin_client.get(LIST_URL)

    html = response.content.decode()
    assert "<th>User</th>" in html and '<th class="num">Duration</th>' in html
    assert "<td>alice</td>" in html
    assert "1.50 s" in html and "2 min 01 s" in html
    rows = response.context["sessions"]
    assert {row.created_by_username for row in rows} == {"alice", None}


def test_the_api_list_gives_the_user_and_the_duration(
    api_client, django_assert_max_num_queries
):
    alice = UserFactory.create(username="alice")
    done = ran(90.25, created_by=alice)
    waiting = AgentSessionFactory.create(created_by=None)
    api_client.get(API_URL)  # warm

    with django_assert_max_num_queries(6):
        rows = {row["id"]: row for row in api_client.get(API_URL).json()["results"]}

    assert rows[str(done.pk)]["created_by"] == "alice"
    assert rows[str(done.pk)]["duration_seconds"] == 90.25
    assert rows[str(waiting.pk)]["created_by"] is None
    assert rows[str(waiting.pk)]["duration_seconds"] is None


def test_the_user_filter_takes_any_case(admin_client, api_client):
    alice = UserFactory.create(username="alice")
    mine = AgentSessionFactory.create(created_by=alice)
    AgentSessionFactory.create(created_by=UserFactory.create(username="alicia"))
    assert page_ids(admin_client, user="ALICE") == {str(mine.pk)}
    assert api_ids(api_client, user="Alice") == {str(mine.pk)}
    assert page_ids(admin_client, user="nobody") == set()
    # every letter, not ASCII's only (SQLite's LIKE folded those alone)
    elodie = AgentSessionFactory.create(
        created_by=UserFactory.create(username="élodie")
    )
    assert api_ids(api_client, user="ÉLODIE") == {str(elodie.pk)}
    assert page_ids(admin_client, user="Élodie") == {str(elodie.pk)}
    assert page_ids(admin_client, user="elodie") == set()


def test_the_user_filter_takes_the_exact_name_first(admin_client, api_client):
    """With "u2" and "U2", the cost report's link to each one's sessions
    listed both users' (found by hostile QA): a name typed exactly is that
    user; without one, any case finds every account it folds to."""
    lower = AgentSessionFactory.create(created_by=UserFactory.create(username="u2"))
    upper = AgentSessionFactory.create(created_by=UserFactory.create(username="U2"))
    assert api_ids(api_client, user="u2") == {str(lower.pk)}
    assert page_ids(admin_client, user="U2") == {str(upper.pk)}
    one = AgentSessionFactory.create(created_by=UserFactory.create(username="Ab"))
    other = AgentSessionFactory.create(created_by=UserFactory.create(username="aB"))
    assert api_ids(api_client, user="ab") == {str(one.pk), str(other.pk)}


def test_date_boxes_are_pickers_with_a_format_hint(admin_client):
    html = admin_client.get(LIST_URL).content.decode()

    assert html.count('type="datetime-local"') == 2
    assert 'name="created_at_after"' in html and 'name="created_at_before"' in html
    assert "UTC, e.g. 2026-11-20T09:30" in html


def test_a_picker_value_filters(admin_client):
    """What ``<input type=datetime-local>`` sends (no seconds, no offset) is
    read in UTC."""
    old = AgentSessionFactory.create(
        created_at=datetime.datetime(2026, 1, 1, 9, 0, tzinfo=datetime.UTC)
    )
    AgentSessionFactory.create(
        created_at=datetime.datetime(2026, 3, 1, 9, 0, tzinfo=datetime.UTC)
    )

    ids = page_ids(admin_client, created_at_before="2026-01-01T09:30")

    assert ids == {str(old.pk)}


@pytest.mark.parametrize(
    ("delta", "shown"),
    [
        (datetime.timedelta(milliseconds=420), "0.42 s"),
        (datetime.timedelta(seconds=12.34), "12.3 s"),
        (datetime.timedelta(seconds=245), "4 min 05 s"),
        (datetime.timedelta(hours=2, minutes=3, seconds=4), "2 h 03 min"),
        (None, ""),
    ],
)
def test_durations_read_as_people_say_them(delta, shown):
    assert seconds(delta) == shown


# PostgreSQL: the indexes the filters read


def test_postgresql_reads_search_and_duration_from_their_indexes():
    if connection.vendor != "postgresql":
        pytest.skip("trigram indexes are PostgreSQL's (DATABASE_URL=postgres://...)")
    session = AgentSessionFactory.create()
    ToolInvocationFactory.create(session=session, params={"path": "kraken.md"})
    ended()

    def plan(query):
        filterset = AgentSessionFilterSet(
            QueryDict(query), queryset=AgentSession.objects.summaries()
        )
        assert filterset.is_valid(), filterset.errors
        rows = filterset.qs
        with connection.cursor() as cursor:  # a tiny table: make indexes win
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_indexscan = off")  # bitmaps
            return rows.order_by(f"-{search_order(rows)}")[:26].explain()

    # few rows expected: from the index, sorted by the texts' copy of the
    # creation time before a session is read
    search = plan("q=kraken")
    assert "session_search_text_trgm" in search
    assert "Sort Key: sessions_app_sessionsearchtext.created_at DESC" in search
    assert "session_duration" in plan("duration_min=5")
    assert "session_cost" in plan("cost_min=5")
    assert (
        AgentSessionFilterSet(
            QueryDict("q=KRAKEN"), queryset=AgentSession.objects.all()
        ).qs.get()
        == session
    )


def test_postgresql_reads_only_the_pages_sessions_of_a_search_from_the_index():
    """The matching texts are sorted before a session is read (the view's
    subquery, ``SearchTextByTime``), so a page of 10 of 40 matches reads 11
    sessions, not 40; a session in flight whose tool call matches is named in
    that subquery too."""
    if connection.vendor != "postgresql":
        pytest.skip("trigram indexes are PostgreSQL's (DATABASE_URL=postgres://...)")
    matches = [
        AgentSessionFactory.create(
            created_at=timezone.now() - datetime.timedelta(minutes=n),
            output_text=f"kraken sighting {n}",
        )
        for n in range(1, 40)
    ]
    AgentSessionFactory.create_batch(20, output_text="nothing here")
    running = AgentSessionFactory.create(status=AgentSession.Status.RUNNING)
    ToolInvocationFactory.create(session=running, params={"path": "Kraken.md"})
    ended()
    filterset = AgentSessionFilterSet(
        QueryDict("q=kraken"), queryset=AgentSession.objects.summaries()
    )
    rows = filterset.qs.order_by(f"-{search_order(filterset.qs)}")[:11]

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # tiny tables
        plan = json.loads(rows.explain(analyze=True, format="json"))[0]["Plan"]
        assert [row.pk for row in rows] == [running.pk] + [s.pk for s in matches[:10]]

    def nodes(node):
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    sessions_read = [
        node
        for node in nodes(plan)
        if node.get("Relation Name") == "sessions_app_agentsession"
        and node.get("Alias") == "sessions_app_agentsession"
    ]
    assert sessions_read, plan
    assert sum(n["Actual Rows"] * n["Actual Loops"] for n in sessions_read) <= 11
    texts = [
        node
        for node in nodes(plan)
        if node.get("Relation Name") == "sessions_app_sessionsearchtext"
        and node["Node Type"] == "Bitmap Heap Scan"
    ]
    assert len(texts) == 1 and "ANY" in texts[0]["Recheck Cond"], plan


def seqscan_setting():
    with connection.cursor() as cursor:
        cursor.execute("SHOW enable_seqscan")
        return cursor.fetchone()[0]


def test_a_search_read_from_the_index_is_read_without_a_scan_of_every_text(
    admin_client,
):
    """PostgreSQL prices LIKE as one operator: from about 8,000 expected
    matches it would read every text instead of the trigram index (130-190
    ms against 35 at 100,000 sessions). The list and the page read a search
    that chose the index with sequential scans off, for that read only."""
    if connection.vendor != "postgresql":
        pytest.skip("trigram indexes are PostgreSQL's (DATABASE_URL=postgres://...)")
    session = AgentSessionFactory.create()
    ToolInvocationFactory.create(session=session, params={"path": "kraken.md"})
    ended()
    setting = "SET LOCAL enable_seqscan = off"
    for url in (API_URL, LIST_URL):
        with CaptureQueriesContext(connection) as searched:
            response = admin_client.get(url, {"q": "kraken"})
        assert response.status_code == 200
        assert str(session.pk) in response.content.decode()
        sql = [query["sql"] for query in searched.captured_queries]
        read = next(
            n for n, text in enumerate(sql) if "sessions_app_agentsession" in text
        )
        assert setting in sql[:read], sql  # before the list is read

        with CaptureQueriesContext(connection) as plain:
            assert admin_client.get(url).status_code == 200
        assert setting not in [query["sql"] for query in plain.captured_queries]


@pytest.mark.django_db(transaction=True)
def test_the_index_plan_holds_for_its_read_only():
    if connection.vendor != "postgresql":
        pytest.skip("trigram indexes are PostgreSQL's (DATABASE_URL=postgres://...)")
    AgentSessionFactory.create()
    ended()

    def searched(query):
        return AgentSessionFilterSet(
            QueryDict(query), queryset=AgentSession.objects.summaries()
        ).qs

    assert seqscan_setting() == "on"
    with plans.search_index_plan(searched("q=kraken")):
        assert seqscan_setting() == "off"
    assert seqscan_setting() == "on"  # its transaction ended
    with plans.search_index_plan(searched("status=failed")):
        assert seqscan_setting() == "on"  # not a search: read as it is
    with (  # an error ends it too
        pytest.raises(LookupError),
        plans.search_index_plan(searched("q=kraken")),
    ):
        raise LookupError("the read failed")
    assert seqscan_setting() == "on"


def test_a_run_that_ends_writes_its_search_text_with_its_calls(
    admin_client, settings, django_capture_on_commit_callbacks
):
    settings.WINK_PROVIDER = "offline"
    seed_demo_catalog()
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref="demo/notes")
    assert session.status == AgentSession.Status.SUCCEEDED

    text = SessionSearchText.objects.get(session=session).text
    calls = list(session.tool_invocations.values_list("params", flat=True))
    assert calls
    for params in calls:
        assert tool_text(params, "").casefold() in text
    assert session.output_text.casefold() in text
    response = admin_client.get(API_URL, {"q": tool_text(calls[-1], "")[:40]})
    assert [row["id"] for row in response.json()["results"]] == [str(session.pk)]


def test_index_missing_writes_every_text_batch_after_batch():
    sessions = AgentSessionFactory.create_batch(5)
    ToolInvocationFactory.create(session=sessions[3], params={"bird": "auk"})

    assert index_missing(batch=2) == 5
    assert index_missing(batch=2) == 0
    assert SessionSearchText.objects.count() == 5
    assert "auk" in SessionSearchText.objects.get(session=sessions[3]).text


def test_index_missing_completes_a_text_an_older_process_left_unended():
    session = AgentSessionFactory.create(
        status=AgentSession.Status.QUEUED, params={"bird": "skua"}
    )
    index_missing()  # its parameters, as when it was created
    ToolInvocationFactory.create(session=session, params={"bird": "fulmar"})
    # ended by a process that does not write search texts
    AgentSession.objects.filter(pk=session.pk).update(
        status=AgentSession.Status.SUCCEEDED
    )

    assert index_missing() == 1
    text = SessionSearchText.objects.get(session=session)
    assert text.ended and "fulmar" in text.text and "skua" in text.text
    assert index_missing() == 0
