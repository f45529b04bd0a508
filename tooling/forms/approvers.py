"""Who may decide an approval policy's requests, as the policy form checks
it: the permissions of this site (the form's suggestions), and a named
permission that must exist."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Permission


def permission_names() -> list[str]:
    return [
        f"{app_label}.{codename}"
        for app_label, codename in Permission.objects.order_by(
            "content_type__app_label", "codename"
        ).values_list("content_type__app_label", "codename")
    ]


def permission_problem(policy: Any) -> str | None:
    """A named permission must exist: a typo would leave the call to the
    superusers and the Approvers group (a group need not exist yet: an
    operator may create it later)."""
    permission = getattr(policy, "approvers", {}).get("permission")
    if not permission:
        return None
    app_label, _, codename = permission.partition(".")
    if Permission.objects.filter(
        content_type__app_label=app_label, codename=codename
    ).exists():
        return None
    return f"approvers.permission '{permission}' is not a permission of this site."
