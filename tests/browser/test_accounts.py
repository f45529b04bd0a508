"""Two ordinary accounts (not staff) in a real browser: each logs in on the
product's login page (the admin's refuses them), sees only their own sessions
on the audit pages, gets a 404 for the other's session, and logs out."""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app import services
from tests.browser.ui import UI
from tooling.demo import seed_demo_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(ui: UI, username: str, password: str, next_path: str) -> None:
    ui.go(next_path)
    assert ui.path == f"/accounts/login/?next={next_path}", ui.path
    assert ui.text("h1") == "Log in"
    ui.fill("username", username)
    ui.fill("password", password)
    ui.click_and_load(ui.find("form.login button[type=submit]"))


def test_each_account_sees_only_its_own_sessions(
    driver: Any, live_server: Any, django_user_model: Any, shot: Any
) -> None:
    seed_demo_catalog()
    alice = django_user_model.objects.create_user("alice", password="pw-alice-1")
    bob = django_user_model.objects.create_user("bob", password="pw-bob-1")
    mine = services.start_session(prompt_ref="demo/release", user=alice)
    theirs = services.start_session(prompt_ref="demo/notes", user=bob)
    ui = UI(driver, live_server.url)

    log_in(ui, "alice", "wrong", "/audit/sessions/")
    assert "Please enter a correct username and password" in ui.page_text()
    ui.fill("username", "alice")
    ui.fill("password", "pw-alice-1")
    ui.click_and_load(ui.find("form.login button[type=submit]"))
    assert ui.path == "/audit/sessions/"
    assert ui.text("header.site .muted") == "alice"
    rows = [row.text for row in ui.find_all("table tbody tr")]
    assert len(rows) == 1 and "demo/release" in rows[0], rows
    shot("accounts-01-alice-sessions")

    ui.go(theirs.get_absolute_url())
    assert "demo/notes" not in ui.page_text()
    assert "Not Found" in ui.page_text() or "not found" in ui.page_text().lower()
    ui.go(mine.get_absolute_url())
    assert ui.text("h1").startswith("demo/release")

    ui.click_and_load(ui.find("header.site form button[type=submit]"))  # log out
    assert ui.path.startswith("/accounts/login/")
    log_in(ui, "bob", "pw-bob-1", "/audit/sessions/")
    rows = [row.text for row in ui.find_all("table tbody tr")]
    assert len(rows) == 1 and "demo/notes" in rows[0], rows
    ui.go(mine.get_absolute_url())
    assert "demo/release" not in ui.page_text()
