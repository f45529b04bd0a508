"""Issue #24, items 1 and 2, through the catalog, the service, the API, the
page and the admin (SQLite inline; PostgreSQL with DATABASE_URL):

- two approval policies on one tool each need a decision by their own
  approvers: an intern's approval under ``aa-interns-ok`` does not let the
  deploy run; ``zz-security-signoff`` then asks Security;
- four eyes: under a policy's ``"four_eyes": true`` (or
  ``WINK_APPROVAL_FOUR_EYES``) the run's author may not decide its request,
  whatever they hold, superuser included; someone else may.
"""

from __future__ import annotations

import html
import os
import re
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.test import Client
from rest_framework.test import APIClient

from sessions_app import access, services
from sessions_app.approvals import decisions, outcome
from sessions_app.models import AgentSession, ApprovalRequest, ToolInvocation
from sessions_app.runs.recording import record_approval_requested
from tests.sessions_app.approval_setup import PROMPT, deploys
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ApprovalRequestFactory,
    UserFactory,
)
from tooling.demo import seed_demo_catalog
from tooling.models import PolicyDefinition, PromptTemplate
from tooling.runtime import ApprovalRequested

pytestmark = pytest.mark.django_db

Status = AgentSession.Status
Decision = ApprovalRequest.Status


@pytest.fixture(autouse=True)
def _inline(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.WINK_APPROVAL_WEBHOOK_URL = ""
    settings.WINK_APPROVAL_FOUR_EYES = False


def member(username: str, group: str, **fields: Any) -> Any:
    user = UserFactory.create(username=username, **fields)
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return type(user).objects.get(pk=user.pk)  # fresh permission cache


def policy(name: str, **config: Any) -> PolicyDefinition:
    return PolicyDefinition.objects.create(
        name=name,
        kind=PolicyDefinition.Kind.APPROVAL,
        config={"rules": [{"tool": "deploy"}], **config},
    )


def release_with(*policies: PolicyDefinition) -> None:
    seed_demo_catalog()
    PromptTemplate.objects.get(namespace="demo", key="release").policies.add(*policies)


def start(user: Any, django_capture_on_commit_callbacks: Any) -> AgentSession:
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref=PROMPT, user=user)
    session.refresh_from_db()
    return session


def decide(approval: ApprovalRequest, user: Any, callbacks: Any) -> Any:
    with callbacks(execute=True):
        return decisions.decide(
            approval_id=approval.pk, user=user, approve=True, reason="ok"
        )


def pending(session: AgentSession) -> ApprovalRequest:
    return ApprovalRequest.objects.get(session=session, status=Decision.PENDING)


# -- item 1: one approval per policy ------------------------------------------------


@pytest.fixture
def two_policies(db: Any) -> None:
    release_with(
        policy("aa-interns-ok", approvers={"group": "Interns"}),
        policy(
            "zz-security-signoff",
            approvers={"group": "Security"},
            deadline_seconds=600,
        ),
    )


def test_an_interns_approval_does_not_satisfy_the_security_policy(
    two_policies: None, django_capture_on_commit_callbacks: Any
) -> None:
    intern = member("intern", "Interns")
    security = member("sec", "Security")
    session = start(
        UserFactory.create(username="author"), django_capture_on_commit_callbacks
    )
    first = pending(session)
    assert (first.policy_name, first.approvers) == (
        "aa-interns-ok",
        {"group": "Interns"},
    )

    decide(first, intern, django_capture_on_commit_callbacks)

    session.refresh_from_db()
    # the deploy did not run: Security was asked, for the same call
    assert session.status == Status.AWAITING_APPROVAL
    assert not ToolInvocation.objects.filter(
        session=session, call_id=first.call_id
    ).exists()
    second = pending(session)
    assert (second.call_id, second.sequence) == (first.call_id, first.sequence)
    assert (second.policy_name, second.approvers) == (
        "zz-security-signoff",
        {"group": "Security"},
    )
    assert (second.expires_at - second.requested_at).total_seconds() == 600
    assert session.pauses == 2
    # the intern may not decide Security's request
    assert not access.may_decide(intern, second)
    assert not ApprovalRequest.objects.decidable_by(intern).filter(pk=second.pk)
    with pytest.raises(ApprovalRequest.DoesNotExist):  # nor sees it: a 404
        decisions.decide(
            approval_id=second.pk, user=intern, approve=True, reason="me too"
        )

    decide(second, security, django_capture_on_commit_callbacks)

    session.refresh_from_db()
    assert session.status == Status.SUCCEEDED
    (ran,) = ToolInvocation.objects.filter(session=session, call_id=first.call_id)
    assert ran.success and [d.success for d in deploys(session)].count(True) == 1
    assert sorted(
        ApprovalRequest.objects.filter(session=session).values_list(
            "policy_name", "status", "decided_by__username"
        )
    ) == [
        ("aa-interns-ok", "approved", "intern"),
        ("zz-security-signoff", "approved", "sec"),
    ]


def test_a_denial_under_the_second_policy_denies_the_call(
    two_policies: None, django_capture_on_commit_callbacks: Any
) -> None:
    session = start(
        UserFactory.create(username="author"), django_capture_on_commit_callbacks
    )
    decide(
        pending(session),
        member("intern", "Interns"),
        django_capture_on_commit_callbacks,
    )
    second = pending(session)
    with django_capture_on_commit_callbacks(execute=True):
        decisions.decide(
            approval_id=second.pk,
            user=member("sec", "Security"),
            approve=False,
            reason="no change ticket",
        )
    session.refresh_from_db()
    assert session.status == Status.SUCCEEDED
    call = ToolInvocation.objects.get(session=session, call_id=second.call_id)
    assert not call.success
    assert call.model_output == "Denied by sec: no change ticket"
    # the first policy's "yes" is not read as "it ran" (docs/approvals.md)
    first = (
        ApprovalRequest.objects.with_call_record()
        .select_related("session")
        .get(session=session, status=ApprovalRequest.Status.APPROVED)
    )
    assert outcome.of(first) is outcome.Outcome.REFUSED


# -- item 2: four eyes --------------------------------------------------------------


@pytest.fixture
def boss(db: Any) -> Any:
    """A superuser, in the Approvers group, who starts the run."""
    return member("boss", "Approvers", is_superuser=True, is_staff=True)


@pytest.fixture
def alice(db: Any) -> Any:
    return member("alice", "Approvers", is_staff=True)


@pytest.fixture
def own_run(
    boss: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> AgentSession:
    release_with(policy("release-approval", four_eyes=True))
    return start(boss, django_capture_on_commit_callbacks)


def test_four_eyes_is_copied_onto_the_request(own_run: AgentSession) -> None:
    assert pending(own_run).four_eyes is True


def test_the_author_may_not_decide_their_own_run_even_as_superuser(
    own_run: AgentSession, boss: Any
) -> None:
    approval = pending(own_run)
    assert access.is_own_run(boss, approval)
    assert not access.may_decide(boss, approval)
    assert not ApprovalRequest.objects.decidable_by(boss).filter(pk=approval.pk)
    for approve in (True, False):
        with pytest.raises(PermissionDenied) as raised:
            decisions.decide(
                approval_id=approval.pk, user=boss, approve=approve, reason="mine"
            )
        assert str(raised.value) == access.OWN_RUN
    approval.refresh_from_db()
    assert approval.status == Decision.PENDING
    # they still see it (their own run), read-only
    assert ApprovalRequest.objects.visible_to(boss).filter(pk=approval.pk).exists()


def test_a_second_person_decides_the_authors_run(
    own_run: AgentSession, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    approval = pending(own_run)
    assert access.may_decide(alice, approval)
    decide(approval, alice, django_capture_on_commit_callbacks)
    own_run.refresh_from_db()
    assert own_run.status == Status.SUCCEEDED


def test_the_api_refuses_the_author_with_the_reason(
    own_run: AgentSession, boss: Any
) -> None:
    approval = pending(own_run)
    client = APIClient()
    client.force_authenticate(boss)
    detail = client.get(f"/api/approvals/{approval.pk}/").json()
    assert (detail["four_eyes"], detail["may_decide"]) == (True, False)
    response = client.post(f"/api/approvals/{approval.pk}/approve/", {}, format="json")
    assert response.status_code == 403
    assert response.json() == {
        "detail": "You started this run; a second person must decide it.",
        "code": "permission_denied",
        "errors": {},
    }
    assert pending(own_run).pk == approval.pk


def text_of(response: Any) -> str:
    markup = response.content.decode()
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def test_the_page_shows_the_author_the_request_read_only_with_why(
    client: Client, own_run: AgentSession, boss: Any
) -> None:
    approval = pending(own_run)
    client.force_login(boss)
    response = client.get(f"/audit/approvals/{approval.pk}/")
    assert response.status_code == 200
    assert 'id="decision-form"' not in response.content.decode()
    text = text_of(response)
    assert "You started this run; a second person must decide it." in text
    assert "The person who started the run may not decide it." in text
    response = client.post(
        f"/audit/approvals/{approval.pk}/",
        {"decision": "approve", "confirm": "on", "reason": ""},
    )
    assert response.status_code == 403
    assert pending(own_run).pk == approval.pk


def test_without_four_eyes_the_authors_note_names_who_decides(
    client: Client, django_capture_on_commit_callbacks: Any
) -> None:
    release_with(policy("release-approval"))
    author = UserFactory.create(username="author")
    approval = pending(start(author, django_capture_on_commit_callbacks))
    client.force_login(author)
    text = text_of(client.get(f"/audit/approvals/{approval.pk}/"))
    assert "You may see this approval but not decide it: that needs" in text
    assert access.OWN_RUN not in text and "Four eyes" not in text


def test_the_admin_action_refuses_the_author_with_the_reason(
    client: Client, own_run: AgentSession, boss: Any
) -> None:
    approval = pending(own_run)
    others = ApprovalRequestFactory.create()  # someone else's: boss may decide it
    client.force_login(boss)
    response = client.post(
        "/admin/sessions_app/approvalrequest/",
        {
            "action": "deny_selected",
            "_selected_action": [str(approval.pk), str(others.pk)],
            "post": "yes",
            "reason": "No.",
        },
    )
    assert response.status_code == 302
    text = text_of(client.get("/admin/sessions_app/approvalrequest/"))
    assert (
        "Deploy in demo/release: You started this run; a second person must "
        "decide it." in text
    )
    assert "Approvals: 1 denied, 1 not allowed." in text
    assert pending(own_run).pk == approval.pk
    others.refresh_from_db()
    assert others.status == Decision.DENIED


def test_the_row_decides_not_the_live_catalog(own_run: AgentSession, boss: Any) -> None:
    PolicyDefinition.objects.filter(name="release-approval").update(
        config={"rules": [{"tool": "deploy"}], "four_eyes": False}
    )
    with pytest.raises(PermissionDenied):
        decisions.decide(
            approval_id=pending(own_run).pk, user=boss, approve=True, reason=""
        )


def test_without_four_eyes_the_author_who_may_decide_does(
    boss: Any, django_capture_on_commit_callbacks: Any
) -> None:
    release_with(policy("release-approval"))
    session = start(boss, django_capture_on_commit_callbacks)
    approval = pending(session)
    assert approval.four_eyes is False
    decide(approval, boss, django_capture_on_commit_callbacks)
    session.refresh_from_db()
    assert session.status == Status.SUCCEEDED


@pytest.mark.parametrize(
    ("default", "config", "expected"),
    [
        (True, {}, True),
        (True, {"four_eyes": False}, False),
        (False, {"four_eyes": True}, True),
        (False, {}, False),
    ],
)
def test_the_global_default_applies_unless_the_policy_says(
    settings: Any,
    boss: Any,
    django_capture_on_commit_callbacks: Any,
    default: bool,
    config: dict[str, Any],
    expected: bool,
) -> None:
    settings.WINK_APPROVAL_FOUR_EYES = default
    release_with(policy("release-approval", **config))
    session = start(boss, django_capture_on_commit_callbacks)
    assert pending(session).four_eyes is expected


@pytest.mark.parametrize("default", [True, False])
def test_an_mcp_request_takes_the_global_default(settings: Any, default: bool) -> None:
    settings.WINK_APPROVAL_FOUR_EYES = default
    session = AgentSessionFactory.create(status=Status.RUNNING)
    event = ApprovalRequested(
        prompt_name="p",
        kind="mcp",
        tool_name="delete_customer",
        call_id="mcpr_1",
        turn=1,
        reason="MCP server 'crm' asks for approval to call 'delete_customer'.",
        server_label="crm",
        policy_name="crm",
    )
    assert record_approval_requested(session=session, event=event).four_eyes is default


@pytest.mark.parametrize(
    ("value", "valid"),
    [("true", True), ("false", True), ('"yes"', False), ("1", False)],
)
def test_the_policy_form_validates_four_eyes(value: str, valid: bool) -> None:
    from tooling.forms import PolicyDefinitionForm

    form = PolicyDefinitionForm(
        data={
            "name": "prod-approval",
            "kind": "approval",
            "config": f'{{"rules": [{{"tool": "deploy"}}], "four_eyes": {value}}}',
        }
    )
    assert form.is_valid() is valid, form.errors
    if not valid:
        assert "four_eyes must be true" in " ".join(map(str, form.errors["config"]))


# -- the demo: the production deploy needs a second person ---------------------------


def test_the_demo_production_deploy_needs_a_second_person(
    settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    settings.DEBUG = True
    with (
        open(os.devnull, "w") as quiet,
        django_capture_on_commit_callbacks(execute=True),
    ):
        call_command("seed_demo", "--no-sessions", stdout=quiet)
    users = get_user_model().objects
    admin = users.get(username="admin")  # the demo superuser, an approver
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref="demo/ship", user=admin)
    approval = pending(session)
    with pytest.raises(PermissionDenied):
        decisions.decide(approval_id=approval.pk, user=admin, approve=True, reason="")
    # the second demo account may, and is no superuser
    approver = users.get(username="approver")
    assert approver.check_password("approver")
    assert approver.groups.filter(name="Approvers").exists()
    assert not approver.is_superuser
    decide(approval, approver, django_capture_on_commit_callbacks)
    session.refresh_from_db()
    assert session.status == Status.SUCCEEDED
