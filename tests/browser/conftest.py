"""Browser tests: Debian's headless Chromium driven by Selenium against
pytest-django's ``live_server``.

Nothing here downloads a browser or a driver: the chromedriver path is passed
to Selenium's ``Service`` explicitly, so Selenium Manager never runs.

- ``WINK_CHROMIUM`` / ``WINK_CHROMEDRIVER``: paths of the browser and the
  driver (default: ``chromium`` and ``chromedriver`` on ``PATH``, i.e.
  ``/usr/bin/...`` from ``apt-get install chromium chromium-driver``).
- Either missing: every browser test is skipped with the reason, unless
  ``WINK_REQUIRE_BROWSER=1`` (set by ``.ci/run`` on CI), which makes them fail.
- ``WINK_BROWSER_SCREENSHOTS=<dir>``: save the screenshots the tests take (and
  one of the page at any failure) into that directory.

Every test also fails if the browser reported a Content-Security-Policy
violation on any page it visited (the console log, ``csp_violations``): the
product's pages must work under its policy (``wink_project/csp.py``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.limits import BROWSER_SECONDS

REQUIRE_ENV = "WINK_REQUIRE_BROWSER"
CHROMIUM_ENV = "WINK_CHROMIUM"
CHROMEDRIVER_ENV = "WINK_CHROMEDRIVER"
SCREENSHOTS_ENV = "WINK_BROWSER_SCREENSHOTS"

INSTALL_HINT = "apt-get install chromium chromium-driver"


def _executable(env: str, names: tuple[str, ...]) -> tuple[str | None, str]:
    """(path or None, what was looked for)."""
    explicit = os.environ.get(env, "").strip()
    if explicit:
        ok = os.path.isfile(explicit) and os.access(explicit, os.X_OK)
        return (explicit if ok else None), f"{explicit} (from {env})"
    for name in names:
        found = shutil.which(name)
        if found:
            return found, name
    return None, f"{' or '.join(names)} on PATH"


def browser_paths() -> tuple[tuple[str, str] | None, str]:
    """((chromium, chromedriver), "") when both are there, else (None, reason)."""
    chromium, chromium_wanted = _executable(CHROMIUM_ENV, ("chromium",))
    driver, driver_wanted = _executable(CHROMEDRIVER_ENV, ("chromedriver",))
    missing = [
        f"no {what} at {wanted}"
        for what, path, wanted in (
            ("browser", chromium, chromium_wanted),
            ("driver", driver, driver_wanted),
        )
        if path is None
    ]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append(
            "the selenium package is not installed (pip install -e '.[dev]')"
        )
    if missing:
        return None, (
            "browser tests need Chromium and ChromeDriver: "
            + "; ".join(missing)
            + f" ({INSTALL_HINT}; {REQUIRE_ENV}=1 makes this a failure)"
        )
    assert chromium is not None and driver is not None
    return (chromium, driver), ""


def browser_required() -> bool:
    return os.environ.get(REQUIRE_ENV, "").strip().lower() in {"1", "true", "yes"}


@pytest.fixture(scope="session")
def _browser_binaries() -> tuple[str, str]:
    paths, reason = browser_paths()
    if paths is None:
        if browser_required():
            pytest.fail(f"{REQUIRE_ENV} is set but {reason}", pytrace=False)
        pytest.skip(reason)
    return paths


@pytest.fixture(scope="session")
def _chrome(_browser_binaries: tuple[str, str], live_server: Any) -> Iterator[Any]:
    """One headless Chromium for the whole run (starting one costs ~1 s).

    It asks for ``live_server`` so that it quits first: its keep-alive
    connections then close while the server still shares the in-memory
    SQLite connection with its request threads."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, chromedriver = _browser_binaries
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1000",
        "--lang=en-US",
    ):
        options.add_argument(argument)
    # The console log, read after each test for CSP violations.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(
        service=Service(executable_path=chromedriver), options=options
    )
    driver.set_page_load_timeout(BROWSER_SECONDS)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    setattr(item, f"_browser_report_{report.when}", report)
    return report


def _screenshot_dir() -> Path | None:
    value = os.environ.get(SCREENSHOTS_ENV, "").strip()
    if not value:
        return None
    path = Path(value)
    path.mkdir(parents=True, exist_ok=True)
    return path


def csp_violations(driver: Any) -> list[str]:
    """The Content-Security-Policy violations the console reported since the
    last call (reading the log empties it)."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if "Content Security Policy" in entry.get("message", "")
    ]


@pytest.fixture
def driver(
    _chrome: Any, live_server: Any, request: pytest.FixtureRequest
) -> Iterator[Any]:
    """The shared browser, logged out, with ``live_server`` running; the test
    fails if a page it visited violated the Content-Security-Policy."""
    _chrome.delete_all_cookies()
    _chrome.set_window_size(1280, 1000)
    csp_violations(_chrome)  # what an earlier test left
    yield _chrome
    report = getattr(request.node, "_browser_report_call", None)
    if report is not None and report.failed:
        directory = _screenshot_dir()
        if directory is not None:
            path = directory / f"FAILED-{request.node.name}.png"
            _chrome.save_screenshot(str(path))
            print(f"screenshot of the page at the failure: {path}")
        print(f"page at the failure: {_chrome.current_url}")
    violations = csp_violations(_chrome)
    if violations:
        pytest.fail(
            "Content-Security-Policy violations in the browser console:\n"
            + "\n".join(violations),
            pytrace=False,
        )


@pytest.fixture
def shot(driver: Any) -> Any:
    """``shot(name)``: a full-page screenshot into ``WINK_BROWSER_SCREENSHOTS``."""

    def take(name: str) -> Path | None:
        directory = _screenshot_dir()
        if directory is None:
            return None
        size = driver.get_window_size()
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(size["width"], min(max(int(height) + 120, 600), 10000))
        path = directory / f"{name}.png"
        driver.save_screenshot(str(path))
        driver.set_window_size(size["width"], size["height"])
        return path

    return take


OPERATOR_PASSWORD = "a-browser-test-password"


@pytest.fixture
def ui(driver: Any, live_server: Any, django_user_model: Any) -> Any:
    """The browser, logged in to the admin as a new superuser ``operator``."""
    from tests.browser.ui import UI

    django_user_model.objects.create_superuser(
        "operator", "op@example.com", OPERATOR_PASSWORD
    )
    page = UI(driver, live_server.url)
    page.login("operator", OPERATOR_PASSWORD)
    return page
