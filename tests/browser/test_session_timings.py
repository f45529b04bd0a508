"""Where a run's time went, in a real browser: the demo patch run's waterfall
(a bar per model call and tool call, on one time axis), its outline by turn
leading to that turn's page of the timeline, the filter by kind, JSON folded
when long; and a waiting approval drawn up to now."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By

from sessions_app import services
from sessions_app.models import ProviderCall, ToolInvocation
from tests.browser.ui import UI
from tooling.demo import seed_demo_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _demo(transactional_db: Any, settings: Any) -> None:
    settings.WINK_PROVIDER = "offline"
    seed_demo_catalog()


def rows(ui: UI) -> list[tuple[str, str]]:
    """The waterfall's rows: (kind, label)."""
    found = []
    for row in ui.find_all("svg.waterfall g.wf-row"):
        kind = next(c[3:] for c in row.get_attribute("class").split() if c != "wf-row")
        label = row.find_element(By.CSS_SELECTOR, "text").get_attribute("textContent")
        found.append((kind, label))
    return found


def test_the_waterfall_shows_where_a_runs_time_went(ui: UI, shot: Any) -> None:
    session = services.start_session(prompt_ref="demo/patch")
    calls = ProviderCall.objects.filter(session=session).count()
    tools = list(ToolInvocation.objects.filter(session=session).order_by("sequence"))
    ui.go(session.get_absolute_url())
    drawn = rows(ui)
    shot("timings-1-waterfall")
    assert [kind for kind, _ in drawn].count("provider") == calls
    assert [label for kind, label in drawn if kind == "tool"] == [
        f"#{tool.sequence} {tool.name}" for tool in tools
    ]
    # Each bar lies inside the chart, left to right in time.
    width = ui.driver.execute_script(
        "return document.querySelector('svg.waterfall').viewBox.baseVal.width"
    )
    xs = [
        float(rect.get_attribute("x"))
        for rect in ui.find_all("svg.waterfall g.wf-row rect")
    ]
    assert all(0 < x < width for x in xs)
    assert xs[1:] == sorted(xs[1:])  # after the queue's bar, in order of start
    assert ui.text("#session-duration").endswith("waiting for a worker)")

    # The outline: turn 3 opens the timeline at turn 3's model call.
    outline = ui.find_all("#turn-outline li")
    assert len(outline) == calls
    ui.click_and_load(outline[2].find_element(By.LINK_TEXT, "Turn 3"))
    first = ui.find("ol.timeline > li")
    assert "provider-call" in first.get_attribute("class")
    assert first.find_element(By.CSS_SELECTOR, ".head strong").text.startswith("Turn 3")

    # The filter: only the tool calls, the box kept checked.
    ui.go(session.get_absolute_url())
    ui.find("#timeline-filter input[value=tool]").click()
    ui.click_and_load(ui.find("#timeline-filter button[type=submit]"))
    shot("timings-2-filtered")
    entries = ui.find_all("ol.timeline > li")
    assert entries and all(
        "tool-invocation" in e.get_attribute("class") for e in entries
    )
    assert ui.find("#timeline-filter input[value=tool]").is_selected()
    # Short arguments open, the values folded.
    first = entries[0]
    arguments, value = first.find_elements(By.CSS_SELECTOR, ":scope > details.json")
    assert arguments.get_attribute("open") is not None
    assert value.get_attribute("open") is None


def test_a_waiting_approval_is_drawn_up_to_now(ui: UI, shot: Any) -> None:
    session = services.start_session(prompt_ref="demo/ship")
    assert session.status == "awaiting_approval"
    ui.go(session.get_absolute_url())
    drawn = rows(ui)
    assert drawn[-1] == ("approval", "approval · deploy")
    value = ui.find_all("svg.waterfall g.wf-approval text")[-1]
    assert value.get_attribute("textContent").endswith("+")  # still waiting
    shot("timings-3-waiting-approval")
