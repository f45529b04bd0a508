"""The approval inbox in a real browser, as a new operator would try it: run
``demo/ship`` from its preview page; the run stops awaiting approval of its
deploy to production (a banner on the session page says so); the inbox,
reached from the navigation, lists it pending; the operator approves it with a
reason; the run resumes and finishes; its timeline shows who approved and
why, just before the deploy it let through."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By

from sessions_app.models import ApprovalRequest
from tests.browser.test_catalog_admin import positions, timeline
from tests.browser.test_demo_sessions import open_preview
from tests.browser.ui import UI
from tooling.demo import seed_demo_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REASON = "Release notes reviewed; go ahead."


@pytest.fixture(autouse=True)
def _demo_catalog(transactional_db: Any) -> None:
    seed_demo_catalog()


def test_approve_a_deploy_from_the_inbox_and_the_run_finishes(
    ui: UI, shot: Any
) -> None:
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
    assert ui.text("h1") == "deploy needs approval Pending"
    assert ui.json_of("#approval-arguments") == {"environment": "production"}
    assert "production-deploy" in ui.text("#approval-facts")
    ui.fill("reason", REASON)
    shot("approvals-03-decide")
    ui.click_and_load(ui.find("button[value=approve]"))

    assert "Approved. The run goes on (its session is now succeeded)." in (
        ui.text("ul.messages")
    )
    decision = ui.text("#approval-decision")
    assert decision.startswith("Approved by operator at ")
    assert decision.endswith(f": {REASON}")
    assert not ui.find_all("#decision-form")
    shot("approvals-04-decided")

    ui.click_and_load(ui.find("#approval-facts dd a"))
    assert ui.path == session_path
    assert ui.text("h1") == "demo/ship Succeeded"
    assert not ui.find_all("#approval-banner")
    entries = timeline(ui)
    [asked] = positions(entries, "approval", "deploy")
    assert "policy production-deploy" in entries[asked][1]
    approval = ApprovalRequest.objects.get()
    assert (
        f"Approved by operator at {approval.decided_at:%Y-%m-%d %H:%M}: "
        in (entries[asked][2])
    )
    assert REASON in entries[asked][2]
    # right before the deploy it let through, which succeeded
    deploys = positions(entries, "tool-invocation", "deploy")
    assert deploys[-1] == asked + 1
    assert "failed" not in entries[deploys[-1]][0]
    shot("approvals-05-timeline")
