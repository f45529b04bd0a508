"""Finding a session and previewing a run, in a real browser (issue #28): a
word from a tool call's arguments typed in the search box finds its session; a
bad filter is said on the page; the preview page lists the prompt's parameters
as typed fields and what governs a run, and runs with what was typed."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By

from sessions_app import services
from sessions_app.models import AgentSession
from tests.browser.ui import UI
from tooling.demo import seed_demo_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _demo(transactional_db: Any, settings: Any) -> None:
    settings.WINK_PROVIDER = "offline"
    seed_demo_catalog()


def listed(ui: UI) -> list[str]:
    return [
        link.get_attribute("href").rstrip("/").rsplit("/", 1)[-1]
        for link in ui.find_all("table tbody tr td:first-child a")
    ]


def test_a_word_in_a_tool_argument_finds_its_session(ui: UI, shot: Any) -> None:
    patch = services.start_session(prompt_ref="demo/patch")
    services.start_session(prompt_ref="demo/release")
    services.start_session(prompt_ref="demo/research")
    ui.go("/audit/sessions/")
    assert len(listed(ui)) == 3
    # "CHANGELOG.md" is only in the patch run's tool arguments
    ui.fill("q", "changelog.md")
    ui.click_and_load(ui.find("form.filters button[type=submit]"))
    shot("search-1-tool-argument")
    assert listed(ui) == [str(patch.pk)]
    assert ui.find("input[name=q]").get_attribute("value") == "changelog.md"

    # A filter that is not valid is said, not answered with an empty list.
    ui.go("/audit/sessions/?duration_min=soon")
    shot("search-2-invalid-filter")
    assert "not valid" in ui.text(".filter-errors")
    assert "duration_min" in ui.text(".filter-errors")


def test_the_preview_lists_parameters_and_what_governs_a_run(ui: UI, shot: Any) -> None:
    ui.go("/admin/tooling/prompttemplate/")
    [row] = [
        row
        for row in ui.find_all("#result_list tbody tr")
        if row.find_element(By.CSS_SELECTOR, "th").text == "demo/ship"
    ]
    ui.click_and_load(row.find_element(By.CSS_SELECTOR, "th a"))
    ui.click_and_load(ui.find("#preview-run-link"))
    assert ui.text("h1") == "Preview demo/ship"
    labels = [e.text for e in ui.find_all("#parameter-fields label")]
    assert labels == ["service"]
    field = ui.find("#parameter-fields input")
    assert field.get_attribute("value") == "catalog-api"  # its default
    assert "production-deploy" in ui.text("#governance-approvals")
    assert "deploy" in ui.text("#governance-approvals")
    assert "release-order" in ui.text("#governance-policies")
    assert "900 s" in ui.text("#governance-deadline")
    shot("preview-1-parameters-and-governance")

    field.clear()
    field.send_keys("billing-api")
    ui.click_and_load(ui.find("input[type=submit][value=Preview]"))
    assert "Release billing-api to production" in ui.text("#rendered-prompt")
    ui.click_and_load(ui.find("input[name=run]"))
    session = AgentSession.objects.get()
    assert session.params == {"service": "billing-api"}
    assert ui.path == session.get_absolute_url()
