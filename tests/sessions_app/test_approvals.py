"""Approval pauses and resumes on SQLite, inline (no broker): a run pauses
when its approval policy asks, holds no worker while it waits, resumes exactly
once when approved (the call runs) or denied (the model reads the denial),
is denied automatically past its deadline, and can be cancelled while it
waits."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from sessions_app import services
from sessions_app.approvals import decisions
from sessions_app.approvals.decisions import ApprovalClosed
from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    PolicyDenial,
    ProviderCall,
    ToolInvocation,
)
from tests.sessions_app.approval_setup import PROMPT, add_approval, deploys

pytestmark = pytest.mark.django_db

Status = AgentSession.Status


def test_a_run_pauses_when_a_policy_asks(paused: AgentSession) -> None:
    assert paused.status == Status.AWAITING_APPROVAL
    (approval,) = ApprovalRequest.objects.filter(session=paused)
    assert approval.status == ApprovalRequest.Status.PENDING
    assert (approval.kind, approval.tool_name, approval.policy_name) == (
        "function",
        "deploy",
        "release-approval",
    )
    assert approval.reason == "Tool 'deploy' needs a human decision."
    assert approval.sequence is not None and approval.call_id
    assert approval.params == {"environment": "staging"}
    # no worker, lease or claim holds a waiting run; its attempts start over
    assert (paused.claim_token, paused.lease_expires_at, paused.attempts) == (
        None,
        None,
        0,
    )
    assert paused.pauses == 1 and paused.deadline_at is None
    left = paused.deadline_left_seconds
    assert left is not None and 0 < left <= paused.deadline_seconds
    # the paused call is not recorded (the denied attempt before it is)
    assert all(not call.success for call in deploys(paused))
    assert not ToolInvocation.objects.filter(
        session=paused, call_id=approval.call_id
    ).exists()


def test_the_approval_expires_after_the_default_timeout(
    paused: AgentSession, settings
) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    waited = approval.expires_at - approval.requested_at
    assert waited == timedelta(seconds=settings.WINK_APPROVAL_TIMEOUT_SECONDS)


def test_the_policy_deadline_overrides_the_default_timeout(
    django_capture_on_commit_callbacks,
) -> None:
    add_approval({"rules": [{"tool": "deploy"}], "deadline_seconds": 600})
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref=PROMPT)
    approval = ApprovalRequest.objects.get(session=session)
    assert approval.expires_at - approval.requested_at == timedelta(seconds=600)


def test_approvers_hear_of_the_request_once_it_is_committed(
    monkeypatch, django_capture_on_commit_callbacks
) -> None:
    heard: list[Any] = []
    monkeypatch.setattr(
        "sessions_app.approvals.notifications.approval_requested", heard.append
    )
    add_approval()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        session = services.start_session(prompt_ref=PROMPT)
    assert heard == []
    for callback in callbacks:
        callback()
    assert [approval.session_id for approval in heard] == [session.pk]


def test_approve_resumes_the_run_once_and_it_finishes(
    paused: AgentSession, approver
) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    calls_before = ProviderCall.objects.filter(session=paused).count()

    decided = decisions.decide(
        approval_id=approval.pk, user=approver, approve=True, reason="ship it"
    )

    assert decided.status == ApprovalRequest.Status.APPROVED
    assert (decided.decided_by, decided.decision_reason) == (approver, "ship it")
    assert decided.decided_at is not None
    paused.refresh_from_db()
    assert paused.status == Status.SUCCEEDED
    (ran,) = ToolInvocation.objects.filter(session=paused, call_id=approval.call_id)
    assert ran.success and ran.sequence == approval.sequence
    assert "Would deploy" in ran.message
    # the paused turn was replayed, not requested again: one more request
    assert ProviderCall.objects.filter(session=paused).count() == calls_before + 1
    assert paused.pauses == 1 and paused.attempts == 1


def test_deny_answers_the_model_with_the_denial(paused: AgentSession, approver) -> None:
    approval = ApprovalRequest.objects.get(session=paused)

    decisions.decide(
        approval_id=approval.pk, user=approver, approve=False, reason="not today"
    )

    paused.refresh_from_db()
    assert paused.status == Status.SUCCEEDED
    denial = PolicyDenial.objects.get(session=paused, call_id=approval.call_id)
    assert denial.policy_name == "release-approval"
    assert denial.reason == "Denied by alice: not today"
    call = ToolInvocation.objects.get(session=paused, call_id=approval.call_id)
    assert not call.success
    assert call.model_output == "Denied by alice: not today"
    # the (offline) model read the denial as a failure, not as a deploy
    assert paused.output_text.endswith("deploy failed."), paused.output_text


@pytest.mark.parametrize(
    "reason",
    [
        "  ",
        "\u200b\u202e",
        "\t\u2028\u00ad",
        "\u0301",
        "\ufeff ",
        "\u3164\u115f\u1160",  # Hangul fillers: letters that show as nothing
        "\uffa0 \u2800",  # a halfwidth filler, the blank Braille pattern
    ],
)
def test_deny_needs_a_reason(paused: AgentSession, approver, reason: str) -> None:
    """Blank, or only invisible characters (zero-width, bidi controls, a soft
    hyphen, a lone combining mark): the model would read nothing."""
    approval = ApprovalRequest.objects.get(session=paused)
    with pytest.raises(ValidationError) as raised:
        decisions.decide(
            approval_id=approval.pk, user=approver, approve=False, reason=reason
        )
    assert raised.value.message_dict == {
        "reason": ["Say why you deny it: the model reads the reason."]
    }
    approval.refresh_from_db()
    assert approval.status == ApprovalRequest.Status.PENDING


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        ("x" * 2001, "The reason is at most 2000 characters long."),
        (["no"], "The reason must be text."),
    ],
)
def test_a_reason_must_be_bounded_text(
    paused: AgentSession, approver, reason: Any, message: str
) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    with pytest.raises(ValidationError) as raised:
        decisions.decide(
            approval_id=approval.pk, user=approver, approve=True, reason=reason
        )
    assert raised.value.message_dict == {"reason": [message]}


def test_a_reason_is_stored_storable(paused: AgentSession, approver) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    decided = decisions.decide(
        approval_id=approval.pk, user=approver, approve=True, reason="ok\x00\ud800"
    )
    assert decided.decision_reason == "ok\ufffd\ufffd"
    assert decided.text_altered


def test_a_second_decision_is_refused_and_resumes_nothing(
    paused: AgentSession, approver
) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    decisions.decide(approval_id=approval.pk, user=approver, approve=True, reason="")
    requests = ProviderCall.objects.filter(session=paused).count()

    with pytest.raises(ApprovalClosed) as raised:
        decisions.decide(
            approval_id=approval.pk, user=approver, approve=True, reason="again"
        )
    assert raised.value.status == "approved"
    assert raised.value.message == "This approval is already approved."
    assert ProviderCall.objects.filter(session=paused).count() == requests
    assert len([c for c in deploys(paused) if c.success]) == 1


def test_an_overdue_approval_expires_through_the_sweep(
    paused: AgentSession,
) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    ApprovalRequest.objects.filter(pk=approval.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1),
        requested_at=timezone.now() - timedelta(hours=1, seconds=1),
    )

    report = services.sweep_stale_sessions()

    assert report.expired_approvals == [str(approval.pk)]
    approval.refresh_from_db()
    assert approval.status == ApprovalRequest.Status.EXPIRED
    assert approval.decided_by is None
    assert approval.decision_reason == "No decision within 1h; denied automatically."
    paused.refresh_from_db()
    assert paused.status == Status.SUCCEEDED
    denial = PolicyDenial.objects.get(session=paused, call_id=approval.call_id)
    assert denial.reason == "No decision within 1h; denied automatically."


def test_deciding_an_overdue_approval_is_refused_and_expires_it(
    paused: AgentSession, approver
) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    ApprovalRequest.objects.filter(pk=approval.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    with pytest.raises(ApprovalClosed) as raised:
        decisions.decide(
            approval_id=approval.pk, user=approver, approve=True, reason=""
        )
    assert raised.value.status == "expired"
    paused.refresh_from_db()
    assert paused.status == Status.SUCCEEDED  # resumed with the automatic denial


def test_sweep_leaves_approvals_within_their_deadline(paused: AgentSession) -> None:
    assert services.sweep_stale_sessions().expired_approvals == []
    paused.refresh_from_db()
    assert paused.status == Status.AWAITING_APPROVAL


def test_cancel_while_waiting_cancels_at_once_and_the_approval_with_it(
    paused: AgentSession,
) -> None:
    author = paused.created_by
    assert services.cancel_session(session_id=paused.pk, user=author) == "cancelled"

    paused.refresh_from_db()
    assert paused.status == Status.CANCELLED
    assert paused.error_message == "Cancelled by author."
    approval = ApprovalRequest.objects.get(session=paused)
    # cancelled, not "expired (denied automatically)": nobody denied it
    assert approval.status == ApprovalRequest.Status.CANCELLED
    assert approval.get_status_display() == "Cancelled (the run was cancelled)"
    assert approval.decision_reason == "The session was cancelled. Cancelled by author."


def test_a_decision_after_cancel_is_refused(paused: AgentSession, approver) -> None:
    services.cancel_session(session_id=paused.pk, user=paused.created_by)
    approval = ApprovalRequest.objects.get(session=paused)
    with pytest.raises(ApprovalClosed):
        decisions.decide(
            approval_id=approval.pk, user=approver, approve=True, reason=""
        )
    paused.refresh_from_db()
    assert paused.status == Status.CANCELLED


def test_waiting_does_not_use_up_the_deadline(paused: AgentSession, approver) -> None:
    # the run waited far longer than its whole deadline
    left = paused.deadline_left_seconds
    assert left is not None
    ApprovalRequest.objects.filter(session=paused).update(
        requested_at=timezone.now() - timedelta(seconds=paused.deadline_seconds * 3)
    )
    started = timezone.now()
    approval = ApprovalRequest.objects.get(session=paused)

    decisions.decide(approval_id=approval.pk, user=approver, approve=True, reason="")

    paused.refresh_from_db()
    assert paused.status == Status.SUCCEEDED
    assert paused.deadline_left_seconds is None
    # the resumed claim's deadline: the time left at the pause, from the resume
    assert paused.deadline_at is not None
    assert paused.deadline_at >= started + timedelta(seconds=left)


def test_a_resumed_run_that_pauses_again_waits_again(
    django_capture_on_commit_callbacks, approver
) -> None:
    add_approval({"rules": [{"tool": "deploy"}, {"tool": "test"}]})
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref=PROMPT)
    first = ApprovalRequest.objects.get(session=session)
    assert first.tool_name == "test"
    with django_capture_on_commit_callbacks(execute=True):
        decisions.decide(approval_id=first.pk, user=approver, approve=True, reason="")
    session.refresh_from_db()
    assert session.status == Status.AWAITING_APPROVAL
    assert session.pauses == 2
    second = ApprovalRequest.objects.get(session=session, status="pending")
    assert second.tool_name == "deploy"
    with django_capture_on_commit_callbacks(execute=True):
        decisions.decide(approval_id=second.pk, user=approver, approve=True, reason="")
    session.refresh_from_db()
    assert session.status == Status.SUCCEEDED
    assert (
        ToolInvocation.objects.filter(session=session, call_id=first.call_id)
        .get()
        .success
    )


def test_with_a_broker_a_decision_dispatches_the_run_after_commit(
    paused: AgentSession, approver, settings, django_capture_on_commit_callbacks
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False
    approval = ApprovalRequest.objects.get(session=paused)
    with django_capture_on_commit_callbacks() as sent:
        decisions.decide(
            approval_id=approval.pk, user=approver, approve=True, reason=""
        )
    assert len(sent) == 1  # the run goes to the broker once committed
    paused.refresh_from_db()
    assert paused.status == Status.QUEUED
    assert paused.dispatched_at is not None
