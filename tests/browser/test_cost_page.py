"""The cost page in a real browser: its charts are drawn (inline SVG, one bar
per row of each table) with no script and nothing from another origin, the
range form works, and each CSV link downloads the breakdown."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from sessions_app.costs import ranges
from tests.browser.ui import UI
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ProviderCallFactory,
    ToolInvocationFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FETCH_CSV = """
const [href, done] = arguments;
fetch(href, {credentials: "same-origin"}).then(async (response) => done({
  status: response.status,
  type: response.headers.get("Content-Type"),
  disposition: response.headers.get("Content-Disposition"),
  body: await response.text(),
})).catch((error) => done({error: String(error)}));
"""


def seed() -> datetime.date:
    """Two sessions today (0.5 and 0.25), one 45 days ago (1.5): the day of
    the older one."""
    for ref, cost in (("demo/research", "0.5"), ("demo/notes", "0.25")):
        session = AgentSessionFactory.create(prompt_ref=ref, cost=Decimal(cost))
        ProviderCallFactory.create(session=session, cost=Decimal("0.002"))
        ToolInvocationFactory.create(
            session=session, web_search=True, cost=Decimal("0.01")
        )
    older = AgentSessionFactory.create(
        prompt_ref="demo/release",
        cost=Decimal("1.5"),
        created_at=timezone.now() - datetime.timedelta(days=45),
    )
    return timezone.localdate(older.created_at)


def bars(ui: UI, group: str) -> int:
    return len(ui.find_all(f"#by-{group} svg.chart rect.bar"))


def table_rows(ui: UI, group: str) -> int:
    return len(ui.find_all(f"#by-{group} table.spend tbody tr"))


def test_cost_page_draws_its_charts_and_downloads_csv(ui: UI, shot: Any) -> None:
    day = seed()

    ui.go("/audit/sessions/")
    ui.click_and_load(ui.find("header.site nav a[href='/audit/costs/']"))

    assert ui.path == "/audit/costs/"
    assert ui.text("#cost-total").startswith("$0.7500 spent from")
    for group in ("prompt", "model", "user", "tool"):
        assert bars(ui, group) == table_rows(ui, group) > 0, group
    assert bars(ui, "prompt") == 2
    assert bars(ui, "tool") == 2  # web_search and the model tokens row
    assert bars(ui, "day") == ranges.DEFAULT_DAYS
    # Drawn: the largest bar has a width on screen.
    widths = [bar.size["width"] for bar in ui.find_all("#by-prompt svg.chart rect.bar")]
    assert max(widths) > 100 and min(widths) > 0, widths
    # Nothing but the page's own origin, and no script at all.
    assert ui.driver.execute_script("return document.scripts.length") == 0
    resources = ui.driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    assert all(name.startswith(ui.base_url) for name in resources), resources
    shot("costs-01-last-30-days")

    link = ui.find("#by-prompt a.csv-link")
    assert link.get_attribute("download") is not None
    result = ui.driver.execute_async_script(FETCH_CSV, link.get_attribute("href"))
    assert result.get("status") == 200, result
    assert result["type"] == "text/csv; charset=utf-8"
    assert result["disposition"].startswith('attachment; filename="costs-prompt-')
    lines = result["body"].splitlines()
    assert lines[0] == "prompt,label,cost_usd,sessions,unpriced_calls,row"
    assert lines[1:] == [
        "demo/research,demo/research,0.5000000000,1,0,group",
        "demo/notes,demo/notes,0.2500000000,1,0,group",
    ]

    # A range that holds only the older session.
    ui.driver.execute_script(
        "document.getElementById('cost-from').value = arguments[0];"
        "document.getElementById('cost-to').value = arguments[0];",
        day.isoformat(),
    )
    ui.click_and_load(ui.find("#cost-range button[type=submit]"))
    assert ui.text("#cost-total").startswith(f"$1.50 spent from {day.isoformat()}")
    assert bars(ui, "prompt") == 1
    assert bars(ui, "day") == 1
    shot("costs-02-one-day")


def test_cost_page_explains_a_bad_range(ui: UI) -> None:
    ui.go("/audit/costs/?from=2026-02-30")

    assert "'from' is not a date of the calendar." in ui.text("#range-error")
    assert "Showing the last 30 days instead." in ui.text("#range-error")
