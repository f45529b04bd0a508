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
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
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

from sessions_app import access, dispatch
from sessions_app.models import ApprovalRequest

logger = logging.getLogger(__name__)
T = TypeVar("T")

NOTIFY_TASK = "sessions_app.notify_approval_requested"
EVENT = "approval.requested"
WEBHOOK_TIMEOUT_SECONDS = 5.0
# The most the emails of one approval may take in all (EMAIL_TIMEOUT bounds
# each step with the mail server, not their sum).
EMAIL_BUDGET_SECONDS = 30.0
# How much of a call's arguments a notification quotes.
ARGUMENTS_EXCERPT = 1000
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
    """The approval's inbox entry, absolute: ``WINK_BASE_URL`` (which holds
    any path the product is served under) and the route, the same whether a
    request (with its script prefix) or a worker (without one) builds it."""
    path = reverse("sessions_app:approval-detail", args=[approval.pk])
    prefix = get_script_prefix()
    if path.startswith(prefix):
        path = "/" + path[len(prefix) :]
    return f"{settings.WINK_BASE_URL}{path}"


def approvers(approval: ApprovalRequest) -> QuerySet[Any]:
    """The active users who may decide ``approval`` (``access.may_decide``):
    superusers, holders of ``decide_any_approval``, and the holders of the
    permission or the members of the group its policy names."""
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
    return get_user_model().objects.filter(pk__in=users.values("pk"))


def _excerpt(approval: ApprovalRequest) -> str:
    if approval.params is not None:
        text = json.dumps(approval.params, indent=2, ensure_ascii=False)
    else:
        text = approval.raw_arguments
    if len(text) > ARGUMENTS_EXCERPT:
        text = text[:ARGUMENTS_EXCERPT] + "\n… (shortened; the inbox shows all)"
    return text


def message(approval: ApprovalRequest) -> tuple[str, str]:
    """The email's subject and body."""
    prompt = approval.session.prompt_ref
    subject = f"Approval needed: {approval.tool_name} in {prompt}"
    where = f" on MCP server {approval.server_label}" if approval.server_label else ""
    policy = f" (policy {approval.policy_name})" if approval.policy_name else ""
    body = "\n".join(
        [
            f"A run of {prompt} waits for a decision before it calls "
            f"{approval.tool_name}{where}.",
            "",
            f"Why{policy}: {approval.reason}",
            "",
            "Arguments:",
            _excerpt(approval),
            "",
            f"Decide before {approval.expires_at:%Y-%m-%d %H:%M} UTC; after that it "
            "is denied automatically.",
            "",
            f"Approve or deny: {inbox_url(approval)}",
        ]
    )
    # A subject is one line (a tool name cannot hold a newline, a prompt
    # reference neither; this is belt and braces for the mail headers).
    return " ".join(subject.split())[:200], body


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
