"""Who may decide an approval (the service's answers: unknown, forbidden,
malformed), and approval policies in the catalog's admin form."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import PermissionDenied, ValidationError

from sessions_app import access, services
from sessions_app.approvals import decisions
from sessions_app.models import AgentSession, ApprovalRequest
from tests.sessions_app.approval_setup import PROMPT, add_approval
from tests.sessions_app.factories import UserFactory

pytestmark = pytest.mark.django_db


# -- who may decide ---------------------------------------------------------------


def test_a_user_who_may_not_see_it_gets_does_not_exist(paused: AgentSession) -> None:
    stranger = UserFactory.create()
    approval = ApprovalRequest.objects.get(session=paused)
    with pytest.raises(ApprovalRequest.DoesNotExist):
        decisions.decide(
            approval_id=approval.pk, user=stranger, approve=True, reason=""
        )


@pytest.mark.parametrize("approval_id", ["not-a-uuid", 42, None, "\x00"])
def test_a_malformed_id_is_an_unknown_approval(
    paused: AgentSession, approver, approval_id: Any
) -> None:
    with pytest.raises(ApprovalRequest.DoesNotExist):
        decisions.decide(
            approval_id=approval_id, user=approver, approve=True, reason=""
        )


def test_approve_must_be_a_boolean(paused: AgentSession, approver) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    with pytest.raises(ValidationError):
        decisions.decide(
            approval_id=approval.pk,
            user=approver,
            approve="false",  # type: ignore[arg-type]
            reason="",
        )
    approval.refresh_from_db()
    assert approval.status == ApprovalRequest.Status.PENDING


def test_the_author_sees_but_may_not_decide(paused: AgentSession) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    assert ApprovalRequest.objects.visible_to(paused.created_by).count() == 1
    with pytest.raises(PermissionDenied):
        decisions.decide(
            approval_id=approval.pk, user=paused.created_by, approve=True, reason=""
        )


def test_the_named_group_and_permission_decide(
    django_capture_on_commit_callbacks,
) -> None:
    add_approval(
        {
            "rules": [{"tool": "deploy"}],
            "approvers": {
                "group": "Release managers",
                "permission": "sessions_app.cancel_any_session",
            },
        }
    )
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref=PROMPT)
    approval = ApprovalRequest.objects.get(session=session)
    assert approval.approvers == {
        "group": "Release managers",
        "permission": "sessions_app.cancel_any_session",
    }
    member = UserFactory.create()
    member.groups.add(Group.objects.create(name="Release managers"))
    holder = UserFactory.create()
    holder.user_permissions.add(Permission.objects.get(codename="cancel_any_session"))
    nobody = UserFactory.create()
    for user, expected in ((member, True), (holder, True), (nobody, False)):
        user = type(user).objects.get(pk=user.pk)
        assert access.may_decide(user, approval) is expected
        assert ApprovalRequest.objects.decidable_by(user).exists() is expected


def test_default_approvers_hold_decide_any_approval(paused: AgentSession) -> None:
    approval = ApprovalRequest.objects.get(session=paused)
    in_group = UserFactory.create()
    in_group.groups.add(Group.objects.get(name="Approvers"))
    superuser = UserFactory.create(is_superuser=True)
    anonymous_like = UserFactory.create(is_active=False, is_superuser=True)
    assert access.may_decide(in_group, approval)
    assert access.may_decide(superuser, approval)
    assert not access.may_decide(anonymous_like, approval)
    assert not access.may_decide(paused.created_by, approval)
    assert list(ApprovalRequest.objects.decidable_by(in_group)) == [approval]
    assert not ApprovalRequest.objects.decidable_by(paused.created_by).exists()


# -- the catalog: approval policies in the admin form ----------------------------


def test_policy_form_accepts_an_approval_policy() -> None:
    from tooling.forms import PolicyDefinitionForm

    form = PolicyDefinitionForm(
        data={
            "name": "prod-approval",
            "kind": "approval",
            "config": '{"rules": [{"tool": "deploy", "when": {"environment": '
            '"production"}}], "approvers": {"group": "Not yet created"}, '
            '"deadline_seconds": 3600}',
        }
    )
    assert form.is_valid(), form.errors


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{}", 'An approval policy needs "rules"'),
        ('{"rules": []}', "needs at least one rule"),
        (
            '{"rules": [{"tool": "deploy"}], "who": 1}',
            "Unknown approval option(s): who",
        ),
        ('{"rules": [{"tool": "deploy", "when": {"a": {}}}]}', "must be a string"),
        (
            '{"rules": [{"tool": "deploy"}], "approvers": {"permission": "x.nope"}}',
            "approvers.permission 'x.nope' is not a permission of this site.",
        ),
        ('{"rules": [{"tool": "deploy"}], "deadline_seconds": -5}', "deadline_seconds"),
    ],
)
def test_policy_form_refuses_malformed_approval_configs(
    config: str, message: str
) -> None:
    from tooling.forms import PolicyDefinitionForm

    form = PolicyDefinitionForm(
        data={"name": "prod-approval", "kind": "approval", "config": config}
    )
    assert not form.is_valid()
    assert message in " ".join(map(str, form.errors["config"])), form.errors


def test_the_default_approval_timeout_is_bounded_at_startup() -> None:
    """A timeout past a year (``1e12``) would overflow ``expires_at`` at the
    first pause; startup refuses it instead."""
    from tests.test_settings import _check

    result = _check(DEBUG="1", WINK_APPROVAL_TIMEOUT_SECONDS="1e12")
    assert result.returncode != 0
    assert "WINK_APPROVAL_TIMEOUT_SECONDS must be at most 31622400" in result.stderr
    assert _check(DEBUG="1", WINK_APPROVAL_TIMEOUT_SECONDS="3600").returncode == 0
