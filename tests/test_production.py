"""Production: gunicorn serves the product with DEBUG off (styles included),
`check --deploy` is clean with the documented environment, the security
settings come from the environment, and DEBUG pages show no secret."""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client
from django.urls import path

from tests.limits import LISTEN_SECONDS, REQUEST_SECONDS, SUBPROCESS_SECONDS

ROOT = Path(__file__).resolve().parents[1]

# Variables a developer's shell may hold that would change what is tested.
_OWN_ENV = re.compile(
    r"^(DEBUG|SECRET_KEY|ALLOWED_HOSTS|CSRF_TRUSTED_ORIGINS|DATABASE_URL|"
    r"CELERY_BROKER_URL|CELERY_RESULT_BACKEND|OPENAI_API_KEY|OPENAI_BASE_URL|"
    r"WINK_PROVIDER|STATIC_ROOT|SECURE_\w+|SESSION_COOKIE_SECURE|"
    r"CSRF_COOKIE_SECURE|GUNICORN_\w+|WEB_CONCURRENCY|HOST|PORT|"
    r"FORWARDED_ALLOW_IPS|WINK_BASE_URL)$"
)


def _env(**overrides: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not _OWN_ENV.match(k)}
    return {**clean, "DJANGO_SETTINGS_MODULE": "wink_project.settings", **overrides}


def production_env(**overrides: str) -> dict[str, str]:
    """The README's production environment (as `.ci/run` checks it)."""
    documented = {
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "example.com",
        "CSRF_TRUSTED_ORIGINS": "https://example.com",
        "DATABASE_URL": "postgres://wink@db.example.com:5432/wink",
        "CELERY_BROKER_URL": "redis://redis.example.com:6379/0",
        "OPENAI_API_KEY": "sk-placeholder",
        "SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO",
        "SECURE_HSTS_PRELOAD": "0",
        "WINK_BASE_URL": "https://example.com",
    }
    return _env(**{**documented, **overrides})


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
    )


def test_check_deploy_is_clean_with_the_documented_environment():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=production_env(),
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNINGS" not in result.stdout + result.stderr


_SECURITY = [
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SECURE_PROXY_SSL_HEADER",
    "SECURE_REFERRER_POLICY",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "CSRF_TRUSTED_ORIGINS",
    "DEFAULT_EXCEPTION_REPORTER_FILTER",
]


def _security_settings(env: dict[str, str]) -> dict[str, object]:
    result = _python(
        "import json; from django.conf import settings; "
        f"print(json.dumps({{n: getattr(settings, n) for n in {_SECURITY!r}}}))",
        env,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_security_settings_default_to_production_values_when_debug_is_off():
    values = _security_settings(
        _env(DEBUG="0", SECRET_KEY="x" * 50, ALLOWED_HOSTS="example.com")
    )
    assert values == {
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": False,
        "SECURE_PROXY_SSL_HEADER": None,
        "SECURE_REFERRER_POLICY": ["same-origin"],
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "CSRF_TRUSTED_ORIGINS": [],
        "DEFAULT_EXCEPTION_REPORTER_FILTER": (
            "wink_project.reporting.SecretHidingReporterFilter"
        ),
    }


def test_security_settings_come_from_the_environment():
    values = _security_settings(
        production_env(
            SECURE_SSL_REDIRECT="0",
            SECURE_HSTS_SECONDS="0",
            SECURE_HSTS_INCLUDE_SUBDOMAINS="no",
            SECURE_HSTS_PRELOAD="1",
            SECURE_REFERRER_POLICY="no-referrer,strict-origin",
            CSRF_TRUSTED_ORIGINS="https://a.example.com,https://b.example.com",
        )
    )
    assert values["SECURE_SSL_REDIRECT"] is False
    assert values["SECURE_HSTS_SECONDS"] == 0
    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is False
    assert values["SECURE_HSTS_PRELOAD"] is True
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert values["SECURE_REFERRER_POLICY"] == ["no-referrer", "strict-origin"]
    assert values["CSRF_TRUSTED_ORIGINS"] == [
        "https://a.example.com",
        "https://b.example.com",
    ]


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("SECURE_SSL_REDIRECT", "maybe", "SECURE_SSL_REDIRECT must be a boolean"),
        ("SECURE_HSTS_SECONDS", "a year", "SECURE_HSTS_SECONDS must be a number"),
        (
            "SECURE_PROXY_SSL_HEADER",
            "X-Forwarded-Proto",
            "SECURE_PROXY_SSL_HEADER must name a request header",
        ),
        (
            "CSRF_TRUSTED_ORIGINS",
            "catalog.example.com",
            "CSRF_TRUSTED_ORIGINS must list origins with their scheme",
        ),
        ("SECURE_REFERRER_POLICY", "nope", "SECURE_REFERRER_POLICY must be one"),
    ],
)
def test_a_misconfigured_security_setting_fails_at_startup(variable, value, message):
    result = _python(
        "import wink_project.settings", production_env(**{variable: value})
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


# -- gunicorn, DEBUG off -----------------------------------------------------


_WSGI_PROCESS = """
import gc, sys
import wink_project.wsgi
print(gc.get_freeze_count(), "sessions_app.audit.api" in sys.modules)
"""


def test_the_wsgi_process_loads_its_views_and_freezes_them_at_start():
    """``wsgi.py`` loads the URL patterns (every view) before the first
    request and sets the start-up objects aside from the collector
    (``wink_project.warm``): a full collection does not walk them."""
    env = production_env(DATABASE_URL="sqlite:///:memory:")
    del env["CELERY_BROKER_URL"]
    started = _python(_WSGI_PROCESS, env)
    assert started.returncode == 0, started.stderr
    frozen, views_loaded = started.stdout.split()
    assert views_loaded == "True"
    # Django, DRF and the project: well over 50,000 objects (about 180,000).
    assert int(frozen) > 50_000


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_SETUP = """
import django
django.setup()
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.authtoken.models import Token
call_command("migrate", "--noinput", verbosity=0)
call_command("collectstatic", "--noinput", verbosity=0)
user = get_user_model().objects.create_superuser("ops", "ops@example.com", "x")
print(Token.objects.create(user=user).key)
"""


@pytest.fixture(scope="module")
def production_server(tmp_path_factory) -> Iterator[tuple[str, str, Path]]:
    """(base URL, API token, its log) of gunicorn serving the product with
    DEBUG off."""
    pytest.importorskip(
        "gunicorn", reason="gunicorn is not installed: pip install -e ."
    )
    tmp = tmp_path_factory.mktemp("production")
    port = _free_port()
    env = production_env(
        ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        STATIC_ROOT=str(tmp / "static"),
        # Plain HTTP in the test; everything else as in production.
        SECURE_SSL_REDIRECT="0",
        SECURE_HSTS_SECONDS="0",
        GUNICORN_BIND=f"127.0.0.1:{port}",
        GUNICORN_WORKERS="1",
        XDG_RUNTIME_DIR=str(tmp),  # gunicorn's control socket, if it has one
    )
    del env["CELERY_BROKER_URL"]
    setup = _python(_SETUP, env)
    assert setup.returncode == 0, setup.stderr
    token = setup.stdout.split()[-1]
    log = (tmp / "gunicorn.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "wink_project.wsgi",
            "-c",
            "gunicorn.conf.py",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + LISTEN_SECONDS
        while True:
            if server.poll() is not None:
                pytest.fail(f"gunicorn exited: {(tmp / 'gunicorn.log').read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"gunicorn did not listen within {LISTEN_SECONDS} s")
                time.sleep(0.1)
        yield base, token, tmp / "gunicorn.log"
    finally:
        server.terminate()
        try:
            server.wait(timeout=LISTEN_SECONDS)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _asset(html: str, pattern: str) -> str:
    found = re.search(rf'(?:href|src)="({pattern})"', html)
    assert found, f"no {pattern} in the page"
    return found.group(1)


def test_gunicorn_serves_the_admin_with_its_styles(production_server):
    base, _, _ = production_server
    with httpx.Client(base_url=base, timeout=REQUEST_SECONDS) as client:
        page = client.get("/admin/login/")
        assert page.status_code == 200
        assert page.headers["x-frame-options"] == "DENY"
        # The manifest storage: a hashed name, served by WhiteNoise.
        css = _asset(page.text, r"/static/admin/css/base\.[0-9a-f]{12}\.css")
        style = client.get(css, headers={"Accept-Encoding": "gzip"})
        assert style.status_code == 200
        assert style.headers["content-type"].startswith("text/css")
        assert style.headers["content-encoding"] == "gzip"
        assert "max-age=315360000" in style.headers["cache-control"]
        assert "body" in style.text


def test_gunicorn_access_log_masks_secrets(production_server):
    """Gunicorn's access line holds the query string: a token and the
    configured OpenAI key were written as sent (found by a hostile review)."""
    base, token, log = production_server
    key = production_env()["OPENAI_API_KEY"]
    with httpx.Client(base_url=base, timeout=REQUEST_SECONDS) as client:
        client.get("/api/sessions/", params={"token": token, "marker": "m1x"})
        client.get("/api/sessions/", params={"note": key, "marker": "m2x"})
    deadline = time.monotonic() + LISTEN_SECONDS
    while "m2x" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    written = log.read_text()
    assert "marker=m1x" in written and "marker=m2x" in written
    assert token not in written and key not in written
    assert "token=********" in written


def test_a_body_sent_in_chunks_is_refused_not_read_as_empty(production_server):
    """Django reads a body by its Content-Length: a chunked one was read as
    empty, so a preview rendered the defaults and a start said "prompt: This
    field is required." (found by a hostile review)."""
    base, token, _ = production_server

    def chunks():
        yield b'{"prompt": "demo/research", '
        yield b'"params": {"question": "chunky"}}'

    with httpx.Client(base_url=base, timeout=REQUEST_SECONDS) as client:
        response = client.post(
            "/api/prompts/demo/research/preview/",
            content=chunks(),
            headers={
                "Authorization": f"Token {token}",
                "Content-Type": "application/json",
            },
        )
    assert response.status_code == 411, response.text
    assert response.json()["code"] == "length_required"
    # the schema says so for every operation that takes a body (found by
    # hostile QA: no route listed it)
    with httpx.Client(base_url=base, timeout=REQUEST_SECONDS) as client:
        schema = client.get("/api/schema/?format=json").json()
    for route, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method in ("post", "put", "patch"):
                assert "411" in operation["responses"], (method, route)
            elif method in ("get", "delete"):
                assert "411" not in operation["responses"], (method, route)


def test_gunicorn_serves_swagger_ui_with_its_assets(production_server):
    base, token, _ = production_server
    with httpx.Client(
        base_url=base, timeout=REQUEST_SECONDS, follow_redirects=True
    ) as client:
        docs = client.get("/api/docs/", headers={"Authorization": f"Token {token}"})
        assert docs.status_code == 200
        sidecar = r"/static/drf_spectacular_sidecar/swagger-ui-dist/"
        for name, kind in [
            (r"swagger-ui\.[0-9a-f]{12}\.css", "text/css"),
            (r"swagger-ui-bundle\.[0-9a-f]{12}\.js", "javascript"),
        ]:
            asset = client.get(_asset(docs.text, sidecar + name))
            assert asset.status_code == 200
            assert kind in asset.headers["content-type"]


# -- DEBUG pages hide secrets ------------------------------------------------


def _fail(request):
    raise RuntimeError("the reporter test's failure")


urlpatterns = [path("fail/", _fail)]

# Each secret is made up at import time: the page also shows this file's
# source around the failing line, which must not contain them.
_WORD = {
    name: f"{name.title()}{secrets.token_hex(6)}"
    for name in (
        "db",
        "broker",
        "result",
        "dsn",
        "mcp",
        "mcp_prefix",
        "mcp_listed",
        "upstream",
        "authz",
        "cookie",
        "cache",
    )
}
SECRETS = {
    "DATABASE_URL": f"postgres://user:{_WORD['db']}@host/db",
    "CELERY_BROKER_URL": f"redis://:{_WORD['broker']}@host:6379/0",
    "CELERY_RESULT_BACKEND": f"redis://:{_WORD['result']}@host:6379/1",
    "WINK_CACHE_URL": f"redis://:{_WORD['cache']}@host:6379/2",
    "SENTRY_DSN": f"https://{_WORD['dsn']}@sentry.example.com/1",
    "WINK_MCP_GITHUB": _WORD["mcp"],
    "ACME_MCP_GITHUB": _WORD["mcp_prefix"],
    "LINEAR_HEADER": _WORD["mcp_listed"],
    "UPSTREAM": f"https://svc:{_WORD['upstream']}@svc.example.com/",
}


@pytest.mark.django_db
@pytest.mark.urls(__name__)
def test_debug_pages_show_no_secret(settings, monkeypatch):
    settings.DEBUG = True
    # MCP header variables: a prefix of the operator's, and one listed by name.
    settings.WINK_MCP_HEADER_ENV_PREFIX = "ACME_MCP_"
    settings.WINK_MCP_HEADER_ENV_ALLOW = ["LINEAR_HEADER"]
    settings.CELERY_BROKER_URL = SECRETS["CELERY_BROKER_URL"]
    settings.CELERY_RESULT_BACKEND = SECRETS["CELERY_RESULT_BACKEND"]
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    client = Client(raise_request_exception=False)
    client.cookies["sessionid"] = _WORD["cookie"]
    # runserver puts the environment into request.META, as here.
    meta: dict[str, Any] = {
        "HTTP_AUTHORIZATION": f"Token {_WORD['authz']}",
        **SECRETS,
    }
    response = client.get("/fail/", **meta)
    assert response.status_code == 500
    html = response.content.decode()
    assert "the reporter test&#x27;s failure" in html  # the technical 500 page
    for name in [*SECRETS, "HTTP_AUTHORIZATION"]:
        assert name in html
    for word in _WORD.values():
        assert word not in html
