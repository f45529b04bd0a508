"""The approval inbox, three faces of one rule: the page, the API and the admin.

The demo ship prompt (``demo/ship``) pauses on its deploy to production; an
approver finds it, decides with a reason, and the run goes on; who decided,
when and why is on the timeline. Authors see their own approvals read-only;
anyone else gets a 404. Runs inline (no broker), on SQLite or PostgreSQL.
"""

from __future__ import annotations

import datetime
import html
import json
import os
import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core import mail
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.approvals import decisions, expiry
from sessions_app.audit import timeline
from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    PolicyDenial,
    ToolInvocation,
)
from tests.sessions_app.cursor_pages import listed_back, listed_ids
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ApprovalRequestFactory,
    UserFactory,
)
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db

Status = AgentSession.Status
Decision = ApprovalRequest.Status


@pytest.fixture(autouse=True)
def _inline(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.WINK_APPROVAL_WEBHOOK_URL = ""


def fresh(user: Any) -> Any:
    """The user re-read (an empty permission cache)."""
    return type(user).objects.get(pk=user.pk)


@pytest.fixture
def alice(db) -> Any:
    """An approver (the Approvers group) who may not see others' sessions."""
    user = UserFactory.create(username="alice", is_staff=True)
    user.groups.add(Group.objects.get(name="Approvers"))
    return fresh(user)


@pytest.fixture
def author(db) -> Any:
    user = UserFactory.create(username="author")
    user.groups.add(Group.objects.get(name="Runners"))
    return fresh(user)


@pytest.fixture
def bystander(db) -> Any:
    user = UserFactory.create(username="bystander")
    user.groups.add(Group.objects.get(name="Runners"))
    return fresh(user)


@pytest.fixture
def paused(author, alice, django_capture_on_commit_callbacks) -> AgentSession:
    """A run of demo/ship waiting for its deploy to production."""
    seed_demo_catalog()
    from sessions_app import services

    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref="demo/ship", user=author)
    session.refresh_from_db()
    return session


def pending(session: AgentSession) -> ApprovalRequest:
    return ApprovalRequest.objects.get(session=session, status=Decision.PENDING)


def page(client: Client, user: Any) -> Client:
    client.force_login(user)
    return client


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def text_of(response: Any) -> str:
    """The page's text, tags stripped, whitespace collapsed."""
    markup = response.content.decode()
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


# -- the demo pauses ---------------------------------------------------------------


def test_demo_ship_pauses_on_its_deploy_to_production(paused, alice):
    assert paused.status == Status.AWAITING_APPROVAL
    approval = pending(paused)
    assert (approval.tool_name, approval.policy_name) == ("deploy", "production-deploy")
    assert approval.params == {"environment": "production"}
    # the approver heard of it, with a link to the inbox entry
    [message] = mail.outbox
    assert message.to == [alice.email]
    assert f"/audit/approvals/{approval.pk}/" in message.body


# -- the page --------------------------------------------------------------------------


def test_inbox_lists_the_pending_approval_for_its_approver(client, paused, alice):
    response = page(client, alice).get("/audit/approvals/")
    assert response.status_code == 200
    assert "deploy" in text_of(response) and "demo/ship" in text_of(response)
    assert str(pending(paused).pk) in response.content.decode()


def test_inbox_lists_pending_approvals_first_then_the_newest_decided(client, alice):
    decided = ApprovalRequestFactory.create(
        tool_name="decided_tool",
        status=Decision.APPROVED,
        decided_at=timezone.now(),
    )
    later = ApprovalRequestFactory.create(
        tool_name="later_tool",
        expires_at=timezone.now() + datetime.timedelta(hours=5),
    )
    sooner = ApprovalRequestFactory.create(
        tool_name="sooner_tool",
        expires_at=timezone.now() + datetime.timedelta(hours=1),
    )
    response = page(client, alice).get("/audit/approvals/")
    order = [a.pk for a in response.context["approvals"]]
    assert order == [sooner.pk, later.pk, decided.pk]


def test_inbox_filters_by_status_tool_and_prompt(client, alice):
    deploy = ApprovalRequestFactory.create()
    other = ApprovalRequestFactory.create(tool_name="drop_table")
    client = page(client, alice)

    def listed(**query: str) -> list[Any]:
        return [
            a.pk for a in client.get("/audit/approvals/", query).context["approvals"]
        ]

    assert listed(tool="drop_table") == [other.pk]
    assert listed(status="approved") == []
    assert set(listed(prompt="demo/ship")) == {deploy.pk, other.pk}
    assert listed(status="nonsense") == []  # an invalid filter lists nothing


@pytest.mark.parametrize(
    "url", ["/audit/approvals/", "/admin/sessions_app/approvalrequest/"]
)
def test_inbox_page_costs_the_same_for_1_and_40_approvals(client, alice, url):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = page(client, alice)
    # (once a process: the database's feature checks, e.g. SQLite's JSON)
    assert client.get(url).status_code == 200
    counts = []
    for batch in (1, 39):
        ApprovalRequestFactory.create_batch(batch, decided_by=alice)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        counts.append(len(queries.captured_queries))
    assert counts[0] == counts[1]


def test_inbox_reads_what_became_of_approved_calls_in_one_query(client, alice):
    client = page(client, alice)
    assert client.get("/audit/approvals/").status_code == 200  # (warm)
    counts = []
    for batch in (1, 39):
        ApprovalRequestFactory.create_batch(
            batch,
            status=Decision.APPROVED,
            decided_by=alice,
            session__status=AgentSession.Status.CANCELLED,
        )
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/audit/approvals/")
        assert text_of(response).count("Approved (the call did not run)") == (
            1 if batch == 1 else 40
        )
        counts.append(len(queries.captured_queries))
    assert counts[0] == counts[1]


def test_inbox_pages_without_counting_every_request(client, alice):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    now = timezone.now()
    for minutes in range(120):
        ApprovalRequestFactory.create(
            status=Decision.APPROVED,
            decided_at=now,
            requested_at=now - datetime.timedelta(minutes=minutes),
        )
    client = page(client, alice)
    with CaptureQueriesContext(connection) as queries:
        first = client.get("/audit/approvals/")
    assert not any("COUNT(" in q["sql"].upper() for q in queries.captured_queries)
    html = first.content.decode()
    assert len(first.context["approvals"]) == 50
    assert 'page=2" rel="next"' in html and 'rel="prev"' not in html
    third = client.get("/audit/approvals/", {"page": 3})
    assert len(third.context["approvals"]) == 20
    assert 'rel="next"' not in third.content.decode()
    seen = [
        a.pk
        for number in (1, 2, 3)
        for a in client.get("/audit/approvals/", {"page": number}).context["approvals"]
    ]
    assert len(seen) == len(set(seen)) == 120  # every request once
    for bad in ("0", "x", "201", "-1", "1.5", "²", "①", "٣", " 2", "+2", "1_0"):
        assert client.get("/audit/approvals/", {"page": bad}).status_code == 404


@pytest.mark.parametrize("number", ["\u00b2", "\u0662", "\u0661\u0662"])
def test_an_inbox_page_number_is_ascii_digits_only(client, alice, number):
    """isdigit() passed "²" (then int() failed: a 500) and Arabic-Indic 2."""
    ApprovalRequestFactory.create()
    client = page(client, alice)
    assert client.get("/audit/approvals/", {"page": number}).status_code == 404
    assert client.get("/audit/approvals/", {"page": "1"}).status_code == 200


def test_api_pages_requests_of_one_instant_each_once_both_ways(alice):
    """Requests made at one instant (a turn's calls) share ``requested_at``:
    the API's cursor is a keyset on it and the key, so the next links and
    the previous links list each once."""
    at = timezone.now()
    made = [
        str(
            ApprovalRequestFactory.create(
                status=Decision.APPROVED, decided_at=at, requested_at=at
            ).pk
        )
        for _ in range(11)
    ]
    client = api(alice)
    query = {"page_size": 3}
    forward = listed_ids(client, "/api/approvals/", query)
    assert sorted(forward) == sorted(made)
    assert listed_back(client, "/api/approvals/", query) == forward


def test_inbox_hides_approvals_from_those_who_may_neither_decide_nor_see(
    client, paused, bystander
):
    approval = pending(paused)
    client = page(client, bystander)
    assert list(client.get("/audit/approvals/").context["approvals"]) == []
    assert client.get(f"/audit/approvals/{approval.pk}/").status_code == 404
    response = client.post(
        f"/audit/approvals/{approval.pk}/",
        {"decision": "approve", "confirm": "on", "reason": ""},
    )
    assert response.status_code == 404
    assert pending(paused).status == Decision.PENDING


def test_author_sees_their_approval_read_only(client, paused, author):
    approval = pending(paused)
    client = page(client, author)
    assert [a.pk for a in client.get("/audit/approvals/").context["approvals"]] == [
        approval.pk
    ]
    response = client.get(f"/audit/approvals/{approval.pk}/")
    assert response.status_code == 200
    assert 'id="decision-form"' not in response.content.decode()
    # demo/ship's production deploy is under four eyes: the note says why
    assert "You started this run; a second person must decide it." in text_of(response)
    response = client.post(
        f"/audit/approvals/{approval.pk}/",
        {"decision": "approve", "confirm": "on", "reason": ""},
    )
    assert response.status_code == 403
    # the 403 page says why, as the API does
    assert "You started this run; a second person must decide it." in text_of(response)
    assert pending(paused).status == Decision.PENDING


def test_approver_who_cannot_see_the_session_gets_no_session_link(
    client, paused, alice
):
    approval = pending(paused)
    response = page(client, alice).get(f"/audit/approvals/{approval.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="decision-form"' in html
    assert paused.get_absolute_url() not in html
    assert "you may decide, not see the session" in text_of(response)
    assert client.get(paused.get_absolute_url()).status_code == 404


def test_detail_shows_arguments_policy_reason_and_deadline(client, paused, alice):
    approval = pending(paused)
    response = page(client, alice).get(f"/audit/approvals/{approval.pk}/")
    text = text_of(response)
    assert "production-deploy" in text
    assert approval.reason in text
    assert '"environment": "production"' in text
    assert approval.expires_at.strftime("%Y-%m-%d %H:%M") in text


def test_approve_on_the_page_resumes_the_run_to_the_end(client, paused, alice):
    approval = pending(paused)
    client = page(client, alice)

    response = client.post(
        f"/audit/approvals/{approval.pk}/",
        {"decision": "approve", "confirm": "on", "reason": "Release notes reviewed."},
    )

    assert response.status_code == 302
    assert response["Location"] == f"/audit/approvals/{approval.pk}/"
    paused.refresh_from_db()
    assert paused.status == Status.SUCCEEDED
    approval.refresh_from_db()
    assert (approval.status, approval.decided_by, approval.decision_reason) == (
        Decision.APPROVED,
        alice,
        "Release notes reviewed.",
    )
    [deploy] = ToolInvocation.objects.filter(
        session=paused, name="deploy", success=True
    )
    assert deploy.params == {"environment": "production"}
    followed = client.get(response["Location"])
    assert "Approved. The run goes on (its session is now succeeded)." in text_of(
        followed
    )
    assert "Approved by alice" in text_of(followed)
    # the heading no longer says it needs approval
    assert "deploy needs approval" not in text_of(followed)
    assert "Approval of deploy" in text_of(followed)


def test_a_second_decision_is_reported_as_already_decided(client, paused, alice):
    approval = pending(paused)
    client = page(client, alice)
    url = f"/audit/approvals/{approval.pk}/"
    client.post(url, {"decision": "approve", "confirm": "on", "reason": "ok"})

    again = client.post(
        url, {"decision": "deny", "confirm": "on", "reason": "changed my mind"}
    )

    assert again.status_code == 302
    assert "This approval is already approved." in text_of(client.get(url))
    approval.refresh_from_db()
    assert approval.status == Decision.APPROVED
    assert (
        ToolInvocation.objects.filter(
            session=paused, name="deploy", success=True
        ).count()
        == 1
    )


def test_deny_on_the_page_needs_a_reason(client, paused, alice):
    approval = pending(paused)
    response = page(client, alice).post(
        f"/audit/approvals/{approval.pk}/",
        {"decision": "deny", "confirm": "on", "reason": "  "},
    )
    assert response.status_code == 400
    assert "Say why you deny it" in text_of(response)
    assert pending(paused).status == Decision.PENDING


def test_a_reason_that_is_not_utf8_is_refused_not_stored_altered(client, paused, alice):
    """Django decodes a form with errors="replace": the reason was stored as
    "a\ufffd\ufffd\ufffdb" and read by the model (found by hostile QA)."""
    approval = pending(paused)
    response = page(client, alice).post(
        f"/audit/approvals/{approval.pk}/",
        b"decision=deny&confirm=on&reason=a%ED%A0%80b",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 400
    assert "The form held text that is not UTF-8" in text_of(response)
    assert "alice" in text_of(response)  # the page knows who is signed in
    assert pending(paused).status == Decision.PENDING
    # the same as multipart (Django decodes its fields with "replace" too)
    boundary = "b0undary"
    multipart = (
        (
            f"--{boundary}\r\n"
            'Content-Disposition: form-data; name="decision"\r\n\r\ndeny\r\n'
            f"--{boundary}\r\n"
            'Content-Disposition: form-data; name="confirm"\r\n\r\non\r\n'
            f"--{boundary}\r\n"
            'Content-Disposition: form-data; name="reason"\r\n\r\n'
        ).encode()
        + b"a\xed\xa0\x80b\r\n"
        + f"--{boundary}--\r\n".encode()
    )
    response = page(client, alice).post(
        f"/audit/approvals/{approval.pk}/",
        multipart,
        content_type=f"multipart/form-data; boundary={boundary}",
    )
    assert response.status_code == 400
    assert "The form held text that is not UTF-8" in text_of(response)
    assert pending(paused).status == Decision.PENDING
    accented = page(client, alice).post(
        f"/audit/approvals/{approval.pk}/",
        "decision=deny&confirm=on&reason=caf%C3%A9+%F0%9F%99%82",
        content_type="application/x-www-form-urlencoded",
    )
    assert accented.status_code == 302
    approval.refresh_from_db()
    assert approval.decision_reason == "caf\u00e9 \U0001f642"


def test_deny_on_the_page_answers_the_model_and_the_run_goes_on(client, paused, alice):
    approval = pending(paused)
    page(client, alice).post(
        f"/audit/approvals/{approval.pk}/",
        {"decision": "deny", "confirm": "on", "reason": "Not on a Friday."},
    )

    paused.refresh_from_db()
    assert paused.status == Status.SUCCEEDED
    approval.refresh_from_db()
    assert approval.status == Decision.DENIED
    assert not ToolInvocation.objects.filter(
        session=paused, name="deploy", success=True
    ).exists()
    denial = PolicyDenial.objects.filter(session=paused, call_id=approval.call_id).get()
    assert "Denied by alice: Not on a Friday." in denial.reason


@pytest.mark.parametrize(
    ("reason", "error"),
    [
        ("a\x00b", "Null characters are not allowed."),
        ("x" * 2001, "at most 2000 characters"),
    ],
)
def test_a_hostile_reason_is_a_form_error(client, paused, alice, reason, error):
    approval = pending(paused)
    response = page(client, alice).post(
        f"/audit/approvals/{approval.pk}/",
        {"decision": "approve", "confirm": "on", "reason": reason},
    )
    assert response.status_code == 400
    assert error in text_of(response)
    assert pending(paused).status == Decision.PENDING


def test_a_denial_whose_reason_is_refused_gets_that_error_alone(client, paused, alice):
    approval = pending(paused)
    response = page(client, alice).post(
        f"/audit/approvals/{approval.pk}/",
        {"decision": "deny", "confirm": "on", "reason": "a\x00b"},
    )
    assert response.status_code == 400
    assert response.context["form"].errors["reason"] == [
        "Null characters are not allowed."
    ]


def test_an_empty_inbox_says_why_it_is_empty(client, paused, alice):
    client = page(client, alice)
    assert "Nothing waits" not in text_of(client.get("/audit/approvals/"))
    beyond = text_of(client.get("/audit/approvals/?page=3"))
    assert "No requests on page 3: back to the first page" in beyond
    assert "Nothing waits" not in beyond
    # a parameter that filters nothing is no filter
    assert "No request matches" not in text_of(client.get("/audit/approvals/?utm=x"))
    filtered = text_of(client.get("/audit/approvals/?tool=nope&status="))
    assert "No request matches these filters." in filtered
    assert "Nothing waits" not in filtered
    ApprovalRequest.objects.all().delete()
    for query in ("?tool=", "?utm=x"):
        shown = text_of(client.get(f"/audit/approvals/{query}"))
        assert "Nothing waits for approval." in shown


def test_an_unknown_decision_is_a_form_error(client, paused, alice):
    approval = pending(paused)
    response = page(client, alice).post(
        f"/audit/approvals/{approval.pk}/", {"decision": "maybe", "confirm": "on"}
    )
    assert response.status_code == 400


def test_inbox_escapes_untrusted_text(client, alice):
    approval = ApprovalRequestFactory.create(
        reason="<script>alert(1)</script>", params={"x": "<img src=x onerror=1>"}
    )
    client = page(client, alice)
    for url in ("/audit/approvals/", f"/audit/approvals/{approval.pk}/"):
        html = client.get(url).content.decode()
        assert "<script>alert(1)" not in html and "<img src=x" not in html
        assert "&lt;script&gt;" in html


def test_session_page_shows_a_banner_while_the_run_waits(client, paused, author):
    approval = pending(paused)
    response = page(client, author).get(paused.get_absolute_url())
    html = response.content.decode()
    assert 'id="approval-banner"' in html
    assert f"/audit/approvals/{approval.pk}/" in html
    assert "Awaiting approval" in text_of(response)


def test_session_list_filters_sessions_awaiting_approval(client, paused, author):
    response = page(client, author).get(
        "/audit/sessions/", {"status": "awaiting_approval"}
    )
    assert [s.pk for s in response.context["sessions"]] == [paused.pk]


# -- the timeline -------------------------------------------------------------------


def test_timeline_shows_the_request_then_who_approved_and_why(client, paused, alice):
    approval = pending(paused)
    decisions.decide(
        approval_id=approval.pk, user=alice, approve=True, reason="Looks fine."
    )
    approval.refresh_from_db()

    events, _ = timeline.events_page(paused, after=None, limit=500)
    kinds = [
        (e.kind, getattr(e.row, "name", getattr(e.row, "tool_name", "")))
        for e in events
    ]
    at = kinds.index(("approval", "deploy"))
    # just before the call it let through, after the earlier calls' entries
    following = events[at + 1]
    assert following.kind == "tool_invocation"
    assert following.row.call_id == approval.call_id and following.row.success

    viewer = UserFactory.create(username="viewer", is_superuser=True)
    response = page(client, viewer).get(paused.get_absolute_url())
    text = text_of(response)
    assert "deploy needs approval policy production-deploy" in text
    stamp = timezone.localtime(approval.decided_at).strftime("%Y-%m-%d %H:%M")
    assert f"Approved by alice at {stamp}: Looks fine." in text


def every_page(session: AgentSession, *, limit: int) -> list[Any]:
    """The session's timeline read page by page, ``limit`` events a page."""
    seen: list[Any] = []
    after = None
    while True:
        page_, after = timeline.events_page(session, after=after, limit=limit)
        seen.extend(page_)
        if after is None:
            return seen


def test_timeline_pages_through_approvals_without_losing_or_repeating_one(paused):
    mcp = ApprovalRequestFactory.create(
        session=paused,
        kind=ApprovalRequest.Kind.MCP,
        sequence=None,
        turn=1,
        tool_name="search_docs",
        server_label="docs",
        status=Decision.APPROVED,
        decided_at=timezone.now(),
    )
    everything, _ = timeline.events_page(paused, after=None, limit=1000)
    seen = every_page(paused, limit=2)
    assert [(e.kind, e.row.pk) for e in seen] == [
        (e.kind, e.row.pk) for e in everything
    ]
    # the MCP approval sits after the first turn's provider call
    kinds = [(e.kind, e.row.pk) for e in everything]
    assert kinds.index(("approval", mcp.pk)) == 1


def test_the_timeline_pages_one_by_one_through_many_approvals_of_a_turn():
    """Approvals have UUID ids: their tie-break is when they were requested."""
    session = AgentSessionFactory.create(status="awaiting_approval", output_text="")
    start = timezone.now()
    for number in range(4):  # one turn's MCP requests, decided one after another
        ApprovalRequestFactory.create(
            session=session,
            kind=ApprovalRequest.Kind.MCP,
            sequence=None,
            call_id=f"mcpr_{number}",
            turn=2,
            status=Decision.APPROVED,
            requested_at=start + datetime.timedelta(microseconds=3 - number),
        )
    for sequence in (3, 1, 2):
        ApprovalRequestFactory.create(
            session=session, turn=2, sequence=sequence, status=Decision.DENIED
        )

    everything, _ = timeline.events_page(session, after=None, limit=1000)
    seen = every_page(session, limit=1)

    assert [e.row.pk for e in seen] == [e.row.pk for e in everything]
    assert len(seen) == 7
    rows = [e.row for e in everything]
    assert [r.requested_at for r in rows[:4]] == sorted(
        r.requested_at for r in rows[:4]
    )
    assert [r.sequence for r in rows[4:]] == [1, 2, 3]


def test_timeline_shows_an_expired_approval(client, paused):
    approval = pending(paused)
    expiry.expire_overdue(now=approval.expires_at + datetime.timedelta(seconds=1))
    viewer = UserFactory.create(username="viewer", is_superuser=True)
    text = text_of(page(client, viewer).get(paused.get_absolute_url()))
    assert "Expired at" in text and "denied automatically" in text


def test_events_api_includes_the_approval(paused, author):
    approval = pending(paused)
    body = api(author).get(f"/api/sessions/{paused.pk}/events/?page_size=500").json()
    [row] = [event for event in body["results"] if event["kind"] == "approval"]
    assert row["sequence"] == approval.sequence
    assert row["data"]["tool_name"] == "deploy"
    assert row["data"]["status"] == "pending"
    assert row["created_at"]


# -- the API ---------------------------------------------------------------------


def test_api_lists_and_filters_approvals(paused, alice):
    approval = pending(paused)
    client = api(alice)
    body = client.get("/api/approvals/").json()
    assert [row["id"] for row in body["results"]] == [str(approval.pk)]
    assert body["results"][0]["prompt"] == "demo/ship"
    for query, expected in [
        ({"status": "pending"}, [str(approval.pk)]),
        ({"status": "approved"}, []),
        ({"tool": "deploy"}, [str(approval.pk)]),
        ({"tool": "build"}, []),
        ({"session": str(paused.pk)}, [str(approval.pk)]),
    ]:
        rows = client.get("/api/approvals/", query).json()["results"]
        assert [row["id"] for row in rows] == expected, query


@pytest.mark.parametrize(
    "query", [{"status": "maybe"}, {"session": "not-a-uuid"}, {"tool": "x\x00"}]
)
def test_api_refuses_a_bad_filter(alice, query):
    assert api(alice).get("/api/approvals/", query).status_code == 400


def test_api_detail_says_whether_you_may_decide(paused, alice, author, bystander):
    url = f"/api/approvals/{pending(paused).pk}/"
    assert api(alice).get(url).json()["may_decide"] is True
    assert api(author).get(url).json()["may_decide"] is False
    assert api(bystander).get(url).status_code == 404


def test_api_says_an_overdue_request_is_expired_and_not_decidable(paused, alice):
    """Before the sweeper records it, the API reads an overdue request as the
    inbox does: ``effective_status`` expired, and nobody may decide it (the
    decision would be refused as closed); ``status`` stays the record's."""
    approval = pending(paused)
    url = f"/api/approvals/{approval.pk}/"
    body = api(alice).get(url).json()
    assert (body["status"], body["effective_status"], body["may_decide"]) == (
        "pending",
        "pending",
        True,
    )
    ApprovalRequest.objects.filter(pk=approval.pk).update(
        expires_at=timezone.now() - datetime.timedelta(seconds=1)
    )
    body = api(alice).get(url).json()
    assert (body["status"], body["effective_status"], body["may_decide"]) == (
        "pending",
        "expired",
        False,
    )
    (listed,) = api(alice).get("/api/approvals/").json()["results"]
    assert (listed["status"], listed["effective_status"]) == ("pending", "expired")


def test_api_says_a_request_of_a_cancelled_run_is_cancelled(paused, alice):
    approval = pending(paused)
    AgentSession.objects.filter(pk=paused.pk).update(status=Status.CANCELLED)
    body = api(alice).get(f"/api/approvals/{approval.pk}/").json()
    assert (body["status"], body["effective_status"], body["may_decide"]) == (
        "pending",
        "cancelled",
        False,
    )


def test_api_approve_resumes_the_run(paused, alice):
    approval = pending(paused)
    response = api(alice).post(
        f"/api/approvals/{approval.pk}/approve/", {"reason": "ok"}, format="json"
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["status"], body["decided_by"], body["decision_reason"]) == (
        "approved",
        "alice",
        "ok",
    )
    assert body["may_decide"] is False
    paused.refresh_from_db()
    assert paused.status == Status.SUCCEEDED


def test_api_approve_twice_is_a_409_naming_the_status(paused, alice):
    url = f"/api/approvals/{pending(paused).pk}/approve/"
    api(alice).post(url, {}, format="json")
    response = api(alice).post(url, {}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "conflict"
    assert "approved" in response.json()["detail"]


def test_api_deny_needs_a_reason_and_then_denies(paused, alice):
    url = f"/api/approvals/{pending(paused).pk}/deny/"
    response = api(alice).post(url, {}, format="json")
    assert response.status_code == 400
    assert "reason" in response.json()["errors"]
    response = api(alice).post(url, {"reason": "Not today."}, format="json")
    assert response.status_code == 200
    assert response.json()["status"] == "denied"


def test_api_decisions_by_author_and_bystander_are_403_and_404(
    paused, author, bystander
):
    approval = pending(paused)
    url = f"/api/approvals/{approval.pk}/approve/"
    assert api(author).post(url, {}, format="json").status_code == 403
    assert api(bystander).post(url, {}, format="json").status_code == 404
    assert pending(paused).pk == approval.pk


@pytest.mark.parametrize(
    "body",
    [
        {"reason": 42},
        {"reason": "a\x00b"},
        {"reason": "x" * 2001},
        {"reason": "ok", "approve": True},
        ["reason"],
    ],
)
def test_api_refuses_a_hostile_decision_body(paused, alice, body):
    approval = pending(paused)
    response = api(alice).post(
        f"/api/approvals/{approval.pk}/approve/",
        json.dumps(body),
        content_type="application/json",
    )
    assert response.status_code == 400, response.json()
    assert pending(paused).pk == approval.pk


def test_api_list_query_count_does_not_grow_with_the_page(
    alice, django_assert_max_num_queries
):
    ApprovalRequestFactory.create_batch(30)
    with django_assert_max_num_queries(6):
        response = api(alice).get("/api/approvals/")
    assert len(response.json()["results"]) == 30


# -- the admin -------------------------------------------------------------------


def admin_action(client: Client, action: str, approvals_: list[Any], **extra: str):
    return client.post(
        "/admin/sessions_app/approvalrequest/",
        {
            "action": action,
            "_selected_action": [str(a.pk) for a in approvals_],
            **extra,
        },
    )


def test_admin_lists_approvals_for_staff_approvers(client, paused, alice):
    response = page(client, alice).get("/admin/sessions_app/approvalrequest/")
    assert response.status_code == 200
    assert "deploy" in text_of(response)


def test_admin_approve_asks_for_the_reason_then_decides(client, paused, alice):
    approval = pending(paused)
    client = page(client, alice)

    confirm = admin_action(client, "approve_selected", [approval])
    assert confirm.status_code == 200
    assert "Approve the selected calls?" in text_of(confirm)
    assert pending(paused).pk == approval.pk  # nothing decided yet

    done = admin_action(
        client, "approve_selected", [approval], post="yes", reason="Go ahead."
    )
    assert done.status_code == 302
    approval.refresh_from_db()
    assert (approval.status, approval.decision_reason) == (
        Decision.APPROVED,
        "Go ahead.",
    )
    paused.refresh_from_db()
    assert paused.status == Status.SUCCEEDED
    listing = text_of(client.get("/admin/sessions_app/approvalrequest/"))
    assert "Approvals: 1 approved." in listing


def test_admin_deny_needs_a_reason(client, paused, alice):
    approval = pending(paused)
    response = admin_action(
        page(client, alice), "deny_selected", [approval], post="yes", reason=""
    )
    assert response.status_code == 200
    assert "This field is required." in text_of(response)
    assert pending(paused).pk == approval.pk


def test_admin_reports_an_already_decided_row_without_an_error(client, alice):
    closed = ApprovalRequestFactory.create(
        status=Decision.DENIED, decided_at=timezone.now()
    )
    client = page(client, alice)

    response = admin_action(client, "approve_selected", [closed], post="yes")

    assert response.status_code == 302
    text = text_of(client.get("/admin/sessions_app/approvalrequest/"))
    assert "Deploy in demo/ship: not decided: This approval is already denied." in text
    assert "Approvals: 1 closed." in text
    closed.refresh_from_db()
    assert closed.status == Decision.DENIED


def test_admin_reports_a_row_the_user_may_not_decide(client):
    release = Group.objects.create(name="release-managers")
    other = ApprovalRequestFactory.create(approvers={"group": release.name})
    mine = ApprovalRequestFactory.create(approvers={"group": "Approvers"})
    # decides the Approvers' approvals, sees (not decides) the release managers'
    approver = UserFactory.create(username="approver", is_staff=True)
    approver.groups.add(Group.objects.get(name="Approvers"))
    approver.user_permissions.add(
        Permission.objects.get(codename="view_all_sessions"),
    )
    approver.user_permissions.remove(
        Permission.objects.get(codename="decide_any_approval")
    )
    Group.objects.get(name="Approvers").permissions.remove(
        Permission.objects.get(codename="decide_any_approval")
    )
    client = page(client, fresh(approver))

    response = admin_action(
        client, "deny_selected", [other, mine], post="yes", reason="No."
    )

    assert response.status_code == 302
    text = text_of(client.get("/admin/sessions_app/approvalrequest/"))
    assert "Deploy in demo/ship: you may not decide this approval." in text
    assert "Approvals: 1 denied, 1 not allowed." in text
    other.refresh_from_db()
    mine.refresh_from_db()
    assert (other.status, mine.status) == (Decision.PENDING, Decision.DENIED)


def test_admin_offers_no_decision_to_staff_who_may_decide_nothing(client):
    ApprovalRequestFactory.create(approvers={"group": "release-managers"})
    viewer = UserFactory.create(username="viewer", is_staff=True)
    viewer.user_permissions.add(
        Permission.objects.get(codename="view_approvalrequest"),
        Permission.objects.get(codename="view_all_sessions"),
    )
    response = page(client, fresh(viewer)).get("/admin/sessions_app/approvalrequest/")
    assert response.status_code == 200
    assert "deploy" in text_of(response).lower()
    assert "approve_selected" not in response.content.decode()


def test_admin_filters_list_only_the_prompts_the_user_sees(client, alice):
    """Django's own filter on ``session__prompt_ref`` would list the prompt of
    every session in the table."""
    AgentSessionFactory.create(prompt_ref="secret/merger-plan")
    hidden = ApprovalRequestFactory.create(approvers={"group": "release-managers"})
    AgentSession.objects.filter(pk=hidden.session_id).update(
        prompt_ref="secret/layoffs"
    )
    ApprovalRequestFactory.create(approvers={"group": "Approvers"})  # demo/ship
    Group.objects.get(name="Approvers").permissions.remove(
        Permission.objects.get(codename="decide_any_approval")
    )
    alice = fresh(alice)

    response = page(client, alice).get("/admin/sessions_app/approvalrequest/")

    body = response.content.decode()
    assert "demo/ship" in body
    assert "secret/" not in body
    chosen = client.get("/admin/sessions_app/approvalrequest/?prompt=demo/ship")
    assert len(chosen.context["cl"].result_list) == 1


def test_admin_refuses_more_than_a_batch_at_once(client, alice, monkeypatch):
    from sessions_app.approvals import admin as approvals_admin

    monkeypatch.setattr(approvals_admin, "MAX_BATCH", 2)
    rows = ApprovalRequestFactory.create_batch(3)
    client = page(client, alice)

    response = admin_action(client, "approve_selected", rows, post="yes")

    assert response.status_code == 302
    text = text_of(client.get("/admin/sessions_app/approvalrequest/"))
    assert "Select at most 2 approvals at a time; nothing was decided." in text
    assert ApprovalRequest.objects.filter(status=Decision.PENDING).count() == 3


def test_admin_reports_at_most_ten_rows_then_counts_the_rest(client, alice):
    closed = ApprovalRequestFactory.create_batch(
        12, status=Decision.DENIED, decided_at=timezone.now()
    )
    client = page(client, alice)

    confirm = admin_action(client, "approve_selected", closed)
    assert "None of the selected approvals is pending." in text_of(confirm)
    assert "12 of the selected approvals are no longer pending" in text_of(confirm)
    admin_action(client, "approve_selected", closed, post="yes")

    text = text_of(client.get("/admin/sessions_app/approvalrequest/"))
    assert text.count(": not decided: This approval is already denied.") == 10
    assert "... and 2 more not decided." in text
    assert "Approvals: 12 closed." in text


def test_admin_is_closed_to_staff_without_a_permission(client, paused):
    staff = UserFactory.create(username="staff", is_staff=True)
    response = page(client, staff).get("/admin/sessions_app/approvalrequest/")
    assert response.status_code == 403


def test_admin_change_page_of_a_hidden_approval_is_404(client, paused):
    staff = UserFactory.create(username="staffer", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_approvalrequest"))
    approval = pending(paused)
    response = page(client, fresh(staff)).get(
        f"/admin/sessions_app/approvalrequest/{approval.pk}/change/"
    )
    assert response.status_code == 404


# -- the seeded demo -----------------------------------------------------------------


def test_seed_demo_leaves_the_ship_run_in_the_admins_inbox(
    client, settings, django_capture_on_commit_callbacks
):
    from django.core.management import call_command

    settings.DEBUG = True
    with (
        open(os.devnull, "w") as quiet,
        django_capture_on_commit_callbacks(execute=True),
    ):
        call_command("seed_demo", stdout=quiet)
        call_command("seed_demo", stdout=quiet)  # idempotent: nothing new

    session = AgentSession.objects.get(prompt_ref="demo/ship")
    assert ApprovalRequest.objects.count() == 1
    assert session.status == Status.AWAITING_APPROVAL
    admin = get_user_model().objects.get(username="admin")
    assert admin.groups.filter(name="Approvers").exists()
    # the superuser and the second demo account, both approvers
    assert sorted(message.to for message in mail.outbox) == [
        ["admin@example.invalid"],
        ["approver@example.invalid"],
    ]
    listed = page(client, admin).get("/audit/approvals/").context["approvals"]
    assert [a.session_id for a in listed] == [session.pk]
