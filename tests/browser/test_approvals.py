"""The approval inbox in a real browser, as a new operator would try it: run
``demo/ship`` from its preview page; the run stops awaiting approval of its
deploy to production (a banner on the session page says so); the inbox,
reached from the navigation, lists it pending. The deploy is under four eyes:
the operator who started the run sees it read-only ("a second person must
decide it"); a second person, an approver, logs in on the product's login
page and approves it with a reason; the run resumes and finishes; its
timeline shows who approved and why, just before the deploy it let through."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from selenium.webdriver.common.by import By

from sessions_app.models import ApprovalRequest
from tests.browser.conftest import OPERATOR_PASSWORD
from tests.browser.test_catalog_admin import positions, timeline
from tests.browser.test_demo_sessions import open_preview
from tests.browser.ui import UI
from tests.sessions_app.test_approval_context import three_requests
from tooling.demo import seed_demo_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REASON = "Release notes reviewed; go ahead."
APPROVER_PASSWORD = "a-second-browser-password"


@pytest.fixture(autouse=True)
def _demo_catalog(transactional_db: Any) -> None:
    seed_demo_catalog()


def test_approve_a_deploy_from_the_inbox_and_the_run_finishes(
    ui: UI, shot: Any, django_user_model: Any
) -> None:
    approver = django_user_model.objects.create_user(
        "approver", password=APPROVER_PASSWORD
    )
    # (a transactional test's flush drops the groups the migrations made)
    approver.user_permissions.add(
        Permission.objects.get(codename="decide_any_approval")
    )
    open_preview(ui, "demo/ship")
    ui.click_and_load(ui.find("input[name=run]"))
    session_path = ui.path
    assert ui.text("h1") == "demo/ship Awaiting approval"
    banner = ui.text("#approval-banner")
    assert "This run waits for approval: deploy" in banner
    shot("approvals-01-session-waits")

    ui.go("/audit/sessions/")
    ui.click_and_load(ui.driver.find_element(By.LINK_TEXT, "Approvals"))
    assert ui.path == "/audit/approvals/"
    [row] = ui.find_all("#approvals tbody tr")
    assert "deploy" in row.text and "demo/ship" in row.text
    assert "Pending" in row.text
    shot("approvals-02-inbox")

    ui.click_and_load(row.find_element(By.CSS_SELECTOR, "td a"))
    approval_path = ui.path
    assert ui.text("h1") == "deploy needs approval Pending"
    assert ui.json_of("#approval-arguments") == {"environment": "production"}
    assert "production-deploy" in ui.text("#approval-facts")
    # four eyes: the operator started this run, so they may not decide it
    assert not ui.find_all("#decision-form")
    assert ui.text("#read-only-note") == (
        "You started this run; a second person must decide it."
    )
    shot("approvals-03-own-run-read-only")

    ui.click_and_load(ui.find("header.site form button[type=submit]"))  # log out
    ui.go(approval_path)
    assert ui.path == f"/accounts/login/?next={approval_path}", ui.path
    ui.fill("username", "approver")
    ui.fill("password", APPROVER_PASSWORD)
    ui.click_and_load(ui.find("form.login button[type=submit]"))
    assert ui.path == approval_path
    ui.fill("reason", REASON)
    # the browser itself refuses a decision before "I have read the call"
    ui.find("button[value=approve]").click()
    assert ui.path == approval_path
    assert ApprovalRequest.objects.get().status == ApprovalRequest.Status.PENDING
    ui.check("confirm")
    shot("approvals-04-decide")
    ui.click_and_load(ui.find("button[value=approve]"))

    assert "Approved. The run goes on (its session is now succeeded)." in (
        ui.text("ul.messages")
    )
    decision = ui.text("#approval-decision")
    assert decision.startswith("Approved by approver at ")
    assert decision.endswith(f": {REASON}")
    assert not ui.find_all("#decision-form")
    shot("approvals-05-decided")

    # the approver may decide the run, not see it: the operator reads the timeline
    ui.click_and_load(ui.find("header.site form button[type=submit]"))  # log out
    ui.login("operator", OPERATOR_PASSWORD)
    ui.go(session_path)
    assert ui.path == session_path
    assert ui.text("h1") == "demo/ship Succeeded"
    assert not ui.find_all("#approval-banner")
    entries = timeline(ui)
    [asked] = positions(entries, "approval", "deploy")
    assert "policy production-deploy" in entries[asked][1]
    approval = ApprovalRequest.objects.get()
    assert (
        f"Approved by approver at {approval.decided_at:%Y-%m-%d %H:%M}: "
        in (entries[asked][2])
    )
    assert REASON in entries[asked][2]
    # right before the deploy it let through, which succeeded
    deploys = positions(entries, "tool-invocation", "deploy")
    assert deploys[-1] == asked + 1
    assert "failed" not in entries[deploys[-1]][0]
    shot("approvals-06-timeline")


def test_the_inbox_shows_three_requests_that_can_be_told_apart(
    ui: UI, shot: Any
) -> None:
    """Three pending deploys of the same tool: each row says whose run it is,
    with which parameters, after which step, and the exact call."""
    requests = three_requests()
    ui.go("/audit/approvals/")
    rows = ui.find_all("#approvals tbody tr")
    assert len(rows) == 3
    texts = [row.text for row in rows]
    assert len(set(texts)) == 3
    for author, tool in (("ana", "run_tests"), ("ben", "build"), ("cai", "lint")):
        [row] = [text for text in texts if f"by {author}" in text]
        assert f"tool call {tool}(" in row
        assert "deploy" in row and '{"environment": "prod"}' in row
    assert any('"service": "<b>mail</b>"' in text for text in texts)  # as text
    shot("approvals-07-three-requests")

    ui.click_and_load(ui.find(f"#approval-{requests[1].pk} td a"))
    assert ui.text("#approval-author") == "ben"
    assert ui.text("#approval-run-params") == '{"service": "search", "version": "1.9"}'
    assert ui.text("#approval-step-before").startswith('tool call build({"target"')
    approve = ui.find("button.approve")
    deny = ui.find("button.deny")
    assert approve.value_of_css_property(
        "background-color"
    ) != deny.value_of_css_property("background-color")
    shot("approvals-08-told-apart")


def test_the_admin_index_leads_to_the_audit_pages(ui: UI, shot: Any) -> None:
    ui.go("/admin/")
    assert ui.text("#site-name") == "WINK Catalog"
    box = ui.find("#audit-pages")
    labels = [link.text for link in box.find_elements(By.CSS_SELECTOR, "a")]
    assert labels == [
        "Sessions",
        "Approvals inbox",
        "Costs",
        "Citations",
        "Revisions",
        "Experiments",
    ]
    shot("wayfinding-01-admin-index")
    ui.click_and_load(box.find_element(By.LINK_TEXT, "Approvals inbox"))
    assert ui.path == "/audit/approvals/"
