"""Hostile access to the approval inbox: who may see and decide what, when
the rules change under a user's feet, forged requests and hostile text.

Complements ``test_approval_inbox.py`` (the happy paths) and the access matrix
(one row per route and role)."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from sessions_app.models import ApprovalRequest
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ApprovalRequestFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

Decision = ApprovalRequest.Status
PASSWORD = "correct horse battery staple"  # UserFactory's


@pytest.fixture(autouse=True)
def _inline(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.WINK_APPROVAL_WEBHOOK_URL = ""


def member(username: str, group: str, **fields: Any) -> Any:
    """A user in ``group`` (created if needed) and nothing else."""
    user = UserFactory.create(username=username, **fields)
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return type(user).objects.get(pk=user.pk)


def url(approval: ApprovalRequest) -> str:
    return f"/audit/approvals/{approval.pk}/"


def status_of(approval: ApprovalRequest) -> str:
    return ApprovalRequest.objects.values_list("status", flat=True).get(pk=approval.pk)


def test_an_approver_of_one_group_never_sees_another_groups_approval(client):
    theirs = ApprovalRequestFactory.create(approvers={"group": "finance"})
    mine = ApprovalRequestFactory.create(approvers={"group": "release"})
    releaser = member("releaser", "release")
    client.force_login(releaser)
    api = APIClient()
    api.force_authenticate(releaser)

    assert [a.pk for a in client.get("/audit/approvals/").context["approvals"]] == [
        mine.pk
    ]
    assert client.get(url(theirs)).status_code == 404
    assert (
        client.post(url(theirs), {"decision": "approve", "confirm": "on"}).status_code
        == 404
    )
    assert [row["id"] for row in api.get("/api/approvals/").json()["results"]] == [
        str(mine.pk)
    ]
    assert api.get(f"/api/approvals/{theirs.pk}/").status_code == 404
    assert api.post(f"/api/approvals/{theirs.pk}/approve/", {}).status_code == 404
    assert status_of(theirs) == Decision.PENDING


def test_losing_the_group_between_page_and_post_is_a_403_and_decides_nothing(
    client,
):
    approval = ApprovalRequestFactory.create(approvers={"group": "release"})
    # the author of the session: still sees the approval once out of the group
    releaser = member("releaser", "release")
    type(approval.session).objects.filter(pk=approval.session_id).update(
        created_by=releaser
    )
    client.force_login(releaser)
    assert 'id="decision-form"' in client.get(url(approval)).content.decode()

    releaser.groups.clear()  # meanwhile, an admin removes them
    response = client.post(
        url(approval), {"decision": "approve", "confirm": "on", "reason": "ok"}
    )

    assert response.status_code == 403
    assert status_of(approval) == Decision.PENDING


def test_losing_the_permission_between_page_and_post_hides_the_approval(client):
    approval = ApprovalRequestFactory.create()
    approver = UserFactory.create(username="approver")
    decide = Permission.objects.get(codename="decide_any_approval")
    approver.user_permissions.add(decide)
    client.force_login(approver)
    assert client.get(url(approval)).status_code == 200

    approver.user_permissions.remove(decide)
    response = client.post(url(approval), {"decision": "approve", "confirm": "on"})

    assert response.status_code == 404  # neither decides nor sees it now
    assert status_of(approval) == Decision.PENDING


def test_a_deactivated_approver_is_logged_out_and_decides_nothing(client):
    approval = ApprovalRequestFactory.create()
    approver = member("approver", "Approvers")
    client.force_login(approver)
    api = APIClient()
    api.login(username="approver", password=PASSWORD)
    type(approver).objects.filter(pk=approver.pk).update(is_active=False)

    page = client.post(url(approval), {"decision": "approve", "confirm": "on"})
    answer = api.post(f"/api/approvals/{approval.pk}/approve/", {}, format="json")

    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")
    assert answer.status_code in (401, 403)
    assert status_of(approval) == Decision.PENDING


def test_staff_without_a_permission_see_no_approval_anywhere(client):
    approval = ApprovalRequestFactory.create()
    staff = UserFactory.create(username="staff", is_staff=True)
    client.force_login(staff)

    assert list(client.get("/audit/approvals/").context["approvals"]) == []
    assert client.get(url(approval)).status_code == 404
    assert (
        client.post(url(approval), {"decision": "approve", "confirm": "on"}).status_code
        == 404
    )
    admin = "/admin/sessions_app/approvalrequest/"
    assert client.get(admin).status_code == 403
    assert client.get(f"{admin}{approval.pk}/change/").status_code == 403


def test_the_page_post_needs_the_csrf_token(client):
    approval = ApprovalRequestFactory.create()
    approver = member("approver", "Approvers")
    forged = Client(enforce_csrf_checks=True)
    forged.force_login(approver)

    response = forged.post(url(approval), {"decision": "approve", "confirm": "on"})

    assert response.status_code == 403
    assert status_of(approval) == Decision.PENDING
    # with the token the same post decides
    form = forged.get(url(approval))
    token = form.context["csrf_token"]
    done = forged.post(
        url(approval),
        {"decision": "approve", "confirm": "on", "csrfmiddlewaretoken": str(token)},
    )
    assert done.status_code == 302
    assert status_of(approval) == Decision.APPROVED


def test_the_api_with_a_browser_session_needs_the_csrf_token():
    approval = ApprovalRequestFactory.create()
    member("approver", "Approvers")
    api = APIClient(enforce_csrf_checks=True)
    api.login(username="approver", password=PASSWORD)

    response = api.post(f"/api/approvals/{approval.pk}/approve/", {}, format="json")

    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
    assert status_of(approval) == Decision.PENDING


def test_the_login_from_an_email_link_comes_back_but_never_leaves_the_site(client):
    approval = ApprovalRequestFactory.create()
    member("approver", "Approvers")

    bounce = client.get(url(approval))
    assert bounce.status_code == 302
    assert bounce["Location"] == f"/accounts/login/?next={url(approval)}"
    back = client.post(
        f"/accounts/login/?next={url(approval)}",
        {"username": "approver", "password": PASSWORD},
    )
    assert back["Location"] == url(approval)

    client.logout()
    for evil in ("https://evil.example/", "//evil.example/", "/\\evil.example"):
        away = client.post(
            "/accounts/login/",
            {"username": "approver", "password": PASSWORD, "next": evil},
        )
        assert away.status_code == 302
        assert "evil" not in away["Location"]
        client.logout()


HOSTILE = '<script>alert("x")</script>'


def test_hostile_text_is_escaped_on_every_page_that_shows_an_approval(client):
    """An MCP tool's name and server label come from the remote server; the
    arguments from the model; the reasons from people."""
    session = AgentSessionFactory.create(status="awaiting_approval", output_text="")
    pending = ApprovalRequestFactory.create(
        session=session,
        kind=ApprovalRequest.Kind.MCP,
        tool_name=f"t{HOSTILE}"[:64],
        server_label=f"s{HOSTILE}"[:64],
        policy_name=f"p{HOSTILE}"[:64],
        reason=f"r{HOSTILE}",
        params={"x": HOSTILE},
        sequence=None,
        approvers={"group": f"g{HOSTILE}"},
    )
    decided = ApprovalRequestFactory.create(
        status=Decision.DENIED, decision_reason=f"d{HOSTILE}", tool_name="deploy"
    )
    root = UserFactory.create(username="root", is_superuser=True, is_staff=True)
    type(session).objects.filter(pk=session.pk).update(created_by=root)
    client.force_login(root)
    admin = "/admin/sessions_app/approvalrequest/"
    pages = [
        "/audit/approvals/",
        url(pending),
        url(decided),
        session.get_absolute_url(),  # the banner and the timeline
        admin,
        f"{admin}{pending.pk}/change/",
    ]
    confirm = client.post(
        admin, {"action": "deny_selected", "_selected_action": [str(pending.pk)]}
    )
    assert confirm.status_code == 200
    client.post(
        admin,
        {
            "action": "approve_selected",
            "_selected_action": [str(decided.pk)],
            "post": "yes",
        },
    )  # leaves a message naming the tool on the next page
    bodies = [confirm.content.decode()] + [
        client.get(path).content.decode() for path in pages
    ]
    for path, body in zip(["confirm", *pages], bodies, strict=True):
        assert "<script>alert(" not in body, path
        assert "&lt;script&gt;alert(" in body, path  # shown, escaped


@pytest.mark.parametrize(
    "raw",
    ['{"reason": ', '{"reason": null}', '"approve"', "\x00", '{"reason": ["x"]}'],
)
def test_the_api_refuses_a_malformed_decision_body_with_a_400(raw):
    approval = ApprovalRequestFactory.create()
    api = APIClient()
    api.force_authenticate(member("approver", "Approvers"))

    response = api.post(
        f"/api/approvals/{approval.pk}/deny/", raw, content_type="application/json"
    )

    assert response.status_code == 400, response.content
    assert status_of(approval) == Decision.PENDING


def test_a_lone_surrogate_in_a_reason_is_a_400():
    approval = ApprovalRequestFactory.create()
    api = APIClient()
    api.force_authenticate(member("approver", "Approvers"))

    response = api.post(
        f"/api/approvals/{approval.pk}/deny/",
        '{"reason": "no \\ud800 way"}',
        content_type="application/json",
    )

    assert response.status_code == 400
    assert "lone surrogates" in response.json()["errors"]["reason"][0]
    assert status_of(approval) == Decision.PENDING


@pytest.mark.parametrize(
    "query",
    ["?tool=x%00", "?prompt=a%00b", "?q=%00", "?status=bogus", "?kind=zzz", "?o=99"],
)
def test_the_admin_list_survives_hostile_query_values(client, query):
    """On PostgreSQL a NUL in a filter value used to be a 500."""
    ApprovalRequestFactory.create()
    client.force_login(UserFactory.create(is_superuser=True, is_staff=True))
    response = client.get(f"/admin/sessions_app/approvalrequest/{query}")
    assert response.status_code in (200, 302)


@pytest.mark.parametrize("query", ["tool=x%00", "prompt=a%00b", "session=zz"])
def test_the_inbox_page_and_api_survive_hostile_filter_values(client, query):
    ApprovalRequestFactory.create()
    root = UserFactory.create(is_superuser=True)
    client.force_login(root)
    api = APIClient()
    api.force_authenticate(root)

    listed = client.get(f"/audit/approvals/?{query}")
    # refused as the API refuses it, saying why (it read "Nothing waits")
    assert listed.status_code == 400
    assert list(listed.context["approvals"]) == []
    assert "no requests are listed until they are fixed" in listed.content.decode()
    assert api.get(f"/api/approvals/?{query}").status_code == 400


@pytest.mark.django_db(transaction=True)
def test_two_approvers_clicking_at_once_get_one_decision_and_clean_messages(
    monkeypatch, settings
):
    """PostgreSQL, two requests at the same moment: one approves, the other is
    told it is already approved; no error page, one resume."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrent requests need PostgreSQL (DATABASE_URL=postgres://...)")
    settings.CELERY_TASK_ALWAYS_EAGER = False  # a decision only queues the run
    queued: list[Any] = []

    def dispatch_run(session_id: Any, **kwargs: Any) -> bool:
        queued.append(session_id)
        return True  # queued for a worker: nothing runs inline

    monkeypatch.setattr("sessions_app.runs.dispatch.dispatch_run", dispatch_run)
    approval = ApprovalRequestFactory.create()
    # Not the "Approvers" group: a transactional test's flush removes the rows
    # migrations made (groups); the permissions are made again after it.
    decide_any = Permission.objects.get(codename="decide_any_approval")
    users = [UserFactory.create(username=f"approver{n}") for n in range(2)]
    for user in users:
        user.user_permissions.add(decide_any)
    barrier = threading.Barrier(2)
    said: list[list[str]] = []
    errors: list[BaseException] = []

    def click(user: Any) -> None:
        try:
            client = Client()
            client.force_login(user)
            barrier.wait(timeout=10)
            response = client.post(
                url(approval),
                {"decision": "approve", "confirm": "on", "reason": user.username},
            )
            assert response.status_code == 302, response.status_code
            # (not page.context: the test client's template signal is global,
            # the other thread's renders would leak into it)
            page = client.get(url(approval)).content.decode()
            listed = page.split('<ul class="messages">', 1)[1].split("</ul>", 1)[0]
            said.append(re.findall(r"<li[^>]*>\s*(.*?)\s*</li>", listed, re.S))
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=click, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert errors == []
    assert sorted(said) == [
        ["Approved. The run goes on (its session is now queued)."],
        ["This approval is already approved."],
    ]
    assert len(queued) == 1
    assert status_of(approval) == Decision.APPROVED


def test_a_reason_shown_again_keeps_its_bidi_control_to_be_sent_back(client):
    """A decision refused (here: not confirmed) shows the typed reason again:
    its control as a character reference, which the browser sends back as
    the control, not as the page's visible mark (which would be saved)."""
    approval = ApprovalRequestFactory.create()
    client.force_login(member("approver", "Approvers"))
    page = client.post(url(approval), {"decision": "deny", "reason": "no \u202eway"})
    assert page.status_code == 400
    html = page.content.decode()
    assert "no &#x202E;way</textarea>" in html
    assert "\u202e" not in html and "[U+202E]way</textarea>" not in html


@pytest.mark.parametrize("decision", [None, "maybe"])
def test_a_post_without_a_decision_says_so(client, decision):
    """Only a forged post lacks the button's value: it was a 400 without a
    word, the field being hidden (found by a hostile review)."""
    approval = ApprovalRequestFactory.create()
    client.force_login(member("approver", "Approvers"))
    data = {"confirm": "on", "reason": "x"}
    if decision is not None:
        data["decision"] = decision
    response = client.post(url(approval), data)

    assert response.status_code == 400
    assert "Choose Approve or Deny." in response.content.decode()
    assert status_of(approval) == Decision.PENDING
