"""Error pages and error reports show no credential, DEBUG on or off.

The product runs in a subprocess whose database is unreachable (PostgreSQL on
a port nothing listens on, with a canary password), as ``make run`` would with
a bad DATABASE_URL: an anonymous login POST then fails inside psycopg's
``connect()``, whose frames hold the database password in several locals
(``conn_params``, ``settings_dict``, the connection string ...), while the
login form's frames hold the password just typed. Every configured secret is a
canary; none may appear in the technical 500 page (HTML or text), the admin
login's page or the text report mailed to ADMINS.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from django.contrib.auth.models import AnonymousUser
from django.contrib.sessions.backends.cache import SessionStore
from django.test import RequestFactory
from django.views.debug import SafeExceptionReporterFilter

from wink_project.reporting import SecretHidingExceptionReporter

ROOT = Path(__file__).resolve().parents[1]

# What a developer's shell may hold that would change what is tested.
_OWN_ENV = re.compile(
    r"^(DEBUG|SECRET_KEY|SECRET_KEY_FALLBACKS|ALLOWED_HOSTS|DATABASE_URL|"
    r"CELERY_\w+|OPENAI_\w+|WINK_\w+|EMAIL_\w+|DJANGO_SETTINGS_MODULE)$"
)

# Runs in the subprocess: the requests, then what each returned, as JSON. It
# holds no secret (the page shows no source for it, but the command line is
# the process's): they come from the environment, the typed password on stdin.
_REQUESTS = """
import json, os, sys
import django
django.setup()
from django.core import mail
from django.test import Client
from django.test.utils import override_settings, setup_test_environment

setup_test_environment()  # mail goes to mail.outbox
typed = json.load(sys.stdin)["password"]
client = Client(raise_request_exception=False)
meta = dict(os.environ)  # runserver copies the environment into request.META
form = {"username": "alice", "password": typed}
out = {}
page = client.post("/accounts/login/", form, **meta)
out["html"] = [page.status_code, page["Content-Type"], page.content.decode()]
page = client.post("/accounts/login/", form, HTTP_ACCEPT="text/plain", **meta)
out["text"] = [page.status_code, page["Content-Type"], page.content.decode()]
page = client.post("/admin/login/?next=/admin/", form, **meta)
out["admin"] = [page.status_code, page["Content-Type"], page.content.decode()]
with override_settings(DEBUG=False, ADMINS=[("Ops", "ops@example.com")]):
    page = client.post("/accounts/login/", form, **meta)
out["email"] = [page.status_code, len(mail.outbox), mail.outbox[0].body]
print(json.dumps(out))
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _canary(name: str) -> str:
    return f"Canary{name}{secrets.token_hex(8)}"


@pytest.fixture(scope="module")
def reports() -> dict[str, Any]:
    """The pages and the report of the failed logins, and the canaries."""
    canaries = {
        name: _canary(name)
        for name in (
            "Database",
            "OpenAI",
            "SecretKey",
            "Fallback",
            "Broker",
            "Email",
            "Webhook",
            "Mcp",
            "Typed",
        )
    }
    port = _free_port()  # closed again: nothing listens there
    env = {k: v for k, v in os.environ.items() if not _OWN_ENV.match(k)}
    env.update(
        DJANGO_SETTINGS_MODULE="wink_project.settings",
        DEBUG="1",
        DATABASE_URL=(
            f"postgres://wink:{canaries['Database']}@127.0.0.1:{port}/wink_unreachable"
        ),
        OPENAI_API_KEY=f"sk-{canaries['OpenAI']}",
        SECRET_KEY=canaries["SecretKey"],
        # not read by the settings: a variable named like a secret is one
        SECRET_KEY_FALLBACKS=canaries["Fallback"],
        CELERY_BROKER_URL=f"amqp://guest:{canaries['Broker']}@127.0.0.1:{port}//",
        EMAIL_HOST_PASSWORD=canaries["Email"],
        EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
        WINK_APPROVAL_WEBHOOK_URL="https://hooks.example.com/wink",
        WINK_APPROVAL_WEBHOOK_SECRET=canaries["Webhook"],
        WINK_MCP_CRM_TOKEN=f"Bearer {canaries['Mcp']}",
    )
    result = subprocess.run(
        [sys.executable, "-c", _REQUESTS],
        cwd=ROOT,
        env=env,
        input=json.dumps({"password": canaries["Typed"]}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    return {"canaries": canaries, **json.loads(result.stdout)}


def _assert_no_canary(text: str, canaries: dict[str, str]) -> None:
    shown = {name: text.count(value) for name, value in canaries.items()}
    assert shown == dict.fromkeys(canaries, 0), f"canaries on the page: {shown}"


def test_debug_500_page_of_a_failed_login_shows_no_credential(reports):
    status, content_type, html = reports["html"]
    assert status == 500
    assert content_type.startswith("text/html")
    # the technical page, with its traceback down to psycopg's connect()
    assert "OperationalError" in html
    assert "Traceback" in html
    assert "psycopg" in html
    assert "get_new_connection" in html
    assert "Local vars" in html
    _assert_no_canary(html, reports["canaries"])
    substitute = SafeExceptionReporterFilter.cleansed_substitute
    assert html.count(substitute) > 10


def test_debug_500_text_of_a_failed_login_shows_no_credential(reports):
    status, content_type, text = reports["text"]
    assert status == 500
    assert content_type.startswith("text/plain")
    assert "OperationalError" in text
    assert "Traceback (most recent call last)" in text
    assert "get_new_connection" in text
    _assert_no_canary(text, reports["canaries"])


def test_debug_500_page_of_a_failed_admin_login_shows_no_credential(reports):
    status, _, html = reports["admin"]
    assert status == 500
    assert "OperationalError" in html
    assert "django/contrib/admin/sites.py" in html  # the admin's login view raised
    _assert_no_canary(html, reports["canaries"])


def test_error_report_mailed_to_admins_shows_no_credential(reports):
    status, sent, body = reports["email"]
    assert status == 500
    assert sent == 1
    assert "OperationalError" in body
    assert "Traceback (most recent call last)" in body
    _assert_no_canary(body, reports["canaries"])


# -- the reporter on its own: what the filter does not see ---------------------


class _Client:
    """An object whose repr carries a secret (as a client's may)."""

    def __init__(self, key: str) -> None:
        self.key = key

    def __repr__(self) -> str:
        return f"<Client key={self.key}>"


class _Pair(NamedTuple):
    name: str
    values: set[str]


def _report(request: Any, failing: Any) -> tuple[str, str]:
    try:
        failing()
    except Exception:
        exc_info = sys.exc_info()
    reporter = SecretHidingExceptionReporter(request, *exc_info)
    return reporter.get_traceback_html(), reporter.get_traceback_text()


def test_error_report_masks_secrets_in_messages_objects_and_nested_values(
    settings, monkeypatch
):
    settings.DEBUG = True
    key = _canary("Key")
    settings.OPENAI_API_KEY = key
    header = _canary("Header")
    monkeypatch.setenv("WINK_MCP_CRM_TOKEN", f"Bearer {header}")

    def failing() -> None:
        client = _Client(key)  # noqa: F841 - a local the page shows
        nested = {"config": [{"headers": f"token is {header}"}]}  # noqa: F841
        raw = f"Bearer {header}".encode()  # noqa: F841
        by_client = {header: "a client"}  # noqa: F841 - keyed by the secret
        pair = _Pair(key, {header})  # noqa: F841 - a namedtuple holding a set
        try:
            raise KeyError(f"no entry for {key}")
        except KeyError as error:
            raise ValueError(f"the client of {key} failed") from error

    html, text = _report(RequestFactory().get("/fail/"), failing)
    for page in (html, text):
        assert key not in page
        assert header not in page
        assert "the client of ******************** failed" in page
    assert "&lt;Client key=********************&gt;" in html
    assert "token is ********************" in html
    assert "no entry for ********************" in html  # the cause
    assert "{&#x27;********************&#x27;: &#x27;a client&#x27;}" in html


def test_error_report_masks_sensitive_query_parameters(settings):
    settings.DEBUG = True
    token = _canary("Query")

    def failing() -> None:
        raise RuntimeError("the page failed")

    request = RequestFactory().get("/fail/", {"access_token": token, "page": "2"})
    html, text = _report(request, failing)
    for page in (html, text):
        assert token not in page
        assert "the page failed" in page
    get = re.search(
        r'<table class="req">.*?</table>', html.split('id="get-info"')[1], re.S
    )
    assert get is not None
    assert re.search(
        r"<td>access_token</td>\s*<td class=\"code\"><pre>&#x27;\*{20}&#x27;", get[0]
    )
    assert re.search(r"<td>page</td>\s*<td class=\"code\"><pre>&#x27;2&#x27;", get[0])
    assert "access_token = '********************'" in text
    assert "page = '2'" in text


@pytest.mark.django_db
def test_login_views_mark_their_post_as_sensitive(rf):
    from django.contrib.admin import site
    from django.contrib.auth.views import LoginView

    for view in (LoginView.as_view(), site.login):
        request = rf.post("/login/", {"username": "u", "password": "p"})
        request.user = AnonymousUser()
        request.session = SessionStore()
        request._dont_enforce_csrf_checks = True
        view(request)
        assert request.sensitive_post_parameters == "__ALL__"


class _FailingEnviron:
    """An environment with one short MCP header value, failing on another
    variable (after the first was read); nothing of it shows in its repr."""

    def get(self, key: str, default: Any = None) -> Any:
        if key == "WINK_MCP_BROKEN":
            raise RuntimeError("the environment failed")
        return _SHORT if key == "WINK_MCP_SHORT" else default

    def __repr__(self) -> str:
        return "<environ>"


_SHORT = "".join(["q", "#", "Z"])  # too short to be masked by value


def test_error_report_hides_mcp_header_values_being_read(settings):
    from tooling.assembly.hosted import _header_values

    settings.DEBUG = True

    def failing() -> None:
        _header_values(
            "header_env",
            {"X-Short": "WINK_MCP_SHORT", "X-Broken": "WINK_MCP_BROKEN"},
            _FailingEnviron(),  # type: ignore[arg-type]
        )

    html, text = _report(RequestFactory().get("/fail/"), failing)
    assert "the environment failed" in html
    assert "_header_values" in html
    assert _SHORT not in html.replace("&#x27;", "'")
    assert _SHORT not in text
