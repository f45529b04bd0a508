"""The Content-Security-Policy: on every response, and every page keeps to it.

The header is on pages, the admin, the API, the API docs (and their script),
the schema, static files and error pages. No page holds an inline script,
style, style attribute or event handler the policy would block: the
browser tests (tests/browser/) check the same pages in Chromium's console.
"""

from __future__ import annotations

import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.contrib import admin
from django.test import Client, RequestFactory
from django.urls import include, path

from sessions_app import services
from tooling.demo import seed_demo_catalog
from wink_project.csp import DEFAULT_POLICY, configured_policy, debug_page_policy

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[1]
HEADER = "Content-Security-Policy"


def _fail(request: Any) -> Any:
    raise RuntimeError("the CSP test's failure")


urlpatterns = [path("fail/", _fail), path("", include("wink_project.urls"))]


def test_default_policy_allows_this_origin_only(settings):
    assert (
        settings.WINK_CSP
        == DEFAULT_POLICY
        == (
            "default-src 'self'; script-src 'self'; style-src 'self'; "
            "img-src 'self' data:; font-src 'self'; connect-src 'self'; "
            "object-src 'none'; base-uri 'self'; form-action 'self'; "
            "frame-ancestors 'none'"
        )
    )


@pytest.mark.urls(__name__)
def test_csp_header_on_pages_api_admin_docs_static_and_errors(settings, admin_user):
    settings.DEBUG = False
    anonymous = Client(raise_request_exception=False)
    operator = Client()
    operator.force_login(admin_user)
    responses = {
        "login page": anonymous.get("/accounts/login/"),
        "sessions page": operator.get("/audit/sessions/"),
        "cost page": operator.get("/audit/costs/"),
        "API, anonymous": anonymous.get("/api/prompts/"),
        "API": operator.get("/api/sessions/"),
        "API error": operator.post("/api/sessions/", "x", content_type="text/plain"),
        "admin login": anonymous.get("/admin/login/"),
        "admin": operator.get("/admin/"),
        "API docs": anonymous.get("/api/docs/"),
        "API docs script": anonymous.get("/api/docs/?script="),
        "schema": anonymous.get("/api/schema/"),
        "static file": anonymous.get("/static/sessions_app/site.css"),
        "404": anonymous.get("/no-such-page/"),
        "500": anonymous.get("/fail/"),
    }
    statuses = {name: response.status_code for name, response in responses.items()}
    assert statuses == {
        **dict.fromkeys(responses, 200),
        "API, anonymous": 401,
        "API error": 415,
        "404": 404,
        "500": 500,
    }
    policies = {name: response.get(HEADER) for name, response in responses.items()}
    assert policies == dict.fromkeys(responses, DEFAULT_POLICY)


@pytest.mark.urls(__name__)
def test_debug_error_pages_may_run_their_inline_script_and_style(settings):
    settings.DEBUG = True
    client = Client(raise_request_exception=False)
    relaxed = (
        "default-src 'self'; script-src 'self' 'unsafe-inline'; "
        "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; "
        "connect-src 'self'; object-src 'none'; base-uri 'self'; "
        "form-action 'self'; frame-ancestors 'none'"
    )
    not_found = client.get("/no-such-page/")
    failed = client.get("/fail/")
    assert "Page not found" in not_found.content.decode()
    assert "the CSP test" in failed.content.decode()
    assert (not_found[HEADER], failed[HEADER]) == (relaxed, relaxed)
    # only Django's technical pages: the product's own pages stay strict
    assert client.get("/accounts/login/")[HEADER] == DEFAULT_POLICY
    text = client.get("/fail/", HTTP_ACCEPT="text/plain")
    assert text[HEADER] == DEFAULT_POLICY


def test_debug_pages_for_a_bad_host_or_a_csrf_failure_are_relaxed_too(settings):
    # Django answers a SuspiciousOperation (a Host not in ALLOWED_HOSTS) with
    # its technical 500 page as a 400, inline styles and scripts. A CSRF
    # failure is the product's page (templates/403_csrf.html), a 403 relaxed
    # as every DEBUG error page is.
    settings.DEBUG = True
    bad_host = Client(raise_request_exception=False).get(
        "/accounts/login/", HTTP_HOST="not-allowed.example.com"
    )
    csrf = Client(enforce_csrf_checks=True).post("/accounts/login/", {})
    assert (bad_host.status_code, csrf.status_code) == (400, 403)
    assert "DisallowedHost" in bad_host.content.decode()
    assert "The form was not accepted" in csrf.content.decode()
    relaxed = debug_page_policy(DEFAULT_POLICY)
    assert (bad_host[HEADER], csrf[HEADER]) == (relaxed, relaxed)
    settings.DEBUG = False
    strict = Client(enforce_csrf_checks=True).post("/accounts/login/", {})
    assert (strict.status_code, strict[HEADER]) == (403, DEFAULT_POLICY)


def test_wink_csp_replaces_or_adds_directives():
    policy = configured_policy(
        "img-src 'self' data: https://cdn.example.com;  report-uri /csp/ ;"
    )
    assert "img-src 'self' data: https://cdn.example.com;" in policy
    assert policy.endswith("; report-uri /csp/")
    assert policy.startswith("default-src 'self'; script-src 'self';")
    assert debug_page_policy("default-src 'self'") == (
        "default-src 'self'; script-src 'self' 'unsafe-inline'; "
        "style-src 'self' 'unsafe-inline'"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("img_src 'self'", "'img_src' is not a directive name"),
        (
            "img-src 'self', https://x.example.com",
            "the value of img-src may hold only printable ASCII without commas",
        ),
    ],
)
def test_a_malformed_wink_csp_fails_at_startup(value, message):
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "DEBUG": "1", "WINK_CSP": value},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "WINK_CSP must be Content-Security-Policy directives" in result.stderr
    assert message in result.stderr


# -- no page holds what the policy blocks ----------------------------------------


class _InlineFinder(HTMLParser):
    """Collects what a strict policy blocks: inline scripts, <style> blocks,
    style attributes, event handler attributes and javascript: URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._script: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        if tag == "style":
            self.found.append("<style>")
        if tag == "script" and "src" not in names:
            kind = (names.get("type") or "").lower()
            if kind not in ("application/json", "application/ld+json"):
                self.found.append("<script> without src")
        for name, value in attrs:
            if name == "style" or name.startswith("on"):
                self.found.append(f"{tag} {name}={value!r}")
            if value and value.strip().lower().startswith("javascript:"):
                self.found.append(f"{tag} {name}={value!r}")


def _blocked(html: str) -> list[str]:
    finder = _InlineFinder()
    finder.feed(html)
    return finder.found


def _pages(admin_user: Any) -> list[str]:
    """Every page of the product a superuser reaches (the admin's change lists
    and add forms from its own app list, and a change form of each demo row)."""
    session = services.start_session(prompt_ref="demo/research", user=admin_user)
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    pages = [
        "/audit/sessions/",
        f"/audit/sessions/{session.pk}/",
        "/audit/citations/",
        "/audit/costs/",
        "/audit/approvals/",
        "/admin/",
        "/api/docs/",
    ]
    for app in admin.site.get_app_list(request):
        for model in app["models"]:
            pages.append(model["admin_url"])
            if model.get("add_url"):
                pages.append(model["add_url"])
    templates = [p for p in pages if p.endswith("/prompttemplate/")]
    assert templates, "no prompt template change list in the admin"
    return pages


def test_no_page_holds_inline_script_or_style(admin_user):
    from tooling.models import HostedToolDefinition, PromptTemplate

    seed_demo_catalog()
    client = Client()
    pages = _pages(admin_user)
    client.force_login(admin_user)

    template = PromptTemplate.objects.get(namespace="demo", key="research")
    hosted = HostedToolDefinition.objects.get(name="web_search")
    pages += [
        f"/admin/tooling/prompttemplate/{template.pk}/change/",
        f"/admin/tooling/hostedtooldefinition/{hosted.pk}/change/",
    ]
    preview = client.post(
        f"/admin/tooling/prompttemplate/{template.pk}/preview/",
        {"params": '{"question": "What is Django?"}', "trust_level": "standard"},
    )
    assert preview.status_code == 200
    assert 'id="request-json"' in preview.content.decode()
    found = {"preview": _blocked(preview.content.decode())}
    for page in ("/accounts/login/", "/admin/login/"):
        found[page] = _blocked(Client().get(page).content.decode())
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        found[page] = _blocked(response.content.decode())
    assert {page: items for page, items in found.items() if items} == {}
    assert len(found) > 30
