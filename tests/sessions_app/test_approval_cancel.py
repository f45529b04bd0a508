"""Approve racing cancel (issue #24, item 3): the answer says what happened.

- Cancelling a run that waits records its request as *cancelled* (not
  "expired, denied automatically"), in the inbox, the timeline and the API.
- A decision after the cancel is refused (409) naming the run's state.
- An approval that wins, but whose run is cancelled before the approved call
  runs (inline: the resumed run finds it cancelled; with a broker: cancelled
  between the commit and the answer), is not answered "approved": 409 with
  ``session_status``, the same message on the page and in the admin.
- PostgreSQL: approve and cancel at the same moment, round after round; the
  answer always matches what happened.
"""

from __future__ import annotations

import html
import importlib
import re
import threading
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.approvals import decisions
from sessions_app.approvals.decisions import ApprovalClosed, RunNotResumed
from sessions_app.models import AgentSession, ApprovalRequest, ToolInvocation
from tests.sessions_app.approval_setup import PROMPT, add_approval
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ApprovalRequestFactory,
    PolicyDenialFactory,
    ProviderCallFactory,
    ToolInvocationFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

Status = AgentSession.Status
Decision = ApprovalRequest.Status


@pytest.fixture(autouse=True)
def _inline(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.WINK_APPROVAL_WEBHOOK_URL = ""


@pytest.fixture
def alice(db: Any) -> Any:
    user = UserFactory.create(username="alice", is_staff=True)
    user.groups.add(Group.objects.get(name="Approvers"))
    return type(user).objects.get(pk=user.pk)


def text_of(response: Any) -> str:
    markup = response.content.decode()
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def ran(approval: ApprovalRequest) -> bool:
    return ToolInvocation.objects.filter(
        session_id=approval.session_id, call_id=approval.call_id
    ).exists()


def status_of(session: AgentSession) -> str:
    return str(AgentSession.objects.values_list("status", flat=True).get(pk=session.pk))


# -- cancelled while waiting ------------------------------------------------------


def test_the_inbox_and_timeline_say_cancelled_not_expired(
    client: Client, paused: AgentSession, alice: Any
) -> None:
    services.cancel_session(session_id=paused.pk, user=paused.created_by)
    approval = ApprovalRequest.objects.get(session=paused)
    assert approval.status == Decision.CANCELLED
    client.force_login(alice)
    listing = text_of(client.get("/audit/approvals/")).split("Deadline / decision")
    assert "Cancelled (the run was cancelled)" in listing[1]  # its row
    assert "Expired" not in listing[1]
    viewer = UserFactory.create(username="viewer", is_superuser=True)
    client.force_login(viewer)
    timeline = text_of(client.get(paused.get_absolute_url()))
    assert "Cancelled at" in timeline and "with its run" in timeline
    assert "denied automatically" not in timeline
    api = APIClient()
    api.force_authenticate(alice)
    rows = api.get("/api/approvals/?status=cancelled").json()["results"]
    assert [row["id"] for row in rows] == [str(approval.pk)]


def test_a_decision_after_the_cancel_is_a_409_naming_the_runs_state(
    client: Client, paused: AgentSession, alice: Any
) -> None:
    services.cancel_session(session_id=paused.pk, user=paused.created_by)
    approval = ApprovalRequest.objects.get(session=paused)
    with pytest.raises(ApprovalClosed) as raised:
        decisions.decide(approval_id=approval.pk, user=alice, approve=True, reason="")
    assert (raised.value.status, raised.value.session_status) == (
        "cancelled",
        "cancelled",
    )
    api = APIClient()
    api.force_authenticate(alice)
    response = api.post(f"/api/approvals/{approval.pk}/approve/", {}, format="json")
    assert response.status_code == 409
    assert response.json() == {
        "detail": "This approval is already cancelled (the run was cancelled). "
        "(status: cancelled)",
        "code": "conflict",
        "errors": {},
        "status": "cancelled",
        "session_status": "cancelled",
    }


def test_a_pending_request_of_a_run_that_no_longer_waits_is_refused(
    alice: Any,
) -> None:
    """A pending request whose run is not waiting (recorded before requests
    were cancelled with their run) is not decided: the run would never use
    it."""
    approval = ApprovalRequestFactory.create(session__status=Status.CANCELLED)
    with pytest.raises(ApprovalClosed) as raised:
        decisions.decide(approval_id=approval.pk, user=alice, approve=True, reason="")
    assert raised.value.message == (
        "The run is cancelled; it no longer waits for this approval."
    )
    assert raised.value.session_status == "cancelled"
    approval.refresh_from_db()
    assert approval.status == Decision.PENDING and approval.decided_by is None


# -- the approval wins, the cancel comes before the call runs ----------------------


def cancel_before_the_run(monkeypatch: Any, session: AgentSession) -> None:
    """Inline: the cancel lands between the decision's commit and the resumed
    run's claim."""
    run_session = services.run_session

    def cancelled_first(**kwargs: Any) -> Any:
        services.cancel_session(session_id=session.pk, user=session.created_by)
        return run_session(**kwargs)

    monkeypatch.setattr(services, "run_session", cancelled_first)


def test_inline_an_approval_whose_run_was_cancelled_first_is_not_approved(
    monkeypatch: Any, paused: AgentSession, alice: Any
) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    cancel_before_the_run(monkeypatch, paused)
    with pytest.raises(RunNotResumed) as raised:
        decisions.decide(approval_id=approval.pk, user=alice, approve=True, reason="")
    assert raised.value.message == (
        "Approved, but the run was cancelled before the approved call ran; the "
        "call did not run."
    )
    assert (raised.value.status, raised.value.session_status) == (
        "approved",
        "cancelled",
    )
    approval.refresh_from_db()
    assert approval.status == Decision.APPROVED  # the decision stands, recorded
    assert status_of(paused) == Status.CANCELLED and not ran(approval)


def test_afterwards_the_inbox_the_page_the_api_and_the_admin_say_the_call_did_not_run(
    monkeypatch: Any, client: Client, paused: AgentSession, alice: Any
) -> None:
    """Not only the answer: whoever reads the request later is not told a
    plain "Approved" for a call that never ran."""
    approval = ApprovalRequest.objects.get(session=paused)
    cancel_before_the_run(monkeypatch, paused)
    with pytest.raises(RunNotResumed):
        decisions.decide(approval_id=approval.pk, user=alice, approve=True, reason="")
    client.force_login(alice)
    row = text_of(client.get("/audit/approvals/")).split("Deadline / decision")[1]
    assert "Approved (the call did not run)" in row
    page = text_of(client.get(f"/audit/approvals/{approval.pk}/"))
    assert "Approved (the call did not run)" in page
    assert (
        "The run was cancelled before the approved call ran; the call did not run."
        in page
    )
    api = APIClient()
    api.force_authenticate(alice)
    for url in ("/api/approvals/", f"/api/approvals/{approval.pk}/"):
        body = api.get(url).json()
        shown = body["results"][0] if "results" in body else body
        assert (shown["status"], shown["effective_status"], shown["call_outcome"]) == (
            "approved",
            "approved",
            "not_run",
        )
    admin = text_of(client.get("/admin/sessions_app/approvalrequest/"))
    assert "Approved (the call did not run)" in admin
    # a second approver is told what became of the call, not only "approved"
    second = UserFactory.create(username="bob", is_superuser=True)
    api.force_authenticate(second)
    response = api.post(f"/api/approvals/{approval.pk}/approve/", {}, format="json")
    assert response.status_code == 409
    assert response.json()["detail"] == (
        "This approval is already approved. The run was cancelled before the "
        "approved call ran; the call did not run. (status: approved)"
    )


def test_the_runs_timeline_and_events_say_the_call_did_not_run(
    monkeypatch: Any, client: Client, paused: AgentSession, alice: Any
) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    cancel_before_the_run(monkeypatch, paused)
    with pytest.raises(RunNotResumed):
        decisions.decide(approval_id=approval.pk, user=alice, approve=True, reason="")
    viewer = UserFactory.create(username="viewer", is_superuser=True)
    client.force_login(viewer)
    timeline = text_of(client.get(paused.get_absolute_url()))
    assert "Approved by alice" in timeline
    assert (
        "The run was cancelled before the approved call ran; the call did not run."
        in timeline
    )
    api = APIClient()
    api.force_authenticate(viewer)
    events = api.get(f"/api/sessions/{paused.pk}/events/?kind=approval").json()
    [row] = [event for event in events["results"] if event["kind"] == "approval"]
    assert row["data"]["call_outcome"] == "not_run"


def test_an_approved_call_that_ran_reads_approved(
    client: Client, paused: AgentSession, alice: Any
) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    decisions.decide(approval_id=approval.pk, user=alice, approve=True, reason="")
    assert status_of(paused) == Status.SUCCEEDED  # ended, after the call ran
    client.force_login(alice)
    page = text_of(client.get(f"/audit/approvals/{approval.pk}/"))
    assert "did not run" not in page and "Approved by alice" in page
    api = APIClient()
    api.force_authenticate(alice)
    assert api.get(f"/api/approvals/{approval.pk}/").json()["call_outcome"] == "ran"


@pytest.mark.parametrize(
    ("kind", "run", "attempts", "recorded", "expected"),
    [
        # an MCP request is answered when the run asked the provider again
        ("mcp", Status.CANCELLED, 0, "", "not_run"),
        ("mcp", Status.CANCELLED, 0, "later turn", "ran"),
        # cancelled while its provider request was out: the provider may
        # have run it (the run had taken the call up: a claim)
        ("mcp", Status.CANCELLED, 1, "", "unknown"),
        # the next request failed (no response): it may have reached the
        # provider
        ("mcp", Status.FAILED, 1, "later turn failed", "unknown"),
        # the run answered the provider "no" (its request id seen twice)
        ("mcp", Status.SUCCEEDED, 1, "denied mcp", "refused"),
        # a function call with nothing recorded, its run still going: not known
        ("function", Status.QUEUED, 0, "", None),
        ("function", Status.FAILED, 0, "", "not_run"),
        # crashed on the call, attempts used up: its handler may have run
        ("function", Status.FAILED, 3, "", "unknown"),
        # recorded, refused by another policy (a second approval denied)
        ("function", Status.SUCCEEDED, 1, "denied", "refused"),
        # refused on a second claim: the first may have run it
        ("function", Status.SUCCEEDED, 2, "denied", "unknown"),
    ],
)
def test_the_outcome_reads_the_record(
    alice: Any,
    kind: str,
    run: str,
    attempts: int,
    recorded: str,
    expected: str | None,
) -> None:
    approval = ApprovalRequestFactory.create(
        kind=kind,
        status=Decision.APPROVED,
        session__status=run,
        session__attempts=attempts,
        turn=3,
        sequence=None if kind == "mcp" else 4,
    )
    session = approval.session
    ProviderCallFactory.create(session=session, turn=3)
    if recorded == "later turn":
        ProviderCallFactory.create(session=session, turn=4)
    if recorded == "later turn failed":
        ProviderCallFactory.create(session=session, turn=4, response=None)
    if recorded == "denied":
        ToolInvocationFactory.create(
            session=session, call_id=approval.call_id, turn=3, sequence=4, success=False
        )
        PolicyDenialFactory.create(
            session=session, call_id=approval.call_id, turn=3, sequence=4
        )
    if recorded == "denied mcp":
        PolicyDenialFactory.create(
            session=session, call_id=approval.call_id, turn=3, sequence=0
        )
    api = APIClient()
    api.force_authenticate(alice)
    body = api.get(f"/api/approvals/{approval.pk}/").json()
    assert body["call_outcome"] == expected
    pending = ApprovalRequestFactory.create()
    assert api.get(f"/api/approvals/{pending.pk}/").json()["call_outcome"] is None


def test_an_approver_is_not_answered_approved_for_a_refused_call(alice: Any) -> None:
    approval = ApprovalRequestFactory.create(
        status=Decision.APPROVED,
        session__status=Status.SUCCEEDED,
        session__attempts=1,
        turn=3,
        sequence=4,
    )
    PolicyDenialFactory.create(
        session=approval.session, call_id=approval.call_id, turn=3, sequence=4
    )
    with pytest.raises(RunNotResumed) as raised:
        decisions._check_resumed(approval)
    assert raised.value.message == (
        "Approved, but another policy refused the call (see the run's denials); "
        "the call did not run."
    )


def test_a_failed_run_is_said_to_have_failed_not_was_failed(
    alice: Any, client: Client
) -> None:
    approval = ApprovalRequestFactory.create(
        status=Decision.APPROVED, session__status=Status.FAILED, session__attempts=2
    )
    client.force_login(alice)
    page = text_of(client.get(f"/audit/approvals/{approval.pk}/"))
    assert "Approved (the run ended; the call may have run)" in page
    assert "The run failed after it took the approved call up, before it recorded" in (
        page
    )
    assert "was failed" not in page


def test_with_a_broker_a_cancel_between_commit_and_answer_is_a_409(
    monkeypatch: Any, settings: Any, paused: AgentSession, alice: Any
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False

    def dispatch_run(session_id: Any, **kwargs: Any) -> bool:
        # queued for a worker; the author cancels it before the answer (here
        # in the decision's transaction: the test's own wraps every commit)
        services.cancel_session(session_id=session_id, user=paused.created_by)
        return True

    monkeypatch.setattr("sessions_app.runs.dispatch.dispatch_run", dispatch_run)
    approval = ApprovalRequest.objects.get(session=paused)
    api = APIClient()
    api.force_authenticate(alice)
    response = api.post(
        f"/api/approvals/{approval.pk}/approve/", {"reason": "go"}, format="json"
    )
    assert response.status_code == 409
    assert response.json() == {
        "detail": "Approved, but the run was cancelled before the approved call "
        "ran; the call did not run.",
        "code": "conflict",
        "errors": {},
        "status": "approved",
        "session_status": "cancelled",
    }
    assert not ran(approval)


def test_the_page_and_the_admin_say_the_same(
    monkeypatch: Any, client: Client, alice: Any, django_capture_on_commit_callbacks
) -> None:
    add_approval()
    author = UserFactory.create(username="author")
    sessions = []
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            sessions.append(services.start_session(prompt_ref=PROMPT, user=author))
    client.force_login(alice)
    message = (
        "Approved, but the run was cancelled before the approved call ran; the "
        "call did not run."
    )

    page_approval = ApprovalRequest.objects.get(session=sessions[0])
    cancel_before_the_run(monkeypatch, sessions[0])
    response = client.post(
        f"/audit/approvals/{page_approval.pk}/",
        {"decision": "approve", "confirm": "on", "reason": ""},
        follow=True,
    )
    assert message in text_of(response)
    assert "The run goes on" not in text_of(response)

    admin_approval = ApprovalRequest.objects.get(session=sessions[1])
    cancel_before_the_run(monkeypatch, sessions[1])
    client.post(
        "/admin/sessions_app/approvalrequest/",
        {
            "action": "approve_selected",
            "_selected_action": [str(admin_approval.pk)],
            "post": "yes",
            "reason": "",
        },
    )
    listing = text_of(client.get("/admin/sessions_app/approvalrequest/"))
    assert f"Deploy in {PROMPT}: {message}" in listing
    assert "Approvals: 1 approved but not run." in listing


def test_an_approval_whose_run_goes_on_is_answered_approved(
    paused: AgentSession, alice: Any
) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    decided = decisions.decide(
        approval_id=approval.pk, user=alice, approve=True, reason=""
    )
    assert decided.status == Decision.APPROVED
    assert status_of(paused) == Status.SUCCEEDED and ran(approval)


# -- existing rows ------------------------------------------------------------------


def test_the_migration_calls_cancelled_the_requests_expired_by_a_cancel() -> None:
    migration = importlib.import_module(
        "sessions_app.migrations.0012_approvals_per_policy"
    )
    by_cancel = ApprovalRequestFactory.create(
        session=AgentSessionFactory.create(status=Status.CANCELLED),
        status=Decision.EXPIRED,
        decision_reason="The session was cancelled. Cancelled by bob.",
    )
    timed_out = ApprovalRequestFactory.create(
        session=AgentSessionFactory.create(status=Status.CANCELLED),
        status=Decision.EXPIRED,
        decision_reason="No decision within 1d; denied automatically.",
    )
    migration.mark_cancelled(django_apps, None)
    by_cancel.refresh_from_db()
    timed_out.refresh_from_db()
    assert (by_cancel.status, timed_out.status) == (
        Decision.CANCELLED,
        Decision.EXPIRED,
    )


# -- PostgreSQL: approve and cancel at the same moment --------------------------------

ROUNDS = 8


@pytest.mark.django_db(transaction=True)
def test_approve_racing_cancel_answers_what_happened(settings: Any) -> None:
    """Inline (no broker: the approver's request runs the resumed run), an
    approver and the run's author click at the same moment, round after
    round. Whatever the order: a plain "approved" only when the approved call
    ran; otherwise a 409 naming the run's state; a request the cancel reached
    first is cancelled (never "expired"); the session and its request agree."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's (run with DATABASE_URL=postgres://...)")
    settings.CELERY_TASK_ALWAYS_EAGER = True
    add_approval()
    author = UserFactory.create(username="author")
    approver = UserFactory.create(username="alice")
    # the permission itself: a transactional test's flush drops the groups
    approver.user_permissions.add(
        Permission.objects.get(codename="decide_any_approval")
    )
    approver = type(approver).objects.get(pk=approver.pk)
    sessions = [
        services.start_session(prompt_ref=PROMPT, user=author) for _ in range(ROUNDS)
    ]
    assert {s.status for s in sessions} == {Status.AWAITING_APPROVAL}
    outcomes: list[tuple[str, str]] = []
    errors: list[BaseException] = []

    for session in sessions:
        approval = ApprovalRequest.objects.get(session=session)
        barrier = threading.Barrier(2)
        answer: dict[str, Any] = {}

        def approve(
            approval: ApprovalRequest = approval,
            barrier: threading.Barrier = barrier,
            answer: dict[str, Any] = answer,
        ) -> None:
            try:
                barrier.wait(timeout=10)
                decisions.decide(
                    approval_id=approval.pk, user=approver, approve=True, reason=""
                )
                answer["approved"] = True
            except ApprovalClosed as refused:
                answer["closed"] = refused
            except BaseException as error:
                errors.append(error)
            finally:
                connection.close()

        def cancel(
            session: AgentSession = session, barrier: threading.Barrier = barrier
        ) -> None:
            try:
                barrier.wait(timeout=10)
                services.cancel_session(session_id=session.pk, user=author)
            except BaseException as error:
                errors.append(error)
            finally:
                connection.close()

        threads = [threading.Thread(target=approve), threading.Thread(target=cancel)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads)
        assert errors == []
        approval.refresh_from_db()
        final = status_of(session)
        assert approval.status in (Decision.APPROVED, Decision.CANCELLED)
        if "approved" in answer:
            # 200: the approved call ran (the run then finished, or stopped
            # at a later step for the cancel)
            assert ran(approval), (final, approval.status)
            assert approval.status == Decision.APPROVED
            outcomes.append(("200", final))
            continue
        closed = answer["closed"]
        assert not ran(approval)
        assert final == Status.CANCELLED
        assert closed.session_status == final
        if approval.status == Decision.CANCELLED:  # the cancel came first
            assert type(closed) is ApprovalClosed
            assert closed.status == Decision.CANCELLED
        else:  # the approval came first, the cancel before the call ran
            assert isinstance(closed, RunNotResumed)
            assert closed.status == Decision.APPROVED
        outcomes.append(("409", final))
    assert len(outcomes) == ROUNDS


# -- past its deadline, before the sweeper ------------------------------------------


def test_a_request_past_its_deadline_reads_expired_without_a_decision_form(
    client: Client, paused: AgentSession, alice: Any
) -> None:
    # it read "Pending" with Approve and Deny, and a click said "already expired"
    approval = ApprovalRequest.objects.get(session=paused)
    ApprovalRequest.objects.filter(pk=approval.pk).update(
        expires_at=approval.requested_at
    )
    client.force_login(alice)

    listing = text_of(client.get("/audit/approvals/")).split("Deadline / decision")
    page = client.get(f"/audit/approvals/{approval.pk}/")

    assert "Expired (the sweeper closes it)" in listing[1]
    assert "due " in listing[1] and "the run ended" not in listing[1]
    assert "Expired (the sweeper closes it)" in text_of(page)
    assert 'value="approve"' not in page.content.decode()
    approval.refresh_from_db()
    assert approval.status == Decision.PENDING  # a read writes nothing


def test_a_request_within_its_deadline_is_still_pending(
    client: Client, paused: AgentSession, alice: Any
) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    client.force_login(alice)

    page = client.get(f"/audit/approvals/{approval.pk}/")

    assert "needs approval" in text_of(page)
    assert 'value="approve"' in page.content.decode()
