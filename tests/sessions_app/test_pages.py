import base64
import json
from urllib.parse import urlencode

import factory
import pytest
from django.urls import reverse

from sessions_app.audit.pages import TIMELINE_PAGE
from sessions_app.models import AgentSession, Citation
from sessions_app.templatetags.audit_tags import highlight_citations, safe_link
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

LIST_URL = "/audit/sessions/"
CITATIONS_URL = "/audit/citations/"


@pytest.fixture
def client_logged_in(client, user):
    client.force_login(user)
    return client


def content(response):
    return response.content.decode()


# Access


@pytest.mark.parametrize(
    "url", [LIST_URL, CITATIONS_URL, "/audit/sessions/{pk}/"], ids=str
)
def test_pages_redirect_anonymous_users_to_the_login_page(client, url):
    session = AgentSessionFactory.create()

    response = client.get(url.format(pk=session.pk))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=/audit/")


def test_an_ordinary_account_logs_in_with_the_form_and_sees_its_own_sessions(client):
    """Not staff: the admin's login would refuse this account."""
    alice = UserFactory.create(username="alice", is_staff=False, password="pw-alice")
    mine = AgentSessionFactory.create(created_by=alice, prompt_ref="ops/mine")
    theirs = AgentSessionFactory.create(prompt_ref="ops/theirs")
    form = client.get(f"{reverse('login')}?next={LIST_URL}")
    assert form.status_code == 200 and 'name="password"' in form.content.decode()

    response = client.post(
        reverse("login"),
        {"username": "alice", "password": "pw-alice", "next": LIST_URL},
    )

    assert response.status_code == 302 and response["Location"] == LIST_URL
    page = client.get(LIST_URL).content.decode()
    assert "ops/mine" in page and "ops/theirs" not in page
    assert client.get(mine.get_absolute_url()).status_code == 200
    assert client.get(theirs.get_absolute_url()).status_code == 404
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(LIST_URL).status_code == 302


def test_a_wrong_password_is_refused_on_the_login_page(client):
    UserFactory.create(username="bob")
    response = client.post(reverse("login"), {"username": "bob", "password": "no"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_pages_are_open_to_non_staff_users(client_logged_in):
    assert client_logged_in.get(LIST_URL).status_code == 200


def test_root_redirects_to_the_session_list(client):
    response = client.get("/")

    assert response.status_code == 302
    assert response["Location"] == LIST_URL


def test_url_names():
    session = AgentSessionFactory.create()
    assert reverse("sessions_app:session-list") == LIST_URL
    assert reverse("sessions_app:citation-list") == CITATIONS_URL
    assert session.get_absolute_url() == f"/audit/sessions/{session.pk}/"


# Session list


def test_session_list_shows_sessions_with_counts(admin_client):
    session = AgentSessionFactory.create(prompt_ref="support/triage", model="gpt-test")
    ToolInvocationFactory.create_batch(3, session=session)
    CitationFactory.create_batch(2, session=session)

    response = admin_client.get(LIST_URL)

    html = content(response)
    assert "support/triage" in html
    assert "gpt-test" in html
    assert session.get_absolute_url() in html
    row = response.context["sessions"][0]
    assert (row.tool_call_count, row.citation_count) == (3, 2)


def test_session_list_filters_by_status(admin_client):
    AgentSessionFactory.create(
        prompt_ref="ok/one", status=AgentSession.Status.SUCCEEDED
    )
    AgentSessionFactory.create(prompt_ref="bad/one", status=AgentSession.Status.FAILED)

    html = content(admin_client.get(LIST_URL, {"status": "failed"}))

    assert "bad/one" in html
    assert "ok/one" not in html


def test_session_list_pages_newest_first_by_25(admin_client):
    AgentSessionFactory.create_batch(26)

    first = admin_client.get(LIST_URL)
    older = first.context["page"].older
    second = admin_client.get(LIST_URL, {"after": older})
    back = admin_client.get(LIST_URL, {"before": second.context["page"].newer})

    assert len(first.context["sessions"]) == 25
    assert f"after={older}" in content(first) and "Page " not in content(first)
    assert len(second.context["sessions"]) == 1
    assert second.context["page"].older is None
    assert [s.pk for s in back.context["sessions"]] == [
        s.pk for s in first.context["sessions"]
    ]


def test_session_list_pages_keep_the_filters(admin_client):
    AgentSessionFactory.create_batch(26, status=AgentSession.Status.FAILED)

    html = content(admin_client.get(LIST_URL, {"status": "failed"}))

    assert "?status=failed&amp;after=" in html


# Cursors no page gave out, hostile ones too: nested deeper than Python's JSON
# decoder goes (it raised RecursionError: a 500), a megabyte, NUL, not ASCII.
NESTED = base64.urlsafe_b64encode(b"[" * 100_000).decode().rstrip("=")
# ... and a time past the last datetime there is, in UTC (an OverflowError).
PAST_THE_END = (
    base64.urlsafe_b64encode(
        b'["9999-12-31T23:59:59-15:00","4d3c0f9e-b376-4e4d-a758-f3c6bffc1cec"]'
    )
    .decode()
    .rstrip("=")
)
HOSTILE_CURSORS = [
    NESTED,
    NESTED[:500],
    "A" * 1_000_000,
    "WzEs\x00",
    "Wz\u00e9",
    PAST_THE_END,
]


def test_session_list_refuses_a_cursor_it_did_not_give_out(admin_client):
    for cursor in ["nope", "WzEsMiwzXQ", "WyJ4IiwieSJd", *HOSTILE_CURSORS]:
        assert admin_client.get(LIST_URL, {"after": cursor}).status_code == 404
        assert admin_client.get(LIST_URL, {"before": cursor}).status_code == 404


def test_every_keyset_page_refuses_a_time_past_the_last_there_is(admin_client):
    for url, key in (
        ("/audit/citations/", "1"),
        ("/audit/revisions/", "a" * 64),
    ):
        for moment in ("9999-12-31T23:59:59-15:00", "0001-01-01T00:00:00+15:00"):
            raw = json.dumps([moment, key]).encode()
            cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
            for direction in ("after", "before"):
                response = admin_client.get(url, {direction: cursor})
                assert response.status_code == 404, (url, moment, direction)


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("/audit/citations/", " 1"),
        ("/audit/citations/", "\u0661"),  # an Arabic-Indic 1
        ("/audit/citations/", "01"),
        ("/audit/citations/", "9" * 23),
        ("/audit/revisions/", "1\x00"),  # PostgreSQL refuses a NUL: was a 500
        ("/audit/revisions/", "a" * 300),
        ("/api/citations/", " 1"),
        ("/api/tool-invocations/", "9" * 23),
        ("/api/revisions/", "a\x00b"),
    ],
)
def test_a_keyset_cursor_holds_a_key_as_it_was_given_out(admin_client, url, key):
    """A key is written by ``str(pk)``: any other spelling of a number, a
    value past the key's range or length, or a NUL was not given out."""
    raw = json.dumps(["2026-01-01T00:00:00+00:00", key]).encode()
    position = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    if url.startswith("/api/"):
        query = {"cursor": base64.b64encode(urlencode({"p": position}).encode())}
        response = admin_client.get(url, query)
        assert response.status_code == 404, (url, key, response.content[:200])
        return
    for direction in ("after", "before"):
        response = admin_client.get(url, {direction: position})
        assert response.status_code == 404, (url, key, direction)


@pytest.mark.parametrize("count", [1, 8])
def test_session_list_query_count_is_constant(
    client_logged_in, django_assert_num_queries, count
):
    for _ in range(count):
        session = AgentSessionFactory.create()
        ToolInvocationFactory.create_batch(2, session=session)
        CitationFactory.create(session=session)

    # auth session + user, the page (counts are subqueries): no COUNT(*)
    with django_assert_num_queries(5):  # two: the permission lookup
        client_logged_in.get(LIST_URL)


# Session detail


def test_session_detail_shows_the_header_and_prompt(admin_client):
    session = AgentSessionFactory.create(
        status=AgentSession.Status.FAILED,
        error_phase="request",
        error_message="Rate limited",
        rendered_prompt="# Role\n\nYou are <helpful>.",
        request_options={"tool_choice": "required"},
        tools_payload=[{"type": "web_search"}],
        usage={"input_tokens": 1234},
    )

    html = content(admin_client.get(session.get_absolute_url()))

    assert "Rate limited" in html
    assert "[request]" in html
    assert "You are &lt;helpful&gt;." in html
    assert "&quot;tool_choice&quot;: &quot;required&quot;" in html
    assert "&quot;type&quot;: &quot;web_search&quot;" in html
    assert "input_tokens: 1234" in html


def test_session_detail_unknown_session_is_404(admin_client):
    assert admin_client.get("/audit/sessions/not-a-uuid/").status_code == 404
    assert (
        admin_client.get(
            "/audit/sessions/00000000-0000-0000-0000-000000000000/"
        ).status_code
        == 404
    )


def test_session_detail_marks_native_and_failed_tool_calls(admin_client):
    session = AgentSessionFactory.create()
    ToolInvocationFactory.create(session=session, web_search=True)
    ToolInvocationFactory.create(
        session=session, name="write_file", success=False, message="Disk is full."
    )

    html = content(admin_client.get(session.get_absolute_url()))

    assert "native · web_search" in html
    assert 'class="tool-invocation failed"' in html
    assert "Disk is full." in html


def test_session_detail_renders_plan_steps(admin_client):
    session = AgentSessionFactory.create()
    StateChangeFactory.create(session=session)

    html = content(admin_client.get(session.get_absolute_url()))

    assert "Objective: Explain tides" in html
    assert "Search sources" in html
    assert "Write the answer" in html


def test_session_detail_lists_virtual_files(admin_client):
    session = AgentSessionFactory.create()
    VirtualFileFactory.create(
        session=session, path="notes/a.md", content="<b>draft</b>"
    )

    html = content(admin_client.get(session.get_absolute_url()))

    assert "notes/a.md" in html
    assert "&lt;b&gt;draft&lt;/b&gt;" in html


def test_session_detail_highlights_cited_spans(admin_client):
    session = AgentSessionFactory.create(output_text="Tides follow the moon <daily>.")
    CitationFactory.create(session=session, cited_text="follow the moon", title="Moon")

    html = content(admin_client.get(session.get_absolute_url()))

    assert '<mark title="Moon">follow the moon</mark>' in html
    assert "&lt;daily&gt;" in html


def test_session_detail_lists_sources_and_uncited_ones(admin_client):
    session = AgentSessionFactory.create()
    call = ProviderCallFactory.create(session=session, turn=3)
    CitationFactory.create(
        session=session,
        provider_call=call,
        url="https://example.com/cited",
        title="Cited page",
        cited_text="the moon",
    )
    ToolInvocationFactory.create(
        session=session,
        web_search=True,
        value={"sources": ["https://example.com/cited", "https://example.org/uncited"]},
    )

    response = admin_client.get(session.get_absolute_url())

    html = content(response)
    assert "Cited page" in html
    assert "turn 3" in html
    assert "Consulted but not cited" in html
    assert response.context["consulted_sources"] == ["https://example.org/uncited"]


def test_session_detail_escapes_untrusted_content(admin_client):
    session = AgentSessionFactory.create(
        output_text="<img src=x onerror=alert(1)> answer"
    )
    CitationFactory.create(
        session=session,
        url="javascript:alert(1)",
        domain="",
        title="<b>Title</b>",
        cited_text="answer",
    )
    ToolInvocationFactory.create(
        session=session,
        success=False,
        message="<script>x</script>",
        params={"q": "<script>y</script>"},
    )

    html = content(admin_client.get(session.get_absolute_url()))

    assert "<script>x</script>" not in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html
    assert "<script>y</script>" not in html
    assert 'href="javascript:' not in html
    assert "<img src=x" not in html
    assert "<b>Title</b>" not in html
    assert "&lt;b&gt;Title&lt;/b&gt;" in html


@pytest.mark.parametrize("count, queries", [(1, 19), (12, 21), (200, 21)])
def test_session_detail_query_count_is_constant(
    client_logged_in, django_assert_num_queries, count, queries
):
    session = AgentSessionFactory.create()
    call = ProviderCallFactory.create(session=session, turn=1)
    for sequence in range(1, count + 1):
        ToolInvocationFactory.create(session=session, turn=1, sequence=sequence)
        PolicyDenialFactory.create(session=session, turn=1, sequence=sequence)
        StateChangeFactory.create(session=session, turn=1, sequence=sequence)
    CitationFactory.create_batch(count, session=session, provider_call=call)
    VirtualFileFactory.create_batch(count, session=session)

    # auth session + user, session, the timeline page (the positions of 6
    # kinds: calls, quota decisions, denials, tool calls, state changes,
    # approvals; then the rows of each on the page), citations, files, the
    # waterfall (calls, tool calls, unless the whole timeline fits on its
    # first page: its rows then; a run that never paused has no approval to
    # read, one without the planning tools no plan), its replays, and its
    # prompt's labels (the replay form)
    with django_assert_num_queries(queries):  # two: the permission lookup
        client_logged_in.get(session.get_absolute_url())


# The timeline


def timeline_of(client, session, **query):
    response = client.get(session.get_absolute_url(), query)
    assert response.status_code == 200
    return [entry.item for entry in response.context["timeline"]]


def test_timeline_orders_calls_by_turn_then_tools_by_sequence(admin_client):
    session = AgentSessionFactory.create()
    second_call = ProviderCallFactory.create(session=session, turn=2)
    first_call = ProviderCallFactory.create(session=session, turn=1)
    late = ToolInvocationFactory.create(session=session, turn=2, sequence=3)
    early_b = ToolInvocationFactory.create(session=session, turn=1, sequence=2)
    early_a = ToolInvocationFactory.create(session=session, turn=1, sequence=1)

    assert timeline_of(admin_client, session) == [
        first_call,
        early_a,
        early_b,
        second_call,
        late,
    ]


def test_timeline_puts_denials_before_and_changes_after_their_tool_call(
    admin_client,
):
    session = AgentSessionFactory.create()
    call = ProviderCallFactory.create(session=session, turn=1)
    first = ToolInvocationFactory.create(session=session, sequence=1, call_id="c1")
    denied = ToolInvocationFactory.create(
        session=session, sequence=2, call_id="c2", success=False
    )
    denial = PolicyDenialFactory.create(
        session=session, call_id="c2", turn=1, sequence=2
    )
    change = StateChangeFactory.create(
        session=session, call_id="c1", turn=1, sequence=1
    )

    response = admin_client.get(session.get_absolute_url())

    assert [(e.kind, e.item) for e in response.context["timeline"]] == [
        ("provider_call", call),
        ("tool_invocation", first),
        ("state_change", change),
        ("policy_denial", denial),
        ("tool_invocation", denied),
    ]


def test_timeline_places_rows_without_a_call_by_turn_and_sequence(admin_client):
    session = AgentSessionFactory.create()
    first = ProviderCallFactory.create(session=session, turn=1)
    tool = ToolInvocationFactory.create(session=session, turn=1, sequence=1)
    second = ProviderCallFactory.create(session=session, turn=2)
    denial = PolicyDenialFactory.create(
        session=session, turn=1, sequence=1, call_id=None
    )
    change = StateChangeFactory.create(
        session=session, call_id=None, turn=1, sequence=1
    )

    assert timeline_of(admin_client, session) == [
        first,
        denial,
        tool,
        change,
        second,
    ]


def test_session_page_shows_a_long_timeline_page_by_page(admin_client):
    session = AgentSessionFactory.create(turns=3)
    calls = [
        ProviderCallFactory.create(session=session, turn=turn) for turn in (1, 2, 3)
    ]
    tools = ToolInvocationFactory.create_batch(
        TIMELINE_PAGE + 10, session=session, turn=factory.Iterator([1, 2])
    )
    expected = [
        calls[0],
        *sorted((t for t in tools if t.turn == 1), key=lambda t: t.sequence),
        calls[1],
        *sorted((t for t in tools if t.turn == 2), key=lambda t: t.sequence),
        calls[2],
    ]

    first = admin_client.get(session.get_absolute_url())
    cursor = first.context["timeline_next"]
    last = admin_client.get(session.get_absolute_url(), {"after": cursor})

    assert len(first.context["timeline"]) == TIMELINE_PAGE
    assert f"?after={cursor}#timeline" in content(first)
    items = [e.item for e in (*first.context["timeline"], *last.context["timeline"])]
    assert items == expected
    assert last.context["timeline_next"] is None
    assert "First events" in content(last)


def test_session_page_refuses_a_timeline_cursor_it_did_not_give_out(admin_client):
    session = AgentSessionFactory.create()

    response = admin_client.get(session.get_absolute_url(), {"after": "nope"})

    assert response.status_code == 404
    for cursor in HOSTILE_CURSORS:
        response = admin_client.get(session.get_absolute_url(), {"after": cursor})
        assert response.status_code == 404, cursor[:20]


def test_session_detail_renders_the_timeline_in_order(admin_client):
    session = AgentSessionFactory.create()
    ProviderCallFactory.create(session=session, turn=1, response_id="resp_first")
    ToolInvocationFactory.create(session=session, sequence=1, name="tool_alpha")
    PolicyDenialFactory.create(
        session=session,
        call_id="call_denied",
        policy_name="policy_beta",
        turn=1,
        sequence=2,
    )
    ToolInvocationFactory.create(
        session=session, sequence=2, name="tool_gamma", call_id="call_denied"
    )

    html = content(admin_client.get(session.get_absolute_url()))

    positions = [
        html.index(marker)
        for marker in ("resp_first", "tool_alpha", "policy_beta", "tool_gamma")
    ]
    assert positions == sorted(positions)


# Citations page


def test_citation_page_lists_citations_with_links_to_sessions(admin_client):
    citation = CitationFactory.create(
        title="Moon facts", url="https://example.com/moon"
    )

    html = content(admin_client.get(CITATIONS_URL))

    assert "Moon facts" in html
    assert '<a href="https://example.com/moon"' in html
    assert citation.session.get_absolute_url() in html


def test_citation_page_filters_by_domain(admin_client):
    CitationFactory.create(
        title="Sub page", url="https://docs.example.com/a", domain="docs.example.com"
    )
    CitationFactory.create(
        title="Other page", url="https://other.org/b", domain="other.org"
    )

    html = content(admin_client.get(CITATIONS_URL, {"domain": "example.com"}))

    assert "Sub page" in html
    assert "Other page" not in html


def test_citation_page_flags_citations_outside_allowed_domains(admin_client):
    session = AgentSessionFactory.create(
        tools_payload=[
            {"type": "web_search", "filters": {"allowed_domains": ["example.com"]}}
        ]
    )
    CitationFactory.create(
        session=session, url="https://evil.test/x", domain="evil.test"
    )

    html = content(admin_client.get(CITATIONS_URL))

    assert "outside allowed domains" in html


def test_citation_page_does_not_link_non_http_urls(admin_client):
    CitationFactory.create(url="javascript:alert(1)", domain="", title="Sneaky")

    html = content(admin_client.get(CITATIONS_URL))

    assert "Sneaky" in html
    assert 'href="javascript:' not in html


@pytest.mark.parametrize("count", [1, 10])
def test_citation_page_query_count_is_constant(
    client_logged_in, django_assert_num_queries, count
):
    CitationFactory.create_batch(count)

    # auth session + user, the page, its sessions: no COUNT(*)
    with django_assert_num_queries(6):  # two: the permission lookup
        client_logged_in.get(CITATIONS_URL)


# Template filters


def test_safe_link_links_http_urls_only():
    assert safe_link("https://example.com/?a=1&b=2", "Ex") == (
        '<a href="https://example.com/?a=1&amp;b=2" '
        'rel="noopener noreferrer nofollow">Ex</a>'
    )
    # not linked, but shown beside its text (found by a hostile review)
    assert safe_link("javascript:alert(1)", "<b>x</b>") == (
        '&lt;b&gt;x&lt;/b&gt; <code class="unlinked">javascript:alert(1)</code>'
    )
    long = "javascript:" + "<" * 400
    assert safe_link(long, "t") == (
        f't <code class="unlinked">javascript:{"&lt;" * 289}…</code>'
    )
    assert safe_link("", "only text") == "only text"
    assert safe_link("data:text/html,hi") == "data:text/html,hi"


def test_highlight_citations_marks_first_occurrences_and_escapes():
    first = Citation(pk=1, title="A", cited_text="moon")
    second = Citation(pk=2, title="<B>", cited_text="the moon & sun")
    text = "<p>the moon & sun; the moon</p>"

    html = highlight_citations(text, [first, second])

    assert html == (
        "&lt;p&gt;"
        '<mark title="&lt;B&gt;; A">the moon &amp; sun</mark>'
        '<sup class="ref"><a href="#citation-2">[2]</a><a href="#citation-1">[1]</a>'
        "</sup>; the moon&lt;/p&gt;"
    )


def test_highlight_citations_ignores_text_it_cannot_find():
    citation = Citation(pk=1, title="A", cited_text="absent")

    assert highlight_citations("a < b", [citation]) == "a &lt; b"
