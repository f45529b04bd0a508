"""Approvers are told that a run waits for them: an email to each approver with
an address, and a signed webhook; a notification never fails the pause."""

from __future__ import annotations

import email
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from django.core import mail

from sessions_app import tasks
from sessions_app.approvals import notifications
from sessions_app.models import AgentSession, ApprovalRequest
from tests.limits import LATE_SECONDS
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ApprovalRequestFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SECRET = "whsec-test-0f3c9a"


@pytest.fixture(autouse=True)
def _inline_and_quiet(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.WINK_BASE_URL = "https://catalog.example.com"
    settings.WINK_APPROVAL_WEBHOOK_URL = ""
    settings.WINK_APPROVAL_WEBHOOK_SECRET = ""


def approver(username: str, **fields: Any) -> Any:
    user = UserFactory.create(username=username, **fields)
    user.groups.add(Group.objects.get(name="Approvers"))
    return user


# -- who is emailed ------------------------------------------------------------


def test_notify_emails_every_active_approver_with_an_address():
    approver("alice")
    approver("nomail", email="")
    approver("gone", is_active=False)
    UserFactory.create(username="root", is_superuser=True)
    UserFactory.create(username="bystander")
    direct = UserFactory.create(username="direct")
    direct.user_permissions.add(Permission.objects.get(codename="decide_any_approval"))
    approval = ApprovalRequestFactory.create()

    notifications.approval_requested(approval)

    # one message each: no approver learns another's address
    assert sorted(message.to for message in mail.outbox) == [
        ["alice@example.com"],
        ["direct@example.com"],
        ["root@example.com"],
    ]
    assert all(not (m.cc or m.bcc or m.reply_to) for m in mail.outbox)
    assert len({(m.subject, m.body) for m in mail.outbox}) == 1


def test_notify_emails_at_most_max_recipients_and_logs_the_rest(monkeypatch, caplog):
    monkeypatch.setattr(notifications, "MAX_RECIPIENTS", 3)
    for number in range(5):
        approver(f"approver{number}")
    with caplog.at_level(
        logging.WARNING, logger="sessions_app.approvals.notifications"
    ):
        notifications.approval_requested(ApprovalRequestFactory.create())

    assert [m.to for m in mail.outbox] == [
        [f"approver{number}@example.com"] for number in range(3)
    ]
    assert "has 5 approvers with an address; emailing the first 3" in caplog.text


def test_notify_emails_the_group_the_policy_names_and_not_other_groups():
    release = Group.objects.create(name="release-managers")
    member = UserFactory.create(username="rm")
    member.groups.add(release)
    UserFactory.create(username="outsider").groups.add(
        Group.objects.create(name="other")
    )
    approval = ApprovalRequestFactory.create(approvers={"group": "release-managers"})

    notifications.approval_requested(approval)

    assert mail.outbox[0].to == ["rm@example.com"]


def test_notify_emails_holders_of_the_permission_the_policy_names():
    holder = UserFactory.create(username="holder")
    holder.user_permissions.add(Permission.objects.get(codename="cancel_any_session"))
    approval = ApprovalRequestFactory.create(
        approvers={"permission": "sessions_app.cancel_any_session"}
    )

    notifications.approval_requested(approval)

    assert mail.outbox[0].to == ["holder@example.com"]


def test_notify_survives_a_malformed_approvers_spec():
    approver("alice")
    approval = ApprovalRequestFactory.create(
        approvers={"permission": ["not", "text"], "group": {"x": 1}}
    )

    notifications.approval_requested(approval)

    assert [m.to for m in mail.outbox] == [["alice@example.com"]]


def test_notify_under_four_eyes_does_not_email_the_runs_author():
    author = approver("author")
    approver("alice")
    approval = ApprovalRequestFactory.create(session__created_by=author, four_eyes=True)

    notifications.approval_requested(approval)

    assert [m.to for m in mail.outbox] == [["alice@example.com"]]
    mail.outbox.clear()
    approval = ApprovalRequestFactory.create(session__created_by=author)
    notifications.approval_requested(approval)  # no four eyes: the author may
    assert sorted(m.to for m in mail.outbox) == [
        ["alice@example.com"],
        ["author@example.com"],
    ]


def test_notify_sends_no_email_when_no_approver_has_an_address():
    approver("nomail", email="")
    notifications.approval_requested(ApprovalRequestFactory.create())
    assert mail.outbox == []


# -- what the email says ---------------------------------------------------------


def test_notify_email_names_prompt_tool_reason_deadline_and_links_the_inbox():
    approver("alice")
    approval = ApprovalRequestFactory.create()

    notifications.approval_requested(approval)

    message = mail.outbox[0]
    assert message.subject == "Approval needed: deploy in demo/ship"
    assert "deploy to production needs a human yes." in message.body
    assert 'Policy: "production-deploy"' in message.body
    assert '"environment": "production"' in message.body
    assert f"{approval.expires_at:%Y-%m-%d %H:%M} UTC" in message.body
    link = f"https://catalog.example.com/audit/approvals/{approval.pk}/"
    assert link in message.body


def test_inbox_link_is_the_same_under_a_script_prefix(settings):
    from django.urls import set_script_prefix

    settings.WINK_BASE_URL = "https://example.com/wink"
    approval = ApprovalRequestFactory.create()
    expected = f"https://example.com/wink/audit/approvals/{approval.pk}/"
    assert notifications.inbox_url(approval) == expected
    set_script_prefix("/wink/")  # as in a request served under /wink/
    try:
        assert notifications.inbox_url(approval) == expected
    finally:
        set_script_prefix("/")


def test_notify_email_quotes_at_most_an_excerpt_of_huge_arguments():
    approver("alice")
    approval = ApprovalRequestFactory.create(params={"blob": "x" * 100_000})

    notifications.approval_requested(approval)

    body = mail.outbox[0].body
    assert len(body) < notifications.ARGUMENTS_EXCERPT + 1000
    assert "shortened; the inbox shows all" in body


def test_notify_never_raises_when_the_mail_server_fails(monkeypatch, caplog):
    approver("alice")

    class Broken:
        def send_messages(self, messages: Any) -> int:
            raise ConnectionRefusedError("smtp down")

    monkeypatch.setattr(notifications, "get_connection", Broken)
    with caplog.at_level(
        logging.WARNING, logger="sessions_app.approvals.notifications"
    ):
        notifications.approval_requested(ApprovalRequestFactory.create())

    assert "ConnectionRefusedError" in caplog.text


def test_notify_gives_up_on_a_mail_server_slower_than_the_budget(monkeypatch, caplog):
    approver("alice")
    monkeypatch.setattr(notifications, "EMAIL_BUDGET_SECONDS", 0.3)

    class Tarpit:
        def send_messages(self, messages: Any) -> int:
            time.sleep(600)  # each step within EMAIL_TIMEOUT, the sum far beyond
            return len(messages)

    monkeypatch.setattr(notifications, "get_connection", Tarpit)
    started = time.monotonic()
    with caplog.at_level(
        logging.WARNING, logger="sessions_app.approvals.notifications"
    ):
        notifications.approval_requested(ApprovalRequestFactory.create())

    assert time.monotonic() - started < 0.3 + LATE_SECONDS  # not the 600 s
    assert "NotificationTimeout" in caplog.text


# -- the webhook ---------------------------------------------------------------------


class Receiver:
    """A real HTTP server in a thread that records what it is sent."""

    def __init__(self, *, status: int = 204, delay: float = 0.0) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        # a slow answer ends early once the test is done with the receiver
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers.items()), body))
                receiver.release.wait(delay)
                self.send_response(status)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/wink?token=q"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def _documented_verify() -> Any:
    """The receiver's check exactly as docs/approvals.md shows it."""
    text = (ROOT / "docs" / "approvals.md").read_text()
    section = text[text.index("### Verifying the webhook") :]
    code = section[section.index("```python") + len("```python") :]
    namespace: dict[str, Any] = {}
    exec(code[: code.index("```")], namespace)
    return namespace["verify"]


documented_verify = _documented_verify()


def verify(headers: dict[str, str], body: bytes, secret: str) -> bool:
    """What a receiver does (docs/approvals.md): recompute and compare."""
    return bool(
        documented_verify(
            body,
            headers.get("X-Wink-Timestamp", ""),
            headers.get("X-Wink-Signature", ""),
            secret,
        )
    )


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    with Receiver() as running:
        settings.WINK_APPROVAL_WEBHOOK_URL = running.url
        settings.WINK_APPROVAL_WEBHOOK_SECRET = SECRET
        yield running


def test_webhook_posts_a_signed_payload_the_receiver_can_verify(receiver):
    approval = ApprovalRequestFactory.create()

    notifications.approval_requested(approval)

    assert len(receiver.requests) == 1
    headers, body = receiver.requests[0]
    assert verify(headers, body, SECRET)
    assert not verify(headers, body, "another-secret")
    assert not verify(headers, body.replace(b"deploy", b"delete"), SECRET)
    assert abs(int(headers["X-Wink-Timestamp"]) - time.time()) < 60
    assert json.loads(body) == {
        "event": "approval.requested",
        "approval_id": str(approval.pk),
        "session_id": str(approval.session_id),
        "prompt": "demo/ship",
        "tool": "deploy",
        "reason": "deploy to production needs a human yes.",
        "expires_at": approval.expires_at.isoformat(),
        "url": f"https://catalog.example.com/audit/approvals/{approval.pk}/",
    }


@pytest.mark.parametrize(
    ("timestamp", "signature"),
    [
        ("", None),  # missing
        ("12x", None),
        ("²", None),  # a digit to str.isdigit, not to int()
        ("9" * 5000, None),  # int() refuses it
        ("-1", None),
        (None, "sha256=é"),  # non-ASCII: compare_digest on str would raise
        (None, ""),
    ],
)
def test_documented_verify_refuses_forged_headers_without_raising(
    receiver, timestamp, signature
):
    notifications.approval_requested(ApprovalRequestFactory.create())
    headers, body = receiver.requests[0]
    if timestamp is not None:
        headers["X-Wink-Timestamp"] = timestamp
    if signature is not None:
        headers["X-Wink-Signature"] = signature
    assert verify(headers, body, SECRET) is False


def test_documented_verify_refuses_a_replay_after_five_minutes():
    body = b'{"event":"approval.requested"}'
    old = str(int(time.time()) - 301)
    fresh = str(int(time.time()) - 5)
    for stamp, accepted in ((old, False), (fresh, True)):
        headers = {
            "X-Wink-Timestamp": stamp,
            "X-Wink-Signature": notifications.signature(SECRET, stamp, body),
        }
        assert verify(headers, body, SECRET) is accepted


def test_webhook_failure_is_logged_without_the_secret_or_the_query(settings, caplog):
    with Receiver(status=500) as failing:
        settings.WINK_APPROVAL_WEBHOOK_URL = failing.url
        settings.WINK_APPROVAL_WEBHOOK_SECRET = SECRET
        with caplog.at_level(
            logging.WARNING, logger="sessions_app.approvals.notifications"
        ):
            notifications.approval_requested(ApprovalRequestFactory.create())

    assert "answered 500" in caplog.text
    assert SECRET not in caplog.text
    assert "token=q" not in caplog.text


def test_webhook_gives_up_after_its_timeout(settings, monkeypatch, caplog):
    monkeypatch.setattr(notifications, "WEBHOOK_TIMEOUT_SECONDS", 0.3)
    with Receiver(delay=600) as slow:
        settings.WINK_APPROVAL_WEBHOOK_URL = slow.url
        settings.WINK_APPROVAL_WEBHOOK_SECRET = SECRET
        started = time.monotonic()
        with caplog.at_level(
            logging.WARNING, logger="sessions_app.approvals.notifications"
        ):
            notifications.approval_requested(ApprovalRequestFactory.create())
        elapsed = time.monotonic() - started

    assert elapsed < 0.3 + LATE_SECONDS  # not the receiver's 600 s
    # httpx's read timeout or the budget in all, whichever ends first
    assert "Timeout" in caplog.text


def test_webhook_does_not_follow_a_redirect(settings, caplog):
    with Receiver() as elsewhere:

        class Redirect(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(307)  # 307 would repeat the POST, body and all
                self.send_header("Location", elsewhere.url)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = HTTPServer(("127.0.0.1", 0), Redirect)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            settings.WINK_APPROVAL_WEBHOOK_URL = (
                f"http://127.0.0.1:{server.server_port}/hook"
            )
            settings.WINK_APPROVAL_WEBHOOK_SECRET = SECRET
            with caplog.at_level(
                logging.WARNING, logger="sessions_app.approvals.notifications"
            ):
                notifications.approval_requested(ApprovalRequestFactory.create())
        finally:
            server.shutdown()
            server.server_close()

    assert elsewhere.requests == []
    assert "answered 307" in caplog.text


def test_webhook_gives_up_on_a_receiver_that_answers_a_byte_at_a_time(
    settings, monkeypatch, caplog
):
    """httpx bounds each read, not the whole answer: the budget is in all."""
    monkeypatch.setattr(notifications, "WEBHOOK_TIMEOUT_SECONDS", 0.5)
    stop = threading.Event()

    class Trickle(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            while not stop.is_set():  # one header byte every 0.1 s, for ever
                self.wfile.write(b"X")
                self.wfile.flush()
                time.sleep(0.1)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        settings.WINK_APPROVAL_WEBHOOK_URL = f"http://127.0.0.1:{server.server_port}/"
        settings.WINK_APPROVAL_WEBHOOK_SECRET = SECRET
        started = time.monotonic()
        with caplog.at_level(
            logging.WARNING, logger="sessions_app.approvals.notifications"
        ):
            notifications.approval_requested(ApprovalRequestFactory.create())
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        server.shutdown()
        server.server_close()

    assert elapsed < 0.5 + LATE_SECONDS  # the trickle never ends
    assert "NotificationTimeout" in caplog.text


def test_email_subject_stays_one_line_whatever_the_tool_name():
    """An MCP tool's name comes from the remote server: hostile."""
    approver("alice")
    approval = ApprovalRequestFactory.create(
        kind=ApprovalRequest.Kind.MCP,
        tool_name="read\r\nBcc: mallory@example.net\r\n",
    )

    notifications.approval_requested(approval)

    [message] = mail.outbox
    assert "\n" not in message.subject and "\r" not in message.subject
    headers = email.message_from_string(message.message().as_string())
    assert headers["Bcc"] is None and headers["Cc"] is None
    assert headers["To"] == "alice@example.com"
    assert message.recipients() == ["alice@example.com"]


# -- untrusted text in the email (issue #24, item 13) ---------------------------------

HOSTILE = (
    "read\r\n\r\nApprove or deny: https://evil.example/steal\n"
    "Approve: https://evil.example/2\u2028Approve: https://evil.example/3"
    '\u2029\x85\u202eknil\u202c\u2066x\u2069\x1b[31m\x7f"quoted"\\'
)
# what may never reach a mail client as it is: line breaks, C0/C1 controls,
# line and paragraph separators, bidi controls
RAW = ["\r", "\x85", "\u2028", "\u2029", "\u202e", "\u202c", "\u2066", "\u2069"]
RAW += ["\x1b", "\x7f"]


def hostile_approval() -> ApprovalRequest:
    session = AgentSessionFactory.create(
        prompt_ref=f"demo/{HOSTILE}"[:200],
        status=AgentSession.Status.AWAITING_APPROVAL,
        created_by=UserFactory.create(username=f"bob{HOSTILE}"[:150]),
    )
    return ApprovalRequestFactory.create(
        session=session,
        kind=ApprovalRequest.Kind.MCP,
        tool_name=HOSTILE[:64],
        server_label=f"crm{HOSTILE}"[:64],
        policy_name=f"p{HOSTILE}"[:64],
        reason=f"MCP server asks to call {HOSTILE}",
        params={"note": HOSTILE, HOSTILE: [HOSTILE]},
        four_eyes=True,
    )


def test_email_leads_with_the_link_and_quotes_untrusted_values_on_one_line():
    approver("alice")
    approval = hostile_approval()

    notifications.approval_requested(approval)

    [message] = mail.outbox
    body = message.body
    link = f"https://catalog.example.com/audit/approvals/{approval.pk}/"
    lines = body.split("\n")
    assert lines[0] == f"Approve or deny: {link}"
    # nothing else a mail client could show as a line break or reorder
    for raw in RAW:
        assert raw not in body, repr(raw)
    assert body.splitlines() == lines  # no U+2028 and friends: one line each
    # the one real link: every other "Approve" is inside a quoted value
    assert [line for line in lines if line.startswith("Approve")] == [lines[0]]
    labelled = [line for line in lines[1:] if "evil.example" in line]
    by_label = dict(line.split(": ", 1) for line in labelled)
    assert sorted(by_label) == [
        "Arguments",
        "MCP server",
        "Policy",
        "Prompt",
        "Started by",
        "Tool",
        "Why",
    ]
    author = approval.session.created_by
    assert author is not None
    expected = {
        "Prompt": approval.session.prompt_ref,
        "Tool": approval.tool_name,
        "MCP server": approval.server_label,
        "Policy": approval.policy_name,
        "Started by": author.username,
        "Why": approval.reason,
    }
    for label, text in expected.items():
        value = by_label[label]
        assert value.startswith('"') and value.endswith('"'), (label, value)
        assert json.loads(value) == text  # a JSON string: the value, exactly
    assert by_label["Tool"] == (
        '"read\\r\\n\\r\\nApprove or deny: https://evil.example/steal\\nApprove: htt"'
    )
    # the arguments: one line of JSON, every text in it quoted and escaped
    assert json.loads(by_label["Arguments"]) == approval.params
    assert "Four eyes: the person who started the run may not decide it." in lines
    # the subject: one line, the same escapes
    assert "\n" not in message.subject and "\r" not in message.subject
    assert message.subject.startswith("Approval needed: read\\u000d\\u000a")


def test_email_shortens_long_values_with_a_marker():
    approver("alice")
    approval = ApprovalRequestFactory.create(reason="why " * 500)

    notifications.approval_requested(approval)

    [why] = [line for line in mail.outbox[0].body.split("\n") if line.startswith("Why")]
    assert why.endswith('" … (shortened; the inbox shows all)')
    assert len(why) < notifications.TEXT_EXCERPT + 100


def test_email_quotes_raw_arguments_that_are_not_json():
    approver("alice")
    approval = ApprovalRequestFactory.create(
        params=None, raw_arguments='{"broken\nApprove: https://evil.example'
    )

    notifications.approval_requested(approval)

    body = mail.outbox[0].body
    assert 'Arguments: "{\\"broken\\nApprove: https://evil.example"' in body.split("\n")


def test_webhook_body_is_json_whatever_the_values(receiver):
    approval = hostile_approval()

    notifications.approval_requested(approval)

    [(headers, body)] = receiver.requests
    assert verify(headers, body, SECRET)
    # escaped by construction: ASCII only, one line
    assert body.isascii() and b"\n" not in body and b"\r" not in body
    payload = json.loads(body)
    assert payload["tool"] == approval.tool_name
    assert payload["prompt"] == approval.session.prompt_ref
    assert payload["reason"] == approval.reason


def test_webhook_to_a_closed_port_is_logged_not_raised(settings, caplog):
    settings.WINK_APPROVAL_WEBHOOK_URL = "http://127.0.0.1:9/nothing"
    settings.WINK_APPROVAL_WEBHOOK_SECRET = SECRET
    with caplog.at_level(
        logging.WARNING, logger="sessions_app.approvals.notifications"
    ):
        notifications.approval_requested(ApprovalRequestFactory.create())
    assert "ConnectError" in caplog.text


# -- with a broker: a task, after the commit -------------------------------------------


def test_with_a_broker_the_notification_is_queued_after_the_commit(
    settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    approver("alice")
    sent: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(
        notifications.current_app,
        "send_task",
        lambda name, args: sent.append((name, args)),
    )
    approval = ApprovalRequestFactory.create()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        notifications.approval_requested(approval)
    assert sent == [] and mail.outbox == []  # nothing before the commit
    for callback in callbacks:
        callback()

    assert sent == [(notifications.NOTIFY_TASK, [str(approval.pk)])]
    assert mail.outbox == []  # the worker sends it


def test_notify_task_sends_the_notifications_of_an_approval():
    approver("alice")
    approval = ApprovalRequestFactory.create()

    assert tasks.notify_approval_requested(str(approval.pk)) == "sent"
    assert mail.outbox[0].to == ["alice@example.com"]


def test_notify_task_for_an_approval_decided_meanwhile_does_nothing():
    approver("alice")
    approval = ApprovalRequestFactory.create(status=ApprovalRequest.Status.APPROVED)

    assert tasks.notify_approval_requested(str(approval.pk)) == "closed"
    assert mail.outbox == []


def test_notify_task_for_a_missing_approval_does_nothing():
    missing = "00000000-0000-4000-8000-000000000000"
    assert not ApprovalRequest.objects.filter(pk=missing).exists()
    assert tasks.notify_approval_requested(missing) == "missing"
    assert mail.outbox == []


# -- settings ------------------------------------------------------------------------


def _check(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("WINK_") and k not in {"DATABASE_URL"}
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**clean, "DEBUG": "1", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"WINK_APPROVAL_WEBHOOK_URL": "ftp://hooks.example.com/x"}, "http://"),
        ({"WINK_APPROVAL_WEBHOOK_URL": "https://hooks.example.com/x"}, "SECRET"),
        ({"WINK_BASE_URL": "catalog.example.com"}, "WINK_BASE_URL must be"),
    ],
)
def test_settings_refuse_a_bad_webhook_or_base_url(env, message):
    result = _check(**env)
    assert result.returncode != 0
    assert message in result.stderr


def test_settings_never_echo_a_bad_webhook_url_which_may_hold_a_token():
    result = _check(WINK_APPROVAL_WEBHOOK_URL="ftp://hooks.example.com/x?token=s3cr3t")
    assert result.returncode != 0
    assert "WINK_APPROVAL_WEBHOOK_URL must be" in result.stderr
    assert "s3cr3t" not in result.stderr
