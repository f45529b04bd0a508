"""The page of a running session updates itself, without a reload, as a worker
records steps, until the run ends."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By

from sessions_app.models import AgentSession
from tests.browser.ui import UI
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ProviderCallFactory,
    ToolInvocationFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def status_badge(ui: UI) -> str:
    return ui.text("#session h1 .badge")


def test_running_session_page_updates_live_to_succeeded(ui: UI, shot: Any) -> None:
    session = AgentSessionFactory.create(
        status=AgentSession.Status.RUNNING, output_text="", turns=0
    )
    ui.go(session.get_absolute_url())
    assert status_badge(ui) == "Running"
    assert "updates itself" in ui.text("#live-note")
    ui.driver.execute_script("window.__sameDocument = 'yes';")
    shot("live-1-running")

    # A worker records a turn and a tool call: the timeline grows in place.
    ProviderCallFactory.create(session=session, turn=1)
    ToolInvocationFactory.create(session=session, turn=1, sequence=1, name="read_file")
    ui.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "li.tool-invocation"))
    assert status_badge(ui) == "Running"

    # The run ends.
    AgentSession.objects.filter(pk=session.pk).update(
        status=AgentSession.Status.SUCCEEDED, output_text="All done.", turns=1
    )
    ui.wait(lambda d: status_badge(ui) == "Succeeded")
    shot("live-2-succeeded")

    assert ui.driver.execute_script("return window.__sameDocument") == "yes"
    assert "All done." in ui.text("#session .output")
    assert ui.find_all("#live-note") == []
    assert ui.find("#session").get_attribute("data-live-url") is None
    assert ui.driver.title.startswith(session.prompt_ref)


def test_the_cancel_button_cancels_a_queued_run(ui: UI, shot: Any) -> None:
    """A POST from the page itself: the page's referrer policy must let the
    browser send its origin, or CSRF refuses the form."""
    session = AgentSessionFactory.create(
        status=AgentSession.Status.QUEUED, output_text="", turns=0
    )
    ui.go(session.get_absolute_url())
    assert status_badge(ui) == "Queued"

    ui.click_and_load(ui.find("#cancel-form button[type=submit]"))

    assert "CSRF" not in ui.page_text()
    assert status_badge(ui) == "Cancelled"
    assert ui.find_all("#cancel-form") == []
    session.refresh_from_db()
    assert session.status == AgentSession.Status.CANCELLED
    shot("live-3-cancelled")
