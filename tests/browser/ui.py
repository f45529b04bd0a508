"""What a person does in the admin and the audit pages, as Selenium steps.

Every step waits explicitly for what it expects (never a sleep): a page load
after a submit, the admin's select2 autocomplete results, a widget's state.
"""

from __future__ import annotations

import json
from typing import Any

from selenium.common.exceptions import (
    NoSuchElementException,
    StaleElementReferenceException,
    WebDriverException,
)
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.limits import BROWSER_SECONDS

WAIT_SECONDS = BROWSER_SECONDS
# A condition that reads the page may meet an element a script replaced (the
# live page swaps its content, select2 redraws its results) or not there yet:
# it is asked again at the next poll.
RETRIED = (NoSuchElementException, StaleElementReferenceException)


class UI:
    def __init__(self, driver: Any, base_url: str) -> None:
        self.driver = driver
        self.base_url = base_url.rstrip("/")

    # -- waiting and reading -----------------------------------------------------

    def wait(self, condition: Any, seconds: float = WAIT_SECONDS) -> Any:
        return WebDriverWait(self.driver, seconds, ignored_exceptions=RETRIED).until(
            condition
        )

    def find(self, css: str) -> Any:
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str) -> list[Any]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def text(self, css: str) -> str:
        return self.find(css).text

    def page_text(self) -> str:
        return self.find("body").text

    def json_of(self, css: str) -> Any:
        """The JSON shown in an element (``textContent``: scrolled parts too)."""
        return json.loads(self.find(css).get_attribute("textContent"))

    @property
    def path(self) -> str:
        return self.driver.current_url.removeprefix(self.base_url)

    # -- navigation --------------------------------------------------------------

    def go(self, path: str) -> None:
        self.driver.get(self.base_url + path)
        self._loaded()

    def _loaded(self) -> None:
        self.wait(
            lambda d: d.execute_script("return document.readyState") == "complete"
        )

    def click_and_load(self, element: Any) -> None:
        """Click something that loads a new page, and wait for that page."""
        old_page = self.find("html")
        element.click()
        # While the old page goes away chromedriver may answer "Node with given
        # id does not belong to the document" instead of "stale": poll again.
        WebDriverWait(
            self.driver, WAIT_SECONDS, ignored_exceptions=[WebDriverException]
        ).until(EC.staleness_of(old_page))
        self._loaded()

    def login(self, username: str, password: str) -> None:
        self.go("/admin/login/?next=/admin/")
        self.fill("username", username)
        self.fill("password", password)
        self.click_and_load(self.find("input[type=submit]"))
        # the admin's index (its box of links to the audit pages)
        assert self.find_all("#audit-pages"), self.page_text()[:500]

    # -- forms -------------------------------------------------------------------

    def field(self, name: str) -> Any:
        return self.driver.find_element(By.NAME, name)

    def fill(self, name: str, value: str) -> None:
        element = self.field(name)
        element.clear()
        if value:
            element.send_keys(value)

    def select(self, name: str, value: str) -> None:
        Select(self.field(name)).select_by_value(value)

    def select_many(self, name: str, *values: str) -> None:
        """Pick exactly ``values`` in a multiple select."""
        select = Select(self.field(name))
        select.deselect_all()
        for value in values:
            select.select_by_value(value)

    def pick_radio(self, name: str, value: str) -> None:
        self.find(f'input[name="{name}"][value="{value}"]').click()

    def check(self, name: str, checked: bool = True) -> None:
        box = self.field(name)
        if box.is_selected() != checked:
            box.click()

    def choose(self, field: str, *labels: str) -> None:
        """Move options to "Chosen" in a filter_horizontal widget."""
        available = Select(self.find(f"#id_{field}_from"))
        for label in labels:
            available.select_by_visible_text(label)
        self.find(f"#id_{field}_add").click()
        chosen = Select(self.find(f"#id_{field}_to"))
        self.wait(lambda d: {o.text for o in chosen.options} >= set(labels))

    def add_inline_row(self, prefix: str) -> int:
        """Click the inline's "Add another ..." link; the new row's index."""
        total = self.find(f"#id_{prefix}-TOTAL_FORMS")
        before = int(total.get_attribute("value"))
        group = self.find(f"#{prefix}-group")
        group.find_element(By.CSS_SELECTOR, ".add-row a").click()
        self.wait(lambda d: int(total.get_attribute("value")) == before + 1)
        return before

    def autocomplete(self, select_id: str, search: str, choice: str) -> None:
        """Pick ``choice`` in the admin's select2 autocomplete for ``select_id``.

        One condition does the whole pick, step by step, until the select
        holds ``choice``: select2 redraws its results as each answer comes
        back (an option found a moment ago may be gone), and on a slow
        machine a click may land while the list is being redrawn."""
        opened = ".select2-container--open"

        def picked(d: Any) -> bool:
            # an autocomplete's select has no option until one is picked
            chosen = d.find_elements(By.CSS_SELECTOR, f"#{select_id} option:checked")
            if chosen and chosen[0].text == choice:
                return True
            if not d.find_elements(By.CSS_SELECTOR, opened):
                self.find(f"#{select_id} + .select2 .select2-selection").click()
                return False
            box = self.find(f"{opened} .select2-search__field")
            if box.get_attribute("value") != search:
                box.clear()
                box.send_keys(search)
                return False
            for item in d.find_elements(
                By.CSS_SELECTOR, f"{opened} .select2-results__option"
            ):
                if item.text == choice:
                    item.click()
                    break
            return False

        self.wait(picked)

    def submit(self, name: str = "_save") -> None:
        self.click_and_load(self.find(f"input[name={name}]"))

    def save_and_expect_success(self, name: str = "_save") -> str:
        self.submit(name)
        errors = self.form_errors()
        assert not errors, f"the admin refused the form: {errors}"
        message = self.text("ul.messagelist li.success")
        assert "was added successfully" in message or "changed successfully" in (
            message
        ), message
        return message

    def form_errors(self) -> list[str]:
        """Every error the admin shows on the form: the note, field and
        non-field errors, inline formset errors."""
        return [
            element.text
            for element in self.find_all("p.errornote, ul.errorlist li")
            if element.text
        ]

    def field_errors(self, name: str) -> list[str]:
        """The errors shown next to the field ``name`` (its form row)."""
        rows = self.find_all(f".form-row.field-{name}, .fieldBox.field-{name}")
        return [
            element.text
            for row in rows
            for element in row.find_elements(By.CSS_SELECTOR, "ul.errorlist li")
        ]

    def type_keys(self, name: str, *keys: str) -> None:
        self.field(name).send_keys(*keys)


__all__ = ["UI", "Keys"]
