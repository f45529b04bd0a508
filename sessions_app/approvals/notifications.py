"""Tell approvers that a run waits for them: an email, and an optional signed
webhook (docs/approvals.md, "Notifications").

``approval_requested`` is called by the sink once the pause has committed.
Notifying must never fail the pause nor hold it up: every error is logged
(never raised), the webhook and the emails each get a time budget in all
(``_within``), and on a Celery setup both are sent from a task
(``tasks.notify_approval_requested``), so the worker that paused the run is
free at once. Each approver gets a message of their own (no approver learns
another's address). Secrets (the webhook's signing key, its URL's query) are
never logged.

What a run puts in a notification is untrusted (an MCP tool's name and
arguments come from a remote server): the email leads with the link, and
quotes every such value on one line of its own, its line breaks, control and
bidi characters escaped (``quoted``), so none can add a line or a fake link.
The webhook's body is JSON, escaped by construction.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
import unicodedata
from collections.abc import Callable
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

import httpx
from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMessage, get_connection
from django.db import transaction
from django.db.models import Q, QuerySet
from django.urls import get_script_prefix, reverse

from sessions_app import access
from sessions_app.approvals import links
from sessions_app.models import ApprovalRequest
from sessions_app.runs import dispatch

logger = logging.getLogger(__name__)
T = TypeVar("T")

NOTIFY_TASK = "sessions_app.notify_approval_requested"
EVENT = "approval.requested"
WEBHOOK_TIMEOUT_SECONDS = 5.0
# The most the emails of one approval may take in all (EMAIL_TIMEOUT bounds
# each step with the mail server, not their sum).
EMAIL_BUDGET_SECONDS = 30.0
# How much of a call's arguments a notification quotes, and of other texts.
ARGUMENTS_EXCERPT = 1000
TEXT_EXCERPT = 300
SHORTENED = " … (shortened; the inbox shows all)"
# Characters escaped in a notification: controls (C0, DEL, C1: line breaks
# among them), format characters (the bidi controls among them), line and
# paragraph separators, surrogates and private use.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co"})
# At most this many approvers are emailed (one message each, over one
# connection); more are logged, not mailed: the inbox lists the approval.
MAX_RECIPIENTS = 100


def approval_requested(approval: ApprovalRequest) -> None:
    """Notify ``approval``'s approvers; never raises.

    Inline (no broker) the email and the webhook are sent now; with a broker a
    task sends them once the current transaction (if any) commits."""
    try:
        if dispatch.runs_inline():
            send_notifications(approval)
            return
        approval_id = str(approval.pk)
        transaction.on_commit(lambda: _queue(approval_id))
    except Exception:
        logger.exception("Could not notify the approvers of approval %s", approval.pk)


def _queue(approval_id: str) -> None:
    try:
        current_app.send_task(NOTIFY_TASK, args=[approval_id])
    except Exception:
        logger.exception("Could not queue the notification of approval %s", approval_id)


def send_notifications(approval: ApprovalRequest) -> None:
    """Send the email and the webhook for ``approval`` (each failure logged)."""
    send_email(approval)
    if settings.WINK_APPROVAL_WEBHOOK_URL:
        send_webhook(approval)


def inbox_url(approval: ApprovalRequest) -> str:
    """The approval's inbox entry, absolute: ``links.base_url()``
    (``WINK_BASE_URL``, which holds any path the product is served under; in
    development without it, the request's address) and the route, the same
    whether a request (with its script prefix) or a worker (without one)
    builds it."""
    path = reverse("sessions_app:approval-detail", args=[approval.pk])
    prefix = get_script_prefix()
    if path.startswith(prefix):
        path = "/" + path[len(prefix) :]
    return f"{links.base_url()}{path}"


def approvers(approval: ApprovalRequest) -> QuerySet[Any]:
    """The active users who may decide ``approval`` (``access.may_decide``):
    superusers, holders of ``decide_any_approval``, and the holders of the
    permission or the members of the group its policy names; under four eyes,
    not the run's author."""
    spec = approval.approvers if isinstance(approval.approvers, dict) else {}
    who = Q(is_superuser=True)
    # a tuple, not a set: a hostile non-text value must not raise here
    for permission in (access.DECIDE_ANY, spec.get("permission")):
        if not isinstance(permission, str) or "." not in permission:
            continue
        app_label, _, codename = permission.partition(".")
        who |= Q(
            user_permissions__content_type__app_label=app_label,
            user_permissions__codename=codename,
        ) | Q(
            groups__permissions__content_type__app_label=app_label,
            groups__permissions__codename=codename,
        )
    group = spec.get("group")
    if isinstance(group, str) and group:
        who |= Q(groups__name=group)
    users = get_user_model().objects.filter(who, is_active=True)
    if approval.four_eyes and approval.session.created_by_id is not None:
        users = users.exclude(pk=approval.session.created_by_id)
    return get_user_model().objects.filter(pk__in=users.values("pk"))


def escaped(text: str) -> str:
    """``text`` with each character that could break a line or reorder what
    is shown (``_ESCAPED_CATEGORIES``) written as ``\\uXXXX``."""
    return "".join(
        (f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")
        if unicodedata.category(char) in _ESCAPED_CATEGORIES
        else char
        for char in text
    )


def quoted(value: Any, limit: int = TEXT_EXCERPT) -> str:
    """An untrusted text as one line: in double quotes, escaped as a JSON
    string (``"``, ``\\``, line breaks) and beyond (``escaped``), its first
    ``limit`` characters and a marker if it is longer."""
    text = value if isinstance(value, str) else str(value)
    shortened = len(text) > limit
    line = escaped(json.dumps(text[:limit], ensure_ascii=False))
    return line + SHORTENED if shortened else line


def _arguments(approval: ApprovalRequest) -> str:
    """The call's arguments on one line: JSON (every text in it quoted and
    escaped) when they parsed, else the raw text, quoted."""
    if approval.params is None:
        return quoted(approval.raw_arguments, ARGUMENTS_EXCERPT)
    text = json.dumps(approval.params, ensure_ascii=False)
    if len(text) > ARGUMENTS_EXCERPT:
        return escaped(text[:ARGUMENTS_EXCERPT]) + SHORTENED
    return escaped(text)


def message(approval: ApprovalRequest) -> tuple[str, str]:
    """The email's subject and body: the link first, then each untrusted
    value quoted on its own line."""
    session = approval.session
    author = session.created_by
    lines = [
        f"Approve or deny: {inbox_url(approval)}",
        "",
        "A run waits for a human decision before it calls a tool. The quoted "
        "values come from the run (its prompt, the model, the tool's server).",
        "",
        f"Prompt: {quoted(session.prompt_ref)}",
        f"Tool: {quoted(approval.tool_name)}",
    ]
    if approval.server_label:
        lines.append(f"MCP server: {quoted(approval.server_label)}")
    if approval.policy_name:
        lines.append(f"Policy: {quoted(approval.policy_name)}")
    lines += [
        "Started by: "
        + (quoted(author.get_username()) if author else "nobody (no user started it)"),
        f"Why: {quoted(approval.reason)}",
        f"Arguments: {_arguments(approval)}",
        "",
        f"Decide before {approval.expires_at:%Y-%m-%d %H:%M} UTC; after that it "
        "is denied automatically.",
    ]
    if approval.four_eyes:
        lines.append("Four eyes: the person who started the run may not decide it.")
    subject = escaped(f"Approval needed: {approval.tool_name} in {session.prompt_ref}")
    # A subject is one line (belt and braces for the mail headers).
    return " ".join(subject.split())[:200], "\n".join(lines)


def send_email(approval: ApprovalRequest) -> int:
    """Email the approvers who have an address, one message each (no
    approver sees another's address); the number of messages sent."""
    try:
        recipients = sorted(
            {
                email
                for email in approvers(approval).values_list("email", flat=True)
                if email
            }
        )
        if not recipients:
            logger.info("Approval %s: no approver has an email address", approval.pk)
            return 0
        if len(recipients) > MAX_RECIPIENTS:
            logger.warning(
                "Approval %s has %d approvers with an address; emailing the first %d",
                approval.pk,
                len(recipients),
                MAX_RECIPIENTS,
            )
            recipients = recipients[:MAX_RECIPIENTS]
        subject, body = message(approval)
        connection = get_connection()
        messages = [
            EmailMessage(subject, body, None, [address], connection=connection)
            for address in recipients
        ]
        sent = _within(EMAIL_BUDGET_SECONDS, lambda: connection.send_messages(messages))
    except Exception as error:
        logger.warning(
            "Could not email the approvers of approval %s: %s",
            approval.pk,
            type(error).__name__,
        )
        return 0
    return int(sent or 0)


def webhook_payload(approval: ApprovalRequest) -> dict[str, Any]:
    return {
        "event": EVENT,
        "approval_id": str(approval.pk),
        "session_id": str(approval.session_id),
        "prompt": approval.session.prompt_ref,
        "tool": approval.tool_name,
        "reason": approval.reason,
        "expires_at": approval.expires_at.isoformat(),
        "url": inbox_url(approval),
    }


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>``: the HMAC-SHA256 of ``"<timestamp>.<body>"``."""
    digest = hmac.new(
        secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256
    ).hexdigest()
    return f"sha256={digest}"


def send_webhook(approval: ApprovalRequest) -> bool:
    """POST the signed payload to ``WINK_APPROVAL_WEBHOOK_URL``; whether the
    receiver accepted it (2xx) within ``WEBHOOK_TIMEOUT_SECONDS`` in all.
    Redirects are not followed."""
    url = settings.WINK_APPROVAL_WEBHOOK_URL
    host = urlsplit(url).hostname or "?"
    try:
        body = json.dumps(webhook_payload(approval), separators=(",", ":")).encode()
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "wink-catalog",
            "X-Wink-Event": EVENT,
            "X-Wink-Timestamp": timestamp,
            "X-Wink-Signature": signature(
                settings.WINK_APPROVAL_WEBHOOK_SECRET, timestamp, body
            ),
        }
        response = _within(
            WEBHOOK_TIMEOUT_SECONDS,
            lambda: httpx.post(
                url,
                content=body,
                headers=headers,
                timeout=WEBHOOK_TIMEOUT_SECONDS,
                follow_redirects=False,
            ),
        )
    except Exception as error:
        logger.warning(
            "Approval webhook to %s failed for approval %s: %s",
            host,
            approval.pk,
            type(error).__name__,
        )
        return False
    if not response.is_success:
        logger.warning(
            "Approval webhook to %s answered %s for approval %s",
            host,
            response.status_code,
            approval.pk,
        )
        return False
    return True


class NotificationTimeout(Exception):
    """A mail server or webhook receiver took longer than its budget."""


def _within(seconds: float, work: Callable[[], T]) -> T:
    """``work()``, waited for ``seconds`` in all. httpx and smtplib bound each
    network step, not the sum: a receiver that answers a byte at a time would
    hold the caller (without a broker, the request whose run paused) for
    ever. ``work`` runs in a daemon thread, which its own per-step timeouts
    end; the caller stops waiting at the deadline. ``work`` must not use the
    database (the thread has a connection of its own)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = work()
        except Exception as error:
            outcome["error"] = error

    worker = threading.Thread(target=run, name="wink-notification", daemon=True)
    worker.start()
    worker.join(seconds)
    if "error" in outcome:
        raise outcome["error"]
    if "result" not in outcome:
        raise NotificationTimeout
    return cast(T, outcome["result"])
