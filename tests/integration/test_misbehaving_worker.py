"""A provider that misbehaves, on the shipped worker over a real broker.

The cases of ``tests/sessions_app/misbehaving_cases.py`` (NUL bytes, lone
surrogates and bidi controls in output text and function-call arguments,
malformed function calls, a repeated call id, bodies that are not JSON,
failed and incomplete responses, a 500 then a success, 500s until the
retries run out, a connection cut without an answer, absurd usage, a
three-megabyte answer), queued at once to one
default worker (ADR 0022: the threads pool, ``WINK_PROCESS=worker`` with its
database pool on PostgreSQL, its own sweeper thread, the default leases): the
worker's ``openai`` client (``WINK_PROVIDER=openai``, two retries) talks real
HTTP to ``ScriptedServer``, a threaded ``http.server`` in this process that
answers each request with the next scripted reply of the case its
instructions name.

Each run must end as the same replies end it inline (the case's checks of the
session, its audit rows, the requests it sent and its pages, which the test
client reads back), claimed once; every scripted reply consumed, no request
unscripted. Then the worker, still the same process, takes the next run.

Needs PostgreSQL and a broker in ``CELERY_TEST_BROKER_URL``, like the other
worker suites; ``.ci/run`` runs it with Redis and with RabbitMQ.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from sessions_app import services
from sessions_app.models import AgentSession
from tests.integration.workers import (
    BROKER,
    WorkerProcess,
    broker_configured,
    needs_broker,
    require_postgresql,
    worker_env,
)
from tests.runtime.fakes import message, response
from tests.sessions_app.misbehaving import (
    RELEASE,
    Reply,
    assert_no_leak,
    assert_succeeded,
    read_pages,
    scripted_response,
)
from tests.sessions_app.misbehaving_cases import CASE_NAME, CASES, Case
from tooling.demo import seed_demo_catalog

pytestmark = [pytest.mark.django_db(transaction=True), needs_broker]

Status = AgentSession.Status
FINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)
# Far above the normal time (a few seconds on a quiet machine).
FINISH_SECONDS = 300
# The run queued once every case has ended: the worker must still take it.
NEXT = Case("next_run", (response(message("Still here.")),), lambda *_: None)


Answer = tuple[int, list[tuple[str, str]], bytes]


class ScriptedServer:
    """``POST /v1/responses`` over real HTTP (keep-alive, a thread per
    connection): each request gets the next scripted reply of the case its
    instructions name (``CASE_NAME``); ``requests`` keeps each case's request
    bodies, ``unexpected`` what could not be answered from a script."""

    def __init__(self, cases: Sequence[Case]) -> None:
        self.scripts: dict[str, list[Reply]] = {c.name: list(c.replies) for c in cases}
        self.requests: dict[str, list[dict[str, Any]]] = {c.name: [] for c in cases}
        self.unexpected: list[str] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.scripted = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self.httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-provider",
            daemon=True,
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def reply(self, path: str, body: bytes) -> Answer | None:
        """The status, headers and body that answer ``body`` sent to ``path``;
        ``None``: hang up without an answer (a scripted exception)."""
        names = CASE_NAME.findall(body.decode("utf-8", "replace"))
        with self.lock:
            if (
                path != "/v1/responses"
                or len(names) != 1
                or names[0] not in self.scripts
            ):
                self.unexpected.append(f"{path}: {names}")
                return 404, [], b'{"error": {"message": "not scripted"}}'
            name = names[0]
            script = self.scripts[name]
            if not script:
                self.unexpected.append(f"{name}: more requests than scripted")
                return 404, [], b'{"error": {"message": "script exhausted"}}'
            self.requests[name].append(json.loads(body))
            reply = script.pop(0)
            if isinstance(reply, Exception):  # a cut connection: no answer
                return None
            answer = scripted_response(reply, len(self.requests[name]))
        headers = [
            (key, value)
            for key, value in answer.headers.items()
            if key.lower() not in ("content-length", "transfer-encoding", "connection")
        ]
        return answer.status_code, headers, answer.content

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self._thread.join()
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real provider

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        scripted: ScriptedServer = self.server.scripted  # type: ignore[attr-defined]
        answer = scripted.reply(self.path, body)
        if answer is None:
            self.close_connection = True
            return
        status, headers, content = answer
        self.send_response_only(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the test reports what it needs


@contextlib.contextmanager
def misbehaving_worker(settings: Any, cases: Sequence[Case]) -> Iterator[Any]:
    require_postgresql()
    server = ScriptedServer(cases).start()
    try:
        with broker_configured(settings):
            worker = WorkerProcess(
                worker_env(
                    WINK_PROVIDER="openai",
                    OPENAI_API_KEY="sk-misbehaving",
                    OPENAI_BASE_URL=server.base_url,
                    # the settings' default, which the cases expect
                    WINK_OPENAI_MAX_RETRIES="2",
                ),
                loglevel="INFO",
                name="misbehaving",
                beat=True,  # its sweeper thread, as the shipped worker
            )
            try:
                worker.wait_ready()
                yield server, worker
            finally:
                worker.cleanup()
    finally:
        server.stop()


def _wait_all_final(ids: Sequence[Any], worker: WorkerProcess) -> float:
    began = time.monotonic()
    while time.monotonic() < began + FINISH_SECONDS:
        ended = AgentSession.objects.filter(pk__in=ids, status__in=FINAL).count()
        if ended == len(ids):
            return time.monotonic() - began
        if not worker.alive():
            pytest.fail(f"the worker exited:\n{worker.output()}")
        time.sleep(0.1)
    left = AgentSession.objects.filter(pk__in=ids).exclude(status__in=FINAL)
    pytest.fail(
        f"{left.count()} run(s) did not end within {FINISH_SECONDS}s: "
        f"{list(left.values_list('params', 'status', 'attempts'))}\n{worker.output()}"
    )


def test_misbehaving_provider_runs_end_on_the_worker_as_they_do_inline(
    settings, api_client, admin_client
):
    with misbehaving_worker(settings, [*CASES, NEXT]) as (server, worker):
        seed_demo_catalog()
        ids = {
            case.name: services.start_session(prompt_ref=RELEASE, params=case.params).pk
            for case in CASES
        }
        took = _wait_all_final(list(ids.values()), worker)

        # The worker is still up (the same process) and takes the next run.
        assert worker.alive(), worker.output()
        following = services.start_session(prompt_ref=RELEASE, params=NEXT.params)
        _wait_all_final([following.pk], worker)
        following.refresh_from_db()
        assert_succeeded(following)
        assert following.output_text == "Still here."
        assert worker.alive(), worker.output()
        output = worker.output()

    assert server.unexpected == [], f"{server.unexpected}\n{output}"
    assert following.worker.endswith(f":{worker.pid}"), following.worker
    failures = []
    for case in CASES:
        try:
            session = AgentSession.objects.get(pk=ids[case.name])
            assert session.is_finished, session.status
            assert session.attempts == 1, session.attempts  # claimed once
            assert session.worker.endswith(f":{worker.pid}"), session.worker
            assert server.scripts[case.name] == [], "a scripted reply was not asked"
            assert_no_leak(session)
            pages = read_pages(session, api_client, admin_client)
            case.check(session, server.requests[case.name], pages)
        except AssertionError:
            failures.append(f"--- {case.name}:\n{traceback.format_exc()}")
    assert not failures, "\n".join(failures) + f"\n--- the worker:\n{output}"
    assert "Traceback" not in output, output
    print(
        f"\n[{BROKER}] {len(CASES)} misbehaving runs on one threads worker ended "
        f"as inline in {took:.1f}s; the worker then took the next run"
    )
