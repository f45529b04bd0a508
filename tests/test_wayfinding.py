"""Issue #28, way-finding: a newcomer finds their way around.

The admin says whose it is and links to the audit pages the user may open;
``make run``'s banner names every page; links in approval emails follow the
address served; 404 and 500 pages are the product's; "Times run" counts what
it says; flash messages name statuses as people read them; the cost CSV takes
the API's token.
"""

from __future__ import annotations

import csv
import html
import io
import re
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import Permission
from django.core import mail
from django.test import Client, RequestFactory
from django.urls import reverse
from django.views.defaults import server_error
from rest_framework.authtoken.models import Token

from sessions_app.models import AgentSession, ApprovalRequest
from tests.sessions_app.factories import AgentSessionFactory, UserFactory
from tooling.demo import seed_demo_catalog
from tooling.models import PromptTemplate

pytestmark = pytest.mark.django_db

BASE_DIR = Path(django_settings.BASE_DIR)


def text_of(response: Any) -> str:
    markup = response.content.decode()
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


@pytest.fixture(autouse=True)
def _inline(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.WINK_APPROVAL_WEBHOOK_URL = ""


@pytest.fixture
def capture(django_capture_on_commit_callbacks: Any) -> Any:
    return django_capture_on_commit_callbacks


# -- the admin -----------------------------------------------------------------


def audit_links(response: Any) -> dict[str, str]:
    box = re.search(
        r'<div class="module" id="audit-pages">(.*?)</div>',
        response.content.decode(),
        re.S,
    )
    assert box, "no box of audit pages on the admin index"
    return {
        label: url
        for url, label in re.findall(r'<a href="([^"]+)">([^<]+)</a>', box.group(1))
    }


def test_admin_index_is_branded_and_links_every_audit_page(admin_client: Client):
    response = admin_client.get("/admin/")

    assert response.status_code == 200
    markup = response.content.decode()
    assert "Django administration" not in markup
    assert "<title>WINK Catalog | WINK Catalog</title>" in markup
    assert '<div id="site-name"><a href="/admin/">WINK Catalog</a></div>' in markup
    assert audit_links(response) == {
        "Sessions": "/audit/sessions/",
        "Approvals inbox": "/audit/approvals/",
        "Costs": "/audit/costs/",
        "Citations": "/audit/citations/",
        "Revisions": "/audit/revisions/",
        "Experiments": "/audit/experiments/",
    }


def test_admin_index_links_only_the_pages_the_user_may_open(client: Client):
    staff = UserFactory.create(username="staffer", is_staff=True)
    client.force_login(staff)

    links = audit_links(client.get("/admin/"))

    assert "Revisions" not in links  # needs view_catalogrevision
    assert client.get("/audit/revisions/").status_code == 403
    for url in links.values():
        assert client.get(url).status_code == 200, url


def test_the_audit_pages_link_the_admin_for_staff_only(client: Client):
    """The top bar's Admin led a non-staff user to a login page that takes
    staff only (found by hostile QA)."""
    admin_link = f'href="{reverse("admin:index")}"'
    client.force_login(UserFactory.create(username="plain"))
    assert admin_link not in client.get("/audit/sessions/").content.decode()
    client.force_login(UserFactory.create(username="staffer", is_staff=True))
    assert admin_link in client.get("/audit/sessions/").content.decode()


# -- make run -------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_banner_names_every_page_and_mails_links_to_its_port():
    commands = subprocess.run(
        ["make", "--dry-run", "--always-make", "run", "PORT=8720"],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout
    for path in (
        "/audit/sessions/",
        "/audit/approvals/",
        "/audit/costs/",
        "/admin/",
        "/api/docs/",
    ):
        assert f"http://127.0.0.1:8720{path}" in commands, path
    [serve] = [line for line in commands.splitlines() if "runserver" in line]
    assert "WINK_BASE_URL=${WINK_BASE_URL:-http://127.0.0.1:8720}" in serve
    [seed] = [line for line in commands.splitlines() if "seed_demo" in line]
    assert "WINK_BASE_URL=${WINK_BASE_URL:-http://127.0.0.1:8720}" in seed


# -- links in approval emails ------------------------------------------------------


def run_demo_ship(client: Client, capture: Any, **headers: Any) -> ApprovalRequest:
    """Start demo/ship from the admin (inline: the run pauses for its deploy
    and the approvers are emailed during the request)."""
    seed_demo_catalog()
    approver = UserFactory.create(username="approver", email="approver@example.com")
    approver.user_permissions.add(
        Permission.objects.get(codename="decide_any_approval")
    )
    runner = UserFactory.create(username="runner", is_superuser=True, is_staff=True)
    client.force_login(runner)
    prompt = PromptTemplate.objects.get(namespace="demo", key="ship")
    with capture(execute=True):
        response = client.post(
            reverse("admin:tooling_prompttemplate_run", args=[prompt.pk]),
            {"params": "{}", "run": "Run"},
            **headers,
        )
    assert response.status_code == 302
    return ApprovalRequest.objects.get()


@pytest.mark.django_db(transaction=True)
def test_in_development_email_links_follow_the_served_port(
    client: Client, capture: Any, settings: Any
):
    settings.DEBUG = True
    settings.WINK_BASE_URL_SET = False
    settings.WINK_BASE_URL = "http://127.0.0.1:8000"

    # committed as in production: the email goes during the request
    approval = run_demo_ship(client, capture, HTTP_HOST="127.0.0.1:8720")

    [message] = mail.outbox
    assert f"http://127.0.0.1:8720/audit/approvals/{approval.pk}/" in message.body
    assert ":8000" not in message.body


def test_a_set_base_url_wins_over_the_request(
    client: Client, capture: Any, settings: Any
):
    settings.DEBUG = True
    settings.WINK_BASE_URL_SET = True
    settings.WINK_BASE_URL = "https://catalog.example.com"

    approval = run_demo_ship(client, capture, HTTP_HOST="127.0.0.1:8720")

    [message] = mail.outbox
    assert f"https://catalog.example.com/audit/approvals/{approval.pk}/" in (
        message.body
    )


def test_in_production_the_request_never_makes_links(
    client: Client, capture: Any, settings: Any
):
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["evil.example"]
    settings.WINK_BASE_URL_SET = False
    settings.WINK_BASE_URL = "https://catalog.example.com"

    approval = run_demo_ship(client, capture, HTTP_HOST="evil.example")

    [message] = mail.outbox
    assert "evil.example" not in message.body
    assert f"https://catalog.example.com/audit/approvals/{approval.pk}/" in (
        message.body
    )


# -- the admin's flash message names the status as people read it --------------


def test_admin_run_flash_names_the_status_by_its_label(client: Client, capture: Any):
    approval = run_demo_ship(client, capture)
    followed = client.get(approval.session.get_absolute_url())
    assert f"Session {approval.session_id} is awaiting approval." in text_of(followed)
    assert "awaiting_approval." not in text_of(followed)


# -- error pages -------------------------------------------------------------------


def test_a_missing_page_is_the_products_404(client: Client, settings: Any):
    settings.DEBUG = False
    user = UserFactory.create(username="reader")
    client.force_login(user)

    response = client.get("/audit/no-such-page/")

    assert response.status_code == 404
    text = text_of(response)
    assert "404 Not found" in text and "WINK Catalog" in text
    assert "There is nothing at /audit/no-such-page/" in text
    assert 'href="/audit/sessions/"' in response.content.decode()
    assert "reader" in text  # the site's header, as on every page


def test_an_unknown_session_is_the_products_404(client: Client, settings: Any):
    settings.DEBUG = False
    client.force_login(UserFactory.create(username="reader"))
    response = client.get("/audit/sessions/00000000-0000-0000-0000-000000000000/")
    assert response.status_code == 404
    assert "404 Not found" in text_of(response)


def test_the_500_page_is_the_products_and_needs_no_request_data(settings: Any):
    settings.DEBUG = False
    request = RequestFactory().get("/audit/sessions/")  # no user, no session

    response = server_error(request)

    assert response.status_code == 500
    text = text_of(response)
    assert "500 Server error" in text and "WINK Catalog" in text
    assert "/static/sessions_app/site.css" in response.content.decode()


def test_a_bad_request_and_a_refused_form_are_the_products_pages(settings: Any):
    """Django's bare "Bad Request (400)" and its CSRF page (whose inline style
    the CSP blocks) were shown with DEBUG off (found by a hostile review)."""
    settings.DEBUG = False
    bad = Client().get("/audit/sessions/", headers={"host": "evil.example"})
    assert bad.status_code == 400
    text = text_of(bad)
    assert "400 Bad request" in text and "WINK Catalog" in text
    refused = Client(enforce_csrf_checks=True).post(
        "/accounts/login/", {"username": "a", "password": "b"}
    )
    assert refused.status_code == 403
    text = text_of(refused)
    assert "The form was not accepted" in text and "WINK Catalog" in text
    assert "<style" not in refused.content.decode()
    assert "csrf-reason" not in refused.content.decode()  # DEBUG off: the log says


def test_a_refused_form_says_why_with_debug_on(settings: Any):
    """Django renders a project's 403_csrf.html with the request alone, so the
    page could not say why; the project's view passes the reason, shown with
    DEBUG on only (it may quote the request's Origin, escaped)."""
    settings.DEBUG = True
    refused = Client(enforce_csrf_checks=True).post(
        "/accounts/login/",
        {"username": "a", "password": "b"},
        headers={"origin": "https://<b>evil</b>.example"},
    )
    assert refused.status_code == 403
    markup = refused.content.decode()
    found = re.search(r'<p id="csrf-reason">(.*?)</p>', markup, re.S)
    assert found, "no reason on the page"
    assert "Origin checking failed" in html.unescape(found.group(1))
    assert "<b>evil" not in markup and "&lt;b&gt;evil" in markup


def test_the_urlconf_keeps_djangos_500_handler():
    # django.views.defaults.server_error renders templates/500.html
    from wink_project import urls

    assert not hasattr(urls, "handler500")


# -- "Times run" -------------------------------------------------------------------


def detail_fact(client: Client, session: AgentSession) -> str:
    markup = client.get(session.get_absolute_url()).content.decode()
    found = re.search(r'<dd id="times-run"[^>]*>(.*?)</dd>', markup, re.S)
    assert found, "no Times run on the session page"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).split())


@pytest.mark.parametrize(
    ("attempts", "pauses", "expected"),
    [
        (0, 0, "0"),  # queued: not run yet
        (1, 0, "1"),
        # waiting for a decision: it ran once (the claim was given up)
        (0, 1, "1 · paused 1 time for a decision"),
        (1, 1, "2 · paused 1 time for a decision"),
        (3, 0, "3 (2 after its worker stopped)"),
    ],
)
def test_times_run_counts_each_time_the_run_was_taken_up(
    admin_client: Client, attempts: int, pauses: int, expected: str
):
    session = AgentSessionFactory.create(attempts=attempts, pauses=pauses)
    assert detail_fact(admin_client, session) == expected


def test_a_paused_demo_run_says_it_ran_once(client: Client, capture: Any):
    approval = run_demo_ship(client, capture)
    session = AgentSession.objects.get(pk=approval.session_id)
    assert session.attempts == 0  # the field counts claims since the pause
    assert detail_fact(client, session).startswith("1 ")


# -- the cost CSV takes the API's token ------------------------------------------------


def read_csv(response: Any) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.content.decode())))


def test_cost_csv_accepts_an_api_token_with_the_same_rows(client: Client):
    alice = UserFactory.create(username="alice")
    bob = UserFactory.create(username="bob")
    AgentSessionFactory.create(created_by=alice, cost=Decimal("0.25"))
    AgentSessionFactory.create(
        created_by=bob, cost=Decimal("9"), prompt_ref="secret/bob"
    )
    token = Token.objects.create(user=alice)

    by_token = Client().get(
        "/audit/costs.csv",
        {"group": "prompt"},
        HTTP_AUTHORIZATION=f"Token {token.key}",
    )
    client.force_login(alice)
    by_session = client.get("/audit/costs.csv", {"group": "prompt"})

    assert by_token.status_code == 200
    assert by_token["Content-Type"] == "text/csv; charset=utf-8"
    assert read_csv(by_token) == read_csv(by_session)
    assert "secret/bob" not in by_token.content.decode()  # only what alice sees


def test_cost_csv_by_token_of_an_auditor_sees_everyone(client: Client):
    auditor = UserFactory.create(username="auditor")
    auditor.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    AgentSessionFactory.create(
        created_by=UserFactory.create(username="bob"),
        cost=Decimal("9"),
        prompt_ref="team/bob",
    )
    token = Token.objects.create(user=auditor)

    response = Client().get(
        "/audit/costs.csv", {"group": "prompt"}, HTTP_AUTHORIZATION=f"Token {token.key}"
    )

    assert response.status_code == 200
    assert "team/bob" in response.content.decode()


@pytest.mark.parametrize("header", ["Token not-a-token", "Token ", "Bearer x", "x"])
def test_cost_csv_refuses_a_bad_token(header: str):
    # (a Bearer header went to the login page; the API answers it 401)
    response = Client().get("/audit/costs.csv", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_cost_csv_with_a_proxys_basic_login_goes_to_the_login_page():
    response = Client().get("/audit/costs.csv", HTTP_AUTHORIZATION="Basic eDp5")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_cost_csv_refuses_a_deactivated_users_token():
    user = UserFactory.create(username="gone")
    token = Token.objects.create(user=user)
    user.is_active = False
    user.save()
    response = Client().get("/audit/costs.csv", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 401


def test_cost_csv_without_credentials_still_goes_to_the_login_page():
    response = Client().get("/audit/costs.csv")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_on_every_interface_mails_links_to_this_machine():
    commands = subprocess.run(
        ["make", "--dry-run", "--always-make", "run", "HOST=0.0.0.0", "PORT=9001"],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout
    [serve] = [line for line in commands.splitlines() if "runserver" in line]
    assert "WINK_BASE_URL=${WINK_BASE_URL:-http://127.0.0.1:9001}" in serve
    assert serve.endswith("runserver 0.0.0.0:9001")
