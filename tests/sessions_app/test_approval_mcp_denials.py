"""An MCP approval request the run answers "no" without asking anyone (its
server is not offered by the prompt) leaves a trace (issue #24): a recorded
policy denial with its reason, on the timeline and in the events API, the
answer still "no"; a resumed run that replays the turn records it once.

Turn 1 is a body recorded from the real API (vercel/ai's
``openai-mcp-tool-approval.1.json``, Apache License 2.0; copied unchanged
from the shared reference as
``tests/fixtures/hosted_tools/mcp_approval_request_real_zip1.json``): an
``mcp_approval_request`` from the server ``zip1``, which ``demo/release``
does not offer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.approvals import decisions
from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    PolicyDenial,
    ProviderCall,
)
from sessions_app.runs import replay
from tests.runtime.fakes import FakeProvider, function_call, message, response
from tests.sessions_app.approval_setup import PROMPT, add_approval
from tests.sessions_app.factories import UserFactory
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "hosted_tools"
    / "mcp_approval_request_real_zip1.json"
)
REASON = (
    "MCP server 'zip1' is not offered by this prompt; its approval request was "
    "answered no."
)


def recorded_turn() -> dict[str, Any]:
    body: dict[str, Any] = json.loads(FIXTURE.read_text())
    return body


def request_id() -> str:
    (item,) = [
        item
        for item in recorded_turn()["output"]
        if item["type"] == "mcp_approval_request"
    ]
    return str(item["id"])


def answers(provider_call: ProviderCall) -> list[dict[str, Any]]:
    return [
        item
        for item in provider_call.request["input"]
        if isinstance(item, dict) and item.get("type") == "mcp_approval_response"
    ]


def test_an_undeclared_servers_request_is_a_recorded_denial(settings) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    seed_demo_catalog()
    author = UserFactory.create(username="author")
    provider = FakeProvider(recorded_turn(), response(message("Done."), id="r2"))

    session = services.start_session(
        prompt_ref=PROMPT, user=author, client=provider.client
    )

    assert session.status == AgentSession.Status.SUCCEEDED
    assert not ApprovalRequest.objects.filter(session=session).exists()
    (denial,) = PolicyDenial.objects.filter(session=session)
    assert (denial.policy_name, denial.tool_name, denial.call_id) == (
        "offered-mcp-servers",
        "create_short_url",
        request_id(),
    )
    assert denial.reason == REASON
    assert denial.turn == 1
    assert denial.params["url"] == "https://ai-sdk.dev/"
    # the answer is still "no", with the same reason
    second = ProviderCall.objects.get(session=session, turn=2)
    assert answers(second) == [
        {
            "type": "mcp_approval_response",
            "approval_request_id": request_id(),
            "approve": False,
            "reason": REASON,
        }
    ]
    # on the timeline: the events API and the session page
    client = APIClient()
    client.force_authenticate(author)
    body = client.get(f"/api/sessions/{session.pk}/events/?page_size=500").json()
    [row] = [event for event in body["results"] if event["kind"] == "policy_denial"]
    assert row["data"]["reason"] == REASON
    assert row["data"]["call_id"] == request_id()
    client.force_login(author)
    page = client.get(session.get_absolute_url()).content.decode()
    assert "offered-mcp-servers" in page
    assert "is not offered by this prompt; its approval request was answered no." in (
        page.replace("&#x27;", "'")
    )


def test_a_resumed_run_replaying_the_turn_records_the_denial_once(
    settings, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    """The run pauses later (an approval of ``lint`` at turn 2); resumed, it
    replays turn 1, answers the request "no" again, and the denial, recorded
    already, is not written twice."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    add_approval({"rules": [{"tool": "lint"}]})
    author = UserFactory.create(username="author")
    approver = UserFactory.create(username="alice")
    approver.user_permissions.add(
        Permission.objects.get(codename="decide_any_approval")
    )
    approver = type(approver).objects.get(pk=approver.pk)
    provider = FakeProvider(
        recorded_turn(),
        response(function_call("lint", "{}", "c_lint"), id="r2"),
        response(message("Linted."), id="r3"),
    )
    # the resumed run (inline, in the decision) talks to the same fake provider
    monkeypatch.setattr("tooling.services.build_client", lambda: provider.client)
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(
            prompt_ref=PROMPT, user=author, client=provider.client
        )
    assert session.status == AgentSession.Status.AWAITING_APPROVAL
    (denial,) = PolicyDenial.objects.filter(session=session)
    assert str(denial.event_id) in replay.load(session).recorded_event_ids

    approval = ApprovalRequest.objects.get(session=session)
    with django_capture_on_commit_callbacks(execute=True):
        decisions.decide(
            approval_id=approval.pk, user=approver, approve=True, reason=""
        )

    session.refresh_from_db()
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    assert PolicyDenial.objects.filter(session=session).count() == 1
    assert len(provider.requests) == 3  # turns 1 and 2 replayed, not requested
