"""The patch demo in a real browser, as a new operator would try it: run
``demo/patch`` from its preview page and read on the session page the patch
that read-before-write denied, the read, each applied patch as a diff with the
file's text after it, and the patch that failed because its context was
stale."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.browser.test_catalog_admin import positions
from tests.browser.test_demo_sessions import run_from_preview, timeline_items
from tests.browser.ui import UI
from tooling.demo import seed_demo_catalog
from tooling.offline.patches import EDIT_SUFFIX

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _demo_catalog(transactional_db: Any) -> None:
    seed_demo_catalog()


def test_patch_demo_shows_the_denial_each_diff_and_the_file_after(
    ui: UI, shot: Any
) -> None:
    entries = run_from_preview(ui, "demo/patch")
    shot("demo-06-patch-session")

    patches = positions(entries, "tool-invocation", "apply_patch")
    assert len(patches) == 4
    [denial] = positions(entries, "policy-denial", "apply_patch")
    assert "patch-read-before-write" in entries[denial][1].split()
    assert "must be read before overwriting" in entries[denial][2]
    reads = positions(entries, "tool-invocation", "read_file")
    assert denial < reads[-1] < patches[2]
    assert ["failed" in entries[i][0] for i in patches] == [False, True, False, True]

    items = timeline_items(ui)
    updated = items[patches[2]]
    removed = updated.find_element(By.CSS_SELECTOR, "pre.diff span.del").text
    added = updated.find_element(By.CSS_SELECTOR, "pre.diff span.add").text
    assert (removed, added) == ("-# Notes", f"+# Notes{EDIT_SUFFIX}")
    after = updated.find_element(By.CSS_SELECTOR, "pre.file-after")
    assert after.get_attribute("textContent").startswith(f"# Notes{EDIT_SUFFIX}\n")
    stale = items[patches[3]]
    assert "Context not found in 'CHANGELOG.md'" in stale.text
    assert "Not applied: the file is unchanged." in stale.text
    assert not stale.find_elements(By.CSS_SELECTOR, "pre.file-after")
