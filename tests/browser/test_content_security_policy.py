"""Pages no other browser test drives, working under the Content-Security-Policy:
the API docs (Swagger UI, its script served from its own URL) and an admin
form with Django's date widget. The ``driver`` fixture fails any test whose
pages the browser reported a CSP violation on (conftest.py)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.browser.ui import UI

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_api_docs_render_and_list_the_operations(ui: UI, shot: Any) -> None:
    ui.go("/api/docs/")
    # The operations come from the schema the page's script fetched.
    ui.wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) > 10)
    assert "WINK Catalog API" in ui.text(".swagger-ui .info .title")
    paths = {e.text for e in ui.find_all(".opblock-summary-path")}
    assert "/api/sessions/" in {p.replace("\u200b", "") for p in paths}
    # No validator badge: nothing is loaded from another origin.
    assert ui.find_all(".validator-badge, img[src*='validator']") == []
    shot("csp-api-docs")


def test_admin_date_widget_works(ui: UI, shot: Any) -> None:
    ui.go("/admin/tooling/modelprice/add/")
    # Django's calendar shortcuts (DateTimeShortcuts.js) add a "Today" link.
    shortcuts = ".field-effective_from .datetimeshortcuts a"
    today = ui.wait(lambda d: d.find_elements(By.CSS_SELECTOR, shortcuts))[0]
    today.click()
    ui.wait(lambda d: ui.field("effective_from").get_attribute("value"))
    chosen = datetime.date.fromisoformat(
        ui.field("effective_from").get_attribute("value")
    )
    assert abs((chosen - datetime.date.today()).days) <= 1  # time zones apart
    shot("csp-admin-date-widget")
