"""Issue #28, in a real browser: the catalog's admin forms keep what an
operator typed. Typing "Germany" into a web search tool's country picks
Germany (DE), not Georgia (GE); every mistake of a submit is shown at once;
bad JSON is refused with its line and column and stays as typed; the tool
form shows what the picked handler takes; the prompt's model is suggested
from the catalog's tables, and an unknown one is saved with a warning.

With ``WINK_BROWSER_SCREENSHOTS=<dir>`` each step's page is saved there
(``issue28-*.png``)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from selenium.webdriver.support.ui import Select

from tests.browser.ui import UI
from tooling.models import (
    HostedToolDefinition,
    ModelPrice,
    PolicyDefinition,
    PromptTemplate,
    SectionDefinition,
    ToolDefinition,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_web_search_form(ui: UI, name: str) -> None:
    ui.go("/admin/tooling/hostedtooldefinition/add/")
    ui.fill("name", name)
    ui.select("kind", "web_search")
    ui.fill("description", "Search the web.")


def shown_country(ui: UI) -> str:
    return Select(ui.field("country")).first_selected_option.text


def test_typing_germany_in_the_country_picks_germany_not_georgia(
    ui: UI, shot: Any
) -> None:
    open_web_search_form(ui, "berlin_search")
    ui.type_keys("country", "Germany")
    assert ui.field("country").get_attribute("value") == "DE"
    assert shown_country(ui) == "Germany (DE)"
    shot("issue28-01-country-picked-by-name")
    ui.save_and_expect_success()
    tool = HostedToolDefinition.objects.get(name="berlin_search")
    assert tool.config["country"] == "DE"

    # Reopened, the form shows the country by its name.
    ui.go(f"/admin/tooling/hostedtooldefinition/{tool.pk}/change/")
    assert shown_country(ui) == "Germany (DE)"
    ui.type_keys("country", "Georgia")
    assert ui.field("country").get_attribute("value") == "GE"
    ui.save_and_expect_success()
    tool.refresh_from_db()
    assert tool.config["country"] == "GE"


def test_every_mistake_of_a_hosted_tool_is_shown_at_once(ui: UI, shot: Any) -> None:
    open_web_search_form(ui, "Bad Name")
    ui.fill("allowed_domains", "https://docs.python.org")
    ui.fill("timezone", "Mars/Olympus")
    ui.submit()
    assert ui.text("p.errornote") == "Please correct the errors below."
    assert ui.field_errors("name") == [
        "HostedTool name 'Bad Name' must match ^[a-z0-9_-]{1,64}$: 1-64 lowercase "
        "ASCII letters, digits, underscores or hyphens (OpenAI function-name "
        "constraints)."
    ]
    assert ui.field_errors("allowed_domains") == [
        "Domain 'https://docs.python.org' must be written without a scheme (for "
        "example 'docs.python.org', not 'https://docs.python.org')."
    ]
    assert ui.field_errors("timezone") == [
        "'Mars/Olympus' is not an IANA timezone (for example 'Europe/Berlin')."
    ]
    shot("issue28-02-every-mistake-at-once")
    assert HostedToolDefinition.objects.count() == 0


def test_bad_json_names_its_line_and_column_and_stays_as_typed(
    ui: UI, shot: Any
) -> None:
    typed = '{\n  "dependencies": {\n    "deploy": ["build"]\n    "build": []\n  }\n}'
    ui.go("/admin/tooling/policydefinition/add/")
    ui.fill("name", "deploy_order")
    ui.select("kind", PolicyDefinition.Kind.SEQUENTIAL_DEPENDENCY)
    ui.pick_radio("config_source", "json")
    ui.fill("config", typed)
    ui.submit()
    assert ui.field_errors("config") == [
        "Enter valid JSON: Expecting ',' delimiter at line 4, column 5."
    ]
    assert ui.field("config").get_attribute("value") == typed
    shot("issue28-03-json-error-with-line-and-column")
    assert not PolicyDefinition.objects.exists()


def visible_parameters(ui: UI) -> list[str]:
    return [
        cell.text
        for panel in ui.find_all(".handler-params")
        if panel.is_displayed()
        for cell in panel.find_elements("css selector", "td code")
    ]


def test_the_tool_form_shows_what_the_picked_handler_takes(ui: UI, shot: Any) -> None:
    ui.go("/admin/tooling/tooldefinition/add/")
    assert "Pick a handler to see the parameters it takes." in ui.page_text()
    assert visible_parameters(ui) == []
    ui.select("handler_key", "demo.count_words")
    ui.wait(lambda d: visible_parameters(ui) == ["text"])
    assert "The text whose words to count." in ui.text(".field-handler_parameters")
    ui.select("handler_key", "demo.deploy")
    ui.wait(lambda d: visible_parameters(ui) == ["environment"])
    row = ui.text(".field-handler_parameters")
    assert "one of: staging, production" in row and "optional" in row
    shot("issue28-04-handler-parameters")
    ui.fill("name", "deploy")
    ui.save_and_expect_success()
    tool = ToolDefinition.objects.get(name="deploy")
    ui.go(f"/admin/tooling/tooldefinition/{tool.pk}/change/")
    assert visible_parameters(ui) == ["environment"]


def test_an_unknown_model_is_saved_with_a_warning(ui: UI, shot: Any) -> None:
    # (a transactional test starts without the price list's seeded rows)
    ModelPrice.objects.create(
        model="gpt-5.4",
        effective_from=date(2026, 1, 1),
        input_per_mtok=Decimal("1.25"),
        cached_input_per_mtok=Decimal("0.125"),
        output_per_mtok=Decimal(10),
    )
    SectionDefinition.objects.create(key="answer", title="Answer", template="Hi.")
    ui.go("/admin/tooling/prompttemplate/add/")
    suggested = [
        option.get_attribute("value")
        for option in ui.find_all("datalist#id_model_suggestions option")
    ]
    assert "gpt-5.4" in suggested
    assert ui.field("model").get_attribute("list") == "id_model_suggestions"
    ui.fill("namespace", "ops")
    ui.fill("key", "typo")
    ui.fill("name", "A typo in the model")
    ui.fill("model", "gtp-5.4")
    ui.autocomplete("id_prompt_sections-0-section", "answer", "answer")
    ui.save_and_expect_success()
    assert ui.text("ul.messagelist li.warning") == (
        "Model 'gtp-5.4' is in neither the model capability table nor the price "
        "list: check its spelling (the provider refuses an unknown model when the "
        "prompt runs; its runs are not priced). Did you mean 'gpt-5.4'?"
    )
    shot("issue28-05-unknown-model-warning")
    assert PromptTemplate.objects.get(key="typo").model == "gtp-5.4"
