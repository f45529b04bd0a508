"""Links to the audit pages for the admin's index (``admin/index.html``):
only those the user may open (``sessions_app.access``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import template
from django.urls import reverse

from sessions_app import access

register = template.Library()


@dataclass(frozen=True, slots=True)
class AuditPage:
    label: str
    url: str
    about: str


@register.simple_tag(takes_context=True)
def audit_pages(context: template.Context) -> list[AuditPage]:
    """The audit pages ``request.user`` may open: every logged-in user opens
    the sessions, approvals, costs, citations and experiments pages (each
    shows only the rows they may see); the revisions need
    ``view_catalogrevision``."""
    request = context.get("request")
    user: Any = getattr(request, "user", None)
    if not access.is_user(user):
        return []
    pages = [
        AuditPage(
            "Sessions",
            reverse("sessions_app:session-list"),
            "every run, its timeline and output",
        ),
        AuditPage(
            "Approvals inbox",
            reverse("sessions_app:approval-list"),
            "calls waiting for a human decision",
        ),
        AuditPage(
            "Costs",
            reverse("sessions_app:cost-report"),
            "spend by prompt, tool, model, user and day",
        ),
        AuditPage(
            "Citations",
            reverse("sessions_app:citation-list"),
            "the sources runs cited",
        ),
    ]
    if access.may_view_revisions(user):
        pages.append(
            AuditPage(
                "Revisions",
                reverse("sessions_app:revision-list"),
                "the catalog as each run saw it",
            )
        )
    pages.append(
        AuditPage(
            "Experiments",
            reverse("sessions_app:experiment-list"),
            "datasets run against prompts, graded",
        )
    )
    return pages
