"""Issue 27, tried as a new user would, in a real browser: a recorded
demo/research session; the operator drops the web search's domain filter in
the admin, replays the session against the draft from its page, and the
comparison shows both side by side: the revision differs (with the way to its
diff), the tool calls matched, and the facts of both runs."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from selenium.webdriver.support.ui import Select

from sessions_app import services
from sessions_app.models import AgentSession
from tooling.demo import seed_demo_catalog
from tooling.models import HostedToolDefinition

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_replaying_a_session_against_the_draft_compares_both(
    ui: Any, shot: Any
) -> None:
    seed_demo_catalog()
    operator = User.objects.get(username="operator")
    source = services.start_session(prompt_ref="demo/research", user=operator)
    assert source.status == AgentSession.Status.SUCCEEDED
    web = HostedToolDefinition.objects.get(name="web_search")

    ui.go(f"/admin/tooling/hostedtooldefinition/{web.pk}/change/")
    ui.fill("allowed_domains", "docs.djangoproject.com")
    ui.fill("change_reason", "Django docs only")
    ui.save_and_expect_success()

    ui.go(source.get_absolute_url())
    Select(ui.find("#replay-against")).select_by_value("draft")
    ui.click_and_load(ui.find("#replay-form button[type=submit]"))
    replay = AgentSession.objects.get(replay_of=source)
    assert ui.path == replay.get_absolute_url()
    assert str(source.pk) in ui.text("#replay-of")

    ui.click_and_load(ui.find("#compare-with-source"))
    facts = ui.text("#compare-facts")
    assert "(source)" in facts and "(replay)" in facts
    revision_row = [
        row
        for row in ui.find_all("#compare-facts tbody tr")
        if row.text.startswith("Revision")
    ]
    assert revision_row and "differs" in revision_row[0].get_attribute("class")
    assert "count_words" in ui.text("#compare-turns")
    shot("session-compare")

    ui.click_and_load(ui.find("#revision-diff"))
    hosted = ui.text("#compare-hosted_tools")
    assert "config.allowed_domains" in hosted and "docs.python.org" in hosted
    assert "Django docs only" in ui.text("#compare-changes")
